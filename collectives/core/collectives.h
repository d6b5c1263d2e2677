/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of the collectives layer.
 *
 * A collective is a *schedule*: sends and receives on regions of one
 * buffer, with dependencies between them ("forward segment k to my
 * children once I have received it"). Each algorithm is a builder that
 * appends one rank's operations; the executor (sched.c) posts them through
 * the runtime's point-to-point calls and advances from completion
 * callbacks, inside the progress engine, so data is forwarded without a
 * round trip through the application. Blocking calls are the non-blocking
 * ones plus a wait. Builders need no engine and no sockets: every rank's
 * schedule can be built in one process for any group size and checked
 * symbolically (sched_sim.c), which the simulation of large jobs builds on.
 *
 * Every algorithm is one row of its collective's descriptor table
 * (bcast_algs.c, s2p_algs.c): name, builder, cost and what it composes
 * with, all in the algorithm's own file. docs/algorithms.md ("Adding an
 * algorithm") lists the places a new one touches.
 *
 * Separation from user traffic: collectives use the communicator's second
 * context id (comm->ctx + 1), which user messages never carry, and put the
 * collective's sequence number in the tag, so collectives in flight at
 * the same time never match each other either.
 *
 * Consistency: a collective may give its schedule a first-message header,
 * its own description of the call as this rank sees it. Every non-root
 * rank's first message carries the sender's, and nothing else is posted
 * before it arrives. A rank whose header differs rebuilds the schedule
 * from the sender's and runs it in "poison" mode: every send becomes
 * empty, so its whole subtree fails with MMP_EMISMATCH instead of waiting
 * for data that never comes.
 */
#ifndef MMP_COLLECTIVES_COLLECTIVES_H
#define MMP_COLLECTIVES_COLLECTIVES_H

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/coll_api.h"

/* ---- Groups: the ranks an algorithm runs over ------------------------- */

/* A (sub)group of a communicator, in the algorithm's own order: member i
 * is comm rank ranks[i]. `me` is the caller's index, or -1. */
typedef struct mmp__group_s {
  int n;
  int me;
  const int *ranks;
} mmp__group_t;

/* ---- Schedules (sched.c) ------------------------------------------------ */

/* Ops. SEND, RECV and NOP move bytes or mark a point; REDUCE and COPY
 * are local, run by the executor itself the moment they are ready:
 * REDUCE combines region `src` into region `off` with the schedule's
 * reduce callback, COPY copies `src` over `off`. */
enum {
  MMP__SOP_SEND = 1,
  MMP__SOP_RECV = 2,
  MMP__SOP_NOP = 3,
  MMP__SOP_REDUCE = 4,
  MMP__SOP_COPY = 5
};

/* Op flags. */
#define MMP__SOP_FIRST 0x1 /* carries / receives the header */
#define MMP__SOP_RIGHT 0x2 /* REDUCE: src is the right operand */
#define MMP__SOP_CHECK 0x4 /* carries / checks the header, in order */

typedef struct mmp__sched_s mmp__sched_t;

/* One operation as the builder appended it, and its place in the
 * dependency graph (mmp__sched_prepare). Holds no request, so that
 * schedules can be built and checked without a runtime. */
typedef struct mmp__sop_s {
  uint8_t kind;
  uint8_t flags;
  uint8_t phase;
  int peer;   /* comm rank */
  size_t off; /* region of the schedule's address space */
  size_t len;
  size_t src;   /* REDUCE, COPY: the source region, `len` bytes */
  size_t *regs; /* packed ops: nregs (offset, length) pairs, or NULL */
  int nregs;
  int npred; /* predecessors */
  int succ;  /* successors: sched->succ[succ .. succ + nsucc) */
  int nsucc;
  int cprev; /* previous op of the same kind, peer and tag, or -1 */
  int cnext; /* next one, or -1 */
} mmp__sop_t;

/* What a running op needs besides its plan; one block per schedule,
 * allocated when it starts, so that requests never move. */
typedef struct mmp__sexec_s {
  mmp_request_t req;
  uint8_t *tmp; /* FIRST ops: header and piggybacked data; packed ops */
  size_t tmp_len;
  int npred; /* predecessors not yet complete */
  uint8_t posted;
  uint8_t done;
  uint8_t held; /* ready, but waits for cprev to be posted */
} mmp__sexec_t;

/* The first message: a 4-byte envelope ('C', version, flags, length),
 * then up to MMP__HDR_MAX bytes of the collective's own header. */
#define MMP__HDR_SIZE 32
#define MMP__HDR_MAX (MMP__HDR_SIZE - 4)

/*
 * A first message whose header differs from this rank's arrived: `hdr` is
 * the sender's (n bytes, checked against nothing but its length). Appends
 * the plan the sender's view implies to `s`, which is empty, and sets
 * s->len to the sender's length; the executor then runs it in poison mode.
 * Lock held. Returns 0, or MMP_EMISMATCH/MMP_EPROTO for a header no
 * consistent sender could mean.
 */
typedef int (*mmp__sched_rebuild_fn)(mmp__sched_t *s, const uint8_t *hdr,
                                     size_t n);

/* A reduction's arithmetic: combines `n` bytes (whole elements) of `in`
 * into `inout`: inout = in o inout, or inout o in when `right`. */
typedef void (*mmp__sched_reduce_fn)(const void *in, void *inout, size_t n,
                                     int right, void *arg);

struct mmp__sched_s {
  mmp__engine_t *e;   /* NULL offline */
  mmp_comm_t *comm;   /* NULL offline */
  int p;              /* ranks of the communicator */
  int me;             /* this rank */
  const int *node_of; /* comm rank -> node; NULL: one rank per node */
  uint32_t ctx;       /* comm->ctx + 1 */
  uint32_t seq;
  /* The address space ops name: [0, len) is `buf`, then in_len bytes
   * of `in` (read only: a caller's send buffer), then scratch_len bytes
   * of scratch, one block allocated when the schedule starts (or by
   * mmp__sched_scratch_ptr). */
  uint8_t *buf;
  size_t len;
  const uint8_t *in;
  size_t in_len;
  uint8_t *scratch;
  size_t scratch_len;
  mmp__sched_reduce_fn reduce; /* REDUCE ops; NULL: none */
  void *reduce_arg;
  unsigned mode; /* MMP_SEND_* for every data send */
  int source;    /* the request's status.source */
  /* Waits for the request count its largest message, not len, as the
   * length that makes them bulk (MMP__BULK_BYTES): a step of a lock-step
   * algorithm moving small messages ends within about alpha, so its wait
   * polls (docs/progress.md). */
  int wait_by_msg;
  int *ident; /* member i is rank i: mmp__sched_group_all's map, or NULL */
  mmp__sop_t *ops;
  int nops, cap;
  int (*edges)[2]; /* dependency pairs (before, after) while building */
  int nedges, ecap;
  int *succ;
  mmp__sexec_t *x; /* nops running states, once started */
  struct {         /* the plan a poison rebuild replaced */
    mmp__sop_t *ops;
    mmp__sexec_t *x;
    int nops;
  } old;
  int *ready; /* ops whose predecessors are complete, to post: FIFO */
  int nready;
  int rhead;
  int remaining;
  int running; /* the executor is on the stack (no re-entry) */
  int started;
  int first;  /* index of the FIRST receive, -1 at the root */
  int poison; /* arguments disagreed or a rank failed: every send goes out
                 empty, with a note of err and fail_rank */
  int err;
  int fail_rank;             /* world rank where err arose, -1: unknown */
  uint8_t hdr[MMP__HDR_MAX]; /* this rank's header (hdr_len bytes) */
  size_t hdr_len;
  mmp__sched_rebuild_fn rebuild;
  int first_here;      /* the first message was received before the plan was
                          built (mmp__sched_launch_locked completes its receive) */
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
  unsigned timeout_ms; /* 0: wait for ever */
  mmp__deadline_t tmo; /* armed from the start while timeout_ms > 0 */
  int aborted;         /* timed out: nothing more is posted (lock) */
  int detached;        /* timed out with ops in flight: frees itself once they
                          complete, holding comm (lock) */
  int comm_loss;       /* its receives fail on a loss anywhere in comm
                          (MMP__RECV_COMM_LOSS), set before the launch */
};

/*
 * Creates an empty schedule for one collective on `comm` (which takes the
 * next collective sequence number). Lock NOT held. On success the caller
 * owns *out until mmp__sched_start. Returns 0 or MMP_ENOMEM.
 */
int mmp__sched_new(mmp__engine_t *e, mmp_comm_t *comm, void *buf, size_t len,
                   unsigned mode, mmp__sched_t **out);

/* Gives up on the collective after `ms` milliseconds (0: keep the
 * default, MINIMP_COLL_TIMEOUT_MS). Before mmp__sched_start. On expiry
 * the request completes with MMP_ETIMEDOUT: receives not yet matched are
 * cancelled, nothing more is posted, the communicator fails every later
 * collective with MMP_ETIMEDOUT, and operations already under way finish
 * in the background (docs/embedding.md, "Timeouts"). */
void mmp__sched_set_timeout(mmp__sched_t *s, unsigned ms);

/* As mmp__sched_new for a sub-schedule of collective `seq` (takes no
 * sequence number; lock may be held). Returns 0 or MMP_ENOMEM. */
int mmp__sched_sub_new(mmp__engine_t *e, mmp_comm_t *comm, uint32_t seq,
                       void *buf, size_t len, unsigned mode,
                       mmp__sched_t **out);

/* A schedule for rank `me` of `p`, with no engine or communicator: to
 * build and check offline (it can never start). `buf` may be NULL.
 * Returns 0 or MMP_ENOMEM. */
int mmp__sched_offline(int p, int me, void *buf, size_t len,
                       mmp__sched_t **out);
/* An offline schedule's ranks sit on nodes node_of[0 .. p) (numbered
 * densely from 0 in order of their lowest rank, as the runtime numbers
 * them), which the caller keeps alive; without it each rank is a node. */
void mmp__sched_set_nodes(mmp__sched_t *s, const int *node_of);

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
/* Marks a send as carrying the header and the receive that matches it as
 * checking it, for algorithms whose first messages are no tree (ranks
 * exchange at once): nothing waits for the check, and a header that
 * differs ends the collective with MMP_EMISMATCH in poison mode, without
 * a rebuild. Not for packed ops. */
void mmp__sched_check(mmp__sched_t *s, int op);

/* Local ops (REDUCE, COPY): regions [src, src+len) and [dst, dst+len)
 * of the address space. `right`: the source is the right operand.
 * Return the op index or MMP_ENOMEM. Skipped in poison mode. */
int mmp__sched_reduce(mmp__sched_t *s, size_t src, size_t dst, size_t len,
                      int right);
int mmp__sched_copy(mmp__sched_t *s, size_t src, size_t dst, size_t len);

/* Gives the schedule a read-only input area of n bytes (a caller's send
 * buffer; NULL offline) after its buffer; before any scratch is taken.
 * Returns its address. */
size_t mmp__sched_input(mmp__sched_t *s, const void *in, size_t n);
/* Takes n bytes of scratch and returns their address. */
size_t mmp__sched_scratch(mmp__sched_t *s, size_t n);
/* Allocates the scratch block now (the caller fills some of it before
 * the start); the pointer of address `at`. NULL: out of memory. */
uint8_t *mmp__sched_scratch_ptr(mmp__sched_t *s, size_t at);
/* Where address `at` lives. */
static inline uint8_t *mmp__sched_at(const mmp__sched_t *s, size_t at) {
  if (at < s->len)
    return s->buf + at;
  at -= s->len;
  if (at < s->in_len)
    return (uint8_t *)(uintptr_t)(s->in + at);
  return s->scratch + (at - s->in_len);
}
/* `after` may only start once `before` completed. 0 or MMP_ENOMEM. */
int mmp__sched_dep(mmp__sched_t *s, int before, int after);

/* The note a send in poison mode carries (the EAGER frame's a1): the
 * cause `err` (< 0) and the world rank where it arose (-1: unknown),
 * with a magic byte so that 0 means no note. */
uint64_t mmp__sched_note(int err, int rank);
/* The cause of a received note (0: none), and in *rank the rank it names
 * if it is one of the p world ranks (else -1). A note no sender writes
 * gives MMP_EMISMATCH. */
int mmp__sched_note_decode(uint64_t note, int p, int *rank);

/* The collective's header inside a received first message of n bytes:
 * *hdr, *hlen, and whether the sender ran in poison mode. 0, or
 * MMP_EPROTO for anything but an envelope of this version. */
int mmp__sched_envelope(const uint8_t *msg, size_t n, const uint8_t **hdr,
                        size_t *hlen, int *poison);

/* The schedule's first message was received by its caller before the plan
 * was built (`got` bytes at `msg`): takes the data that rode with the
 * header into the buffer and marks the first receive as done for
 * mmp__sched_launch_locked. 0; MMP_EMISMATCH when the message is not as
 * long as this plan's first message; MMP_EPROTO without a first receive.
 * In poison mode the data is dropped. A first message longer than
 * MMP__FIRST_PIGGYBACK_MAX carries the header alone. */
#define MMP__FIRST_PIGGYBACK_MAX (64 * 1024)
int mmp__sched_take_first(mmp__sched_t *s, const uint8_t *msg, size_t got);

/* Gives the schedule a first-message header (n <= MMP__HDR_MAX bytes,
 * copied) and what to do when a sender's differs. */
void mmp__sched_set_header(mmp__sched_t *s, const void *hdr, size_t n,
                           mmp__sched_rebuild_fn rebuild);

/*
 * Turns the appended ops into the graph the executor runs: large first
 * messages split into a header and a data message, every op after this
 * rank's first receive, successor lists, and chains of ops that must be
 * posted in builder order (messages of one peer and tag match in posting
 * order). Ops from `from` on; 0 for a whole schedule. Needs no engine.
 * Returns 0 or MMP_ENOMEM.
 */
int mmp__sched_prepare(mmp__sched_t *s, int from);

/*
 * Prepares, starts, and hands the schedule to a new collective request in
 * *req, which mmp_wait/mmp_test complete and free. Any thread, lock NOT
 * held. Returns 0 or an error (then *req is NULL and the schedule is
 * freed).
 */
int mmp__sched_start(mmp__sched_t *s, mmp_request_t **req);

/*
 * As mmp_wait for the request mmp__sched_start gave, but gives up as soon
 * as a member of the communicator is lost: the collective then completes
 * with MMP_EPEERLOST, as after a timeout (what is under way finishes in the
 * background). For the collectives that run inside a blocking call, which
 * no receive of the caller's can watch, and whose partners may have left
 * on that loss without a word. Lock NOT held.
 */
int mmp__sched_wait_watch(mmp_request_t **req);

/*
 * Lock held. Starts a schedule whose ops the caller appended (no
 * request): a sub-broadcast inside a dynamic collective. on_done(s, arg)
 * runs once, lock held, when every op completed, possibly before this
 * returns; s->err holds the result. The caller frees `s` with
 * mmp__sched_free, never from inside on_done. With s->first_here set, the
 * plan's first receive counts as done without being posted: the caller
 * took that message itself. Returns 0, MMP_ENOMEM, or MMP_EPROTO when
 * first_here is set and the plan has no first receive (then on_done never
 * runs).
 */
int mmp__sched_launch_locked(mmp__sched_t *s,
                             void (*on_done)(mmp__sched_t *, void *),
                             void *arg);

/*
 * Lock held. The owner of sub-schedule `s` (launched or not, on_done not
 * yet run) gives it up with `err`, as a timed-out collective does: its
 * receives that no message matched are cancelled, nothing more is posted,
 * on_done never runs, and `s` frees itself, now or once the sends and
 * receives already under way complete. The caller must not touch `s`
 * again.
 */
void mmp__sched_abandon_locked(mmp__sched_t *s, int err);

/* Runs a local op (NOP, REDUCE, COPY) on its regions at `src` and `dst`:
 * what the executor and symbolic runs both do. */
void mmp__sop_local(const mmp__sched_t *s, const mmp__sop_t *op,
                    const uint8_t *src, uint8_t *dst);

/* Logs the ops not yet done (debugging). */
void mmp__sched_dump(const mmp__sched_t *s);

/* Frees a schedule that was never started, or a sub-schedule. NULL is
 * fine. */
void mmp__sched_free(mmp__sched_t *s);

/* ---- Symbolic runs (sched_sim.c) ---------------------------------------- */

/* What a symbolic run of every rank's schedule found. */
typedef struct mmp__sim_report_s {
  int ok;         /* every op ran, every byte arrived */
  long messages;  /* sends matched with receives */
  long ops;       /* ops in all schedules, after prepare */
  int stuck_rank; /* a rank with ops that never ran, or -1 */
  char what[200]; /* the first problem, in words */
} mmp__sim_report_t;

/*
 * Runs the prepared schedules s[0..p) (s[r] is rank r's) against each
 * other without a network: an op posts once its predecessors completed
 * and its chain predecessor posted; a send and a receive of the same pair,
 * kind of message (phase) and turn match, a first receive from any
 * sender; both complete only when matched (rendezvous, the strictest
 * order). Checks that every send has exactly one receive of the same
 * length, that a send only reads bytes its rank holds by then, and that
 * at the end rank r holds every byte of [0, want_len) (all ranks alike).
 * `have(r, off, len, arg)`-style initial holdings come from `init`: bytes
 * [init[2k], init[2k] + init[2k+1]) of rank init_rank[k], n_init of them.
 * Returns 0 (see rep->ok) or MMP_ENOMEM.
 */
int mmp__sched_simulate(mmp__sched_t *const *s, int p, size_t want_len,
                        const int *init_rank, const size_t *init, int n_init,
                        mmp__sim_report_t *rep);

/*
 * The same, moving real bytes: mem[r] is rank r's whole address space
 * (buffer, input, scratch: s[r]->len + in_len + scratch_len bytes, laid
 * out contiguously), which a delivered message copies into and REDUCE
 * and COPY ops work on with s[r]->reduce. So reductions can be checked
 * by their results. mem NULL: as mmp__sched_simulate.
 */
int mmp__sched_simulate_ex(mmp__sched_t *const *s, int p, size_t want_len,
                           const int *init_rank, const size_t *init, int n_init,
                           uint8_t *const *mem, mmp__sim_report_t *rep);

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
struct mmp__bcast_alg_s;

typedef struct mmp__bcast_arg_s {
  const mmp__group_t *g;
  int root; /* index in g */
  size_t off;
  size_t len;
  size_t seg;
  int dep;
  int phase;  /* phase_base */
  int first;  /* mark this rank's first message (top-level call) */
  int radix;  /* k-nomial */
  int groups; /* hierarchical: G */
  const struct mmp__bcast_alg_s *inner; /* hierarchical: inside groups */
  const struct mmp__bcast_alg_s *outer; /* hierarchical: between leaders */
} mmp__bcast_arg_t;

typedef int (*mmp__bcast_builder)(mmp__sched_t *s, const mmp__bcast_arg_t *a);

/* A broadcast as every rank must see it: what the first message's header
 * carries (bcast.c encodes it). Fields an algorithm does not use are 0. */
typedef struct mmp__bcast_desc_s {
  int alg; /* MMP_BCAST_* actually run */
  int root;
  uint64_t len;
  size_t seg; /* segment size, 0 = unsegmented */
  int radix;  /* k-nomial */
  int groups; /* hierarchical: G */
  int inner;  /* hierarchical: inside groups; arrival: sub-broadcast */
  int outer;  /* hierarchical: between leaders */
  int hint;   /* AUTO's advice from the root to the ranks that root the
                 next broadcasts (bcast_adapt.c); 0 elsewhere */
} mmp__bcast_desc_t;

/* The description as the first message's header carries it
 * (bcast_util.c). Decoding checks only the length and the kind:
 * MMP_EPROTO otherwise. */
#define MMP__BCAST_HDR_LEN 26
void mmp__bcast_desc_encode(const mmp__bcast_desc_t *d,
                            uint8_t out[MMP__BCAST_HDR_LEN]);
int mmp__bcast_desc_decode(const uint8_t *in, size_t n, mmp__bcast_desc_t *d);

/* What a cost function prices: p ranks, m bytes, X segments (pipelined
 * algorithms), G groups (hierarchical), under the model. `part` gives the
 * time of the best non-hierarchical broadcast over q ranks, for
 * algorithms made of others (set by the chooser). */
/* Multicast as AUTO prices it on a communicator (bcast_multicast.c):
 * all from the collective availability check, so every rank holds the
 * same figures. */
typedef struct mmp__mcast_net_s {
  int usable;     /* availability detection passed */
  size_t payload; /* payload bytes of a datagram */
  double loss;    /* fraction of probe datagrams lost, over all ranks */
  size_t extra;   /* wire bytes a datagram adds to payload and our header:
                     UDP, IP (by the group's family) and Ethernet */
} mmp__mcast_net_t;

typedef struct mmp__bcast_cost_in_s {
  int p;
  double m;
  double X;
  int G;
  const mmp_netmodel_t *nm;
  double (*part)(int q, double m, const mmp_netmodel_t *nm);
  /* The same for a part that starts on rested links (the first level of
   * a node broadcast): with the burst allowance. */
  double (*part_rested)(int q, double m, const mmp_netmodel_t *nm);
  /* Multicast on this communicator, or NULL: not priced (infinite). */
  const mmp__mcast_net_t *mc;
} mmp__bcast_cost_in_t;

/* `in` for p ranks and m bytes under `nm`, one segment, no groups, with
 * the chooser's parts (bcast_choose.c). */
void mmp__bcast_cost_in_init(mmp__bcast_cost_in_t *in, int p, double m,
                             const mmp_netmodel_t *nm);

/* How an asked-for algorithm's open options are settled on one rank:
 * every rank computes the same. */
typedef struct mmp__bcast_env_s {
  mmp_comm_t *comm; /* for the network model (collective on first use) */
  int p;
  int auto_pick; /* AUTO chose the algorithm */
  /* The row of algorithm `id`, or NULL: mmp__bcast_alg. */
  const struct mmp__bcast_alg_s *(*alg_of)(int id);
  /* The best static algorithm for q ranks: mmp__bcast_choose. */
  double (*choose)(int q, size_t len, const mmp_netmodel_t *nm, int *alg,
                   size_t *seg, int *groups);
  /* The best flat one (no composite): mmp__bcast_choose_flat. */
  double (*choose_flat)(int q, size_t len, const mmp_netmodel_t *nm, int *alg,
                        size_t *seg);
  /* A cost formula's input for p ranks and m bytes:
   * mmp__bcast_cost_in_init. */
  void (*cost_in)(mmp__bcast_cost_in_t *in, int p, double m,
                  const mmp_netmodel_t *nm);
} mmp__bcast_env_t;

/* A dynamic broadcast's start: everything it needs to run on its own. */
typedef struct mmp__bcast_run_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  void *buf;
  const mmp__bcast_desc_t *d;
  unsigned mode;
  /* The row of algorithm `id`, or NULL (bcast_algs.c). */
  const struct mmp__bcast_alg_s *(*alg_of)(int id);
  /* Builds a static broadcast for the whole communicator (bcast_algs.c). */
  int (*build)(mmp__sched_t *s, const mmp__bcast_desc_t *d);
  /* AUTO's adaptive mode (MMP__ADAPT_MIN): receivers announce themselves
   * and follow the root; the root runs `stat` when it is set, else `d`. */
  int adaptive;
  const mmp__bcast_desc_t *stat;
  int hint;            /* the root's regime, for the ranks that root next */
  unsigned timeout_ms; /* the call's, or the communicator's; 0: none */
  int pace_share;      /* multicast: this many roots send at once and share
                          each receiver's link (0 or 1: alone) */
  int part; /* a part of another collective (a multicast s-to-p): not the
               communicator's latest broadcast (mmp_bcast_last) */
} mmp__bcast_run_t;

