/* SPDX-License-Identifier: MIT */
/*
 * Automatic choice of a broadcast algorithm from the Hockney model.
 *
 * The model, alpha + m beta per message, is measured once per
 * communicator, the first time a choice needs it, by every rank at once:
 * alpha is the time per round of a 1-byte ring through all ranks (so it
 * includes waiting for a CPU where ranks share one, as on the emulated
 * cluster), beta the slope between 64 KiB and 1 MiB ping-pongs within
 * pairs of ranks (which cancels a shaper's or switch's burst allowance;
 * a 64 KiB ping-pong alone reads several times the sustained rate
 * through tc tbf's 64 KB bucket). Rank 0 broadcasts its figures so that
 * every rank decides alike; dup and split inherit them. A
 * saved profile (MINIMP_NET_ALPHA_US, MINIMP_NET_BETA_NS, e.g. from
 * `minimp-bench calibrate`) skips the measurement.
 *
 * The choice evaluates the cost formulas of seed 001 (one per algorithm
 * file; seed 004's, counted the same way, for the symmetric broadcast)
 * for the given p and m and takes the smallest; for the pipeline it
 * uses the optimal segment count X = sqrt((p - 2) m beta / alpha), and for
 * the hierarchical algorithm G = ceil(sqrt(p)) with the best algorithm
 * inside and between groups. docs/algorithms.md lists the rules and the
 * measured check that the choice is within 10% of the best.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives.h"

#define SEG_MIN 4096.0

static double lg2(double x) {
  return x <= 1 ? 0 : ceil(log2(x));
}

double mmp__bcast_cost(int alg, int p, double m, double X, int G,
                       const mmp__netmodel_t *nm) {
  double a = nm->alpha, b = nm->beta, P = p;

  if (p <= 1)
    return 0;
  switch (alg) {
  case MMP_BCAST_FLAT:
  case MMP_BCAST_CHAIN:
    return (P - 1) * (a + m * b);
  case MMP_BCAST_PIPELINE:
    X = X < 1 ? 1 : X;
    return (X + P - 2) * (a + m * b / X);
  case MMP_BCAST_BINARY:
    return 2 * (lg2(P + 1) - 1) * (a + m * b);
  case MMP_BCAST_SPLIT_BINARY: {
    /* Seed 001 gives 2 (log2(p + 1) - 2)(a + m b) + a + m b / 2, which
     * leaves out the root's own two sends (it is a + m b / 2 at p = 3, far
     * below any real broadcast). Counted as run: h = ceil(log2(p + 1)) - 1
     * levels, each two sends of a half, then one exchange of a half. */
    double h = lg2(P + 1) - 1;
    return (2 * h + 1) * (a + m / 2 * b);
  }
  case MMP_BCAST_BINOMIAL:
    return lg2(P) * (a + m * b);
  case MMP_BCAST_SCATTER_RING:
    return (lg2(P) + P - 1) * a + 2 * (P - 1) / P * m * b;
  case MMP_BCAST_SCATTER_RD: {
    double t = 2 * lg2(P) * a + 2 * (P - 1) / P * m * b;
    /* Outside powers of two, the extra ranks get it all once more. */
    return (p & (p - 1)) ? t + a + m * b : t;
  }
  case MMP_BCAST_SYMMETRIC: {
    /* Seed 004's 2 alpha + m beta (2 - 1/q), q = p - 1 receivers, with
     * each of the root's q sends and of a receiver's q - 1 forwards
     * paying alpha, as seed 001 counts the flat tree's: the root's pieces
     * leave after q alpha + m beta, and the last one's receiver forwards
     * it to q - 1 others. */
    double q = P - 1;
    return (2 * q - 1) * a + (2 - 1 / q) * m * b;
  }
  case MMP_BCAST_HIERARCHICAL: {
    int a2;
    size_t s2;
    int g2;
    double t = 0;
    (void)X;
    if (G <= 1 || G >= p)
      return INFINITY;
    mmp__bcast_choose(G, (size_t)m, nm, &a2, &s2, &g2);
    t += mmp__bcast_cost(a2, G, m, s2 ? m / (double)s2 : 1, 0, nm);
    mmp__bcast_choose((p + G - 1) / G, (size_t)m, nm, &a2, &s2, &g2);
    t +=
        mmp__bcast_cost(a2, (p + G - 1) / G, m, s2 ? m / (double)s2 : 1, 0, nm);
    return t;
  }
  default:
    return INFINITY;
  }
}

