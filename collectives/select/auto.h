/* SPDX-License-Identifier: MIT */
/*
 * AUTO, for every collective alike: the cheapest row of a table under the
 * model (auto.c), and the settling of a call's description from what the
 * caller asked for (resolve.c): the row named, or AUTO's pick, cached,
 * then the row's own resolve for the options left open.
 *
 * How AUTO prices a row: its cost for p ranks and the call's bytes, with
 * the segment it would run in (a SEGMENTED row: its own segment hook, or
 * its collective's) and the groups of a composite (ceil(sqrt(p))); a row
 * whose busiest link carries no more than the model's burst allowance
 * pays its latency terms only; multicast only with the communicator's
 * agreed figures. Candidates go in their rows' order of preference, and
 * one must be 3% cheaper to displace one before it, so that noise in the
 * model does not flip the choice between near equals.
 */
#ifndef MMP_COLLECTIVES_SELECT_AUTO_H
#define MMP_COLLECTIVES_SELECT_AUTO_H

#include <string.h>

#include "collectives/core/state.h"
#include "collectives/select/netmodel.h"

/* ---- Pricing (auto.c) ---------------------------------------------------- */

/* The cheapest row of `f` for `q`, as mmp__family_t.pick promises: the
 * generic pick, which a collective's own pick may wrap with its rules. */
double mmp__auto_pick(const mmp__family_t *f, const mmp__query_t *q,
                      mmp__desc_t *d);

/* Row `a`'s price under `in` (in->fam is `f`), by its collective's price
 * or its cost; INFINITY for a row without one; 0 for in->p <= 1. With
 * `burst`, a row whose busiest link carries no more than the burst
 * allowance pays its latency terms only. */
double mmp__auto_price(const mmp__family_t *f, const mmp__alg_t *a,
                       const mmp__cost_in_t *in, int burst);

/* `in` for row prices of `f`: p ranks, m bytes in X segments and G
 * groups, under `nm`, without multicast or sources. */
void mmp__auto_cost_in(mmp__cost_in_t *in, const mmp__family_t *f, int p,
                       double m, double X, int G, const mmp_netmodel_t *nm);

/* f->pick at `level` for p ranks and len bytes (elements of one byte)
 * under `nm`, without multicast: what a composite's resolve chooses its
 * parts with. Fills d->alg, seg and groups; returns the price. */
double mmp__auto_choose(const mmp__family_t *f, int level, int p, size_t len,
                        const mmp_netmodel_t *nm, mmp__desc_t *d);
/* The same with multicast priced by `mc` (NULL: not priced). */
double mmp__auto_choose_mc(const mmp__family_t *f, int level, int p, size_t len,
                           const mmp_netmodel_t *nm,
                           const mmp__mcast_verdict_t *mc, mmp__desc_t *d);

/* What a part of a composite costs: the best row of in->fam that runs as
 * a part (MMP__PICK_FLAT) for q ranks and m bytes under `nm`, priced by
 * its formula, or with `rested` on links that find their burst allowance
 * full (the first level of a node broadcast). */
double mmp__auto_part(const mmp__cost_in_t *in, int q, double m,
                      const mmp_netmodel_t *nm, int rested);

/* ---- Resolving a call (resolve.c) ---------------------------------------- */

/* A call as AUTO and the rows' resolves see it. */
typedef struct mmp__call_s {
  const mmp__family_t *fam;
  mmp_comm_t *comm;
  int root;
  uint64_t count; /* the description's count */
  size_t esize;
  int base;
  int op;
  int noncomm; /* the operation keeps rank order only */
  size_t len;  /* the bytes AUTO prices: the vector, a block, the message */
  const struct mmp__s2p_s *x;
  int rows; /* the grid's rows (s-to-p), as the cache keys them */
  /* More of the call AUTO's choice reads, as the cache keys it (s-to-p:
   * every rank's length); NULL: none. */
  const void *key_ext;
  size_t key_ext_len;
  /* The collective's own flags for AUTO's pick (a broadcast's arrival
   * rule), kept with it in the cache; NULL: none. */
  unsigned (*auto_flags)(const struct mmp__call_s *c, const mmp__query_t *q,
                         const mmp__desc_t *d, double best);
  int mcast; /* AUTO prices multicast (mmp__mcast_auto) */
  /* AUTO prices the shm rows: a blocking call on a communicator whose
   * ranks share one node segment (mmp__node_usable), cached apart. */
  int node;
} mmp__call_t;

/* A reduction or block collective's call on `comm`: the description's
 * root, count, element size, base type and operation, and the bytes AUTO
 * prices. */
static inline void mmp__call_init(mmp__call_t *c, const mmp__family_t *f,
                                  mmp_comm_t *comm, int root, uint64_t count,
                                  size_t esize, int base, int op, int noncomm,
                                  size_t len) {
  memset(c, 0, sizeof(*c));
  c->fam = f;
  c->comm = comm;
  c->root = root;
  c->count = count;
  c->esize = esize;
  c->base = base;
  c->op = op;
  c->noncomm = noncomm;
  c->len = len;
}

/* The check every call's options get: a known mode, a radix of 0 or 2 ..
 * MMP__RADIX_MAX (core/alg.h), groups 0 .. p, a window >= 0, rows 0 or a
 * divisor of p, parts that run as parts, and a row that keeps rank order for an
 * operation that needs it. 0 or MMP_EINVAL. Options from
 * MINIMP_<COLLECTIVE>_ALG (o->from_env) are fitted to p instead: groups
 * at most p, rows that do not divide p dropped. */
int mmp__opts_check(const mmp__call_t *c, mmp__opts_t *o);

/*
 * Settles the description of call `c` from options `o` (already checked):
 * the row asked for with its options, or AUTO's pick (from the cache, or
 * priced under the model, measured on first use: a collective call then),
 * then the row's resolve, a segment on element boundaries. *flags (may be
 * NULL) gets AUTO's flags (0 for a row asked for). Lock NOT held. 0, or an
 * error of the measurement or the multicast check.
 */
int mmp__resolve(const mmp__call_t *c, const mmp__opts_t *o, mmp__desc_t *d,
                 unsigned *flags);

/* The model a row's resolve prices with: env->nm, else `comm`'s (lock
 * NOT held; collective the first time). 0 or an error of the
 * measurement. */
int mmp__env_model(const mmp__env_t *env, mmp_netmodel_t *nm);

/* Runs d->alg's resolve on `d` for call `c` (AUTO's pick when
 * `auto_pick`: without the caller's options), as mmp__resolve does: for a
 * collective that switches rows after it (a broadcast's arrival rules).
 * 0 or an error of the measurement. */
int mmp__resolve_row(const mmp__call_t *c, const mmp__opts_t *o, mmp__desc_t *d,
                     int auto_pick, const mmp_netmodel_t *nm);

#endif /* MMP_COLLECTIVES_SELECT_AUTO_H */
