/* SPDX-License-Identifier: MIT */
/*
 * 2-Step s-to-p broadcast ([Hambrusch et al. 1998], section 2): an s-to-one
 * gather to a designated rank, which then broadcasts the combined message.
 *
 * The designated rank is the source with the longest message (the paper
 * says "say P_0"; any rank is correct, and this one makes the gather move
 * the least). Every other source sends it its message directly, so it
 * takes in s - 1 messages at once: the congestion the paper blames for
 * 2-Step's poor showing. The broadcast of all S = sum of lengths bytes is
 * the library's own broadcast, chosen for (p, S) from the broadcast cost
 * formulas among the non-hierarchical algorithms (collectives/bcast_*.c).
 * The paper's implementation broadcast with Br_Lin's pattern, which is the
 * binomial tree here, one of the candidates.
 *
 * Cost (Hockney):
 *   (s - 1) alpha + (S - L_root) beta  +  T_bcast(p, S),
 * e.g. T_bcast = (ceil(log2 p) + p - 1) alpha + 2 ((p - 1)/p) S beta for
 * the scatter-ring broadcast that long messages get.
 *
 * Selected: when the broadcast's pipelining pays for the gather, that is
 * for one or very few sources with long messages.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

#define PHASE_GATHER 1
#define PHASE_BCAST 10

/* The gather: returns the op after which the root holds everything (a NOP
 * at the root; this rank's gather send elsewhere, or -1). */
static int twostep_gather(mmp__sched_t *s, const mmp__s2p_t *x, int root) {
  int j, op, rc, all;

  if (x->me != root) {
    j = x->idx[x->me];
    if (j < 0 || x->len[j] == 0)
      return -1;
    return mmp__sched_send(s, root, x->off[j], x->len[j], PHASE_GATHER);
  }
  all = mmp__sched_nop(s);
  if (all < 0)
    return all;
  for (j = 0; j < x->ns; j++) {
    if (x->src[j] == root || x->len[j] == 0)
      continue;
    op = mmp__sched_recv(s, x->src[j], x->off[j], x->len[j], PHASE_GATHER);
    if (op < 0)
      return op;
    if ((rc = mmp__sched_dep(s, op, all)) != 0)
      return rc;
  }
  return all;
}

int mmp__s2p_2step_root(const mmp__s2p_t *x) {
  int j, best = 0;

  for (j = 1; j < x->ns; j++)
    if (x->len[j] > x->len[best])
      best = j;
  return x->ns > 0 ? x->src[best] : 0;
}

void mmp__s2p_bcast_for_2step(mmp__s2p_t *x, const mmp_netmodel_t *nm) {
  /* The broadcast runs as a plain builder: hierarchical aside. */
  mmp__bcast_choose_flat(x->p, x->total, nm, &x->bc_alg, &x->bc_seg);
}

static int twostep_build(mmp__sched_t *s, const mmp__s2p_t *x) {
  const mmp__bcast_alg_t *b = mmp__bcast_alg(x->bc_alg);
  int root, g, k0, k, rc;
  mmp__bcast_arg_t a;

  if (x->ns == 0 || x->p == 1)
    return 0;
  root = mmp__s2p_2step_root(x);
  g = twostep_gather(s, x, root);
  if (g < -1)
    return g;
  if (x->total == 0)
    return 0;
  if (b == NULL || b->build == NULL)
    return MMP_EINTERNAL;
  memset(&a, 0, sizeof(a));
  a.root = root;
  a.len = x->total;
  a.seg = x->bc_seg;
  a.dep = x->me == root ? g : -1;
  a.phase = PHASE_BCAST;
  k0 = s->nops;
  rc = mmp__bcast_over_all(s, b->build, &a);
  if (rc < 0)
    return rc;
  /* A source's broadcast receive rewrites its own region: not before its
   * gather send has finished reading it. */
  for (k = k0; x->me != root && g >= 0 && k < s->nops; k++)
    if ((rc = mmp__sched_dep(s, g, k)) != 0)
      return rc;
  return 0;
}

static double twostep_cost(const mmp__s2p_t *x, const mmp_netmodel_t *nm) {
  int root = mmp__s2p_2step_root(x), j, alg;
  size_t seg;
  double t = 0;

  for (j = 0; j < x->ns; j++)
    if (x->src[j] != root && x->len[j] > 0)
      t += nm->alpha + (double)x->len[j] * nm->beta;
  return t + mmp__bcast_choose_flat(x->p, x->total, nm, &alg, &seg);
}

const mmp__s2p_alg_t mmp__s2p_2step_alg = {
    .id = MMP_S2P_2STEP,
    .name = "2step",
    .prefer = 9,
    .build = twostep_build,
    .cost = twostep_cost,
};
