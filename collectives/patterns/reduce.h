/* SPDX-License-Identifier: MIT */
/*
 * Reductions several collectives are made of: tree reductions and the
 * binomial reduce (reduce_tree.c), recursive halving (halving.c), and the
 * ring (ring.c), with their Hockney prices (gamma: seconds per byte
 * combined). Reduce, allreduce and reduce-scatter rows run them on the
 * accumulator their front-ends lay out (patterns/blocks.h).
 */
#ifndef MMP_COLLECTIVES_PATTERNS_REDUCE_H
#define MMP_COLLECTIVES_PATTERNS_REDUCE_H

#include "collectives/patterns/blocks.h"
#include "collectives/patterns/segments.h"

/* The receive-combine-forward step of every tree reduction
 * (reduce_tree.c): segment by segment, receive each of `kids` (group
 * members) into scratch, combine them on the right in the order given,
 * and send the result to `parent` (-1: none). Returns the op after which
 * every op of it is done. */
int mmp__reduce_tree(mmp__sched_t *s, const mmp__arg_t *a, int parent,
                     const int *kids, int nkids, int phase);

/* The same step, `how` a set of: MMP__RT_LEFT, the kids' results combined
 * on the left of this rank's (a chain in rank order, where what comes
 * from below is x_0 o ... o x_{i-1}); MMP__RT_KEEP, at most one kid's
 * received into a->res, at each segment's offset, and kept there (the
 * exclusive scan's result), a rank with no parent only receiving it. */
enum { MMP__RT_LEFT = 0x1, MMP__RT_KEEP = 0x2 };
int mmp__reduce_tree_ex(mmp__sched_t *s, const mmp__arg_t *a, int parent,
                        const int *kids, int nkids, int phase, unsigned how);

/* The binomial reduce to a->root (to member 0 first, then a hop, when
 * the operation is not commutative), pipelined in a->seg segments; and
 * its price for p ranks and m bytes. */
int mmp__reduce_binomial_build(mmp__sched_t *s, const mmp__arg_t *a);
double mmp__cost_reduce_binomial(int p, double m, const mmp_netmodel_t *nm);

/* The halving (halving.c) on q =
 * mmp__pow2_floor(n) blocks [bnd[b], bnd[b + 1]) of the accumulator
 * (relative to a->off), after the fold of a non-power of two: virtual
 * rank v (h->v, -1 for the ranks folded out) ends holding the range of
 * blocks [h->lo[steps], h->hi[steps]), one block, reduced; with
 * `ordered` in rank order (distances 1, 2, ...), else with distances
 * q/2, ..., 1 (v ends with block v). h->lo/hi[k] is its range before step
 * k, h->snd[k] the send of step k. `t` is a->len bytes of scratch.
 * Returns the op after which the block is reduced. */
typedef struct mmp__halving_s {
  int v, steps;
  int mask[32];
  int lo[33], hi[33];
  int snd[32];
  int done;
} mmp__halving_t;
int mmp__halving_build(mmp__sched_t *s, const mmp__arg_t *a, const size_t *bnd,
                       int ordered, size_t t, mmp__halving_t *h);

/* The ring (ring.c) over n blocks `bnd` (relative to a->off):
 * rank i ends with block i + shift reduced, and with `allgather` every
 * block. Returns the op after which this rank's part is done. */
int mmp__ring_build(mmp__sched_t *s, const mmp__arg_t *a, const size_t *bnd,
                    int shift, int allgather);

/* The halving's price for p ranks and an m-byte vector. */
double mmp__cost_halving(int p, double m, const mmp_netmodel_t *nm);
/* The ring allreduce's price for p ranks and an m-byte vector. */
double mmp__cost_ring(int p, double m, const mmp_netmodel_t *nm);

#endif /* MMP_COLLECTIVES_PATTERNS_REDUCE_H */
