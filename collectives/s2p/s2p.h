/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of s-to-p broadcasting ([Hambrusch et al. 1998]): s
 * of the p ranks hold one message each, and every rank ends with all s of
 * them, concatenated in source-rank order in one buffer.
 *
 * Every algorithm is a builder that appends this rank's sends and receives
 * on regions of that buffer to a schedule (sched.c). The round-based ones
 * (Br_*, Repos_*, Part_*) describe each round as a list of transfers
 * "rank a sends to rank b"; a plan (s2p_plan.c) simulates, for every rank,
 * which messages it holds, so that a transfer carries exactly the messages
 * the sender holds and the receiver lacks, combined into one message. The
 * same simulation, without a schedule, prices a plan under the Hockney
 * model for the automatic choice. Internal to collectives/.
 */
#ifndef MMP_COLLECTIVES_S2P_H
#define MMP_COLLECTIVES_S2P_H

#include "collectives/bcast/bcast.h"

/* One s-to-p broadcast as every rank sees it. */
typedef struct mmp__s2p_s {
  int p, me;
  int rows, cols; /* the logical grid, rows * cols = p, rows <= cols */
  int ns;         /* number of sources */
  int *src;       /* ns: comm rank of source j, increasing */
  int *idx;       /* p: source index of a rank, or -1 */
  size_t *len;    /* ns: length of source j's message */
  size_t *off;    /* ns: its offset in the buffer */
  size_t total;
} mmp__s2p_t;

/*
 * Fills `x` from per-rank lengths (MMP_S2P_NONE for non-sources) on a
 * rows x cols grid. The arrays are allocated; mmp__s2p_fini frees them.
 * Returns 0, MMP_ENOMEM, or MMP_ETOOBIG if the total overflows.
 */
int mmp__s2p_init(mmp__s2p_t *x, int p, int me, int rows, const size_t *lens);
void mmp__s2p_fini(mmp__s2p_t *x);

/* Rows of the default logical grid: the largest divisor of p that is at
 * most sqrt(p) (1 for a prime p: the grid is then a line). */
int mmp__s2p_default_rows(int p);

/* ---- Plans: rounds of combining transfers (plan.c) --------------------- */

typedef struct mmp__s2p_plan_s {
  const mmp__s2p_t *x;
  mmp__sched_t *s;          /* NULL: only price the plan */
  mmp__sched_t *const *all; /* or every rank's schedule, all[r] */
  const mmp_netmodel_t *nm; /* for pricing; may be NULL with s */
  double cost;              /* seconds, lock-step rounds */
  int words;                /* 64-bit words per set of sources */
  uint64_t *have;           /* p sets: messages a rank holds */
  uint64_t *active;         /* p sets: messages it forwards */
  uint64_t *tmp;            /* sets of the round's transfers */
  int *got;     /* ns per scheduled rank: op that brought source j, or -1 */
  int (*xf)[3]; /* the round's transfers: from, to, move */
  int nxf, cxf;
  double *tsend, *trecv; /* p: a rank's busy time in this round */
  size_t *regs;          /* scratch for region lists */
  int *deps;             /* scratch for dependencies */
  int *ident;            /* p: 0, 1, ..., p - 1 (the whole line) */
  uint64_t *d;           /* scratch set: what a transfer carries */
  int phase;
} mmp__s2p_plan_t;

/* Starts a plan with every source holding its own message. With `s`, the
 * transfers involving this rank become ops of `s`; with `nm` they are
 * priced. Returns 0 or MMP_ENOMEM. */
int mmp__s2p_plan_init(mmp__s2p_plan_t *pl, const mmp__s2p_t *x,
                       mmp__sched_t *s, const mmp_netmodel_t *nm);
/* The same, scheduling every rank's transfers: all[r] gets rank r's. */
int mmp__s2p_plan_init_all(mmp__s2p_plan_t *pl, const mmp__s2p_t *x,
                           mmp__sched_t *const *all);
/* Prices algorithm `plan` on `x` by running it without a schedule:
 * lock-step rounds, each its busiest rank's alpha + bytes beta summed over
 * its sends or over its receives. INFINITY if it fails. */
double mmp__s2p_plan_cost(int (*plan)(mmp__s2p_plan_t *), const mmp__s2p_t *x,
                          const mmp_netmodel_t *nm);
void mmp__s2p_plan_fini(mmp__s2p_plan_t *pl);

/* Queues, in the current round, a transfer from rank `from` to rank `to`
 * of every message `from` forwards and `to` lacks. With `move`, `from`
 * stops forwarding them (repositioning). 0 or MMP_ENOMEM. */
int mmp__s2p_xfer(mmp__s2p_plan_t *pl, int from, int to, int move);

/* Runs the queued transfers as one round: they see the holdings of the
 * round's start. 0, MMP_ENOMEM, or MMP_ENOTSUP past the last phase. */
int mmp__s2p_round(mmp__s2p_plan_t *pl);

/* 1 if rank r forwards at least one message. */
int mmp__s2p_holds(const mmp__s2p_plan_t *pl, int r);

/* 0 once every rank holds every message, else MMP_EINTERNAL. */
int mmp__s2p_plan_check(const mmp__s2p_plan_t *pl);

/* A set of logical lines, run in parallel: line k is
 * ranks[start[k] .. start[k] + n[k]). */
