/* SPDX-License-Identifier: MIT */
/*
 * The tables of reduce, allreduce, reduce-scatter, gather, scatter,
 * allgather and alltoall: one X-macro list per collective, one row per
 * algorithm (each defined in its own file with its builder and cost).
 * Names, AUTO's choice and building from a description read these
 * tables; nothing else lists the algorithms. The front-ends (allreduce.c,
 * ...) and coll.c use this file; no row does.
 */
#include <string.h>

#include "collectives/core/coll.h"

/* Every algorithm, by its MMP_ALLREDUCE_* number and the name of its row
 * (mmp__allreduce_<row>_alg). */
#define ALLREDUCE_ALGS(X)                                                      \
  X(RECURSIVE_DOUBLING, rd)                                                    \
  X(RING, ring)                                                                \
  X(RING_SEGMENTED, ring_segmented)                                            \
  X(RABENSEIFNER, rabenseifner)                                                \
  X(REDUCE_BCAST, reduce_bcast)                                                \
  X(HIERARCHICAL, hierarchical)

#define DECLARE(id, row)                                                       \
  extern const mmp__coll_alg_t mmp__allreduce_##row##_alg;
ALLREDUCE_ALGS(DECLARE)
#undef DECLARE

static const mmp__coll_alg_t *const allreduce_rows[MMP_ALLREDUCE_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_ALLREDUCE_##id] = &mmp__allreduce_##row##_alg,
    ALLREDUCE_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__coll_table_t allreduce_table = {
    MMP_COLL_ALLREDUCE, "allreduce", MMP_ALLREDUCE_ALG_COUNT, allreduce_rows};

#define REDUCE_ALGS(X)                                                         \
  X(BINOMIAL, binomial)                                                        \
  X(PIPELINE, pipeline)                                                        \
  X(RABENSEIFNER, rabenseifner)                                                \
  X(HIERARCHICAL, hierarchical)                                                \
  X(KNOMIAL, knomial)

#define REDUCE_SCATTER_ALGS(X)                                                 \
  X(RING, ring)                                                                \
  X(HALVING, halving)                                                          \
  X(PAIRWISE, pairwise)

#define DECLARE(id, row) extern const mmp__coll_alg_t mmp__reduce_##row##_alg;
REDUCE_ALGS(DECLARE)
#undef DECLARE
#define DECLARE(id, row)                                                       \
  extern const mmp__coll_alg_t mmp__reduce_scatter_##row##_alg;
REDUCE_SCATTER_ALGS(DECLARE)
#undef DECLARE

static const mmp__coll_alg_t *const reduce_rows[MMP_REDUCE_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_REDUCE_##id] = &mmp__reduce_##row##_alg,
    REDUCE_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__coll_alg_t *const rs_rows[MMP_REDUCE_SCATTER_ALG_COUNT] = {
#define ENTRY(id, row)                                                         \
  [MMP_REDUCE_SCATTER_##id] = &mmp__reduce_scatter_##row##_alg,
    REDUCE_SCATTER_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__coll_table_t reduce_table = {
    MMP_COLL_REDUCE, "reduce", MMP_REDUCE_ALG_COUNT, reduce_rows};
static const mmp__coll_table_t reduce_scatter_table = {
    MMP_COLL_REDUCE_SCATTER, "reduce_scatter", MMP_REDUCE_SCATTER_ALG_COUNT,
    rs_rows};

#define GATHER_ALGS(X)                                                         \
  X(FLAT, flat)                                                                \
  X(BINOMIAL, binomial)

#define DECLARE(id, row)                                                       \
  extern const mmp__coll_alg_t mmp__gather_##row##_alg,                        \
      mmp__scatter_##row##_alg;
GATHER_ALGS(DECLARE)
#undef DECLARE

static const mmp__coll_alg_t *const gather_rows[MMP_GATHER_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_GATHER_##id] = &mmp__gather_##row##_alg,
    GATHER_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__coll_alg_t *const scatter_rows[MMP_SCATTER_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_SCATTER_##id] = &mmp__scatter_##row##_alg,
    GATHER_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__coll_table_t gather_table = {
    MMP_COLL_GATHER, "gather", MMP_GATHER_ALG_COUNT, gather_rows};
static const mmp__coll_table_t scatter_table = {
    MMP_COLL_SCATTER, "scatter", MMP_SCATTER_ALG_COUNT, scatter_rows};

#define ALLGATHER_ALGS(X)                                                      \
  X(RING, ring)                                                                \
  X(BRUCK, bruck)                                                              \
  X(RECURSIVE_DOUBLING, rd)                                                    \
  X(S2P, s2p)

#define DECLARE(id, row)                                                       \
  extern const mmp__coll_alg_t mmp__allgather_##row##_alg;
ALLGATHER_ALGS(DECLARE)
#undef DECLARE

static const mmp__coll_alg_t *const allgather_rows[MMP_ALLGATHER_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_ALLGATHER_##id] = &mmp__allgather_##row##_alg,
    ALLGATHER_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__coll_table_t allgather_table = {
    MMP_COLL_ALLGATHER, "allgather", MMP_ALLGATHER_ALG_COUNT, allgather_rows};

#define ALLTOALL_ALGS(X)                                                       \
  X(PAIRWISE, pairwise)                                                        \
  X(BRUCK, bruck)                                                              \
  X(LINEAR, linear)

#define DECLARE(id, row) extern const mmp__coll_alg_t mmp__alltoall_##row##_alg;
ALLTOALL_ALGS(DECLARE)
#undef DECLARE

static const mmp__coll_alg_t *const alltoall_rows[MMP_ALLTOALL_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_ALLTOALL_##id] = &mmp__alltoall_##row##_alg,
    ALLTOALL_ALGS(ENTRY)
#undef ENTRY
};

static const mmp__coll_table_t alltoall_table = {
    MMP_COLL_ALLTOALL, "alltoall", MMP_ALLTOALL_ALG_COUNT, alltoall_rows};

static const mmp__coll_table_t *const tables[MMP_COLL_COUNT] = {
    [MMP_COLL_ALLREDUCE] = &allreduce_table,
    [MMP_COLL_REDUCE] = &reduce_table,
    [MMP_COLL_REDUCE_SCATTER] = &reduce_scatter_table,
    [MMP_COLL_GATHER] = &gather_table,
    [MMP_COLL_SCATTER] = &scatter_table,
    [MMP_COLL_ALLGATHER] = &allgather_table,
    [MMP_COLL_ALLTOALL] = &alltoall_table,
};

const mmp__coll_table_t *mmp__coll_table(int coll) {
  return coll > 0 && coll < MMP_COLL_COUNT ? tables[coll] : NULL;
}

const mmp__coll_alg_t *mmp__coll_alg(int coll, int alg) {
  const mmp__coll_table_t *t = mmp__coll_table(coll);

  return t != NULL && alg > 0 && alg < t->count ? t->rows[alg] : NULL;
}

void mmp__coll_tables_check(void) {
  int c, id, j;

  for (c = 1; c < MMP_COLL_COUNT; c++) {
    const mmp__coll_table_t *t = tables[c];
    assert(t != NULL && t->coll == c && t->rows[0] == NULL);
    for (id = 1; id < t->count; id++) {
      const mmp__coll_alg_t *a = t->rows[id];
      assert(a != NULL && a->coll == c && a->id == id && a->name != NULL);
      assert(a->build != NULL);
      assert(!(a->flags & MMP__COLL_F_AUTO) || (a->cost != NULL && a->prefer));
      for (j = 1; j < id; j++) {
        assert(strcmp(a->name, t->rows[j]->name) != 0);
        assert(!a->prefer || a->prefer != t->rows[j]->prefer);
      }
      (void)a;
    }
  }
}

const char *mmp_coll_alg_name(int coll, int alg) {
  const mmp__coll_alg_t *a = mmp__coll_alg(coll, alg);

  if (mmp__coll_table(coll) != NULL && alg == 0)
    return "auto";
  return a != NULL ? a->name : NULL;
}

int mmp_coll_alg_from_name(int coll, const char *name) {
  const mmp__coll_table_t *t = mmp__coll_table(coll);
  int i;

  if (t == NULL || name == NULL)
    return MMP_EINVAL;
  if (strcmp(name, "auto") == 0)
    return 0;
  for (i = 1; i < t->count; i++)
    if (strcmp(name, t->rows[i]->name) == 0)
      return i;
  return MMP_EINVAL;
}

int mmp__coll_choose(int coll, int p, double m, int noncomm,
                     const mmp_netmodel_t *nm) {
  const mmp__coll_table_t *t = mmp__coll_table(coll);
  mmp__coll_cost_in_t in;
  double best = INFINITY;
  int i, pick = 0, pick_prefer = 0;

  in.p = p;
  in.m = m;
  in.nm = nm;
  for (i = 1; i < t->count; i++) {
    const mmp__coll_alg_t *a = t->rows[i];
    double c;
    if (!(a->flags & MMP__COLL_F_AUTO) ||
        (noncomm && !(a->flags & MMP__COLL_F_ORDERED)))
      continue;
    c = a->cost(&in);
    /* Of two within 3%, the one listed as preferred: measurement noise
     * must not flip the choice between near equals. */
    if (pick == 0 || c < best * 0.97 ||
        (c <= best * 1.03 && a->prefer < pick_prefer)) {
      if (pick == 0 || c < best)
        best = c;
      pick = i;
      pick_prefer = a->prefer;
    }
  }
  return pick;
}

#ifndef NDEBUG
/* Debug builds check the tables when the library loads. */
__attribute__((constructor)) static void check_at_load(void) {
  mmp__coll_tables_check();
}
#endif
