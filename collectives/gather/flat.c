/* SPDX-License-Identifier: MIT */
/*
 * Flat gather and scatter: the root receives every block directly (or
 * sends it), all posted at once:
 *   (p - 1) alpha + (p - 1) m beta    (m bytes a block),
 * the root's link carrying (p - 1) m, which every gather must.
 * No rank forwards anything, so no block waits for another; it is the
 * only form of gatherv and scatterv, whose counts only the root knows.
 *
 * Selected: by AUTO where p alpha is small beside the bytes (long
 * blocks), and always for the v-forms.
 */
#include "collectives/core/coll.h"

#define PHASE_FLAT 0

/* Gather when `in`, else scatter. */
static int flat_build(mmp__sched_t *s, const mmp__coll_arg_t *a, int in) {
  int n = a->g->n, me = a->g->me, i, op, from = s->nops;

  /* Scatter's blocks are first messages, received from any rank: a rank
   * that names another root then fails instead of waiting for it. */
  if (me != a->root) {
    op = in ? mmp__coll_send(s, a, a->root, a->dsp[me], a->cnt[me],
                             a->phase + PHASE_FLAT, -1, 1)
            : mmp__coll_first(s, a,
                              mmp__coll_recv(s, a, a->root, a->dsp[me],
                                             a->cnt[me], a->phase + PHASE_FLAT,
                                             0));
    return op < 0 ? op : mmp__coll_join(s, op, a->dep);
  }
  for (i = 0; i < n; i++) {
    if (i == me)
      continue;
    op = in ? mmp__coll_recv(s, a, i, a->dsp[i], a->cnt[i],
                             a->phase + PHASE_FLAT, 1)
            : mmp__coll_first(s, a,
                              mmp__coll_send(s, a, i, a->dsp[i], a->cnt[i],
                                             a->phase + PHASE_FLAT, -1, 0));
    if (op < 0)
      return op;
  }
  return mmp__coll_after_all(s, from);
}

static int gather_flat_build(mmp__sched_t *s, const mmp__coll_arg_t *a) {
  return flat_build(s, a, 1);
}

static int scatter_flat_build(mmp__sched_t *s, const mmp__coll_arg_t *a) {
  return flat_build(s, a, 0);
}

static double flat_cost(const mmp__coll_cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

const mmp__coll_alg_t mmp__gather_flat_alg = {
    .coll = MMP_COLL_GATHER,
    .id = MMP_GATHER_FLAT,
    .name = "flat",
    .flags = MMP__COLL_F_AUTO,
    .prefer = 2,
    .build = gather_flat_build,
    .cost = flat_cost,
};

const mmp__coll_alg_t mmp__scatter_flat_alg = {
    .coll = MMP_COLL_SCATTER,
    .id = MMP_SCATTER_FLAT,
    .name = "flat",
    .flags = MMP__COLL_F_AUTO,
    .prefer = 2,
    .build = scatter_flat_build,
    .cost = flat_cost,
};
