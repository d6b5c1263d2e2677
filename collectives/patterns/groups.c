/* SPDX-License-Identifier: MIT */
/*
 * Groups of ranks that several algorithms cut alike: runs of consecutive
 * members (the hierarchical and node broadcasts), and the hierarchical
 * groups of the reductions.
 */
#include "collectives/patterns/groups.h"

int mmp__group_start(int p, int G, int g) {
  int base = p / G, extra = p % G;

  assert(G >= 1 && g >= 0 && g <= G);
  return g * base + (g < extra ? g : extra);
}

int mmp__hier_size(int n) {
  int G = (int)ceil(sqrt((double)n));

  return G > 0 ? (n + G - 1) / G : 1;
}

void mmp__hier_groups(const mmp__arg_t *a, int troot, int sz, int *inner,
                      mmp__group_t *gi, int *outer, mmp__group_t *go) {
  int n = a->g->n, v = mmp__vrank(a->g->me, troot, n), k = v / sz, i;
  int lo = k * sz, hi = lo + sz < n ? lo + sz : n;

  gi->n = hi - lo;
  gi->me = v - lo;
  gi->ranks = inner;
  for (i = lo; i < hi; i++)
    inner[i - lo] = a->g->ranks[mmp__rrank(i, troot, n)];
  go->n = (n + sz - 1) / sz;
  go->me = v % sz == 0 ? k : -1;
  go->ranks = outer;
  for (i = 0; i < go->n; i++)
    outer[i] = a->g->ranks[mmp__rrank(i * sz, troot, n)];
}
