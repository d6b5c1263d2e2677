/* SPDX-License-Identifier: MIT */
/*
 * Split-binary tree broadcast ([Hasanov et al. 2015], section 2.1.5).
 *
 * The root cuts the message in two halves. The first half travels down the
 * left subtree of a binary tree (virtual ranks under 1), the second down
 * the right subtree (under 2), each pipelined in segments. Then each rank
 * of the left subtree swaps halves with its partner in the right one (the
 * j-th in breadth-first order pairs with the j-th). When the subtrees
 * differ in size, the root sends the missing half straight to the ranks
 * left without a partner. On a full tree (p = 2^h - 1):
 *   2 (log2(p + 1) - 2)(alpha + m beta) + alpha + (m / 2) beta.
 *
 * Selected: for medium messages at moderate p, when it beats both the
 * binomial tree and the pipelines under the model.
 */
#include "collectives/bcast/bcast.h"

/* 1 for the left subtree, 2 for the right, 0 for the root. */
static int side_of(int v) {
  if (v == 0)
    return 0;
  while (v > 2)
    v = (v - 1) / 2;
  return v;
}

/* How many of the virtual ranks 1 .. upto - 1 lie on `side`: level d
 * (ranks 2^d - 1 .. 2^(d+1) - 2) has its first half on the left. */
static int side_count(int side, int upto) {
  long long d, lo, half, a, b;
  int count = 0;

  for (d = 1; (lo = (1ll << d) - 1) < upto; d++) {
    half = 1ll << (d - 1);
    a = side == 1 ? lo : lo + half;
    b = a + half < upto ? a + half : upto; /* [a, b) */
    count += b > a ? (int)(b - a) : 0;
  }
  return count;
}

/* The j-th virtual rank (from 0, breadth-first) on `side`. */
static int side_nth(int side, int j) {
  long long d, half;

  for (d = 1;; d++) {
    half = 1ll << (d - 1);
    if (j < half)
      return (int)((1ll << d) - 1 + (side == 1 ? 0 : half) + j);
    j -= (int)half;
  }
}

static int split_binary_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, v, side, j, nl, nr, i, rc, have, done;
  size_t ha = a->len / 2, hb = a->len - ha;
  size_t my_off, my_len, other_off, other_len;
  int kids[2], nk = 0, parent, partner = -1;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, n);
  side = side_of(v);
  j = side_count(side, v);
  nl = side_count(1, n);
  nr = side_count(2, n);
  if (v == 0) {
    /* Forward each half into its subtree, then serve the unpaired. */
    mmp__arg_t h = *a;
    if (n > 1) {
      kids[0] = mmp__rrank(1, a->root, n);
      rc = mmp__tree_forward(s, &h, -1, kids, 1, 0, ha, a->phase);
      if (rc < 0)
        return rc;
    }
    if (n > 2) {
      kids[0] = mmp__rrank(2, a->root, n);
      rc = mmp__tree_forward(s, &h, -1, kids, 1, ha, hb, a->phase);
      if (rc < 0)
        return rc;
    }
    for (i = 1; i < n; i++) {
      int si = side_of(i), ji = side_count(si, i);
      if (ji < (si == 1 ? nr : nl))
        continue; /* has a partner */
      rc = mmp__bcast_send(s, a, mmp__rrank(i, a->root, n), si == 1 ? ha : 0,
                           si == 1 ? hb : ha, a->phase + 2, a->dep);
      if (rc < 0)
        return rc;
    }
    return mmp__bcast_done(s, a->dep);
  }
  my_off = side == 1 ? 0 : ha;
  my_len = side == 1 ? ha : hb;
  other_off = side == 1 ? ha : 0;
  other_len = side == 1 ? hb : ha;
  parent = mmp__rrank((v - 1) / 2, a->root, n);
  if (2 * v + 1 < n)
    kids[nk++] = mmp__rrank(2 * v + 1, a->root, n);
  if (2 * v + 2 < n)
    kids[nk++] = mmp__rrank(2 * v + 2, a->root, n);
  have = mmp__tree_forward(s, a, parent, kids, nk, my_off, my_len, a->phase);
  if (have < 0)
    return have;
  if (j < (side == 1 ? nr : nl)) {
    /* Partner: the j-th rank of the other subtree, breadth-first. */
    partner = mmp__rrank(side_nth(3 - side, j), a->root, n);
    rc = mmp__bcast_send(s, a, partner, my_off, my_len, a->phase + 1, have);
    if (rc < 0)
      return rc;
    done = mmp__bcast_recv(s, a, partner, other_off, other_len, a->phase + 1);
  } else {
    done = mmp__bcast_recv(s, a, a->root, other_off, other_len, a->phase + 2);
  }
  if (done < 0)
    return done;
  rc = mmp__bcast_done(s, have);
  if (rc >= 0 && (i = mmp__sched_dep(s, done, rc)) != 0)
    return i;
  return rc;
}

/* [Hasanov et al. 2015] gives 2 (log2(p + 1) - 2)(a + m b) + a + m b / 2, which
 * leaves out the root's own two sends (it is a + m b / 2 at p = 3, far below
 * any real broadcast). Counted as run: h = ceil(log2(p + 1)) - 1 levels, each
 * two sends of a half, then one exchange of a half. */
static double split_binary_cost(const mmp__cost_in_t *in) {
  double h = mmp__lg2(in->p + 1.0) - 1;

  return (2 * h + 1) * (in->nm->alpha + in->m / 2 * in->nm->beta);
}

/* Two halves down, one half across. */
static double split_binary_link_bytes(int p, double m) {
  (void)p;
  return 1.5 * m;
}

const mmp__alg_t mmp__bcast_split_binary_alg = {
    .name = "split_binary",
    .summary = "halves down two binary subtrees, then pairs exchange them",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_PART,
    .prefer = 3,
    .build = split_binary_build,
    .cost = split_binary_cost,
    .link_bytes = split_binary_link_bytes,
};
