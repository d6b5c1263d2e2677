/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point and requests. A send or receive of a contiguous type
 * hands libminimp the caller's buffer; another type is packed into a
 * buffer of the request (a receive unpacks when it completes). MPI_Ssend
 * is libminimp's rendezvous mode (MMP_SEND_RNDV: complete only once the
 * receive has matched), MPI_Rsend a standard send, MPI_Bsend a copy into
 * the attached buffer sent from there.
 *
 * A request completes once: its libminimp request is waited for or
 * tested, its status and error kept (state COMPLETE) until a call returns
 * them, which frees it (or, persistent, makes it inactive). That lets
 * MPI_Testall complete some requests without returning any, as the
 * standard requires.
 */
#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpii.h"

static const MPI_Status empty_status = {MPI_ANY_SOURCE, MPI_ANY_TAG,
                                        MPI_SUCCESS, 0, 0};

static inline void *at(const void *base, MPI_Aint off) {
  return (void *)((uintptr_t)base + (uintptr_t)off);
}

/* ---- Request objects -----------------------------------------------------
 */

void mmpi__req_init(struct mmpi_req_s *r, int kind, MPI_Comm comm) {
  memset(r, 0, sizeof(*r));
  r->kind = kind;
  r->comm = comm;
}

struct mmpi_req_s *mmpi__req_new(int kind, MPI_Comm comm) {
  struct mmpi_req_s *r = malloc(sizeof(*r));

  if (r != NULL) {
    mmpi__req_init(r, kind, comm);
    r->on_heap = 1;
    if (mmpi__comm_ok(comm)) {
      mmpi__comm_retain(comm);
      r->comm_ref = 1;
    }
  }
  return r;
}

void mmpi__req_release(struct mmpi_req_s *r) {
  free(r->tmp);
  free(r->tmp2);
  r->tmp = r->tmp2 = NULL;
  if (r->utype != NULL)
    mmpi__type_release(r->utype);
  r->utype = NULL;
  if (r->arg_free != NULL)
    r->arg_free(r->arg);
  r->arg = NULL;
  r->arg_free = NULL;
  r->finish = NULL;
  if (r->rtype != NULL)
    mmpi__type_release(r->rtype);
  if (r->rop != NULL)
    mmpi__op_release(r->rop);
  r->rtype = NULL;
  r->rop = NULL;
}

void mmpi__req_free(struct mmpi_req_s *r) {
  assert(r->on_heap);
  mmpi__req_release(r);
  if (r->persistent && r->ptype != NULL)
    mmpi__type_release(r->ptype);
  if (r->comm_ref)
    mmpi__comm_release(r->comm);
  free(r);
}

/* Records the completion of r's libminimp request: status, unpacking,
 * error. */
static void harvest(struct mmpi_req_s *r, const mmp_status_t *ms, int rc) {
  r->mr = NULL;
  r->st.MPI_SOURCE = r->kind == MMPI__K_COLL ? MPI_ANY_SOURCE : ms->source;
  r->st.MPI_TAG = r->kind == MMPI__K_COLL ? MPI_ANY_TAG : ms->tag;
  r->st.mmpi_cancelled = 0;
  r->st.mmpi_bytes = ms->bytes;
  if (rc == MMP_ECANCELED && r->kind == MMPI__K_RECV) {
    r->st.mmpi_cancelled = 1;
    r->st.mmpi_bytes = 0;
    rc = 0;
  }
  if (r->finish != NULL) {
    if (rc == 0)
      r->finish(r);
  } else if (r->utype != NULL && (rc == 0 || rc == MMP_ETRUNC)) {
    mmpi__unpack(r->tmp, ms->bytes, r->ubuf, r->ucount, r->utype);
  }
  r->code = mmpi__code(rc);
  r->st.MPI_ERROR = r->code;
  mmpi__req_release(r);
  r->state = MMPI__RQ_COMPLETE;
}

/* Completes an active request now (blocking). */
static void complete(struct mmpi_req_s *r) {
  mmp_status_t ms;
  int rc = mmp_wait(&r->mr, &ms);

  harvest(r, &ms, rc);
}

/* Completes an active request if it has finished; 1 if it has. */
static int poll(struct mmpi_req_s *r) {
  mmp_status_t ms;
  int flag = 0, rc = mmp_test(&r->mr, &flag, &ms);

  if (flag || rc != 0)
    harvest(r, &ms, rc);
  return flag || rc != 0;
}

/* Copies a completed request's status to the caller's (all but
 * MPI_ERROR when `with_error` is 0: single completions leave it alone).
 * Returns its error code. */
static int copy_status(const struct mmpi_req_s *r, MPI_Status *st,
                       int with_error) {
  if (st != MPI_STATUS_IGNORE) {
    int e = st->MPI_ERROR;
    *st = r->st;
    if (!with_error)
      st->MPI_ERROR = e;
  }
  return r->code;
}

/* Hands a completed request of the caller's (on the heap) back: its
 * status, then frees it or makes it inactive. Returns its error code. */
