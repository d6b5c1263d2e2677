/* SPDX-License-Identifier: MIT */
/*
 * Broadcast: its table (table.c), AUTO's rules for it (choose.c), AUTO
 * under arrival patterns (adapt.c), and what its rows share. A broadcast
 * row's build takes an mmp__arg_t as patterns/tree.h describes: this
 * rank's ops for [a->off, a->off + a->len) from member a->root of group
 * a->g. Other collectives reach broadcasts through mmp__bcast_family and
 * mmp__bcast_build only.
 */
#ifndef MMP_COLLECTIVES_BCAST_BCAST_H
#define MMP_COLLECTIVES_BCAST_BCAST_H

#include "collectives/core/call.h"
#include "collectives/core/state.h"
#include "collectives/patterns/tree.h"
#include "collectives/select/auto.h"

/* ---- The table (table.c) ------------------------------------------------- */

extern const mmp__family_t mmp__bcast_family;

/* The rows other files name: AUTO's rules (the binomial, binary and
 * k-nomial trees, the pipeline), AUTO's adaptive mode (arrival_b,
 * arrival_nb) and the multicast s-to-p. Every other row is reached
 * through the table. */
extern const mmp__alg_t mmp__bcast_binomial_alg, mmp__bcast_knomial_alg,
    mmp__bcast_binary_alg, mmp__bcast_pipeline_alg, mmp__bcast_chain_alg,
    mmp__bcast_arrival_b_alg, mmp__bcast_arrival_nb_alg,
    mmp__bcast_multicast_alg, mmp__bcast_flat_alg, mmp__bcast_shm_alg;

/*
 * Appends rank s->me's ops for the broadcast `d` (a static row) over the
 * whole communicator of s->p ranks, its first message marked: what a
 * running broadcast, a poison rebuild and offline checks do. Returns 0,
 * MMP_EMISMATCH for a description no rank could have made, or MMP_ENOMEM.
 */
int mmp__bcast_build(mmp__sched_t *s, const mmp__desc_t *d);

/* ---- AUTO: pure functions of the model -----------------------------------
 *
 * The broadcast's rules are choose.c's; the entry points that price or
 * choose in the table are table.c's. Each fills d->alg, d->seg and d->groups
 * and returns the predicted time. Deterministic: every rank that passes the
 * same inputs gets the same. */

/* The broadcast's pick (mmp__family_t.pick): mmp__auto_pick's, with the
 * broadcast's own rules: one message for p <= 2 whatever the shape, and
 * ranks that share CPUs (choose.c states them). */
double mmp__bcast_pick(const mmp__family_t *f, const mmp__query_t *q,
                       mmp__desc_t *d);

/* Among every row AUTO may choose (`mc`: the multicast figures, NULL:
 * without multicast): AUTO's own choice. */
double mmp__bcast_choose_auto(int p, size_t len, const mmp_netmodel_t *nm,
                              const mmp__mcast_verdict_t *mc, mmp__desc_t *d);
/* Among the static rows that are not AUTO's own top-level choice only. */
double mmp__bcast_choose(int p, size_t len, const mmp_netmodel_t *nm,
                         mmp__desc_t *d);
/* Among the rows that run as parts (no composite): hierarchical groups'
 * and s-to-p's 2-Step broadcast. */
double mmp__bcast_choose_flat(int p, size_t len, const mmp_netmodel_t *nm,
                              mmp__desc_t *d);
/* AUTO's static choice for links a broadcast just drained (no time to
 * refill the burst allowance): the same as mmp__bcast_choose_auto's
 * unless that one relied on the allowance (its busiest link carries no
 * more than the burst), which becomes the pipeline (docs/design/auto.md,
 * "Rested or drained links"). */
void mmp__bcast_choose_drained(int p, size_t len, const mmp_netmodel_t *nm,
                               mmp__desc_t *d);
/* The drained-links rule alone, applied to AUTO's choice in `d`. */
void mmp__bcast_drained_rule(int p, size_t len, const mmp_netmodel_t *nm,
                             mmp__desc_t *d);

/* Predicted time of row `a` (G groups for a composite, X segments for a
 * segmented one) under `nm`, by its formula; INFINITY for a row without a
 * price. */
double mmp__bcast_cost(const mmp__alg_t *a, int p, double m, double X, int G,
                       const mmp_netmodel_t *nm);

/* What an arrival-aware broadcast's default sub-broadcast, the pipelined
 * chain over all p ranks in the model's segments, is predicted to take. */
double mmp__bcast_sub_cost(int p, size_t len, const mmp_netmodel_t *nm);

/* ---- Arrival-aware broadcasts (arrival.c) -------------------------------- */

/* The root's gathering window in seconds: p alpha, at least 1 ms (libuv's
 * timers count milliseconds), at most T(m) / MMP__ARRIVAL_WINDOW_DIV; 0
 * (none) when that is under 1 ms. MINIMP_BCAST_ARRIVAL_WINDOW_US
 * overrides it (0: none). */
