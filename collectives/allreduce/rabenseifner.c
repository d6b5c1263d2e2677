/* SPDX-License-Identifier: MIT */
/*
 * Rabenseifner's allreduce (recursive halving, then recursive doubling;
 * Rabenseifner 2004, Thakur, Rabenseifner & Gropp 2005; Gloo's
 * allreduce_halving_doubling).
 *
 * A reduce-scatter by recursive halving leaves every virtual rank one
 * block of q, reduced (reduce_scatter_halving.c), and an allgather by
 * recursive doubling retraces the steps backwards, each rank sending all
 * it holds to the partner of that step. Non-powers of two fold first and
 * unfold at the end, as in recursive doubling:
 *   2 log2 p alpha + 2((p - 1)/p) m beta + ((p - 1)/p) m gamma
 *   + (p not a power of two) 2(alpha + m beta) + m gamma.
 * The bytes of the ring with the latency of the trees.
 * Order: the halving runs at distances 1, 2, 4, ..., so every block is a
 * balanced tree in rank order, ((x0 x1)(x2 x3))..., computed once by one
 * rank and copied: any associative operation, the same bits everywhere.
 *
 * Selected: by AUTO for medium and long vectors, and for every vector
 * beyond the short ones when the operation is not commutative.
 */
#include <stdlib.h>

#include "collectives/allreduce/allreduce.h"

#define PHASE_AG 3
#define PHASE_UNFOLD 4

int mmp__allreduce_rabenseifner_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, q = mmp__pow2_floor(n), k, have, from = s->nops;
  size_t t = mmp__sched_scratch(s, a->len), o, len;
  size_t *bnd = malloc(((size_t)q + 1) * sizeof(size_t));
  mmp__halving_t h;

  if (bnd == NULL)
    return MMP_ENOMEM;
  if (n == 1) {
    free(bnd);
    return mmp__coll_join(s, a->dep, -1);
  }
  for (k = 0; k < q; k++) {
    mmp__coll_block(a->len, a->esize, q, k, &o, &len);
    bnd[k] = o;
  }
  bnd[q] = a->len;
  have = mmp__halving_build(s, a, bnd, 1, t, &h);
  /* The allgather: the steps backwards, all a rank holds each time. */
  for (k = h.steps - 1; have >= 0 && h.v >= 0 && k >= 0; k--) {
    int pv = h.v ^ h.mask[k], peer = mmp__fold_m(pv, n), snd, rcv;
    int mlo = h.lo[k + 1], mhi = h.hi[k + 1];
    int plo = mlo == h.lo[k] ? mhi : h.lo[k];
    int phi = mlo == h.lo[k] ? h.hi[k] : mlo;
    snd = mmp__coll_send(s, a, peer, a->off + bnd[mlo], bnd[mhi] - bnd[mlo],
                         a->phase + PHASE_AG, have, 0);
    rcv = mmp__coll_recv(s, a, peer, a->off + bnd[plo], bnd[phi] - bnd[plo],
                         a->phase + PHASE_AG, 0);
    /* Into the half this rank sent in that step of the halving. */
    if (rcv >= 0 && mmp__sched_dep(s, h.snd[k], rcv) != 0)
      rcv = MMP_ENOMEM;
    have = mmp__coll_join(s, snd, rcv);
  }
  free(bnd);
  if (have < 0)
    return have;
  return mmp__fold_out(s, a, have, a->phase + PHASE_UNFOLD, from);
}

double mmp__cost_rabenseifner(int p, double m, const mmp_netmodel_t *nm) {
  int q = p > 1 ? mmp__pow2_floor(p) : 1;
  double f = (q - 1.0) / q, c = 2 * mmp__lg2(q) * nm->alpha +
                                2 * f * m * nm->beta + f * m * nm->gamma;

  if (q != p)
    c += 2 * (nm->alpha + m * nm->beta) + m * nm->gamma;
  return c;
}

static double rab_cost(const mmp__cost_in_t *in) {
  return mmp__cost_rabenseifner(in->p, in->m, in->nm);
}

const mmp__alg_t mmp__allreduce_rabenseifner_alg = {
    .name = "rabenseifner",
    .summary = "recursive halving, then recursive doubling",
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 3,
    .build = mmp__allreduce_rabenseifner_build,
    .cost = rab_cost,
};
