/* SPDX-License-Identifier: MIT */
/*
 * Reduce: its table (table.c) and its front-end (reduce.c); its rows run
 * the tree reductions of patterns/reduce.h.
 */
#ifndef MMP_COLLECTIVES_REDUCE_REDUCE_H
#define MMP_COLLECTIVES_REDUCE_REDUCE_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/reduce.h"

extern const mmp__family_t mmp__reduce_family;

/* The pipelined chain of a reduction (pipeline.c), which scan's linear
 * rows share: its segment, on element boundaries, and its price. */
size_t mmp__reduce_pipeline_seg(int p, size_t len, size_t esize,
                                const mmp_netmodel_t *nm);
double mmp__reduce_pipeline_cost(const mmp__cost_in_t *in);

#endif /* MMP_COLLECTIVES_REDUCE_REDUCE_H */
