/* SPDX-License-Identifier: MIT */
/*
 * Recursive halving ([Thakur, Rabenseifner & Gropp 2005]): the
 * reduce-scatter of that name, and the halving that Rabenseifner's
 * allreduce and reduce start with.
 *
 * On q = 2^k virtual ranks (a non-power of two folds first, as in
 * recursive doubling): in each step a rank and its partner at distance
 * d hold the same range of blocks; each keeps one half, sends the other
 * and combines the half it receives, the lower rank's data on the left.
 * After log2 q steps each rank holds one block reduced over all ranks:
 *   log2 p alpha + ((p - 1)/p) m (beta + gamma)   (+ fold: alpha + m beta
 *   + m gamma, and alpha + m_i beta to hand the folded rank its block).
 * Order: with distances 1, 2, 4, ... ("ordered", Rabenseifner's
 * allreduce and reduce) a block is combined as a balanced tree in rank
 * order, ((x0 x1)(x2 x3))...; virtual rank v then holds block
 * bitreverse(v). With distances q/2, ..., 1 (the reduce-scatter, where
 * rank i must end with its own block i) the tree pairs x_i with
 * x_{i+q/2} first: commutative operations only.
 */
#include "collectives/patterns/reduce.h"

#define PHASE_STEP 1

int mmp__halving_build(mmp__sched_t *s, const mmp__arg_t *a, const size_t *bnd,
                       int ordered, size_t t, mmp__halving_t *h) {
  int n = a->g->n, q = mmp__pow2_floor(n), k, have;

  h->v = mmp__fold_v(a->g->me, n);
  h->steps = 0;
  h->lo[0] = 0;
  h->hi[0] = q;
  for (k = 1; k < q; k <<= 1)
    h->mask[h->steps++] = ordered ? k : q / (2 * k);
  have = mmp__fold_in(s, a, t, a->phase);
  for (k = 0; h->v >= 0 && k < h->steps; k++) {
    int pv = h->v ^ h->mask[k], peer = mmp__fold_m(pv, n), rcv, upper;
    int lo = h->lo[k], hi = h->hi[k], mid = lo + (hi - lo) / 2;
    int slo, shi;
    upper = (h->v & h->mask[k]) != 0;
    h->lo[k + 1] = upper ? mid : lo;
    h->hi[k + 1] = upper ? hi : mid;
    slo = upper ? lo : mid;
    shi = upper ? mid : hi;
    h->snd[k] =
        mmp__coll_send(s, a, peer, a->off + bnd[slo], bnd[shi] - bnd[slo],
                       a->phase + PHASE_STEP, have, k == 0);
    if (h->snd[k] < 0)
      return h->snd[k];
    rcv = mmp__coll_recv(s, a, peer, t, bnd[h->hi[k + 1]] - bnd[h->lo[k + 1]],
                         a->phase + PHASE_STEP, k == 0);
    if (rcv >= 0 && mmp__sched_dep(s, have, rcv) != 0)
      return MMP_ENOMEM;
    have = mmp__coll_reduce(s, t, a->off + bnd[h->lo[k + 1]],
                            bnd[h->hi[k + 1]] - bnd[h->lo[k + 1]], pv > h->v,
                            rcv, -1);
    if (have < 0)
      return have;
  }
  h->done = have;
  return have;
}

double mmp__cost_halving(int p, double m, const mmp_netmodel_t *nm) {
  int q = p > 1 ? mmp__pow2_floor(p) : 1;
  double f = (q - 1.0) / q,
         c = mmp__lg2(q) * nm->alpha + f * m * (nm->beta + nm->gamma);

  if (q != p)
    c += 2 * nm->alpha + m * (nm->beta + nm->gamma) + m / p * nm->beta;
  return c;
}
