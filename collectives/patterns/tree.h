/* SPDX-License-Identifier: MIT */
/*
 * Shared by the tree broadcasts: given a rank's parent and children (in
 * the order it serves them), emit the segmented receive-and-forward
 * schedule. Internal to collectives/.
 */
#ifndef MMP_COLLECTIVES_TREE_COMMON_H
#define MMP_COLLECTIVES_TREE_COMMON_H

#include "collectives/core/collectives.h"

/*
 * Appends, for each segment of [off, off+len) (relative to the arg's
 * region), a receive from group member `parent` (if >= 0) and sends to the
 * `nkids` members in `kids`, each send after the segment arrived (or after
 * `a->dep` at the root). Marks the first segment's ops as first messages
 * when a->first. Returns the op that completes when this rank holds the
 * whole range, or a negative error.
 */
int mmp__tree_forward(mmp__sched_t *s, const mmp__bcast_arg_t *a, int parent,
                      const int *kids, int nkids, size_t off, size_t len,
                      int phase);

/*
 * The binomial scatter that opens both scatter-allgather broadcasts: the
 * region is cut into g->n chunks of `cs` bytes (the last ones shorter or
 * empty), and virtual rank v receives, in one message from its binomial
 * parent, the chunks of its whole subtree, then hands each child its
 * subtree's chunks. Returns the op after which this rank holds at least
 * its own chunk (a NOP after a->dep at the root), or a negative error.
 */
int mmp__scatter_binomial(mmp__sched_t *s, const mmp__bcast_arg_t *a,
                          size_t cs);

/* Byte range of chunks [c0, c1) of a region of `len` bytes in chunks of
 * `cs`, clamped to the region. */
static inline void mmp__chunks(size_t len, size_t cs, size_t c0, size_t c1,
                               size_t *off, size_t *n) {
  size_t lo = c0 * cs < len ? c0 * cs : len;
  size_t hi = c1 * cs < len ? c1 * cs : len;
  *off = lo;
  *n = hi - lo;
}

#endif /* MMP_COLLECTIVES_TREE_COMMON_H */
