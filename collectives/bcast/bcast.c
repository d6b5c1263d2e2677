/* SPDX-License-Identifier: MIT */
/*
 * Broadcast: the public calls, argument checks and the resolution of
 * options into a description every rank agrees on (mmp__bcast_desc_t).
 * The algorithms are rows of the descriptor table (bcast_algs.c), each in
 * its own file; this file picks one (mmp__bcast_choose_auto for
 * MMP_BCAST_AUTO), lets the row settle its open options, and either
 * builds and runs a schedule whose first message carries the description,
 * or starts a dynamic algorithm.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/core/collectives.h"

/* The schedule's rebuild: the plan of the sender's description, for a
 * rank whose own differs (sched.c runs it in poison mode). */
static int bcast_rebuild(mmp__sched_t *s, const uint8_t *hdr, size_t n) {
  mmp__bcast_desc_t d;

  if (mmp__bcast_desc_decode(hdr, n, &d) != 0)
    return MMP_EMISMATCH;
  MMP__LOG(MMP__LOG_WARN,
           "broadcast %u: the sender runs %s from root %d, %llu bytes", s->seq,
           mmp_bcast_alg_name(d.alg) ? mmp_bcast_alg_name(d.alg) : "?", d.root,
           (unsigned long long)d.len);
  /* The plan must be the sender's, segment for segment, so it is built
   * from the sender's length: with this rank's own, lengths that cut into
   * different segment counts left one side waiting for a segment that
   * never came. The buffer is not touched in poison mode. A length no
   * sender could mean is a protocol error. */
  if (!mmp__poison_len_ok(d.len, d.seg))
    return MMP_EPROTO;
  s->len = (size_t)d.len;
  return mmp__bcast_build(s, &d);
}

/* ---- Choosing ----------------------------------------------------------- */

/*
 * What AUTO knows of multicast on `comm` (*mc zeroed: not usable). Only
 * where the user switched it on (MINIMP_MCAST=on): its price is not yet
 * checked on hosts where it applies, and the check costs the first call
 * a barrier and the probes, 500 ms where multicast is blocked
 * (docs/algorithms.md, "Multicast"). The check is collective: every
 * rank's first AUTO broadcast or s-to-p makes it, whatever the length
 * (the condition is of p, the model and the setting only, alike on every
 * rank), and its verdict is the same everywhere.
 */
int mmp__auto_mcast_net(mmp_comm_t *comm, const mmp_netmodel_t *nm,
                        mmp__mcast_net_t *mc) {
  mmp__rt_facts_t f;

  memset(mc, 0, sizeof(*mc));
  mmp__rt_facts(mmp__eng, &f);
  if (f.mcast != MMP__MCAST_ON || !mmp__bcast_mcast_considered(comm->size, nm))
    return 0;
  return mmp__mcast_net(comm, mc);
}

/*
 * AUTO's static choice for `len` on `comm`, remembered: it depends only on
 * p, the length and the model, and evaluating every formula on every call
 * costs each rank microseconds that small broadcasts feel. *pays says
 * whether an arrival-aware broadcast pays even when everyone arrives
 * together (mmp__bcast_arrival_pays).
 */
static int auto_choose(mmp_comm_t *comm, size_t len, mmp__bcast_desc_t *d,
                       int *pays) {
  mmp__coll_state_t *st = mmp__coll_state(comm);
  size_t slot, seg;
  mmp_netmodel_t nm;
  mmp__mcast_net_t mc;
  int alg, groups, rc;
  double best;

  if (st == NULL)
    return MMP_ENOMEM;
  slot = (len ^ (len >> 12)) % MMP__ARRAY_SIZE(st->bcast_auto);
  if (st->bcast_auto[slot].valid && st->bcast_auto[slot].len == len) {
    *d = st->bcast_auto[slot].d;
    *pays = st->bcast_auto[slot].pays;
    return 0;
  }
  if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
    return rc;
  if ((rc = mmp__auto_mcast_net(comm, &nm, &mc)) != 0)
    return rc;
  best =
      mmp__bcast_choose_auto_mc(comm->size, len, &nm, &mc, &alg, &seg, &groups);
  /* Late receivers do not hold up a multicast (they find what came before
   * them kept, runtime/mcast.c): nothing for arrival patterns to win. */
  *pays = alg != MMP_BCAST_MULTICAST &&
          mmp__bcast_arrival_pays(comm->size, len, &nm, best,
                                  mmp__bcast_sub_cost(comm->size, len, &nm));
  memset(d, 0, sizeof(*d));
  d->alg = alg;
  d->seg = seg;
  d->groups = groups;
  st->bcast_auto[slot].len = len;
  st->bcast_auto[slot].d = *d;
  st->bcast_auto[slot].pays = *pays;
  st->bcast_auto[slot].valid = 1;
  return 0;
}

