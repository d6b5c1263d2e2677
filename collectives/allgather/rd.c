/* SPDX-License-Identifier: MIT */
/*
 * Recursive doubling allgather: in round k virtual rank v and v XOR 2^k
 * swap everything they hold, so the blocks held double every round. A
 * non-power of two folds first (member 2k hands its block to 2k + 1) and
 * gets every other block from 2k + 1 at the end:
 *   ceil(log2 p) alpha + (p - 1) m beta
 *   + (p not a power of two) 2 alpha + p m beta.
 * The fewest alphas of the allgathers; blocks merge into one message.
 *
 * Selected: by AUTO for short blocks.
 */
#include <stdlib.h>

#include "collectives/allgather/allgather.h"

#define PHASE_FOLD 0
#define PHASE_ROUND 1
#define PHASE_UNFOLD 2

/* The members of virtual ranks [vlo, vhi), in member order. */
static void members(int vlo, int vhi, int n, int *mlo, int *mhi) {
  int rem = n - mmp__pow2_floor(n);

  *mlo = mmp__fold_m(vlo, n) - (vlo < rem);
  *mhi = mmp__fold_m(vhi - 1, n) + 1;
}

static int rd_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, q = mmp__pow2_floor(n), rem = n - q;
  int v = mmp__fold_v(me, n), have = -1, mask, nr, rc = 0, from = s->nops;
  size_t *regs = malloc(2 * ((size_t)n + 1) * sizeof(size_t));

  if (regs == NULL)
    return MMP_ENOMEM;
  if (me < 2 * rem && v < 0) {
    /* Folded out: hand over the block, get all the others back. */
    rc = mmp__coll_send(s, a, me + 1, a->dsp[me], a->cnt[me],
                        a->phase + PHASE_FOLD, -1, 1);
    nr = mmp__coll_regions(a, a->dsp, a->cnt, 0, 0, me, regs);
    nr += mmp__coll_regions(a, a->dsp, a->cnt, 0, me + 1, n, regs + 2 * nr);
    if (rc >= 0)
      rc = mmp__coll_recvv(s, a, me + 1, regs, nr, a->phase + PHASE_UNFOLD,
                           nr == 1);
  } else {
    if (me < 2 * rem)
      have = mmp__coll_recv(s, a, me - 1, a->dsp[me - 1], a->cnt[me - 1],
                            a->phase + PHASE_FOLD, 1);
    for (mask = 1; mask < q && have >= -1; mask <<= 1) {
      int pv = v ^ mask, peer = mmp__fold_m(pv, n), lo, hi, snd, rcv;
      int base = v & ~(mask - 1), pbase = pv & ~(mask - 1);
      members(base, base + mask, n, &lo, &hi);
      nr = mmp__coll_regions(a, a->dsp, a->cnt, 0, lo, hi, regs);
      snd = mmp__coll_sendv(s, a, peer, regs, nr, a->phase + PHASE_ROUND, have,
                            mask == 1 && nr == 1);
      members(pbase, pbase + mask, n, &lo, &hi);
      nr = mmp__coll_regions(a, a->dsp, a->cnt, 0, lo, hi, regs);
      rcv = mmp__coll_recvv(s, a, peer, regs, nr, a->phase + PHASE_ROUND,
                            mask == 1 && nr == 1);
      have = snd < 0 ? snd : mmp__coll_join(s, have, rcv);
    }
    rc = have < -1 ? have : 0;
    if (rc >= 0 && me < 2 * rem) {
      nr = mmp__coll_regions(a, a->dsp, a->cnt, 0, 0, me - 1, regs);
      nr += mmp__coll_regions(a, a->dsp, a->cnt, 0, me, n, regs + 2 * nr);
      rc = mmp__coll_sendv(s, a, me - 1, regs, nr, a->phase + PHASE_UNFOLD,
                           have, nr == 1);
    }
  }
  free(regs);
  return rc < 0 ? rc : mmp__coll_after_all(s, from);
}

static double rd_cost(const mmp__cost_in_t *in) {
  int q = in->p > 1 ? mmp__pow2_floor(in->p) : 1;
  double c = mmp__lg2(q) * in->nm->alpha + (q - 1) * in->m * in->nm->beta;

  if (q != in->p)
    c += 2 * in->nm->alpha + in->p * in->m * in->nm->beta;
  return c;
}

const mmp__alg_t mmp__allgather_rd_alg = {
    .name = "recursive_doubling",
    .summary = "recursive doubling",
    .flags = MMP__ALG_AUTO,
    .prefer = 2,
    .build = rd_build,
    .cost = rd_cost,
};
