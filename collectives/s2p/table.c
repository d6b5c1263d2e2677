/* SPDX-License-Identifier: MIT */
/*
 * The s-to-p table: one line per algorithm, each row defined in the
 * algorithm's own file (<name>.c) with its name, builder or plan, and
 * price. Row i is algorithm number i + 1: a new row goes at the end.
 * Names, the choice and building read this table; nothing else lists the
 * algorithms.
 */
#include <math.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

#define S2P_ALGS(X)                                                            \
  X(2step)                                                                     \
  X(alltoall)                                                                  \
  X(br_lin)                                                                    \
  X(br_xy_source)                                                              \
  X(br_xy_dim)                                                                 \
  X(repos_lin)                                                                 \
  X(repos_xy)                                                                  \
  X(part_lin)                                                                  \
  X(part_xy)                                                                   \
  X(ring)                                                                      \
  X(multicast)

#define DECLARE(row) extern const mmp__alg_t mmp__s2p_##row##_alg;
S2P_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const rows[] = {
#define ENTRY(row) &mmp__s2p_##row##_alg,
    S2P_ALGS(ENTRY)
#undef ENTRY
};

const mmp__family_t mmp__s2p_family = {
    .coll = MMP_COLL_S2P,
    .name = "s2p",
    .env = "MINIMP_S2P_ALG",
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .pick = mmp__auto_pick,
    .price = mmp__s2p_price,
};

/* Runs row a's rounds on a plan whose start returned `rc`, checks that
 * every rank ends with every message, and ends the plan. */
static int run_plan(const mmp__alg_t *a, mmp__s2p_plan_t *pl, int rc) {
  if (rc != 0)
    return rc;
  rc = a->plan(pl);
  if (rc == 0)
    rc = mmp__s2p_plan_check(pl);
  mmp__s2p_plan_fini(pl);
  return rc;
}

/* What a row builds from: this rank's view `x`, and the model. */
static void s2p_arg(const mmp__s2p_t *x, const mmp_netmodel_t *nm,
                    mmp__arg_t *a) {
  memset(a, 0, sizeof(*a));
  a->x = x;
  a->nm = nm;
  a->dep = -1;
}

int mmp__s2p_build(mmp__sched_t *s, const mmp__s2p_t *x, const mmp__alg_t *a,
                   const mmp_netmodel_t *nm) {
  mmp__s2p_plan_t pl;
  mmp__arg_t arg;

  if (a == NULL || a->start != NULL)
    return MMP_EINVAL;
  if (a->build != NULL) {
    s2p_arg(x, nm, &arg);
    return a->build(s, &arg);
  }
  return run_plan(a, &pl, mmp__s2p_plan_init(&pl, x, s, NULL));
}

int mmp__s2p_build_all(mmp__sched_t *const *s, const mmp__s2p_t *x,
                       const mmp__alg_t *a, const mmp_netmodel_t *nm) {
  mmp__s2p_plan_t pl;
  mmp__arg_t arg;
  int rc = 0, r;

  if (a == NULL || a->start != NULL)
    return MMP_EINVAL;
  if (a->build != NULL) {
    for (r = 0; r < x->p && rc == 0; r++) {
      mmp__s2p_t mine = *x;
      mine.me = r;
      s2p_arg(&mine, nm, &arg);
      rc = a->build(s[r], &arg);
    }
    return rc;
  }
  return run_plan(a, &pl, mmp__s2p_plan_init_all(&pl, x, s));
}

double mmp__s2p_cost(const mmp__alg_t *a, const mmp__s2p_t *x,
                     const mmp_netmodel_t *nm, const mmp__mcast_verdict_t *mc) {
  mmp__cost_in_t in;

  if (a == NULL)
    return INFINITY;
  mmp__auto_cost_in(&in, &mmp__s2p_family, x->p, (double)x->total, 1, 0, nm);
  in.mc = mc;
  in.x = x;
  return mmp__s2p_price(a, &in);
}

const mmp__alg_t *mmp__s2p_choose(const mmp__s2p_t *x, const mmp_netmodel_t *nm,
                                  const mmp__mcast_verdict_t *mc) {
  mmp__query_t q;
  mmp__desc_t d;

  memset(&q, 0, sizeof(q));
  q.p = x->p;
  q.len = x->total;
  q.esize = 1;
  q.level = MMP__PICK_TOP;
  q.nm = nm;
  q.mc = mc;
  q.x = x;
  memset(&d, 0, sizeof(d));
  mmp__auto_pick(&mmp__s2p_family, &q, &d);
  return d.alg;
}

MMP__FAMILY_CHECK_AT_LOAD(mmp__s2p_family)
