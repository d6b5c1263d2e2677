/* SPDX-License-Identifier: MIT */
/*
 * Automatic choice of a broadcast algorithm from the Hockney model.
 *
 * The model, alpha + m beta per message, is measured once per
 * communicator, the first time a choice needs it: ranks 0 and 1 time a
 * ping-pong of 1 byte (alpha = half the round trip) and of 64 KiB
 * (beta = (half the round trip - alpha) / 64 KiB), best of several runs,
 * and rank 0 broadcasts the result so that every rank decides alike. A
 * saved profile (MINIMP_NET_ALPHA_US, MINIMP_NET_BETA_NS, e.g. from
 * `minimp-bench calibrate`) skips the measurement.
 *
 * The choice evaluates the cost formulas of seed 001 (one per algorithm
 * file) for the given p and m and takes the smallest; for the pipeline it
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

/* The pipeline's best segment size under the model. */
static size_t pipeline_seg(int p, double m, const mmp__netmodel_t *nm) {
  double X = p > 2 && nm->alpha > 0
                 ? sqrt((double)(p - 2) * m * nm->beta / nm->alpha)
                 : 1;
  double seg = X > 1 ? m / X : m;

  if (seg < SEG_MIN)
    seg = SEG_MIN;
  return seg >= m ? 0 : (size_t)seg;
}

static void choose(int p, size_t len, const mmp__netmodel_t *nm, int hier,
                   int *alg, size_t *seg, int *groups) {
  static const int cands[] = {
      MMP_BCAST_BINOMIAL,   MMP_BCAST_PIPELINE,     MMP_BCAST_SCATTER_RING,
      MMP_BCAST_SCATTER_RD, MMP_BCAST_SPLIT_BINARY, MMP_BCAST_BINARY,
      MMP_BCAST_CHAIN,      MMP_BCAST_FLAT,         MMP_BCAST_HIERARCHICAL};
  double m = (double)len, best = INFINITY;
  size_t pseg = pipeline_seg(p, m, nm);
  int G = (int)ceil(sqrt((double)p));
  size_t i;

  *alg = MMP_BCAST_BINOMIAL;
  *seg = 0;
  *groups = 0;
  if (p <= 2)
    return; /* one message whatever the shape */
  for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
    int c = cands[i];
    double X = c == MMP_BCAST_PIPELINE && pseg ? ceil(m / (double)pseg) : 1;
    double t;
    if (c == MMP_BCAST_HIERARCHICAL && !hier)
      continue;
    t = mmp__bcast_cost(c, p, m, X, G, nm);
    /* Prefer the earlier (simpler) candidate unless clearly better. */
    if (t < best * 0.97) {
      best = t;
      *alg = c;
      *seg = c == MMP_BCAST_PIPELINE ? pseg : 0;
      *groups = c == MMP_BCAST_HIERARCHICAL ? G : 0;
    }
  }
}

void mmp__bcast_choose(int p, size_t len, const mmp__netmodel_t *nm, int *alg,
                       size_t *seg, int *groups) {
  /* Inside the hierarchical cost, sub-choices are flat (no recursion). */
  static _Thread_local int depth;

  depth++;
  choose(p, len, nm, depth == 1, alg, seg, groups);
  depth--;
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
  return 1;
}

/* Best half round trip of `n`-byte ping-pongs between ranks 0 and 1. */
static int pingpong(mmp__engine_t *e, mmp_comm_t *c, int tag, size_t n,
                    int reps, double *best) {
  uint8_t *b = calloc(n ? n : 1, 1);
  int me = c->rank, peer = 1 - me, i, rc = 0;

  if (b == NULL)
    return MMP_ENOMEM;
  *best = INFINITY;
  for (i = 0; i < reps && rc == 0; i++) {
    mmp_request_t r;
    double t0 = mmp_wtime();
    memset(&r, 0, sizeof(r));
    if (me == 0) {
      rc = mmp__isend(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag,
                      MMP_SEND_AUTO, &r);
      if (rc == 0)
        rc = mmp__wait_internal(e, &r);
      memset(&r, 0, sizeof(r));
      if (rc == 0)
        rc = mmp__irecv(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag,
                        &r);
      if (rc == 0)
        rc = mmp__wait_internal(e, &r);
    } else {
      rc =
          mmp__irecv(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag, &r);
      if (rc == 0)
        rc = mmp__wait_internal(e, &r);
      memset(&r, 0, sizeof(r));
      if (rc == 0)
        rc = mmp__isend(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag,
                        MMP_SEND_AUTO, &r);
      if (rc == 0)
        rc = mmp__wait_internal(e, &r);
    }
    if ((mmp_wtime() - t0) / 2 < *best)
      *best = (mmp_wtime() - t0) / 2;
  }
  free(b);
  return rc;
}

int mmp__netmodel_get(mmp_comm_t *comm, mmp__netmodel_t *out) {
  mmp__engine_t *e = mmp__eng;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  double model[2] = {0, 0}, small, large;
  uint32_t seq;
  int rc = 0;

  if (env_model(out))
    return 0;
  if (comm->net_known) {
    out->alpha = comm->net_alpha;
    out->beta = comm->net_beta;
    return 0;
  }
  if (comm->size < 2) {
    out->alpha = 1e-6;
    out->beta = 1e-10;
    return 0;
  }
  uv_mutex_lock(&e->lock);
  seq = comm->coll_seq++;
  uv_mutex_unlock(&e->lock);
  if (comm->rank < 2) {
    int tag = MMP__COLL_TAG(seq, MMP__PHASE_SYS + 1);
    rc = pingpong(e, comm, tag, 1, 20, &small);
    if (rc == 0)
      rc = pingpong(e, comm, tag, 65536, 4, &large);
    if (rc == 0 && comm->rank == 0) {
      model[0] = small > 1e-7 ? small : 1e-7;
      model[1] = (large - small) / 65536.0;
      if (model[1] < 1e-12)
        model[1] = 1e-12;
    }
  }
  /* Every rank must decide alike: rank 0's numbers are the numbers. */
  o.algorithm = MMP_BCAST_BINOMIAL;
  if (rc == 0)
    rc = mmp_bcast_ex(model, sizeof(model), 0, comm, &o);
  if (rc != 0)
    return rc;
  comm->net_alpha = model[0];
  comm->net_beta = model[1];
  comm->net_known = 1;
  out->alpha = model[0];
  out->beta = model[1];
  MMP__LOG(MMP__LOG_DEBUG, "network model: alpha %.1f us, beta %.3f ns/byte",
           model[0] * 1e6, model[1] * 1e9);
  return 0;
}