enum {
  MMP__BCAST_F_AUTO = 0x1,       /* AUTO may choose it */
  MMP__BCAST_F_TOP = 0x2,        /* ... only as its own top-level choice */
  MMP__BCAST_F_GROUPS = 0x4,     /* runs inside and between hierarchical
                                    groups when asked for */
  MMP__BCAST_F_SUB = 0x8,        /* runs as an arrival-aware broadcast's
                                    sub-group broadcast */
  MMP__BCAST_F_DYNAMIC = 0x10,   /* no static schedule: `start` */
  MMP__BCAST_F_COMPOSITE = 0x20, /* runs `inner` and `outer` algorithms */
  MMP__BCAST_F_PIPELINED = 0x40  /* AUTO runs it in the segments of
                                    mmp__pipeline_seg */
};

/* One broadcast algorithm: a row of mmp__bcast_algs (bcast_algs.c),
 * defined in the algorithm's own file beside its builder. */
typedef struct mmp__bcast_alg_s {
  int id;           /* MMP_BCAST_* */
  const char *name; /* mmp_bcast_alg_name, minimp-bench --algs */
  unsigned flags;   /* MMP__BCAST_F_* */
  int prefer;       /* AUTO: of two within 3%, the lower wins */
  size_t auto_min;  /* AUTO considers it from this length on */
  /* What opts.inner and opts.outer may name (MMP__BCAST_F_GROUPS,
   * MMP__BCAST_F_SUB); 0: the algorithm takes none. */
  unsigned inner_needs;
  unsigned outer_needs;
  /* Appends this rank's ops (static algorithms). */
  mmp__bcast_builder build;
  /* Starts a dynamic one (MMP__BCAST_F_DYNAMIC). Any thread, lock NOT
   * held. 0 with *req a new collective request, or an error. */
  int (*start)(const mmp__bcast_run_t *run, mmp_request_t **req);
  /* Predicted seconds (Hockney); NULL: never priced. */
  double (*cost)(const mmp__bcast_cost_in_t *in);
  /* Bytes the busiest link carries in one broadcast. */
  double (*link_bytes)(int p, double m);
  /* Settles what `o` left open in `d` (d->alg, root, len set). NULL:
   * nothing to settle. 0, or an error from measuring the model. */
  int (*resolve)(mmp__bcast_desc_t *d, const mmp_bcast_opts_t *o,
                 const mmp__bcast_env_t *env);
} mmp__bcast_alg_t;

