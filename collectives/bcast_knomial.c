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
 * sending: on the emulated cluster (16 ranks on 2 shared cores) a hop is
 * mostly waiting for a CPU, and radix 3, one level shallower than the
 * binary tree at p = 16, measured faster than it on both seed 003's max
 * OL_i and the anchors' loop at 1 KiB (performance.md). Segments pipeline
 * as in the binomial tree.
 *
 * Selected: by AUTO, with radix 3, for the small messages the formulas
 * give a tree, where ranks share CPUs (select.c); otherwise when asked
 * for (MMP_BCAST_KNOMIAL, opts.radix).
 */
#include "tree_common.h"

int mmp__bcast_knomial(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, k = a->radix, v, parent = -1, nk = 0, j;
  int kids[(MMP__KNOMIAL_RADIX_MAX - 1) * 32];
  long long d = 1;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  if (k < 2 || k > MMP__KNOMIAL_RADIX_MAX)
    k = MMP__KNOMIAL_RADIX_DEFAULT;
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
