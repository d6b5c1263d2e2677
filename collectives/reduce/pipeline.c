/* SPDX-License-Identifier: MIT */
/*
 * Pipelined chain reduce ([Hasanov et al. 2015]'s pipelined chain, run
 * backwards).
 *
 * Virtual rank v (relative to the chain's root) receives segment k from
 * v + 1, combines it into its own on the right and sends the result to
 * v - 1, while segment k + 1 arrives. With X segments
 *   (X + p - 2)(alpha + (m/X)(beta + gamma)),
 * which tends to m (beta + gamma): every link carries m once.
 * X = sqrt((p - 2) m beta / alpha), segments of at least 4 KiB
 * (mmp__pipeline_seg, the broadcast's).
 * Order: x_v o (x_{v+1} o (... o x_{p-1})), virtual order; rooted at
 * rank 0 for a non-commutative operation, which then hands the result to
 * the root.
 *
 * Selected: by AUTO for long vectors.
 */
#include "collectives/reduce/reduce.h"

#define PHASE_CHAIN 0
#define PHASE_HOP 2

static int pipeline_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, troot = mmp__reduce_troot(a), from = s->nops;
  int v = mmp__vrank(a->g->me, troot, n), kid, done;

  kid = mmp__rrank(v + 1, troot, n);
  done = mmp__reduce_tree(s, a, v > 0 ? mmp__rrank(v - 1, troot, n) : -1, &kid,
                          v + 1 < n, a->phase + PHASE_CHAIN);
  return mmp__reduce_hop(s, a, troot, done, from, a->phase + PHASE_HOP);
}

size_t mmp__reduce_pipeline_seg(int p, size_t len, size_t esize,
                                const mmp_netmodel_t *nm) {
  size_t seg = mmp__pipeline_seg(p, len, nm);

  return seg - seg % esize;
}

double mmp__reduce_pipeline_cost(const mmp__cost_in_t *in) {
  size_t seg = mmp__pipeline_seg(in->p, (size_t)in->m, in->nm);
  double X = seg > 0 ? ceil(in->m / (double)seg) : 1;

  if (in->p < 2)
    return 0;
  return (X + in->p - 2) *
         (in->nm->alpha + in->m / X * (in->nm->beta + in->nm->gamma));
}

const mmp__alg_t mmp__reduce_pipeline_alg = {
    .name = "pipeline",
    .summary = "chain, pipelined in segments",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED | MMP__ALG_SEGMENTED,
    .prefer = 2,
    .build = pipeline_build,
    .cost = mmp__reduce_pipeline_cost,
    .segment = mmp__reduce_pipeline_seg,
};
