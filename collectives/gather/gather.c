/* SPDX-License-Identifier: MIT */
/*
 * Gather and scatter: the public calls (gather_flat.c and
 * gather_binomial.c hold a row of each table in coll_algs.c).
 *
 * The root works on its own buffer: gather receives into recvbuf,
 * scatter sends out of sendbuf (the schedule's read-only input). A rank
 * of the binomial tree keeps its subtree's blocks in scratch; of the flat
 * one, only its own block, where the caller has it. The v-forms run the
 * flat algorithm: only the root knows the counts.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/core/coll.h"

/* One gather or scatter call. `counts`/`displs` (root, elements) or
 * NULL for equal blocks of `count`; `mine` is this rank's own count. */
typedef struct gs_call_s {
  int coll;
  const void *sendbuf;
  void *recvbuf;
  size_t mine;
  size_t count; /* equal blocks: the root's per-rank count */
  const size_t *counts, *displs;
  mmp_type_t type;
  int root;
  mmp_comm_t *comm;
  const mmp_coll_opts_t *o;
} gs_call_t;

/*
 * Lock held. A scatter whose first message says the sender's call
 * differs (another root, count or algorithm): appends the plan of the
 * sender's call, which runs in poison mode, so that this rank passes the
 * failure on to the ranks that wait for it in that plan. Poison mode
 * touches no byte of the address space, so equal blocks of the sender's
 * count over nothing give the plan's shape.
 */
static int scatter_rebuild(mmp__sched_t *s, const uint8_t *hdr, size_t n) {
  mmp__coll_desc_t d;
  mmp__coll_arg_t a;
  size_t blk, *cnt;
  int i, rc;

  if (mmp__coll_desc_decode(hdr, n, &d) != 0 || d.coll != MMP_COLL_SCATTER ||
      mmp__coll_alg(d.coll, d.alg) == NULL || d.root < 0 || d.root >= s->p ||
      d.esize == 0 || d.count > SIZE_MAX / d.esize / (size_t)s->p)
    return MMP_EMISMATCH;
  blk = (size_t)d.count * d.esize;
  if ((cnt = calloc(2 * (size_t)s->p, sizeof(size_t))) == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < s->p; i++) {
    cnt[i] = blk;
    cnt[s->p + i] = (size_t)i * blk;
  }
  memset(&a, 0, sizeof(a));
  a.cnt = cnt;
  a.dsp = cnt + s->p;
  rc = mmp__coll_build(s, &d, &a);
  free(cnt);
  return rc == 0 || rc == MMP_ENOMEM ? rc : MMP_EMISMATCH;
}

