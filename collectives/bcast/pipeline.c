/* SPDX-License-Identifier: MIT */
/*
 * Chain and pipelined chain broadcasts ([Hasanov et al. 2015],
 * sections 2.1.2-2.1.3). Virtual rank v (rank relative to the root) receives
 * from v - 1 and sends to v + 1.
 *
 * Chain: the whole message moves one hop at a time, (p - 1)(alpha + m beta).
 *
 * Pipelined chain: the message is cut into X segments and v forwards
 * segment k as soon as it has it, while it already receives segment k + 1
 * on the other direction of its full-duplex link:
 *   (p - 1)(alpha + (m / X) beta) + (X - 1)(g + (m / X) beta),
 * the first segment paying a latency per hop and each later one a gap g
 * (mmp__net_gap: one more message sent back to back) behind it; with
 * g = alpha, Hasanov's (X + p - 2)(alpha + (m / X) beta). The segment
 * count stays that formula's optimum, X = sqrt((p - 2) m beta / alpha),
 * which the benchmarks bear out (docs/design/auto.md). As X grows the time
 * tends to m beta, the link time, which no broadcast can beat: every rank
 * must take in all m bytes through its own link.
 *
 * Selected: for large messages, where the bandwidth term dominates, and
 * for messages that fit a burst allowance where the symmetric broadcast
 * does not price clearly below it (the sizes: docs/algorithms.md,
 * "Automatic selection"); the segment size comes from the model's optimal
 * X (at least 4 KiB).
 */
#include <math.h>

#include "collectives/bcast/bcast.h"

/* A chain is a tree in which every rank has one child. */
static int chain(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int v, prev, next;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, g->n);
  prev = v > 0 ? mmp__rrank(v - 1, a->root, g->n) : -1;
  next = v + 1 < g->n ? mmp__rrank(v + 1, a->root, g->n) : -1;
  return mmp__tree_forward(s, a, prev, &next, next >= 0, 0, a->len, a->phase);
}

static int chain_build(mmp__sched_t *s, const mmp__arg_t *a) {
  mmp__arg_t whole = *a;

  whole.seg = 0;
  return chain(s, &whole);
}

static double chain_cost(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

/* The first segment crosses p - 1 hops at alpha each; every later one
 * follows it a gap behind (mmp__net_gap), not a latency. */
static double pipeline_cost(const mmp__cost_in_t *in) {
  double X = in->X < 1 ? 1 : in->X, s = in->m * in->nm->beta / X;

  return (in->p - 1) * (in->nm->alpha + s) +
         (X - 1) * (mmp__net_gap(in->nm) + s);
}

/* Each link carries the message once. */
static double chain_link_bytes(int p, double m) {
  (void)p;
  return m;
}

/* The chain is no AUTO candidate: it is the pipelined chain with one
 * segment, which the pipeline's optimal X already covers, and the latency
 * terms of a burst allowance can price it below the pipeline where it is
 * several times slower (docs/design/auto.md, "The chain"). */
const mmp__alg_t mmp__bcast_chain_alg = {
    .name = "chain",
    .summary = "rank i sends the whole message to rank i + 1",
    .flags = MMP__ALG_PART,
    .build = chain_build,
    .cost = chain_cost,
    .link_bytes = chain_link_bytes,
};

const mmp__alg_t mmp__bcast_pipeline_alg = {
    .name = "pipeline",
    .summary = "the chain with the message cut into segments",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_PART | MMP__ALG_SEGMENTED,
    .prefer = 4,
    .build = chain,
    .cost = pipeline_cost,
    .link_bytes = chain_link_bytes,
};
