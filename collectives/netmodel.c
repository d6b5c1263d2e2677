/* SPDX-License-Identifier: MIT */
/*
 * Measuring the network model the automatic choices use: a message of m
 * bytes costs alpha + m beta, and an idle link passes its first `burst`
 * bytes at once.
 *
 * The model is measured once per communicator, the first time a choice
 * needs it, by every rank at once: alpha is the time per round of a
 * 1-byte ring through all ranks (so it includes waiting for a CPU where
 * ranks share one), beta the slope between 64 KiB and 1 MiB ping-pongs
 * within pairs of ranks (which cancels a shaper's or switch's burst
 * allowance). Rank 0 broadcasts its figures so that every rank decides
 * alike; communicators made from this one inherit them. A saved profile
 * (MINIMP_NET_ALPHA_US, MINIMP_NET_BETA_NS, e.g. from `minimp-bench
 * calibrate`) skips the measurement. docs/algorithms.md ("The network
 * model") says what is measured when, and why each choice was made.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives.h"

#define RING_RUNS 5
#define RING_ROUNDS 10
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
 * to the next and waits for one from the previous, all at once. Every
 * rank is busy in every round, as in a collective's steps, so on a
 * machine whose CPUs are shared by several ranks the figure includes
 * waiting for a CPU; elsewhere it is one message's latency.
 *
 * RING_RUNS short runs of RING_ROUNDS rounds, each after a barrier: every
 * rank keeps its fastest run, since whatever else the machine does only
 * adds time, in bursts that a short run can miss; the figure is the
 * slowest rank's (collected by the caller), since a rank can finish its
 * rounds early on messages its predecessor sent ahead (up to p - 1 rounds
 * ahead round the ring). The ring's waits sleep while it is timed, as the
 * waits of the broadcasts whose cost formulas were checked against it do
 * (docs/progress.md).
 */
static int ring_alpha(mmp__engine_t *e, mmp_comm_t *c, int tag, double *alpha) {
  int p = c->size, next = (c->rank + 1) % p, prev = (c->rank + p - 1) % p;
  uint8_t in = 0, out = 0;
  double t0 = 0;
  int i, rc = 0, was;

  *alpha = INFINITY;
  for (i = 0; i < RING_RUNS * RING_ROUNDS && rc == 0; i++) {
    mmp_request_t r[2];
    if (i % RING_ROUNDS == 0) {
      if ((rc = mmp_barrier(c)) != 0)
        break;
      t0 = mmp_wtime();
    }
    memset(r, 0, sizeof(r));
    was = mmp__progress_sleepy(1);
    rc = mmp__irecv(e, c, c->ctx + 1, &in, 1, mmp__comm_world(c, prev), tag,
                    &r[0]);
    if (rc == 0)
      rc = mmp__isend(e, c, c->ctx + 1, &out, 1, mmp__comm_world(c, next), tag,
                      MMP_SEND_EAGER, &r[1]);
    if (rc == 0)
      rc = mmp__wait_internal(e, &r[1]);
    if (rc != 0 && r[0].kind != 0) {
      /* The receive lives on this stack: take it back before leaving. */
      mmp__lock(e);
      mmp__cancel_locked(e, &r[0]);
      mmp__unlock(e);
    }
    if (r[0].kind != 0) {
      int r0 = mmp__wait_internal(e, &r[0]);
      rc = rc != 0 ? rc : r0;
    }
    mmp__progress_sleepy(was);
    if (rc == 0 && i % RING_ROUNDS == RING_ROUNDS - 1)
      *alpha = fmin(*alpha, (mmp_wtime() - t0) / RING_ROUNDS);
  }
  return rc;
}