static int gs_start(const gs_call_t *c, mmp_request_t **req) {
  int p, me, rc, noncomm, is_root, gather = c->coll == MMP_COLL_GATHER;
  size_t *cnt, *dsp, hi = 0, mine, at = 0, blk;
  mmp_coll_opts_t o = *c->o;
  mmp__type_info_t ti;
  mmp__coll_desc_t d;
  mmp__coll_arg_t a;
  mmp__sched_t *s;
  const void *fill = NULL;
  void *out = NULL;
  size_t fill_at = 0, fill_len = 0, out_at = 0, out_len = 0;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_check(c->comm, c->type, 0, &ti, &noncomm)) != 0)
    return rc;
  p = c->comm->size;
  me = c->comm->rank;
  if (c->root < 0 || c->root >= p)
    return MMP_ERANK;
  is_root = me == c->root;
  if ((rc = mmp__coll_elems(c->mine, ti.size, &mine)) != 0 ||
      (rc = mmp__coll_elems(c->count, ti.size, &blk)) != 0)
    return rc;
  if (c->counts != NULL) {
    /* Only the root knows the counts: the flat algorithm. */
    if (o.algorithm > MMP_GATHER_FLAT)
      return MMP_EINVAL;
    o.algorithm = MMP_GATHER_FLAT;
    if (is_root && c->displs == NULL)
      return MMP_EINVAL;
  }
  memset(&d, 0, sizeof(d));
  d.coll = c->coll;
  d.root = c->root;
  d.base = ti.base;
  d.esize = ti.size;
  d.count = c->counts != NULL ? 0 : c->count;
  if ((rc = mmp__coll_resolve(c->comm, &d, &o, (double)blk, 0)) != 0)
    return rc;
  cnt = calloc(2 * (size_t)p, sizeof(size_t));
  if (cnt == NULL)
    return MMP_ENOMEM;
  dsp = cnt + p;
  if (is_root) {
    rc = mmp__coll_layout(p, ti.size, c->count, c->counts, c->displs, cnt, dsp,
                          &hi);
    if (rc == 0 && ((gather && c->recvbuf == NULL && hi > 0) ||
                    (!gather && c->sendbuf == NULL && hi > 0)))
      rc = MMP_EINVAL;
    if (rc == 0)
      rc = mmp__coll_sched_new(c->comm, &d, c->type, &o,
                               gather ? c->recvbuf : NULL, gather ? hi : 0,
                               gather ? NULL : c->sendbuf, gather ? 0 : hi, &s);
    /* The root's own block, unless it is in place. */
    if (rc == 0 && gather && c->sendbuf != MMP_IN_PLACE) {
      fill = c->sendbuf;
      fill_at = dsp[me];
      fill_len = cnt[me];
    }
    if (rc == 0 && !gather && c->recvbuf != MMP_IN_PLACE && cnt[me] > 0)
      memcpy(c->recvbuf, (const uint8_t *)c->sendbuf + dsp[me], cnt[me]);
  } else if (d.alg == MMP_GATHER_FLAT) {
    /* Only its own block, where the caller has it. */
    cnt[me] = mine;
    if ((gather ? c->sendbuf : c->recvbuf) == NULL && mine > 0)
      rc = MMP_EINVAL;
    if (rc == 0)
      rc = mmp__coll_sched_new(
          c->comm, &d, c->type, &o, gather ? NULL : c->recvbuf,
          gather ? 0 : mine, gather ? c->sendbuf : NULL, gather ? mine : 0, &s);
  } else {
    /* Its subtree's blocks, in scratch laid out as the root's buffer. */
    if ((gather ? c->sendbuf : c->recvbuf) == NULL && blk > 0)
      rc = MMP_EINVAL;
    if (rc == 0 && blk > 0 && (size_t)p > SIZE_MAX / blk)
      rc = MMP_ETOOBIG;
    if (rc == 0)
      rc = mmp__coll_sched_new(c->comm, &d, c->type, &o, NULL, 0, NULL, 0, &s);
    if (rc == 0) {
      int i;
      at = mmp__sched_scratch(s, blk * (size_t)p);
      for (i = 0; i < p; i++) {
        cnt[i] = blk;
        dsp[i] = at + (size_t)i * blk;
      }
      if (gather) {
        fill = c->sendbuf;
        fill_at = dsp[me];
        fill_len = blk;
      } else {
        out = c->recvbuf;
        out_at = dsp[me];
        out_len = blk;
      }
    }
  }
  if (rc != 0) {
    free(cnt);
    return rc;
  }
  if (!gather)
    s->rebuild = scatter_rebuild;
  memset(&a, 0, sizeof(a));
  a.cnt = cnt;
  a.dsp = dsp;
  rc = mmp__coll_build(s, &d, &a);
  if (rc != 0) {
    free(cnt);
    mmp__sched_free(s);
    return rc;
  }
  free(cnt);
  return mmp__coll_start(s, fill, fill_at, fill_len, out, out_at, out_len, req);
}

static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;

/* Gather or scatter of equal blocks: `mine` is this rank's own count,
 * `count` the root's per-rank one. */
static int gs_equal(int coll, const void *sendbuf, void *recvbuf, size_t mine,
                    size_t count, mmp_type_t type, int root, mmp_comm_t *comm,
                    const mmp_coll_opts_t *opts, mmp_request_t **req) {
  gs_call_t c = {coll,
                 sendbuf,
                 recvbuf,
                 mine,
                 count,
                 NULL,
                 NULL,
                 type,
                 root,
                 comm,
                 opts != NULL ? opts : &defaults};

  /* The layout's block: the root's count, elsewhere this rank's own
   * (equal in a correct program; the header compares them). */
  if (comm != NULL && mmp__eng != NULL && comm->rank != root)
    c.count = mine;
  return gs_start(&c, req);
}