/* The rows other code names: the binomial tree runs the k-nomial
 * builder, and the model's figures travel down the binomial tree. The
 * others are reached through mmp__bcast_alg. */
extern const mmp__bcast_alg_t mmp__bcast_binomial_alg, mmp__bcast_knomial_alg;

/* The table (bcast_algs.c): the row of algorithm `id`, or NULL (AUTO and
 * unknown numbers). */
const mmp__bcast_alg_t *mmp__bcast_alg(int id);

/* Checks the descriptor table once (debug builds): ids, names, flags and
 * hooks agree with each other. */
void mmp__bcast_algs_check(void);

/* 1 if `part` may run as an inner/outer algorithm of a hierarchical
 * broadcast (MMP__BCAST_F_GROUPS), or as the sub-broadcast of an
 * arrival-aware one (MMP__BCAST_F_SUB), as `flag` says. */
int mmp__bcast_composes(int part, unsigned flag);

/*
 * Appends rank s->me's ops for the broadcast `d` over the whole
 * communicator of s->p ranks, marking its first message: what a running
 * broadcast and a poison rebuild do, and what offline checks call. For
 * static algorithms only. Returns 0, MMP_EMISMATCH for a description no
 * rank could have made, or MMP_ENOMEM.
 */
int mmp__bcast_build(mmp__sched_t *s, const mmp__bcast_desc_t *d);

