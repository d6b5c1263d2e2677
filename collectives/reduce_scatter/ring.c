/* SPDX-License-Identifier: MIT */
/*
 * Ring reduce-scatter: the first half of the ring allreduce
 * (allreduce_ring.c), shifted so that rank i ends with its own block i.
 * In step t rank i sends block i - t - 1 to i + 1 and combines block
 * i - t - 2 from i - 1:
 *   (p - 1)(alpha + (m/p)(beta + gamma))   for blocks of m/p bytes,
 * every link carrying (p - 1)/p of the vector, the bandwidth bound.
 * Order: block b combined along the ring from rank b + 1 round to b:
 * commutative operations only.
 *
 * Selected: by AUTO for long blocks.
 */
#include <stdlib.h>

#include "collectives/reduce_scatter/reduce_scatter.h"

static int rs_ring_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, k, rc;
  size_t *bnd = malloc(((size_t)n + 1) * sizeof(size_t));

  if (bnd == NULL)
    return MMP_ENOMEM;
  for (k = 0; k < n; k++)
    bnd[k] = a->dsp[k] - a->off;
  bnd[n] = a->len;
  rc = mmp__ring_build(s, a, bnd, 0, 0);
  free(bnd);
  return rc;
}

/* m: one block. */
static double rs_ring_cost(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * (in->nm->beta + in->nm->gamma));
}

const mmp__alg_t mmp__reduce_scatter_ring_alg = {
    .name = "ring",
    .summary = "ring reduce-scatter",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO,
    .prefer = 2,
    .build = rs_ring_build,
    .cost = rs_ring_cost,
};
