/* SPDX-License-Identifier: MIT */
/*
 * Recursive doubling scan (Hillis & Steele 1986): in round k, with
 * d = 2^k, rank i sends its partial x_{i-d+1} o ... o x_i to rank i + d
 * and combines the one from rank i - d on its left, so after
 * ceil(log2 p) rounds rank i holds x_0 o ... o x_i:
 *   ceil(log2 p)(alpha + m beta + m gamma).
 * Order: what comes from a lower rank is always the left operand, and
 * covers the ranks just below the partial's: any associative operation.
 * The exclusive form gathers what it receives into its result apart
 * from the partial it sends (one more combination a round).
 *
 * Selected: by AUTO (the fewest steps under the model).
 */
#include "collectives/scan/scan.h"

#define PHASE_ROUND 0

static int rd_build(mmp__sched_t *s, const mmp__arg_t *a, int excl) {
  int n = a->g->n, me = a->g->me, from = s->nops, have = a->dep, free_t = -1;
  int got = 0, res = -1, d;
  size_t t;

  if (n == 1)
    return mmp__coll_join(s, a->dep, -1);
  t = mmp__sched_scratch(s, a->len);
  for (d = 1; d < n; d <<= 1) {
    int snd = -1, rcv;
    if (me + d < n) {
      snd = mmp__coll_send(s, a, me + d, a->off, a->len, a->phase + PHASE_ROUND,
                           have, d == 1);
      if (snd < 0)
        return snd;
    }
    if (me - d < 0)
      continue;
    rcv =
        mmp__coll_recv(s, a, me - d, t, a->len, a->phase + PHASE_ROUND, d == 1);
    if (rcv < 0)
      return rcv;
    /* The scratch is free once the previous round combined it. */
    if (free_t >= 0 && mmp__sched_dep(s, free_t, rcv) != 0)
      return MMP_ENOMEM;
    if (excl) /* result = received o result */
      res = got ? mmp__coll_reduce(s, t, a->res, a->len, 0, rcv, res)
                : mmp__coll_copy(s, t, a->res, a->len, rcv);
    got = 1;
    if (res < -1)
      return res;
    /* partial = received o partial, once this round's send has read it */
    have = mmp__coll_reduce(s, t, a->off, a->len, 0, rcv, snd);
    if (have < 0)
      return have;
    if (snd < 0 && have >= 0 && a->dep >= 0 &&
        mmp__sched_dep(s, a->dep, have) != 0)
      return MMP_ENOMEM;
    free_t = excl ? mmp__coll_join(s, res, have) : have;
    if (free_t < 0)
      return free_t;
  }
  return mmp__coll_after_all(s, from);
}

static int scan_rd_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return rd_build(s, a, 0);
}

static int exscan_rd_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return rd_build(s, a, 1);
}

double mmp__scan_cost_rd(const mmp__cost_in_t *in) {
  int rounds = 0, d;

  for (d = 1; d < in->p; d <<= 1)
    rounds++;
  return rounds * (in->nm->alpha + in->m * (in->nm->beta + in->nm->gamma));
}

MMP__SCAN_ROWS(rd, .name = "recursive_doubling",
               .summary = "ceil(log2 p) rounds at doubling distances",
               .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED, .prefer = 1,
               .cost = mmp__scan_cost_rd);
