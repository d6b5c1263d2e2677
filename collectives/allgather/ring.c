/* SPDX-License-Identifier: MIT */
/*
 * Ring allgather: in step t rank i passes block i - t to i + 1 and takes
 * block i - t - 1 from i - 1, forwarding each block as soon as it landed:
 *   (p - 1)(alpha + m beta)   (m bytes a block),
 * every link carrying (p - 1) m, the least any allgather can. Blocks may
 * differ in length (allgatherv); empty ones still travel, as empty
 * messages, so that every rank sends and receives the same count.
 *
 * Selected: by AUTO for long blocks.
 */
#include "collectives/allgather/allgather.h"

#define PHASE_RING 0

static int ring_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, t, prev = -1, from = s->nops;

  for (t = 0; t + 1 < n; t++) {
    int sb = (me - t + n) % n, rb = (me - t - 1 + n) % n, snd;
    snd = mmp__coll_send(s, a, (me + 1) % n, a->dsp[sb], a->cnt[sb],
                         a->phase + PHASE_RING, prev, t == 0);
    prev = mmp__coll_recv(s, a, (me + n - 1) % n, a->dsp[rb], a->cnt[rb],
                          a->phase + PHASE_RING, t == 0);
    if (snd < 0 || prev < 0)
      return snd < 0 ? snd : prev;
  }
  return mmp__coll_after_all(s, from);
}

static double ring_cost(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

const mmp__alg_t mmp__allgather_ring_alg = {
    .name = "ring",
    .summary = "ring: each block passes round once",
    .flags = MMP__ALG_AUTO,
    .prefer = 1,
    .build = ring_build,
    .cost = ring_cost,
};
