/* SPDX-License-Identifier: MIT */
/*
 * s-to-p broadcast: the public calls, argument checks, the lengths'
 * exchange for callers that do not know them (the collective's first
 * step, never the start's), the choice of algorithm and the schedule. Each
 * algorithm lives in its own s2p_<name>.c; the round-based ones build through a
 * plan (s2p_plan.c).
 *
 * The buffer every algorithm works on is the output itself: all messages
 * in source order, source j at off[j]. The caller's own message is copied
 * into place first, so every send reads the output buffer, and the
 * caller's send buffer is free when the call returns. If the output does
 * not fit in the caller's buffer, the collective runs on a scratch buffer
 * and copies what fits at the end, so that no other rank waits forever
 * on a rank that only has too little room.
 *
 * No header travels with s-to-p messages (unlike broadcast, no rank waits
 * for a first message before sending): a source must send at once.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

/* ---- Argument checks ---------------------------------------------------- */

typedef struct s2p_args_s {
  const void *sendbuf;
  size_t sendlen;
  int is_source;
  void *recvbuf;
  size_t recvcap;
  const size_t *lens;
  size_t *out_lens;
  mmp_comm_t *comm;
  mmp__opts_t o; /* the caller's options, names looked up */
  int seq_given; /* run on the sequence numbers from `seq` on, reserved */
  uint32_t seq;
  int comm_loss; /* fail on a loss anywhere in comm (the lengths' exchange) */
} s2p_args_t;

/* An s-to-p on `comm` of the sources `x` (NULL: not yet known), as AUTO
 * and the rows see it. */
static void s2p_as_call(mmp_comm_t *comm, const mmp__s2p_t *x,
                        const size_t *lens, mmp__call_t *c) {
  memset(c, 0, sizeof(*c));
  c->fam = &mmp__s2p_family;
  c->comm = comm;
  c->esize = 1;
  c->mcast = 1;
  if (x != NULL) {
    c->len = x->total;
    c->x = x;
    c->rows = x->rows;
    c->key_ext = lens;
    c->key_ext_len = (size_t)x->p * sizeof(size_t);
  }
}

static int s2p_check(s2p_args_t *a) {
  mmp__call_t c;
  int rc;

  if ((rc = mmp__coll_ready(a->comm)) != 0)
    return rc;
  if ((a->is_source && a->sendbuf == NULL && a->sendlen > 0) ||
      (a->is_source && a->sendlen == MMP_S2P_NONE) ||
      (a->recvbuf == NULL && a->recvcap > 0))
    return MMP_EINVAL;
  s2p_as_call(a->comm, NULL, NULL, &c);
  if ((rc = mmp__opts_check(&c, &a->o)) != 0)
    return rc;
  if (a->lens != NULL &&
      a->lens[a->comm->rank] != (a->is_source ? a->sendlen : MMP_S2P_NONE))
    return MMP_EINVAL;
  return 0;
}

/* ---- Running one s-to-p ------------------------------------------------- */

typedef struct s2p_out_s {
  uint8_t *scratch;
  void *recvbuf;
  size_t recvcap;
} s2p_out_t;

/* Lock held, the collective is over: hand over what fits. */
static void s2p_out_fini(int *err, void *arg) {
  s2p_out_t *o = arg;

  if (*err == 0) {
    if (o->recvcap > 0)
      memcpy(o->recvbuf, o->scratch, o->recvcap);
    *err = MMP_ETRUNC;
  }
  free(o->scratch);
  free(o);
}

static void s2p_fini_copy(mmp__sched_t *s, void *arg) {
  s2p_out_fini(&s->err, arg);
}

