/* SPDX-License-Identifier: MIT */
/*
 * Binary tree broadcast ([Hasanov et al. 2015], section 2.1.4).
 *
 * In virtual ranks, v receives from (v - 1) / 2 and sends to 2v + 1 and
 * 2v + 2. Each level costs two messages from the last rank of the level
 * above:
 *   2 (log2(p + 1) - 1)(alpha + m beta).
 * With segments it becomes a pipelined binary tree: a rank's link carries
 * every segment twice, so for large messages it tends to 2 m beta.
 *
 * Selected: rarely; the binomial tree has half its latency for small
 * messages and the pipelined chain beats it for large ones.
 */
#include "collectives/bcast/bcast.h"

static int binary_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, v, parent, nk = 0, kids[2];

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, n);
  parent = v > 0 ? mmp__rrank((v - 1) / 2, a->root, n) : -1;
  if (2 * v + 1 < n)
    kids[nk++] = mmp__rrank(2 * v + 1, a->root, n);
  if (2 * v + 2 < n)
    kids[nk++] = mmp__rrank(2 * v + 2, a->root, n);
  return mmp__tree_forward(s, a, parent, kids, nk, 0, a->len, a->phase);
}

static double binary_cost(const mmp__cost_in_t *in) {
  double levels = mmp__lg2(in->p + 1.0);

  return 2 * (levels - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

/* A rank forwards each byte to two children. */
static double binary_link_bytes(int p, double m) {
  (void)p;
  return 2 * m;
}

const mmp__alg_t mmp__bcast_binary_alg = {
    .name = "binary",
    .summary = "binary tree, pipelined in segments",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_PART,
    .prefer = 2,
    .build = binary_build,
    .cost = binary_cost,
    .link_bytes = binary_link_bytes,
};