static int give_back(MPI_Request *handle, MPI_Status *st, int with_error) {
  struct mmpi_req_s *r = *handle;
  int code = copy_status(r, st, with_error);

  if (r->persistent) {
    r->state = MMPI__RQ_INACTIVE;
  } else {
    mmpi__req_free(r);
    *handle = MPI_REQUEST_NULL;
  }
  return code;
}

/* An empty status (MPI-3.1 3.7.3) for null and inactive requests. */
static void give_empty(MPI_Status *st, int with_error) {
  if (st != MPI_STATUS_IGNORE) {
    int e = st->MPI_ERROR;
    *st = empty_status;
    if (!with_error)
      st->MPI_ERROR = e;
  }
}

/* A request that completed at once, with the status of MPI_PROC_NULL. */
static void complete_null(struct mmpi_req_s *r) {
  r->st = empty_status;
  r->st.MPI_SOURCE = MPI_PROC_NULL;
  r->code = MPI_SUCCESS;
  r->state = MMPI__RQ_COMPLETE;
}

int mmpi__req_wait_local(struct mmpi_req_s *r, MPI_Status *st, const char *fn) {
  if (r->state == MMPI__RQ_ACTIVE)
    complete(r);
  return mmpi__raise(r->comm, copy_status(r, st, 0), fn);
}

/* ---- Argument checks ------------------------------------------------------
 */

/* MPI_SUCCESS, or the class of what is wrong with a send's (recv 0) or a
 * receive's (recv 1) arguments. */
static int check(const void *buf, int count, MPI_Datatype t, int peer, int tag,
                 MPI_Comm comm, int recv) {
  if (!mmpi__comm_ok(comm))
    return MPI_ERR_COMM;
  if (count < 0)
    return MPI_ERR_COUNT;
  if (mmpi__type_ok(t) != MPI_SUCCESS)
    return MPI_ERR_TYPE;
  if (peer != MPI_PROC_NULL && (peer < 0 || peer >= comm->size) &&
      !(recv && peer == MPI_ANY_SOURCE))
    return MPI_ERR_RANK;
  if (tag < 0 && !(recv && tag == MPI_ANY_TAG))
    return MPI_ERR_TAG;
  if (buf == NULL && count > 0 && t->size > 0 && t->contig && t->tlb == 0)
    return MPI_ERR_BUFFER;
  return MPI_SUCCESS;
}

/* ---- Buffered sends --------------------------------------------------------
 */

typedef struct bseg_s {
  size_t off, len; /* bytes of the attached buffer it holds */
  mmp_request_t *mr;
} bseg_t;

/* The attached buffer and the sends from it, by offset (mmpi__mu). */
static struct {
  char *buf;
  size_t size;
  bseg_t *seg;
  size_t n, cap;
} bb;

/* Lock held. Forgets the buffered sends that have completed. */
static void bsend_reap(void) {
  size_t i, k = 0;

  for (i = 0; i < bb.n; i++) {
    int flag = 0;
    if (mmp_test(&bb.seg[i].mr, &flag, MMP_STATUS_IGNORE) != 0 || flag)
      continue;
    bb.seg[k++] = bb.seg[i];
  }
  bb.n = k;
}

/* Lock held. The offset of `len` free bytes in the attached buffer
 * (first fit), inserted in the list at *pos; -1 if none. */
static long bsend_alloc(size_t len, size_t *pos) {
  size_t i, from = 0;

  for (i = 0; i <= bb.n; i++) {
    size_t to = i < bb.n ? bb.seg[i].off : bb.size;
    if (to >= from && to - from >= len) {
      *pos = i;
      return (long)from;
    }
    if (i < bb.n)
      from = bb.seg[i].off + bb.seg[i].len;
  }
  return -1;
}

static int bsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
                 MPI_Comm comm) {
  size_t n = (size_t)count * t->size, need, pos = 0;
  long off;
  int rc;

  if (dest == MPI_PROC_NULL)
    return MPI_SUCCESS;
  /* The overhead of each message is counted against the buffer, as the
   * standard lets programs size it (MPI_BSEND_OVERHEAD). */
  need = (n + MPI_BSEND_OVERHEAD + 15) & ~(size_t)15;
  pthread_mutex_lock(&mmpi__mu);
  bsend_reap();
  off = bb.buf != NULL ? bsend_alloc(need, &pos) : -1;
  if (off < 0) {
    pthread_mutex_unlock(&mmpi__mu);
    return MPI_ERR_BUFFER; /* no buffer attached, or no room left in it */
  }
  if (bb.n == bb.cap) {
    size_t cap = bb.cap ? 2 * bb.cap : 8;
    bseg_t *s = realloc(bb.seg, cap * sizeof(*s));
    if (s == NULL) {
      pthread_mutex_unlock(&mmpi__mu);
      return MPI_ERR_NO_MEM;
    }
    bb.seg = s;
    bb.cap = cap;
  }
  mmpi__pack(buf, (size_t)count, t, bb.buf + off);
  memmove(bb.seg + pos + 1, bb.seg + pos, (bb.n - pos) * sizeof(*bb.seg));
  bb.seg[pos].off = (size_t)off;
  bb.seg[pos].len = need;
  rc = mmp_isend(bb.buf + off, n, dest, tag, comm->mc, &bb.seg[pos].mr);
  if (rc != 0)
    memmove(bb.seg + pos, bb.seg + pos + 1, (bb.n - pos) * sizeof(*bb.seg));
  else
    bb.n++;
  pthread_mutex_unlock(&mmpi__mu);
  return mmpi__code(rc);
}

