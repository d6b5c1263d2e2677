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

/* The broadcast that follows the gather: the best flat one for the total
 * under the model (a part: hierarchical aside), the binomial tree without
 * a model. */
static void twostep_bcast(const mmp__s2p_t *x, const mmp_netmodel_t *nm,
                          mmp__desc_t *d) {
  memset(d, 0, sizeof(*d));
  d->alg = &mmp__bcast_binomial_alg;
  if (nm != NULL && x->p > 1)
    mmp__auto_choose(&mmp__bcast_family, MMP__PICK_FLAT, x->p, x->total, nm, d);
}

static int twostep_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__s2p_t *x = a->x;
  int root, g, k0, k, rc;
  mmp__desc_t bd;
  mmp__arg_t ba;

  if (x->ns == 0 || x->p == 1)
    return 0;
  root = mmp__s2p_2step_root(x);
  g = twostep_gather(s, x, root);
  if (g < -1)
    return g;
  if (x->total == 0)
    return 0;
  twostep_bcast(x, a->nm, &bd);
  memset(&ba, 0, sizeof(ba));
  ba.root = root;
  ba.len = x->total;
  ba.seg = bd.seg;
  ba.dep = x->me == root ? g : -1;
  ba.phase = PHASE_BCAST;
  k0 = s->nops;
  rc = mmp__bcast_over_all(s, bd.alg->build, &ba);
  if (rc < 0)
    return rc;
  /* A source's broadcast receive rewrites its own region: not before its
   * gather send has finished reading it. */
  for (k = k0; x->me != root && g >= 0 && k < s->nops; k++)
    if ((rc = mmp__sched_dep(s, g, k)) != 0)
      return rc;
  return 0;
}

static double twostep_cost(const mmp__cost_in_t *in) {
  const mmp__s2p_t *x = in->x;
  const mmp_netmodel_t *nm = in->nm;
  int root = mmp__s2p_2step_root(x), j;
  double t = 0;
  mmp__desc_t bd;

  for (j = 0; j < x->ns; j++)
    if (x->src[j] != root && x->len[j] > 0)
      t += nm->alpha + (double)x->len[j] * nm->beta;
  return t + mmp__auto_choose(&mmp__bcast_family, MMP__PICK_FLAT, x->p,
                              x->total, nm, &bd);
}

const mmp__alg_t mmp__s2p_2step_alg = {
    .name = "2step",
    .summary = "gather to one rank, then broadcast",
    .flags = MMP__ALG_AUTO | MMP__ALG_MODEL,
    .prefer = 9,
    .build = twostep_build,
    .cost = twostep_cost,
};
