/* SPDX-License-Identifier: MIT */
/*
 * Allreduce through the node segment: every rank of the host copies its
 * contribution into shared memory, each combines a slice of every chunk
 * in rank order, and every rank copies the result out
 * (collectives/patterns/node.c):
 *   2 alpha_flag + m (beta_node + (p - 1) / p gamma).
 * Selected: by AUTO for blocking calls on a communicator whose ranks all
 * share one host, priced with the intra-node model; run to completion
 * inside the call that starts it (docs/algorithms.md, "Shared-memory
 * collectives").
 */
#include "collectives/allreduce/allreduce.h"
#include "collectives/patterns/node.h"

static int shm_start(const mmp__run_t *run, mmp_request_t **req) {
  return mmp__node_reduce_run(run, -1, req);
}

const mmp__alg_t mmp__allreduce_shm_alg = {
    .name = "shm",
    .summary = "through one shared-memory segment of the host, in slices",
    .flags = MMP__ALG_DYNAMIC | MMP__ALG_BLOCKING | MMP__ALG_AUTO |
             MMP__ALG_TOP | MMP__ALG_ORDERED,
    .prefer = 7,
    .start = shm_start,
    .cost = mmp__node_allreduce_cost,
};
