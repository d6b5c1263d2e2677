/* SPDX-License-Identifier: MIT */
/*
 * The linear chain: rank i receives x_0 o ... o x_{i-1} from rank i - 1,
 * combines its own on the right and passes the result to rank i + 1,
 * pipelined in X segments (the reduce pipeline's, patterns/segments.h),
 * each a step of the tree reductions' (patterns/reduce.h):
 *   (X + p - 2)(alpha + (m/X)(beta + gamma)). Order: strictly left to right;
 * any associative operation. The exclusive form keeps what it received
 * as its result and sends that combined with its own.
 *
 * Selected: by AUTO for long vectors, where the pipeline's m(beta +
 * gamma) beats recursive doubling's log2 p of them.
 */

#include "collectives/reduce/reduce.h"
#include "collectives/scan/scan.h"

#define PHASE_CHAIN 0

/* The reduction's receive-combine-forward step along the chain, what
 * comes from the left combined on the left; the exclusive form keeps
 * what it receives, its result, and forwards it combined with its own
 * contribution (a copy in scratch: a->off). */
static int linear_build(mmp__sched_t *s, const mmp__arg_t *a, int excl) {
  int n = a->g->n, me = a->g->me, kid = me - 1;

  if (n == 1)
    return mmp__coll_join(s, a->dep, -1);
  return mmp__reduce_tree_ex(s, a, me < n - 1 ? me + 1 : -1, &kid, me > 0,
                             a->phase + PHASE_CHAIN,
                             MMP__RT_LEFT | (excl ? MMP__RT_KEEP : 0));
}

static int scan_linear_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return linear_build(s, a, 0);
}

static int exscan_linear_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return linear_build(s, a, 1);
}

MMP__SCAN_ROWS(linear, .name = "linear",
               .summary = "a chain in rank order, pipelined in segments",
               .takes = MMP_OPT_SEGMENT,
               .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED | MMP__ALG_SEGMENTED,
               .prefer = 2, .cost = mmp__reduce_pipeline_cost,
               .segment = mmp__reduce_pipeline_seg);
