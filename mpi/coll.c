/* SPDX-License-Identifier: MIT */
/*
 * Collectives: each MPI collective is libminimp's of the same name, in
 * bytes (MMP_BYTE) for those that move data and in libminimp's types and
 * operations for those that reduce (op.c plans them). The blocking form
 * starts the non-blocking one on a request of the stack and waits, as
 * libminimp's own blocking forms do.
 *
 * Buffers go to libminimp as they are when their datatypes are contiguous
 * (MPI_IN_PLACE too); otherwise a layout (lay_t) packs each block into a
 * buffer of the request before the start and unpacks the received blocks
 * once it completes.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpii.h"

static inline char *at(const void *base, MPI_Aint off) {
  return (char *)((uintptr_t)base + (uintptr_t)off);
}

/* ---- Layouts ----------------------------------------------------------------
 */

/* One side of a collective that moves data: p blocks of the caller's
 * buffer as libminimp sees them. */
typedef struct lay_s {
  int p;
  size_t *cnt;       /* bytes of block i */
  size_t *dsp;       /* its displacement from base, bytes */
  char *base;        /* what libminimp gets: the caller's buffer, or tmp */
  char *tmp;         /* the packed blocks, or NULL */
  void *ubuf;        /* the caller's buffer */
  MPI_Aint *uoff;    /* block i's byte offset in ubuf */
  int *ucnt;         /* block i's elements */
  MPI_Datatype type; /* every block's, or */
  const MPI_Datatype *types; /* block i's (alltoallw) */
  int held; /* packed: the types are referenced until lay_fini, as the
               unpacking at completion uses them (MPI_Type_free may
               come before) */
} lay_t;

static inline MPI_Datatype lay_type(const lay_t *l, int i) {
  return l->types != NULL ? l->types[i] : l->type;
}

/* References (retain 1) or lets go of (0) the types of `l`. */
static void lay_hold(lay_t *l, int retain) {
  int i;

  for (i = 0; i < (l->types != NULL ? l->p : 1); i++)
    if (retain)
      mmpi__type_retain(lay_type(l, i));
    else
      mmpi__type_release(lay_type(l, i));
  l->held = retain;
}

/*
 * Lays out p blocks of `buf`: block i is counts[i] (or `count`) elements
 * of types[i] (or `t`) at displs[i] elements (or bdispls[i] bytes, or
 * i * count extents for equal blocks). The blocks go to libminimp in
 * place when every type is contiguous; otherwise into l->tmp, packed one
 * after the other. Returns 0 or MPI_ERR_NO_MEM.
 */
static int lay_init(lay_t *l, int p, const void *buf, const int *counts,
                    int count, const int *displs, const int *bdispls,
                    MPI_Datatype t, const MPI_Datatype *types) {
  size_t each = 2 * sizeof(size_t) + sizeof(MPI_Aint) + sizeof(int), total = 0;
  char *mem = malloc((size_t)p * each + 1);
  int i, direct = 1;

  memset(l, 0, sizeof(*l));
  if (mem == NULL)
    return MPI_ERR_NO_MEM;
  l->p = p;
  l->cnt = (size_t *)mem;
  l->dsp = l->cnt + p;
  l->uoff = (MPI_Aint *)(l->dsp + p);
  l->ucnt = (int *)(l->uoff + p);
  l->ubuf = (void *)buf;
  l->type = t;
  l->types = types;
  for (i = 0; i < p; i++) {
    MPI_Datatype ti = lay_type(l, i);
    int c = counts != NULL ? counts[i] : count;
    l->ucnt[i] = c;
    l->uoff[i] = bdispls != NULL ? (MPI_Aint)bdispls[i]
                 : displs != NULL
                     ? (MPI_Aint)displs[i] * mmpi__extent(ti)
                     : (MPI_Aint)i * (MPI_Aint)c * mmpi__extent(ti);
    l->cnt[i] = (size_t)c * ti->size;
    total += l->cnt[i];
    if (l->cnt[i] > 0 && (!ti->contig || l->uoff[i] + ti->tlb < 0))
      direct = 0;
  }
  if (direct) {
    l->base = (char *)buf;
    for (i = 0; i < p; i++)
      l->dsp[i] =
          l->cnt[i] > 0 ? (size_t)(l->uoff[i] + lay_type(l, i)->tlb) : 0;
    return MPI_SUCCESS;
  }
  if ((l->tmp = malloc(total + 1)) == NULL) {
    free(mem);
    l->cnt = NULL;
    return MPI_ERR_NO_MEM;
  }
  l->base = l->tmp;
  for (i = 0, total = 0; i < p; total += l->cnt[i], i++)
    l->dsp[i] = total;
  lay_hold(l, 1);
  return MPI_SUCCESS;
}

