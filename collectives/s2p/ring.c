/* SPDX-License-Identifier: MIT */
/*
 * Ring allgatherv: the baseline every MPI library has. In step k
 * (0 .. p - 2) rank i passes the message of rank i - k to i + 1 and takes
 * that of rank i - k - 1 from i - 1; steps whose message is absent or
 * empty are skipped by both ends. Only neighbours talk, every message
 * travels p - 1 hops, and a rank forwards a message as soon as it landed.
 *
 * Cost (Hockney): each message crosses p - 1 links, pipelined with the
 * others behind it:
 *   max((p - 1)(alpha + L_max beta), (p - 1) alpha + S beta).
 * Where a link passes its first B bytes at once (a shaper's bucket, see
 * bcast_choose.c), a hop costs alpha + max(0, L_max - B) beta, so the ring
 * runs at the receive limit S beta and beats the combining algorithms
 * (docs/data/history/performance.md, "s-to-p broadcast").
 * Bandwidth-optimal for s = p; for few sources the p - 1 hops dominate.
 *
 * Selected: for s close to p with long messages.
 */
#include "collectives/s2p/s2p.h"

#define PHASE_RING 1

static int ring_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__s2p_t *x = a->x;
  int p = x->p, me = x->me, right = (me + 1) % p, left = (me + p - 1) % p;
  int k, prev = -1, op, rc;

  for (k = 0; k + 1 < p; k++) {
    int out = x->idx[(me - k + p) % p], in = x->idx[(me - k - 1 + 2 * p) % p];
    if (out >= 0 && x->len[out] > 0) {
      op = mmp__sched_send(s, right, x->off[out], x->len[out], PHASE_RING);
      if (op < 0)
        return op;
      if ((rc = mmp__sched_dep(s, prev, op)) != 0)
        return rc;
    }
    prev = -1;
    if (in >= 0 && x->len[in] > 0) {
      prev = mmp__sched_recv(s, left, x->off[in], x->len[in], PHASE_RING);
      if (prev < 0)
        return prev;
    }
  }
  return 0;
}

/* A hop is store-and-forward of one message, but a message that fits in
 * the link's burst allowance crosses an idle hop at once; the links'
 * sustained rate still bounds the whole (each carries about S bytes). */
static double ring_cost(const mmp__cost_in_t *in) {
  const mmp__s2p_t *x = in->x;
  const mmp_netmodel_t *nm = in->nm;
  double P = x->p, lmax, lmin, recv, hop, take;

  if (x->ns == 0 || x->p == 1)
    return 0;
  mmp__s2p_lengths(x, nm, &lmax, &lmin, &recv);
  hop = lmax > nm->burst ? lmax - nm->burst : 0;
  take = (double)x->total - (x->ns == x->p ? lmin : 0);
  /* p - 1 steps of latency; the bytes either wait hop by hop for the
   * largest message, or are bounded by what a rank takes in. */
  return (P - 1) * nm->alpha + fmax((P - 1) * hop * nm->beta, take * nm->beta);
}

const mmp__alg_t mmp__s2p_ring_alg = {
    .name = "ring",
    .summary = "ring allgatherv",
    .flags = MMP__ALG_AUTO,
    .prefer = 1,
    .build = ring_build,
    .cost = ring_cost,
};
