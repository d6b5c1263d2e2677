/* SPDX-License-Identifier: MIT */
/*
 * Automatic choice of an s-to-p algorithm from the network model
 * (netmodel.c), a pure function of the lengths and the model.
 *
 * The direct algorithms are priced by their formulas (in their files);
 * the multicast row only where x->mc says multicast works (s2p.c).
 * The round-based ones are priced by running their plan without a
 * schedule: every round costs its busiest rank's alpha + bytes beta summed
 * over its sends or over its receives, so the price sees the actual
 * distribution of sources, the actual lengths, the grid and the merging,
 * exactly as the schedule will run them (in lock step, which the
 * dependency-driven execution can only beat). The cheapest wins; a
 * candidate must be 3% cheaper to displace one listed before it (the
 * row's `prefer`). Every rank computes the same from the same lengths.
 */
#include "collectives/s2p/s2p.h"

double mmp__s2p_cost(int alg, const mmp__s2p_t *x, const mmp_netmodel_t *nm) {
  const mmp__s2p_alg_t *a = mmp__s2p_alg(alg);

  if (a == NULL || (a->cost == NULL && a->plan == NULL))
    return INFINITY;
  if (a->cost != NULL)
    return a->cost(x, nm);
  return mmp__s2p_plan_cost(a->plan, x, nm);
}

int mmp__s2p_choose(mmp__s2p_t *x, const mmp_netmodel_t *nm) {
  double best = INFINITY;
  int alg = MMP_S2P_RING, rank, id;

  /* Candidates in order of preference; few enough to scan for each. */
  for (rank = 1; rank < MMP_S2P_ALG_COUNT; rank++)
    for (id = 1; id < MMP_S2P_ALG_COUNT; id++) {
      double t;
      if (mmp__s2p_alg(id)->prefer != rank)
        continue;
      t = mmp__s2p_cost(id, x, nm);
      if (t < best * 0.97) {
        best = t;
        alg = id;
      }
    }
  mmp__s2p_bcast_for_2step(x, nm);
  return alg;
}
