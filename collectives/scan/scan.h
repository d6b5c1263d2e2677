/* SPDX-License-Identifier: MIT */
/*
 * Scan and exclusive scan: their tables (table.c), their front-end
 * (scan.c), and the builders both tables' rows run (linear.c, rd.c), the
 * exclusive form writing its result at a->res.
 */
#ifndef MMP_COLLECTIVES_SCAN_SCAN_H
#define MMP_COLLECTIVES_SCAN_SCAN_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/reduce.h"

extern const mmp__family_t mmp__scan_family;
extern const mmp__family_t mmp__exscan_family;

/* Row `row` of both tables, alike but for the builder (the file's
 * static scan_<row>_build and exscan_<row>_build); the rest of the
 * row's fields follow as designated initialisers. */
#define MMP__SCAN_ROWS(row, ...)                                               \
  const mmp__alg_t mmp__scan_##row##_alg = {.build = scan_##row##_build,       \
                                            __VA_ARGS__};                      \
  const mmp__alg_t mmp__exscan_##row##_alg = {.build = exscan_##row##_build,   \
                                              __VA_ARGS__}

/* Recursive doubling's price, p ranks and an m-byte vector: ceil(log2 p)
 * rounds, each a message and a combination. The chain is priced as the
 * reduction's pipelined chain (mmp__reduce_pipeline_cost). */
double mmp__scan_cost_rd(const mmp__cost_in_t *in);

#endif /* MMP_COLLECTIVES_SCAN_SCAN_H */