size_t mmp__pipeline_seg(int p, size_t len, const mmp__netmodel_t *nm) {
  double m = (double)len;
  double X = p > 2 && nm->alpha > 0
                 ? sqrt((double)(p - 2) * m * nm->beta / nm->alpha)
                 : 1;
  double seg = X > 1 ? m / X : m;

  /* Not cut evenly (mmp__even_seg): the segment would then depend on the
   * exact length, and ranks that disagree on it by a few bytes would cut
   * differently. The arrival-aware broadcasts, which run this pipeline,
   * then hung instead of reporting the mismatch (mr_arrival, 70,001
   * against 70,008 bytes); with a fixed 4 KiB floor both cut alike. */
  if (seg < SEG_MIN)
    seg = SEG_MIN;
  return seg >= m ? 0 : (size_t)seg;
}

/* Bytes the busiest link carries in one broadcast by `alg`. */
static double link_bytes(int alg, int p, double m) {
  switch (alg) {
  case MMP_BCAST_FLAT:
    return (p - 1) * m;
  case MMP_BCAST_CHAIN:
  case MMP_BCAST_PIPELINE:
  case MMP_BCAST_SYMMETRIC: /* the root's; each receiver takes in m too */
    return m;
  case MMP_BCAST_BINARY:
    return 2 * m;
  case MMP_BCAST_SPLIT_BINARY:
    return 1.5 * m;
  case MMP_BCAST_BINOMIAL:
    return lg2(p) * m;
  case MMP_BCAST_SCATTER_RING:
  case MMP_BCAST_SCATTER_RD:
    return 2 * m;
  default:
    return INFINITY;
  }
}

/*
 * The cost formula, except on a network with a burst allowance (a link
 * that was idle passes its first `burst` bytes at once, as through a
 * shaper's token bucket): an algorithm whose busiest link carries no more
 * than that pays its latency terms only. The formulas alone charge those
 * bytes beta at every hop, and miss that a pipelined chain of 64 KiB
 * crosses the emulated cluster (tbf, 64 KB bucket) in about one latency
 * per segment and hop. The choice is for a broadcast that finds the
 * links rested, as seed 003's method measures each one: an earlier
 * version charged the busiest link's bytes at the sustained rate as a
 * floor, for broadcasts back to back, and so priced every algorithm
 * whose links carry m bytes alike at 8-64 KiB (the first in the list
 * won); rested, they differ by their latency terms (performance.md).
 */
static double cost_burst(int alg, int p, double m, double X, int G,
                         const mmp__netmodel_t *nm) {
  mmp__netmodel_t lat = *nm;

  if (nm->burst <= 0 || link_bytes(alg, p, m) > nm->burst)
    return mmp__bcast_cost(alg, p, m, X, G, nm);
  lat.beta = 0;
  return mmp__bcast_cost(alg, p, m, X, G, &lat);
}

/* hier: the hierarchical algorithm may compete; top: AUTO's own
 * top-level choice, which the k-nomial tree and the symmetric broadcast
 * may take (neither composes inside the hierarchical one). */
