/* SPDX-License-Identifier: MIT */
/*
 * Barrier: its table (table.c) and its front-end (barrier.c).
 */
#ifndef MMP_COLLECTIVES_BARRIER_BARRIER_H
#define MMP_COLLECTIVES_BARRIER_BARRIER_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/tree.h"

extern const mmp__family_t mmp__barrier_family;

#endif /* MMP_COLLECTIVES_BARRIER_BARRIER_H */
