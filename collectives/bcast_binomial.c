/* SPDX-License-Identifier: MIT */
/*
 * Binomial tree broadcast (seed 001, section 2.1.6).
 *
 * In virtual ranks (relative to the root), v receives from v minus its
 * lowest set bit and sends to v + 2^j for every 2^j below that bit, the
 * largest subtree first. The number of ranks holding the message doubles
 * each round:
 *   ceil(log2 p) (alpha + m beta).
 * With segments each rank forwards segment k while receiving k + 1 (a
 * pipelined binomial tree, as in Open MPI).
 *
 * Selected: for small messages, where log2 p latencies beat every other
 * shape; and inside the groups of the hierarchical broadcast.
 */
#include <stdlib.h>

#include "tree_common.h"

int mmp__bcast_binomial(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, v, mask, parent = -1, nk = 0, rc;
  int kids[32];

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, n);
  for (mask = 1; mask < n; mask <<= 1) {
    if (v & mask) {
      parent = mmp__rrank(v - mask, a->root, n);
      break;
    }
  }
  /* Children: below the bit that names our parent, largest first. */
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n)
      kids[nk++] = mmp__rrank(v + mask, a->root, n);
  rc = mmp__tree_forward(s, a, parent, kids, nk, 0, a->len, a->phase);
  return rc;
}
