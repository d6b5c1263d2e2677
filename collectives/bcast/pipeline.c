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
 * which the benchmarks measured (docs/algorithms.md). As X grows the time tends
 * to m beta, the link time, which no broadcast can beat: every rank must
 * take in all m bytes through its own link.
 *
 * Selected: for large messages, where the bandwidth term dominates, and
 * for messages that fit a burst allowance where the symmetric broadcast
 * does not price clearly below it (48-64 KiB at p = 16 on the emulated
 * cluster); the segment size comes from the model's optimal X (at least
 * 4 KiB).
 */
#include <math.h>

#include "collectives/patterns/tree.h"

#define SEG_MIN 4096.0

/* A chain is a tree in which every rank has one child. */
static int chain(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  const mmp__group_t *g = a->g;
  int v, prev, next;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, g->n);
  prev = v > 0 ? mmp__rrank(v - 1, a->root, g->n) : -1;
  next = v + 1 < g->n ? mmp__rrank(v + 1, a->root, g->n) : -1;
  return mmp__tree_forward(s, a, prev, &next, next >= 0, 0, a->len, a->phase);
}

static int chain_build(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  mmp__bcast_arg_t whole = *a;

  whole.seg = 0;
  return chain(s, &whole);
}

size_t mmp__pipeline_seg(int p, size_t len, const mmp_netmodel_t *nm) {
  double m = (double)len;
  double X = p > 2 && nm->alpha > 0
                 ? sqrt((double)(p - 2) * m * nm->beta / nm->alpha)
                 : 1;
  double seg = X > 1 ? m / X : m;

  /* Not cut evenly (mmp__even_seg): the segment would then depend on the
   * exact length, and ranks that disagree on it by a few bytes would cut
   * differently, so that the arrival-aware broadcasts, which run this
   * pipeline, waited instead of reporting the mismatch. With a fixed
   * 4 KiB floor both cut alike. */
  if (seg < SEG_MIN)
    seg = SEG_MIN;
  return seg >= m ? 0 : (size_t)seg;
}

static double chain_cost(const mmp__bcast_cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

/* The first segment crosses p - 1 hops at alpha each; every later one
 * follows it a gap behind (mmp__net_gap), not a latency. */
static double pipeline_cost(const mmp__bcast_cost_in_t *in) {
  double X = in->X < 1 ? 1 : in->X, s = in->m * in->nm->beta / X;

  return (in->p - 1) * (in->nm->alpha + s) +
         (X - 1) * (mmp__net_gap(in->nm) + s);
}

/* Each link carries the message once. */
static double chain_link_bytes(int p, double m) {
  (void)p;
  return m;
}

/* An asked-for pipeline without a segment size takes the model's. */
static int pipeline_resolve(mmp__bcast_desc_t *d, const mmp_bcast_opts_t *o,
                            const mmp__bcast_env_t *env) {
  mmp_netmodel_t nm;
  int rc;

  (void)o;
  if (env->auto_pick || d->seg != 0)
    return 0;
  if ((rc = mmp__netmodel_get(env->comm, &nm)) != 0)
    return rc;
  d->seg = mmp__pipeline_seg(env->p, (size_t)d->len, &nm);
  return 0;
}

/* The chain is no AUTO candidate: it is the pipelined chain with one
 * segment, which the pipeline's optimal X already covers, and the latency
 * terms of a burst allowance can price it below the pipeline where it is
 * several times slower (docs/algorithms.md, "The chain"). */
const mmp__bcast_alg_t mmp__bcast_chain_alg = {
    .id = MMP_BCAST_CHAIN,
    .name = "chain",
    .flags = MMP__BCAST_F_GROUPS | MMP__BCAST_F_SUB,
    .build = chain_build,
    .cost = chain_cost,
    .link_bytes = chain_link_bytes,
};

const mmp__bcast_alg_t mmp__bcast_pipeline_alg = {
    .id = MMP_BCAST_PIPELINE,
    .name = "pipeline",
    .flags = MMP__BCAST_F_AUTO | MMP__BCAST_F_GROUPS | MMP__BCAST_F_SUB |
             MMP__BCAST_F_PIPELINED,
    .prefer = 4,
    .build = chain,
    .cost = pipeline_cost,
    .link_bytes = chain_link_bytes,
    .resolve = pipeline_resolve,
};
