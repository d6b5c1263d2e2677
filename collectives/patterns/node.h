/* SPDX-License-Identifier: MIT */
/*
 * Collectives through the node segment (runtime/coll_api.h, "Node
 * segments"): the shared-memory shapes the shm rows of broadcast,
 * reduce, allreduce and barrier run (node.c), and what they cost.
 */
#ifndef MMP_COLLECTIVES_PATTERNS_NODE_H
#define MMP_COLLECTIVES_PATTERNS_NODE_H

#include "collectives/core/alg.h"

/* What a reduction through the segment combines with: whole elements of
 * `esize` bytes, `fn(in, inout, n, right, arg)` as the executor's. */
typedef struct mmp__node_red_s {
  size_t esize;
  void (*fn)(const void *in, void *inout, size_t n, int right, void *arg);
  void *arg;
} mmp__node_red_t;

/* Broadcast of `len` bytes of `buf` from communicator rank `root`. Lock
 * NOT held; blocks. 0 or a mmp__node_begin / mmp__node_wait error. */
int mmp__node_bcast(mmp_comm_t *comm, void *buf, size_t len, int root,
                    unsigned timeout_ms);

/* Reduction of `len` bytes at `in` from every rank, in rank order, into
 * `out` on `root` (a communicator rank), or on every rank (root -1). */
int mmp__node_reduce(mmp_comm_t *comm, const void *in, void *out, size_t len,
                     const mmp__node_red_t *red, int root, unsigned timeout_ms);

/* Barrier. */
int mmp__node_barrier(mmp_comm_t *comm, unsigned timeout_ms);

/* A dynamic row's start for a call that ran already with result `rc`: a
 * completed request in *req (0), or rc. */
int mmp__node_done(mmp_comm_t *comm, int rc, int source, mmp_request_t **req);

/* The start of the shm reduce (`root`, a communicator rank) and allreduce
 * (root -1) rows: the run's vector reduced with its operation, then
 * mmp__node_done. */
int mmp__node_reduce_run(const mmp__run_t *run, int root, mmp_request_t **req);

/* Prices under the intra-node model, for a call the segment may serve
 * (in->node), else INFINITY. */
double mmp__node_bcast_cost(const mmp__cost_in_t *in);
double mmp__node_reduce_cost(const mmp__cost_in_t *in);
double mmp__node_allreduce_cost(const mmp__cost_in_t *in);
double mmp__node_barrier_cost(const mmp__cost_in_t *in);

#endif /* MMP_COLLECTIVES_PATTERNS_NODE_H */
