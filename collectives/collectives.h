/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of the collectives layer.
 *
 * A collective is a *schedule*: sends and receives on regions of the
 * user's buffer, with dependencies between them ("forward segment k to my
 * children once I have received it"). Each broadcast algorithm is a
 * builder that appends its operations for one rank; the executor in
 * sched.c posts them through the runtime's point-to-point calls and
 * advances from completion callbacks, inside the progress engine, so data
 * is forwarded without a round trip through the application. Blocking
 * calls are the non-blocking ones plus a wait.
 *
 * Separation from user traffic: collectives use the communicator's second
 * context id (comm->ctx + 1), which user messages never carry, and put the
 * collective's sequence number in the tag, so collectives in flight at
 * the same time never match each other either.
 *
 * Consistency: every non-root rank's first message carries a small header
 * with the root, length, algorithm and its parameters, as the sender sees
 * them. Nothing else is posted before it arrives. A rank whose arguments
 * disagree rebuilds the schedule from the header and runs it in "poison"
 * mode: every send becomes empty, so its whole subtree fails with
 * MMP_EMISMATCH instead of waiting for data that never comes.
 */
#ifndef MMP_COLLECTIVES_COLLECTIVES_H
#define MMP_COLLECTIVES_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/internal.h"

/* ---- Groups: the ranks an algorithm runs over ------------------------- */

/* A (sub)group of a communicator, in the algorithm's own order: member i
 * is comm rank ranks[i]. `me` is the caller's index, or -1. */
typedef struct mmp__group_s {
  int n;
  int me;
  const int *ranks;
} mmp__group_t;

/* ---- Schedules ---------------------------------------------------------- */

enum { MMP__SOP_SEND = 1, MMP__SOP_RECV = 2, MMP__SOP_NOP = 3 };

/* Op flags. */
#define MMP__SOP_FIRST 0x1 /* carries / receives the header */

typedef struct mmp__sched_s mmp__sched_t;

typedef struct mmp__sop_s {
  uint8_t kind;
  uint8_t flags;
  uint8_t phase;
  uint8_t posted;
  uint8_t done;
  int peer;   /* comm rank */
  size_t off; /* region of the schedule's buffer */
  size_t len;
  int npred; /* predecessors not yet complete */
  int succ;  /* successors: sched->succ[succ .. succ + nsucc) */
  int nsucc;
  int cprev;    /* previous op of the same kind, peer and tag, or -1 */
  int cnext;    /* next one, or -1 */
  uint8_t held; /* ready, but waits for cprev to be posted */
  mmp__sched_t *s;
  mmp_request_t req;
  uint8_t *tmp; /* FIRST ops: header and piggybacked data; packed ops */
  size_t tmp_len;
  size_t *regs; /* packed ops: nregs (offset, length) pairs, or NULL */
  int nregs;
} mmp__sop_t;

/* What the first message's header says; compared field by field. */
typedef struct mmp__coll_hdr_s {
  uint8_t kind;  /* which collective: broadcast */
  uint8_t alg;   /* MMP_BCAST_* actually run */
  uint8_t flags; /* MMP__HDR_POISON */
  uint8_t inner; /* hierarchical: algorithm inside groups */
  uint8_t outer; /* hierarchical: algorithm between groups */
  int32_t root;
  uint64_t len;
  uint32_t seg; /* segment size, 0 = unsegmented */
  uint32_t groups;
} mmp__coll_hdr_t;

#define MMP__HDR_SIZE 32
#define MMP__HDR_POISON 0x1
#define MMP__COLL_BCAST 1

/* Appends this rank's operations for one collective to `s`. Used to build
 * the schedule, and to rebuild it from a mismatching header. */
typedef int (*mmp__sched_build_fn)(mmp__sched_t *s, const mmp__coll_hdr_t *h);