/* ---- Helpers for broadcast builders (bcast_util.c) --------------------- */

/* A recv or send of a region, with `dep` (if >= 0) as predecessor. Returns
 * the op index or a negative error. */
int mmp__bcast_recv(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase);
int mmp__bcast_send(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase, int after);

/* Two levels, as the hierarchical and node broadcasts run them: top->outer
 * among `outer` (its index 0 holds the data; me -1 where this rank is not
 * in it), then top->inner within `inner` (index 0 the leader, which
 * forwards once it holds the data), its phases MMP__LEVEL_PHASES above
 * the outer's. Returns the last op or a negative error. */
#define MMP__LEVEL_PHASES 19
/* p members cut into G runs of consecutive members, the first p mod G of
 * them one member larger: the first member of run g (g = G: p). */
int mmp__group_start(int p, int G, int g);
int mmp__bcast_levels(mmp__sched_t *s, const mmp__bcast_arg_t *top,
                      const mmp__group_t *outer, const mmp__group_t *inner);

/* A NOP that completes after `dep` (if >= 0): what builders return when
 * this rank receives nothing. */
int mmp__bcast_done(mmp__sched_t *s, int dep);

/* The whole communicator as a group of `s` (member i is rank i, this
 * rank's index), its map owned by the schedule. 0 or MMP_ENOMEM. */
