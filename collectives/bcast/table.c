/* SPDX-License-Identifier: MIT */
/*
 * The broadcast table: one line per algorithm, each row defined in the
 * algorithm's own file (<name>.c) with its name, builder, cost and what
 * it composes with. Row i is algorithm number i + 1 on the wire: a new
 * row goes at the end. Everything that needs to know about more than one
 * algorithm (names, the choice, composition, building from a header)
 * reads this table; nothing else lists the algorithms.
 */
#include <math.h>
#include <string.h>

#include "collectives/bcast/bcast.h"

#define BCAST_ALGS(X)                                                          \
  X(flat)                                                                      \
  X(chain)                                                                     \
  X(pipeline)                                                                  \
  X(binary)                                                                    \
  X(split_binary)                                                              \
  X(binomial)                                                                  \
  X(scatter_ring)                                                              \
  X(scatter_rd)                                                                \
  X(hierarchical)                                                              \
  X(symmetric)                                                                 \
  X(arrival_b)                                                                 \
  X(arrival_nb)                                                                \
  X(knomial)                                                                   \
  X(node)                                                                      \
  X(multicast)                                                                 \
  X(two_tree)                                                                  \
  X(shm)

#define DECLARE(row) extern const mmp__alg_t mmp__bcast_##row##_alg;
BCAST_ALGS(DECLARE)
#undef DECLARE

static const mmp__alg_t *const rows[] = {
#define ENTRY(row) &mmp__bcast_##row##_alg,
    BCAST_ALGS(ENTRY)
#undef ENTRY
};

/* AUTO's segment for a segmented broadcast: the pipelined chain's. */
static size_t bcast_segment(int p, size_t len, size_t esize,
                            const mmp_netmodel_t *nm) {
  (void)esize;
  return mmp__pipeline_seg(p, len, nm);
}

const mmp__family_t mmp__bcast_family = {
    .coll = MMP_COLL_BCAST,
    .name = "bcast",
    .env = "MINIMP_BCAST_ALG",
    .rows = rows,
    .nrows = (int)(sizeof(rows) / sizeof(rows[0])),
    .pick = mmp__bcast_pick,
    .segment = bcast_segment,
};

int mmp__bcast_build(mmp__sched_t *s, const mmp__desc_t *d) {
  mmp__arg_t a;

  memset(&a, 0, sizeof(a));
  a.len = (size_t)d->count;
  return mmp__desc_build(s, d, &a);
}

/* ---- The family's entry points for the other collectives ---------------- */

/* The choice at `level` for p ranks and len bytes. */
static double choose(int p, size_t len, const mmp_netmodel_t *nm,
                     const mmp__mcast_verdict_t *mc, int level,
                     mmp__desc_t *d) {
  return mmp__auto_choose_mc(&mmp__bcast_family, level, p, len, nm, mc, d);
}

double mmp__bcast_choose_auto(int p, size_t len, const mmp_netmodel_t *nm,
                              const mmp__mcast_verdict_t *mc, mmp__desc_t *d) {
  return choose(p, len, nm, mc, MMP__PICK_TOP, d);
}

double mmp__bcast_choose(int p, size_t len, const mmp_netmodel_t *nm,
                         mmp__desc_t *d) {
  return choose(p, len, nm, NULL, MMP__PICK_STATIC, d);
}

double mmp__bcast_choose_flat(int p, size_t len, const mmp_netmodel_t *nm,
                              mmp__desc_t *d) {
  return choose(p, len, nm, NULL, MMP__PICK_FLAT, d);
}

void mmp__bcast_choose_drained(int p, size_t len, const mmp_netmodel_t *nm,
                               mmp__desc_t *d) {
  choose(p, len, nm, NULL, MMP__PICK_TOP, d);
  mmp__bcast_drained_rule(p, len, nm, d);
}

double mmp__bcast_cost(const mmp__alg_t *a, int p, double m, double X, int G,
                       const mmp_netmodel_t *nm) {
  mmp__cost_in_t in;

  mmp__auto_cost_in(&in, &mmp__bcast_family, p, m, X, G, nm);
  return mmp__auto_price(&mmp__bcast_family, a, &in, 0);
}

double mmp__bcast_sub_cost(int p, size_t len, const mmp_netmodel_t *nm) {
  size_t seg = mmp__pipeline_seg(p, len, nm);
  double m = (double)len;
  mmp__cost_in_t in;

  mmp__auto_cost_in(&in, &mmp__bcast_family, p, m,
                    seg ? ceil(m / (double)seg) : 1, 0, nm);
  return mmp__auto_price(&mmp__bcast_family, &mmp__bcast_pipeline_alg, &in, 1);
}

MMP__FAMILY_CHECK_AT_LOAD(mmp__bcast_family)
