/* SPDX-License-Identifier: MIT */
/*
 * The public point-to-point calls: argument checking, communicator rank
 * translation, request allocation, and the wait/test/probe family built on
 * mmp__progress_until. The protocols themselves live in p2p.c.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void empty_status(mmp_status_t *st) {
  if (st != NULL) {
    memset(st, 0, sizeof(*st));
    st->source = MMP_ANY_SOURCE;
    st->tag = MMP_ANY_TAG;
  }
}

static int check_send(mmp__engine_t *e, const void *buf, size_t len, int dest,
                      int tag, const mmp_comm_t *comm, unsigned flags) {
  if (e == NULL)
    return mmp__not_init("a send (mmp_send and its variants)");
  if (comm == NULL)
    return MMP_ECOMM;
  if (buf == NULL && len > 0)
    return MMP_EINVAL;
  if (flags > MMP_SEND_RNDV)
    return MMP_EINVAL;
  if (dest < 0 || dest >= comm->size)
    return MMP_ERANK;
  if (tag < 0)
    return MMP_ETAG;
  return 0;
}

static int check_recv(mmp__engine_t *e, const void *buf, size_t cap, int source,
                      int tag, const mmp_comm_t *comm) {
  if (e == NULL)
    return mmp__not_init("a receive (mmp_recv and its variants)");
  if (comm == NULL)
    return MMP_ECOMM;
  if (buf == NULL && cap > 0)
    return MMP_EINVAL;
  if (source != MMP_ANY_SOURCE && (source < 0 || source >= comm->size))
    return MMP_ERANK;
  if (tag != MMP_ANY_TAG && tag < 0)
    return MMP_ETAG;
  return 0;
}

static int req_done(void *arg) {
  return atomic_load_explicit(&((mmp_request_t *)arg)->done,
                              memory_order_acquire);
}

void mmp__progress_wait(mmp__engine_t *e, size_t len, int (*pred)(void *),
                        void *arg) {
  if (len > MMP__BULK_BYTES) {
    int was = mmp__progress_sleepy(1);
    mmp__progress_until(e, pred, arg);
    mmp__progress_sleepy(was);
  } else {
    mmp__progress_until(e, pred, arg);
  }
}

/* Lock NOT held. Waits for `r` and copies its status out. Returns its
 * result. */
static int req_finish(mmp__engine_t *e, mmp_request_t *r, mmp_status_t *st) {
  MMP__ASSERT_UNLOCKED(e);
  if (!req_done(r))
    mmp__progress_wait(e, r->len, req_done, r);
  if (st != NULL)
    *st = r->status;
  return r->err;
}

int mmp__wait_internal(mmp__engine_t *e, mmp_request_t *r) {
  MMP__ASSERT_UNLOCKED(e);
  assert(!r->on_heap); /* heap requests are the user's, for mmp_wait */
  return req_finish(e, r, NULL);
}

typedef struct watch_s {
  mmp__engine_t *e;
  const mmp_comm_t *comm;
  mmp_request_t *r;
  const atomic_int *stop; /* NULL, or set once the wait is to end */
} watch_t;

static int watch_stopped(const watch_t *w) {
  return w->stop != NULL &&
         atomic_load_explicit(w->stop, memory_order_acquire) != 0;
}

/* Lock held: why a wait that did not complete ended. */
static int watch_why(const watch_t *w) {
  return mmp__comm_lost_locked(w->e, w->comm) < 0 && watch_stopped(w)
             ? MMP_ETIMEDOUT
             : MMP_EPEERLOST;
}

/* Lock held. */
static int watch_pred(void *arg) {
  watch_t *w = arg;

  return req_done(w->r) || mmp__comm_lost_locked(w->e, w->comm) >= 0 ||
         watch_stopped(w);
}

/* Lock held: an orphaned transfer completed. */
static void watch_orphan_done(mmp_request_t *r, void *own) {
  free(own);
  free(r);
}

int mmp__wait_watch(mmp__engine_t *e, const mmp_comm_t *comm,
                    mmp_request_t **rp, void **own) {
  return mmp__wait_watch_until(e, comm, rp, own, NULL);
}

