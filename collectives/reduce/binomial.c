/* SPDX-License-Identifier: MIT */
/*
 * Binomial tree reduce (MPICH's and Open MPI's default for short
 * vectors), pipelined in segments when asked, and the receive-combine-
 * forward step every tree reduction shares (mmp__reduce_tree).
 *
 * In virtual ranks (relative to the tree's root) v receives from
 * v + 2^j for every 2^j below its lowest set bit, smallest subtree first,
 * combines each into its accumulator, and sends the result to v minus
 * its lowest set bit:
 *   ceil(log2 p)(alpha + m beta + m gamma),
 * and with X segments, each combined while the next arrives,
 *   (X + ceil(log2 p) - 1)(alpha + (m/X)(beta + gamma)).
 * Order: v's result is x_v o S(v + 1) o S(v + 2) o S(v + 4) ..., where
 * S(c) is the result of c's subtree: the virtual ranks in order, as a
 * binomial tree. For a commutative operation the tree is rooted at the
 * root; otherwise at rank 0, so that virtual order is rank order, and
 * rank 0 hands the result to the root (one more alpha + m beta).
 *
 * Selected: by AUTO for short vectors; inside hierarchical groups; as the
 * reduce half of allreduce's reduce + broadcast.
 */
#include <stdlib.h>

#include "collectives/reduce/reduce.h"

#define PHASE_TREE 0
#define PHASE_HOP 2

static double binomial_cost(const mmp__cost_in_t *in) {
  return mmp__cost_reduce_binomial(in->p, in->m, in->nm);
}

const mmp__alg_t mmp__reduce_binomial_alg = {
    .name = "binomial",
    .summary = "binomial tree, pipelined in segments",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 1,
    .build = mmp__reduce_binomial_build,
    .cost = binomial_cost,
};
