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
 * Cost (Hockney): T_outer(N) between nodes plus T_inner(L) within one, N
 * the nodes and L the most ranks on one node, each the best flat
 * algorithm for its size under its own links' alpha and beta
 * (mmp_netmodel_t.alpha_node, beta_node); the leaders' part starts on
 * rested links, so a burst allowance counts there as it does for a flat
 * broadcast (docs/algorithms.md, "Burst allowance").
 *
 * Selected: by AUTO wherever some but not all ranks share a node and the
 * two levels price below every flat and sqrt(p) shape; and when asked for
 * (on a communicator of one rank per node it is the outer algorithm
 * alone, on one node the inner alone).
 */
#include <stdlib.h>

#include "collectives.h"

static int node_of(const mmp__sched_t *s, int rank) {
  return s->node_of != NULL ? s->node_of[rank] : rank;
}

static int node_build(mmp__sched_t *s, const mmp__bcast_arg_t *top) {
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

static double node_cost(const mmp__bcast_cost_in_t *in) {
  const mmp_netmodel_t *nm = in->nm;
  mmp_netmodel_t local;

  /* Only where the priced p is the layout's and it has both levels. */
  if (nm->nodes <= 1 || nm->nodes >= in->p || nm->node_size < 2)
    return INFINITY;
  local = within(nm);
  /* The leaders' broadcast finds the links between nodes rested. */
  return in->part_rested(nm->nodes, in->m, nm) +
         in->part(nm->node_size, in->m, &local);
}

/* Which part runs where: as asked, else the best flat algorithm for each
 * level under its links; the segment, unless given, is the pipeline's
 * for the level it serves, the network's first. */
static int node_resolve(mmp__bcast_desc_t *d, const mmp_bcast_opts_t *o,
                        const mmp__bcast_env_t *env) {
  mmp_netmodel_t nm, local;
  size_t s_in = 0, s_out = 0;
  int in = o->inner, out = o->outer, rc;

  if ((rc = mmp__netmodel_get(env->comm, &nm)) != 0)
    return rc;
  local = within(&nm);
  if (in == 0)
    env->choose_flat(nm.node_size, (size_t)d->len, &local, &in, &s_in);
  if (out == 0)
    env->choose_flat(nm.nodes, (size_t)d->len, &nm, &out, &s_out);
  if (!(env->alg_of(in)->flags & MMP__BCAST_F_GROUPS))
    in = MMP_BCAST_BINOMIAL;
  if (!(env->alg_of(out)->flags & MMP__BCAST_F_GROUPS))
    out = MMP_BCAST_BINOMIAL;
  if (d->seg == 0 && (env->alg_of(out)->flags & MMP__BCAST_F_PIPELINED))
    d->seg = mmp__pipeline_seg(nm.nodes, (size_t)d->len, &nm);
  else if (d->seg == 0 && (env->alg_of(in)->flags & MMP__BCAST_F_PIPELINED))
    d->seg = mmp__pipeline_seg(nm.node_size, (size_t)d->len, &local);
  d->groups = nm.nodes;
  d->inner = in;
  d->outer = out;
  return 0;
}

const mmp__bcast_alg_t mmp__bcast_node_alg = {
    .id = MMP_BCAST_NODE,
    .name = "node",
    .flags = MMP__BCAST_F_AUTO | MMP__BCAST_F_TOP | MMP__BCAST_F_COMPOSITE,
    .prefer = 10,
    .inner_needs = MMP__BCAST_F_GROUPS,
    .outer_needs = MMP__BCAST_F_GROUPS,
    .build = node_build,
    .cost = node_cost,
    .resolve = node_resolve,
};
