/* SPDX-License-Identifier: MIT */
/*
 * Binomial gather and scatter (MPICH's and Open MPI's default for short
 * blocks). In virtual ranks (relative to the root) v's subtree is
 * v .. v + lowbit(v) - 1; v collects the blocks of each child's subtree
 * in one message and sends its whole subtree's to its parent (scatter:
 * the other way round):
 *   ceil(log2 p) alpha + (p - 1) m beta   (m bytes a block).
 * The root's link still carries (p - 1) m; the alphas are log2 p, and
 * the blocks travel up to log2 p hops, store and forward.
 *
 * Selected: by AUTO for short blocks. Equal blocks only: a rank in the
 * middle must know its subtree's counts, which gatherv gives the root
 * alone.
 */
#include <stdlib.h>

#include "collectives/core/coll.h"

#define PHASE_TREE 0

static int binomial_build(mmp__sched_t *s, const mmp__coll_arg_t *a,
                          int gather) {
  int n = a->g->n, root = a->root, v = mmp__vrank(a->g->me, root, n);
  int mask, from = s->nops, have = -1, nr, rc = 0;
  int low, parent = -1, up = -1;
  size_t *regs = malloc(2 * ((size_t)n + 1) * sizeof(size_t));

  if (regs == NULL)
    return MMP_ENOMEM;
  /* The root's subtree is everything: its low bit is above n. */
  for (low = 1; low < n; low <<= 1)
    ;
  for (mask = 1; mask < n; mask <<= 1)
    if (v & mask) {
      low = mask;
      parent = mmp__rrank(v - mask, root, n);
      break;
    }
  /* Scatter: this rank's subtree from its parent first, received from
   * any rank (a first message), so that a rank with another root learns
   * the sender's plan instead of waiting for a parent that never sends. */
  if (!gather && parent >= 0) {
    nr = mmp__coll_regions(a, a->dsp, a->cnt, root, v,
                           v + low < n ? v + low : n, regs);
    have = mmp__coll_first(
        s, a,
        mmp__coll_recvv(s, a, parent, regs, nr, a->phase + PHASE_TREE, 0));
    rc = have < 0 ? have : 0;
  }
  for (mask = low >> 1; mask > 0 && rc >= 0; mask >>= 1) {
    int c = v + mask, op;
    if (c >= n)
      continue;
    nr = mmp__coll_regions(a, a->dsp, a->cnt, root, c,
                           c + mask < n ? c + mask : n, regs);
    if (gather) {
      op = mmp__coll_recvv(s, a, mmp__rrank(c, root, n), regs, nr,
                           a->phase + PHASE_TREE, nr == 1);
      up = mmp__coll_join(s, up, op);
    } else {
      op = mmp__coll_first(s, a,
                           mmp__coll_sendv(s, a, mmp__rrank(c, root, n), regs,
                                           nr, a->phase + PHASE_TREE, have, 0));
    }
    rc = op < 0 ? op : up < -1 ? up : 0;
  }
  if (gather && parent >= 0 && rc >= 0) {
    nr = mmp__coll_regions(a, a->dsp, a->cnt, root, v,
                           v + low < n ? v + low : n, regs);
    rc = mmp__coll_sendv(s, a, parent, regs, nr, a->phase + PHASE_TREE, up,
                         nr == 1);
  }
  free(regs);
  return rc < 0 ? rc : mmp__coll_after_all(s, from);
}

static int gather_binomial_build(mmp__sched_t *s, const mmp__coll_arg_t *a) {
  return binomial_build(s, a, 1);
}

static int scatter_binomial_build(mmp__sched_t *s, const mmp__coll_arg_t *a) {
  return binomial_build(s, a, 0);
}

static double binomial_cost(const mmp__coll_cost_in_t *in) {
  return mmp__lg2(in->p) * in->nm->alpha + (in->p - 1) * in->m * in->nm->beta;
}

const mmp__coll_alg_t mmp__gather_binomial_alg = {
    .coll = MMP_COLL_GATHER,
    .id = MMP_GATHER_BINOMIAL,
    .name = "binomial",
    .flags = MMP__COLL_F_AUTO,
    .prefer = 1,
    .build = gather_binomial_build,
    .cost = binomial_cost,
};

const mmp__coll_alg_t mmp__scatter_binomial_alg = {
    .coll = MMP_COLL_SCATTER,
    .id = MMP_SCATTER_BINOMIAL,
    .name = "binomial",
    .flags = MMP__COLL_F_AUTO,
    .prefer = 1,
    .build = scatter_binomial_build,
    .cost = binomial_cost,
};