typedef struct mmp__s2p_lines_s {
  int nlines;
  const int *ranks;
  const int *start;
  const int *n;
} mmp__s2p_lines_t;

/* Br_Lin's recursive halving on every line at once: member i of a segment
 * of n exchanges with member i + ceil(n/2); for odd n the middle member
 * sends to the last one; then both halves recurse. ceil(log2 n) rounds. */
int mmp__s2p_lin(mmp__s2p_plan_t *pl, const mmp__s2p_lines_t *ln);

/* A sub-grid of the machine: rows x cols ranks, row-major in `ranks`. */
typedef struct mmp__s2p_grid_s {
  int rows, cols;
  const int *ranks;
} mmp__s2p_grid_t;

enum { MMP__S2P_ROWS_FIRST = 0, MMP__S2P_COLS_FIRST = 1 };

/* The whole machine's logical grid. */
void mmp__s2p_grid_all(const mmp__s2p_plan_t *pl, mmp__s2p_grid_t *g);

/* Br_xy on several grids at once: Br_Lin inside every row (or column)
 * first, as first[k] says for grid k, then inside the other dimension. */
int mmp__s2p_xy(mmp__s2p_plan_t *pl, const mmp__s2p_grid_t *g, int ngrids,
                const int *first);

/* Br_xy_source's choice for grid g: rows first when the largest number of
 * holders in a row is below the largest in a column. */
int mmp__s2p_xy_source_dim(const mmp__s2p_plan_t *pl, const mmp__s2p_grid_t *g);

/* Ideal positions of k holders for Br_Lin on a line of n: the first k
 * (no round pairs two holders while the segment has room); for Br_xy on a
 * grid: the first ceil(k / cols) rows, filled row by row. Writes 1s into
 * `mark` (n or rows * cols entries, zeroed by the caller). */
void mmp__s2p_ideal_lin(int n, int k, unsigned char *mark);
void mmp__s2p_ideal_rows(int rows, int cols, int k, unsigned char *mark);

/* One round that moves each holder's message to a target: holders on a
 * marked rank stay, the others go, in rank order, to the free marked
 * ranks. `mark` has p entries and as many 1s as there are holders. */
int mmp__s2p_reposition(mmp__s2p_plan_t *pl, const unsigned char *mark);

/* ---- The algorithms (one file each) ------------------------------------ */

/* Partition of Part_*: the first p1 ranks and the other p - p1, with
 * s1 / s2 = p1 / p2 sources; the final exchange of the two halves. */
int mmp__s2p_part_split(const mmp__s2p_t *x, int p1, int *s1);
int mmp__s2p_part_exchange(mmp__s2p_plan_t *pl, int p1);

/* Br_Lin and Br_xy_source, which the Repos_* algorithms run after moving
 * the sources. */
int mmp__s2p_br_lin(mmp__s2p_plan_t *pl);
int mmp__s2p_br_xy_source(mmp__s2p_plan_t *pl);

/* The table (table.c). A row builds from a->x (this rank's view, x->me),
 * plans its rounds, or starts from run->x; its cost prices in->x. */
extern const mmp__family_t mmp__s2p_family;

/* Appends rank x->me's ops for row `a` to `s` (`nm`: the model that
 * 2-Step chooses its broadcast with; NULL: the binomial tree). 0,
 * MMP_EINVAL (also for a dynamic row, which has no schedule) or
 * MMP_ENOMEM. */
int mmp__s2p_build(mmp__sched_t *s, const mmp__s2p_t *x, const mmp__alg_t *a,
                   const mmp_netmodel_t *nm);

/* The same for every rank at once: s[r] is rank r's schedule. Round-based
 * algorithms simulate their plan once for all ranks. Offline checks. */
int mmp__s2p_build_all(mmp__sched_t *const *s, const mmp__s2p_t *x,
                       const mmp__alg_t *a, const mmp_netmodel_t *nm);

/* ---- Selection (the price: choose.c; the choice: table.c) ---------------- */

/* The family's price (mmp__family_t.price): a plan's rounds for a row
 * built from them, else its cost. */
double mmp__s2p_price(const mmp__alg_t *a, const mmp__cost_in_t *in);

/* Predicted seconds of row `a` for `x` under `nm` (`mc`: multicast's
 * figures, NULL: not priced); INFINITY without a price. */
double mmp__s2p_cost(const mmp__alg_t *a, const mmp__s2p_t *x,
                     const mmp_netmodel_t *nm, const mmp__mcast_verdict_t *mc);

/* The cheapest row for `x`. Deterministic: every rank with the same
 * lengths gets the same. */
const mmp__alg_t *mmp__s2p_choose(const mmp__s2p_t *x, const mmp_netmodel_t *nm,
                                  const mmp__mcast_verdict_t *mc);

/* 2-Step's root: the source with the longest message (lowest rank on
 * ties), so that the gather moves the least. */
int mmp__s2p_2step_root(const mmp__s2p_t *x);

/* The longest and shortest message, and the sum of alpha + L beta over
 * the messages: what the direct algorithms' prices are made of. */
void mmp__s2p_lengths(const mmp__s2p_t *x, const mmp_netmodel_t *nm,
                      double *lmax, double *lmin, double *recv);

#endif /* MMP_COLLECTIVES_S2P_H */
