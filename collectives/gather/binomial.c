/* SPDX-License-Identifier: MIT */
/*
 * Binomial gather: a rank sends its subtree's blocks to its parent in one
 * message (patterns/rooted.c has its shape and price).
 *
 * Selected: by AUTO for short blocks.
 */
#include "collectives/gather/gather.h"

static int binomial_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return mmp__rooted_binomial(s, a, 1);
}

const mmp__alg_t mmp__gather_binomial_alg = {
    .name = "binomial",
    .summary = "binomial tree of blocks",
    .flags = MMP__ALG_AUTO,
    .prefer = 1,
    .build = binomial_build,
    .cost = mmp__cost_rooted_binomial,
};
