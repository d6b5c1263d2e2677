/* SPDX-License-Identifier: MIT */
/*
 * Binomial scatter: a rank receives its subtree's blocks from its parent
 * in one message and hands each child its subtree's (patterns/rooted.c has its
 * shape and price).
 *
 * Selected: by AUTO for short blocks.
 */
#include "collectives/scatter/scatter.h"

static int binomial_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return mmp__rooted_binomial(s, a, 0);
}

const mmp__alg_t mmp__scatter_binomial_alg = {
    .name = "binomial",
    .summary = "binomial tree of blocks",
    .flags = MMP__ALG_AUTO,
    .prefer = 1,
    .build = binomial_build,
    .cost = mmp__cost_rooted_binomial,
};
