/* SPDX-License-Identifier: MIT */
/*
 * The reduce table: one line per algorithm, each row defined in the
 * algorithm's own file (<name>.c) with its name, builder and cost. Row i
 * is algorithm number i + 1 on the wire: a new row goes at the end.
 * Names, AUTO's choice and building from a description read this table;
 * nothing else lists the algorithms.
 */
#include "collectives/reduce/reduce.h"

#define REDUCE_ALGS(X)                                                         \
  X(binomial)                                                                  \
  X(pipeline)                                                                  \
  X(rabenseifner)                                                              \
  X(hierarchical)                                                              \
  X(knomial)                                                                   \
  X(shm)

#define DECLARE(row) extern const mmp__alg_t mmp__reduce_##row##_alg;
REDUCE_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const rows[] = {
#define ENTRY(row) &mmp__reduce_##row##_alg,
    REDUCE_ALGS(ENTRY)
#undef ENTRY
};

const mmp__family_t mmp__reduce_family = {
    .coll = MMP_COLL_REDUCE,
    .name = "reduce",
    .env = "MINIMP_REDUCE_ALG",
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .pick = mmp__auto_pick,
    .segment = mmp__coll_seg,
};

MMP__FAMILY_CHECK_AT_LOAD(mmp__reduce_family)