/* Where an arrival-aware broadcast runs instead, arrival_nb if its pushes
 * fit the receivers' eager buffers (half, for whatever else is
 * unexpected) and one frame, else arrival_b. */
static int arrival_alg(size_t len) {
  mmp__rt_facts_t f;

  mmp__rt_facts(mmp__eng, &f);
  return len <= f.eager_buffer / 2 && len <= f.max_frame ? MMP_BCAST_ARRIVAL_NB
                                                         : MMP_BCAST_ARRIVAL_B;
}

/* Lets d->alg's row settle what `o` left open (AUTO's pick when
 * auto_pick). */
static int settle(mmp_comm_t *comm, const mmp_bcast_opts_t *o, int auto_pick,
                  mmp__bcast_desc_t *d) {
  const mmp__bcast_alg_t *alg = mmp__bcast_alg(d->alg);
  mmp__bcast_env_t env;
  int rc;

  if (!(alg->flags & MMP__BCAST_F_COMPOSITE))
    d->groups = 0;
  env.comm = comm;
  env.p = comm->size;
  env.auto_pick = auto_pick;
  env.alg_of = mmp__bcast_alg;
  env.choose = mmp__bcast_choose;
  env.choose_flat = mmp__bcast_choose_flat;
  env.cost_in = mmp__bcast_cost_in_init;
  if (alg->resolve != NULL && (rc = alg->resolve(d, o, &env)) != 0)
    return rc;
  /* The header carries 32 bits of segment size. */
  if (d->seg > UINT32_MAX)
    d->seg = UINT32_MAX;
  return 0;
}

/* The timeout of a broadcast: the options', else the communicator's
 * (mmp_comm_set_timeout, MINIMP_COLL_TIMEOUT_MS). 0: none. */
static unsigned bcast_timeout(const mmp_comm_t *comm,
                              const mmp_bcast_opts_t *o) {
  return o->timeout_ms > 0 ? o->timeout_ms
                           : mmp__rt_coll_timeout(mmp__eng, comm);
}

/* AUTO's adaptive mode (collectives.h: MMP__ADAPT_MIN) for the static
 * choice `d`: the same on every rank that passes the same length. A
 * timeout does not change it, so that ranks whose timeouts differ still
 * choose alike. A multicast runs as chosen (auto_choose). */
static int adaptive(const mmp_comm_t *comm, size_t len,
                    const mmp_bcast_opts_t *o, const mmp__bcast_desc_t *d) {
  return o->algorithm == MMP_BCAST_AUTO && comm->size >= 3 &&
         len >= MMP__ADAPT_MIN && d->alg != MMP_BCAST_MULTICAST;
}

/* Fills `d` from `o` for a broadcast of `len` bytes from `root`: in
 * adaptive mode the static choice; *pays as auto_choose's. Every rank
 * computes the same. */
static int resolve(mmp_comm_t *comm, size_t len, int root,
                   const mmp_bcast_opts_t *o, mmp__bcast_desc_t *d, int *pays) {
  int rc, auto_pick = o->algorithm == MMP_BCAST_AUTO;

  memset(d, 0, sizeof(*d));
  *pays = 0;
  if (auto_pick) {
    if ((rc = auto_choose(comm, len, d, pays)) != 0)
      return rc;
    if (*pays && !adaptive(comm, len, o, d)) {
      d->alg = arrival_alg(len);
      d->seg = 0;
      d->groups = 0;
    }
  } else {
    d->alg = o->algorithm;
    d->seg = o->segment;
    d->groups = o->groups;
  }
  d->root = root;
  d->len = len;
  return settle(comm, o, auto_pick, d);
}

/*
 * Adaptive mode, at the root: 1 to run an arrival-aware broadcast (then
 * `arr` describes it), 0 to run the static choice `stat`, from the
 * arrival patterns this rank saw as root for this size (none yet: the
 * last root's hint, or without one `pays`). Stores its decision as the
 * regime unless `peek`.
 */
