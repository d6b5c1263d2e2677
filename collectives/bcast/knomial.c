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
#include "collectives/patterns/tree.h"

static int knomial_build(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, k = a->radix, v, parent = -1, nk = 0, j;
  int kids[(MMP__KNOMIAL_RADIX_MAX - 1) * 32];
  long long d = 1;

  if (k < 2 || k > MMP__KNOMIAL_RADIX_MAX)
    return MMP_EMISMATCH; /* a radix no rank could have asked for */
  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, n);
  /* d: the place value of v's lowest nonzero digit; at the root, the
   * first power of k not below n. */
  while (d < n && (v / d) % k == 0)
    d *= k;
  if (v != 0)
    parent = mmp__rrank(v - (int)((v / d) % k * d), a->root, n);
  for (d /= k; d >= 1; d /= k)
    for (j = 1; j < k; j++)
      if (v + j * d < n)
        kids[nk++] = mmp__rrank(v + (int)(j * d), a->root, n);
  return mmp__tree_forward(s, a, parent, kids, nk, 0, a->len, a->phase);
}

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
static double knomial_cost(const mmp__bcast_cost_in_t *in) {
  int k = MMP__KNOMIAL_RADIX_DEFAULT;

  return (k - 1) * knomial_rounds(in->p, k) *
         (in->nm->alpha + in->m * in->nm->beta);
}

/* AUTO's k-nomial tree has the default radix, whatever opts.radix. */
static int knomial_resolve(mmp__bcast_desc_t *d, const mmp_bcast_opts_t *o,
                           const mmp__bcast_env_t *env) {
  d->radix =
      !env->auto_pick && o->radix > 0 ? o->radix : MMP__KNOMIAL_RADIX_DEFAULT;
  return 0;
}

const mmp__bcast_alg_t mmp__bcast_knomial_alg = {
    .id = MMP_BCAST_KNOMIAL,
    .name = "knomial",
    .build = knomial_build,
    .cost = knomial_cost,
    .resolve = knomial_resolve,
};