int mmp__sched_group_all(mmp__sched_t *s, mmp__group_t *all);

/* Runs `b` over the whole communicator (member i is rank i) with this
 * rank's index; the rest of `a` as given. Returns what `b` does. */
int mmp__bcast_over_all(mmp__sched_t *s, mmp__bcast_builder b,
                        mmp__bcast_arg_t *a);

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

/* What every public collective call checks first: 0, MMP_ENOTINIT (logged
 * once per process) or MMP_ECOMM. */
/* Sets up `r`, a zeroed heap request, as a collective's request on `comm`:
 * waits on it poll by `len` bytes (the progress engine's bulk rule), its
 * status names `source`, and `dtor` frees its owner `arg` with it. It
 * holds a reference on `comm` until mmp__req_user_free. */
static inline void mmp__coll_req_init(mmp_request_t *r, mmp_comm_t *comm,
                                      size_t len, int source, void *arg,
                                      void (*dtor)(mmp_request_t *)) {
  r->on_heap = 1;
  r->kind = MMP__REQ_COLL;
  r->state = MMP__RQ_NEW;
  r->comm = comm;
  r->len = len;
  r->cb_arg = arg;
  r->dtor = dtor;
  mmp__list_init(&r->node);
  atomic_init(&r->done, 0);
  r->status.source = source;
  r->status.tag = MMP_ANY_TAG;
  mmp__comm_ref(comm);
}

