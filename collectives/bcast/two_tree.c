/* SPDX-License-Identifier: MIT */
/*
 * Two-tree broadcast (Sanders, Speck and Träff, "Two-tree algorithms for
 * full bandwidth broadcast, reduction and scan", Parallel Computing 2009).
 *
 * The ranks other than the root form two complementary binary trees
 * (patterns/two_tree.c), in which every rank is interior in at most one,
 * so that none sends more than m bytes, not the 2 m of a single binary
 * tree. The root sends the first half of the message to T1's root and
 * the second half to T2's, and each half flows down its tree pipelined in
 * segments.
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
 * Selected: by name only (below).
 */
#include "collectives/bcast/bcast.h"
#include "collectives/patterns/two_tree.h"

/* Half t down tree t, on a phase of its own: a pair of ranks may be
 * parent and child in both trees, and each tree's segments must match in
 * its own order. */
static int two_tree_half(mmp__sched_t *s, const mmp__arg_t *h, int t,
                         int parent, const int *kids, int nkids, size_t off,
                         size_t len) {
  return mmp__tree_forward(s, h, parent, kids, nkids, off, len, h->phase + t);
}

static int two_tree_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return mmp__two_tree_run(s, a, two_tree_half);
}

static double two_tree_cost(const mmp__cost_in_t *in) {
  return mmp__two_tree_time(in->p, in->m, in->X, in->nm);
}

/* An interior rank sends its half twice; every rank takes in m. */
static double two_tree_link_bytes(int p, double m) {
  (void)p;
  return m;
}

/* Without a segment asked for, the call runs in the optimum of the price
 * above (`segment`, as for every SEGMENTED row). */
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
};
