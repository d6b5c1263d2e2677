/* SPDX-License-Identifier: MIT */
/*
 * Allgather on the s-to-p machinery ([Hambrusch et al. 1998] with s = p): every
 * rank a source, the blocks in rank order, and the s-to-p algorithm AUTO would
 * choose for these lengths (s2p/choose.c: the ring, Br_Lin, the grid
 * algorithms, 2-Step, PersAlltoAll), priced by running its plan; Br_Lin
 * without a model. Its cost is that algorithm's.
 * It needs the blocks packed in rank order (allgather, and allgatherv
 * whose displacements are the running sums of the counts).
 *
 * Selected: by AUTO where the s-to-p choice is cheaper than the ring,
 * recursive doubling and Bruck.
 */
#include <stdlib.h>

#include "collectives/s2p/s2p.h"
#include "collectives/allgather/allgather.h"

static int s2p_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__alg_t *alg;
  int n = a->g->n, i, rc, from = s->nops;
  mmp__s2p_t x;

  for (i = 0; i < n; i++)
    if (a->dsp[i] != (i == 0 ? 0 : a->dsp[i - 1] + a->cnt[i - 1]))
      return MMP_EINVAL; /* not packed in rank order */
  rc = mmp__s2p_init(&x, n, a->g->me, 0, a->cnt);
  if (rc != 0)
    return rc;
  if (a->nm != NULL && n > 1)
    alg = mmp__s2p_choose(&x, a->nm, NULL);
  else
    alg = mmp__alg_find(&mmp__s2p_family, "br_lin");
  rc = mmp__s2p_build(s, &x, alg, a->nm);
  mmp__s2p_fini(&x);
  return rc < 0 ? rc : mmp__coll_after_all(s, from);
}

static double s2p_cost(const mmp__cost_in_t *in) {
  size_t *lens = malloc((size_t)in->p * sizeof(size_t));
  double c = INFINITY;
  mmp__s2p_t x;
  int i;

  if (lens == NULL)
    return c;
  for (i = 0; i < in->p; i++)
    lens[i] = (size_t)in->m;
  if (mmp__s2p_init(&x, in->p, 0, 0, lens) == 0) {
    c = mmp__s2p_cost(mmp__s2p_choose(&x, in->nm, NULL), &x, in->nm, NULL);
    mmp__s2p_fini(&x);
  }
  free(lens);
  return c;
}

const mmp__alg_t mmp__allgather_s2p_alg = {
    .name = "s2p",
    .summary = "the s-to-p machinery, every rank a source",
    .flags = MMP__ALG_AUTO | MMP__ALG_MODEL,
    .prefer = 4,
    .build = s2p_build,
    .cost = s2p_cost,
};
