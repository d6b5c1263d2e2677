/* SPDX-License-Identifier: MIT */
/*
 * The s-to-p descriptor table: one row per algorithm, each defined in the
 * algorithm's own file (s2p_<name>.c) with its name, builder or plan, and
 * price. Names, the choice and building read this table; nothing else
 * lists the algorithms.
 */
#include <string.h>

#include "collectives/s2p/s2p.h"

/* Every algorithm, by its MMP_S2P_* number and the name of its row
 * (mmp__s2p_<row>_alg, defined in s2p_<row>.c). */
#define S2P_ALGS(X)                                                            \
  X(2STEP, 2step)                                                              \
  X(ALLTOALL, alltoall)                                                        \
  X(BR_LIN, br_lin)                                                            \
  X(BR_XY_SOURCE, br_xy_source)                                                \
  X(BR_XY_DIM, br_xy_dim)                                                      \
  X(REPOS_LIN, repos_lin)                                                      \
  X(REPOS_XY_SOURCE, repos_xy)                                                 \
  X(PART_LIN, part_lin)                                                        \
  X(PART_XY_SOURCE, part_xy)                                                   \
  X(RING, ring)                                                                \
  X(MULTICAST, multicast)

#define DECLARE(id, row) extern const mmp__s2p_alg_t mmp__s2p_##row##_alg;
S2P_ALGS(DECLARE)
#undef DECLARE

static const mmp__s2p_alg_t *const table[MMP_S2P_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_S2P_##id] = &mmp__s2p_##row##_alg,
    S2P_ALGS(ENTRY)
#undef ENTRY
};

const mmp__s2p_alg_t *mmp__s2p_alg(int id) {
  return id > 0 && id < MMP_S2P_ALG_COUNT ? table[id] : NULL;
}

void mmp__s2p_algs_check(void) {
  int id, j;

  for (id = 1; id < MMP_S2P_ALG_COUNT; id++) {
    const mmp__s2p_alg_t *a = table[id];
    assert(a != NULL && a->id == id && a->name != NULL);
    assert((a->build != NULL) + (a->plan != NULL) + (a->start != NULL) == 1);
    assert(a->plan != NULL || a->cost != NULL || a->start != NULL);
    /* A dynamic row is a candidate only with a price of its own (the
     * multicast row: unpriced where multicast is not usable). */
    assert(a->start == NULL || a->prefer == 0 || a->cost != NULL);
    for (j = 1; j < id; j++) {
      assert(strcmp(a->name, table[j]->name) != 0);
      assert(!a->prefer || a->prefer != table[j]->prefer);
    }
    (void)a;
  }
}

const char *mmp_s2p_alg_name(int alg) {
  if (alg == MMP_S2P_AUTO)
    return "auto";
  return mmp__s2p_alg(alg) != NULL ? table[alg]->name : NULL;
}

int mmp_s2p_alg_from_name(const char *name) {
  int i;

  if (name == NULL)
    return MMP_EINVAL;
  if (strcmp(name, "auto") == 0)
    return MMP_S2P_AUTO;
  for (i = 1; i < MMP_S2P_ALG_COUNT; i++)
    if (strcmp(name, table[i]->name) == 0)
      return i;
  return MMP_EINVAL;
}

/* Runs row a's rounds on a plan whose start returned `rc`, checks that
 * every rank ends with every message, and ends the plan. */
static int run_plan(const mmp__s2p_alg_t *a, mmp__s2p_plan_t *pl, int rc) {
  if (rc != 0)
    return rc;
  rc = a->plan(pl);
  if (rc == 0)
    rc = mmp__s2p_plan_check(pl);
  mmp__s2p_plan_fini(pl);
  return rc;
}

int mmp__s2p_build(mmp__sched_t *s, const mmp__s2p_t *x, int alg) {
  const mmp__s2p_alg_t *a = mmp__s2p_alg(alg);
  mmp__s2p_plan_t pl;

  if (a == NULL || a->start != NULL)
    return MMP_EINVAL;
  if (a->build != NULL)
    return a->build(s, x);
  return run_plan(a, &pl, mmp__s2p_plan_init(&pl, x, s, NULL));
}

int mmp__s2p_build_all(mmp__sched_t *const *s, const mmp__s2p_t *x, int alg) {
  const mmp__s2p_alg_t *a = mmp__s2p_alg(alg);
  mmp__s2p_plan_t pl;
  int rc = 0, r;

  if (a == NULL || a->start != NULL)
    return MMP_EINVAL;
  if (a->build != NULL) {
    for (r = 0; r < x->p && rc == 0; r++) {
      mmp__s2p_t mine = *x;
      mine.me = r;
      rc = a->build(s[r], &mine);
    }
    return rc;
  }
  return run_plan(a, &pl, mmp__s2p_plan_init_all(&pl, x, s));
}

#ifndef NDEBUG
/* Debug builds check the table when the library loads. */
__attribute__((constructor)) static void check_at_load(void) {
  mmp__s2p_algs_check();
}
#endif
