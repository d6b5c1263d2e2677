/* SPDX-License-Identifier: MIT */
/*
 * The linear chain: rank i receives x_0 o ... o x_{i-1} from rank i - 1,
 * combines its own on the right and passes the result to rank i + 1,
 * pipelined in X segments (the reduce pipeline's, patterns/segments.h):
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

/* Segment [so, so + sn) of the chain; the first carries the header. */
static int linear_seg(mmp__sched_t *s, const mmp__arg_t *a, int excl, size_t t,
                      size_t so, size_t sn, int first) {
  int n = a->g->n, me = a->g->me, rcv = -1, have = a->dep;

  if (me > 0) {
    rcv = mmp__coll_recv(s, a, me - 1, (excl ? a->res : t) + so, sn,
                         a->phase + PHASE_CHAIN, first);
    if (rcv < 0)
      return rcv;
  }
  if (me > 0 && !excl) /* acc = received o mine */
    have = mmp__coll_reduce(s, t + so, a->off + so, sn, 0, rcv, a->dep);
  if (me > 0 && excl && me < n - 1) { /* t = received o mine */
    have = mmp__coll_copy(s, a->res + so, t + so, sn, rcv);
    if (have >= 0)
      have = mmp__coll_reduce(s, a->off + so, t + so, sn, 1, have, a->dep);
  }
  if (have < -1)
    return have;
  if (me < n - 1) {
    int snd = mmp__coll_send(s, a, me + 1, (excl && me > 0 ? t : a->off) + so,
                             sn, a->phase + PHASE_CHAIN, have, first);
    if (snd < 0)
      return snd;
  }
  return 0;
}

static int linear_build(mmp__sched_t *s, const mmp__arg_t *a, int excl) {
  int n = a->g->n, me = a->g->me, from = s->nops, rc;
  size_t t = 0, k, nseg = mmp__seg_count(a->len, a->seg), so, sn;

  if (n == 1)
    return mmp__coll_join(s, a->dep, -1);
  if (me > 0 && (!excl || me < n - 1))
    t = mmp__sched_scratch(s, a->len);
  for (k = 0; k < nseg; k++) {
    mmp__seg_range(a->len, a->seg, k, &so, &sn);
    if ((rc = linear_seg(s, a, excl, t, so, sn, k == 0)) != 0)
      return rc;
  }
  return mmp__coll_after_all(s, from);
}

static int scan_linear_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return linear_build(s, a, 0);
}

static int exscan_linear_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return linear_build(s, a, 1);
}

const mmp__alg_t mmp__scan_linear_alg = {
    .name = "linear",
    .summary = "a chain in rank order, pipelined in segments",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED | MMP__ALG_SEGMENTED,
    .prefer = 2,
    .build = scan_linear_build,
    .cost = mmp__reduce_pipeline_cost,
    .segment = mmp__reduce_pipeline_seg,
};

const mmp__alg_t mmp__exscan_linear_alg = {
    .name = "linear",
    .summary = "a chain in rank order, pipelined in segments",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED | MMP__ALG_SEGMENTED,
    .prefer = 2,
    .build = exscan_linear_build,
    .cost = mmp__reduce_pipeline_cost,
    .segment = mmp__reduce_pipeline_seg,
};