int mmp__wait_watch_until(mmp__engine_t *e, const mmp_comm_t *comm,
                          mmp_request_t **rp, void **own,
                          const atomic_int *stop) {
  watch_t w;
  int rc;

  MMP__ASSERT_UNLOCKED(e);
  assert(!(*rp)->on_heap && (*rp)->cb == NULL);
  w.e = e;
  w.comm = comm;
  w.r = *rp;
  w.stop = stop;
  mmp__progress_wait(e, w.r->len, watch_pred, &w);
  mmp__lock(e);
  if (!req_done(w.r))
    (void)mmp__cancel_locked(e, w.r); /* a receive nothing matched yet */
  if (req_done(w.r)) {
    rc = w.r->err == MMP_ECANCELED ? watch_why(&w) : w.r->err;
  } else {
    /* Under way: it completes when the peer sends, or goes. */
    w.r->cb = watch_orphan_done;
    w.r->cb_arg = own != NULL ? *own : NULL;
    *rp = NULL;
    if (own != NULL)
      *own = NULL;
    rc = watch_why(&w);
  }
  mmp__unlock(e);
  return rc;
}

static int isend_ex_body(const void *buf, size_t len, int dest, int tag,
                         mmp_comm_t *comm, unsigned flags,
                         mmp_request_t **req) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t *r;
  int rc;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  rc = check_send(e, buf, len, dest, tag, comm, flags);
  if (rc != 0)
    return rc;
  r = malloc(sizeof(*r));
  if (r == NULL)
    return MMP_ENOMEM;
  r->on_heap = 1;
  r->cb = NULL;
  rc = mmp__isend(e, comm, comm->ctx, buf, len, mmp__comm_world(comm, dest),
                  tag, flags, r);
  if (rc != 0) {
    free(r);
    return rc;
  }
  mmp__comm_ref(comm);
  *req = r;
  return 0;
}

int mmp_isend_ex(const void *buf, size_t len, int dest, int tag,
                 mmp_comm_t *comm, unsigned flags, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(isend_ex_body(buf, len, dest, tag, comm, flags, req),
                        __func__);
}

int mmp_isend(const void *buf, size_t len, int dest, int tag, mmp_comm_t *comm,
              mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(
      mmp_isend_ex(buf, len, dest, tag, comm, MMP_SEND_AUTO, req), __func__);
}

static int send_ex_body(const void *buf, size_t len, int dest, int tag,
                        mmp_comm_t *comm, unsigned flags) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t r;
  int rc;

  rc = check_send(e, buf, len, dest, tag, comm, flags);
  if (rc != 0)
    return rc;
  r.on_heap = 0;
  r.cb = NULL;
  rc = mmp__isend(e, comm, comm->ctx, buf, len, mmp__comm_world(comm, dest),
                  tag, flags, &r);
  if (rc != 0)
    return rc;
  return req_finish(e, &r, NULL);
}

int mmp_send_ex(const void *buf, size_t len, int dest, int tag,
                mmp_comm_t *comm, unsigned flags) {
  mmp__api_enter();
  return mmp__api_leave(send_ex_body(buf, len, dest, tag, comm, flags),
                        __func__);
}

int mmp_send(const void *buf, size_t len, int dest, int tag, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_send_ex(buf, len, dest, tag, comm, MMP_SEND_AUTO),
                        __func__);
}

/* Loop context, lock held: a timed receive's deadline. A receive that no
 * message matched gives up; one already matched is under way and ends
 * as its transfer does (or fails with its peer). */
static void recv_timed_out(void *arg) {
  mmp_request_t *r = arg;

  mmp__cancel_err_locked(mmp__eng, r, MMP_ETIMEDOUT);
}

/* Posts the user's receive `r` on `comm` with the communicator's timeout
 * (mmp_comm_set_timeout). Lock NOT held. */
static int post_recv(mmp__engine_t *e, void *buf, size_t cap, int source,
                     int tag, mmp_comm_t *comm, mmp_request_t *r) {
  unsigned ms = mmp__comm_timeout(e, comm, 0);
  int rc;

  mmp__lock(e);
  rc = mmp__irecv_locked(
      e, comm, comm->ctx, buf, cap,
      source == MMP_ANY_SOURCE ? source : mmp__comm_world(comm, source), tag,
      r);
  /* Armed under the same lock as the post, so that the loop cannot
   * complete the receive in between. */
  if (rc == 0 && ms > 0 && r->state == MMP__RQ_POSTED)
    mmp__deadline_start_locked(e, &r->tmo, ms, recv_timed_out, r);
  mmp__unlock(e);
  return rc;
}

static int irecv_body(void *buf, size_t cap, int source, int tag,
                      mmp_comm_t *comm, mmp_request_t **req) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t *r;
  int rc;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  rc = check_recv(e, buf, cap, source, tag, comm);
  if (rc != 0)
    return rc;
  r = malloc(sizeof(*r));
  if (r == NULL)
    return MMP_ENOMEM;
  r->on_heap = 1;
  r->cb = NULL;
  rc = post_recv(e, buf, cap, source, tag, comm, r);
  if (rc != 0) {
    free(r);
    return rc;
  }
  mmp__comm_ref(comm);
  *req = r;
  return 0;
}

