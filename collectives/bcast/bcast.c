/* SPDX-License-Identifier: MIT */
/*
 * Broadcast: the public calls, argument checks and the resolution of
 * options into a description every rank agrees on (mmp__desc_t). The
 * algorithms are rows of the table (table.c), each in its own file; this
 * file settles one (select/resolve.c: the row asked for, or AUTO's), lets
 * AUTO's arrival rules have their say, and either builds and runs a
 * schedule whose first message carries the description, or starts a
 * dynamic row.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/bcast/bcast.h"

/* AUTO's flag on a pick: an arrival-aware broadcast pays even when every
 * rank arrives together (mmp__bcast_arrival_pays). */
#define AUTO_PAYS 0x1u

/* The schedule's rebuild: the plan of the sender's description, for a
 * rank whose own differs (sched.c runs it in poison mode). */
static int bcast_rebuild(mmp__sched_t *s, const uint8_t *hdr, size_t n) {
  mmp__desc_t d;

  if (mmp__desc_decode(&mmp__bcast_family, hdr, n, &d) != 0)
    return MMP_EMISMATCH;
  MMP__LOG(MMP__LOG_WARN,
           "broadcast %u: the sender runs %s from root %d, %llu bytes", s->seq,
           d.alg->name, d.root, (unsigned long long)d.count);
  /* The plan must be the sender's, segment for segment, so it is built
   * from the sender's length: with this rank's own, lengths that cut into
   * different segment counts left one side waiting for a segment that
   * never came. The buffer is not touched in poison mode. A length no
   * sender could mean is a protocol error. */
  if (!mmp__poison_len_ok(d.count, d.seg))
    return MMP_EPROTO;
  s->len = (size_t)d.count;
  return mmp__bcast_build(s, &d);
}

/* ---- Choosing ----------------------------------------------------------- */

/* AUTO's flags for its static pick `d`: whether an arrival-aware
 * broadcast pays even when everyone arrives together. Late receivers do
 * not hold up a multicast (they find what came before them kept,
 * runtime/mcast.c): nothing for arrival patterns to win there. */
static unsigned bcast_auto_flags(const mmp__call_t *c, const mmp__query_t *q,
                                 const mmp__desc_t *d, double best) {
  (void)c;
  return d->alg != &mmp__bcast_multicast_alg && d->alg != &mmp__bcast_shm_alg &&
                 mmp__bcast_arrival_pays(
                     q->p, q->len, q->nm, best,
                     mmp__bcast_sub_cost(q->p, q->len, q->nm))
             ? AUTO_PAYS
             : 0;
}

/* A broadcast of `len` bytes from `root` on `comm`, as AUTO and the rows
 * see it. */
static void bcast_call(mmp_comm_t *comm, size_t len, int root, mmp__call_t *c) {
  memset(c, 0, sizeof(*c));
  c->fam = &mmp__bcast_family;
  c->comm = comm;
  c->root = root;
  c->count = len;
  c->esize = 1;
  c->len = len;
  c->auto_flags = bcast_auto_flags;
  c->mcast = 1;
}

/* Where an arrival-aware broadcast runs instead, arrival_nb if its pushes
 * fit the receivers' eager buffers (half, for whatever else is
 * unexpected) and one frame, else arrival_b. */
static const mmp__alg_t *arrival_alg(size_t len) {
  mmp__rt_facts_t f;

  mmp__rt_facts(mmp__eng, &f);
  return len <= f.eager_buffer / 2 && len <= f.max_frame
             ? &mmp__bcast_arrival_nb_alg
             : &mmp__bcast_arrival_b_alg;
}

/* `d` becomes AUTO's `alg` with its own options, settled. */
static int switch_to(const mmp__call_t *c, const mmp__opts_t *o, mmp__desc_t *d,
                     const mmp__alg_t *alg) {
  d->alg = alg;
  d->seg = 0;
  d->groups = d->radix = 0;
  d->inner = d->outer = NULL;
  return mmp__resolve_row(c, o, d, 1, NULL);
}

/* The timeout of a broadcast: the options', else the communicator's
 * (mmp_comm_set_timeout, MINIMP_COLL_TIMEOUT_MS). 0: none. */
static unsigned bcast_timeout(const mmp_comm_t *comm, const mmp__opts_t *o) {
  return o->timeout_ms > 0 ? o->timeout_ms
                           : mmp__rt_coll_timeout(mmp__eng, comm);
}

