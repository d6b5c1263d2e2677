/* SPDX-License-Identifier: MIT */
/*
 * Automatic choice of an s-to-p algorithm from the network model
 * (select/netmodel.c), a pure function of the lengths and the model.
 *
 * The direct algorithms are priced by their formulas (in their files);
 * the multicast row only where multicast works (select/mcast.c). The
 * round-based ones are priced by running their plan without a schedule:
 * every round costs its busiest rank's alpha + bytes beta summed over its
 * sends or over its receives, so the price sees the actual distribution
 * of sources, the actual lengths, the grid and the merging, exactly as
 * the schedule will run them (in lock step, which the dependency-driven
 * execution can only beat). The pick is AUTO's for every collective
 * (select/auto.c): the cheapest, a candidate 3% cheaper to displace one
 * listed before it. Every rank computes the same from the same lengths.
 */
#include <math.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

double mmp__s2p_price(const mmp__alg_t *a, const mmp__cost_in_t *in) {
  if (a->plan != NULL)
    return mmp__s2p_plan_cost(a->plan, in->x, in->nm);
  return a->cost != NULL ? a->cost(in) : INFINITY;
}