int MPI_Buffer_attach(void *buffer, int size) {
  int rc = MPI_SUCCESS;

  if (size < 0 || (buffer == NULL && size > 0))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  pthread_mutex_lock(&mmpi__mu);
  if (bb.buf != NULL) {
    rc = MPI_ERR_BUFFER; /* one buffer at a time */
  } else {
    bb.buf = buffer;
    bb.size = (size_t)size;
  }
  pthread_mutex_unlock(&mmpi__mu);
  return mmpi__raise(MPI_COMM_NULL, rc, __func__);
}

/* Lock NOT held. Waits for every buffered send, without the lock (a
 * send may wait on a user operation run in the progress thread, which
 * takes it), then forgets them. */
static void bsend_drain(void) {
  bseg_t *seg;
  size_t i, n;

  pthread_mutex_lock(&mmpi__mu);
  seg = bb.seg;
  n = bb.n;
  bb.seg = NULL;
  bb.n = bb.cap = 0;
  pthread_mutex_unlock(&mmpi__mu);
  for (i = 0; i < n; i++)
    (void)mmp_wait(&seg[i].mr, MMP_STATUS_IGNORE);
  free(seg);
}

int MPI_Buffer_detach(void *buffer_addr, int *size) {
  void *buf;

  if (buffer_addr == NULL || size == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  /* Detached first, so that no new buffered send lands in it, then every
   * message still in it is sent. */
  pthread_mutex_lock(&mmpi__mu);
  buf = bb.buf;
  *size = (int)bb.size;
  bb.buf = NULL;
  bb.size = 0;
  pthread_mutex_unlock(&mmpi__mu);
  bsend_drain();
  memcpy(buffer_addr, &buf, sizeof(buf));
  return MPI_SUCCESS;
}

/* ---- Starting operations ----------------------------------------------------
 */

static int send_start(const void *buf, int count, MPI_Datatype t, int dest,
                      int tag, MPI_Comm comm, int mode, struct mmpi_req_s *r) {
  size_t n = (size_t)count * t->size;
  const void *p = at(buf, t->tlb);
  int rc;

  r->kind = MMPI__K_SEND;
  if (dest == MPI_PROC_NULL) {
    complete_null(r);
    return MPI_SUCCESS;
  }
  if (mode == MMPI__M_BUF) {
    /* Complete at once: the data is in the attached buffer. */
    if ((rc = bsend(buf, count, t, dest, tag, comm)) != MPI_SUCCESS)
      return rc;
    r->st = empty_status;
    r->code = MPI_SUCCESS;
    r->state = MMPI__RQ_COMPLETE;
    return MPI_SUCCESS;
  }
  if (!t->contig) {
    if ((r->tmp = malloc(n > 0 ? n : 1)) == NULL)
      return MPI_ERR_NO_MEM;
    mmpi__pack(buf, (size_t)count, t, r->tmp);
    p = r->tmp;
  }
  rc = mmp_isend_ex(p, n, dest, tag, comm->mc,
                    mode == MMPI__M_SYNC ? MMP_SEND_RNDV : MMP_SEND_AUTO,
                    &r->mr);
  if (rc != 0) {
    mmpi__req_release(r);
    return mmpi__code(rc);
  }
  r->state = MMPI__RQ_ACTIVE;
  return MPI_SUCCESS;
}

static int recv_start(void *buf, int count, MPI_Datatype t, int source, int tag,
                      MPI_Comm comm, struct mmpi_req_s *r) {
  size_t n = (size_t)count * t->size;
  void *p = at(buf, t->tlb);
  int rc;

  r->kind = MMPI__K_RECV;
  if (source == MPI_PROC_NULL) {
    complete_null(r);
    return MPI_SUCCESS;
  }
  if (!t->contig) {
    if ((r->tmp = malloc(n > 0 ? n : 1)) == NULL)
      return MPI_ERR_NO_MEM;
    p = r->tmp;
    r->ubuf = buf;
    r->ucount = (size_t)count;
    r->utype = t;
    mmpi__type_retain(t);
  }
  rc = mmp_irecv(p, n, source, tag, comm->mc, &r->mr);
  if (rc != 0) {
    mmpi__req_release(r);
    return mmpi__code(rc);
  }
  r->state = MMPI__RQ_ACTIVE;
  return MPI_SUCCESS;
}

/* The body of every non-blocking and persistent send and receive: a
 * persistent request keeps its arguments and starts at MPI_Start. */
static int istart(const void *buf, int count, MPI_Datatype t, int peer, int tag,
                  MPI_Comm comm, int mode, int recv, int persistent,
                  MPI_Request *request, const char *fn) {
  struct mmpi_req_s *r;
  int rc = check(buf, count, t, peer, tag, comm, recv);

  if (rc == MPI_SUCCESS && request == NULL)
    rc = MPI_ERR_REQUEST;
  if (rc != MPI_SUCCESS)
    return mmpi__raise(comm, rc, fn);
  if ((r = mmpi__req_new(recv ? MMPI__K_RECV : MMPI__K_SEND, comm)) == NULL)
    return mmpi__raise(comm, MPI_ERR_NO_MEM, fn);
  if (persistent) {
    r->persistent = 1;
    r->state = MMPI__RQ_INACTIVE;
    r->pbuf = buf;
    r->pcount = count;
    r->ptype = t;
    mmpi__type_retain(t);
    r->peer = peer;
    r->tag = tag;
    r->mode = mode;
    *request = r;
    return MPI_SUCCESS;
  }
  rc = recv ? recv_start((void *)buf, count, t, peer, tag, comm, r)
            : send_start(buf, count, t, peer, tag, comm, mode, r);
  if (rc != MPI_SUCCESS) {
    mmpi__req_free(r);
    *request = MPI_REQUEST_NULL;
    return mmpi__raise(comm, rc, fn);
  }
  *request = r;
  return MPI_SUCCESS;
}

/* ---- Blocking point-to-point ------------------------------------------------
 */

/* A blocking send in `mode`: the caller's buffer goes to libminimp when
 * the type is contiguous. */
static int send_blocking(const void *buf, int count, MPI_Datatype t, int dest,
                         int tag, MPI_Comm comm, int mode, const char *fn) {
  int rc = check(buf, count, t, dest, tag, comm, 0);
  size_t n;
  void *tmp;

  if (rc != MPI_SUCCESS)
    return mmpi__raise(comm, rc, fn);
  if (dest == MPI_PROC_NULL)
    return MPI_SUCCESS;
  if (mode == MMPI__M_BUF)
    return mmpi__raise(comm, bsend(buf, count, t, dest, tag, comm), fn);
  n = (size_t)count * t->size;
  if (t->contig)
    return mmpi__fail(
        comm,
        mmp_send_ex(at(buf, t->tlb), n, dest, tag, comm->mc,
                    mode == MMPI__M_SYNC ? MMP_SEND_RNDV : MMP_SEND_AUTO),
        fn);
  if ((tmp = malloc(n > 0 ? n : 1)) == NULL)
    return mmpi__raise(comm, MPI_ERR_NO_MEM, fn);
  mmpi__pack(buf, (size_t)count, t, tmp);
  rc = mmp_send_ex(tmp, n, dest, tag, comm->mc,
                   mode == MMPI__M_SYNC ? MMP_SEND_RNDV : MMP_SEND_AUTO);
  free(tmp);
  return mmpi__fail(comm, rc, fn);
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest,
             int tag, MPI_Comm comm) {
  return send_blocking(buf, count, datatype, dest, tag, comm, MMPI__M_STD,
                       __func__);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm) {
  return send_blocking(buf, count, datatype, dest, tag, comm, MMPI__M_SYNC,
                       __func__);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm) {
  return send_blocking(buf, count, datatype, dest, tag, comm, MMPI__M_READY,
                       __func__);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm) {
  return send_blocking(buf, count, datatype, dest, tag, comm, MMPI__M_BUF,
                       __func__);
}

/* Fills an MPI status from libminimp's. */
static void status_from(MPI_Status *st, const mmp_status_t *ms) {
  if (st != MPI_STATUS_IGNORE) {
    st->MPI_SOURCE = ms->source;
    st->MPI_TAG = ms->tag;
    st->mmpi_cancelled = 0;
    st->mmpi_bytes = ms->bytes;
  }
}

static void status_null(MPI_Status *st) {
  if (st != MPI_STATUS_IGNORE) {
    st->MPI_SOURCE = MPI_PROC_NULL;
    st->MPI_TAG = MPI_ANY_TAG;
    st->mmpi_cancelled = 0;
    st->mmpi_bytes = 0;
  }
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status) {
  int rc = check(buf, count, datatype, source, tag, comm, 1);
  mmp_status_t ms;
  size_t n;
  void *tmp;

  if (rc != MPI_SUCCESS)
    return mmpi__raise(comm, rc, __func__);
  if (source == MPI_PROC_NULL) {
    status_null(status);
    return MPI_SUCCESS;
  }
  n = (size_t)count * datatype->size;
  if (datatype->contig) {
    rc = mmp_recv(at(buf, datatype->tlb), n, source, tag, comm->mc, &ms);
  } else {
    if ((tmp = malloc(n > 0 ? n : 1)) == NULL)
      return mmpi__raise(comm, MPI_ERR_NO_MEM, __func__);
    rc = mmp_recv(tmp, n, source, tag, comm->mc, &ms);
    if (rc == 0 || rc == MMP_ETRUNC)
      mmpi__unpack(tmp, ms.bytes, buf, (size_t)count, datatype);
    free(tmp);
  }
  if (rc == 0 || rc == MMP_ETRUNC)
    status_from(status, &ms);
  return mmpi__fail(comm, rc, __func__);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_STD, 0, 0,
                request, __func__);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_SYNC, 0, 0,
                request, __func__);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_READY, 0, 0,
                request, __func__);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_BUF, 0, 0,
                request, __func__);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, source, tag, comm, MMPI__M_STD, 1, 0,
                request, __func__);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 int dest, int sendtag, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                 MPI_Status *status) {
  struct mmpi_req_s s, r;
  int rc = check(sendbuf, sendcount, sendtype, dest, sendtag, comm, 0), rc2;

  if (rc == MPI_SUCCESS)
    rc = check(recvbuf, recvcount, recvtype, source, recvtag, comm, 1);
  if (rc != MPI_SUCCESS)
    return mmpi__raise(comm, rc, __func__);
  mmpi__req_init(&r, MMPI__K_RECV, comm);
  mmpi__req_init(&s, MMPI__K_SEND, comm);
  if ((rc = recv_start(recvbuf, recvcount, recvtype, source, recvtag, comm,
                       &r)) != MPI_SUCCESS)
    return mmpi__raise(comm, rc, __func__);
  rc = send_start(sendbuf, sendcount, sendtype, dest, sendtag, comm,
                  MMPI__M_STD, &s);
  if (rc != MPI_SUCCESS) {
    /* Nothing will come for a receive whose partner saw no send. */
    if (r.state == MMPI__RQ_ACTIVE)
      (void)mmp_cancel(r.mr);
    (void)mmpi__req_wait_local(&r, MPI_STATUS_IGNORE, __func__);
    return mmpi__raise(comm, rc, __func__);
  }
  rc2 = mmpi__req_wait_local(&s, MPI_STATUS_IGNORE, __func__);
  rc = mmpi__req_wait_local(&r, status, __func__);
  return rc != MPI_SUCCESS ? rc : rc2;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                         int sendtag, int source, int recvtag, MPI_Comm comm,
                         MPI_Status *status) {
  struct mmpi_req_s s, r;
  size_t n;
  int rc = check(buf, count, datatype, dest, sendtag, comm, 0), rc2;

  if (rc == MPI_SUCCESS)
    rc = check(buf, count, datatype, source, recvtag, comm, 1);
  if (rc != MPI_SUCCESS)
    return mmpi__raise(comm, rc, __func__);
  /* The outgoing data is copied first: the receive overwrites it. */
  mmpi__req_init(&s, MMPI__K_SEND, comm);
  n = (size_t)count * datatype->size;
  if ((s.tmp = malloc(n > 0 ? n : 1)) == NULL)
    return mmpi__raise(comm, MPI_ERR_NO_MEM, __func__);
  mmpi__pack(buf, (size_t)count, datatype, s.tmp);
  if (dest == MPI_PROC_NULL) {
    complete_null(&s);
  } else if ((rc = mmp_isend(s.tmp, n, dest, sendtag, comm->mc, &s.mr)) != 0) {
    free(s.tmp);
    return mmpi__fail(comm, rc, __func__);
  } else {
    s.state = MMPI__RQ_ACTIVE;
  }
  mmpi__req_init(&r, MMPI__K_RECV, comm);
  rc = recv_start(buf, count, datatype, source, recvtag, comm, &r);
  if (rc != MPI_SUCCESS) {
    (void)mmpi__req_wait_local(&s, MPI_STATUS_IGNORE, __func__);
    return mmpi__raise(comm, rc, __func__);
  }
  rc = mmpi__req_wait_local(&r, status, __func__);
  rc2 = mmpi__req_wait_local(&s, MPI_STATUS_IGNORE, __func__);
  return rc != MPI_SUCCESS ? rc : rc2;
}