static inline int mmp__coll_ready(const mmp_comm_t *comm) {
  if (mmp__eng == NULL)
    return mmp__not_init("a collective (mmp_bcast, mmp_barrier, ...)");
  if (comm == NULL)
    return MMP_ECOMM;
  /* A collective gave up on it: its sequence numbers no longer agree. */
  return atomic_load_explicit(&comm->coll_err, memory_order_relaxed);
}

/* Virtual rank of member i when the root is member `root`: (i - root) mod
 * n; and back. */
/* ceil(log2 x), 0 for x <= 1: the rounds of a doubling tree. */
static inline double mmp__lg2(double x) {
  return x <= 1 ? 0 : ceil(log2(x));
}

static inline int mmp__vrank(int i, int root, int n) {
  return (i - root + n) % n;
}
static inline int mmp__rrank(int v, int root, int n) {
  return (v + root) % n;
}

/* ---- Algorithm-specific parameters ------------------------------------- */

/* k-nomial tree (bcast_knomial.c). */
#define MMP__KNOMIAL_RADIX_DEFAULT 3
#define MMP__KNOMIAL_RADIX_MAX 16

/* The symmetric broadcast sends messages shorter than this whole, as the
 * flat broadcast does (MINIMP_BCAST_SYM_MIN overrides it; the crossover is
 * in docs/algorithms.md). It cuts its pieces into sub-segments sized from
 * the network model (opts.segment overrides), of this many bytes when the
 * model is degenerate. */
#define MMP__SYMMETRIC_MIN_DEFAULT (3u * 1024)
#define MMP__SYMMETRIC_SEG_DEFAULT (16u * 1024)

/* The pipelined chain's segment under `nm`: the optimum X =
 * sqrt((p - 2) m beta / alpha) segments, each at least 4 KiB; 0 (the whole
 * message at once) when that is a single segment. AUTO and an explicit
 * MMP_BCAST_PIPELINE without a segment use the same (bcast_pipeline.c). */
size_t mmp__pipeline_seg(int p, size_t len, const mmp_netmodel_t *nm);

/* What each segment of a pipeline after its first adds on a link: the
 * model's gap (one more message sent back to back), or alpha where none
 * was measured (a saved profile without MINIMP_NET_GAP_US). A segment
 * that follows another does not wait the latency again (docs/algorithms.md,
 * "The network model"). */
