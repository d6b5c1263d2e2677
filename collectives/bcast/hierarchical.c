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
#include <string.h>

#include "collectives/bcast/bcast.h"

static int hier_build(mmp__sched_t *s, const mmp__arg_t *top) {
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

static double hier_cost(const mmp__cost_in_t *in) {
  int p = in->p, G = in->G;

  if (G <= 1 || G >= p)
    return INFINITY;
  return mmp__auto_part(in, G, in->m, in->nm, 0) +
         mmp__auto_part(in, (p + G - 1) / G, in->m, in->nm, 0);
}

/* G = ceil(sqrt(p)) unless given; the algorithms inside and between
 * groups, unless given, are the best static ones for each level's size. */
static int hier_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  int p = env->p, G = d->groups > 0 ? d->groups : (int)ceil(sqrt((double)p));
  mmp_netmodel_t nm;
  mmp__desc_t part;
  int rc;

  if (G > p)
    G = p;
  if (d->inner == NULL || d->outer == NULL) {
    if ((rc = mmp__env_model(env, &nm)) != 0)
      return rc;
    memset(&part, 0, sizeof(part));
    if (d->inner == NULL) {
      mmp__auto_choose(env->fam, MMP__PICK_STATIC, (p + G - 1) / G,
                       (size_t)d->count, &nm, &part);
      d->inner = part.alg;
    }
    if (d->outer == NULL) {
      mmp__auto_choose(env->fam, MMP__PICK_STATIC, G, (size_t)d->count, &nm,
                       &part);
      d->outer = part.alg;
    }
  }
  /* Inside and between groups, only what composes there. */
  if (!(d->inner->flags & MMP__ALG_PART))
    d->inner = &mmp__bcast_binomial_alg;
  if (!(d->outer->flags & MMP__ALG_PART))
    d->outer = &mmp__bcast_binomial_alg;
  d->groups = G;
  return 0;
}

const mmp__alg_t mmp__bcast_hierarchical_alg = {
    .name = "hierarchical",
    .summary = "G groups: the leaders first, then every group",
    .takes = MMP_OPT_SEGMENT | MMP_OPT_GROUPS | MMP_OPT_INNER | MMP_OPT_OUTER,
    .flags = MMP__ALG_AUTO | MMP__ALG_COMPOSITE,
    .prefer = 9,
    .build = hier_build,
    .cost = hier_cost,
    .resolve = hier_resolve,
};