/* ---- Completion -------------------------------------------------------------
 */

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  struct mmpi_req_s *r;
  MPI_Comm comm;

  if (request == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_REQUEST, __func__);
  r = *request;
  if (r == MPI_REQUEST_NULL || r->state == MMPI__RQ_INACTIVE) {
    give_empty(status, 0);
    return MPI_SUCCESS;
  }
  if (r->state == MMPI__RQ_ACTIVE)
    complete(r);
  comm = r->comm;
  return mmpi__raise(comm, give_back(request, status, 0), __func__);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  struct mmpi_req_s *r;
  MPI_Comm comm;

  if (request == NULL || flag == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  r = *request;
  if (r == MPI_REQUEST_NULL || r->state == MMPI__RQ_INACTIVE) {
    *flag = 1;
    give_empty(status, 0);
    return MPI_SUCCESS;
  }
  if (r->state == MMPI__RQ_ACTIVE && !poll(r)) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  *flag = 1;
  comm = r->comm;
  return mmpi__raise(comm, give_back(request, status, 0), __func__);
}

/* 1 if a request takes part in a multiple completion (neither null nor
 * inactive). */
static inline int live(MPI_Request r) {
  return r != MPI_REQUEST_NULL && r->state != MMPI__RQ_INACTIVE;
}