/* Starts a dynamic row on `buf` (the output, or the scratch `out`). */
static int s2p_start_dynamic(const s2p_args_t *a, const mmp__s2p_t *x,
                             const mmp__desc_t *d, uint8_t *buf, s2p_out_t *out,
                             mmp_request_t **req) {
  mmp__run_t run;

  memset(&run, 0, sizeof(run));
  run.e = mmp__eng;
  run.comm = a->comm;
  run.buf = buf;
  run.d = d;
  run.fam = &mmp__s2p_family;
  run.x = x;
  run.mode = a->o.mode;
  run.timeout_ms = a->o.timeout_ms > 0
                       ? a->o.timeout_ms
                       : mmp__rt_coll_timeout(mmp__eng, a->comm);
  if (out != NULL) {
    run.fini = s2p_out_fini;
    run.fini_arg = out;
  }
  run.seq_given = a->seq_given;
  run.seq = a->seq;
  return d->alg->start(&run, req);
}

/* Builds and starts the schedule on `buf` (the output, or the scratch
 * `out`, which the schedule's fini then frees). */
static int s2p_start_sched(const s2p_args_t *a, const mmp__s2p_t *x,
                           const mmp__desc_t *d, uint8_t *buf, s2p_out_t *out,
                           mmp_request_t **req) {
  mmp_netmodel_t nm;
  mmp__sched_t *s;
  int rc = 0;

  /* A row that chooses its parts from the model builds with it. */
  if ((d->alg->flags & MMP__ALG_MODEL) && x->p > 1)
    rc = mmp__netmodel_get(a->comm, &nm);
  if (rc == 0 && a->seq_given)
    rc = mmp__sched_new_at(mmp__eng, a->comm, a->seq, buf, x->total, a->o.mode,
                           &s);
  else if (rc == 0)
    rc = mmp__sched_new(mmp__eng, a->comm, buf, x->total, a->o.mode, &s);
  if (rc != 0)
    return rc;
  mmp__sched_set_timeout(s, a->o.timeout_ms);
  s->comm_loss = a->comm_loss;
  rc = mmp__s2p_build(
      s, x, d->alg, (d->alg->flags & MMP__ALG_MODEL) && x->p > 1 ? &nm : NULL);
  if (rc != 0) {
    mmp__sched_free(s);
    return rc;
  }
  if (out != NULL) {
    s->fini = s2p_fini_copy;
    s->fini_arg = out;
  }
  /* On failure the schedule is freed and fini never ran. */
  return mmp__sched_start(s, req);
}

/* Starts algorithm `alg` on the output buffer (or a scratch one when it
 * is too small). */
static int s2p_launch(const s2p_args_t *a, const mmp__s2p_t *x,
                      const mmp__desc_t *d, mmp_request_t **req) {
  s2p_out_t *out = NULL;
  uint8_t *buf = a->recvbuf;
  int rc, j = x->idx[x->me];

  if (x->total > a->recvcap) {
    out = calloc(1, sizeof(*out));
    buf = malloc(x->total);
    if (out == NULL || buf == NULL) {
      free(out);
      free(buf);
      return MMP_ENOMEM;
    }
    out->scratch = buf;
    out->recvbuf = a->recvbuf;
    out->recvcap = a->recvcap;
  }
  if (j >= 0 && x->len[j] > 0)
    memmove(buf + x->off[j], a->sendbuf, x->len[j]);
  /* On success `out` belongs to the collective, which frees it. */
  rc = d->alg->start != NULL ? s2p_start_dynamic(a, x, d, buf, out, req)
                             : s2p_start_sched(a, x, d, buf, out, req);
  if (rc != 0 && out != NULL) {
    free(out->scratch);
    free(out);
  }
  return rc;
}

static int s2p_start(const s2p_args_t *a, const size_t *lens,
                     mmp_request_t **req) {
  mmp__s2p_t x;
  mmp__call_t c;
  mmp__desc_t d;
  int rc, i;

  rc = mmp__s2p_init(&x, a->comm->size, a->comm->rank, a->o.rows, lens);
  if (rc != 0)
    return rc;
  if (a->out_lens != NULL)
    for (i = 0; i < x.p; i++)
      a->out_lens[i] = lens[i];
  s2p_as_call(a->comm, &x, lens, &c);
  rc = mmp__resolve(&c, &a->o, &d, NULL);
  if (rc == 0)
    rc = s2p_launch(a, &x, &d, req);
  mmp__s2p_fini(&x);
  return rc;
}

