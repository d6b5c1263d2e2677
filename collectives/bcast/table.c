/* SPDX-License-Identifier: MIT */
/*
 * The broadcast descriptor table: one row per algorithm, each defined in
 * the algorithm's own file (bcast_<name>.c) with its name, builder, cost
 * and what it composes with. Everything that needs to know about more
 * than one algorithm (names, the choice, composition, building from a
 * header) reads this table; nothing else lists the algorithms.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/core/collectives.h"

/* Every algorithm, by its MMP_BCAST_* number and the name of its row
 * (mmp__bcast_<row>_alg, defined in bcast_<row>.c). */
#define BCAST_ALGS(X)                                                          \
  X(FLAT, flat)                                                                \
  X(CHAIN, chain)                                                              \
  X(PIPELINE, pipeline)                                                        \
  X(BINARY, binary)                                                            \
  X(SPLIT_BINARY, split_binary)                                                \
  X(BINOMIAL, binomial)                                                        \
  X(SCATTER_RING, scatter_ring)                                                \
  X(SCATTER_RD, scatter_rd)                                                    \
  X(HIERARCHICAL, hierarchical)                                                \
  X(SYMMETRIC, symmetric)                                                      \
  X(ARRIVAL_B, arrival_b)                                                      \
  X(ARRIVAL_NB, arrival_nb)                                                    \
  X(KNOMIAL, knomial)                                                          \
  X(NODE, node)                                                                \
  X(MULTICAST, multicast)

#define DECLARE(id, row) extern const mmp__bcast_alg_t mmp__bcast_##row##_alg;
BCAST_ALGS(DECLARE)
#undef DECLARE

static const mmp__bcast_alg_t *const table[MMP_BCAST_ALG_COUNT] = {
#define ENTRY(id, row) [MMP_BCAST_##id] = &mmp__bcast_##row##_alg,
    BCAST_ALGS(ENTRY)
#undef ENTRY
};

const mmp__bcast_alg_t *mmp__bcast_alg(int id) {
  return id > 0 && id < MMP_BCAST_ALG_COUNT ? table[id] : NULL;
}

void mmp__bcast_algs_check(void) {
  int id, j;

  for (id = 1; id < MMP_BCAST_ALG_COUNT; id++) {
    const mmp__bcast_alg_t *a = table[id];
    assert(a != NULL && a->id == id && a->name != NULL);
    /* Static or dynamic, never both. */
    assert((a->build != NULL) != ((a->flags & MMP__BCAST_F_DYNAMIC) != 0));
    assert((a->start != NULL) == ((a->flags & MMP__BCAST_F_DYNAMIC) != 0));
    /* AUTO prices what it may choose, in a strict order. */
    assert(!(a->flags & MMP__BCAST_F_AUTO) || (a->cost != NULL && a->prefer));
    /* A composite names what its parts must be. */
    assert(!(a->flags & MMP__BCAST_F_COMPOSITE) ||
           (a->inner_needs && a->outer_needs));
    /* Parts of others are static and flat. */
    assert(!(a->flags & (MMP__BCAST_F_GROUPS | MMP__BCAST_F_SUB)) ||
           (a->build != NULL && !(a->flags & MMP__BCAST_F_COMPOSITE)));
    for (j = 1; j < id; j++) {
      assert(strcmp(a->name, table[j]->name) != 0);
      assert(!a->prefer || a->prefer != table[j]->prefer);
    }
    (void)a;
  }
}

const char *mmp_bcast_alg_name(int alg) {
  if (alg == MMP_BCAST_AUTO)
    return "auto";
  return mmp__bcast_alg(alg) != NULL ? table[alg]->name : NULL;
}

int mmp_bcast_alg_from_name(const char *name) {
  int i;

  if (name == NULL)
    return MMP_EINVAL;
  if (strcmp(name, "auto") == 0)
    return MMP_BCAST_AUTO;
  for (i = 1; i < MMP_BCAST_ALG_COUNT; i++)
    if (strcmp(name, table[i]->name) == 0)
      return i;
  return MMP_EINVAL;
}

int mmp__bcast_composes(int part, unsigned flag) {
  const mmp__bcast_alg_t *a = mmp__bcast_alg(part);

  return a != NULL && (a->flags & flag) != 0;
}

int mmp__bcast_build(mmp__sched_t *s, const mmp__bcast_desc_t *d) {
  const mmp__bcast_alg_t *alg = mmp__bcast_alg(d->alg);
  mmp__bcast_arg_t a;
  int rc;

  if (alg == NULL || alg->build == NULL || d->root < 0 || d->root >= s->p)
    return MMP_EMISMATCH;
  memset(&a, 0, sizeof(a));
  if (alg->flags & MMP__BCAST_F_COMPOSITE) {
    if (d->groups < 1 || d->groups > s->p ||
        !mmp__bcast_composes(d->inner, alg->inner_needs) ||
        !mmp__bcast_composes(d->outer, alg->outer_needs))
      return MMP_EMISMATCH;
    a.groups = d->groups;
    a.inner = table[d->inner];
    a.outer = table[d->outer];
  }
  a.root = d->root;
  a.len = (size_t)d->len;
  a.seg = d->seg;
  a.dep = -1;
  a.phase = 1;
  a.first = 1;
  a.radix = d->radix;
  rc = mmp__bcast_over_all(s, alg->build, &a);
  return rc < 0 ? rc : 0;
}

#ifndef NDEBUG
/* Debug builds check the table when the library loads. */
__attribute__((constructor)) static void check_at_load(void) {
  mmp__bcast_algs_check();
}
#endif
