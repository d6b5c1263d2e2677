/* SPDX-License-Identifier: MIT */
/*
 * Every collective's table, by its public number (registry.c): for the
 * calls that name or select the algorithms of any collective, and for
 * tests that walk every table.
 */
#ifndef MMP_COLLECTIVES_REGISTRY_H
#define MMP_COLLECTIVES_REGISTRY_H

#include "collectives/core/alg.h"

/* The table of collective `coll` (MMP_COLL_*), or NULL. */
const mmp__family_t *mmp__family_of(int coll);

#endif /* MMP_COLLECTIVES_REGISTRY_H */
