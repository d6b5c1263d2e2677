/* SPDX-License-Identifier: MIT */
/*
 * Bruck's alltoall (Bruck et al. 1997; MPICH's for short blocks): the
 * blocks are rotated into a scratch array W, W[j] = the block for rank
 * i + j; in step k rank i sends every W[j] with bit k of j set to
 * i + 2^k and receives the same positions from i - 2^k; at the end W[j]
 * holds the block from rank i - j:
 *   ceil(log2 p)(alpha + (p/2) m beta)   (m bytes a block).
 * log2 p messages instead of p - 1, each block travelling up to log2 p
 * times. Equal blocks only (alltoall, not alltoallv).
 *
 * Selected: by AUTO for short blocks.
 */
#include <stdlib.h>

#include "collectives/alltoall/alltoall.h"

#define PHASE_STEP 0

static int bruck_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, j, d, have = -1, nr, rc = -1;
  int from = s->nops;
  size_t b = a->cnt[0], w = mmp__sched_scratch(s, b * (size_t)n);
  size_t in = mmp__sched_scratch(s, b * ((size_t)n / 2 + 1));
  size_t *regs = malloc(2 * ((size_t)n + 1) * sizeof(size_t));

  if (regs == NULL)
    return MMP_ENOMEM;
  for (j = 0; j < n; j++)
    if (a->cnt[j] != b || a->scnt[j] != b) {
      free(regs);
      return MMP_EINVAL;
    }
  for (j = 1; j < n && have >= -1; j++)
    have = mmp__coll_join(
        s, have,
        mmp__coll_copy(s, a->sdsp[(me + j) % n], w + (size_t)j * b, b, a->dep));
  for (d = 1; d < n && have >= -1; d <<= 1) {
    int snd, rcv, k;
    for (j = 1, nr = 0; j < n; j++)
      if (j & d) {
        regs[2 * nr] = w + (size_t)j * b;
        regs[2 * nr + 1] = b;
        nr++;
      }
    snd = mmp__coll_sendv(s, a, (me + d) % n, regs, nr, a->phase + PHASE_STEP,
                          have, 0);
    /* Into scratch, then into the places the send took them from: a
     * receive that waited for the send would deadlock every rank under
     * rendezvous. */
    rcv = mmp__coll_recv(s, a, (me - d + n) % n, in, (size_t)nr * b,
                         a->phase + PHASE_STEP, 0);
    if (rcv >= 0 && have >= 0 && mmp__sched_dep(s, have, rcv) != 0)
      rcv = MMP_ENOMEM;
    if (snd < 0 || rcv < 0) {
      have = snd < 0 ? snd : rcv;
      break;
    }
    have = mmp__coll_join(s, snd, rcv);
    for (k = 0; k < nr && have >= 0; k++)
      rc = mmp__coll_join(
          s, rc, mmp__coll_copy(s, in + (size_t)k * b, regs[2 * k], b, have));
    have = rc;
    rc = -1;
  }
  for (j = 1; j < n && have >= -1 && rc >= -1; j++)
    rc =
        mmp__coll_copy(s, w + (size_t)j * b, a->dsp[(me - j + n) % n], b, have);
  free(regs);
  if (have < -1 || rc < -1)
    return have < -1 ? have : rc;
  return mmp__coll_after_all(s, from);
}

static double bruck_cost(const mmp__cost_in_t *in) {
  return mmp__lg2(in->p) * (in->nm->alpha + in->p / 2.0 * in->m * in->nm->beta);
}

const mmp__alg_t mmp__alltoall_bruck_alg = {
    .name = "bruck",
    .summary = "Bruck's log2 p rounds of combined blocks",
    .flags = MMP__ALG_AUTO,
    .prefer = 3,
    .build = bruck_build,
    .cost = bruck_cost,
};
