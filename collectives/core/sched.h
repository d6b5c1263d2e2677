/* SPDX-License-Identifier: MIT */
/*
 * The executor: schedules, and their symbolic runs.
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
 * Separation from user traffic: collectives use the communicator's second
 * context id (comm->ctx + 1), which user messages never carry, and put the
 * collective's sequence number in the tag, so collectives in flight at
 * the same time never match each other either.
 *
 * Consistency: a collective may give its schedule a first-message header,
 * its own description of the call as this rank sees it (core/alg.h: the
 * wire descriptor). Every non-root rank's first message carries the
 * sender's, and nothing else is posted before it arrives. A rank whose
 * header differs rebuilds the schedule from the sender's and runs it in
 * "poison" mode: every send becomes empty, so its whole subtree fails
 * with MMP_EMISMATCH instead of waiting for data that never comes.
 */
#ifndef MMP_COLLECTIVES_CORE_SCHED_H
#define MMP_COLLECTIVES_CORE_SCHED_H

#include <assert.h>
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
 * then the collective's own header, up to MMP__HDR_MAX bytes (its wire
 * descriptor, core/alg.h), then the data that rides along. A receive has
 * room for MMP__HDR_SIZE, the longest envelope and header. */
#define MMP__HDR_MAX 76
#define MMP__HDR_SIZE (4 + MMP__HDR_MAX)

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
   * polls (docs/design/progress.md). */
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
  /* mmp__sched_follow_locked's: runs once, lock held, as creq completes. */
  void (*follow)(mmp_request_t *creq, void *arg);
  void *follow_arg;
};

/*
 * Creates an empty schedule for one collective on `comm` (which takes the
 * next collective sequence number). Lock NOT held. On success the caller
 * owns *out until mmp__sched_start. Returns 0 or MMP_ENOMEM.
 */
int mmp__sched_new(mmp__engine_t *e, mmp_comm_t *comm, void *buf, size_t len,
                   unsigned mode, mmp__sched_t **out);

/* As mmp__sched_new on sequence number `seq`, which the caller reserved
 * (moved comm->coll_seq past it) when its collective started: a part
 * that starts later, in loop context, must take the place every rank
 * gave it, not the next number. Lock NOT held. 0 or MMP_ENOMEM. */
int mmp__sched_new_at(mmp__engine_t *e, mmp_comm_t *comm, uint32_t seq,
                      void *buf, size_t len, unsigned mode, mmp__sched_t **out);

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
 * Lock held. fn(req, arg) runs once, lock held, when `req` (which
 * mmp__sched_start gave, not yet waited on) completes, or now if it has:
 * a collective whose part is a schedule goes on from there. The
 * request's callback is not for borrowing: a timeout or a loss takes its
 * cb_arg back. Returns 0, or MMP_EINVAL when `req` is not a schedule's
 * (then fn never runs).
 */
int mmp__sched_follow_locked(mmp_request_t *req,
                             void (*fn)(mmp_request_t *, void *), void *arg);

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

/* The whole communicator as a group of `s` (member i is rank i, this
 * rank's index), its map owned by the schedule. 0 or MMP_ENOMEM. */
int mmp__sched_group_all(mmp__sched_t *s, mmp__group_t *all);

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

#endif /* MMP_COLLECTIVES_CORE_SCHED_H */