#define MMP__ARRIVAL_WINDOW_DIV 16
double mmp__arrival_window(int p, size_t len, const mmp_netmodel_t *nm);

/* 1 if AUTO should run an arrival-aware broadcast, whose sub-broadcast
 * over all p ranks is predicted to take `sub` seconds, rather than the
 * static algorithm predicted to take `best` (arrival.c states the rule). */
#define MMP__ARRIVAL_AUTO_SHARE 0.08
int mmp__bcast_arrival_pays(int p, size_t len, const mmp_netmodel_t *nm,
                            double best, double sub);

/* ---- AUTO under arrival patterns (adapt.c) --------------------------------
 *
 * From MMP__ADAPT_MIN on, AUTO's receivers announce their arrival to the
 * root (an ARRIVED message each), and the root alone decides, for every
 * broadcast it roots, whether to run the static algorithm AUTO chose or an
 * arrival-aware one; the receivers follow its first message, so every rank
 * runs the same algorithm whatever each knew before. The root decides from
 * the arrival patterns it saw in its last broadcasts of that size: the
 * algorithm predicted faster under them, by a margin (docs/design/auto.md,
 * "AUTO under arrival patterns"). */
#define MMP__ADAPT_MARGIN 1.1

/* Predicted average per-node time of the static broadcast `d`, and of an
 * arrival-aware one (arrival_nb with `nb`, else arrival_b; sub-broadcast
 * a pipelined chain in `seg`-byte segments; gathering window `window`
 * seconds), when receiver v (virtual rank) arrives off[v] seconds after
 * the root (off[0] = 0). */
double mmp__predict_static(const mmp__desc_t *d, int p, const double *off,
                           const mmp_netmodel_t *nm);
double mmp__predict_arrival(int nb, int p, size_t len, size_t seg,
                            const double *off, const mmp_netmodel_t *nm,
                            double window);

/* The root's own part of the static broadcast `d` under the offsets:
 * what mmp__predict_static charges the root, the model's check. */
double mmp__predict_static_root(const mmp__desc_t *d, int p, const double *off,
                                const mmp_netmodel_t *nm);
/* The same for the arrival-aware broadcast: when the root has served the
 * last receiver. */
double mmp__predict_arrival_root(int nb, int p, size_t len, size_t seg,
                                 const double *off, const mmp_netmodel_t *nm,
                                 double window);

/* The model, corrected: alpha and beta scaled by the median of the
 * root's observed times `took` (n of them, 0 where the static algorithm
 * did not run) over their predictions under `hist`, within
 * [1/MMP__ADAPT_SCALE, MMP__ADAPT_SCALE], or by `prev` (the last scale
 * kept) when the static algorithm is not among the n; `nm` itself
 * without either (prev 0). Returns the scale applied, 0 for none. */
#define MMP__ADAPT_SCALE 4.0
double mmp__adapt_model(const mmp__desc_t *stat, int p, const double *hist,
                        const double *took, int n, const mmp_netmodel_t *nm,
                        double prev, mmp_netmodel_t *out);
/* The arrival-aware broadcasts' own correction: the median of the root's
 * observed times `arr_took` (0 where one did not run) over
 * mmp__predict_arrival_root's under `hist` and `nm`, within
 * [1/MMP__ADAPT_SCALE, MMP__ADAPT_SCALE]; `prev` (the last one kept, 0
 * for none) when no arrival-aware run is among the n. Kept apart from
 * the static correction because their overheads differ: a root that
 * tried one and found it slower than predicted must not try it again as
 * soon as that run leaves the history. */
double mmp__adapt_arr_scale(int nb, size_t seg, double window, int p,
                            size_t len, const double *hist,
                            const double *arr_took, int n,
                            const mmp_netmodel_t *nm, double prev);

/* The regime for the next broadcast this rank roots: 1 for the
 * arrival-aware one, 0 for `stat`, from n patterns of p offsets each in
 * `hist`, the static one priced under `nm`, the arrival-aware one under
 * `nm_arr`; `current` is the regime now (kept without patterns, and left
 * only for a predicted gain of MMP__ADAPT_MARGIN). */
int mmp__bcast_adapt_decide(const mmp__desc_t *stat, int arr_nb, size_t arr_seg,
                            int p, const double *hist, int n, int current,
                            const mmp_netmodel_t *nm,
                            const mmp_netmodel_t *nm_arr, double window);

/* ---- The symmetric broadcast (symmetric.c) ------------------------------- */

/* It sends messages shorter than this whole, as the flat broadcast does
 * (MINIMP_BCAST_SYM_MIN overrides it; the crossover is in
 * docs/algorithms.md). It cuts its pieces into sub-segments sized from
 * the network model (opts.segment overrides), of this many bytes when the
 * model is degenerate. */
#define MMP__SYMMETRIC_MIN_DEFAULT (3u * 1024)
#define MMP__SYMMETRIC_SEG_DEFAULT (16u * 1024)

#endif /* MMP_COLLECTIVES_BCAST_BCAST_H */
