/* SPDX-License-Identifier: MIT */
/*
 * Reduce-scatter: its table (table.c) and its front-end
 * (reduce_scatter.c); its rows run the halving and the ring of
 * patterns/reduce.h.
 */
#ifndef MMP_COLLECTIVES_REDUCE_SCATTER_REDUCE_SCATTER_H
#define MMP_COLLECTIVES_REDUCE_SCATTER_REDUCE_SCATTER_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/reduce.h"

extern const mmp__family_t mmp__reduce_scatter_family;

#endif /* MMP_COLLECTIVES_REDUCE_SCATTER_REDUCE_SCATTER_H */
