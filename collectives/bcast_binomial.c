/* SPDX-License-Identifier: MIT */
/*
 * Binomial tree broadcast (seed 001, section 2.1.6).
 *
 * In virtual ranks (relative to the root), v receives from v minus its
 * lowest set bit and sends to v + 2^j for every 2^j below that bit, the
 * largest subtree first. The number of ranks holding the message doubles
 * each round:
 *   ceil(log2 p) (alpha + m beta).
 * With segments each rank forwards segment k while receiving k + 1 (a
 * pipelined binomial tree, as in Open MPI).
 *
 * Selected: for small messages, where log2 p latencies beat every other
 * shape; and inside the groups of the hierarchical broadcast.
 */
#include "tree_common.h"

/* The k-nomial tree of radix 2 is this tree, in this order. */
int mmp__bcast_binomial(mmp__sched_t *s, const mmp__bcast_arg_t *a) {
  mmp__bcast_arg_t b = *a;

  b.radix = 2;
  return mmp__bcast_knomial(s, &b);
}
