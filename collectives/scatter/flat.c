/* SPDX-License-Identifier: MIT */
/*
 * Flat scatter: the root sends every block directly, all posted at once
 * (patterns/rooted.c has its shape and price).
 *
 * Selected: by AUTO where p alpha is small beside the bytes (long blocks), and
 * always for scatterv, whose counts only the root knows.
 */
#include "collectives/scatter/scatter.h"

static int flat_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return mmp__rooted_flat(s, a, 0);
}

const mmp__alg_t mmp__scatter_flat_alg = {
    .name = "flat",
    .summary = "the root sends every block directly",
    .flags = MMP__ALG_AUTO,
    .prefer = 2,
    .build = flat_build,
    .cost = mmp__cost_rooted_flat,
};
