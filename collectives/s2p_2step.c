/* SPDX-License-Identifier: MIT */
/*
 * 2-Step s-to-p broadcast (seed 002, section 2): an s-to-one gather to a
 * designated rank, which then broadcasts the combined message.
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

#include "s2p.h"

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

int mmp__s2p_2step(mmp__sched_t *s, const mmp__s2p_t *x) {
  int root, g, k0, k, i, rc;
  mmp__group_t all;
  mmp__bcast_arg_t a;
  mmp__bcast_builder b = mmp__bcast_builder_of(x->bc_alg);
  int *ranks;

  if (x->ns == 0 || x->p == 1)
    return 0;
  root = mmp__s2p_2step_root(x);
  g = twostep_gather(s, x, root);
  if (g < -1)
    return g;
  if (x->total == 0)
    return 0;
  if (b == NULL)
    return MMP_EINTERNAL;
  ranks = malloc((size_t)x->p * sizeof(int));
  if (ranks == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < x->p; i++)
    ranks[i] = i;
  all.n = x->p;
  all.me = x->me;
  all.ranks = ranks;
  memset(&a, 0, sizeof(a));
  a.g = &all;
  a.root = root;
  a.len = x->total;
  a.seg = x->bc_seg;
  a.dep = x->me == root ? g : -1;
  a.phase = PHASE_BCAST;
  k0 = s->nops;
  rc = b(s, &a);
  free(ranks);
  if (rc < 0)
    return rc;
  /* A source's broadcast receive rewrites its own region: not before its
   * gather send has finished reading it. */
  for (k = k0; x->me != root && g >= 0 && k < s->nops; k++)
    if ((rc = mmp__sched_dep(s, g, k)) != 0)
      return rc;
  return 0;
}
