/* SPDX-License-Identifier: MIT */
/*
 * Broadcast through the node segment: the root writes the message once
 * into shared memory, chunk by chunk, and every rank of the host copies
 * each chunk out as it lands (collectives/patterns/node.c):
 *   2 alpha_flag + m beta_node.
 * Selected: by AUTO for blocking broadcasts on a communicator whose ranks
 * all share one host, priced with the intra-node model; run to completion
 * inside the call that starts it (docs/algorithms.md, "Shared-memory
 * collectives").
 */
#include "collectives/bcast/bcast.h"
#include "collectives/patterns/node.h"

static int shm_start(const mmp__run_t *run, mmp_request_t **req) {
  int rc = mmp__node_bcast(run->comm, run->buf, (size_t)run->d->count,
                           run->d->root, run->timeout_ms);

  return mmp__node_done(run->comm, rc, run->d->root, req);
}

const mmp__alg_t mmp__bcast_shm_alg = {
    .name = "shm",
    .summary = "through one shared-memory segment of the host, chunked",
    .flags =
        MMP__ALG_DYNAMIC | MMP__ALG_BLOCKING | MMP__ALG_AUTO | MMP__ALG_TOP,
    .prefer = 13,
    .start = shm_start,
    .cost = mmp__node_bcast_cost,
};