/* ---- Lengths the caller does not know ---------------------------------- */

/*
 * With lens NULL the collective's first step is the lengths' exchange:
 * every rank contributes 8 bytes (its length + 1, or 0 for no message)
 * to a Br_Lin s-to-p; when it completes, the s-to-p proper starts from
 * loop context on the lengths it brought. The start waits for no other
 * rank: ranks may start collectives on several communicators in
 * different orders, and an exchange inside the start would wait for a
 * rank that waits in another start. Both parts take their sequence
 * numbers in the start, so that the s-to-p's are the same on every rank
 * whatever the caller starts meanwhile.
 */
typedef struct s2p_lazy_s {
  mmp__engine_t *e;
  s2p_args_t a;        /* the s-to-p proper, on a copy of the message */
  uint8_t *mine;       /* that copy: the send buffer is free on return */
  uint8_t *v;          /* the exchange's output: 8 bytes a rank */
  size_t *lens;        /* the lengths it brought */
  mmp_request_t *creq; /* the caller's */
  mmp_request_t *ex;   /* the exchange's, ours to free */
  mmp_request_t *main; /* the s-to-p proper's, once started */
  void *own_arg;       /* the cb_arg of a request whose callback we borrow */
  void (*then)(mmp_request_t *, void *); /* what runs when it completes */
  mmp__task_t task;
} s2p_lazy_t;

/* Sequence numbers the s-to-p proper may take: one schedule, or a
 * multicast broadcast per source. Every rank reckons alike: the row the
 * caller named, or AUTO where multicast works for the job (decided in
 * mmp_init, the same everywhere). */
static uint32_t lazy_seqs(const s2p_args_t *a) {
  mmp__mcast_verdict_t v;

  if (a->o.alg != NULL)
    return (a->o.alg->flags & MMP__ALG_DYNAMIC) ? (uint32_t)a->comm->size : 1;
  return mmp__mcast_usable(a->comm, &v) == 0 ? (uint32_t)a->comm->size : 1;
}

/* Lock held: the collective is over, with `err` and the s-to-p's status
 * (NULL: it never started). */
static void lazy_finish(s2p_lazy_t *z, int err, const mmp_status_t *st) {
  z->creq->status.error = err;
  z->creq->status.bytes = err == 0 && st != NULL ? st->bytes : 0;
  mmp__req_complete_locked(z->e, z->creq, err);
}

static void lazy_main_done(mmp_request_t *r, void *arg) {
  lazy_finish(arg, r->err, &r->status);
}

/* Lock held: a borrowed callback ran; `r` goes back to what it was (its
 * destructor reads cb_arg). */
static void lazy_borrowed(mmp_request_t *r, void *arg) {
  s2p_lazy_t *z = arg;

  r->cb = NULL;
  r->cb_arg = z->own_arg;
  z->then(r, z);
}

/* Lock held: then(r, z) runs once `r` completes, at once if it has. A
 * schedule's request says so itself; any other part's (a multicast
 * s-to-p's, which takes its cb_arg back on no path) has no callback, for
 * completing it only wakes its waiters, so we borrow that slot. */
static void lazy_follow(s2p_lazy_t *z, mmp_request_t *r,
                        void (*then)(mmp_request_t *, void *)) {
  if (mmp__sched_follow_locked(r, then, z) == 0)
    return;
  assert(r->on_heap && r->cb == NULL);
  z->then = then;
  z->own_arg = r->cb_arg;
  r->cb_arg = z;
  r->cb = lazy_borrowed;
  if (atomic_load_explicit(&r->done, memory_order_acquire))
    lazy_borrowed(r, z);
}

/* Loop context, lock NOT held: the lengths are in; starts the s-to-p
 * proper on its reserved sequence numbers. */
