/* SPDX-License-Identifier: MIT */
/*
 * Reduce: its table (table.c) and its front-end (reduce.c), which
 * allreduce and scan share; its rows run the tree reductions of
 * patterns/reduce.h.
 */
#ifndef MMP_COLLECTIVES_REDUCE_REDUCE_H
#define MMP_COLLECTIVES_REDUCE_REDUCE_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/reduce.h"

extern const mmp__family_t mmp__reduce_family;

/* Where a reduction's accumulator is, and whether its call blocks
 * (mmp__red_start's `how`). */
enum {
  MMP__RED_ROOTED = 0x1, /* the result at `root` alone (reduce): the receive
                            buffer and MMP_IN_PLACE are the root's only,
                            other ranks accumulate in scratch */
  MMP__RED_EXCL = 0x2,   /* exclusive scan: the accumulator is scratch, the
                            receive buffer the result (a->res 0) */
  /* A blocking call: AUTO prices the shm rows where the node segment may
   * serve, which run to completion inside it. */
  MMP__RED_BLOCKING = 0x4
};

/*
 * The public call of every reduction (reduce, allreduce, scan, exscan: a
 * row of `f`), from its arguments to a started request. Checks req, the
 * library, communicator, type and operation (0 is none: MMP_EINVAL),
 * `root` where MMP__RED_ROOTED (else unused), and the buffers; settles
 * the row from `opts` (NULL: AUTO); builds the schedule on the
 * accumulator `how` says (without a flag: the receive buffer) and starts
 * it, the contribution (sendbuf, or recvbuf where sendbuf is
 * MMP_IN_PLACE) copied into the accumulator first; a shm row (only where
 * MMP__RED_BLOCKING says the caller waits at once) runs to completion
 * inside the call instead. The caller keeps its buffers, which must live
 * until the request completes. 0 with *req; else *req NULL and
 * MMP_EINVAL, MMP_ERANK, MMP_ENOTINIT, MMP_ECOMM, MMP_ENOMEM, MMP_ENOTSUP
 * (a shm row named where no node segment serves) or the error a
 * collective left on `comm`.
 */
int mmp__red_start(const mmp__family_t *f, unsigned how, const void *sendbuf,
                   void *recvbuf, size_t count, mmp_type_t type, mmp_op_t op,
                   int root, mmp_comm_t *comm, const mmp_coll_opts_t *opts,
                   mmp_request_t **req);

/* The pipelined chain of a reduction (pipeline.c), which scan's linear
 * rows share: its segment, on element boundaries, and its price. */
size_t mmp__reduce_pipeline_seg(int p, size_t len, size_t esize,
                                const mmp_netmodel_t *nm);
double mmp__reduce_pipeline_cost(const mmp__cost_in_t *in);

#endif /* MMP_COLLECTIVES_REDUCE_REDUCE_H */
