/* SPDX-License-Identifier: MIT */
/*
 * Automatic choice of an s-to-p algorithm from the Hockney model that
 * broadcast selection measures (mmp__netmodel_get in select.c).
 *
 * 2-Step, PersAlltoAll and the ring are priced by their formulas (see
 * their files). The round-based algorithms are priced by running their
 * plan without a schedule: every round costs its busiest rank's
 * alpha + bytes beta summed over its sends or over its receives, so the
 * price sees the actual distribution of sources, the actual lengths, the
 * grid and the merging, exactly as the schedule will run them (in lock
 * step, which the dependency-driven execution can only beat). The
 * cheapest wins; a candidate must be 3% cheaper to displace one listed
 * before it. Every rank computes the same from the same lengths.
 */
#include <math.h>
#include <stdlib.h>

#include "s2p.h"

int mmp__s2p_2step_root(const mmp__s2p_t *x) {
  int j, best = 0;

  for (j = 1; j < x->ns; j++)
    if (x->len[j] > x->len[best])
      best = j;
  return x->ns > 0 ? x->src[best] : 0;
}

static double cost_2step(const mmp__s2p_t *x, const mmp__netmodel_t *nm) {
  int root = mmp__s2p_2step_root(x), j, alg;
  size_t seg;
  double t = 0;

  for (j = 0; j < x->ns; j++)
    if (x->src[j] != root && x->len[j] > 0)
      t += nm->alpha + (double)x->len[j] * nm->beta;
  return t + mmp__bcast_choose_flat(x->p, x->total, nm, &alg, &seg);
}

static double cost_direct(int alg, const mmp__s2p_t *x,
                          const mmp__netmodel_t *nm) {
  double a = nm->alpha, b = nm->beta, P = x->p, lmax = 0, lmin = INFINITY;
  double recv = 0;
  int j;

  for (j = 0; j < x->ns; j++) {
    lmax = fmax(lmax, (double)x->len[j]);
    lmin = fmin(lmin, (double)x->len[j]);
    recv += a + (double)x->len[j] * b;
  }
  if (x->ns == 0 || x->p == 1)
    return 0;
  if (alg == MMP_S2P_RING) {
    /* A hop is store-and-forward of one message, but a message that fits
     * in the link's burst allowance crosses an idle hop at once; the
     * links' sustained rate still bounds the whole (each carries about
     * S bytes). */
    double hop = lmax > nm->burst ? lmax - nm->burst : 0;
    double in = (double)x->total - (x->ns == x->p ? lmin : 0);
    /* p - 1 steps of latency; the bytes either wait hop by hop for the
     * largest message, or are bounded by what a rank takes in. */
    return (P - 1) * a + fmax((P - 1) * hop * b, in * b);
  }
  /* PersAlltoAll: a non-source takes in every message; if all are
   * sources, everyone skips its own. */
  if (x->ns == x->p)
    recv -= a + lmin * b;
  return fmax((P - 1) * (a + lmax * b), recv);
}

double mmp__s2p_cost(int alg, const mmp__s2p_t *x, const mmp__netmodel_t *nm) {
  mmp__s2p_builder b;
  mmp__s2p_plan_t pl;
  double t;

  if (alg == MMP_S2P_2STEP)
    return cost_2step(x, nm);
  if (alg == MMP_S2P_ALLTOALL || alg == MMP_S2P_RING)
    return cost_direct(alg, x, nm);
  b = mmp__s2p_builder_of(alg);
  if (b == NULL || mmp__s2p_plan_init(&pl, x, NULL, nm) != 0)
    return INFINITY;
  t = b(&pl) == 0 ? pl.cost : INFINITY;
  mmp__s2p_plan_fini(&pl);
  return t;
}

int mmp__s2p_choose(mmp__s2p_t *x, const mmp__netmodel_t *nm) {
  /* The ring first: it is the simplest, and where the model puts it level
   * with a combining algorithm (long messages, s near p), it is the one
   * that measures at the receive limit. */
  static const int cands[] = {
      MMP_S2P_RING,           MMP_S2P_BR_LIN,          MMP_S2P_BR_XY_SOURCE,
      MMP_S2P_REPOS_LIN,      MMP_S2P_REPOS_XY_SOURCE, MMP_S2P_PART_LIN,
      MMP_S2P_PART_XY_SOURCE, MMP_S2P_BR_XY_DIM,       MMP_S2P_2STEP,
      MMP_S2P_ALLTOALL};
  double best = INFINITY;
  int alg = MMP_S2P_RING;
  size_t i;

  for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
    double t = mmp__s2p_cost(cands[i], x, nm);
    if (t < best * 0.97) {
      best = t;
      alg = cands[i];
    }
  }
  mmp__s2p_bcast_for_2step(x, nm);
  return alg;
}

void mmp__s2p_bcast_for_2step(mmp__s2p_t *x, const mmp__netmodel_t *nm) {
  /* 2-Step runs the broadcast as a plain builder: hierarchical aside. */
  mmp__bcast_choose_flat(x->p, x->total, nm, &x->bc_alg, &x->bc_seg);
}
