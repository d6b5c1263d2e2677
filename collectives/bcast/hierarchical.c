/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical broadcast ([Hasanov et al. 2015], section 3): G groups of about
 * p / G ranks; the group leaders broadcast among themselves with one algorithm
 * (outer), then every group broadcasts internally with another (inner),
 * all groups in parallel.
 *
 * Groups are runs of consecutive virtual ranks (relative to the root), the
 * first p mod G of them one member larger; the first member of each group
 * leads it, so the root leads group 0.
 *
 * Cost (Hockney): T_outer(G) + T_inner(ceil(p / G)), each the best
 * non-hierarchical algorithm for its size; G = ceil(sqrt(p)) by default.
 *
 * Inside and between groups run the classic algorithms of [Hasanov et al. 2015]
 * (MMP__BCAST_F_GROUPS): not the symmetric broadcast, which needs every
 * receiver of the whole machine, nor the k-nomial tree, whose radix is an
 * option of the top-level call.
 *
 * Selected: by AUTO where the two levels price below every flat shape
 * (many ranks, latency-bound sizes); and when asked for.
 */
#include <stdlib.h>

#include "collectives/core/collectives.h"

static int hier_build(mmp__sched_t *s, const mmp__bcast_arg_t *top) {
  const mmp__group_t *all = top->g;
  int p = all->n, G = top->groups, g, i, mine = 0;
  int v = mmp__vrank(all->me, top->root, p);
  int *leaders = malloc((size_t)G * sizeof(int));
  int *inner = malloc((size_t)p * sizeof(int));
  mmp__group_t outer_g, inner_g;
  int rc = MMP_ENOMEM;

  assert(G >= 1 && G <= p && top->inner != NULL && top->outer != NULL);
  if (leaders == NULL || inner == NULL)
    goto out;
  for (g = 0; g < G; g++) {
    leaders[g] =
        all->ranks[mmp__rrank(mmp__group_start(p, G, g), top->root, p)];
    if (v >= mmp__group_start(p, G, g))
      mine = g;
  }
  outer_g.n = G;
  outer_g.ranks = leaders;
  outer_g.me = v == mmp__group_start(p, G, mine) ? mine : -1;
  inner_g.n = mmp__group_start(p, G, mine + 1) - mmp__group_start(p, G, mine);
  for (i = 0; i < inner_g.n; i++)
    inner[i] =
        all->ranks[mmp__rrank(mmp__group_start(p, G, mine) + i, top->root, p)];
  inner_g.ranks = inner;
  inner_g.me = v - mmp__group_start(p, G, mine);
  rc = mmp__bcast_levels(s, top, &outer_g, &inner_g);
out:
  free(leaders);
  free(inner);
  return rc;
}

static double hier_cost(const mmp__bcast_cost_in_t *in) {
  int p = in->p, G = in->G;

  if (G <= 1 || G >= p)
    return INFINITY;
  return in->part(G, in->m, in->nm) + in->part((p + G - 1) / G, in->m, in->nm);
}

/* G = ceil(sqrt(p)) unless given; the algorithms inside and between
 * groups, unless given, are the best static ones for each level's size. */
static int hier_resolve(mmp__bcast_desc_t *d, const mmp_bcast_opts_t *o,
                        const mmp__bcast_env_t *env) {
  int p = env->p, G = d->groups > 0 ? d->groups : (int)ceil(sqrt((double)p));
  mmp_netmodel_t nm;
  size_t s2;
  int in = o->inner, out = o->outer, ignored, rc;

  if (G > p)
    G = p;
  if (in == 0 || out == 0) {
    if ((rc = mmp__netmodel_get(env->comm, &nm)) != 0)
      return rc;
    if (in == 0)
      env->choose((p + G - 1) / G, (size_t)d->len, &nm, &in, &s2, &ignored);
    if (out == 0)
      env->choose(G, (size_t)d->len, &nm, &out, &s2, &ignored);
  }
  /* Inside and between groups, only what composes there. */
  if (!(env->alg_of(in)->flags & MMP__BCAST_F_GROUPS))
    in = MMP_BCAST_BINOMIAL;
  if (!(env->alg_of(out)->flags & MMP__BCAST_F_GROUPS))
    out = MMP_BCAST_BINOMIAL;
  d->groups = G;
  d->inner = in;
  d->outer = out;
  return 0;
}

const mmp__bcast_alg_t mmp__bcast_hierarchical_alg = {
    .id = MMP_BCAST_HIERARCHICAL,
    .name = "hierarchical",
    .flags = MMP__BCAST_F_AUTO | MMP__BCAST_F_COMPOSITE,
    .prefer = 9,
    .inner_needs = MMP__BCAST_F_GROUPS,
    .outer_needs = MMP__BCAST_F_GROUPS,
    .build = hier_build,
    .cost = hier_cost,
    .resolve = hier_resolve,
};