static void lazy_task(void *arg) {
  s2p_lazy_t *z = arg;
  int rc = s2p_start(&z->a, z->lens, &z->main);

  free(z->mine); /* s2p_start copied it into place */
  z->mine = NULL;
  mmp__lock(z->e);
  if (rc != 0)
    lazy_finish(z, rc, NULL);
  else
    lazy_follow(z, z->main, lazy_main_done);
  mmp__unlock(z->e);
}

static void lazy_ex_done(mmp_request_t *r, void *arg) {
  s2p_lazy_t *z = arg;
  int i, p = z->a.comm->size;

  if (r->err != 0) {
    lazy_finish(z, r->err, NULL);
    return;
  }
  for (i = 0; i < p; i++) {
    uint64_t n = mmp__get_u64(z->v + 8 * (size_t)i);
    z->lens[i] = n == 0 ? MMP_S2P_NONE : (size_t)(n - 1);
  }
  mmp__engine_post_locked(z->e, &z->task, lazy_task, z);
}

static void lazy_free(s2p_lazy_t *z) {
  free(z->mine);
  free(z->v);
  free(z->lens);
  free(z);
}

/* Lock NOT held (mmp_wait): the parts' requests go as mmp_wait frees a
 * user's. */
static void lazy_req_free(mmp_request_t *r) {
  s2p_lazy_t *z = r->cb_arg;

  if (z->ex != NULL)
    mmp__req_user_free(z->ex);
  if (z->main != NULL)
    mmp__req_user_free(z->main);
  lazy_free(z);
}

static int s2p_lazy_start(const s2p_args_t *a, mmp_request_t **req) {
  int p = a->comm->size, i, rc;
  s2p_lazy_t *z;
  uint8_t mine[8];
  uint32_t nseq;
  s2p_args_t ex;
  mmp__s2p_t x;

  if ((z = calloc(1, sizeof(*z))) == NULL)
    return MMP_ENOMEM;
  z->e = mmp__eng;
  z->a = *a;
  z->v = malloc(8 * (size_t)p);
  z->lens = malloc((size_t)p * sizeof(size_t));
  z->creq = calloc(1, sizeof(*z->creq));
  if (a->is_source && a->sendlen > 0)
    z->mine = malloc(a->sendlen);
  if (z->v == NULL || z->lens == NULL || z->creq == NULL ||
      (a->is_source && a->sendlen > 0 && z->mine == NULL)) {
    free(z->creq);
    lazy_free(z);
    return MMP_ENOMEM;
  }
  if (z->mine != NULL)
    memcpy(z->mine, a->sendbuf, a->sendlen);
  z->a.sendbuf = z->mine;
  for (i = 0; i < p; i++)
    z->lens[i] = 8;
  /* What the lengths cannot change fails the start: the grid. */
  if ((rc = mmp__s2p_init(&x, p, a->comm->rank, a->o.rows, z->lens)) != 0) {
    free(z->creq);
    lazy_free(z);
    return rc;
  }
  mmp__s2p_fini(&x);
  mmp__put_u64(mine, a->is_source ? (uint64_t)a->sendlen + 1 : 0);
  memset(&ex, 0, sizeof(ex));
  ex.o.alg = mmp__alg_find(&mmp__s2p_family, "br_lin");
  ex.o.mode = a->o.mode;
  ex.sendbuf = mine;
  ex.sendlen = 8;
  ex.is_source = 1;
  ex.recvbuf = z->v;
  ex.recvcap = 8 * (size_t)p;
  ex.comm = a->comm;
  /* Nothing of the caller's watches the exchange's partners: a loss
   * anywhere in comm ends it, since a partner may have left on it. */
  ex.comm_loss = 1;
  ex.seq_given = 1;
  z->a.seq_given = 1;
  nseq = 1 + lazy_seqs(a);
  mmp__lock(z->e);
  ex.seq = a->comm->coll_seq;
  z->a.seq = ex.seq + 1;
  a->comm->coll_seq += nseq;
  mmp__unlock(z->e);
  rc = s2p_start(&ex, z->lens, &z->ex);
  if (rc != 0) {
    /* The other ranks' exchanges time out on this one's. */
    free(z->creq);
    lazy_free(z);
    return rc;
  }
  /* The request's length is a guess (every rank sending as much as this
   * one): it only decides whether a wait polls or sleeps. */
  mmp__coll_req_init(z->creq, a->comm, (size_t)p * a->sendlen, MMP_ANY_SOURCE,
                     z, lazy_req_free);
  mmp__lock(z->e);
  lazy_follow(z, z->ex, lazy_ex_done);
  mmp__unlock(z->e);
  *req = z->creq;
  return 0;
}