struct mmp__sched_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  uint32_t ctx; /* comm->ctx + 1 */
  uint32_t seq;
  uint8_t *buf;
  size_t len;
  unsigned mode;       /* MMP_SEND_* for every data send */
  mmp__coll_hdr_t hdr; /* this rank's view */
  mmp__sched_build_fn build;
  mmp__sop_t **ops; /* each allocated alone: requests inside must not move */
  int nops, cap;
  int (*edges)[2]; /* dependency pairs (before, after) while building */
  int nedges, ecap;
  int *succ;
  int *ready; /* ops whose predecessors are complete, to post: FIFO */
  int nready;
  int rhead;
  int remaining;
  int running; /* the executor is on the stack (no re-entry) */
  int started;
  int first;  /* index of the FIRST receive, -1 at the root */
  int poison; /* arguments disagreed: every send goes out empty */
  int err;
  mmp_request_t *creq; /* the collective's request; NULL once done */
  /* Sub-schedules (mmp__sched_launch_locked) have no request: on_done
   * runs once, lock held, when their last op completed. */
  void (*on_done)(mmp__sched_t *s, void *arg);
  void *on_done_arg;
  int finished;
  /* Runs once, lock held, just before the request completes; may set
   * s->err (s-to-p: copies out of a scratch buffer). NULL: none. */
  void (*fini)(mmp__sched_t *s, void *arg);
  void *fini_arg;
};

/*
 * Creates an empty schedule for one collective on `comm` (which takes the
 * next collective sequence number). On success the caller owns *out;
 * mmp__sched_start passes it to the request. Returns 0 or MMP_ENOMEM.
 */
int mmp__sched_new(mmp__engine_t *e, mmp_comm_t *comm, void *buf, size_t len,
                   unsigned mode, const mmp__coll_hdr_t *hdr,
                   mmp__sched_build_fn build, mmp__sched_t **out);

/* As mmp__sched_new for a sub-schedule of collective `seq` (no header,
 * no builder, lock may be held). Returns 0 or MMP_ENOMEM. */
int mmp__sched_sub_new(mmp__engine_t *e, mmp_comm_t *comm, uint32_t seq,
                       void *buf, size_t len, unsigned mode,
                       mmp__sched_t **out);

/* Appends an op; returns its index (>= 0) or MMP_ENOMEM. The region
 * [off, off+len) lies inside the schedule's buffer. */
int mmp__sched_send(mmp__sched_t *s, int peer, size_t off, size_t len,
                    int phase);
int mmp__sched_recv(mmp__sched_t *s, int peer, size_t off, size_t len,
                    int phase);
int mmp__sched_nop(mmp__sched_t *s);
/* A send or receive of several regions as one message: the sender packs
 * them in the order given, the receiver unpacks them in the same order.
 * `regs` holds nregs (offset, length) pairs and is copied. Returns the op
 * index or MMP_ENOMEM. Not for first messages. */
int mmp__sched_sendv(mmp__sched_t *s, int peer, const size_t *regs, int nregs,
                     int phase);
int mmp__sched_recvv(mmp__sched_t *s, int peer, const size_t *regs, int nregs,
                     int phase);
/* Marks the receive `op` as this rank's first message, and the send `op`
 * as the first message its peer receives in this collective. */
void mmp__sched_first(mmp__sched_t *s, int op);
/* `after` may only start once `before` completed. 0 or MMP_ENOMEM. */
int mmp__sched_dep(mmp__sched_t *s, int before, int after);

/*
 * Builds (with s->build and s->hdr), starts, and hands the schedule to a
 * new collective request in *req, which mmp_wait/mmp_test complete and
 * free. Any thread, lock NOT held. Returns 0 or an error (then *req is
 * NULL and the schedule is freed).
 */
int mmp__sched_start(mmp__sched_t *s, mmp_request_t **req);

/*
 * Lock held. Starts a schedule whose ops the caller appended directly (no
 * header, no request): a sub-broadcast inside a dynamic collective, which
 * sets s->seq itself. on_done(s, arg) runs once, lock held, when every op
 * completed, possibly before this returns; s->err holds the result. The
 * caller frees `s` with mmp__sched_free, never from inside on_done.
 * Returns 0 or MMP_ENOMEM (then on_done never runs).
 */
int mmp__sched_launch_locked(mmp__sched_t *s,
                             void (*on_done)(mmp__sched_t *, void *),
                             void *arg);

/* Logs the ops not yet done (debugging). */
void mmp__sched_dump(const mmp__sched_t *s);

/* Frees a schedule that was never started. */
void mmp__sched_free(mmp__sched_t *s);

/* ---- Broadcast algorithms (one file each) ------------------------------
 *
 * A builder appends this rank's operations for broadcasting
 * [off, off+len) of the schedule's buffer from group member `root` over
 * group `g`, in segments of `seg` bytes (0: unsegmented). Operations that
 * send may start only after `dep` completed (-1: no such op). It returns
 * the index of an op that completes once this rank holds the data (a NOP
 * after `dep` at the root and for non-members), or a negative error. The
 * first op a non-root member receives is marked with mmp__sched_first,
 * together with the matching sends. A builder uses phases phase ..
 * phase + 9 of the collective.
 */