/* Returns the completed requests of `reqs` whose `done` flag is set into
 * statuses (with their error fields); the code of the call: MPI_SUCCESS,
 * or MPI_ERR_IN_STATUS raised on the first failed one's communicator. */
static int give_back_many(int n, MPI_Request *reqs, const char *done,
                          MPI_Status *sts, int *idx, const char *fn) {
  MPI_Comm bad = MPI_COMM_NULL;
  int i, k = 0, failed = 0;

  for (i = 0; i < n; i++) {
    MPI_Status *st;
    MPI_Comm comm;
    if (!done[i])
      continue;
    st = sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE
                                    : &sts[idx != NULL ? k : i];
    comm = reqs[i]->comm;
    if (give_back(&reqs[i], st, 1) != MPI_SUCCESS && !failed++)
      bad = comm;
    if (idx != NULL)
      idx[k] = i;
    k++;
  }
  return failed ? mmpi__raise(bad, MPI_ERR_IN_STATUS, fn) : MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[],
                MPI_Status array_of_statuses[]) {
  char small[64] = {0}, *done = small;
  int i, rc;

  if (count < 0 || (count > 0 && array_of_requests == NULL))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  if ((size_t)count > sizeof(small) && (done = malloc((size_t)count)) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  for (i = 0; i < count; i++) {
    MPI_Request r = array_of_requests[i];
    done[i] = (char)live(r);
    if (done[i] && r->state == MMPI__RQ_ACTIVE)
      complete(r);
    else if (!done[i] && array_of_statuses != MPI_STATUSES_IGNORE)
      array_of_statuses[i] = empty_status;
  }
  rc = give_back_many(count, array_of_requests, done, array_of_statuses, NULL,
                      __func__);
  if (done != small)
    free(done);
  return rc;
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]) {
  char small[64] = {0}, *done = small;
  int i, all = 1, rc = MPI_SUCCESS;

  if (count < 0 || flag == NULL || (count > 0 && array_of_requests == NULL))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  if ((size_t)count > sizeof(small) && (done = malloc((size_t)count)) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  /* Those that finished are completed and kept: none is returned unless
   * all are. */
  for (i = 0; i < count; i++) {
    MPI_Request r = array_of_requests[i];
    done[i] = (char)live(r);
    if (done[i] && r->state == MMPI__RQ_ACTIVE && !poll(r))
      all = 0;
  }
  *flag = all;
  if (all) {
    for (i = 0; i < count; i++)
      if (!done[i] && array_of_statuses != MPI_STATUSES_IGNORE)
        array_of_statuses[i] = empty_status;
    rc = give_back_many(count, array_of_requests, done, array_of_statuses, NULL,
                        __func__);
  }
  if (done != small)
    free(done);
  return rc;
}

/* The index of a live request of `reqs` that has completed (polling the
 * active ones), -1 if none has, or -2 if none is live. */
static int find_done(int n, MPI_Request *reqs) {
  int i, any = 0;

  for (i = 0; i < n; i++) {
    if (!live(reqs[i]))
      continue;
    any = 1;
    if (reqs[i]->state == MMPI__RQ_COMPLETE || poll(reqs[i]))
      return i;
  }
  return any ? -1 : -2;
}

/* Blocks until one of the active requests of `reqs` completes, through
 * mmp_waitany. */
static int wait_one(int n, MPI_Request *reqs) {
  mmp_request_t *small[32], **mr = small;
  int small_map[32], *map = small_map, i, k = 0, got = -1;
  size_t idx = (size_t)-1;
  mmp_status_t ms;
  int rc;

  if ((size_t)n > sizeof(small) / sizeof(small[0]) &&
      ((mr = malloc((size_t)n * sizeof(*mr))) == NULL ||
       (map = malloc((size_t)n * sizeof(*map))) == NULL)) {
    free(mr != small ? mr : NULL);
    return MPI_ERR_NO_MEM;
  }
  for (i = 0; i < n; i++)
    if (live(reqs[i]) && reqs[i]->state == MMPI__RQ_ACTIVE) {
      mr[k] = reqs[i]->mr;
      map[k++] = i;
    }
  rc = mmp_waitany((size_t)k, mr, &idx, &ms);
  if (idx != (size_t)-1) {
    got = map[idx];
    reqs[got]->mr = NULL; /* mmp_waitany freed it */
    harvest(reqs[got], &ms, rc);
  }
  if (mr != small) {
    free(mr);
    free(map);
  }
  return got;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
                MPI_Status *status) {
  MPI_Comm comm;
  int i;

  if (count < 0 || index == NULL || (count > 0 && array_of_requests == NULL))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  i = find_done(count, array_of_requests);
  if (i == -2) {
    *index = MPI_UNDEFINED;
    give_empty(status, 0);
    return MPI_SUCCESS;
  }
  if (i == -1 && (i = wait_one(count, array_of_requests)) < 0)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  *index = i;
  comm = array_of_requests[i]->comm;
  return mmpi__raise(comm, give_back(&array_of_requests[i], status, 0),
                     __func__);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index,
                int *flag, MPI_Status *status) {
  MPI_Comm comm;
  int i;

  if (count < 0 || index == NULL || flag == NULL ||
      (count > 0 && array_of_requests == NULL))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  i = find_done(count, array_of_requests);
  *flag = i != -1;
  *index = MPI_UNDEFINED;
  if (i == -2)
    give_empty(status, 0);
  if (i < 0)
    return MPI_SUCCESS;
  *index = i;
  comm = array_of_requests[i]->comm;
  return mmpi__raise(comm, give_back(&array_of_requests[i], status, 0),
                     __func__);
}

/* Waitsome (block 1) and Testsome (0). */
static int some(int n, MPI_Request *reqs, int *outcount, int *indices,
                MPI_Status *sts, int block, const char *fn) {
  char small[64] = {0}, *done = small;
  int i, k = 0, any = 0, rc;

  if (n < 0 || outcount == NULL || (n > 0 && (reqs == NULL || indices == NULL)))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, fn);
  if ((size_t)n > sizeof(small) && (done = malloc((size_t)n)) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, fn);
  for (i = 0; i < n; i++) {
    done[i] = 0;
    if (!live(reqs[i]))
      continue;
    any = 1;
    if (reqs[i]->state == MMPI__RQ_COMPLETE || poll(reqs[i]))
      done[i] = 1, k++;
  }
  if (!any) {
    *outcount = MPI_UNDEFINED;
    rc = MPI_SUCCESS;
  } else {
    if (k == 0 && block) {
      if ((i = wait_one(n, reqs)) >= 0)
        done[i] = 1;
    }
    rc = give_back_many(n, reqs, done, sts, indices, fn);
    for (k = 0, i = 0; i < n; i++)
      k += done[i];
    *outcount = k;
  }
  if (done != small)
    free(done);
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]) {
  return some(incount, array_of_requests, outcount, array_of_indices,
              array_of_statuses, 1, __func__);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]) {
  return some(incount, array_of_requests, outcount, array_of_indices,
              array_of_statuses, 0, __func__);
}