static void lay_fini(lay_t *l) {
  if (l->held)
    lay_hold(l, 0);
  free(l->cnt);
  free(l->tmp);
  l->cnt = NULL;
  l->tmp = NULL;
}

/* Packs block i of the caller's buffer into tmp (when there is one). */
static void lay_pack_one(lay_t *l, int i) {
  if (l->tmp != NULL && l->cnt[i] > 0)
    mmpi__pack(at(l->ubuf, l->uoff[i]), (size_t)l->ucnt[i], lay_type(l, i),
               l->tmp + l->dsp[i]);
}

static void lay_pack(lay_t *l) {
  int i;

  for (i = 0; l->tmp != NULL && i < l->p; i++)
    lay_pack_one(l, i);
}

static void lay_unpack(lay_t *l) {
  int i;

  for (i = 0; l->tmp != NULL && i < l->p; i++)
    if (l->cnt[i] > 0)
      mmpi__unpack(l->tmp + l->dsp[i], l->cnt[i], at(l->ubuf, l->uoff[i]),
                   (size_t)l->ucnt[i], lay_type(l, i));
}

/* What a collective's request keeps: its send and receive layouts. */
typedef struct cx_s {
  lay_t s, r;
} cx_t;

static void cx_free(void *arg) {
  cx_t *cx = arg;

  lay_fini(&cx->s);
  lay_fini(&cx->r);
  free(cx);
}

/* On completion: the received blocks into the caller's buffer. */
static void cx_finish(struct mmpi_req_s *r) {
  lay_unpack(&((cx_t *)r->arg)->r);
}

/* A request's layouts, owned by it from now on. */
static cx_t *cx_new(struct mmpi_req_s *r) {
  cx_t *cx = calloc(1, sizeof(*cx));

  if (cx != NULL) {
    r->arg = cx;
    r->arg_free = cx_free;
    r->finish = cx_finish;
  }
  return cx;
}

/* ---- Common checks and the two ways to run --------------------------------
 */

static int check_comm_root(MPI_Comm comm, int root) {
  if (!mmpi__comm_ok(comm))
    return MPI_ERR_COMM;
  if (root < 0 || root >= comm->size)
    return MPI_ERR_ROOT;
  return MPI_SUCCESS;
}

static int check_buf(int count, MPI_Datatype t) {
  if (count < 0)
    return MPI_ERR_COUNT;
  return mmpi__type_ok(t);
}

static int check_counts(int p, const int *counts, MPI_Datatype t) {
  int i, rc = counts == NULL ? MPI_ERR_ARG : mmpi__type_ok(t);

  for (i = 0; i < p && rc == MPI_SUCCESS; i++)
    if (counts[i] < 0)
      rc = MPI_ERR_COUNT;
  return rc;
}

/* The blocking form: waits for the request started on the stack. */
static int blocking(int rc, struct mmpi_req_s *r, const char *fn) {
  if (rc != MPI_SUCCESS) {
    mmpi__req_release(r);
    return mmpi__raise(r->comm, rc, fn);
  }
  r->state = MMPI__RQ_ACTIVE;
  return mmpi__req_wait_local(r, MPI_STATUS_IGNORE, fn);
}

/* The non-blocking form: hands the started request to the caller. */
static int nonblocking(int rc, struct mmpi_req_s *r, MPI_Comm comm,
                       MPI_Request *request, const char *fn) {
  if (rc == MPI_SUCCESS && request == NULL)
    rc = MPI_ERR_REQUEST; /* started: complete it, then report */
  if (rc != MPI_SUCCESS) {
    if (r != NULL) {
      if (r->mr != NULL)
        (void)mmp_wait(&r->mr, MMP_STATUS_IGNORE);
      mmpi__req_free(r);
    }
    if (request != NULL)
      *request = MPI_REQUEST_NULL;
    return mmpi__raise(comm, rc, fn);
  }
  r->state = MMPI__RQ_ACTIVE;
  *request = r;
  return MPI_SUCCESS;
}

