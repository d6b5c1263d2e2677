/* SPDX-License-Identifier: MIT */
/*
 * Ring allreduce: a ring reduce-scatter, then a ring allgather (Patarasuk
 * & Yuan 2009; Gloo's allreduce_ring, Baidu's and Horovod's ring).
 *
 * The vector is cut into p blocks on element boundaries. In step t of the
 * reduce-scatter rank i sends block i - t to i + 1 and combines block
 * i - t - 1 from i - 1 into its own; after p - 1 steps rank i holds block
 * i + 1 reduced over all ranks, and p - 1 allgather steps pass the
 * reduced blocks round. Every link carries 2(p - 1)/p m bytes, the
 * bandwidth bound of any allreduce:
 *   2(p - 1) alpha + 2((p - 1)/p) m beta + ((p - 1)/p) m gamma.
 * Order: block b is combined along the ring starting at rank b,
 * x_b o x_{b+1} o ... o x_{b-1}, once, by one rank, then copied: every
 * rank gets the same bits. Commutative operations only.
 *
 * The segmented variant cuts every block into segments: a rank combines
 * segment j while segment j + 1 arrives, and forwards j as soon as it is
 * combined, so the arithmetic overlaps the network (Gloo's
 * allreduce_ring_chunked). Each segment costs an alpha more per step:
 *   2(p - 1)(alpha + (m/p) beta) + (p - 1)(S - 1) alpha + ((p - 1)/p) m gamma /
 * S for S segments per block; S = sqrt((m/p) gamma / alpha) (mmp__coll_seg).
 *
 * Selected: by AUTO for long vectors (the segmented ring where the
 * arithmetic is worth hiding).
 */
#include <stdlib.h>

#include "collectives/allreduce/allreduce.h"

#define PHASE_RS 0
#define PHASE_AG 1

/* Equal blocks: the allreduce. */
static int ring_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, k, rc;
  size_t *bnd = malloc(((size_t)n + 1) * sizeof(size_t)), o, len;

  if (bnd == NULL)
    return MMP_ENOMEM;
  for (k = 0; k < n; k++) {
    mmp__coll_block(a->len, a->esize, n, k, &o, &len);
    bnd[k] = o;
  }
  bnd[n] = a->len;
  rc = mmp__ring_build(s, a, bnd, 1, 1);
  free(bnd);
  return rc;
}

static double ring_cost(const mmp__cost_in_t *in) {
  return mmp__cost_ring(in->p, in->m, in->nm);
}

/* With mmp__coll_seg's segment count S (1: the plain ring). */
static double ring_segmented_cost(const mmp__cost_in_t *in) {
  double f = (in->p - 1.0) / in->p, S = 1;
  size_t seg = mmp__coll_seg(in->p, (size_t)in->m, 1, in->nm);

  if (seg > 0)
    S = ceil(in->m / in->p / (double)seg);
  return 2 * (in->p - 1) * in->nm->alpha + 2 * f * in->m * in->nm->beta +
         (in->p - 1) * (S - 1) * in->nm->alpha + f * in->m * in->nm->gamma / S;
}

const mmp__alg_t mmp__allreduce_ring_alg = {
    .name = "ring",
    .summary = "reduce-scatter and allgather rings",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO,
    .prefer = 2,
    .build = ring_build,
    .cost = ring_cost,
};

const mmp__alg_t mmp__allreduce_ring_segmented_alg = {
    .name = "ring_segmented",
    .summary = "the ring in segments: arithmetic overlaps the network",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_SEGMENTED,
    .prefer = 5,
    .build = ring_build,
    .cost = ring_segmented_cost,
};
