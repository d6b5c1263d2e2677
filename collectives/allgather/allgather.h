/* SPDX-License-Identifier: MIT */
/*
 * Allgather: its table (table.c) and its front-end (allgather.c).
 */
#ifndef MMP_COLLECTIVES_ALLGATHER_ALLGATHER_H
#define MMP_COLLECTIVES_ALLGATHER_ALLGATHER_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/blocks.h"

extern const mmp__family_t mmp__allgather_family;

/* The rows its front-end names: s-to-p needs blocks packed in rank
 * order, where the ring takes their place. */
extern const mmp__alg_t mmp__allgather_s2p_alg, mmp__allgather_ring_alg;

#endif /* MMP_COLLECTIVES_ALLGATHER_ALLGATHER_H */
