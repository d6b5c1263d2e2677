/* SPDX-License-Identifier: MIT */
/*
 * k-nomial tree broadcast: the binomial tree with radix k (Open MPI 4.1
 * has it as coll_tuned_bcast_algorithm 7, radix 4 by default).
 *
 * Write virtual ranks (relative to the root) in base k. Rank v receives
 * from v with its lowest nonzero digit cleared, and sends to v + j k^i for
 * every digit position i below that digit and j = 1 .. k - 1, the highest
 * position first (largest subtrees first). ceil(log_k p) rounds; in each
 * a rank holding the message sends it k - 1 times:
 *   (k - 1) ceil(log_k p) (alpha + m beta).
 * Hockney's model prices that above the binomial tree (k = 2) for every
 * k > 2. The tree pays where a hop's cost is mostly waiting rather than
 * sending, as where ranks share CPUs: a shallower tree waits fewer times
 * (docs/algorithms.md, "k-nomial tree"). Segments pipeline as in the
 * binomial tree.
 *
 * Selected: by AUTO, with radix 3, in place of the binomial tree for small
 * messages where ranks share CPUs (bcast_choose.c); otherwise when asked
 * for (MMP_BCAST_KNOMIAL, opts.radix). Not inside hierarchical groups or
 * arrival-aware rounds, whose options carry no radix.
 */
#include "collectives/bcast/bcast.h"

/* Rounds of a radix-k tree over p ranks: ceil(log_k p). */
static double knomial_rounds(int p, int k) {
  double r = 0, reach = 1;

  while (reach < p) {
    reach *= k;
    r++;
  }
  return r;
}

/* Hockney's price, at the default radix: above the binomial tree's for
 * every radix above 2, which is why AUTO takes it only by rule
 * (bcast_choose.c). */
static double knomial_cost(const mmp__cost_in_t *in) {
  int k = MMP__RADIX_DEFAULT;

  return (k - 1) * knomial_rounds(in->p, k) *
         (in->nm->alpha + in->m * in->nm->beta);
}

/* The radix asked for, else (and for AUTO's pick) the default. */
static int knomial_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  (void)env;
  if (d->radix == 0)
    d->radix = MMP__RADIX_DEFAULT;
  return 0;
}

const mmp__alg_t mmp__bcast_knomial_alg = {
    .name = "knomial",
    .summary = "k-nomial tree of radix opts.radix",
    .takes = MMP_OPT_SEGMENT | MMP_OPT_RADIX,
    .build = mmp__tree_knomial,
    .cost = knomial_cost,
    .resolve = knomial_resolve,
};
