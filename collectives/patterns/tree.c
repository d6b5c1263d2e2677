/* SPDX-License-Identifier: MIT */
/*
 * Segmented receive-and-forward over a tree, for the binomial, binary and
 * split-binary broadcasts: one rank's part of the schedule given its parent
 * and children.
 */
#include "collectives/patterns/tree.h"

int mmp__tree_forward(mmp__sched_t *s, const mmp__bcast_arg_t *a, int parent,
                      const int *kids, int nkids, size_t off, size_t len,
                      int phase) {
  size_t nseg = mmp__seg_count(len, a->seg), k, o, n;
  int i, rc, all = mmp__bcast_done(s, parent >= 0 ? -1 : a->dep);

  if (all < 0)
    return all;
  for (k = 0; k < nseg; k++) {
    int have = a->dep;
    mmp__seg_range(len, a->seg, k, &o, &n);
    if (parent >= 0) {
      have = mmp__bcast_recv(s, a, parent, off + o, n, phase);
      if (have < 0)
        return have;
      if (k == 0 && a->first)
        mmp__sched_first(s, have);
      /* Segments need not complete in order (a short last one may go
       * eager and overtake rendezvous ones): wait for each. */
      if ((rc = mmp__sched_dep(s, have, all)) != 0)
        return rc;
    }
    /* Largest subtree first: the kids come in the order to serve them. */
    for (i = 0; i < nkids; i++) {
      int op = mmp__bcast_send(s, a, kids[i], off + o, n, phase, have);
      if (op < 0)
        return op;
      if (k == 0 && a->first)
        mmp__sched_first(s, op);
    }
  }
  return all;
}

int mmp__scatter_binomial(mmp__sched_t *s, const mmp__bcast_arg_t *a,
                          size_t cs) {
  const mmp__group_t *g = a->g;
  int n = g->n, v = mmp__vrank(g->me, a->root, n), mask, have = a->dep;
  size_t off, len;

  /* The subtree of v spans virtual ranks [v, v + lowbit(v)); the root's
   * spans them all. */
  for (mask = 1; mask < n; mask <<= 1)
    if (v & mask)
      break;
  if (v > 0) {
    mmp__chunks(a->len, cs, (size_t)v, (size_t)(v + mask < n ? v + mask : n),
                &off, &len);
    have = mmp__bcast_recv(s, a, mmp__rrank(v - mask, a->root, n), off, len,
                           a->phase);
    if (have < 0)
      return have;
    if (a->first)
      mmp__sched_first(s, have);
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    int c = v + mask, op;
    if (c >= n)
      continue;
    mmp__chunks(a->len, cs, (size_t)c, (size_t)(c + mask < n ? c + mask : n),
                &off, &len);
    op = mmp__bcast_send(s, a, mmp__rrank(c, a->root, n), off, len, a->phase,
                         have);
    if (op < 0)
      return op;
    if (a->first)
      mmp__sched_first(s, op);
  }
  return have >= 0 ? have : mmp__bcast_done(s, a->dep);
}