static int s2p_call(s2p_args_t *a, mmp_request_t **req) {
  int rc = s2p_check(a);

  if (rc != 0)
    return rc;
  return a->lens != NULL ? s2p_start(a, a->lens, req) : s2p_lazy_start(a, req);
}

/* ---- Public calls ------------------------------------------------------- */

static int ibcast_s2p_body(const void *sendbuf, size_t sendlen, int is_source,
                           void *recvbuf, size_t recvcap, const size_t *lens,
                           size_t *out_lens, mmp_comm_t *comm,
                           const mmp_s2p_opts_t *opts, mmp_request_t **req) {
  s2p_args_t a;
  int rc;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  memset(&a, 0, sizeof(a));
  if ((rc = mmp__coll_ready(comm)) != 0 ||
      (rc = mmp__opts_from(&mmp__s2p_family, opts, &a.o)) != 0)
    return rc;
  /* The grid is the call's, whichever row runs on it. */
  if (a.o.rows == 0 && opts != NULL)
    a.o.rows = opts->rows;
  a.sendbuf = sendbuf;
  a.sendlen = sendlen;
  a.is_source = is_source != 0;
  a.recvbuf = recvbuf;
  a.recvcap = recvcap;
  a.lens = lens;
  a.out_lens = out_lens;
  a.comm = comm;
  return s2p_call(&a, req);
}

int mmp_ibcast_s2p(const void *sendbuf, size_t sendlen, int is_source,
                   void *recvbuf, size_t recvcap, const size_t *lens,
                   size_t *out_lens, mmp_comm_t *comm,
                   const mmp_s2p_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ibcast_s2p_body(sendbuf, sendlen, is_source, recvbuf,
                                        recvcap, lens, out_lens, comm, opts,
                                        req),
                        __func__);
}

int mmp_bcast_s2p(const void *sendbuf, size_t sendlen, int is_source,
                  void *recvbuf, size_t recvcap, const size_t *lens,
                  size_t *out_lens, mmp_comm_t *comm,
                  const mmp_s2p_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_ibcast_s2p(sendbuf, sendlen, is_source, recvbuf,
                                      recvcap, lens, out_lens, comm, opts, &r),
                       &r, __func__);
}

int mmp_s2p_select(mmp_comm_t *comm, const size_t *lens, mmp_s2p_opts_t *out) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;
  mmp__opts_t o;
  mmp__s2p_t x;
  mmp__call_t c;
  mmp__desc_t d;
  int rc;

  if (out == NULL || lens == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0 ||
      (rc = mmp__opts_from(&mmp__s2p_family, NULL, &o)) != 0)
    return rc;
  rc = mmp__s2p_init(&x, comm->size, comm->rank, o.rows, lens);
  if (rc != 0)
    return rc;
  s2p_as_call(comm, &x, lens, &c);
  if ((rc = mmp__opts_check(&c, &o)) == 0)
    rc = mmp__resolve(&c, &o, &d, NULL);
  if (rc == 0) {
    *out = defaults;
    mmp__opts_to(&d, out);
    out->rows = x.rows;
  }
  mmp__s2p_fini(&x);
  return rc;
}
