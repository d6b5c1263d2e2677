/* SPDX-License-Identifier: MIT */
/*
 * Node-aware broadcast: the hierarchy of [Hasanov et al. 2015], section 3, with
 * the nodes as its groups. One leader per node receives first (outer, among
 * leaders, over the network), then every node broadcasts internally
 * (inner, over shared memory), all nodes in parallel.
 *
 * Nodes are ordered by their first rank in virtual order (relative to the
 * root), and each node's leader is that rank, so the root leads its own
 * node and the leaders' broadcast starts at it. Which ranks share a node
 * is the runtime's numbering (mmp__comm_node_of), the same on every rank.
 *
 * With many nodes the leaders may themselves be grouped as seed 001's
 * hierarchical broadcast groups ranks (G groups of consecutive leaders,
 * G about sqrt(N), each led by its first): the leaders of the groups
 * first, then each group's leaders, then every node; desc.groups is G,
 * 1 for leaders without groups. The same outer algorithm runs at both
 * leaders' levels.
 *
 * Cost (Hockney): T_outer(N) between nodes plus T_inner(L) within one, N
 * the nodes and L the most ranks on one node, each the best flat
 * algorithm for its size under its own links' alpha and beta
 * (mmp_netmodel_t.alpha_node, beta_node); the leaders' part starts on
 * rested links, so a burst allowance counts there as it does for a flat
 * broadcast (docs/design/auto.md, "Burst allowance"). Grouped leaders cost
 * T_outer(G) on rested links + T_outer(ceil(N / G)) + T_inner(L); the
 * row prices the cheaper of the two shapes and resolve runs it.
 *
 * Selected: by AUTO wherever some but not all ranks share a node and the
 * two levels price below every flat and sqrt(p) shape; and when asked for
 * (on a communicator of one rank per node it is the outer algorithm
 * alone, on one node the inner alone).
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/bcast/bcast.h"

static int node_of(const mmp__sched_t *s, int rank) {
  return s->node_of != NULL ? s->node_of[rank] : rank;
}

/*
 * Three levels: the first leader of each of top->groups runs of leaders,
 * then each run, both with top->outer (mmp__bcast_levels), then the node
 * with top->inner, its phases two levels above the first's.
 */
static int grouped_leaders(mmp__sched_t *s, const mmp__arg_t *top,
                           const mmp__group_t *leaders,
                           const mmp__group_t *node) {
  int N = leaders->n, G = top->groups, g, mine = 0, done;
  int *heads = malloc((size_t)G * sizeof(int));
  mmp__group_t heads_g, run_g;
  mmp__arg_t a = *top;

  if (heads == NULL)
    return MMP_ENOMEM;
  heads_g.me = -1;
  for (g = 0; g < G; g++) {
    int first = mmp__group_start(N, G, g);
    heads[g] = leaders->ranks[first];
    if (leaders->me == first)
      heads_g.me = g;
    if (leaders->me >= first)
      mine = g;
  }
  heads_g.n = G;
  heads_g.ranks = heads;
  /* A rank that leads no node is in no run either (me -1). */
  run_g.n = mmp__group_start(N, G, mine + 1) - mmp__group_start(N, G, mine);
  run_g.ranks = leaders->ranks + mmp__group_start(N, G, mine);
  run_g.me = leaders->me >= 0 ? leaders->me - mmp__group_start(N, G, mine) : -1;
  a.inner = top->outer;
  done = mmp__bcast_levels(s, &a, &heads_g, &run_g);
  free(heads);
  if (done < 0)
    return done;
  a = *top;
  a.g = node;
  a.root = 0;
  a.dep = done;
  a.phase = top->phase + 2 * MMP__LEVEL_PHASES;
  return top->inner->build(s, &a);
}

static int node_build(mmp__sched_t *s, const mmp__arg_t *top) {
  const mmp__group_t *all = top->g;
  int p = all->n, v, n = 0, nl = 0, mine;
  int *slot = malloc((size_t)s->p * sizeof(int));
  int *leaders = malloc((size_t)p * sizeof(int));
  int *inner = malloc((size_t)p * sizeof(int));
  mmp__group_t outer_g, inner_g;
  int rc = MMP_ENOMEM;

  assert(top->inner != NULL && top->outer != NULL);
  if (all->me < 0) {
    rc = mmp__bcast_done(s, top->dep);
    goto out;
  }
  if (slot == NULL || leaders == NULL || inner == NULL)
    goto out;
  for (v = 0; v < s->p; v++)
    slot[v] = -1;
  mine = node_of(s, all->ranks[all->me]);
  outer_g.me = inner_g.me = -1;
  for (v = 0; v < p; v++) {
    int i = mmp__rrank(v, top->root, p), k = node_of(s, all->ranks[i]);
    assert(k >= 0 && k < s->p);
    if (slot[k] < 0) {
      slot[k] = nl;
      if (i == all->me)
        outer_g.me = nl;
      leaders[nl++] = all->ranks[i];
    }
    if (k == mine) {
      if (i == all->me)
        inner_g.me = n;
      inner[n++] = all->ranks[i];
    }
  }
  outer_g.n = nl;
  outer_g.ranks = leaders;
  inner_g.n = n;
  inner_g.ranks = inner;
  if (top->groups > 1 && top->groups < nl)
    rc = grouped_leaders(s, top, &outer_g, &inner_g);
  else
    rc = mmp__bcast_levels(s, top, &outer_g, &inner_g);
out:
  free(slot);
  free(leaders);
  free(inner);
  return rc;
}

