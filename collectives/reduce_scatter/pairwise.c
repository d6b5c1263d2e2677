/* SPDX-License-Identifier: MIT */
/*
 * Pairwise-exchange reduce-scatter (MPICH's for non-commutative
 * operations): in step t = 1 .. p - 1 rank i sends its contribution to
 * block i + t to rank i + t and receives rank i - t's contribution to its
 * own block, into a slot of its own; then it combines the p contributions
 * to its block in rank order:
 *   (p - 1)(alpha + (m/p) beta) + ((p - 1)/p) m gamma,
 * the ring's bytes with no forwarding, and (p - 1) slots of a block.
 * Order: x_0 o (x_1 o ( ... (x_i o x_{i+1}) o x_{i+2} ...)): from the
 * rank's own contribution upwards on the right, then downwards on the
 * left; every block computed once, by its owner: any associative
 * operation.
 *
 * Selected: by AUTO for non-commutative operations (the only
 * reduce-scatter that keeps rank order).
 */
#include <stdlib.h>

#include "collectives/reduce_scatter/reduce_scatter.h"

#define PHASE_PAIR 0

static int pairwise_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, t, j, prev = a->dep, snd = -1, from = s->nops;
  size_t mine = a->cnt[me], slots = mmp__sched_scratch(s, mine * (size_t)n);
  int *rcv = malloc((size_t)n * sizeof(int));

  if (rcv == NULL)
    return MMP_ENOMEM;
  for (t = 1; t < n; t++) {
    int to = (me + t) % n, fr = (me - t + n) % n;
    snd = mmp__coll_send(s, a, to, a->dsp[to], a->cnt[to],
                         a->phase + PHASE_PAIR, snd, t == 1);
    rcv[fr] = mmp__coll_recv(s, a, fr, slots + (size_t)fr * mine, mine,
                             a->phase + PHASE_PAIR, t == 1);
    if (snd < 0 || rcv[fr] < 0) {
      int rc = snd < 0 ? snd : rcv[fr];
      free(rcv);
      return rc;
    }
  }
  for (j = me + 1; j < n && prev >= -1; j++)
    prev = mmp__coll_reduce(s, slots + (size_t)j * mine, a->dsp[me], mine, 1,
                            rcv[j], prev);
  for (j = me - 1; j >= 0 && prev >= -1; j--)
    prev = mmp__coll_reduce(s, slots + (size_t)j * mine, a->dsp[me], mine, 0,
                            rcv[j], prev);
  free(rcv);
  return prev < -1 ? prev : mmp__coll_after_all(s, from);
}

/* m: one block. */
static double pairwise_cost(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * (in->nm->beta + in->nm->gamma));
}

const mmp__alg_t mmp__reduce_scatter_pairwise_alg = {
    .name = "pairwise",
    .summary = "every rank sends each block to its owner",
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 3,
    .build = pairwise_build,
    .cost = pairwise_cost,
};