static double choose(int p, size_t len, const mmp__netmodel_t *nm, int hier,
                     int top, int *alg, size_t *seg, int *groups) {
  /* On a tie (within 3%) the earlier wins: trees before the
   * scatter-allgathers, whose every step needs every rank at once and so
   * pays most where ranks wait for CPUs (measured on the emulated cluster
   * at 4 KiB, p = 16: binary 272 us, scatter-recursive-doubling 794 us,
   * both 8 alpha in the model). */
  /* The chain is no candidate: it is the pipelined chain with one
   * segment, which the pipeline's optimal X already covers, and alone it
   * won only where the burst allowance's latency terms hide what each hop
   * pays to store and forward the whole message (at p = 16, 64 KiB, when
   * alpha reads above about 190 us): in 1 job of 3 on the emulated
   * cluster, 9.6 ms against the pipeline's 2.6 ms (performance.md). */
  static const int cands[] = {
      MMP_BCAST_BINOMIAL, MMP_BCAST_BINARY,       MMP_BCAST_SPLIT_BINARY,
      MMP_BCAST_PIPELINE, MMP_BCAST_SCATTER_RING, MMP_BCAST_SCATTER_RD,
      MMP_BCAST_FLAT,     MMP_BCAST_SYMMETRIC,    MMP_BCAST_HIERARCHICAL};
  double m = (double)len, best = INFINITY;
  size_t pseg = mmp__pipeline_seg(p, len, nm);
  int G = (int)ceil(sqrt((double)p));
  size_t i;

  *alg = MMP_BCAST_BINOMIAL;
  *seg = 0;
  *groups = 0;
  if (p <= 2) /* one message whatever the shape */
    return cost_burst(MMP_BCAST_BINOMIAL, p, m, 1, G, nm);
  for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
    int c = cands[i];
    double X = c == MMP_BCAST_PIPELINE && pseg ? ceil(m / (double)pseg) : 1;
    double t;
    if ((c == MMP_BCAST_HIERARCHICAL && !hier) ||
        (c == MMP_BCAST_SYMMETRIC &&
         (!top || len < MMP__SYMMETRIC_MIN_DEFAULT)))
      continue;
    t = cost_burst(c, p, m, X, G, nm);
    /* Prefer the earlier (simpler) candidate unless clearly better. */
    if (t < best * 0.97) {
      best = t;
      *alg = c;
      *seg = c == MMP_BCAST_PIPELINE ? pseg : 0;
      *groups = c == MMP_BCAST_HIERARCHICAL ? G : 0;
    }
  }
  /* Where ranks outnumber CPUs the hop, not the send, is what a small
   * broadcast pays most for: waiting for one of the shared CPUs. There
   * AUTO's own choice takes the k-nomial tree of radix 3, one level
   * shallower than the binary tree at p = 16, where the formulas pick the
   * binomial tree for a message of up to MMP__BULK_BYTES (whose waits
   * poll and yield, as measured; larger ones sleep and keep the binary
   * tree): 1 KiB, p = 16, paired rounds, max OL_i 335 against the
   * binary tree's 354 us, the anchors' loop 202 against 236 us
   * (performance.md). Inside and between hierarchical groups, where the
   * k-nomial tree cannot go, the binary tree takes its place, whose nodes
   * send two messages each (before waits stopped polling after long ones,
   * it measured 1.25 x faster than the binomial tree on max OL_i at 1 KiB,
   * p = 16). Hockney's model prices all three as binomial <= binary,
   * k-nomial, so this is a rule, not a formula. */
  if (nm->shared && *alg == MMP_BCAST_BINOMIAL && p > 2)
    *alg = top && len <= MMP__BULK_BYTES ? MMP_BCAST_KNOMIAL : MMP_BCAST_BINARY;
  return best;
}

static double choose_nested(int p, size_t len, const mmp__netmodel_t *nm,
                            int top, int *alg, size_t *seg, int *groups) {
  /* Inside the hierarchical cost, sub-choices are flat (no recursion). */
  static _Thread_local int depth;
  double t;

  depth++;
  t = choose(p, len, nm, depth == 1, top && depth == 1, alg, seg, groups);
  depth--;
  return t;
}

double mmp__bcast_choose_auto(int p, size_t len, const mmp__netmodel_t *nm,
                              int *alg, size_t *seg, int *groups) {
  return choose_nested(p, len, nm, 1, alg, seg, groups);
}