static int adapt_regime(mmp_comm_t *comm, const mmp_bcast_opts_t *o,
                        const mmp__bcast_desc_t *stat, int pays, int peek,
                        mmp__bcast_desc_t *arr) {
  size_t len = (size_t)stat->len;
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
  arr->alg = arrival_alg(len);
  arr->groups = arr->radix = arr->outer = 0;
  arr->seg = 0;
  rc = settle(comm, o, 1, arr);
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
  nb = arr->alg == MMP_BCAST_ARRIVAL_NB;
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
 * last broadcast left them. The burst allowance (docs/algorithms.md,
 * "Burst allowance") counts only once the links have had burst·β to
 * refill it since that broadcast ended; back to back, a choice that
 * relied on it gives way (mmp__bcast_choose_drained). Receivers follow
 * the root's first message, so this local clock cannot make ranks
 * disagree.
 */
static int root_static_choice(mmp_comm_t *comm, const mmp_bcast_opts_t *o,
                              mmp__bcast_desc_t *d) {
  mmp_netmodel_t nm;
  size_t seg;
  int alg, groups, rc;

  if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
    return rc;
  if (nm.burst <= 0 || mmp__coll_bcast_idle(comm) >= nm.burst * nm.beta)
    return 0;
  mmp__bcast_choose_drained(comm->size, (size_t)d->len, &nm, &alg, &seg,
                            &groups);
  if (alg == d->alg)
    return 0;
  d->alg = alg;
  d->seg = seg;
  d->groups = groups;
  d->radix = d->inner = d->outer = 0;
  return settle(comm, o, 1, d);
}

/* Starts an adaptive broadcast: the root runs its regime's algorithm, the
 * receivers announce themselves and follow its first message. */
static int adapt_start(mmp_comm_t *comm, void *buf, const mmp_bcast_opts_t *o,
                       const mmp__bcast_desc_t *stat, int pays,
                       mmp_request_t **req) {
  mmp__bcast_desc_t arr, any = *stat, mine = *stat;
  mmp__bcast_run_t run;
  int regime = 0;

  memset(&run, 0, sizeof(run));
  run.d = &any;
  any.alg = MMP_BCAST_AUTO; /* a receiver does not know yet */
  if (comm->rank == stat->root) {
    if ((regime = root_static_choice(comm, o, &mine)) != 0)
      return regime;
    regime = adapt_regime(comm, o, &mine, pays, 0, &arr);
    if (regime < 0)
      return regime;
    MMP__LOG(MMP__LOG_DEBUG, "AUTO, %llu bytes from rank %d: %s",
             (unsigned long long)mine.len, comm->rank,
             mmp_bcast_alg_name(regime ? arr.alg : mine.alg));
    run.d = regime ? &arr : &mine;
    run.stat = regime ? NULL : &mine;
  }
  run.e = mmp__eng;
  run.comm = comm;
  run.buf = buf;
  run.mode = o->mode;
  run.alg_of = mmp__bcast_alg;
  run.build = mmp__bcast_build;
  run.adaptive = 1;
  run.hint = regime + 1;
  run.timeout_ms = bcast_timeout(comm, o);
  return mmp__bcast_alg(MMP_BCAST_ARRIVAL_NB)->start(&run, req);
}

/* ---- Public calls ------------------------------------------------------- */

/* `part` is 0 or may be what `needs` says. */
static int part_ok(int part, unsigned needs) {
  return part == 0 || mmp__bcast_composes(part, needs);
}

static int check(const void *buf, size_t len, int root, const mmp_comm_t *comm,
                 const mmp_bcast_opts_t *o) {
  const mmp__bcast_alg_t *alg = mmp__bcast_alg(o->algorithm);
  const unsigned any_part = MMP__BCAST_F_GROUPS | MMP__BCAST_F_SUB;
  int rc = mmp__coll_ready(comm);

  if (rc != 0)
    return rc;
  if (buf == NULL && len > 0)
    return MMP_EINVAL;
  if (root < 0 || root >= comm->size)
    return MMP_ERANK;
  if ((alg == NULL && o->algorithm != MMP_BCAST_AUTO) ||
      o->mode > MMP_SEND_RNDV || o->groups < 0 || o->groups > comm->size ||
      !part_ok(o->inner, any_part) || !part_ok(o->outer, any_part) ||
      o->radix < 0 || o->radix == 1 || o->radix > MMP__KNOMIAL_RADIX_MAX)
    return MMP_EINVAL;
  if (alg != NULL &&
      ((alg->inner_needs && !part_ok(o->inner, alg->inner_needs)) ||
       (alg->outer_needs && !part_ok(o->outer, alg->outer_needs))))
    return MMP_EINVAL;
  return 0;
}

static int ibcast_body(void *buf, size_t len, int root, mmp_comm_t *comm,
                       const mmp_bcast_opts_t *opts, mmp_request_t **req) {
  static const mmp_bcast_opts_t defaults = MMP_BCAST_OPTS_INIT;
  const mmp_bcast_opts_t *o = opts != NULL ? opts : &defaults;
  const mmp__bcast_alg_t *alg;
  mmp__bcast_desc_t d;
  uint8_t hdr[MMP__BCAST_HDR_LEN];
  mmp__sched_t *s;
  int rc, pays;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  rc = check(buf, len, root, comm, o);
  if (rc == 0)
    rc = resolve(comm, len, root, o, &d, &pays);
  if (rc != 0)
    return rc;
  if (adaptive(comm, len, o, &d))
    return adapt_start(comm, buf, o, &d, pays, req);
  alg = mmp__bcast_alg(d.alg);
  if (alg->flags & MMP__BCAST_F_DYNAMIC) {
    mmp__bcast_run_t run;
    memset(&run, 0, sizeof(run));
    run.e = mmp__eng;
    run.comm = comm;
    run.buf = buf;
    run.d = &d;
    run.mode = o->mode;
    run.alg_of = mmp__bcast_alg;
    run.build = mmp__bcast_build;
    run.timeout_ms = bcast_timeout(comm, o);
    return alg->start(&run, req);
  }
  rc = mmp__sched_new(mmp__eng, comm, buf, len, o->mode, &s);
  if (rc != 0)
    return rc;
  mmp__sched_set_timeout(s, o->timeout_ms);
  mmp__lock(mmp__eng);
  mmp__coll_log_locked(comm, s->seq, d.alg);
  mmp__unlock(mmp__eng);
  mmp__bcast_desc_encode(&d, hdr);
  mmp__sched_set_header(s, hdr, MMP__BCAST_HDR_LEN, bcast_rebuild);
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
  return mmp__api_leave(ibcast_body(buf, len, root, comm, opts, req), __func__);
}

int mmp_bcast_select(mmp_comm_t *comm, size_t len, mmp_bcast_opts_t *out) {
  static const mmp_bcast_opts_t defaults = MMP_BCAST_OPTS_INIT;
  mmp__bcast_desc_t d, arr;
  int rc, pays;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  rc = resolve(comm, len, comm->rank, &defaults, &d, &pays);
  /* In adaptive mode, what this rank would run as root now. */
  if (rc == 0 && adaptive(comm, len, &defaults, &d) &&
      (rc = root_static_choice(comm, &defaults, &d)) == 0) {
    rc = adapt_regime(comm, &defaults, &d, pays, 1, &arr);
    if (rc == 1)
      d = arr;
    rc = rc < 0 ? rc : 0;
  }
  if (rc != 0)
    return rc;
  *out = defaults;
  out->algorithm = d.alg;
  out->segment = d.seg;
  out->groups = d.groups;
  out->radix = d.radix;
  out->inner = d.inner;
  out->outer = d.outer;
  return 0;
}

int mmp_bcast_last(mmp_comm_t *comm, int *alg) {
  uint32_t seq[MMP__COLL_LOG];
  int algs[MMP__COLL_LOG], n;

  if (mmp__eng == NULL)
    return mmp__not_init(__func__);
  if (comm == NULL)
    return MMP_ECOMM;
  if (alg == NULL)
    return MMP_EINVAL;
  n = mmp__coll_log_get(comm, seq, algs, MMP__COLL_LOG);
  if (n == 0)
    return MMP_EINVAL;
  *alg = algs[n - 1];
  return 0;
}

int mmp_bcast_ex(void *buf, size_t len, int root, mmp_comm_t *comm,
                 const mmp_bcast_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_ibcast(buf, len, root, comm, opts, &r), &r,
                       __func__);
}

int mmp_bcast(void *buf, size_t len, int root, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_bcast_ex(buf, len, root, comm, NULL), __func__);
}
