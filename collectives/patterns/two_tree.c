/* SPDX-License-Identifier: MIT */
/*
 * The two trees of Sanders, Speck and Träff ("Two-tree algorithms for
 * full bandwidth broadcast, reduction and scan", Parallel Computing 2009),
 * which the two-tree broadcast and allreduce run.
 *
 * The ranks other than the root (virtual ranks 1 .. n, n = p - 1) form
 * two binary trees. T1 numbers them in order: position x sits at height
 * ctz(x), its children at x -/+ 2^(ctz(x) - 1), so the leaves are the odd
 * positions. T2 is T1 mirrored (rank v at position n + 1 - v) when n is
 * even, shifted by one (v at v mod n + 1) when n is odd: either way a rank
 * at an odd position in one tree is at an even one in the other, so every
 * rank is interior in at most one tree and sends at most m bytes, not the
 * 2 m of a single binary tree. The root heads both trees, the first half
 * of the region going down (or up) T1 and the second T2.
 */
#include <math.h>

#include "collectives/patterns/two_tree.h"

/* The pipelined chain's floor: smaller segments only add latency. */
#define TWO_TREE_SEG_MIN 4096

/* T1's root among positions 1 .. n: the largest power of two <= n. */
static int tt_top(int n) {
  int r = 1;

  while (r <= n / 2)
    r *= 2;
  return r;
}

/* The parent of position x in T1 over 1 .. n, 0 for its root. A parent
 * beyond n is absent and x takes its place, so look further up. */
static int tt_parent(int x, int n) {
  int lb = x & -x, up;

  if (x == tt_top(n))
    return 0;
  for (;;) {
    up = (x & 2 * lb) ? x - lb : x + lb;
    if (up <= n)
      return up;
    x = up;
    lb *= 2;
  }
}

/* The children of position x in T1 over 1 .. n: below x, and above x the
 * highest-placed position that exists. Returns how many. */
static int tt_kids(int x, int n, int kids[2]) {
  int lb = x & -x, c, nk = 0;

  if (lb == 1)
    return 0;
  kids[nk++] = x - lb / 2;
  for (c = lb / 2; c > 0 && x + c > n; c /= 2)
    ;
  if (c > 0)
    kids[nk++] = x + c;
  return nk;
}

/* Virtual rank v's position in tree t (0: T1, 1: T2), and back. */
static int tt_pos(int t, int v, int n) {
  if (t == 0)
    return v;
  return n % 2 == 0 ? n + 1 - v : v % n + 1;
}

static int tt_rank(int t, int x, int n) {
  if (t == 0)
    return x;
  return n % 2 == 0 ? n + 1 - x : (x == 1 ? n : x - 1);
}

int mmp__two_tree_links(int t, int v, int n, int *parent, int kids[2]) {
  int x, px, nk, i;

  if (v == 0) {
    *parent = -1;
    kids[0] = tt_rank(t, tt_top(n), n);
    return 1;
  }
  x = tt_pos(t, v, n);
  px = tt_parent(x, n);
  *parent = px ? tt_rank(t, px, n) : 0;
  nk = tt_kids(x, n, kids);
  for (i = 0; i < nk; i++)
    kids[i] = tt_rank(t, kids[i], n);
  return nk;
}

int mmp__two_tree_run(mmp__sched_t *s, const mmp__arg_t *a,
                      mmp__two_tree_half_fn half) {
  const mmp__group_t *g = a->g;
  int n = g->n - 1, v, t, rc, i, done = -1;
  size_t es = a->esize ? a->esize : 1, h0 = a->len / es / 2 * es;
  size_t off[2] = {0, h0}, len[2] = {h0, a->len - h0};

  if (g->me < 0 || n < 1)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, g->n);
  for (t = 0; t < 2; t++) {
    int kids[2], parent, nk = mmp__two_tree_links(t, v, n, &parent, kids);
    mmp__arg_t h = *a;
    for (i = 0; i < nk; i++)
      kids[i] = mmp__rrank(kids[i], a->root, g->n);
    if (parent >= 0)
      parent = mmp__rrank(parent, a->root, g->n);
    /* Only tree 0's first messages carry the header: with p = 2 both
     * trees join the same pair of ranks. */
    h.first = a->first && t == 0;
    rc = half(s, &h, t, parent, kids, nk, off[t], len[t]);
    if (rc < 0)
      return rc;
    if (done >= 0 && (i = mmp__sched_dep(s, rc, done)) != 0)
      return i;
    if (done < 0)
      done = rc;
  }
  return done;
}

/* Steps from the root to the deepest leaf: one hop to a tree's root, then
 * two a level below it (a parent serves its two children in turn). */
static double tt_depth(int p) {
  return 2 * ceil(mmp__lg2(p));
}

double mmp__two_tree_time(int p, double m, double X, const mmp_netmodel_t *nm) {
  if (p < 2)
    return 0;
  if (X < 1)
    X = 1;
  return (X + tt_depth(p)) * (nm->alpha + m / X * nm->beta);
}

size_t mmp__two_tree_segment(int p, size_t len, size_t esize,
                             const mmp_netmodel_t *nm) {
  double m = (double)len, X, seg;

  if (p < 3 || nm->alpha <= 0)
    return 0;
  X = sqrt(tt_depth(p) * m * nm->beta / nm->alpha);
  seg = X > 1 ? m / X : m;
  if (seg < TWO_TREE_SEG_MIN)
    seg = TWO_TREE_SEG_MIN;
  if (seg >= m / 2)
    return 0;
  return (size_t)seg - (size_t)seg % (esize ? esize : 1);
}