typedef struct mmp__bcast_arg_s {
  const mmp__group_t *g;
  int root; /* index in g */
  size_t off;
  size_t len;
  size_t seg;
  int dep;
  int phase; /* phase_base */
  int first; /* mark this rank's first message (top-level call) */
  int radix; /* knomial only */
} mmp__bcast_arg_t;

typedef int (*mmp__bcast_builder)(mmp__sched_t *s, const mmp__bcast_arg_t *a);

int mmp__bcast_flat(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_chain(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_pipeline(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_binary(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_split_binary(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_binomial(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_knomial(mmp__sched_t *s, const mmp__bcast_arg_t *a);
#define MMP__KNOMIAL_RADIX_DEFAULT 3
#define MMP__KNOMIAL_RADIX_MAX 16
int mmp__bcast_scatter_ring(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_scatter_rd(mmp__sched_t *s, const mmp__bcast_arg_t *a);
int mmp__bcast_symmetric(mmp__sched_t *s, const mmp__bcast_arg_t *a);

/* The symmetric broadcast sends messages shorter than this whole, as the
 * flat broadcast does (MINIMP_BCAST_SYM_MIN overrides it): on the emulated
 * cluster, p = 16, the two cross between 2 KiB (whole 1.06-1.12 ms, cut
 * 1.27-1.30 ms) and 4 KiB (2.39-2.46 against 1.30-1.36 ms). It cuts its
 * pieces into sub-segments sized from the network model (opts.segment
 * overrides), of this many bytes when the model is degenerate. */
#define MMP__SYMMETRIC_MIN_DEFAULT (3u * 1024)
#define MMP__SYMMETRIC_SEG_DEFAULT (16u * 1024)

/*
 * Starts an arrival-aware broadcast (bcast_arrival.c): h->alg is
 * MMP_BCAST_ARRIVAL_B or _NB, h->root the root, h->inner the sub-group
 * broadcast and h->seg its segment; `mode` is the MMP_SEND_* of data
 * sends; the root gathers arrivals for `window_us` (rounded up to ms; 0:
 * not at all) before a decision from idle, and counts itself busy for at
 * least `pace_us` after starting a round or push (see round_pace). Any
 * thread, lock NOT held. On success *req is a new collective request; on error
 * (MMP_ENOMEM) *req is NULL.
 */
int mmp__bcast_arrival_start(mmp__engine_t *e, mmp_comm_t *comm, void *buf,
                             size_t len, const mmp__coll_hdr_t *h,
                             unsigned mode, uint64_t window_us,
                             uint64_t pace_us, mmp_request_t **req);

/* The arrival-aware root's gathering window is at most T(m) / this, with
 * T(m) = alpha + m beta from the network model (mmp__arrival_window).
 * MINIMP_BCAST_ARRIVAL_WINDOW_US overrides it (0: none). */
#define MMP__ARRIVAL_WINDOW_DIV 16

/* Returns the builder of a non-hierarchical algorithm, or NULL. */
mmp__bcast_builder mmp__bcast_builder_of(int alg);

/* Helpers for builders. */

/* A recv or send of a region, with `dep` (if >= 0) as predecessor. Returns
 * the op index or a negative error. */
int mmp__bcast_recv(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase);
int mmp__bcast_send(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase, int after);

/* A NOP that completes after `dep` (if >= 0): what builders return when
 * this rank receives nothing. */
int mmp__bcast_done(mmp__sched_t *s, int dep);

/* Number of segments of `len` in pieces of `seg` (1 when seg is 0 or len
 * fits); segment k's offset and length. */
size_t mmp__seg_count(size_t len, size_t seg);
void mmp__seg_range(size_t len, size_t seg, size_t k, size_t *off, size_t *n);
/* A segment size that cuts `len` bytes into equal parts of at least
 * `target` bytes (the last at most k - 1 bytes shorter, for k parts); 0
 * when that is one part. A cut at `target` exactly can leave a sliver
 * (4096 + 273 bytes), a message that costs a whole alpha for almost no
 * data. */
size_t mmp__even_seg(size_t len, double target);
/* Whether a rank that disagrees with its sender may rebuild its plan
 * from the sender's length `len` cut in `seg`-byte segments (0: whole):
 * at most MMP__POISON_MAX_SEGS segments, and a length this machine can
 * address. */
#define MMP__POISON_MAX_SEGS (1u << 20)
int mmp__poison_len_ok(uint64_t len, uint64_t seg);

/* Virtual rank of member i when the root is member `root`: (i - root) mod
 * n; and back. */
/* What every public collective call checks first: 0, MMP_ENOTINIT or
 * MMP_ECOMM. */
static inline int mmp__coll_ready(const mmp_comm_t *comm) {
  if (mmp__eng == NULL)
    return MMP_ENOTINIT;
  return comm == NULL ? MMP_ECOMM : 0;
}

static inline int mmp__vrank(int i, int root, int n) {
  return (i - root + n) % n;
}
static inline int mmp__rrank(int v, int root, int n) {
  return (v + root) % n;
}

/* ---- Selection (select.c) ---------------------------------------------- */

/* The network as the Hockney model sees it: a message of m bytes costs
 * alpha + m * beta seconds. */
typedef struct mmp__netmodel_s {
  double alpha; /* s */
  double beta;  /* s per byte */
  double burst; /* bytes an idle link passes at once (a shaper's bucket) */
  int shared;   /* ranks outnumber the CPUs of a machine (rank 0's) */
} mmp__netmodel_t;

/* Predicted time of algorithm `alg` (G groups for the hierarchical one,
 * X segments for the pipelined ones) under model `nm`. */
double mmp__bcast_cost(int alg, int p, double m, double X, int G,
                       const mmp__netmodel_t *nm);

/* The pipelined chain's segment under `nm`: the optimum X =
 * sqrt((p - 2) m beta / alpha) segments, each at least 4 KiB; 0 (the whole
 * message at once) when that is a single segment. AUTO and an explicit
 * MMP_BCAST_PIPELINE without a segment use the same. */
size_t mmp__pipeline_seg(int p, size_t len, const mmp__netmodel_t *nm);

/* Chooses algorithm, segment size and groups for (p, len) under `nm`, among
 * the static algorithms, and returns its predicted time. Deterministic:
 * every rank that passes the same inputs gets the same. */
double mmp__bcast_choose(int p, size_t len, const mmp__netmodel_t *nm, int *alg,
                         size_t *seg, int *groups);

/* MMP_BCAST_AUTO's static choice: mmp__bcast_choose's, except that the
 * symmetric broadcast competes too (from MMP__SYMMETRIC_MIN_DEFAULT), and
 * where ranks share CPUs the k-nomial tree (radix
 * MMP__KNOMIAL_RADIX_DEFAULT) takes the messages of up to MMP__BULK_BYTES
 * it gives the binomial tree. Not for the algorithms inside and between
 * hierarchical groups, which neither can be. */
double mmp__bcast_choose_auto(int p, size_t len, const mmp__netmodel_t *nm,
                              int *alg, size_t *seg, int *groups);

/* beta (s/byte) and the burst allowance (bytes) from the best half round
 * trips of 1-byte, 64 KiB and 1 MiB ping-pongs (seconds); select.c. */
void mmp__net_beta_burst(double one, double small, double large, double *beta,
                         double *burst);

/* The arrival-aware root's gathering window in seconds: p alpha, at least
 * 1 ms (libuv's timers count milliseconds), at most T(m) /
 * MMP__ARRIVAL_WINDOW_DIV; 0 (none) when that is under 1 ms. */
double mmp__arrival_window(int p, size_t len, const mmp__netmodel_t *nm);

/* 1 if AUTO should run an arrival-aware broadcast rather than the static
 * algorithm predicted to take `best` seconds (select.c states the rule). */
int mmp__bcast_arrival_pays(int p, size_t len, const mmp__netmodel_t *nm,
                            double best);
#define MMP__ARRIVAL_AUTO_SHARE 0.08
/* The same among the non-hierarchical algorithms only; returns the
 * predicted time (s-to-p's 2-Step broadcasts with it). */
double mmp__bcast_choose_flat(int p, size_t len, const mmp__netmodel_t *nm,
                              int *alg, size_t *seg);

/* The model for `comm`: MINIMP_NET_ALPHA_US/MINIMP_NET_BETA_NS when set
 * (a saved profile), else measured once per process on the world
 * communicator (a collective call the first time). */
int mmp__netmodel_get(mmp_comm_t *comm, mmp__netmodel_t *out);

#endif /* MMP_COLLECTIVES_COLLECTIVES_H */