/* ---- Probe, cancel, free ----------------------------------------------------
 */

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  int rc = check(NULL, 0, MPI_BYTE, source, tag, comm, 1);
  mmp_status_t ms;

  if (rc != MPI_SUCCESS)
    return mmpi__raise(comm, rc, __func__);
  if (source == MPI_PROC_NULL) {
    status_null(status);
    return MPI_SUCCESS;
  }
  if ((rc = mmp_probe(source, tag, comm->mc, &ms)) == 0)
    status_from(status, &ms);
  return mmpi__fail(comm, rc, __func__);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag,
               MPI_Status *status) {
  int rc = check(NULL, 0, MPI_BYTE, source, tag, comm, 1);
  mmp_status_t ms;

  if (rc == MPI_SUCCESS && flag == NULL)
    rc = MPI_ERR_ARG;
  if (rc != MPI_SUCCESS)
    return mmpi__raise(comm, rc, __func__);
  if (source == MPI_PROC_NULL) {
    *flag = 1;
    status_null(status);
    return MPI_SUCCESS;
  }
  if ((rc = mmp_iprobe(source, tag, comm->mc, flag, &ms)) == 0 && *flag)
    status_from(status, &ms);
  return mmpi__fail(comm, rc, __func__);
}

int MPI_Cancel(MPI_Request *request) {
  struct mmpi_req_s *r;

  if (request == NULL || *request == MPI_REQUEST_NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_REQUEST, __func__);
  r = *request;
  if (r->kind == MMPI__K_COLL)
    return mmpi__raise(r->comm, MPI_ERR_REQUEST, __func__);
  /* A receive nothing matched yet is taken back; a send is not (the
   * standard lets a cancel fail: the send completes as usual). */
  if (r->state == MMPI__RQ_ACTIVE && r->kind == MMPI__K_RECV)
    (void)mmp_cancel(r->mr);
  return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag) {
  if (status == NULL || flag == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  *flag = status->mmpi_cancelled;
  return MPI_SUCCESS;
}

/* Requests freed while active, completed in the background (mmpi__mu).
 * They are polled and waited for without the lock: completing one may
 * run a user operation (op.c), which takes it in the progress thread. */
static struct mmpi_req_s **orphans;
static size_t norphans, orphans_cap;

/* Lock held. Room for one more orphan; MPI_ERR_NO_MEM if none. */
static int orphans_room(void) {
  if (norphans == orphans_cap) {
    size_t cap = orphans_cap ? 2 * orphans_cap : 16;
    struct mmpi_req_s **o = realloc(orphans, cap * sizeof(*o));
    if (o == NULL)
      return MPI_ERR_NO_MEM;
    orphans = o;
    orphans_cap = cap;
  }
  return MPI_SUCCESS;
}

/* Lock NOT held. Takes the list of orphans (their number in *n). */
static struct mmpi_req_s **orphans_take(size_t *n) {
  struct mmpi_req_s **mine;

  pthread_mutex_lock(&mmpi__mu);
  mine = orphans;
  *n = norphans;
  orphans = NULL;
  norphans = orphans_cap = 0;
  pthread_mutex_unlock(&mmpi__mu);
  return mine;
}

/* Lock NOT held. Frees the orphans that have finished: takes the list,
 * polls it, and puts back those still running. */
static void orphans_reap(void) {
  struct mmpi_req_s **mine;
  size_t n, i;

  mine = orphans_take(&n);
  for (i = 0; i < n; i++)
    if (poll(mine[i])) {
      mmpi__req_free(mine[i]);
      mine[i] = NULL;
    }
  pthread_mutex_lock(&mmpi__mu);
  for (i = 0; i < n; i++)
    if (mine[i] != NULL) {
      if (orphans_room() != MPI_SUCCESS) {
        /* Out of memory: this one is waited for here. */
        pthread_mutex_unlock(&mmpi__mu);
        complete(mine[i]);
        mmpi__req_free(mine[i]);
        pthread_mutex_lock(&mmpi__mu);
        continue;
      }
      orphans[norphans++] = mine[i];
    }
  pthread_mutex_unlock(&mmpi__mu);
  free(mine);
}

int MPI_Request_free(MPI_Request *request) {
  struct mmpi_req_s *r;
  int rc;

  if (request == NULL || *request == MPI_REQUEST_NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_REQUEST, __func__);
  r = *request;
  if (r->state != MMPI__RQ_ACTIVE) {
    mmpi__req_free(r);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
  }
  /* Active: it completes in the background, and is freed then. */
  orphans_reap();
  pthread_mutex_lock(&mmpi__mu);
  rc = orphans_room();
  if (rc == MPI_SUCCESS) {
    if (r->persistent && r->ptype != NULL)
      mmpi__type_release(r->ptype);
    r->ptype = NULL;
    r->persistent = 0;
    orphans[norphans++] = r;
    *request = MPI_REQUEST_NULL;
  }
  pthread_mutex_unlock(&mmpi__mu);
  return mmpi__raise(r->comm, rc, __func__);
}

void mmpi__p2p_fini(void) {
  struct mmpi_req_s **mine;
  size_t i, n;

  mine = orphans_take(&n);
  /* A freed receive that nothing matched never will now. */
  for (i = 0; i < n; i++) {
    if (mine[i]->kind == MMPI__K_RECV)
      (void)mmp_cancel(mine[i]->mr);
    complete(mine[i]);
    mmpi__req_free(mine[i]);
  }
  free(mine);
  bsend_drain();
  pthread_mutex_lock(&mmpi__mu);
  memset(&bb, 0, sizeof(bb));
  pthread_mutex_unlock(&mmpi__mu);
}

/* ---- Persistent requests
 * ------------------------------------------------------
 */

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest,
                  int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_STD, 0, 1,
                request, __func__);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest,
                   int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_SYNC, 0, 1,
                request, __func__);
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest,
                   int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_READY, 0, 1,
                request, __func__);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest,
                   int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, dest, tag, comm, MMPI__M_BUF, 0, 1,
                request, __func__);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source,
                  int tag, MPI_Comm comm, MPI_Request *request) {
  return istart(buf, count, datatype, source, tag, comm, MMPI__M_STD, 1, 1,
                request, __func__);
}

int MPI_Start(MPI_Request *request) {
  struct mmpi_req_s *r;
  int rc;

  if (request == NULL || *request == MPI_REQUEST_NULL ||
      !(*request)->persistent || (*request)->state != MMPI__RQ_INACTIVE)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_REQUEST, __func__);
  r = *request;
  rc = r->kind == MMPI__K_RECV
           ? recv_start((void *)r->pbuf, r->pcount, r->ptype, r->peer, r->tag,
                        r->comm, r)
           : send_start(r->pbuf, r->pcount, r->ptype, r->peer, r->tag, r->comm,
                        r->mode, r);
  return mmpi__raise(r->comm, rc, __func__);
}

int MPI_Startall(int count, MPI_Request array_of_requests[]) {
  int i, rc = MPI_SUCCESS;

  if (count < 0 || (count > 0 && array_of_requests == NULL))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  for (i = 0; i < count && rc == MPI_SUCCESS; i++)
    rc = MPI_Start(&array_of_requests[i]);
  return rc;
}