/* The v-forms: counts and displacements, read at the root only. */
static int gs_varying(int coll, const void *sendbuf, void *recvbuf, size_t mine,
                      const size_t *counts, const size_t *displs,
                      mmp_type_t type, int root, mmp_comm_t *comm,
                      const mmp_coll_opts_t *opts, mmp_request_t **req) {
  static const size_t none = 0;
  gs_call_t c = {coll,
                 sendbuf,
                 recvbuf,
                 mine,
                 0,
                 counts,
                 displs,
                 type,
                 root,
                 comm,
                 opts != NULL ? opts : &defaults};

  if (c.counts == NULL)
    c.counts = &none; /* non-roots: not read */
  if (comm != NULL && mmp__eng != NULL && comm->rank == root &&
      (counts == NULL || displs == NULL))
    return req != NULL ? (*req = NULL, MMP_EINVAL) : MMP_EINVAL;
  return gs_start(&c, req);
}

int mmp_igather(const void *sendbuf, size_t sendcount, void *recvbuf,
                size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm,
                const mmp_gather_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(gs_equal(MMP_COLL_GATHER, sendbuf, recvbuf, sendcount,
                                 recvcount, type, root, comm, opts, req),
                        __func__);
}

int mmp_gather_ex(const void *sendbuf, size_t sendcount, void *recvbuf,
                  size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm,
                  const mmp_gather_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_igather(sendbuf, sendcount, recvbuf, recvcount, type,
                                   root, comm, opts, &r),
                       &r, __func__);
}

int mmp_gather(const void *sendbuf, size_t sendcount, void *recvbuf,
               size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_gather_ex(sendbuf, sendcount, recvbuf, recvcount,
                                      type, root, comm, NULL),
                        __func__);
}

int mmp_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                 const size_t *recvcounts, const size_t *displs,
                 mmp_type_t type, int root, mmp_comm_t *comm,
                 const mmp_gather_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(gs_varying(MMP_COLL_GATHER, sendbuf, recvbuf, sendcount,
                                   recvcounts, displs, type, root, comm, opts,
                                   req),
                        __func__);
}

int mmp_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                const size_t *recvcounts, const size_t *displs, mmp_type_t type,
                int root, mmp_comm_t *comm) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_igatherv(sendbuf, sendcount, recvbuf, recvcounts,
                                    displs, type, root, comm, NULL, &r),
                       &r, __func__);
}

int mmp_iscatter(const void *sendbuf, size_t sendcount, void *recvbuf,
                 size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm,
                 const mmp_scatter_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(gs_equal(MMP_COLL_SCATTER, sendbuf, recvbuf, recvcount,
                                 sendcount, type, root, comm, opts, req),
                        __func__);
}

int mmp_scatter_ex(const void *sendbuf, size_t sendcount, void *recvbuf,
                   size_t recvcount, mmp_type_t type, int root,
                   mmp_comm_t *comm, const mmp_scatter_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_iscatter(sendbuf, sendcount, recvbuf, recvcount,
                                    type, root, comm, opts, &r),
                       &r, __func__);
}

int mmp_scatter(const void *sendbuf, size_t sendcount, void *recvbuf,
                size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_scatter_ex(sendbuf, sendcount, recvbuf, recvcount,
                                       type, root, comm, NULL),
                        __func__);
}

int mmp_iscatterv(const void *sendbuf, const size_t *sendcounts,
                  const size_t *displs, void *recvbuf, size_t recvcount,
                  mmp_type_t type, int root, mmp_comm_t *comm,
                  const mmp_scatter_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(gs_varying(MMP_COLL_SCATTER, sendbuf, recvbuf,
                                   recvcount, sendcounts, displs, type, root,
                                   comm, opts, req),
                        __func__);
}

int mmp_scatterv(const void *sendbuf, const size_t *sendcounts,
                 const size_t *displs, void *recvbuf, size_t recvcount,
                 mmp_type_t type, int root, mmp_comm_t *comm) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_iscatterv(sendbuf, sendcounts, displs, recvbuf,
                                     recvcount, type, root, comm, NULL, &r),
                       &r, __func__);
}
