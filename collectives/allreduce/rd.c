/* SPDX-License-Identifier: MIT */
/*
 * Recursive doubling allreduce (Thakur, Rabenseifner & Gropp 2005, as
 * MPICH's short-message allreduce).
 *
 * In round k virtual rank v and v XOR 2^k swap their whole vectors and
 * both combine them, the lower rank's on the left, so after log2 q rounds
 * every rank holds the reduction of all q. A non-power of two folds first
 * (member 2k sends its vector to 2k + 1, k < p - q) and unfolds at the
 * end (2k + 1 sends the result back):
 *   ceil(log2 p)(alpha + m beta + m gamma)
 *   + (p not a power of two) 2(alpha + m beta) + m gamma.
 * Order: a balanced tree in rank order, ((x0 x1)(x2 x3))..., each pair
 * computed by both partners alike, so every rank gets the same bits; any
 * associative operation.
 *
 * Selected: by AUTO for short vectors, where log2 p latencies beat the
 * ring's 2(p - 1).
 */
#include "collectives/allreduce/allreduce.h"

#define PHASE_FOLD 0
#define PHASE_ROUND 1
#define PHASE_UNFOLD 2

int mmp__allreduce_rd_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, q = mmp__pow2_floor(n);
  int v = mmp__fold_v(me, n), from = s->nops, mask, have;
  size_t t = mmp__sched_scratch(s, a->len);

  if (n == 1)
    return mmp__coll_join(s, a->dep, -1);
  have = mmp__fold_in(s, a, t, a->phase + PHASE_FOLD);
  for (mask = 1; v >= 0 && mask < q; mask <<= 1) {
    int pv = v ^ mask, peer = mmp__fold_m(pv, n), snd, rcv;
    snd = mmp__coll_send(s, a, peer, a->off, a->len, a->phase + PHASE_ROUND,
                         have, mask == 1);
    rcv = mmp__coll_recv(s, a, peer, t, a->len, a->phase + PHASE_ROUND,
                         mask == 1);
    /* The scratch is free once the previous round combined it. */
    if (rcv >= 0 && have >= 0 && mmp__sched_dep(s, have, rcv) != 0)
      return MMP_ENOMEM;
    /* The send reads the accumulator the combination writes. */
    have = mmp__coll_reduce(s, t, a->off, a->len, pv > v, rcv, snd);
    if (have < 0)
      return have;
  }
  return mmp__fold_out(s, a, have, a->phase + PHASE_UNFOLD, from);
}

double mmp__cost_rd(int p, double m, const mmp_netmodel_t *nm) {
  int q = p > 1 ? mmp__pow2_floor(p) : 1;
  double c = mmp__lg2(q) * (nm->alpha + m * nm->beta + m * nm->gamma);

  if (q != p)
    c += 2 * (nm->alpha + m * nm->beta) + m * nm->gamma;
  return c;
}

static double rd_cost(const mmp__cost_in_t *in) {
  return mmp__cost_rd(in->p, in->m, in->nm);
}

const mmp__alg_t mmp__allreduce_rd_alg = {
    .name = "recursive_doubling",
    .summary = "log2 p exchanges of the whole vector: short vectors",
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 1,
    .build = mmp__allreduce_rd_build,
    .cost = rd_cost,
};
