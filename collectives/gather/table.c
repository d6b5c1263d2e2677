/* SPDX-License-Identifier: MIT */
/*
 * The gather table: one line per algorithm, each row defined in the
 * algorithm's own file (<name>.c) with its name, builder and cost. Row i
 * is algorithm number i + 1 on the wire: a new row goes at the end.
 * Names, AUTO's choice and building from a description read this table;
 * nothing else lists the algorithms.
 */
#include "collectives/gather/gather.h"

#define GATHER_ALGS(X)                                                         \
  X(flat)                                                                      \
  X(binomial)

#define DECLARE(row) extern const mmp__alg_t mmp__gather_##row##_alg;
GATHER_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const rows[] = {
#define ENTRY(row) &mmp__gather_##row##_alg,
    GATHER_ALGS(ENTRY)
#undef ENTRY
};

const mmp__family_t mmp__gather_family = {
    .coll = MMP_COLL_GATHER,
    .name = "gather",
    .env = "MINIMP_GATHER_ALG",
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .pick = mmp__auto_pick,
};

MMP__FAMILY_CHECK_AT_LOAD(mmp__gather_family)
