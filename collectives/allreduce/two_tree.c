/* SPDX-License-Identifier: MIT */
/*
 * Two-tree allreduce (the reduction of Sanders, Speck and Träff 2009 run
 * up the two-tree broadcast's trees, then that broadcast down them, as
 * NCCL's tree algorithm does).
 *
 * The vector is cut in two halves. Half t is reduced up tree t of the
 * two-tree broadcast (patterns/two_tree.c: two complementary in-order
 * binary trees over ranks 1 .. p - 1, below rank 0), pipelined in
 * segments, to
 * rank 0, which then broadcasts it down the same tree. A rank is interior
 * in at most one tree, so each link carries about m up and m down:
 *   2 (X + 2 ceil(log2 p))(alpha + (m / X) beta) + m gamma
 * with X segments in all, at the broadcast's optimum
 * X = sqrt(2 ceil(log2 p) m beta / alpha). A rank combines its children's
 * results on the right of its own, which is not rank order: commutative
 * operations only.
 *
 * Selected: by name only (below), in the broadcast's optimal segment
 * where the caller gives none (`segment`, as for every SEGMENTED row).
 */
#include "collectives/allreduce/allreduce.h"
#include "collectives/patterns/two_tree.h"

#define PHASE_UP 0
#define PHASE_DOWN 2

/* Half t up tree t into this rank's accumulator, then down the same tree
 * into it: every op of the way down waits until this rank's way up is
 * done. */
static int two_tree_half(mmp__sched_t *s, const mmp__arg_t *h, int t,
                         int parent, const int *kids, int nkids, size_t off,
                         size_t len) {
  mmp__arg_t up = *h, down = *h;
  int from = s->nops, done, dn, k, rc;

  up.off = h->off + off;
  up.len = len;
  done = mmp__reduce_tree(s, &up, parent, kids, nkids, h->phase + PHASE_UP + t);
  if (done < 0)
    return done;
  if ((done = mmp__coll_after_all(s, from)) < 0)
    return done;
  k = s->nops;
  down.first = 0;
  down.dep = done;
  dn = mmp__tree_forward(s, &down, parent, kids, nkids, off, len,
                         h->phase + PHASE_DOWN + t);
  if (dn < 0)
    return dn;
  for (; k < s->nops; k++)
    if (k != done && (rc = mmp__sched_dep(s, done, k)) != 0)
      return rc;
  return dn;
}

static int two_tree_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return mmp__two_tree_run(s, a, two_tree_half);
}

static double two_tree_cost(const mmp__cost_in_t *in) {
  if (in->p < 2)
    return 0;
  return 2 * mmp__two_tree_time(in->p, in->m, in->X, in->nm) +
         in->m * in->nm->gamma;
}

/* Each link carries the vector up once and down once. */
static double two_tree_link_bytes(int p, double m) {
  (void)p;
  return 2 * m;
}

const mmp__alg_t mmp__allreduce_two_tree_alg = {
    .name = "two_tree",
    .summary = "halves reduced up two complementary binary trees, then "
               "broadcast down them",
    .takes = MMP_OPT_SEGMENT,
    /* By name only: its price undercuts the chain's and the ring's in
     * models where it measured slower (docs/algorithms.md). */
    .flags = MMP__ALG_SEGMENTED,
    .prefer = 6,
    .build = two_tree_build,
    .cost = two_tree_cost,
    .link_bytes = two_tree_link_bytes,
    .segment = mmp__two_tree_segment,
};
