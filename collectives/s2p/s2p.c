/* SPDX-License-Identifier: MIT */
/*
 * s-to-p broadcast: the public calls, argument checks, the size exchange
 * for callers that do not know the lengths, the choice of algorithm and
 * the schedule. Each algorithm lives in its own s2p_<name>.c; the
 * round-based ones build through a plan (s2p_plan.c).
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
  if (rc == 0)
    rc = mmp__sched_new(mmp__eng, a->comm, buf, x->total, a->o.mode, &s);
  if (rc != 0)
    return rc;
  mmp__sched_set_timeout(s, a->o.timeout_ms);
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

/* The lengths, when the caller does not know them: every rank contributes
 * 8 bytes (its length + 1, or 0 for no message) to a Br_Lin s-to-p. */
static int s2p_exchange(const s2p_args_t *a, size_t *lens) {
  int p = a->comm->size, i, rc;
  uint8_t *v = malloc(8 * (size_t)p), mine[8];
  mmp_request_t *r;
  s2p_args_t ex;

  if (v == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < p; i++)
    lens[i] = 8;
  mmp__put_u64(mine, a->is_source ? (uint64_t)a->sendlen + 1 : 0);
  memset(&ex, 0, sizeof(ex));
  ex.o.alg = mmp__alg_find(&mmp__s2p_family, "br_lin");
  ex.o.mode = a->o.mode;
  ex.sendbuf = mine;
  ex.sendlen = 8;
  ex.is_source = 1;
  ex.recvbuf = v;
  ex.recvcap = 8 * (size_t)p;
  ex.comm = a->comm;
  rc = s2p_start(&ex, lens, &r);
  /* It runs inside the caller's call: no receive of the caller's can see
   * that a partner gave up on a lost rank. */
  if (rc == 0)
    rc = mmp__sched_wait_watch(&r);
  for (i = 0; rc == 0 && i < p; i++) {
    uint64_t n = mmp__get_u64(v + 8 * (size_t)i);
    lens[i] = n == 0 ? MMP_S2P_NONE : (size_t)(n - 1);
  }
  free(v);
  return rc;
}

static int s2p_call(s2p_args_t *a, mmp_request_t **req) {
  size_t *lens = NULL;
  int rc = s2p_check(a);

  if (rc != 0)
    return rc;
  if (a->lens == NULL) {
    lens = malloc((size_t)a->comm->size * sizeof(size_t));
    if (lens == NULL)
      return MMP_ENOMEM;
    rc = s2p_exchange(a, lens);
  }
  if (rc == 0)
    rc = s2p_start(a, a->lens != NULL ? a->lens : lens, req);
  free(lens);
  return rc;
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
