/* SPDX-License-Identifier: MIT */
/*
 * Rabenseifner's reduce: a reduce-scatter by recursive halving
 * (reduce_scatter_halving.c), then every block straight to the root
 * (Rabenseifner 2004; MPICH's long-message reduce gathers by a binomial
 * tree instead, which saves alphas and costs nothing in bytes):
 *   log2 p alpha + ((p - 1)/p) m (beta + gamma)
 *   + (q - 1) alpha + ((p - 1)/p) m beta     (q = 2^floor(log2 p))
 *   + (p not a power of two) alpha + m (beta + gamma).
 * The root's link carries m bytes in, against the binomial tree's
 * log2 p m.
 * Order: every block a balanced tree in rank order (the halving at
 * distances 1, 2, 4, ...): any associative operation.
 *
 * Selected: by AUTO for long vectors where log2 p whole copies cost more
 * than the extra alphas.
 */
#include <stdlib.h>

#include "collectives/reduce/reduce.h"

#define PHASE_GATHER 3

/* The block virtual rank v of q holds after the ordered halving: the
 * bits of v from the lowest, as the halving splits. */
static int block_of(int v, int q) {
  int lo = 0, hi = q, mask;

  for (mask = 1; mask < q; mask <<= 1) {
    int mid = lo + (hi - lo) / 2;
    if (v & mask)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

static int rab_reduce_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, q = mmp__pow2_floor(n), k, rc = 0;
  int from = s->nops, have, sent;
  size_t t = mmp__sched_scratch(s, a->len), o, len;
  size_t *bnd = malloc(((size_t)q + 1) * sizeof(size_t));
  mmp__halving_t h;

  if (bnd == NULL)
    return MMP_ENOMEM;
  for (k = 0; k < q; k++) {
    mmp__coll_block(a->len, a->esize, q, k, &o, &len);
    bnd[k] = o;
  }
  bnd[q] = a->len;
  have = n == 1 ? mmp__coll_join(s, a->dep, -1)
                : mmp__halving_build(s, a, bnd, 1, t, &h);
  if (have < 0 || n == 1) {
    free(bnd);
    return have;
  }
  if (me != a->root) {
    if (h.v >= 0)
      rc = mmp__coll_send(s, a, a->root, a->off + bnd[h.lo[h.steps]],
                          bnd[h.hi[h.steps]] - bnd[h.lo[h.steps]],
                          a->phase + PHASE_GATHER, have, 0);
  } else {
    /* Into the accumulator the root sent from in the halving. */
    sent = mmp__coll_after_all(s, from);
    for (k = 0; k < q && sent >= 0 && rc >= 0; k++) {
      int m = mmp__fold_m(k, n), b = block_of(k, q), r;
      if (m == me)
        continue;
      r = mmp__coll_recv(s, a, m, a->off + bnd[b], bnd[b + 1] - bnd[b],
                         a->phase + PHASE_GATHER, 0);
      rc = r < 0 ? r : mmp__sched_dep(s, sent, r);
    }
    if (sent < 0)
      rc = sent;
  }
  free(bnd);
  return rc < 0 ? rc : mmp__coll_after_all(s, from);
}

static double rab_reduce_cost(const mmp__cost_in_t *in) {
  int q = in->p > 1 ? mmp__pow2_floor(in->p) : 1;

  return mmp__cost_halving(in->p, in->m, in->nm) + (q - 1) * in->nm->alpha +
         (in->p - 1.0) / in->p * in->m * in->nm->beta;
}

const mmp__alg_t mmp__reduce_rabenseifner_alg = {
    .name = "rabenseifner",
    .summary = "reduce-scatter by recursive halving, then a gather",
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 3,
    .build = rab_reduce_build,
    .cost = rab_reduce_cost,
};
