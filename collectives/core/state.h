/* SPDX-License-Identifier: MIT */
/*
 * What the collectives layer keeps about a communicator (state.c): the
 * network model, AUTO's cached decisions (one cache, keyed one way, for
 * every collective), the arrival patterns AUTO's broadcasts have seen,
 * and which algorithm the latest broadcasts ran. Owned by this layer; the
 * runtime only carries it on the communicator and frees it with it
 * (mmp__comm_ext_ops_t).
 */
#ifndef MMP_COLLECTIVES_CORE_STATE_H
#define MMP_COLLECTIVES_CORE_STATE_H

#include "collectives/core/alg.h"

/* ---- AUTO's decisions -----------------------------------------------------
 */

/* What an AUTO decision depends on besides the model: every rank that
 * passes the same key decides the same. */
typedef struct mmp__auto_key_s {
  int coll;        /* MMP_COLL_* */
  int noncomm;     /* only rows that keep rank order */
  uint64_t len;    /* the bytes AUTO prices */
  size_t esize;    /* segments fall on multiples of it */
  int rows;        /* a logical grid's rows (s-to-p) */
  int node;        /* the shm rows were priced (mmp__call_t.node) */
  const void *ext; /* more of the call the choice reads (s-to-p: every
                      rank's length), ext_len bytes; not owned */
  size_t ext_len;
} mmp__auto_key_t;

/* One cached decision: its key (ext a copy of its own), the model's
 * generation, and what AUTO settled in the description (alg, seg, radix,
 * groups, inner, outer, rows, window) with the collective's own flags. */
typedef struct mmp__auto_s {
  int valid;
  unsigned gen; /* mmp__coll_state_t.net_gen when decided */
  mmp__auto_key_t key;
  mmp__desc_t d;
  unsigned flags;
} mmp__auto_t;

#define MMP__AUTO_SLOTS 32

/* ---- AUTO under arrival patterns ----------------------------------------- */

/* Broadcasts from this size on run in AUTO's adaptive mode
 * (bcast/adapt.c); the root keeps the arrival patterns of its last
 * MMP__ADAPT_HISTORY broadcasts of a size class. */
#define MMP__ADAPT_MIN (64u * 1024)
#define MMP__ADAPT_HISTORY 4

#define MMP__COLL_LOG 256

typedef struct mmp__coll_state_s {
  int net_known;
  mmp_netmodel_t net;
  unsigned net_gen; /* bumped whenever `net` changes: AUTO's cached
                       decisions of another generation are stale */
  mmp__auto_t autos[MMP__AUTO_SLOTS];
  unsigned auto_hits; /* decisions served from `autos` (tests) */
  /* AUTO under arrival patterns, by size class (floor(log2 len)); lock
   * held to touch (the root records from completion callbacks). */
  struct {
    int lg;      /* the class, or 0: unused */
    int regime;  /* this rank's last decision as root: 1 arrival-aware */
    int n, next; /* patterns kept, and where the next goes */
    double *off; /* MMP__ADAPT_HISTORY patterns of p offsets */
    double took[MMP__ADAPT_HISTORY];     /* the root's own time in a static
                                            broadcast; 0 in another */
    double arr_took[MMP__ADAPT_HISTORY]; /* the same in an arrival-aware
                                            one; 0 in another */
    double stat_scale, arr_scale;        /* observed over predicted root time of
                                            the last static and arrival-aware
                                            runs; 0 before any */
  } adapt[4];
  int hint;            /* the regime the last root announced (desc.hint) */
  uint64_t bcast_done; /* uv_hrtime() when this rank's last adaptive
                          broadcast completed; 0 before the first */
  struct {             /* mmp__coll_log_locked */
    uint32_t seq;
    const mmp__alg_t *alg;
  } log[MMP__COLL_LOG];
  unsigned nlog;
} mmp__coll_state_t;

/* The state of `comm`, created on first use. NULL only when out of
 * memory. Lock NOT held. */
mmp__coll_state_t *mmp__coll_state(mmp_comm_t *comm);

/*
 * Lock NOT held. AUTO's decision for `k` under the current model, if
 * cached: fills d->alg, seg, radix, groups, inner, outer, rows, window and
 * *flags, and returns 1; else 0. The decision is a function of the key
 * and the model alone, so the cached one is the one the model would give
 * (mr_coll checks it).
 */
int mmp__auto_get(mmp__coll_state_t *st, const mmp__auto_key_t *k,
                  mmp__desc_t *d, unsigned *flags);
/* Keeps AUTO's decision `d` (with `flags`) for `k`. Without memory for
 * the key's ext it keeps nothing. */
void mmp__auto_keep(mmp__coll_state_t *st, const mmp__auto_key_t *k,
                    const mmp__desc_t *d, unsigned flags);

/* Lock held. Keeps the arrival offsets (p of them, virtual ranks) the
 * root saw in a broadcast of `len` bytes on `comm`, and how long its own
 * part took (0: unknown), in the arrival-aware regime if `arrival`, else
 * in the static one. Drops them when out of memory. */
void mmp__coll_adapt_record_locked(mmp_comm_t *comm, size_t len,
                                   const double *off, double took, int arrival);
/* Lock NOT held. Copies the patterns kept for `len`'s class into `hist`
 * (room for MMP__ADAPT_HISTORY * p) and the root's times into `took` and
 * `arr_took` (room for MMP__ADAPT_HISTORY each: static and arrival-aware
 * runs, 0 for the other), and returns how many; *regime is the last
 * decision this rank took as root for the class (the last root's hint
 * when it never rooted one); scale[] the class's static and
 * arrival-aware corrections (0 before any). */
int mmp__coll_adapt_read(mmp_comm_t *comm, size_t len, double *hist,
                         double *took, double *arr_took, int *regime,
                         double scale[2]);
/* Lock NOT held. Keeps the static and arrival-aware corrections for
 * `len`'s class. */
void mmp__coll_adapt_set_scales(mmp_comm_t *comm, size_t len,
                                const double scale[2]);
/* Lock NOT held. Remembers the regime this rank runs as root. */
void mmp__coll_adapt_decided(mmp_comm_t *comm, size_t len, int regime);
/* Lock held. This rank's part of an adaptive broadcast on `comm` is over
 * (the links' rest starts from here: mmp__coll_bcast_idle). */
void mmp__coll_bcast_done_locked(mmp_comm_t *comm);
/* Lock NOT held. Seconds since this rank's last adaptive broadcast on
 * `comm` completed; INFINITY before the first. */
double mmp__coll_bcast_idle(mmp_comm_t *comm);
/* Lock held. A first message told this rank the root's regime: the prior
 * for a class this rank has not rooted yet. */
void mmp__coll_adapt_hint_locked(mmp_comm_t *comm, int hint);

/* Which row each of the last MMP__COLL_LOG broadcasts on a communicator
 * ran, as this rank saw it, for mmp_bcast_last and tests that check that
 * every rank ran the same. Lock held to record. */
void mmp__coll_log_locked(mmp_comm_t *comm, uint32_t seq,
                          const mmp__alg_t *alg);
/* Copies up to `max` entries, oldest first, into seq[] and alg[]; returns
 * how many. Lock NOT held. */
int mmp__coll_log_get(mmp_comm_t *comm, uint32_t *seq, const mmp__alg_t **alg,
                      int max);

#endif /* MMP_COLLECTIVES_CORE_STATE_H */
