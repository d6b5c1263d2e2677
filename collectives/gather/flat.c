/* SPDX-License-Identifier: MIT */
/*
 * Flat gather: the root receives every block directly, all posted at once
 * (patterns/rooted.c has its shape and price).
 *
 * Selected: by AUTO where p alpha is small beside the bytes (long blocks), and
 * always for gatherv, whose counts only the root knows.
 */
#include "collectives/gather/gather.h"

static int flat_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return mmp__rooted_flat(s, a, 1);
}

const mmp__alg_t mmp__gather_flat_alg = {
    .name = "flat",
    .summary = "the root receives every block directly",
    .flags = MMP__ALG_AUTO,
    .prefer = 2,
    .build = flat_build,
    .cost = mmp__cost_rooted_flat,
};