double mmp__bcast_choose(int p, size_t len, const mmp__netmodel_t *nm, int *alg,
                         size_t *seg, int *groups) {
  return choose_nested(p, len, nm, 0, alg, seg, groups);
}

double mmp__arrival_window(int p, size_t len, const mmp__netmodel_t *nm) {
  double T = nm->alpha + (double)len * nm->beta, w = p * nm->alpha;

  if (T / MMP__ARRIVAL_WINDOW_DIV < 1e-3)
    return 0;
  w = w < 1e-3 ? 1e-3 : w;
  return w < T / MMP__ARRIVAL_WINDOW_DIV ? w : T / MMP__ARRIVAL_WINDOW_DIV;
}

/* Everyone arriving together, an arrival-aware broadcast costs a static
 * one's time plus the root's gathering window and about two latencies of
 * p ranks (the ARRIVED messages in, the GROUP headers out): measured 6 ms
 * at p = 16, 1 MiB on the emulated cluster (window 2 ms, 2 p alpha 3.6
 * ms). Worth it when that is at most MMP__ARRIVAL_AUTO_SHARE of the static
 * time: arriving apart, it measured 2 to 7 times faster. */
int mmp__bcast_arrival_pays(int p, size_t len, const mmp__netmodel_t *nm,
                            double best) {
  double w = mmp__arrival_window(p, len, nm);

  return p >= 3 && w > 0 &&
         w + 2 * p * nm->alpha <= MMP__ARRIVAL_AUTO_SHARE * best;
}

double mmp__bcast_choose_flat(int p, size_t len, const mmp__netmodel_t *nm,
                              int *alg, size_t *seg) {
  int groups;

  return choose(p, len, nm, 0, 0, alg, seg, &groups);
}

/* ---- Measuring the model ------------------------------------------------ */

static int env_model(mmp__netmodel_t *out) {
  const char *a = getenv("MINIMP_NET_ALPHA_US");
  const char *b = getenv("MINIMP_NET_BETA_NS");
  char *end;
  double av, bv;

  if (a == NULL || b == NULL)
    return 0;
  av = strtod(a, &end);
  if (*end != '\0' || av <= 0)
    return 0;
  bv = strtod(b, &end);
  if (*end != '\0' || bv <= 0)
    return 0;
  out->alpha = av * 1e-6;
  out->beta = bv * 1e-9;
  out->burst = 0;
  if ((a = getenv("MINIMP_NET_BURST_BYTES")) != NULL) {
    double v = strtod(a, &end);
    out->burst = *end == '\0' && v > 0 ? v : 0;
  }
  a = getenv("MINIMP_NET_SHARED_CPUS");
  out->shared = a != NULL && strcmp(a, "1") == 0;
  return 1;
}

#define RING_ROUNDS 40
#define BETA_SMALL 65536u
#define BETA_LARGE (1u << 20)

/* One blocking transfer in the collective context: a send when `out`. */
static int xfer(mmp__engine_t *e, mmp_comm_t *c, int out, void *b, size_t n,
                int peer, int tag) {
  mmp_request_t r;
  int rc;

  memset(&r, 0, sizeof(r));
  rc = out ? mmp__isend(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag,
                        MMP_SEND_AUTO, &r)
           : mmp__irecv(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag,
                        &r);
  return rc != 0 ? rc : mmp__wait_internal(e, &r);
}

/*
 * alpha: seconds per round of a ring in which every rank passes one byte
 * to the next and waits for one from the previous, RING_ROUNDS rounds.
 * Every rank is busy in every round, as in a collective's steps, so on a
 * machine whose CPUs are shared by several ranks (the emulated cluster)
 * the figure includes waiting for a CPU; elsewhere it is one message's
 * latency.
 */
