/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical allreduce: G = ceil(sqrt(p)) groups of consecutive ranks;
 * each reduces to its first member (binomial tree), the G leaders run an
 * allreduce among themselves (recursive doubling or Rabenseifner, the
 * cheaper under the model), and each leader broadcasts inside its group
 * (the broadcast AUTO would run):
 *   cost_reduce(ceil(p/G)) + min(cost_rd, cost_rab)(G) + T_bcast(ceil(p/G)).
 * Like every hierarchical collective it pays where links inside groups
 * are faster than between them, which Hockney's model does not see.
 * Order: groups in rank order inside (binomial trees), then the leaders
 * in rank order: any associative operation; the leaders compute the
 * same bits and broadcast them.
 *
 * Selected: when asked for, and by AUTO's rule for short vectors where
 * ranks share CPUs (mmp__allreduce_pick); Hockney's model prices the flat
 * algorithms lower everywhere.
 */
#include <stdlib.h>

#include "collectives/allreduce/allreduce.h"

#define PHASE_INNER 0
#define PHASE_LEADERS 3
#define PHASE_BCAST 10

static int leaders_rd(int G, double m, const mmp_netmodel_t *nm) {
  return nm == NULL ||
         mmp__cost_rd(G, m, nm) <= mmp__cost_rabenseifner(G, m, nm);
}

static int hier_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, sz = mmp__hier_size(n), done;
  int *ranks = malloc(2 * (size_t)n * sizeof(int));
  mmp__group_t gi, go;
  mmp__arg_t b = *a;

  if (ranks == NULL)
    return MMP_ENOMEM;
  b.root = 0;
  mmp__hier_groups(&b, 0, sz, ranks, &gi, ranks + n, &go);
  b.g = &gi;
  b.phase = a->phase + PHASE_INNER;
  done = mmp__reduce_binomial_build(s, &b);
  if (done >= 0 && go.me >= 0) {
    b.g = &go;
    b.dep = done;
    b.phase = a->phase + PHASE_LEADERS;
    done = leaders_rd(go.n, (double)a->len, a->nm)
               ? mmp__allreduce_rd_build(s, &b)
               : mmp__allreduce_rabenseifner_build(s, &b);
  }
  if (done >= 0)
    done = mmp__coll_bcast(s, &gi, 0, a->off, a->len, done,
                           a->phase + PHASE_BCAST, a->nm);
  free(ranks);
  return done;
}

static double hier_cost(const mmp__cost_in_t *in) {
  int sz = mmp__hier_size(in->p), G = (in->p + sz - 1) / sz;
  mmp__desc_t d;
  double lead = fmin(mmp__cost_rd(G, in->m, in->nm),
                     mmp__cost_rabenseifner(G, in->m, in->nm));

  return mmp__cost_reduce_binomial(sz, in->m, in->nm) + lead +
         (sz > 1 ? mmp__auto_choose(&mmp__bcast_family, MMP__PICK_FLAT, sz,
                                    (size_t)in->m, in->nm, &d)
                 : 0);
}

const mmp__alg_t mmp__allreduce_hierarchical_alg = {
    .name = "hierarchical",
    .summary = "sqrt(p) groups: reduce, the leaders' allreduce, broadcast",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_ORDERED | MMP__ALG_MODEL,
    .build = hier_build,
    .cost = hier_cost,
};

/* Where ranks outnumber CPUs, a short allreduce pays for every message
 * any rank handles, not for its longest chain: the CPUs that would run
 * the next hop are busy with other ranks' messages. The hierarchical
 * row handles about 2p + G log2 G messages, recursive doubling p log2 p
 * and Rabenseifner's 2p log2 p, so AUTO's choice of either gives way to
 * it for a vector of up to SHARED_HIER_MAX bytes on 8 ranks or more.
 * A rule, not a price, as the broadcast's (docs/design/auto.md, "Ranks
 * that share CPUs"; the figures are in its history). */
#define SHARED_HIER_MAX (8u * 1024)
#define SHARED_HIER_MIN_P 8

double mmp__allreduce_pick(const mmp__family_t *f, const mmp__query_t *q,
                           mmp__desc_t *d) {
  double best = mmp__auto_pick(f, q, d);

  if (q->nm->shared_cpus && q->level == MMP__PICK_TOP &&
      q->p >= SHARED_HIER_MIN_P && q->len <= SHARED_HIER_MAX &&
      (d->alg == &mmp__allreduce_rd_alg ||
       d->alg == &mmp__allreduce_rabenseifner_alg)) {
    d->alg = &mmp__allreduce_hierarchical_alg;
    d->seg = 0;
    d->groups = 0;
  }
  return best;
}