static inline double mmp__net_gap(const mmp_netmodel_t *nm) {
  return nm->gap > 0 ? nm->gap : nm->alpha;
}

/* Arrival-aware broadcasts (bcast_arrival.c). The root's gathering window
 * in seconds: p alpha, at least 1 ms (libuv's timers count milliseconds),
 * at most T(m) / MMP__ARRIVAL_WINDOW_DIV; 0 (none) when that is under
 * 1 ms. MINIMP_BCAST_ARRIVAL_WINDOW_US overrides it (0: none). */
#define MMP__ARRIVAL_WINDOW_DIV 16
double mmp__arrival_window(int p, size_t len, const mmp_netmodel_t *nm);

/* 1 if AUTO should run an arrival-aware broadcast, whose sub-broadcast
 * over all p ranks is predicted to take `sub` seconds, rather than the
 * static algorithm predicted to take `best` (bcast_arrival.c states the
 * rule). */
int mmp__bcast_arrival_pays(int p, size_t len, const mmp_netmodel_t *nm,
                            double best, double sub);
/* What an arrival-aware broadcast's default sub-broadcast, the pipelined
 * chain over all p ranks in the model's segments, is predicted to take
 * (bcast_choose.c). */
double mmp__bcast_sub_cost(int p, size_t len, const mmp_netmodel_t *nm);
#define MMP__ARRIVAL_AUTO_SHARE 0.08

/* ---- Choice (bcast_choose.c): pure functions of the model --------------- */

/* Predicted time of algorithm `alg` (G groups for the hierarchical one,
 * X segments for the pipelined ones) under model `nm`; INFINITY for
 * algorithms without a price. */
double mmp__bcast_cost(int alg, int p, double m, double X, int G,
                       const mmp_netmodel_t *nm);

/* Chooses algorithm, segment size and groups for (p, len) under `nm`, among
 * the static algorithms, and returns its predicted time. Deterministic:
 * every rank that passes the same inputs gets the same. */
double mmp__bcast_choose(int p, size_t len, const mmp_netmodel_t *nm, int *alg,
                         size_t *seg, int *groups);

/* MMP_BCAST_AUTO's static choice: mmp__bcast_choose's, except that the
 * top-level-only algorithms (MMP__BCAST_F_TOP: the symmetric broadcast)
 * compete too, and where ranks share CPUs the k-nomial tree (radix
 * MMP__KNOMIAL_RADIX_DEFAULT) takes the messages of up to MMP__BULK_BYTES
 * it gives the binomial tree. */
/* AUTO's static choice for links a broadcast just drained (no time to
 * refill the burst allowance): the same as mmp__bcast_choose_auto's
 * unless that one relied on the allowance (its busiest link carries no
 * more than the burst), which becomes the pipeline (docs/algorithms.md,
 * "Rested or drained links"). */
void mmp__bcast_choose_drained(int p, size_t len, const mmp_netmodel_t *nm,
                               int *alg, size_t *seg, int *groups);
double mmp__bcast_choose_auto(int p, size_t len, const mmp_netmodel_t *nm,
                              int *alg, size_t *seg, int *groups);
/* mmp__bcast_choose_auto's choice with the multicast row priced too,
 * under `mc` (NULL: as mmp__bcast_choose_auto). */
double mmp__bcast_choose_auto_mc(int p, size_t len, const mmp_netmodel_t *nm,
                                 const mmp__mcast_net_t *mc, int *alg,
                                 size_t *seg, int *groups);
/* 1 if AUTO considers multicast at all on p ranks under `nm`: at least 3
 * ranks, one per node, on CPUs they do not share (docs/algorithms.md,
 * "Multicast"). A function of (p, nm) only, not of the length, so that
 * every rank's first AUTO broadcast makes the same collective
 * availability check whatever length it passed. */
int mmp__bcast_mcast_considered(int p, const mmp_netmodel_t *nm);
/* AUTO's multicast figures for `comm` (bcast.c): zero unless MINIMP_MCAST
 * is on and mmp__bcast_mcast_considered; the first call is collective. */
int mmp__auto_mcast_net(mmp_comm_t *comm, const mmp_netmodel_t *nm,
                        mmp__mcast_net_t *mc);

/* The same among the non-hierarchical algorithms only; returns the
 * predicted time (hierarchical groups and s-to-p's 2-Step broadcast with
 * it). */
double mmp__bcast_choose_flat(int p, size_t len, const mmp_netmodel_t *nm,
                              int *alg, size_t *seg);

/* ---- AUTO under arrival patterns (bcast_choose.c, bcast_arrival.c) -------
 *
 * From 64 KiB (MMP__ADAPT_MIN) on, AUTO's receivers announce their arrival
 * to the root (an ARRIVED message each), and the root alone decides, for
 * every broadcast it roots, whether to run the static algorithm AUTO
 * chose or an arrival-aware one; the receivers follow its first message,
 * so every rank runs the same algorithm whatever each knew before. The
 * root decides from the arrival patterns it saw in its last broadcasts of
 * that size: the algorithm predicted faster under them, by a margin
 * (docs/algorithms.md, "AUTO under arrival patterns"). */
#define MMP__ADAPT_MIN (64u * 1024)
#define MMP__ADAPT_HISTORY 4
#define MMP__ADAPT_MARGIN 1.1

/* Predicted average per-node time of the static broadcast `d`, and of an
 * arrival-aware one (arrival_nb with `nb`, else arrival_b; sub-broadcast
 * a pipelined chain in `seg`-byte segments; gathering window `window`
 * seconds), when receiver v (virtual rank) arrives off[v] seconds after
 * the root (off[0] = 0). */
