/* SPDX-License-Identifier: MIT */
/*
 * Two-tree allreduce (the reduction of Sanders, Speck and Träff 2009 run
 * up the two-tree broadcast's trees, then that broadcast down them, as
 * NCCL's tree algorithm does).
 *
 * The vector is cut in two halves. Half t is reduced up tree t of the
 * two-tree broadcast (bcast/two_tree.c: two complementary in-order binary
 * trees over ranks 1 .. p - 1, below rank 0), pipelined in segments, to
 * rank 0, which then broadcasts it down the same tree. A rank is interior
 * in at most one tree, so each link carries about m up and m down:
 *   2 (X + 2 ceil(log2 p))(alpha + (m / X) beta) + m gamma
 * with X segments in all, at the broadcast's optimum
 * X = sqrt(2 ceil(log2 p) m beta / alpha). A rank combines its children's
 * results on the right of its own, which is not rank order: commutative
 * operations only.
 *
 * Selected: by AUTO where that price is lowest.
 */
#include <math.h>

#include "collectives/allreduce/allreduce.h"

#define PHASE_UP 0
#define PHASE_DOWN 2

/* The trees and their segment, from the broadcast's file
 * (bcast/two_tree.c). */
int mmp__two_tree_links(int t, int v, int n, int *parent, int kids[2]);
size_t mmp__two_tree_segment(int p, size_t len, size_t esize,
                             const mmp_netmodel_t *nm);

static int two_tree_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n - 1, v, t, rc, done = -1;
  size_t es = a->esize ? a->esize : 1, half = a->len / es / 2 * es;
  size_t off[2] = {0, half}, len[2] = {half, a->len - half};

  if (g->me < 0 || n < 1)
    return mmp__bcast_done(s, a->dep);
  v = g->me;
  for (t = 0; t < 2; t++) {
    int kids[2], parent, nk = mmp__two_tree_links(t, v, n, &parent, kids);
    int from = s->nops, up, down, k;
    mmp__arg_t h = *a, b = *a;
    h.off = a->off + off[t];
    h.len = len[t];
    /* Only tree 0's first messages carry the header: with p = 2 both
     * trees join the same pair of ranks. */
    h.first = a->first && t == 0;
    up = mmp__reduce_tree(s, &h, parent, kids, nk, a->phase + PHASE_UP + t);
    if (up < 0)
      return up;
    /* Down the same tree into the accumulator it sent up from: every op
     * of the way down waits until this rank's way up is done. */
    if ((up = mmp__coll_after_all(s, from)) < 0)
      return up;
    k = s->nops;
    b.first = 0;
    b.dep = up;
    down = mmp__tree_forward(s, &b, parent, kids, nk, off[t], len[t],
                             a->phase + PHASE_DOWN + t);
    if (down < 0)
      return down;
    for (; k < s->nops; k++)
      if (k != up && (rc = mmp__sched_dep(s, up, k)) != 0)
        return rc;
    if (done >= 0 && (rc = mmp__sched_dep(s, down, done)) != 0)
      return rc;
    if (done < 0)
      done = down;
  }
  return done;
}

static double two_tree_cost(const mmp__cost_in_t *in) {
  double X = in->X < 1 ? 1 : in->X, depth = 2 * ceil(mmp__lg2(in->p));

  if (in->p < 2)
    return 0;
  return 2 * (X + depth) * (in->nm->alpha + in->m / X * in->nm->beta) +
         in->m * in->nm->gamma;
}

/* The segment where the caller gave none: the broadcast's optimum, that
 * of this price too (it is twice the broadcast's, plus m gamma). Without
 * it the halves would go up and down whole, a store and forward at every
 * level. */
static int two_tree_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  mmp_netmodel_t nm;
  int rc;

  if (d->seg != 0)
    return 0;
  if ((rc = mmp__env_model(env, &nm)) != 0)
    return rc;
  d->seg = mmp__two_tree_segment(env->p, (size_t)env->m, d->esize, &nm);
  return 0;
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
    .resolve = two_tree_resolve,
};