int mmp_irecv(void *buf, size_t cap, int source, int tag, mmp_comm_t *comm,
              mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(irecv_body(buf, cap, source, tag, comm, req), __func__);
}

static int recv_body(void *buf, size_t cap, int source, int tag,
                     mmp_comm_t *comm, mmp_status_t *status) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t r;
  int rc;

  rc = check_recv(e, buf, cap, source, tag, comm);
  if (rc != 0)
    return rc;
  r.on_heap = 0;
  r.cb = NULL;
  rc = post_recv(e, buf, cap, source, tag, comm, &r);
  if (rc != 0)
    return rc;
  return req_finish(e, &r, status);
}

int mmp_recv(void *buf, size_t cap, int source, int tag, mmp_comm_t *comm,
             mmp_status_t *status) {
  mmp__api_enter();
  return mmp__api_leave(recv_body(buf, cap, source, tag, comm, status),
                        __func__);
}

static int wait_body(mmp_request_t **req, mmp_status_t *status) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t *r;
  int rc;

  if (req == NULL)
    return MMP_EINVAL;
  r = *req;
  if (r == NULL) {
    empty_status(status);
    return 0;
  }
  if (e == NULL)
    return mmp__not_init("mmp_wait");
  *req = NULL;
  rc = req_finish(e, r, status);
  mmp__req_user_free(r);
  return rc;
}

void mmp__req_user_free(mmp_request_t *r) {
  mmp_comm_t *c = (mmp_comm_t *)r->comm;

  assert(r->on_heap); /* requests handed to users are always on the heap */
  if (r->dtor != NULL)
    r->dtor(r); /* a collective frees its schedule */
  free(r);
  /* Last: the destructor may still reach the communicator. */
  mmp__comm_unref(c);
}

int mmp_wait(mmp_request_t **req, mmp_status_t *status) {
  mmp__api_enter();
  return mmp__api_leave(wait_body(req, status), __func__);
}

static int test_body(mmp_request_t **req, int *flag, mmp_status_t *status) {
  mmp__engine_t *e = mmp__eng;

  if (req == NULL || flag == NULL)
    return MMP_EINVAL;
  if (*req == NULL) {
    *flag = 1;
    empty_status(status);
    return 0;
  }
  if (e == NULL)
    return mmp__not_init("mmp_test");
  if (!req_done(*req))
    mmp__progress_poke(e);
  *flag = req_done(*req);
  if (!*flag)
    return 0;
  return mmp_wait(req, status);
}

int mmp_test(mmp_request_t **req, int *flag, mmp_status_t *status) {
  mmp__api_enter();
  return mmp__api_leave(test_body(req, flag, status), __func__);
}

static int waitall_body(size_t n, mmp_request_t **reqs,
                        mmp_status_t *statuses) {
  int rc = 0;
  size_t i;

  if (n > 0 && reqs == NULL)
    return MMP_EINVAL;
  for (i = 0; i < n; i++) {
    int r = mmp_wait(&reqs[i], statuses != NULL ? &statuses[i] : NULL);
    if (r != 0 && rc == 0)
      rc = r;
  }
  return rc;
}

int mmp_waitall(size_t n, mmp_request_t **reqs, mmp_status_t *statuses) {
  mmp__api_enter();
  return mmp__api_leave(waitall_body(n, reqs, statuses), __func__);
}

typedef struct any_s {
  size_t n;
  mmp_request_t **reqs;
  size_t found;
} any_t;

static int any_done(void *arg) {
  any_t *a = arg;
  size_t i;

  for (i = 0; i < a->n; i++) {
    if (a->reqs[i] != NULL && req_done(a->reqs[i])) {
      a->found = i;
      return 1;
    }
  }
  return 0;
}

static int waitany_body(size_t n, mmp_request_t **reqs, size_t *index,
                        mmp_status_t *status) {
  mmp__engine_t *e = mmp__eng;
  any_t a;
  size_t i;

  if ((n > 0 && reqs == NULL) || index == NULL)
    return MMP_EINVAL;
  *index = (size_t)-1;
  for (i = 0; i < n && reqs[i] == NULL; i++)
    ;
  if (i == n) {
    empty_status(status);
    return 0;
  }
  if (e == NULL)
    return mmp__not_init("mmp_waitany");
  a.n = n;
  a.reqs = reqs;
  a.found = 0;
  mmp__progress_until(e, any_done, &a);
  *index = a.found;
  return mmp_wait(&reqs[a.found], status);
}

