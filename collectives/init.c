/* SPDX-License-Identifier: MIT */
/*
 * The library's entry points, mmp_init and mmp_init_ex: they start the
 * runtime with what it calls of the collectives layer (mmp__coll_hooks_t):
 * the check of MINIMP_<COLLECTIVE>_ALG against the tables, and the
 * measurement of the world's network model once every rank is up. They
 * sit at the top of this layer, not in the runtime, so that whatever links
 * mmp_init links both, in a static link too (which leaves out the objects
 * nothing references), while the runtime references nothing above it.
 */
#include "collectives/registry.h"
#include "collectives/select/netmodel.h"

static const mmp__coll_hooks_t hooks = {
    .config_check = mmp__coll_check_env,
    .world_up = mmp__netmodel_world_up,
};

int mmp_init(int *argc, char ***argv) {
  return mmp__rt_init(&hooks, argc, argv);
}

int mmp_init_ex(int rank, int size, const char *rendezvous, const char *job_key,
                const char *iface, unsigned flags) {
  return mmp__rt_init_ex(&hooks, rank, size, rendezvous, job_key, iface, flags);
}
