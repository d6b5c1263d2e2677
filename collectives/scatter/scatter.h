/* SPDX-License-Identifier: MIT */
/*
 * Scatter: its table (table.c) and its public calls (scatter.c), which
 * run gather's front-end (gather/gather.h) the other way round.
 */
#ifndef MMP_COLLECTIVES_SCATTER_SCATTER_H
#define MMP_COLLECTIVES_SCATTER_SCATTER_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/blocks.h"
#include "collectives/gather/gather.h"

extern const mmp__family_t mmp__scatter_family;

#endif /* MMP_COLLECTIVES_SCATTER_SCATTER_H */
