/* SPDX-License-Identifier: MIT */
/*
 * Allreduce as a reduce, then a broadcast: the binomial reduce to rank 0
 * (reduce_binomial.c), then the broadcast AUTO would run for m bytes over
 * p ranks (mmp__bcast_choose_flat: the pipelined chain, scatter-allgather
 * or a tree, from the same model):
 *   ceil(log2 p)(alpha + m beta + m gamma) + T_bcast(p, m).
 * It is what the Jacobi port did by hand. The broadcast's own
 * choice makes it competitive where the reduce half is cheap (few ranks)
 * and the broadcast fast (the pipelined chain's m beta for long vectors).
 * Order: the binomial tree in rank order, computed once at rank 0 and
 * broadcast: any associative operation, the same bits everywhere.
 *
 * Selected: by AUTO where its price is lowest (rarely: the ring and
 * Rabenseifner carry fewer bytes).
 */
#include <string.h>

#include "collectives/core/coll.h"

#define PHASE_REDUCE 0
#define PHASE_BCAST 5

int mmp__coll_bcast(mmp__sched_t *s, const mmp__group_t *g, int root,
                    size_t off, size_t len, int dep, int phase,
                    const mmp_netmodel_t *nm) {
  int alg = MMP_BCAST_BINOMIAL;
  mmp__bcast_arg_t b;

  memset(&b, 0, sizeof(b));
  b.seg = 0;
  if (nm != NULL && g->n > 1)
    mmp__bcast_choose_flat(g->n, len, nm, &alg, &b.seg);
  b.g = g;
  b.root = root;
  b.off = off;
  b.len = len;
  b.dep = dep;
  b.phase = phase;
  b.radix = MMP__KNOMIAL_RADIX_DEFAULT;
  return mmp__bcast_alg(alg)->build(s, &b);
}

static int rb_build(mmp__sched_t *s, const mmp__coll_arg_t *a) {
  mmp__coll_arg_t b = *a;
  int done;

  b.root = 0;
  b.phase = a->phase + PHASE_REDUCE;
  done = mmp__reduce_binomial_build(s, &b);
  if (done < 0)
    return done;
  return mmp__coll_bcast(s, a->g, 0, a->off, a->len, done,
                         a->phase + PHASE_BCAST, a->nm);
}

static double rb_cost(const mmp__coll_cost_in_t *in) {
  int alg;
  size_t seg;

  if (in->p < 2)
    return 0;
  return mmp__cost_reduce_binomial(in->p, in->m, in->nm) +
         mmp__bcast_choose_flat(in->p, (size_t)in->m, in->nm, &alg, &seg);
}

const mmp__coll_alg_t mmp__allreduce_reduce_bcast_alg = {
    .coll = MMP_COLL_ALLREDUCE,
    .id = MMP_ALLREDUCE_REDUCE_BCAST,
    .name = "reduce_bcast",
    .flags = MMP__COLL_F_AUTO | MMP__COLL_F_ORDERED,
    .prefer = 4,
    .build = rb_build,
    .cost = rb_cost,
};
