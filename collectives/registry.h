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

/* mmp__coll_hooks_t.config_check: every MINIMP_<COLLECTIVE>_ALG in
 * cc->algs names a collective's variable, one of its algorithms and
 * options that algorithm takes. 0, or MMP_EENV after logging every
 * problem. */
int mmp__coll_check_env(const mmp__coll_config_t *cc);

#endif /* MMP_COLLECTIVES_REGISTRY_H */
