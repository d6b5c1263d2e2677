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
 * Selected: for large messages, where the bandwidth term dominates; the
 * segment size comes from the model's optimal X (at least 4 KiB).
 */
#include "collectives.h"

static int chain(mmp__sched_t *s, const mmp__bcast_arg_t *a, size_t seg) {
  const mmp__group_t *g = a->g;
  size_t nseg = mmp__seg_count(a->len, seg), k, off, n;
  int v, prev, next, all, rc;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, g->n);
  prev = v > 0 ? mmp__rrank(v - 1, a->root, g->n) : -1;
  next = v + 1 < g->n ? mmp__rrank(v + 1, a->root, g->n) : -1;
  all = mmp__bcast_done(s, prev >= 0 ? -1 : a->dep);
  if (all < 0)
    return all;
  for (k = 0; k < nseg; k++) {
    int have = a->dep;
    mmp__seg_range(a->len, seg, k, &off, &n);
    if (prev >= 0) {
      have = mmp__bcast_recv(s, a, prev, off, n, a->phase);
      if (have < 0)
        return have;
      if (k == 0 && a->first)
        mmp__sched_first(s, have);
      /* Segments may complete out of order (eager after rendezvous). */
      if ((rc = mmp__sched_dep(s, have, all)) != 0)
        return rc;
    }
    if (next >= 0) {
      int snd = mmp__bcast_send(s, a, next, off, n, a->phase, have);
      if (snd < 0)
        return snd;
      if (k == 0 && a->first)
        mmp__sched_first(s, snd);
    }
  }
  return all;
}

int mmp__bcast_chain(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  return chain(s, a, 0);
}

int mmp__bcast_pipeline(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  return chain(s, a, a->seg);
}