/* The model within a node: its alpha and beta, no burst allowance. */
static mmp_netmodel_t within(const mmp_netmodel_t *nm) {
  mmp_netmodel_t local = *nm;

  local.alpha = nm->alpha_node;
  local.beta = nm->beta_node;
  local.burst = 0;
  local.gap = 0; /* measured between nodes: unknown here */
  return local;
}

/* The leaders' groups for N nodes: ceil(sqrt(N)), 1 (none) below 4. */
static int leader_groups(int N) {
  return N < 4 ? 1 : (int)ceil(sqrt((double)N));
}

/* The leaders' part with G groups of them (1: none). The first level
 * finds the links between nodes rested. */
static double leaders_cost(const mmp__cost_in_t *in, int G) {
  int N = in->nm->nodes;

  if (G <= 1)
    return mmp__auto_part(in, N, in->m, in->nm, 1);
  return mmp__auto_part(in, G, in->m, in->nm, 1) +
         mmp__auto_part(in, (N + G - 1) / G, in->m, in->nm, 0);
}

/* The leaders' groups the model prices lower: 1 or leader_groups(N). */
static int cheaper_groups(const mmp__cost_in_t *in) {
  int G = leader_groups(in->nm->nodes);

  return G > 1 && leaders_cost(in, G) < leaders_cost(in, 1) ? G : 1;
}

static double node_cost(const mmp__cost_in_t *in) {
  const mmp_netmodel_t *nm = in->nm;
  mmp_netmodel_t local;

  /* Only where the priced p is the layout's and it has both levels. */
  if (nm->nodes <= 1 || nm->nodes >= in->p || nm->node_size < 2)
    return INFINITY;
  local = within(nm);
  return leaders_cost(in, cheaper_groups(in)) +
         mmp__auto_part(in, nm->node_size, in->m, &local, 0);
}

/* The leaders' groups as asked (opts.groups, at most the nodes), else
 * the model's; which part runs where as asked, else the best flat
 * algorithm for each level under its links (the leaders' for the larger
 * of their levels); the segment, unless given, is the pipeline's for the
 * level it serves, the network's first. */
static int node_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  const mmp__alg_t *in = d->inner, *out = d->outer;
  int G = env->auto_pick ? 0 : d->groups, q, rc;
  mmp_netmodel_t nm, local;
  mmp__cost_in_t ci;
  mmp__desc_t part;

  if ((rc = mmp__env_model(env, &nm)) != 0)
    return rc;
  local = within(&nm);
  if (G == 0 && nm.nodes > 1 && nm.nodes < env->p) {
    memset(&ci, 0, sizeof(ci));
    ci.p = env->p;
    ci.m = (double)d->count;
    ci.X = 1;
    ci.nm = &nm;
    ci.fam = env->fam;
    G = cheaper_groups(&ci);
  }
  if (G < 1)
    G = 1;
  if (G > nm.nodes)
    G = nm.nodes;
  /* The leaders' levels: G heads, then runs of ceil(N / G). */
  q = G > 1 ? (nm.nodes + G - 1) / G : nm.nodes;
  if (G > q)
    q = G;
  memset(&part, 0, sizeof(part));
  if (in == NULL) {
    mmp__auto_choose(env->fam, MMP__PICK_FLAT, nm.node_size, (size_t)d->count,
                     &local, &part);
    in = part.alg;
  }
  if (out == NULL) {
    mmp__auto_choose(env->fam, MMP__PICK_FLAT, q, (size_t)d->count, &nm, &part);
    out = part.alg;
  }
  if (!(in->flags & MMP__ALG_PART))
    in = &mmp__bcast_binomial_alg;
  if (!(out->flags & MMP__ALG_PART))
    out = &mmp__bcast_binomial_alg;
  if (d->seg == 0 && (out->flags & MMP__ALG_SEGMENTED))
    d->seg = mmp__pipeline_seg(q, (size_t)d->count, &nm);
  else if (d->seg == 0 && (in->flags & MMP__ALG_SEGMENTED))
    d->seg = mmp__pipeline_seg(nm.node_size, (size_t)d->count, &local);
  d->groups = G;
  d->inner = in;
  d->outer = out;
  return 0;
}

const mmp__alg_t mmp__bcast_node_alg = {
    .name = "node",
    .summary = "one leader per node, then every node",
    .takes = MMP_OPT_SEGMENT | MMP_OPT_GROUPS | MMP_OPT_INNER | MMP_OPT_OUTER,
    .flags = MMP__ALG_AUTO | MMP__ALG_TOP | MMP__ALG_COMPOSITE,
    .prefer = 10,
    .build = node_build,
    .cost = node_cost,
    .resolve = node_resolve,
};
