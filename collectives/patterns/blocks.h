/* SPDX-License-Identifier: MIT */
/*
 * Blocks: what the builders of reduce, allreduce, reduce-scatter, gather,
 * scatter, allgather and alltoall share (blocks.c). Sends and receives
 * addressed by group member that carry (or check) the header where asked,
 * local reductions and copies after their predecessors, equal cuts on
 * element boundaries, every member's block as regions of the address
 * space, the fold of a non-power of two, and the hop of a result to the
 * root. A builder's address space is laid out by its front-end: the
 * reductions work on an accumulator of a->len bytes at a->off and take
 * scratch from the schedule; the block collectives name every member's
 * block by address (a->cnt, a->dsp).
 */
#ifndef MMP_COLLECTIVES_PATTERNS_BLOCKS_H
#define MMP_COLLECTIVES_PATTERNS_BLOCKS_H

#include "collectives/core/alg.h"
#include "collectives/patterns/groups.h"

/* count elements of esize bytes: 0 or MMP_ETOOBIG. */
static inline int mmp__coll_elems(size_t count, size_t esize, size_t *bytes) {
  if (esize != 0 && count > SIZE_MAX / esize)
    return MMP_ETOOBIG;
  *bytes = count * esize;
  return 0;
}

/* A NOP after every op appended from `from` on: a region this rank sent
 * from may be written after it. */
int mmp__coll_after_all(mmp__sched_t *s, int from);

/* Marks `op` (if >= 0) as a first message, where the header is checked
 * (a->first): a receive from any rank, so that a rank with another root
 * learns of it instead of waiting for a parent that never sends, and a
 * send to a peer whose first receive it is. Returns op. */
int mmp__coll_first(mmp__sched_t *s, const mmp__arg_t *a, int op);

/* A send or receive of [off, off+len) with group member `peer`; a send
 * waits for `after` and a->dep; with `check`, it carries the header (a
 * receive checks it) when a->first. Return the op or a negative error. */
int mmp__coll_send(mmp__sched_t *s, const mmp__arg_t *a, int peer, size_t off,
                   size_t len, int phase, int after, int check);
int mmp__coll_recv(mmp__sched_t *s, const mmp__arg_t *a, int peer, size_t off,
                   size_t len, int phase, int check);
/* A REDUCE of [src, src+len) into [dst, dst+len) after `a1` and `a2`
 * (either may be -1); `right`: src is the right operand. */
int mmp__coll_reduce(mmp__sched_t *s, size_t src, size_t dst, size_t len,
                     int right, int a1, int a2);
/* A NOP after `a1` and `a2`. */
int mmp__coll_join(mmp__sched_t *s, int a1, int a2);
/* A COPY after `a1`. */
int mmp__coll_copy(mmp__sched_t *s, size_t src, size_t dst, size_t len, int a1);
/* Block k of `parts` equal cuts of `len` bytes on element boundaries:
 * [*o, *o + *n). Every block is within one element of the others. */
void mmp__coll_block(size_t len, size_t esize, int parts, int k, size_t *o,
                     size_t *n);
/* Bytes and offsets of p blocks from counts and displacements (elements),
 * or equal blocks of `count` when counts is NULL; *hi: the end of the
 * last. 0, or MMP_ETOOBIG when a block does not fit a size_t. */
int mmp__coll_layout(int p, size_t esize, size_t count, const size_t *counts,
                     const size_t *displs, size_t *cnt, size_t *dsp,
                     size_t *hi);
/* The blocks of virtual members lo .. hi - 1 (member (base + v) mod n),
 * cnt[i] bytes at dsp[i], as (offset, length) pairs in `regs` (room for
 * hi - lo), adjacent ones merged, empty ones left out. Returns how many. */
int mmp__coll_regions(const mmp__arg_t *a, const size_t *dsp, const size_t *cnt,
                      int base, int lo, int hi, size_t *regs);
/* A send or receive of those regions as one message (packed when more
 * than one; the header only travels on a single region, where the two
 * ends agree it does). */
int mmp__coll_sendv(mmp__sched_t *s, const mmp__arg_t *a, int peer,
                    const size_t *regs, int nregs, int phase, int after,
                    int check);
int mmp__coll_recvv(mmp__sched_t *s, const mmp__arg_t *a, int peer,
                    const size_t *regs, int nregs, int phase, int check);

/* The fold of a reduction: member 2k sends its accumulator to 2k + 1,
 * which combines it on the left (rank order). Returns the op after which
 * this rank's accumulator holds its virtual rank's contribution (a NOP
 * for the even ones), or a negative error. `t` is len bytes of scratch. */
int mmp__fold_in(mmp__sched_t *s, const mmp__arg_t *a, size_t t, int phase);
/* And back: 2k + 1 sends the result to 2k, after `after`. Returns the op
 * after which this rank holds the result. */
int mmp__fold_out(mmp__sched_t *s, const mmp__arg_t *a, int after, int phase,
                  int from);

/* After a reduction to member `troot` (`done` there), the result moves
 * to a->root if that is another member: the root's receive waits for
 * everything it sent from its accumulator (ops from `from` on). Returns
 * this rank's final op. */
int mmp__reduce_hop(mmp__sched_t *s, const mmp__arg_t *a, int troot, int done,
                    int from, int phase);
/* The member a reduction tree is rooted at: the root, or member 0 when
 * the operation is not commutative (virtual order is then rank order). */
static inline int mmp__reduce_troot(const mmp__arg_t *a) {
  return a->noncomm ? 0 : a->root;
}

/* Blocks to (`in`, gather) or from the root a->root (rooted.c): flat,
 * or down a binomial tree of blocks (equal blocks only), and their prices
 * for p ranks and m-byte blocks. */
int mmp__rooted_flat(mmp__sched_t *s, const mmp__arg_t *a, int in);
int mmp__rooted_binomial(mmp__sched_t *s, const mmp__arg_t *a, int in);
double mmp__cost_rooted_flat(const mmp__cost_in_t *in);
double mmp__cost_rooted_binomial(const mmp__cost_in_t *in);

#endif /* MMP_COLLECTIVES_PATTERNS_BLOCKS_H */
