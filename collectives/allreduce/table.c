/* SPDX-License-Identifier: MIT */
/*
 * The allreduce table: one line per algorithm, each row defined in the
 * algorithm's own file (<name>.c) with its name, builder and cost. Row i
 * is algorithm number i + 1 on the wire: a new row goes at the end.
 * Names, AUTO's choice and building from a description read this table;
 * nothing else lists the algorithms.
 */
#include "collectives/allreduce/allreduce.h"

#define ALLREDUCE_ALGS(X)                                                      \
  X(rd)                                                                        \
  X(ring)                                                                      \
  X(ring_segmented)                                                            \
  X(rabenseifner)                                                              \
  X(reduce_bcast)                                                              \
  X(hierarchical)                                                              \
  X(two_tree)                                                                  \
  X(shm)

#define DECLARE(row) extern const mmp__alg_t mmp__allreduce_##row##_alg;
ALLREDUCE_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const rows[] = {
#define ENTRY(row) &mmp__allreduce_##row##_alg,
    ALLREDUCE_ALGS(ENTRY)
#undef ENTRY
};

const mmp__family_t mmp__allreduce_family = {
    .coll = MMP_COLL_ALLREDUCE,
    .name = "allreduce",
    .env = "MINIMP_ALLREDUCE_ALG",
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .pick = mmp__allreduce_pick,
    .segment = mmp__coll_seg,
};

MMP__FAMILY_CHECK_AT_LOAD(mmp__allreduce_family)