/* AUTO's adaptive mode (core/state.h: MMP__ADAPT_MIN) for the static
 * choice `d`: the same on every rank that passes the same length. A
 * timeout does not change it, so that ranks whose timeouts differ still
 * choose alike. A multicast runs as chosen. */
static int adaptive(const mmp_comm_t *comm, size_t len, const mmp__opts_t *o,
                    const mmp__desc_t *d) {
  return o->alg == NULL && comm->size >= 3 && len >= MMP__ADAPT_MIN &&
         d->alg != &mmp__bcast_multicast_alg && d->alg != &mmp__bcast_shm_alg;
}

/* Fills `d` from `o` for a broadcast of `len` bytes from `root`: in
 * adaptive mode the static choice; *pays as bcast_auto_flags'. Every rank
 * computes the same. */
static int resolve(const mmp__call_t *c, const mmp__opts_t *o, mmp__desc_t *d,
                   int *pays) {
  unsigned fl;
  int rc = mmp__resolve(c, o, d, &fl);

  *pays = (fl & AUTO_PAYS) != 0;
  if (rc == 0 && *pays && !adaptive(c->comm, c->len, o, d))
    rc = switch_to(c, o, d, arrival_alg(c->len));
  return rc;
}

/*
 * Adaptive mode, at the root: 1 to run an arrival-aware broadcast (then
 * `arr` describes it), 0 to run the static choice `stat`, from the
 * arrival patterns this rank saw as root for this size (none yet: the
 * last root's hint, or without one `pays`). Stores its decision as the
 * regime unless `peek`.
 */
static int adapt_regime(const mmp__call_t *c, const mmp__opts_t *o,
                        const mmp__desc_t *stat, int pays, int peek,
                        mmp__desc_t *arr) {
  mmp_comm_t *comm = c->comm;
  size_t len = (size_t)stat->count;
  mmp__rt_facts_t f;
  double *hist =
      malloc(MMP__ADAPT_HISTORY * (size_t)comm->size * sizeof(double));
  double window, took[MMP__ADAPT_HISTORY], arr_took[MMP__ADAPT_HISTORY];
  double was[2], scale[2];
  mmp_netmodel_t nm, seen, seen_arr;
  int n, prev, regime, rc, nb;

  if (hist == NULL)
    return MMP_ENOMEM;
  *arr = *stat;
  arr->outer = NULL;
  rc = switch_to(c, o, arr, arrival_alg(len));
  if (rc == 0)
    rc = mmp__netmodel_get(comm, &nm);
  if (rc != 0) {
    free(hist);
    return rc;
  }
  n = mmp__coll_adapt_read(comm, len, hist, took, arr_took, &prev, was);
  mmp__rt_facts(mmp__eng, &f);
  window = f.coll->arrival_window_us >= 0
               ? f.coll->arrival_window_us * 1e-6
               : mmp__arrival_window(comm->size, len, &nm);
  nb = arr->alg == &mmp__bcast_arrival_nb_alg;
  /* The model as this root's own static broadcasts bore it out, and as
   * its arrival-aware ones did; a regime that has not run yet borrows
   * the other's figure, and each is kept once its runs have left the
   * history, so that neither is priced by the bare model against a
   * corrected other. */
  scale[0] =
      mmp__adapt_model(stat, comm->size, hist, took, n, &nm, was[0], &seen);
  scale[1] = mmp__adapt_arr_scale(nb, arr->seg, window, comm->size, len, hist,
                                  arr_took, n, &nm, was[1]);
  if (!peek && (scale[0] != was[0] || scale[1] != was[1]))
    mmp__coll_adapt_set_scales(comm, len, scale);
  seen_arr = seen;
  if (scale[1] > 0) {
    seen_arr.alpha = nm.alpha * scale[1];
    seen_arr.beta = nm.beta * scale[1];
    seen_arr.gap = nm.gap * scale[1];
    if (scale[0] == 0)
      seen = seen_arr;
  }
  regime = prev > 0 ? prev - 1 : pays;
  regime = mmp__bcast_adapt_decide(stat, nb, arr->seg, comm->size, hist, n,
                                   regime, &seen, &seen_arr, window);
  free(hist);
  if (!peek)
    mmp__coll_adapt_decided(comm, len, regime + 1);
  return regime;
}

