/* SPDX-License-Identifier: MIT */
/*
 * Alltoall: its table (table.c) and its front-end (alltoall.c).
 */
#ifndef MMP_COLLECTIVES_ALLTOALL_ALLTOALL_H
#define MMP_COLLECTIVES_ALLTOALL_ALLTOALL_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/blocks.h"

extern const mmp__family_t mmp__alltoall_family;

/* The rows its front-end names: Bruck moves equal blocks only, and
 * pairwise takes alltoallv's place. */
extern const mmp__alg_t mmp__alltoall_bruck_alg, mmp__alltoall_pairwise_alg,
    mmp__alltoall_linear_alg;

#endif /* MMP_COLLECTIVES_ALLTOALL_ALLTOALL_H */
