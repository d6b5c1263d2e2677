/* SPDX-License-Identifier: MIT */
/*
 * Allreduce as a reduce, then a broadcast: the binomial reduce to rank 0
 * (reduce_binomial.c), then the broadcast AUTO would run for m bytes over
 * p ranks (the broadcast table's best part: the pipelined chain,
 * scatter-allgather or a tree, from the same model): ceil(log2 p)(alpha + m
 * beta + m gamma) + T_bcast(p, m). It is what the Jacobi port did by
 * hand. The broadcast's own choice makes it competitive where the reduce half
 * is cheap (few ranks) and the broadcast fast (the pipelined chain's m beta for
 * long vectors). Order: the binomial tree in rank order, computed once at rank
 * 0 and broadcast: any associative operation, the same bits everywhere.
 *
 * Selected: by AUTO where its price is lowest (rarely: the ring and
 * Rabenseifner carry fewer bytes).
 */
#include <string.h>

#include "collectives/allreduce/allreduce.h"

#define PHASE_REDUCE 0
#define PHASE_BCAST 5

int mmp__coll_bcast(mmp__sched_t *s, const mmp__group_t *g, int root,
                    size_t off, size_t len, int dep, int phase,
                    const mmp_netmodel_t *nm) {
  mmp__desc_t d;
  mmp__arg_t b;

  memset(&d, 0, sizeof(d));
  if (nm != NULL && g->n > 1)
    mmp__auto_choose(&mmp__bcast_family, MMP__PICK_FLAT, g->n, len, nm, &d);
  else
    d.alg = mmp__alg_find(&mmp__bcast_family, "binomial");
  memset(&b, 0, sizeof(b));
  b.g = g;
  b.root = root;
  b.off = off;
  b.len = len;
  b.seg = d.seg;
  b.dep = dep;
  b.phase = phase;
  b.radix = MMP__RADIX_DEFAULT;
  return d.alg->build(s, &b);
}

static int rb_build(mmp__sched_t *s, const mmp__arg_t *a) {
  mmp__arg_t b = *a;
  int done;

  b.root = 0;
  b.phase = a->phase + PHASE_REDUCE;
  done = mmp__reduce_binomial_build(s, &b);
  if (done < 0)
    return done;
  return mmp__coll_bcast(s, a->g, 0, a->off, a->len, done,
                         a->phase + PHASE_BCAST, a->nm);
}

static double rb_cost(const mmp__cost_in_t *in) {
  mmp__desc_t d;

  if (in->p < 2)
    return 0;
  memset(&d, 0, sizeof(d));
  return mmp__cost_reduce_binomial(in->p, in->m, in->nm) +
         mmp__auto_choose(&mmp__bcast_family, MMP__PICK_FLAT, in->p,
                          (size_t)in->m, in->nm, &d);
}

const mmp__alg_t mmp__allreduce_reduce_bcast_alg = {
    .name = "reduce_bcast",
    .summary = "binomial reduce, then a broadcast",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED | MMP__ALG_MODEL,
    .prefer = 4,
    .build = rb_build,
    .cost = rb_cost,
};
