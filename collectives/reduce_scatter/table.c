/* SPDX-License-Identifier: MIT */
/*
 * The reduce-scatter table: one line per algorithm, each row defined in the
 * algorithm's own file (<name>.c) with its name, builder and cost. Row i
 * is algorithm number i + 1 on the wire: a new row goes at the end.
 * Names, AUTO's choice and building from a description read this table;
 * nothing else lists the algorithms.
 */
#include "collectives/reduce_scatter/reduce_scatter.h"

#define REDUCE_SCATTER_ALGS(X)                                                 \
  X(ring)                                                                      \
  X(halving)                                                                   \
  X(pairwise)

#define DECLARE(row) extern const mmp__alg_t mmp__reduce_scatter_##row##_alg;
REDUCE_SCATTER_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const rows[] = {
#define ENTRY(row) &mmp__reduce_scatter_##row##_alg,
    REDUCE_SCATTER_ALGS(ENTRY)
#undef ENTRY
};

const mmp__family_t mmp__reduce_scatter_family = {
    .coll = MMP_COLL_REDUCE_SCATTER,
    .name = "reduce_scatter",
    .env = "MINIMP_REDUCE_SCATTER_ALG",
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .pick = mmp__auto_pick,
    .segment = mmp__coll_seg,
};

MMP__FAMILY_CHECK_AT_LOAD(mmp__reduce_scatter_family)