/* The slowest rank's alpha, at rank 0 (point-to-point, `tag`). */
static int slowest_alpha(mmp__engine_t *e, mmp_comm_t *c, int tag,
                         double *alpha) {
  int i, rc = 0;
  double v;

  if (c->rank != 0)
    return xfer(e, c, 1, alpha, sizeof(*alpha), 0, tag);
  for (i = 1; i < c->size && rc == 0; i++) {
    rc = xfer(e, c, 0, &v, sizeof(v), i, tag);
    *alpha = fmax(*alpha, v);
  }
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
 * bucket, a switch's buffer) the two sizes enjoy alike; a ping-pong that
 * fits a 64 KB bucket alone would read many times the sustained rate.
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
   * half its time at that rate, which a plain link cannot beat (a quarter
   * was exceeded under CPU load; docs/algorithms.md). Then the burst is
   * at least its size, what headers cost the estimate notwithstanding. */
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

/* The figures rank 0 shares: alpha, beta, burst, shared CPUs, gamma. */
#define MODEL_FIGURES 5

/* Rank 0's figures to every rank, with the binomial tree. */
static int share(mmp__engine_t *e, mmp_comm_t *comm,
                 double model[MODEL_FIGURES]) {
  mmp__bcast_arg_t a;
  mmp_request_t *r;
  mmp__sched_t *s;
  int rc = mmp__sched_new(e, comm, model, MODEL_FIGURES * sizeof(double),
                          MMP_SEND_AUTO, &s);

  if (rc != 0)
    return rc;
  memset(&a, 0, sizeof(a));
  a.len = MODEL_FIGURES * sizeof(double);
  a.dep = -1;
  a.phase = 1;
  rc = mmp__bcast_over_all(s, mmp__bcast_binomial_alg.build, &a);
  if (rc < 0) {
    mmp__sched_free(s);
    return rc;
  }
  rc = mmp__sched_start(s, &r);
  return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
}

/* The whole measurement, collective over `comm`. */
static int measure(mmp_comm_t *comm, mmp_netmodel_t *out) {
  mmp__engine_t *e = mmp__eng;
  double model[MODEL_FIGURES] = {0}, small = 0, large = 0, burst = 0;
  uint32_t seq;
  int rc;

  mmp__lock(e);
  seq = comm->coll_seq++;
  mmp__unlock(e);
  /* Then ranks pair up (0-1, 2-3, ...) and all measure at once, so the
   * links are as busy as in a collective. */
  rc = ring_alpha(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 1), &small);
  if (rc == 0)
    rc = slowest_alpha(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 3), &small);
  if (rc == 0 && (comm->rank ^ 1) < comm->size)
    rc = pair_beta(e, comm, comm->rank ^ 1,
                   MMP__COLL_TAG(seq, MMP__PHASE_SYS + 2), &large, &burst);
  if (rc == 0 && comm->rank == 0) {
    model[0] = small > 1e-7 ? small : 1e-7;
    model[1] = large > 1e-12 ? large : 1e-12;
    model[2] = burst;
    mmp__lock(e);
    model[3] = e->cfg.cpus_shared;
    mmp__unlock(e);
    /* The reductions' arithmetic (coll_gamma.c). */
    model[4] = mmp__measure_gamma();
  }
  /* Every rank must decide alike: rank 0's numbers are the numbers. */
  if (rc == 0)
    rc = share(e, comm, model);
  if (rc != 0)
    return rc;
  out->alpha = model[0];
  out->beta = model[1];
  out->burst = model[2];
  out->shared_cpus = model[3] != 0;
  out->gamma = model[4];
  MMP__LOG(MMP__LOG_DEBUG,
           "network model: alpha %.1f us, beta %.3f ns/byte, burst %.0f bytes"
           "%s",
           model[0] * 1e6, model[1] * 1e9, model[2],
           out->shared_cpus ? ", CPUs shared" : "");
  return 0;
}

/* gamma where nothing is measured: the same on every rank. */
static double gamma_profile(const mmp__coll_config_t *cc) {
  return (cc->net_gamma_ns >= 0 ? cc->net_gamma_ns : MMP__GAMMA_DEFAULT_NS) *
         1e-9;
}

int mmp__netmodel_get(mmp_comm_t *comm, mmp_netmodel_t *out) {
  const mmp__coll_config_t *cc = &mmp__eng->cfg.coll;
  mmp__coll_state_t *st;
  int rc;

  MMP__ASSERT_UNLOCKED(mmp__eng); /* measuring waits on the network */
  if (cc->net_profile) {
    out->alpha = cc->net_alpha_us * 1e-6;
    out->beta = cc->net_beta_ns * 1e-9;
    out->burst = cc->net_burst;
    out->shared_cpus = cc->net_shared;
    out->gamma = gamma_profile(cc);
    return 0;
  }
  if ((st = mmp__coll_state(comm)) == NULL)
    return MMP_ENOMEM;
  if (st->net_known) {
    *out = st->net;
    return 0;
  }
  if (comm->size < 2) {
    out->alpha = 1e-6;
    out->beta = 1e-10;
    out->burst = 0;
    out->shared_cpus = 0;
    out->gamma = gamma_profile(cc);
    return 0;
  }
  if ((rc = measure(comm, out)) != 0)
    return rc;
  st->net = *out;
  st->net_known = 1;
  return 0;
}

int mmp_comm_netmodel(mmp_comm_t *comm, mmp_netmodel_t *out) {
  int rc;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  return mmp__netmodel_get(comm, out);
}
