/* SPDX-License-Identifier: MIT */
/*
 * Two-tree broadcast (Sanders, Speck and Träff, "Two-tree algorithms for
 * full bandwidth broadcast, reduction and scan", Parallel Computing 2009).
 *
 * The ranks other than the root (virtual ranks 1 .. n, n = p - 1) form
 * two binary trees. T1 numbers them in order: position x sits at height
 * ctz(x), its children at x -/+ 2^(ctz(x) - 1), so the leaves are the odd
 * positions. T2 is T1 mirrored (rank v at position n + 1 - v) when n is
 * even, shifted by one (v at v mod n + 1) when n is odd: either way a rank
 * at an odd position in one tree is at an even one in the other, so every
 * rank is interior in at most one tree and sends at most m bytes, not the
 * 2 m of a single binary tree. The root sends the first half of the
 * message to T1's root and the second half to T2's, and each half flows
 * down its tree pipelined in segments.
 *
 * With X segments in all, a rank takes in one segment a step (one from
 * each tree in turn) and the last one leaves the root about X steps after
 * the first; the first reaches the deepest leaf after at most
 * 2 ceil(log2 p) steps (a parent serves its two children in turn):
 *   (X + 2 ceil(log2 p))(alpha + (m / X) beta),
 * least at X = sqrt(2 ceil(log2 p) m beta / alpha), where it is
 *   m beta + 2 ceil(log2 p) alpha + 2 sqrt(2 ceil(log2 p) alpha beta m):
 * the full bandwidth of the pipelined chain with a latency logarithmic in
 * p instead of linear.
 *
 * Selected: by AUTO where that price is lowest (medium and long messages
 * on many ranks).
 */
#include <math.h>

#include "collectives/bcast/bcast.h"

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

/* Virtual rank v's links in tree t (0: T1, 1: T2) over virtual ranks
 * 0 .. n, 0 the root above both trees: *parent (-1 for v = 0) and the
 * children in `kids`. Returns how many children. The two-tree allreduce
 * runs the same trees. */
int mmp__two_tree_links(int t, int v, int n, int *parent, int kids[2]);
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

static int two_tree_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n - 1, v, t, rc, i, done = -1;
  size_t es = a->esize ? a->esize : 1, half = a->len / es / 2 * es;
  size_t off[2] = {0, half}, len[2] = {half, a->len - half};

  if (g->me < 0 || n < 1)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, g->n);
  for (t = 0; t < 2; t++) {
    int kids[2], parent, nk = mmp__two_tree_links(t, v, n, &parent, kids);
    mmp__arg_t h;
    for (i = 0; i < nk; i++)
      kids[i] = mmp__rrank(kids[i], a->root, g->n);
    if (parent >= 0)
      parent = mmp__rrank(parent, a->root, g->n);
    /* One phase per tree: a pair of ranks may be parent and child in
     * both, and each tree's segments must match in its own order. Only
     * tree 0's first messages carry the header, for the same reason. */
    h = *a;
    h.first = a->first && t == 0;
    rc = mmp__tree_forward(s, &h, parent, kids, nk, off[t], len[t],
                           a->phase + t);
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
 * two a level below it. */
static double two_tree_depth(int p) {
  return 2 * ceil(mmp__lg2(p));
}

static double two_tree_cost(const mmp__cost_in_t *in) {
  double X = in->X < 1 ? 1 : in->X;

  if (in->p < 2)
    return 0;
  return (X + two_tree_depth(in->p)) *
         (in->nm->alpha + in->m / X * in->nm->beta);
}

/* The optimum of the cost above, X = sqrt(depth m beta / alpha), as a
 * segment of at least TWO_TREE_SEG_MIN bytes, on an element; 0: whole.
 * The two-tree allreduce, whose price is twice this one's, cuts its
 * vector the same way. */
size_t mmp__two_tree_segment(int p, size_t len, size_t esize,
                             const mmp_netmodel_t *nm);
size_t mmp__two_tree_segment(int p, size_t len, size_t esize,
                             const mmp_netmodel_t *nm) {
  double m = (double)len, X, seg;

  if (p < 3 || nm->alpha <= 0)
    return 0;
  X = sqrt(two_tree_depth(p) * m * nm->beta / nm->alpha);
  seg = X > 1 ? m / X : m;
  if (seg < TWO_TREE_SEG_MIN)
    seg = TWO_TREE_SEG_MIN;
  if (seg >= m / 2)
    return 0;
  return (size_t)seg - (size_t)seg % (esize ? esize : 1);
}

/* The segment where the caller gave none: the optimum under the model. */
static int two_tree_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  mmp_netmodel_t nm;
  int rc;

  if (d->seg != 0)
    return 0;
  if ((rc = mmp__env_model(env, &nm)) != 0)
    return rc;
  d->seg = mmp__two_tree_segment(env->p, (size_t)d->count, 1, &nm);
  return 0;
}

/* An interior rank sends its half twice; every rank takes in m. */
static double two_tree_link_bytes(int p, double m) {
  (void)p;
  return m;
}

const mmp__alg_t mmp__bcast_two_tree_alg = {
    .name = "two_tree",
    .summary = "halves down two complementary binary trees, pipelined",
    .takes = MMP_OPT_SEGMENT,
    /* By name only: its price undercuts the chain's and the ring's in
     * models where it measured slower (docs/algorithms.md). */
    .flags = MMP__ALG_SEGMENTED,
    .prefer = 12,
    .build = two_tree_build,
    .cost = two_tree_cost,
    .link_bytes = two_tree_link_bytes,
    .segment = mmp__two_tree_segment,
    .resolve = two_tree_resolve,
};
