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

/* Prices of p ranks and an m-byte vector: the chain's p - 1 steps and
 * recursive doubling's ceil(log2 p) rounds, each a message and a
 * combination. */
double mmp__scan_cost_linear(const mmp__cost_in_t *in);
double mmp__scan_cost_rd(const mmp__cost_in_t *in);

#endif /* MMP_COLLECTIVES_SCAN_SCAN_H */