double mmp__predict_static(const mmp__bcast_desc_t *d, int p, const double *off,
                           const mmp_netmodel_t *nm);
double mmp__predict_arrival(int nb, int p, size_t len, size_t seg,
                            const double *off, const mmp_netmodel_t *nm,
                            double window);

/* The root's own part of the static broadcast `d` under the offsets:
 * what mmp__predict_static charges the root, the model's check. */
double mmp__predict_static_root(const mmp__bcast_desc_t *d, int p,
                                const double *off, const mmp_netmodel_t *nm);
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
double mmp__adapt_model(const mmp__bcast_desc_t *stat, int p,
                        const double *hist, const double *took, int n,
                        const mmp_netmodel_t *nm, double prev,
                        mmp_netmodel_t *out);
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
int mmp__bcast_adapt_decide(const mmp__bcast_desc_t *stat, int arr_nb,
                            size_t arr_seg, int p, const double *hist, int n,
                            int current, const mmp_netmodel_t *nm,
                            const mmp_netmodel_t *nm_arr, double window);

/* ---- The network model (netmodel.c) ------------------------------------- */

/* beta (s/byte) and the burst allowance (bytes) from the best half round
 * trips of 1-byte, 64 KiB and 1 MiB ping-pongs (seconds). */
void mmp__net_beta_burst(double one, double small, double large, double *beta,
                         double *burst);

/* The model for `comm`: the saved profile when MINIMP_NET_ALPHA_US and
 * MINIMP_NET_BETA_NS were set, else measured once per communicator by all
 * its ranks at once (a collective call the first time; communicators made
 * from it inherit it). Lock NOT held. 0 or an error of the measurement. */
int mmp__netmodel_get(mmp_comm_t *comm, mmp_netmodel_t *out);

/* gamma (seconds per byte reduced) on this CPU: the best of a few float
 * sums (coll_gamma.c); rank 0's travels with the model. */
double mmp__measure_gamma(void);
/* gamma where the model is not measured (a saved profile, one rank):
 * MINIMP_NET_GAMMA_NS, else this. */
#define MMP__GAMMA_DEFAULT_NS 0.25

/* ---- Per-communicator state (coll_state.c) ------------------------------ */

#define MMP__COLL_LOG 256

/* What the collectives layer keeps about a communicator: the network
 * model and AUTO's recent broadcast decisions. Owned by this layer; the
 * runtime only frees it with the communicator (mmp__comm_ext_ops_t). */
/* One cached AUTO decision of reduce ... alltoall (coll.c): the call's
 * arguments the decision depends on, the model's generation, the result. */
typedef struct mmp__coll_auto_s {
  int valid;
  int coll, req_alg, noncomm; /* req_alg, req_seg, req_radix: the
                                 options' */
  int req_radix;
  double m; /* the bytes the model prices */
  size_t esize, req_seg;
  unsigned gen; /* mmp__coll_state_t.net_gen when decided */
  int alg, radix;
  size_t seg;
} mmp__coll_auto_t;

typedef struct mmp__coll_state_s {
  int net_known;
  mmp_netmodel_t net;
  unsigned net_gen; /* bumped whenever `net` changes: AUTO's cached
                       decisions of another generation are stale */
  /* AUTO decisions of reduce ... alltoall (coll.c), a slot per collective
   * and size class, each valid for its exact arguments only. */
  mmp__coll_auto_t coll_auto[16];
  unsigned coll_auto_hits; /* decisions served from coll_auto (tests) */
  struct {                 /* AUTO broadcast decisions, by length */
    size_t len;
    mmp__bcast_desc_t d;
    int pays; /* mmp__bcast_arrival_pays */
    int valid;
  } bcast_auto[4];
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
    int alg;
  } log[MMP__COLL_LOG];
  unsigned nlog;
} mmp__coll_state_t;

/* Lock NOT held. Multicast on `comm` as AUTO prices it: runs the
 * availability check as mmp__mcast_usable does (collective on the first
 * call, the same point on every rank), then fills *out (out->usable 0
 * where multicast does not work or is misconfigured: AUTO does without
 * it). 0, or an error of the point-to-point exchange. */
int mmp__mcast_net(mmp_comm_t *comm, mmp__mcast_net_t *out);

/* The price of multicasting (bcast_multicast.c): alpha, then `first`
 * bytes of payload at the root's pace slowed `share`-fold (roots that
 * share the receivers' links), then the repairs of `m` bytes of
 * datagrams to p - 1 receivers under mc->loss. INFINITY where `mc` is
 * NULL or multicast unusable. */
double mmp__mcast_price(int p, double first, double share, double m,
                        const mmp_netmodel_t *nm, const mmp__mcast_net_t *mc);

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

/* Which algorithm each of the last MMP__COLL_LOG broadcasts on a
 * communicator ran, as this rank saw it, for tests that check that every
 * rank ran the same. Lock held to record. */
void mmp__coll_log_locked(mmp_comm_t *comm, uint32_t seq, int alg);
/* Copies up to `max` entries, oldest first, into seq[] and alg[]; returns
 * how many. Lock NOT held. */
int mmp__coll_log_get(mmp_comm_t *comm, uint32_t *seq, int *alg, int max);

/* The state of `comm`, created on first use. NULL only when out of
 * memory. Lock NOT held. */
mmp__coll_state_t *mmp__coll_state(mmp_comm_t *comm);

#endif /* MMP_COLLECTIVES_COLLECTIVES_H */
