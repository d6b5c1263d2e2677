/* SPDX-License-Identifier: MIT */
/*
 * The scan and exclusive scan tables: one line per algorithm, each row
 * defined in the algorithm's own file (<name>.c) with its name, builder
 * and cost. Row i is algorithm number i + 1 on the wire: a new row goes
 * at the end. Names, AUTO's choice and building from a description read
 * these tables; nothing else lists the algorithms.
 */
#include "collectives/scan/scan.h"

#define SCAN_ALGS(X)                                                           \
  X(linear)                                                                    \
  X(rd)

#define DECLARE(row)                                                           \
  extern const mmp__alg_t mmp__scan_##row##_alg;                               \
  extern const mmp__alg_t mmp__exscan_##row##_alg;
SCAN_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const scan_rows[] = {
#define ENTRY(row) &mmp__scan_##row##_alg,
    SCAN_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__alg_t *const exscan_rows[] = {
#define ENTRY(row) &mmp__exscan_##row##_alg,
    SCAN_ALGS(ENTRY)
#undef ENTRY
};

const mmp__family_t mmp__scan_family = {
    .coll = MMP_COLL_SCAN,
    .name = "scan",
    .env = "MINIMP_SCAN_ALG",
    .rows = scan_rows,
    .nrows = (int)(sizeof(scan_rows) / sizeof(scan_rows[0])),
    .pick = mmp__auto_pick,
};

const mmp__family_t mmp__exscan_family = {
    .coll = MMP_COLL_EXSCAN,
    .name = "exscan",
    .env = "MINIMP_EXSCAN_ALG",
    .rows = exscan_rows,
    .nrows = (int)(sizeof(exscan_rows) / sizeof(exscan_rows[0])),
    .pick = mmp__auto_pick,
};

#ifndef NDEBUG
__attribute__((constructor)) static void check_at_load(void) {
  int bad = mmp__family_check(&mmp__scan_family) +
            mmp__family_check(&mmp__exscan_family);
  assert(bad == 0);
  (void)bad;
}
#endif
