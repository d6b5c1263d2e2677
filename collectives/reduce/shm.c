/* SPDX-License-Identifier: MIT */
/*
 * Reduce through the node segment: as the shm allreduce, but only the
 * root copies the result out (collectives/patterns/node.c):
 *   2 alpha_flag + m (beta_node + (p - 1) / p gamma).
 * Selected: by AUTO for blocking calls on a communicator whose ranks all
 * share one host, priced with the intra-node model; run to completion
 * inside the call that starts it (docs/algorithms.md, "Shared-memory
 * collectives").
 */
#include "collectives/patterns/node.h"
#include "collectives/reduce/reduce.h"

static int shm_start(const mmp__run_t *run, mmp_request_t **req) {
  return mmp__node_reduce_run(run, run->d->root, req);
}

const mmp__alg_t mmp__reduce_shm_alg = {
    .name = "shm",
    .summary = "through one shared-memory segment of the host, in slices",
    .flags = MMP__ALG_DYNAMIC | MMP__ALG_BLOCKING | MMP__ALG_AUTO |
             MMP__ALG_TOP | MMP__ALG_ORDERED,
    .prefer = 6,
    .start = shm_start,
    .cost = mmp__node_reduce_cost,
};
