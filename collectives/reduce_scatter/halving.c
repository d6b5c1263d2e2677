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

#include "collectives/reduce_scatter/reduce_scatter.h"

#define PHASE_STEP 1
#define PHASE_OUT 2

/* Member me's block: [bnd[me], bnd[me + 1]) of a->len. The virtual
 * ranks' blocks are their members' together. */
static int halving_rs_build(mmp__sched_t *s, const mmp__arg_t *a) {
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

static double halving_cost(const mmp__cost_in_t *in) {
  return mmp__cost_halving(in->p, in->m * in->p, in->nm);
}

const mmp__alg_t mmp__reduce_scatter_halving_alg = {
    .name = "halving",
    .summary = "recursive halving",
    .flags = MMP__ALG_AUTO,
    .prefer = 1,
    .build = halving_rs_build,
    .cost = halving_cost,
};