static int ring_alpha(mmp__engine_t *e, mmp_comm_t *c, int tag, double *alpha) {
  int p = c->size, next = (c->rank + 1) % p, prev = (c->rank + p - 1) % p;
  uint8_t in = 0, out = 0;
  double t0 = 0;
  int i, rc = 0, was;

  /* Waits that yield (more ranks than CPUs) slow a ring in which every
   * rank is busy: 125-220 us a round on the emulated cluster against
   * 93-118 us with sleeping waits, while the steps of real broadcasts
   * (pipeline, scatter-allgather at 64 KiB) take the same time either
   * way. The selection's cost formulas were checked against the sleeping
   * figure (docs/performance.md), so there the ring sleeps while it is
   * timed, as it did before waits yielded. */
  was = mmp__progress_sleepy(1);

  /* Round 0 lines the ranks up. */
  for (i = 0; i <= RING_ROUNDS && rc == 0; i++) {
    mmp_request_t r[2];
    memset(r, 0, sizeof(r));
    if (i == 1)
      t0 = mmp_wtime();
    rc = mmp__irecv(e, c, c->ctx + 1, &in, 1, mmp__comm_world(c, prev), tag,
                    &r[0]);
    if (rc != 0)
      break;
    rc = mmp__isend(e, c, c->ctx + 1, &out, 1, mmp__comm_world(c, next), tag,
                    MMP_SEND_EAGER, &r[1]);
    if (rc == 0)
      rc = mmp__wait_internal(e, &r[1]);
    if (rc != 0) {
      /* The receive lives on this stack: take it back before leaving. */
      uv_mutex_lock(&e->lock);
      mmp__cancel_locked(e, &r[0]);
      uv_mutex_unlock(&e->lock);
      mmp__wait_internal(e, &r[0]);
      break;
    }
    rc = mmp__wait_internal(e, &r[0]);
  }
  *alpha = (mmp_wtime() - t0) / RING_ROUNDS;
  mmp__progress_sleepy(was);
  return rc;
}

/* Best half round trip of `n`-byte ping-pongs with `peer` (the lower rank
 * leads). */
static int pingpong(mmp__engine_t *e, mmp_comm_t *c, int peer, int tag,
                    size_t n, int reps, double *best) {
  uint8_t *b = calloc(n, 1);
  int lead = c->rank < peer, i, rc = b == NULL ? MMP_ENOMEM : 0;

  *best = INFINITY;
  for (i = 0; i < reps && rc == 0; i++) {
    double t0 = mmp_wtime();
    rc = xfer(e, c, lead, b, n, peer, tag);
    if (rc == 0)
      rc = xfer(e, c, !lead, b, n, peer, tag);
    if ((mmp_wtime() - t0) / 2 < *best)
      *best = (mmp_wtime() - t0) / 2;
  }
  free(b);
  return rc;
}

/*
 * beta: the slope between ping-pongs of BETA_SMALL and BETA_LARGE bytes,
 * which cancels both the latency and any burst allowance (a shaper's
 * bucket, a switch's buffer) the two sizes enjoy alike. A 64 KiB
 * ping-pong alone would fit inside tc tbf's 64 KB bucket on the emulated
 * cluster and read many times the sustained rate.
 */
void mmp__net_beta_burst(double one, double small, double large, double *beta,
                         double *burst) {
  *beta = (large - small) / (double)(BETA_LARGE - BETA_SMALL);
  /* Where scheduling noise swamps the difference (ranks sharing CPUs on
   * loopback), fall back towards the plain rate of the large one. */
  if (*beta < 0.5 * large / BETA_LARGE)
    *beta = 0.5 * large / BETA_LARGE;
  /* What the large one did not pay for at that rate went through at once:
   * the burst allowance (about 0 on a plain link). */
  *burst = BETA_LARGE - (large - one) / *beta;
  /* Only if the small one really went through at once: in well under
   * its time at that rate, which a plain link cannot beat. Then the burst
   * is at least its size, what headers cost the estimate notwithstanding.
   * Half the rate time, not a quarter: on the emulated cluster the 64 KiB
   * ping-pong took 0.3-1.5 ms against 5.6 ms at the rate, and a quarter
   * (1.4 ms) was exceeded in 1 measurement of 8 under CPU load; AUTO then
   * sent 64 KiB to scatter-recursive-doubling (6.2 ms, against 3.5 ms). */
  if (small - one > 0.5 * BETA_SMALL * *beta)
    *burst = 0;
  else if (*burst < BETA_SMALL)
    *burst = BETA_SMALL;
}