/*
 * Adaptive mode, at the root: the static choice for links as this rank's
 * last broadcast left them. The burst allowance (docs/design/auto.md,
 * "Burst allowance") counts only once the links have had burst·β to
 * refill it since that broadcast ended; back to back, a choice that
 * relied on it gives way (mmp__bcast_choose_drained). Receivers follow
 * the root's first message, so this local clock cannot make ranks
 * disagree.
 */
static int root_static_choice(const mmp__call_t *c, const mmp__opts_t *o,
                              mmp__desc_t *d) {
  mmp_netmodel_t nm;
  mmp__desc_t dr;
  int rc;

  if ((rc = mmp__netmodel_get(c->comm, &nm)) != 0)
    return rc;
  if (nm.burst <= 0 || mmp__coll_bcast_idle(c->comm) >= nm.burst * nm.beta)
    return 0;
  memset(&dr, 0, sizeof(dr));
  mmp__bcast_choose_drained(c->comm->size, (size_t)d->count, &nm, &dr);
  if (dr.alg == d->alg)
    return 0;
  d->alg = dr.alg;
  d->seg = dr.seg;
  d->groups = dr.groups;
  d->radix = 0;
  d->inner = d->outer = NULL;
  return mmp__resolve_row(c, o, d, 1, NULL);
}

/* What a dynamic row starts with. */
static void run_init(mmp__run_t *run, mmp_comm_t *comm, void *buf,
                     const mmp__opts_t *o, const mmp__desc_t *d) {
  memset(run, 0, sizeof(*run));
  run->e = mmp__eng;
  run->comm = comm;
  run->buf = buf;
  run->d = d;
  run->fam = &mmp__bcast_family;
  run->mode = o->mode;
  run->build = mmp__bcast_build;
  run->timeout_ms = bcast_timeout(comm, o);
}

/* Starts an adaptive broadcast: the root runs its regime's algorithm, the
 * receivers announce themselves and follow its first message. */
static int adapt_start(const mmp__call_t *c, void *buf, const mmp__opts_t *o,
                       const mmp__desc_t *stat, int pays, mmp_request_t **req) {
  mmp__desc_t arr, any = *stat, mine = *stat;
  mmp_comm_t *comm = c->comm;
  mmp__run_t run;
  int regime = 0;

  any.alg = NULL; /* a receiver does not know yet */
  run_init(&run, comm, buf, o, &any);
  if (comm->rank == stat->root) {
    if ((regime = root_static_choice(c, o, &mine)) != 0)
      return regime;
    regime = adapt_regime(c, o, &mine, pays, 0, &arr);
    if (regime < 0)
      return regime;
    MMP__LOG(MMP__LOG_DEBUG, "AUTO, %llu bytes from rank %d: %s",
             (unsigned long long)mine.count, comm->rank,
             regime ? arr.alg->name : mine.alg->name);
    run.d = regime ? &arr : &mine;
    run.stat = regime ? NULL : &mine;
  }
  run.adaptive = 1;
  run.hint = regime + 1;
  return mmp__bcast_arrival_nb_alg.start(&run, req);
}

/* ---- Public calls ------------------------------------------------------- */

static int check(const void *buf, size_t len, int root,
                 const mmp_comm_t *comm) {
  int rc = mmp__coll_ready(comm);

  if (rc != 0)
    return rc;
  if (buf == NULL && len > 0)
    return MMP_EINVAL;
  if (root < 0 || root >= comm->size)
    return MMP_ERANK;
  return 0;
}

/* `blocking`: 0 a non-blocking start, 1 a blocking call, 2 a blocking call
 * that does not use the node segment (AUTO's shm row found none serving). */
