/* SPDX-License-Identifier: MIT */
/*
 * Pairwise-exchange alltoall (MPICH's and Open MPI's for long blocks): in
 * step t = 1 .. p - 1 rank i sends its block for i + t and receives the
 * block of i - t, one exchange at a time, so that no rank is sent to by
 * two others at once:
 *   (p - 1)(alpha + m beta)   (m bytes a block).
 *
 * Selected: by AUTO for long blocks.
 */
#include "collectives/alltoall/alltoall.h"

#define PHASE_PAIR 0

static int pairwise_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, t, prev = -1, from = s->nops;

  for (t = 1; t < n; t++) {
    int to = (me + t) % n, fr = (me - t + n) % n, snd, rcv;
    snd = mmp__coll_send(s, a, to, a->sdsp[to], a->scnt[to],
                         a->phase + PHASE_PAIR, prev, t == 1);
    rcv = mmp__coll_recv(s, a, fr, a->dsp[fr], a->cnt[fr],
                         a->phase + PHASE_PAIR, t == 1);
    if (rcv >= 0 && prev >= 0 && mmp__sched_dep(s, prev, rcv) != 0)
      return MMP_ENOMEM;
    prev = snd < 0 ? snd : mmp__coll_join(s, snd, rcv);
    if (prev < 0)
      return prev;
  }
  return mmp__coll_after_all(s, from);
}

static double pairwise_cost(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

const mmp__alg_t mmp__alltoall_pairwise_alg = {
    .name = "pairwise",
    .summary = "p - 1 exchanges with one partner each",
    .flags = MMP__ALG_AUTO,
    .prefer = 1,
    .build = pairwise_build,
    .cost = pairwise_cost,
};