static int pair_beta(mmp__engine_t *e, mmp_comm_t *c, int peer, int tag,
                     double *beta, double *burst) {
  double one, small, large;
  int rc = pingpong(e, c, peer, tag, 1, 5, &one);

  if (rc == 0)
    rc = pingpong(e, c, peer, tag, BETA_SMALL, 5, &small);
  if (rc == 0)
    rc = pingpong(e, c, peer, tag, BETA_LARGE, 2, &large);
  if (rc != 0)
    return rc;
  MMP__LOG(MMP__LOG_DEBUG,
           "pair_beta: half round trips 1 B %.1f us, %u B %.1f us, %u B %.1f "
           "us",
           one * 1e6, BETA_SMALL, small * 1e6, BETA_LARGE, large * 1e6);
  mmp__net_beta_burst(one, small, large, beta, burst);
  return 0;
}

int mmp__netmodel_get(mmp_comm_t *comm, mmp__netmodel_t *out) {
  mmp__engine_t *e = mmp__eng;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  double model[4] = {0, 0, 0, 0}, small = 0, large = 0, burst = 0;
  uint32_t seq;
  int rc = 0;

  if (env_model(out))
    return 0;
  if (comm->net_known) {
    out->alpha = comm->net_alpha;
    out->beta = comm->net_beta;
    out->burst = comm->net_burst;
    out->shared = comm->net_shared;
    return 0;
  }
  if (comm->size < 2) {
    out->alpha = 1e-6;
    out->beta = 1e-10;
    out->burst = 0;
    out->shared = 0;
    return 0;
  }
  uv_mutex_lock(&e->lock);
  seq = comm->coll_seq++;
  uv_mutex_unlock(&e->lock);
  /* Then ranks pair up (0-1, 2-3, ...) and all measure at once, so the
   * links are as busy as in a collective. */
  rc = ring_alpha(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 1), &small);
  if (rc == 0 && (comm->rank ^ 1) < comm->size)
    rc = pair_beta(e, comm, comm->rank ^ 1,
                   MMP__COLL_TAG(seq, MMP__PHASE_SYS + 2), &large, &burst);
  if (rc == 0 && comm->rank == 0) {
    model[0] = small > 1e-7 ? small : 1e-7;
    model[1] = large > 1e-12 ? large : 1e-12;
    model[2] = burst;
    uv_mutex_lock(&e->lock);
    model[3] = e->cfg.cpus_shared;
    uv_mutex_unlock(&e->lock);
  }
  /* Every rank must decide alike: rank 0's numbers are the numbers. */
  o.algorithm = MMP_BCAST_BINOMIAL;
  if (rc == 0)
    rc = mmp_bcast_ex(model, sizeof(model), 0, comm, &o);
  if (rc != 0)
    return rc;
  comm->net_alpha = model[0];
  comm->net_beta = model[1];
  comm->net_burst = model[2];
  comm->net_shared = model[3] != 0;
  comm->net_known = 1;
  out->alpha = model[0];
  out->beta = model[1];
  out->burst = model[2];
  out->shared = comm->net_shared;
  MMP__LOG(MMP__LOG_DEBUG,
           "network model: alpha %.1f us, beta %.3f ns/byte, burst %.0f bytes"
           "%s",
           model[0] * 1e6, model[1] * 1e9, model[2],
           comm->net_shared ? ", CPUs shared" : "");
  return 0;
}

int mmp_comm_netmodel(mmp_comm_t *comm, mmp_netmodel_t *out) {
  mmp__netmodel_t nm;
  int rc;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  rc = mmp__netmodel_get(comm, &nm);
  if (rc == 0) {
    out->alpha = nm.alpha;
    out->beta = nm.beta;
    out->burst = nm.burst;
    out->shared_cpus = nm.shared;
  }
  return rc;
}