static int ibcast_body(void *buf, size_t len, int root, mmp_comm_t *comm,
                       const mmp_bcast_opts_t *opts, int blocking,
                       mmp_request_t **req) {
  uint8_t hdr[MMP__DESC_MAX];
  mmp__opts_t o;
  mmp__call_t c;
  mmp__desc_t d;
  mmp__sched_t *s;
  int rc, pays;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = check(buf, len, root, comm)) != 0 ||
      (rc = mmp__opts_from(&mmp__bcast_family, opts, &o)) != 0 ||
      (rc = mmp__opts_blocking(&o, blocking)) != 0)
    return rc;
  bcast_call(comm, len, root, &c);
  c.node = blocking == 1 && mmp__node_usable(comm);
  if ((rc = mmp__opts_check(&c, &o)) != 0 ||
      (rc = resolve(&c, &o, &d, &pays)) != 0)
    return rc;
  if (adaptive(comm, len, &o, &d))
    return adapt_start(&c, buf, &o, &d, pays, req);
  if (d.alg->flags & MMP__ALG_DYNAMIC) {
    mmp__run_t run;
    run_init(&run, comm, buf, &o, &d);
    if (d.alg == &mmp__bcast_shm_alg) {
      uint32_t seq;
      /* It runs to completion in the call: blocking calls only, which
       * mmp__opts_blocking and c.node see to. */
      assert(blocking);
      /* Its log (mmp_bcast_last) lives in the state. */
      if (mmp__coll_state(comm) == NULL)
        return MMP_ENOMEM;
      mmp__lock(mmp__eng);
      seq = comm->coll_seq++;
      mmp__coll_log_locked(comm, seq, d.alg);
      mmp__unlock(mmp__eng);
    }
    rc = d.alg->start(&run, req);
    /* AUTO's shm row where no segment serves: what AUTO picks without. */
    if (rc != MMP_ENOTSUP || o.alg != NULL || d.alg != &mmp__bcast_shm_alg)
      return rc;
    return ibcast_body(buf, len, root, comm, opts, 2, req);
  }
  rc = mmp__sched_new(mmp__eng, comm, buf, len, o.mode, &s);
  if (rc != 0)
    return rc;
  mmp__sched_set_timeout(s, o.timeout_ms);
  mmp__lock(mmp__eng);
  mmp__coll_log_locked(comm, s->seq, d.alg);
  mmp__unlock(mmp__eng);
  mmp__sched_set_header(s, hdr, mmp__desc_encode(&mmp__bcast_family, &d, hdr),
                        bcast_rebuild);
  s->source = root;
  rc = mmp__bcast_build(s, &d);
  if (rc != 0) {
    mmp__sched_free(s);
    return rc;
  }
  return mmp__sched_start(s, req);
}

int mmp_ibcast(void *buf, size_t len, int root, mmp_comm_t *comm,
               const mmp_bcast_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ibcast_body(buf, len, root, comm, opts, 0, req),
                        __func__);
}

int mmp_bcast_select(mmp_comm_t *comm, size_t len, mmp_bcast_opts_t *out) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;
  mmp__desc_t d, arr;
  mmp__opts_t o;
  mmp__call_t c;
  int rc, pays;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0 ||
      (rc = mmp__opts_from(&mmp__bcast_family, NULL, &o)) != 0)
    return rc;
  bcast_call(comm, len, comm->rank, &c);
  c.node = mmp__node_usable(comm); /* what mmp_bcast runs */
  if ((rc = mmp__opts_check(&c, &o)) != 0)
    return rc;
  rc = resolve(&c, &o, &d, &pays);
  /* In adaptive mode, what this rank would run as root now. */
  if (rc == 0 && adaptive(comm, len, &o, &d) &&
      (rc = root_static_choice(&c, &o, &d)) == 0) {
    rc = adapt_regime(&c, &o, &d, pays, 1, &arr);
    if (rc == 1)
      d = arr;
    rc = rc < 0 ? rc : 0;
  }
  if (rc != 0)
    return rc;
  *out = defaults;
  mmp__opts_to(&d, out);
  return 0;
}

int mmp_bcast_last(mmp_comm_t *comm, const char **alg) {
  uint32_t seq[MMP__COLL_LOG];
  const mmp__alg_t *algs[MMP__COLL_LOG];
  int n;

  if (mmp__eng == NULL)
    return mmp__not_init(__func__);
  if (comm == NULL)
    return MMP_ECOMM;
  if (alg == NULL)
    return MMP_EINVAL;
  n = mmp__coll_log_get(comm, seq, algs, MMP__COLL_LOG);
  if (n == 0)
    return MMP_EINVAL;
  *alg = algs[n - 1]->name;
  return 0;
}

int mmp_bcast_ex(void *buf, size_t len, int root, mmp_comm_t *comm,
                 const mmp_bcast_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  r = NULL;
  return mmp__api_wait(ibcast_body(buf, len, root, comm, opts, 1, &r), &r,
                       __func__);
}

int mmp_bcast(void *buf, size_t len, int root, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_bcast_ex(buf, len, root, comm, NULL), __func__);
}