#define BLOCKING(comm, start, ...)                                             \
  do {                                                                         \
    struct mmpi_req_s r_;                                                      \
    mmpi__req_init(&r_, MMPI__K_COLL, comm);                                   \
    return blocking(start(__VA_ARGS__, &r_), &r_, __func__);                   \
  } while (0)

#define NONBLOCKING(comm, request, start, ...)                                 \
  do {                                                                         \
    struct mmpi_req_s *r_ = mmpi__req_new(MMPI__K_COLL, comm);                 \
    return nonblocking(r_ != NULL ? start(__VA_ARGS__, r_) : MPI_ERR_NO_MEM,   \
                       r_, comm, request, __func__);                           \
  } while (0)

/* ---- Barrier and broadcast
 * ---------------------------------------------------
 */

static int barrier_start(MPI_Comm comm, struct mmpi_req_s *r) {
  if (!mmpi__comm_ok(comm))
    return MPI_ERR_COMM;
  return mmpi__code(mmp_ibarrier(comm->mc, &r->mr));
}

int MPI_Barrier(MPI_Comm comm) {
  BLOCKING(comm, barrier_start, comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  NONBLOCKING(comm, request, barrier_start, comm);
}

static int bcast_start(void *buf, int count, MPI_Datatype t, int root,
                       MPI_Comm comm, struct mmpi_req_s *r) {
  int rc = check_comm_root(comm, root);
  cx_t *cx;

  if (rc == MPI_SUCCESS)
    rc = check_buf(count, t);
  if (rc != MPI_SUCCESS)
    return rc;
  if (t->contig)
    return mmpi__code(mmp_ibcast(at(buf, t->tlb), (size_t)count * t->size, root,
                                 comm->mc, NULL, &r->mr));
  if ((cx = cx_new(r)) == NULL ||
      lay_init(&cx->r, 1, buf, NULL, count, NULL, NULL, t, NULL) != 0)
    return MPI_ERR_NO_MEM;
  if (comm->rank == root) {
    lay_pack(&cx->r);
    r->finish = NULL; /* the root has nothing to unpack */
  }
  return mmpi__code(
      mmp_ibcast(cx->r.base, cx->r.cnt[0], root, comm->mc, NULL, &r->mr));
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
              MPI_Comm comm) {
  BLOCKING(comm, bcast_start, buffer, count, datatype, root, comm);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
               MPI_Comm comm, MPI_Request *request) {
  NONBLOCKING(comm, request, bcast_start, buffer, count, datatype, root, comm);
}

/* ---- Reductions
 * ----------------------------------------------------------------
 */

/* A reduction references its type and operation until it completes:
 * MPI_Type_free and MPI_Op_free may come before (libminimp's element
 * type and user operation must outlive it). */
static void red_hold(struct mmpi_req_s *r, MPI_Datatype t, MPI_Op op) {
  mmpi__type_retain(t);
  mmpi__op_retain(op);
  r->rtype = t;
  r->rop = op;
}

/* For a reduction planned with packing: the input (nin elements) packed
 * into cx->s, and cx->r ready for nout elements of output (0: none here). */
static int red_pack(struct mmpi_req_s *r, const void *in, int nin, void *out,
                    int nout, MPI_Datatype t, cx_t **cxp) {
  cx_t *cx = cx_new(r);

  if (cx == NULL ||
      lay_init(&cx->s, 1, in, NULL, nin, NULL, NULL, t, NULL) != 0 ||
      lay_init(&cx->r, 1, out, NULL, nout, NULL, NULL, t, NULL) != 0)
    return MPI_ERR_NO_MEM;
  lay_pack(&cx->s);
  *cxp = cx;
  return MPI_SUCCESS;
}

/* Reduce (root >= 0) and allreduce (root -1). */
static int reduce_start(const void *sendbuf, void *recvbuf, int count,
                        MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm,
                        struct mmpi_req_s *r) {
  int rc = root >= 0             ? check_comm_root(comm, root)
           : mmpi__comm_ok(comm) ? MPI_SUCCESS
                                 : MPI_ERR_COMM;
  int in_place = sendbuf == MPI_IN_PLACE, out;
  const void *sp;
  void *rp;
  mmpi__red_t plan;
  cx_t *cx;

  if (rc != MPI_SUCCESS)
    return rc;
  out = root < 0 || comm->rank == root; /* holds the result */
  if (in_place && !out)
    return MPI_ERR_BUFFER; /* MPI_IN_PLACE is the root's alone */
  if ((rc = mmpi__red_plan(t, count, op, &plan)) != MPI_SUCCESS)
    return rc;
  red_hold(r, t, op);
  if (!plan.pack) {
    sp = in_place ? MMP_IN_PLACE : at(sendbuf, plan.shift);
    rp = out ? at(recvbuf, plan.shift) : NULL;
  } else {
    if ((rc = red_pack(r, in_place ? recvbuf : sendbuf, count, recvbuf,
                       out ? count : 0, t, &cx)) != MPI_SUCCESS)
      return rc;
    sp = cx->s.base;
    rp = out ? cx->r.base : NULL;
  }
  rc = root >= 0 ? mmp_ireduce(sp, rp, plan.count, plan.type, plan.op, root,
                               comm->mc, NULL, &r->mr)
                 : mmp_iallreduce(sp, rp, plan.count, plan.type, plan.op,
                                  comm->mc, NULL, &r->mr);
  return mmpi__code(rc);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  BLOCKING(comm, reduce_start, sendbuf, recvbuf, count, datatype, op, root,
           comm);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *request) {
  NONBLOCKING(comm, request, reduce_start, sendbuf, recvbuf, count, datatype,
              op, root, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  BLOCKING(comm, reduce_start, sendbuf, recvbuf, count, datatype, op, -1, comm);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request) {
  NONBLOCKING(comm, request, reduce_start, sendbuf, recvbuf, count, datatype,
              op, -1, comm);
}

/* Scan (excl 0) and exclusive scan (excl 1). Rank 0's exclusive result
 * is undefined in MPI: libminimp leaves its receive buffer untouched, and
 * a packed one is not unpacked. */
static int scan_start(const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype t, MPI_Op op, int excl, MPI_Comm comm,
                      struct mmpi_req_s *r) {
  int in_place = sendbuf == MPI_IN_PLACE, out, rc;
  const void *sp;
  void *rp;
  mmpi__red_t plan;
  cx_t *cx;

  if (!mmpi__comm_ok(comm))
    return MPI_ERR_COMM;
  if ((rc = mmpi__red_plan(t, count, op, &plan)) != MPI_SUCCESS)
    return rc;
  red_hold(r, t, op);
  out = !excl || comm->rank > 0;
  if (!plan.pack) {
    sp = in_place ? MMP_IN_PLACE : at(sendbuf, plan.shift);
    rp = at(recvbuf, plan.shift);
  } else {
    if ((rc = red_pack(r, in_place ? recvbuf : sendbuf, count, recvbuf,
                       out ? count : 0, t, &cx)) != MPI_SUCCESS)
      return rc;
    sp = cx->s.base;
    rp = out ? cx->r.base : cx->s.base; /* rank 0 writes none */
  }
  rc = excl ? mmp_iexscan(sp, rp, plan.count, plan.type, plan.op, comm->mc,
                          NULL, &r->mr)
            : mmp_iscan(sp, rp, plan.count, plan.type, plan.op, comm->mc, NULL,
                        &r->mr);
  return mmpi__code(rc);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count,
             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  BLOCKING(comm, scan_start, sendbuf, recvbuf, count, datatype, op, 0, comm);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count,
              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request *request) {
  NONBLOCKING(comm, request, scan_start, sendbuf, recvbuf, count, datatype, op,
              0, comm);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  BLOCKING(comm, scan_start, sendbuf, recvbuf, count, datatype, op, 1, comm);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request *request) {
  NONBLOCKING(comm, request, scan_start, sendbuf, recvbuf, count, datatype, op,
              1, comm);
}

/* Reduce-scatter: rank i keeps counts[i] elements (equal blocks of
 * `block` when counts is NULL). */
static int rs_start(const void *sendbuf, void *recvbuf, const int *counts,
                    int block, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                    struct mmpi_req_s *r) {
  int rc = mmpi__comm_ok(comm) ? MPI_SUCCESS : MPI_ERR_COMM, i, total = 0;
  int in_place = sendbuf == MPI_IN_PLACE, mine;
  size_t *cnt = NULL, mult;
  const void *sp;
  void *rp;
  mmpi__red_t plan;
  cx_t *cx;

  if (rc == MPI_SUCCESS && counts != NULL)
    rc = check_counts(comm->size, counts, t);
  if (rc != MPI_SUCCESS)
    return rc;
  for (i = 0; i < comm->size; i++) {
    int c = counts != NULL ? counts[i] : block;
    if (c > INT_MAX - total)
      return MPI_ERR_COUNT;
    total += c;
  }
  mine = counts != NULL ? counts[comm->rank] : block;
  /* The plan of one element: libminimp's type, operation and units per
   * element. */
  if ((rc = mmpi__red_plan(t, 1, op, &plan)) != MPI_SUCCESS)
    return rc;
  red_hold(r, t, op);
  mult = plan.count;
  if (counts != NULL) {
    if ((cnt = malloc((size_t)comm->size * sizeof(size_t))) == NULL)
      return MPI_ERR_NO_MEM;
    for (i = 0; i < comm->size; i++)
      cnt[i] = (size_t)counts[i] * mult;
    r->tmp2 = cnt; /* freed with the request */
  }
  if (!plan.pack) {
    sp = in_place ? MMP_IN_PLACE : at(sendbuf, plan.shift);
    rp = at(recvbuf, plan.shift);
  } else {
    if ((rc = red_pack(r, in_place ? recvbuf : sendbuf, total, recvbuf, mine, t,
                       &cx)) != MPI_SUCCESS)
      return rc;
    sp = cx->s.base;
    rp = cx->r.base;
  }
  rc = counts != NULL
           ? mmp_ireduce_scatter(sp, rp, cnt, plan.type, plan.op, comm->mc,
                                 NULL, &r->mr)
           : mmp_ireduce_scatter_block(sp, rp, (size_t)block * mult, plan.type,
                                       plan.op, comm->mc, NULL, &r->mr);
  return mmpi__code(rc);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf,
                       const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  if (recvcounts == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  BLOCKING(comm, rs_start, sendbuf, recvbuf, recvcounts, 0, datatype, op, comm);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf,
                        const int recvcounts[], MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  if (recvcounts == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  NONBLOCKING(comm, request, rs_start, sendbuf, recvbuf, recvcounts, 0,
              datatype, op, comm);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  BLOCKING(comm, rs_start, sendbuf, recvbuf, NULL, recvcount, datatype, op,
           comm);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request) {
  NONBLOCKING(comm, request, rs_start, sendbuf, recvbuf, NULL, recvcount,
              datatype, op, comm);
}

/* ---- Gather and scatter
 * ------------------------------------------------------
 */

/* Gather (gather 1) or scatter (0), of equal blocks (counts NULL) or the
 * v-forms. `many` is the root's side: recv for gather, send for scatter;
 * `one` every rank's own block. */
static int gs_start(int gather, int v, const void *sendbuf, int scount,
                    const int *scounts, const int *sdispls, MPI_Datatype stype,
                    void *recvbuf, int rcount, const int *rcounts,
                    const int *rdispls, MPI_Datatype rtype, int root,
                    MPI_Comm comm, struct mmpi_req_s *r) {
  int rc = check_comm_root(comm, root), is_root, in_place;
  const void *sp = NULL;
  void *rp = NULL;
  size_t sn = 0, rn = 0;
  cx_t *cx;

  if (rc != MPI_SUCCESS)
    return rc;
  is_root = comm->rank == root;
  in_place = is_root && (gather ? sendbuf : recvbuf) == MPI_IN_PLACE;
  /* The root's side is significant at the root alone. */
  if (is_root)
    rc = gather ? (v ? check_counts(comm->size, rcounts, rtype)
                     : check_buf(rcount, rtype))
                : (v ? check_counts(comm->size, scounts, stype)
                     : check_buf(scount, stype));
  if (rc == MPI_SUCCESS && !in_place)
    rc = gather ? check_buf(scount, stype) : check_buf(rcount, rtype);
  if (rc == MPI_SUCCESS && is_root && v && (gather ? rdispls : sdispls) == NULL)
    rc = MPI_ERR_ARG;
  if (rc != MPI_SUCCESS)
    return rc;
  if ((cx = cx_new(r)) == NULL)
    return MPI_ERR_NO_MEM;
  if (is_root) {
    lay_t *l = gather ? &cx->r : &cx->s;
    rc = gather ? lay_init(l, comm->size, recvbuf, rcounts, rcount, rdispls,
                           NULL, rtype, NULL)
                : lay_init(l, comm->size, sendbuf, scounts, scount, sdispls,
                           NULL, stype, NULL);
    if (rc != MPI_SUCCESS)
      return rc;
    if (!gather)
      lay_pack(l);
    else if (in_place)
      lay_pack_one(l, root); /* the root's block, already in recvbuf */
  }
  if (!in_place) {
    lay_t *l = gather ? &cx->s : &cx->r;
    rc = gather
             ? lay_init(l, 1, sendbuf, NULL, scount, NULL, NULL, stype, NULL)
             : lay_init(l, 1, recvbuf, NULL, rcount, NULL, NULL, rtype, NULL);
    if (rc != MPI_SUCCESS)
      return rc;
    if (gather)
      lay_pack(l);
  }
  /* libminimp's arguments: the root's blocks, and this rank's own. */
  if (gather) {
    sp = in_place ? MMP_IN_PLACE : cx->s.base + cx->s.dsp[0];
    sn = in_place ? cx->r.cnt[root] : cx->s.cnt[0];
    if (is_root)
      rp = cx->r.base + (v ? 0 : cx->r.dsp[0]);
    rn = is_root ? cx->r.cnt[0] : sn;
    rc =
        v ? mmp_igatherv(sp, sn, rp, is_root ? cx->r.cnt : NULL,
                         is_root ? cx->r.dsp : NULL, MMP_BYTE, root, comm->mc,
                         NULL, &r->mr)
          : mmp_igather(sp, sn, rp, rn, MMP_BYTE, root, comm->mc, NULL, &r->mr);
  } else {
    rp = in_place ? MMP_IN_PLACE : cx->r.base + cx->r.dsp[0];
    rn = in_place ? cx->s.cnt[root] : cx->r.cnt[0];
    if (is_root)
      sp = cx->s.base + (v ? 0 : cx->s.dsp[0]);
    sn = is_root ? cx->s.cnt[0] : rn;
    rc = v ? mmp_iscatterv(sp, is_root ? cx->s.cnt : NULL,
                           is_root ? cx->s.dsp : NULL, rp, rn, MMP_BYTE, root,
                           comm->mc, NULL, &r->mr)
           : mmp_iscatter(sp, sn, rp, rn, MMP_BYTE, root, comm->mc, NULL,
                          &r->mr);
  }
  return mmpi__code(rc);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
               MPI_Comm comm) {
  BLOCKING(comm, gs_start, 1, 0, sendbuf, sendcount, NULL, NULL, sendtype,
           recvbuf, recvcount, NULL, NULL, recvtype, root, comm);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                MPI_Comm comm, MPI_Request *request) {
  NONBLOCKING(comm, request, gs_start, 1, 0, sendbuf, sendcount, NULL, NULL,
              sendtype, recvbuf, recvcount, NULL, NULL, recvtype, root, comm);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, const int recvcounts[], const int displs[],
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  BLOCKING(comm, gs_start, 1, 1, sendbuf, sendcount, NULL, NULL, sendtype,
           recvbuf, 0, recvcounts, displs, recvtype, root, comm);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, const int recvcounts[], const int displs[],
                 MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request) {
  NONBLOCKING(comm, request, gs_start, 1, 1, sendbuf, sendcount, NULL, NULL,
              sendtype, recvbuf, 0, recvcounts, displs, recvtype, root, comm);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  BLOCKING(comm, gs_start, 0, 0, sendbuf, sendcount, NULL, NULL, sendtype,
           recvbuf, recvcount, NULL, NULL, recvtype, root, comm);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request) {
  NONBLOCKING(comm, request, gs_start, 0, 0, sendbuf, sendcount, NULL, NULL,
              sendtype, recvbuf, recvcount, NULL, NULL, recvtype, root, comm);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[],
                 const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root,
                 MPI_Comm comm) {
  BLOCKING(comm, gs_start, 0, 1, sendbuf, 0, sendcounts, displs, sendtype,
           recvbuf, recvcount, NULL, NULL, recvtype, root, comm);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[],
                  const int displs[], MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request) {
  NONBLOCKING(comm, request, gs_start, 0, 1, sendbuf, 0, sendcounts, displs,
              sendtype, recvbuf, recvcount, NULL, NULL, recvtype, root, comm);
}

/* ---- Allgather and alltoall
 * --------------------------------------------------
 */

static int allgather_start(const void *sendbuf, int scount, MPI_Datatype stype,
                           void *recvbuf, int rcount, const int *rcounts,
                           const int *rdispls, MPI_Datatype rtype,
                           MPI_Comm comm, struct mmpi_req_s *r) {
  int rc = mmpi__comm_ok(comm) ? MPI_SUCCESS : MPI_ERR_COMM;
  int in_place = sendbuf == MPI_IN_PLACE, me;
  const void *sp;
  size_t sn;
  cx_t *cx;

  if (rc == MPI_SUCCESS)
    rc = rcounts != NULL ? check_counts(comm->size, rcounts, rtype)
                         : check_buf(rcount, rtype);
  if (rc == MPI_SUCCESS && rcounts != NULL && rdispls == NULL)
    rc = MPI_ERR_ARG;
  if (rc == MPI_SUCCESS && !in_place)
    rc = check_buf(scount, stype);
  if (rc != MPI_SUCCESS)
    return rc;
  me = comm->rank;
  if ((cx = cx_new(r)) == NULL ||
      lay_init(&cx->r, comm->size, recvbuf, rcounts, rcount, rdispls, NULL,
               rtype, NULL) != 0)
    return MPI_ERR_NO_MEM;
  if (in_place) {
    lay_pack_one(&cx->r, me); /* this rank's block, already in recvbuf */
    sp = MMP_IN_PLACE;
    sn = cx->r.cnt[me];
  } else {
    if (lay_init(&cx->s, 1, sendbuf, NULL, scount, NULL, NULL, stype, NULL) !=
        0)
      return MPI_ERR_NO_MEM;
    lay_pack(&cx->s);
    sp = cx->s.base + cx->s.dsp[0];
    sn = cx->s.cnt[0];
  }
  rc = rcounts != NULL
           ? mmp_iallgatherv(sp, sn, cx->r.base, cx->r.cnt, cx->r.dsp, MMP_BYTE,
                             comm->mc, NULL, &r->mr)
           : mmp_iallgather(sp, sn, cx->r.base + cx->r.dsp[0], cx->r.cnt[0],
                            MMP_BYTE, comm->mc, NULL, &r->mr);
  return mmpi__code(rc);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm) {
  BLOCKING(comm, allgather_start, sendbuf, sendcount, sendtype, recvbuf,
           recvcount, NULL, NULL, recvtype, comm);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request *request) {
  NONBLOCKING(comm, request, allgather_start, sendbuf, sendcount, sendtype,
              recvbuf, recvcount, NULL, NULL, recvtype, comm);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, MPI_Comm comm) {
  if (recvcounts == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  BLOCKING(comm, allgather_start, sendbuf, sendcount, sendtype, recvbuf, 0,
           recvcounts, displs, recvtype, comm);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[],
                    MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request *request) {
  if (recvcounts == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  NONBLOCKING(comm, request, allgather_start, sendbuf, sendcount, sendtype,
              recvbuf, 0, recvcounts, displs, recvtype, comm);
}

/* Alltoall (counts NULL), alltoallv (element displacements) and
 * alltoallw (byte displacements, a type per block). */
typedef struct a2a_s {
  const void *buf;
  int count;
  const int *counts, *displs, *bdispls;
  MPI_Datatype type;
  const MPI_Datatype *types;
} a2a_t;

static int a2a_check(const a2a_t *a, int p) {
  int i, rc = MPI_SUCCESS;

  if (a->counts == NULL)
    return check_buf(a->count, a->type);
  if (a->displs == NULL && a->bdispls == NULL)
    return MPI_ERR_ARG;
  if (a->types == NULL)
    return check_counts(p, a->counts, a->type);
  for (i = 0; i < p && rc == MPI_SUCCESS; i++)
    rc = check_buf(a->counts[i], a->types[i]);
  return rc;
}

static int a2a_lay(lay_t *l, const a2a_t *a, int p) {
  return lay_init(l, p, a->buf, a->counts, a->count, a->displs, a->bdispls,
                  a->type, a->types);
}

static int alltoall_start(const a2a_t *s, const a2a_t *rv, MPI_Comm comm,
                          struct mmpi_req_s *r) {
  int rc = mmpi__comm_ok(comm) ? MPI_SUCCESS : MPI_ERR_COMM, p;
  int in_place = s->buf == MPI_IN_PLACE;
  const void *sp;
  cx_t *cx;

  if (rc == MPI_SUCCESS)
    rc = a2a_check(rv, comm->size);
  if (rc == MPI_SUCCESS && !in_place)
    rc = a2a_check(s, comm->size);
  if (rc != MPI_SUCCESS)
    return rc;
  p = comm->size;
  if ((cx = cx_new(r)) == NULL || a2a_lay(&cx->r, rv, p) != 0)
    return MPI_ERR_NO_MEM;
  if (in_place) {
    /* The data is in recvbuf: packed there first if it is not
     * contiguous, and exchanged in place. */
    lay_pack(&cx->r);
    sp = MMP_IN_PLACE;
  } else {
    if (a2a_lay(&cx->s, s, p) != 0)
      return MPI_ERR_NO_MEM;
    lay_pack(&cx->s);
    sp = cx->s.base + (rv->counts != NULL ? 0 : cx->s.dsp[0]);
  }
  if (rv->counts == NULL)
    rc = mmp_ialltoall(sp, in_place ? cx->r.cnt[0] : cx->s.cnt[0],
                       cx->r.base + cx->r.dsp[0], cx->r.cnt[0], MMP_BYTE,
                       comm->mc, NULL, &r->mr);
  else
    rc = mmp_ialltoallv(sp, in_place ? NULL : cx->s.cnt,
                        in_place ? NULL : cx->s.dsp, cx->r.base, cx->r.cnt,
                        cx->r.dsp, MMP_BYTE, comm->mc, NULL, &r->mr);
  return mmpi__code(rc);
}

/* Fills the two sides of an alltoall call. */
#define A2A(side, b, c, cs, d, bd, t, ts)                                      \
  const a2a_t side = {b, c, cs, d, bd, t, ts}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 MPI_Comm comm) {
  A2A(s, sendbuf, sendcount, NULL, NULL, NULL, sendtype, NULL);
  A2A(rv, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL);
  BLOCKING(comm, alltoall_start, &s, &rv, comm);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm, MPI_Request *request) {
  A2A(s, sendbuf, sendcount, NULL, NULL, NULL, sendtype, NULL);
  A2A(rv, recvbuf, recvcount, NULL, NULL, NULL, recvtype, NULL);
  NONBLOCKING(comm, request, alltoall_start, &s, &rv, comm);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[],
                  const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  A2A(s, sendbuf, 0, sendcounts, sdispls, NULL, sendtype, NULL);
  A2A(rv, recvbuf, 0, recvcounts, rdispls, NULL, recvtype, NULL);
  if (recvcounts == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  BLOCKING(comm, alltoall_start, &s, &rv, comm);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[],
                   const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int rdispls[],
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  A2A(s, sendbuf, 0, sendcounts, sdispls, NULL, sendtype, NULL);
  A2A(rv, recvbuf, 0, recvcounts, rdispls, NULL, recvtype, NULL);
  if (recvcounts == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  NONBLOCKING(comm, request, alltoall_start, &s, &rv, comm);
}

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[],
                  const int sdispls[], const MPI_Datatype sendtypes[],
                  void *recvbuf, const int recvcounts[], const int rdispls[],
                  const MPI_Datatype recvtypes[], MPI_Comm comm) {
  A2A(s, sendbuf, 0, sendcounts, NULL, sdispls, NULL, sendtypes);
  A2A(rv, recvbuf, 0, recvcounts, NULL, rdispls, NULL, recvtypes);
  if (recvcounts == NULL || recvtypes == NULL ||
      (sendbuf != MPI_IN_PLACE && (sendcounts == NULL || sendtypes == NULL)))
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  BLOCKING(comm, alltoall_start, &s, &rv, comm);
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[],
                   const int sdispls[], const MPI_Datatype sendtypes[],
                   void *recvbuf, const int recvcounts[], const int rdispls[],
                   const MPI_Datatype recvtypes[], MPI_Comm comm,
                   MPI_Request *request) {
  A2A(s, sendbuf, 0, sendcounts, NULL, sdispls, NULL, sendtypes);
  A2A(rv, recvbuf, 0, recvcounts, NULL, rdispls, NULL, recvtypes);
  if (recvcounts == NULL || recvtypes == NULL ||
      (sendbuf != MPI_IN_PLACE && (sendcounts == NULL || sendtypes == NULL)))
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  NONBLOCKING(comm, request, alltoall_start, &s, &rv, comm);
}
