/* SPDX-License-Identifier: MIT */
/*
 * Groups of ranks as algorithms see them: virtual ranks relative to a
 * root, runs of consecutive members, the hierarchical groups of about
 * sqrt(n) members, and the fold of a non-power of two that recursive
 * algorithms start with (groups.c).
 */
#ifndef MMP_COLLECTIVES_PATTERNS_GROUPS_H
#define MMP_COLLECTIVES_PATTERNS_GROUPS_H

#include <math.h>

#include "collectives/core/alg.h"

/* ceil(log2 x), 0 for x <= 1: the rounds of a doubling tree. */
static inline double mmp__lg2(double x) {
  return x <= 1 ? 0 : ceil(log2(x));
}

/* Virtual rank of member i when the root is member `root`: (i - root) mod
 * n; and back. */
static inline int mmp__vrank(int i, int root, int n) {
  return (i - root + n) % n;
}
static inline int mmp__rrank(int v, int root, int n) {
  return (v + root) % n;
}

/* Largest power of two not above n (n >= 1). */
static inline int mmp__pow2_floor(int n) {
  int q = 1;

  while (q * 2 <= n)
    q *= 2;
  return q;
}

/* Recursive algorithms over a non-power of two n: with q =
 * mmp__pow2_floor(n) and rem = n - q, members 2k and 2k + 1 (k < rem)
 * fold into one virtual rank k, held by the odd one; the others are
 * virtual ranks i - rem. Virtual order is member order. */
static inline int mmp__fold_v(int i, int n) {
  int rem = n - mmp__pow2_floor(n);

  if (i < 2 * rem)
    return i % 2 ? i / 2 : -1;
  return i - rem;
}
static inline int mmp__fold_m(int v, int n) {
  int rem = n - mmp__pow2_floor(n);

  return v < rem ? 2 * v + 1 : v + rem;
}

/* p members cut into G runs of consecutive members, the first p mod G of
 * them one member larger: the first member of run g (g = G: p). */
int mmp__group_start(int p, int G, int g);

/* Hierarchical groups: the group size for n members (about sqrt(n)), and
 * the members of this rank's group and the leaders (every sz-th virtual
 * rank from troot), into inner[] and outer[] (n entries each); gi->me
 * and go->me are -1 where this rank is not one. */
int mmp__hier_size(int n);
void mmp__hier_groups(const mmp__arg_t *a, int troot, int sz, int *inner,
                      mmp__group_t *gi, int *outer, mmp__group_t *go);

#endif /* MMP_COLLECTIVES_PATTERNS_GROUPS_H */
