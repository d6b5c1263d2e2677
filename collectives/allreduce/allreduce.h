/* SPDX-License-Identifier: MIT */
/*
 * Allreduce: its table (table.c), its front-end (allreduce.c), and what
 * its rows share: the recursive doubling and Rabenseifner builders the
 * hierarchical row runs between its leaders, and the broadcast that
 * follows a reduction, which the broadcast's table chooses.
 */
#ifndef MMP_COLLECTIVES_ALLREDUCE_ALLREDUCE_H
#define MMP_COLLECTIVES_ALLREDUCE_ALLREDUCE_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/reduce.h"
#include "collectives/bcast/bcast.h"

extern const mmp__family_t mmp__allreduce_family;

/* Recursive doubling (rd.c) and Rabenseifner's (rabenseifner.c) over
 * a->g, with their prices for p ranks and an m-byte vector. */
int mmp__allreduce_rd_build(mmp__sched_t *s, const mmp__arg_t *a);
double mmp__cost_rd(int p, double m, const mmp_netmodel_t *nm);
int mmp__allreduce_rabenseifner_build(mmp__sched_t *s, const mmp__arg_t *a);
double mmp__cost_rabenseifner(int p, double m, const mmp_netmodel_t *nm);

/* AUTO's allreduce: mmp__auto_pick with the rule for ranks that share
 * CPUs (hierarchical.c). */
extern const mmp__alg_t mmp__allreduce_rd_alg;
extern const mmp__alg_t mmp__allreduce_rabenseifner_alg;
extern const mmp__alg_t mmp__allreduce_hierarchical_alg;
double mmp__allreduce_pick(const mmp__family_t *f, const mmp__query_t *q,
                           mmp__desc_t *d);

/* The broadcast a reduction's result leaves by (reduce_bcast.c): the best
 * flat broadcast for g->n ranks and len bytes under `nm` (the binomial
 * tree without one), over group `g` from member `root`, after `dep`, at
 * phases phase .. phase + 9. Returns the broadcast builder's op. */
int mmp__coll_bcast(mmp__sched_t *s, const mmp__group_t *g, int root,
                    size_t off, size_t len, int dep, int phase,
                    const mmp_netmodel_t *nm);

#endif /* MMP_COLLECTIVES_ALLREDUCE_ALLREDUCE_H */
