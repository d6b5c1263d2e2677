/* SPDX-License-Identifier: MIT */
/*
 * The dissemination barrier (patterns/dissemination.c): in round k every
 * rank signals rank + 2^k and waits for rank - 2^k; after ceil(log2 p)
 * rounds every rank has heard, directly or not, from every other:
 *   ceil(log2 p) alpha.
 * Zero-byte messages, sent eagerly, in the communicator's collective
 * context.
 *
 * Selected: always (the only barrier).
 */
#include "collectives/barrier/barrier.h"

static int dissemination_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return mmp__dissemination(s, a->g);
}

static double dissemination_cost(const mmp__cost_in_t *in) {
  return mmp__lg2(in->p) * in->nm->alpha;
}

const mmp__alg_t mmp__barrier_dissemination_alg = {
    .name = "dissemination",
    .summary = "ceil(log2 p) rounds of signals at doubling distances",
    .flags = MMP__ALG_AUTO,
    .prefer = 1,
    .build = dissemination_build,
    .cost = dissemination_cost,
};