int mmp_waitany(size_t n, mmp_request_t **reqs, size_t *index,
                mmp_status_t *status) {
  mmp__api_enter();
  return mmp__api_leave(waitany_body(n, reqs, index, status), __func__);
}

typedef struct probe_s {
  mmp__engine_t *e;
  const mmp_comm_t *comm;
  int peer;
  int tag;
  mmp_status_t st;
  int timed_out;       /* the communicator's timeout passed (lock) */
  mmp__deadline_t tmo; /* a blocking probe's */
} probe_t;

/* Lock held. */
static int probe_match(void *arg) {
  probe_t *p = arg;

  return mmp__iprobe_locked(p->e, p->comm, p->comm->ctx, p->peer, p->tag,
                            &p->st);
}

/* Lock held: a match, or the timeout. */
static int probe_over(void *arg) {
  probe_t *p = arg;

  return probe_match(p) || p->timed_out;
}

/* Loop context, lock held. */
static void probe_timed_out(void *arg) {
  probe_t *p = arg;

  p->timed_out = 1;
  mmp__engine_notify_locked(p->e);
}

static int probe_setup(probe_t *p, int source, int tag, mmp_comm_t *comm) {
  int rc = check_recv(mmp__eng, NULL, 0, source, tag, comm);

  if (rc != 0)
    return rc;
  p->e = mmp__eng;
  p->comm = comm;
  p->peer = source == MMP_ANY_SOURCE ? source : mmp__comm_world(comm, source);
  p->tag = tag;
  p->timed_out = 0;
  memset(&p->tmo, 0, sizeof(p->tmo));
  return 0;
}

static int probe_body(int source, int tag, mmp_comm_t *comm,
                      mmp_status_t *status) {
  probe_t p;
  int rc = probe_setup(&p, source, tag, comm);
  unsigned ms;

  if (rc != 0)
    return rc;
  ms = mmp__comm_timeout(p.e, comm, 0);
  if (ms > 0) {
    mmp__lock(p.e);
    mmp__deadline_start_locked(p.e, &p.tmo, ms, probe_timed_out, &p);
    mmp__unlock(p.e);
  }
  mmp__progress_until(p.e, probe_over, &p);
  /* A match wins over a timeout that passed meanwhile. */
  mmp__lock(p.e);
  mmp__deadline_stop_locked(p.e, &p.tmo);
  rc = probe_match(&p) ? 0 : MMP_ETIMEDOUT;
  mmp__unlock(p.e);
  if (rc == 0 && status != NULL)
    *status = p.st;
  return rc;
}

int mmp_probe(int source, int tag, mmp_comm_t *comm, mmp_status_t *status) {
  mmp__api_enter();
  return mmp__api_leave(probe_body(source, tag, comm, status), __func__);
}

static int iprobe_body(int source, int tag, mmp_comm_t *comm, int *flag,
                       mmp_status_t *status) {
  probe_t p;
  int rc = probe_setup(&p, source, tag, comm);

  if (rc != 0)
    return rc;
  if (flag == NULL)
    return MMP_EINVAL;
  mmp__lock(p.e);
  *flag = probe_match(&p);
  mmp__unlock(p.e);
  if (!*flag) {
    mmp__progress_poke(p.e);
    mmp__lock(p.e);
    *flag = probe_match(&p);
    mmp__unlock(p.e);
  }
  if (*flag && status != NULL)
    *status = p.st;
  return 0;
}

int mmp_iprobe(int source, int tag, mmp_comm_t *comm, int *flag,
               mmp_status_t *status) {
  mmp__api_enter();
  return mmp__api_leave(iprobe_body(source, tag, comm, flag, status), __func__);
}

static int cancel_body(mmp_request_t *r) {
  mmp__engine_t *e = mmp__eng;
  int rc;

  if (r == NULL)
    return MMP_EINVAL;
  if (e == NULL)
    return mmp__not_init("mmp_cancel");
  if (r->kind != MMP__REQ_RECV)
    return MMP_ENOTSUP;
  mmp__lock(e);
  rc = mmp__cancel_locked(e, r);
  mmp__unlock(e);
  return rc == 0 ? 1 : 0;
}

int mmp_cancel(mmp_request_t *req) {
  mmp__api_enter();
  return mmp__api_leave(cancel_body(req), __func__);
}
