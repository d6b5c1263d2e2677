/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical reduce ([Hasanov et al. 2015]'s hierarchical transformation, run
 * towards the root): G = ceil(sqrt(p)) groups of consecutive virtual
 * ranks, each reduced to its first member by a binomial tree, then the
 * G leaders reduced to the root by another:
 *   cost_binomial(ceil(p/G)) + cost_binomial(G).
 * Hockney's model prices it at the flat tree's ceil(log2 p) rounds or
 * a little more; it pays where links between groups are slower than
 * inside them (racks, hosts), which the model does not see.
 * Order: the virtual ranks in order, groups inside then leaders, as
 * binomial trees; rooted at rank 0 for a non-commutative operation,
 * which then hands the result to the root.
 *
 * Selected: when asked for (AUTO does not: the flat binomial tree costs
 * no more in the model).
 */
#include <stdlib.h>

#include "collectives/reduce/reduce.h"

#define PHASE_INNER 0
#define PHASE_OUTER 3
#define PHASE_HOP 6

/* Group size for n members: ceil(n / ceil(sqrt(n))). */
static int hier_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, troot = mmp__reduce_troot(a), sz = mmp__hier_size(n);
  int *inner = malloc((size_t)n * sizeof(int) * 2), from = s->nops, done;
  mmp__group_t gi, go;
  mmp__arg_t b = *a;

  if (inner == NULL)
    return MMP_ENOMEM;
  mmp__hier_groups(a, troot, sz, inner, &gi, inner + n, &go);
  b.g = &gi;
  b.root = 0;
  b.phase = a->phase + PHASE_INNER;
  done = mmp__reduce_binomial_build(s, &b);
  if (done >= 0 && go.me >= 0) {
    b.g = &go;
    b.dep = done;
    b.phase = a->phase + PHASE_OUTER;
    done = mmp__reduce_binomial_build(s, &b);
  }
  free(inner);
  return mmp__reduce_hop(s, a, troot, done, from, a->phase + PHASE_HOP);
}

static double hier_cost(const mmp__cost_in_t *in) {
  int sz = mmp__hier_size(in->p);

  return mmp__cost_reduce_binomial(sz, in->m, in->nm) +
         mmp__cost_reduce_binomial((in->p + sz - 1) / sz, in->m, in->nm);
}

const mmp__alg_t mmp__reduce_hierarchical_alg = {
    .name = "hierarchical",
    .summary = "sqrt(p) groups, then their leaders",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_ORDERED,
    .build = hier_build,
    .cost = hier_cost,
};
