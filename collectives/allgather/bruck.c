/* SPDX-License-Identifier: MIT */
/*
 * Bruck's allgather (Bruck et al. 1997): in step k rank i sends the
 * blocks it holds, i .. i + 2^k - 1, to i - 2^k and receives
 * i + 2^k .. i + 2^(k+1) - 1 from i + 2^k (the last step only what is
 * missing):
 *   ceil(log2 p) alpha + (p - 1) m beta,
 * for any p without a fold. The blocks land in place (no final
 * rotation): a message is packed from, and unpacked into, the blocks'
 * own places.
 *
 * Selected: by AUTO for short blocks at p not a power of two.
 */
#include <stdlib.h>

#include "collectives/allgather/allgather.h"

#define PHASE_STEP 0

static int bruck_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, d, have = -1, nr, from = s->nops;
  size_t *regs = malloc(2 * ((size_t)n + 1) * sizeof(size_t));

  if (regs == NULL)
    return MMP_ENOMEM;
  for (d = 1; d < n && have >= -1; d <<= 1) {
    int k = d < n - d ? d : n - d, snd, rcv;
    nr = mmp__coll_regions(a, a->dsp, a->cnt, me, 0, k, regs);
    snd = mmp__coll_sendv(s, a, (me - d + n) % n, regs, nr,
                          a->phase + PHASE_STEP, have, d == 1 && nr == 1);
    nr = mmp__coll_regions(a, a->dsp, a->cnt, me, d, d + k, regs);
    rcv = mmp__coll_recvv(s, a, (me + d) % n, regs, nr, a->phase + PHASE_STEP,
                          d == 1 && nr == 1);
    have = snd < 0 ? snd : mmp__coll_join(s, have, rcv);
  }
  free(regs);
  return have < -1 ? have : mmp__coll_after_all(s, from);
}

static double bruck_cost(const mmp__cost_in_t *in) {
  return mmp__lg2(in->p) * in->nm->alpha + (in->p - 1) * in->m * in->nm->beta;
}

const mmp__alg_t mmp__allgather_bruck_alg = {
    .name = "bruck",
    .summary = "Bruck's ceil(log2 p) rounds, then a rotation",
    .flags = MMP__ALG_AUTO,
    .prefer = 3,
    .build = bruck_build,
    .cost = bruck_cost,
};
