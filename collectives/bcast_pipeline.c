/* SPDX-License-Identifier: MIT */
/*
 * Chain and pipelined chain broadcasts (seed 001, sections 2.1.2-2.1.3).
 * Virtual rank v (rank relative to the root) receives from v - 1 and sends
 * to v + 1.
 *
 * Chain: the whole message moves one hop at a time, (p - 1)(alpha + m beta).
 *
 * Pipelined chain: the message is cut into X segments and v forwards
 * segment k as soon as it has it, while it already receives segment k + 1
 * on the other direction of its full-duplex link:
 *   (X + p - 2)(alpha + (m / X) beta),
 * minimal at X = sqrt((p - 2) m beta / alpha). As X grows the time tends
 * to m beta, the link time, which no broadcast can beat: every rank must
 * take in all m bytes through its own link.
 *
 * Selected: for large messages, where the bandwidth term dominates, and
 * for messages that fit a burst allowance where the symmetric broadcast
 * does not price clearly below it (48-64 KiB at p = 16 on the emulated
 * cluster); the segment size comes from the model's optimal X (at least
 * 4 KiB).
 */
#include "tree_common.h"

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

int mmp__bcast_chain(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  mmp__bcast_arg_t whole = *a;

  whole.seg = 0;
  return chain(s, &whole);
}

int mmp__bcast_pipeline(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  return chain(s, a);
}
