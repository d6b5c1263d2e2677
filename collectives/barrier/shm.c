/* SPDX-License-Identifier: MIT */
/*
 * Barrier through the node segment: every rank of the host raises its
 * flag and waits for everyone else's (collectives/patterns/node.c):
 *   alpha_flag.
 * Selected: by AUTO for blocking barriers on a communicator whose ranks
 * all share one host (docs/algorithms.md, "Shared-memory collectives").
 */
#include "collectives/barrier/barrier.h"
#include "collectives/patterns/node.h"

static int shm_start(const mmp__run_t *run, mmp_request_t **req) {
  int rc = mmp__node_barrier(run->comm, run->timeout_ms);

  return mmp__node_done(run->comm, rc, MMP_ANY_SOURCE, req);
}

const mmp__alg_t mmp__barrier_shm_alg = {
    .name = "shm",
    .summary = "flags in one shared-memory segment of the host",
    .flags =
        MMP__ALG_DYNAMIC | MMP__ALG_BLOCKING | MMP__ALG_AUTO | MMP__ALG_TOP,
    .prefer = 2,
    .start = shm_start,
    .cost = mmp__node_barrier_cost,
};
