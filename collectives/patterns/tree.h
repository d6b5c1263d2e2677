/* SPDX-License-Identifier: MIT */
/*
 * A region forwarded from a root (tree.c): what the broadcasts are made
 * of, and every collective with a broadcast in it. The builders here take
 * an mmp__arg_t as a broadcast row's build does: they append this rank's
 * ops for [a->off, a->off + a->len) from member a->root of group a->g,
 * in segments of a->seg, sends after a->dep, on phases from a->phase, and
 * mark this rank's first message when a->first.
 */
#ifndef MMP_COLLECTIVES_PATTERNS_TREE_H
#define MMP_COLLECTIVES_PATTERNS_TREE_H

#include "collectives/core/alg.h"
#include "collectives/patterns/groups.h"
#include "collectives/patterns/segments.h"

/* A receive or send of [off, off + len) of the region with group member
 * `peer_idx`, a send after `after` (if >= 0). Returns the op index or a
 * negative error. */
int mmp__bcast_recv(mmp__sched_t *s, const mmp__arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase);
int mmp__bcast_send(mmp__sched_t *s, const mmp__arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase, int after);

/* A NOP that completes after `dep` (if >= 0): what builders return when
 * this rank receives nothing. */
int mmp__bcast_done(mmp__sched_t *s, int dep);

/* Runs `b` over the whole communicator (member i is rank i) with this
 * rank's index; the rest of `a` as given. Returns what `b` does. */
int mmp__bcast_over_all(mmp__sched_t *s,
                        int (*b)(mmp__sched_t *, const mmp__arg_t *),
                        mmp__arg_t *a);

/*
 * Appends, for each segment of [off, off+len) (relative to the arg's
 * region), a receive from group member `parent` (if >= 0) and sends to the
 * `nkids` members in `kids`, each send after the segment arrived (or after
 * `a->dep` at the root). Marks the first segment's ops as first messages
 * when a->first. Returns the op that completes when this rank holds the
 * whole range, or a negative error.
 */
int mmp__tree_forward(mmp__sched_t *s, const mmp__arg_t *a, int parent,
                      const int *kids, int nkids, size_t off, size_t len,
                      int phase);

/* The k-nomial tree of radix a->radix (2 .. MMP__RADIX_MAX; 2 is the
 * binomial tree): in virtual ranks written in base k, v receives from v
 * with its lowest nonzero digit cleared and sends to v + j k^i for every
 * digit position i below that digit and j = 1 .. k - 1, the highest
 * position first (largest subtrees first). MMP_EMISMATCH for a radix no
 * rank could have asked for. */
int mmp__tree_knomial(mmp__sched_t *s, const mmp__arg_t *a);

/*
 * The binomial scatter that opens both scatter-allgather broadcasts: the
 * region is cut into g->n chunks of `cs` bytes (the last ones shorter or
 * empty), and virtual rank v receives, in one message from its binomial
 * parent, the chunks of its whole subtree, then hands each child its
 * subtree's chunks. Returns the op after which this rank holds at least
 * its own chunk (a NOP after a->dep at the root), or a negative error.
 */
int mmp__scatter_binomial(mmp__sched_t *s, const mmp__arg_t *a, size_t cs);

/* Byte range of chunks [c0, c1) of a region of `len` bytes in chunks of
 * `cs`, clamped to the region. */
static inline void mmp__chunks(size_t len, size_t cs, size_t c0, size_t c1,
                               size_t *off, size_t *n) {
  size_t lo = c0 * cs < len ? c0 * cs : len;
  size_t hi = c1 * cs < len ? c1 * cs : len;
  *off = lo;
  *n = hi - lo;
}

/* Two levels, as the hierarchical and node broadcasts run them: top->outer
 * among `outer` (its index 0 holds the data; me -1 where this rank is not
 * in it), then top->inner within `inner` (index 0 the leader, which
 * forwards once it holds the data), its phases MMP__LEVEL_PHASES above
 * the outer's. Returns the last op or a negative error. */
#define MMP__LEVEL_PHASES 19
int mmp__bcast_levels(mmp__sched_t *s, const mmp__arg_t *top,
                      const mmp__group_t *outer, const mmp__group_t *inner);

/* The dissemination barrier (dissemination.c): in round k every member
 * signals member + 2^k and waits for member - 2^k, zero-byte messages on
 * phases 1 .. ceil(log2 n), round k's signal only once every earlier
 * round's arrived. Returns the op after which every member has entered,
 * or a negative error. */
int mmp__dissemination(mmp__sched_t *s, const mmp__group_t *g);

#endif /* MMP_COLLECTIVES_PATTERNS_TREE_H */
