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

#endif /* MMP_COLLECTIVES_REDUCE_REDUCE_H */
