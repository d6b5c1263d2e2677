/* SPDX-License-Identifier: MIT */
/*
 * Recursive-halving reduce-scatter (Thakur, Rabenseifner & Gropp 2005),
 * and the halving that Rabenseifner's allreduce and reduce start with.
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
 *
 * Selected: by AUTO for reduce-scatter of short and medium blocks; the
 * ring takes long ones.
 */
#include <stdlib.h>

#include "collectives/core/coll.h"

#define PHASE_STEP 1
#define PHASE_OUT 2

int mmp__halving_build(mmp__sched_t *s, const mmp__coll_arg_t *a,
                       const size_t *bnd, int ordered, size_t t,
                       mmp__halving_t *h) {
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

/* Member me's block: [bnd[me], bnd[me + 1]) of a->len. The virtual
 * ranks' blocks are their members' together. */
static int halving_rs_build(mmp__sched_t *s, const mmp__coll_arg_t *a) {
  int n = a->g->n, me = a->g->me, q = mmp__pow2_floor(n), v, k, op,
      from = s->nops;
  size_t *vb = malloc(((size_t)q + 1) * sizeof(size_t));
  size_t t = mmp__sched_scratch(s, a->len);
  mmp__halving_t h;

  if (vb == NULL)
    return MMP_ENOMEM;
  for (v = 0; v < q; v++) {
    int m = mmp__fold_m(v, n);
    vb[v] = a->dsp[m > 0 && mmp__fold_v(m - 1, n) < 0 ? m - 1 : m] - a->off;
  }
  vb[q] = a->len;
  op = n == 1 ? mmp__coll_join(s, a->dep, -1)
              : mmp__halving_build(s, a, vb, 0, t, &h);
  free(vb);
  if (op < 0 || n == 1)
    return op;
  /* The folded ranks get their part of their partner's block. */
  v = mmp__fold_v(me, n);
  if (me < 2 * (n - q)) {
    if (v < 0) {
      int sent = mmp__coll_after_all(s, from);
      k = mmp__coll_recv(s, a, me + 1, a->dsp[me], a->cnt[me],
                         a->phase + PHASE_OUT, 0);
      if (k >= 0 && sent >= 0 && mmp__sched_dep(s, sent, k) != 0)
        return MMP_ENOMEM;
      return sent < 0 ? sent : k;
    }
    k = mmp__coll_send(s, a, me - 1, a->dsp[me - 1], a->cnt[me - 1],
                       a->phase + PHASE_OUT, op, 0);
    if (k < 0)
      return k;
  }
  return mmp__coll_after_all(s, from);
}

double mmp__cost_halving(int p, double m, const mmp_netmodel_t *nm) {
  int q = p > 1 ? mmp__pow2_floor(p) : 1;
  double f = (q - 1.0) / q,
         c = mmp__lg2(q) * nm->alpha + f * m * (nm->beta + nm->gamma);

  if (q != p)
    c += 2 * nm->alpha + m * (nm->beta + nm->gamma) + m / p * nm->beta;
  return c;
}

static double halving_cost(const mmp__coll_cost_in_t *in) {
  return mmp__cost_halving(in->p, in->m * in->p, in->nm);
}

const mmp__coll_alg_t mmp__reduce_scatter_halving_alg = {
    .coll = MMP_COLL_REDUCE_SCATTER,
    .id = MMP_REDUCE_SCATTER_HALVING,
    .name = "halving",
    .flags = MMP__COLL_F_AUTO,
    .prefer = 1,
    .build = halving_rs_build,
    .cost = halving_cost,
};
