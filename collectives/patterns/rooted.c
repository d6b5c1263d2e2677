/* SPDX-License-Identifier: MIT */
/*
 * Blocks to or from a root, as gather and scatter move them: flat (the
 * root exchanges every block directly) or down a binomial tree of blocks
 * (a rank forwards its subtree's in one message), with their prices.
 *
 * Flat: (p - 1) alpha + (p - 1) m beta (m bytes a block), the root's
 * link carrying (p - 1) m, which every gather must. No rank forwards
 * anything, so no block waits for another; it is the only form of
 * gatherv and scatterv, whose counts only the root knows.
 *
 * Binomial (MPICH's and Open MPI's default for short blocks): in virtual
 * ranks (relative to the root) v's subtree is v .. v + lowbit(v) - 1; v
 * collects the blocks of each child's subtree in one message and sends
 * its whole subtree's to its parent (scatter: the other way round):
 *   ceil(log2 p) alpha + (p - 1) m beta.
 * The root's link still carries (p - 1) m; the alphas are log2 p, and the
 * blocks travel up to log2 p hops, store and forward. Equal blocks only:
 * a rank in the middle must know its subtree's counts, which gatherv
 * gives the root alone.
 */
#include <stdlib.h>

#include "collectives/patterns/blocks.h"

#define PHASE_FLAT 0
#define PHASE_TREE 0

/* Gather when `in`, else scatter. */
int mmp__rooted_flat(mmp__sched_t *s, const mmp__arg_t *a, int in) {
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

int mmp__rooted_binomial(mmp__sched_t *s, const mmp__arg_t *a, int gather) {
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

double mmp__cost_rooted_flat(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

double mmp__cost_rooted_binomial(const mmp__cost_in_t *in) {
  return mmp__lg2(in->p) * in->nm->alpha + (in->p - 1) * in->m * in->nm->beta;
}
