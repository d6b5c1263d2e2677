/* SPDX-License-Identifier: MIT */
/*
 * The barrier table: one line per algorithm, each row defined in the
 * algorithm's own file (<name>.c) with its name, builder and cost. Row i
 * is algorithm number i + 1 on the wire: a new row goes at the end.
 * Names, AUTO's choice and building from a description read this table;
 * nothing else lists the algorithms.
 */
#include "collectives/barrier/barrier.h"

#define BARRIER_ALGS(X) X(dissemination) X(shm)

#define DECLARE(row) extern const mmp__alg_t mmp__barrier_##row##_alg;
BARRIER_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const rows[] = {
#define ENTRY(row) &mmp__barrier_##row##_alg,
    BARRIER_ALGS(ENTRY)
#undef ENTRY
};

const mmp__family_t mmp__barrier_family = {
    .coll = MMP_COLL_BARRIER,
    .name = "barrier",
    .env = "MINIMP_BARRIER_ALG",
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .pick = mmp__auto_pick,
};

MMP__FAMILY_CHECK_AT_LOAD(mmp__barrier_family)
