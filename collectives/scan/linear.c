/* SPDX-License-Identifier: MIT */
/*
 * The linear chain: rank i receives x_0 o ... o x_{i-1} from rank i - 1,
 * combines its own on the right and passes the result to rank i + 1:
 *   (p - 1)(alpha + m beta + m gamma),
 * every step waiting for the one before. Order: strictly left to right;
 * any associative operation. The exclusive form keeps what it received
 * as its result and sends that combined with its own.
 *
 * Selected: by name (AUTO prices it, and recursive doubling's log2 p
 * steps win under the model).
 */
#include "collectives/scan/scan.h"

#define PHASE_CHAIN 0

static int linear_build(mmp__sched_t *s, const mmp__arg_t *a, int excl) {
  int n = a->g->n, me = a->g->me, from = s->nops, rcv = -1, have = a->dep;
  size_t t = 0;

  if (n == 1)
    return mmp__coll_join(s, a->dep, -1);
  if (me > 0 && (!excl || me < n - 1))
    t = mmp__sched_scratch(s, a->len);
  if (me > 0) {
    rcv = mmp__coll_recv(s, a, me - 1, excl ? a->res : t, a->len,
                         a->phase + PHASE_CHAIN, 1);
    if (rcv < 0)
      return rcv;
  }
  if (me > 0 && !excl) /* acc = received o mine */
    have = mmp__coll_reduce(s, t, a->off, a->len, 0, rcv, a->dep);
  if (me > 0 && excl && me < n - 1) { /* t = received o mine */
    have = mmp__coll_copy(s, a->res, t, a->len, rcv);
    if (have >= 0)
      have = mmp__coll_reduce(s, a->off, t, a->len, 1, have, a->dep);
  }
  if (have < -1)
    return have;
  if (me < n - 1) {
    int snd = mmp__coll_send(s, a, me + 1, excl && me > 0 ? t : a->off, a->len,
                             a->phase + PHASE_CHAIN, have, 1);
    if (snd < 0)
      return snd;
  }
  return mmp__coll_after_all(s, from);
}

static int scan_linear_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return linear_build(s, a, 0);
}

static int exscan_linear_build(mmp__sched_t *s, const mmp__arg_t *a) {
  return linear_build(s, a, 1);
}

double mmp__scan_cost_linear(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * (in->nm->beta + in->nm->gamma));
}

const mmp__alg_t mmp__scan_linear_alg = {
    .name = "linear",
    .summary = "a chain in rank order, p - 1 steps",
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 2,
    .build = scan_linear_build,
    .cost = mmp__scan_cost_linear,
};

const mmp__alg_t mmp__exscan_linear_alg = {
    .name = "linear",
    .summary = "a chain in rank order, p - 1 steps",
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 2,
    .build = exscan_linear_build,
    .cost = mmp__scan_cost_linear,
};
