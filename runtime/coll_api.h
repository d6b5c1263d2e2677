/* SPDX-License-Identifier: MIT */
/*
 * The runtime as the collectives layer sees it: the one header every file
 * of collectives/ includes for it, and all they may use of it. Requests
 * (to embed, complete and wait for), point-to-point calls in a
 * communicator's collective context, deadlines and timers, the facts of a
 * communicator a collective needs (its ranks, nodes, timeout, whether
 * multicast works), the multicast channel, the configuration that
 * concerns collectives, engine.lock, and the brackets of public calls.
 * The engine itself is opaque here.
 *
 * runtime/internal.h includes this header: what is declared here is
 * declared once, and the runtime's own files see it too.
 */
#ifndef MMP_RUNTIME_COLL_API_H
#define MMP_RUNTIME_COLL_API_H

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "minimp.h"
#include "transport/udp.h"
#include "transport/util.h"

typedef struct mmp__engine_s mmp__engine_t;
typedef struct mmp__node_s mmp__node_t;

/* ---- The engine and its lock ------------------------------------------- */

/* The process-wide engine while initialised, else NULL. */
extern mmp__engine_t *mmp__eng;

/* What a public call made before a successful mmp_init returns:
 * MMP_ENOTINIT, after logging once per process that `fn` was called. */
int mmp__not_init(const char *fn);

/*
 * engine.lock, which protects every request, queue and collective record.
 * A function whose name ends in _locked requires it; "lock held", "lock
 * NOT held" and "loop context" (the calling thread runs the engine's
 * loop) are asserted with MMP__ASSERT_LOCKED, MMP__ASSERT_UNLOCKED and
 * MMP__ASSERT_LOOP (debug builds). Here the engine is opaque, so the
 * collectives' mmp__lock and mmp__unlock are these calls; the runtime's
 * own files inline them (runtime/internal.h, which defines the names
 * before it includes this header).
 */
void mmp__rt_lock(mmp__engine_t *e);
void mmp__rt_unlock(mmp__engine_t *e);
/* 1 if the calling thread holds engine.lock (debug builds; 1 with
 * NDEBUG, where only assertions ask). */
int mmp__rt_lock_held(mmp__engine_t *e);
/* 1 if the calling thread runs the engine's loop (debug builds; 1 with
 * NDEBUG). */
int mmp__rt_in_loop(mmp__engine_t *e);
#ifndef MMP_RUNTIME_INTERNAL_H
#define mmp__lock(e) mmp__rt_lock(e)
#define mmp__unlock(e) mmp__rt_unlock(e)
#define MMP__ASSERT_LOCKED(e) assert(mmp__rt_lock_held(e))
#define MMP__ASSERT_UNLOCKED(e) assert(!mmp__rt_lock_held(e))
#define MMP__ASSERT_LOOP(e) assert(mmp__rt_in_loop(e))
#endif

/* ---- Configuration ------------------------------------------------------ */

/* MINIMP_<COLLECTIVE>_ALG=name[,option=value]...: the algorithm, with
 * options named as mmp_coll_opts_t's fields, that replaces AUTO for the
 * collective's calls that leave the choice to AUTO. config.c reads the
 * syntax; the collectives layer checks the names (mmp__coll_hooks_t). */
#define MMP__COLL_ENV_MAX 16 /* collectives with a variable set */
#define MMP__COLL_NAME_MAX 32
typedef struct mmp__coll_env_s {
  char var[MMP__COLL_NAME_MAX + 12]; /* "MINIMP_BCAST_ALG": the variable,
                                       a collective's table's .env */
  char alg[MMP__COLL_NAME_MAX];      /* the algorithm's name */
  char inner[MMP__COLL_NAME_MAX];    /* "": not given */
  char outer[MMP__COLL_NAME_MAX];
  uint64_t segment;
  int radix, groups, rows, window;
  unsigned given; /* MMP_OPT_*: the options the value sets */
} mmp__coll_env_t;

/* The collectives layer's tuning, parsed with the rest at init. */
typedef struct mmp__coll_config_s {
  int64_t bcast_sym_min;     /* MINIMP_BCAST_SYM_MIN bytes; -1: default */
  int64_t arrival_window_us; /* MINIMP_BCAST_ARRIVAL_WINDOW_US; -1: model */
  int net_profile;           /* MINIMP_NET_ALPHA_US and _BETA_NS were set */
  double net_alpha_us;
  double net_beta_ns;
  double net_burst;         /* MINIMP_NET_BURST_BYTES; 0 if unset */
  int net_shared;           /* MINIMP_NET_SHARED_CPUS */
  double net_gamma_ns;      /* MINIMP_NET_GAMMA_NS; -1 if unset */
  double net_node_alpha_us; /* MINIMP_NET_NODE_ALPHA_US; -1 if unset */
  double net_node_beta_ns;  /* MINIMP_NET_NODE_BETA_NS; -1 if unset */
  double net_gap_us;        /* MINIMP_NET_GAP_US; 0 if unset */
  unsigned timeout_ms;      /* MINIMP_COLL_TIMEOUT_MS; 0: collectives wait on */
  mmp__coll_env_t algs[MMP__COLL_ENV_MAX]; /* MINIMP_<COLLECTIVE>_ALG */
  int nalgs;
} mmp__coll_config_t;

/*
 * What the runtime calls of the collectives layer. The layer hands them
 * to mmp__rt_init from the library's entry points (collectives/init.c)
 * rather than registering them from a constructor: a static link leaves
 * out the objects nothing references, and the runtime references nothing
 * above it, so a constructor's object could be missing.
 */
typedef struct mmp__coll_hooks_s {
  /* Checks the names in cc->algs against the collectives and their
   * algorithms: 0, or MMP_EENV after logging what is wrong. Called as
   * the environment is read. */
  int (*config_check)(const mmp__coll_config_t *cc);
  /* Called with every rank once the world is up and the progress loop
   * runs inside the library (not with MMP_INIT_EXTERNAL_PROGRESS): the
   * layer measures the world's network model there. Lock NOT held. */
  void (*world_up)(mmp_comm_t *world);
} mmp__coll_hooks_t;

/* The bodies of mmp_init and mmp_init_ex (minimp.h), with the
 * collectives layer's hooks `h` (static storage; kept for the process's
 * life). Same returns as those. */
int mmp__rt_init(const mmp__coll_hooks_t *h, int *argc, char ***argv);
int mmp__rt_init_ex(const mmp__coll_hooks_t *h, int rank, int size,
                    const char *rendezvous, const char *job_key,
                    const char *iface, unsigned flags);

/* The running engine's collectives configuration. Any thread; no lock. */
const mmp__coll_config_t *mmp__rt_coll_config(const mmp__engine_t *e);

/* MINIMP_MCAST: never open the multicast channel (OFF); detect it at the
 * first multicast use on a communicator (AUTO, ON; ON also warns when it
 * is found unusable). */
enum { MMP__MCAST_OFF = 0, MMP__MCAST_ON = 1, MMP__MCAST_AUTO = 2 };

/* What collectives read of the runtime's configuration and of the job. */
typedef struct mmp__rt_facts_s {
  int world_size;                 /* ranks in the job */
  int cpus_shared;                /* more ranks than CPUs share this machine */
  uint64_t eager_limit;           /* AUTO sends up to this size go eager */
  uint64_t eager_buffer;          /* per-peer eager credit, bytes */
  uint64_t max_frame;             /* largest frame payload a rank accepts */
  int mcast;                      /* MMP__MCAST_*: MINIMP_MCAST */
  unsigned mcast_timeout_ms;      /* MINIMP_MCAST_TIMEOUT_MS */
  const mmp__coll_config_t *coll; /* the collectives' own variables */
} mmp__rt_facts_t;
/* Fills *out from the running engine `e`. Any thread; no lock. */
void mmp__rt_facts(const mmp__engine_t *e, mmp__rt_facts_t *out);

/* ---- Requests ----------------------------------------------------------- */

enum mmp__req_kind {
  MMP__REQ_SEND = 1,
  MMP__REQ_RECV = 2,
  MMP__REQ_COLL = 3 /* completed by a collective schedule */
};

/* Called with engine.lock held, in whichever thread completes the request
 * (often loop context). It must not block; it may post more operations
 * with the *_locked calls. */
typedef void (*mmp__req_cb)(mmp_request_t *r, void *arg);

enum mmp__req_state {
  MMP__RQ_NEW = 0,
  MMP__RQ_POSTED,    /* recv: in the posted queue */
  MMP__RQ_QUEUED,    /* send: frame waiting in the peer's send queue */
  MMP__RQ_WAIT_CTS,  /* rndv send: RTS out, waiting for the receiver */
  MMP__RQ_SENDING,   /* rndv send: DATA frames going out */
  MMP__RQ_WAIT_DATA, /* rndv recv: CTS out, waiting for DATA */
  MMP__RQ_RECEIVING, /* recv: eager payload arriving into the buffer */
  MMP__RQ_CLAIMED,   /* recv: matched an eager message still arriving */
  MMP__RQ_SELF,      /* rndv self-send: waiting for the local receive */
  MMP__RQ_DONE
};

/* A cancellable one-shot deadline, embedded in its owner (see
 * mmp__deadline_start_locked). Zero-initialised it is not armed. */
typedef struct mmp__deadline_s {
  mmp__list_t node; /* on engine.deadlines while armed */
  uint64_t due;     /* uv_hrtime() nanoseconds */
  void (*cb)(void *arg);
  void *arg;
  int armed;
} mmp__deadline_t;

struct mmp_request_s {
  mmp__list_t node; /* posted queue, or a peer's data queue */
  int kind;
  int state;
  atomic_int done; /* set last, with release order, when complete */
  int on_heap;     /* freed by wait/test; blocking calls use the stack */
  const mmp_comm_t *comm;
  uint32_t ctx; /* communicator context id */
  int peer;     /* world rank, or MMP_ANY_SOURCE for receives */
  int src;      /* recv: world rank it matched */
  int tag;
  void *buf;
  size_t len;             /* send length, or receive capacity */
  unsigned mode;          /* MMP_SEND_EAGER or MMP_SEND_RNDV once decided */
  uint64_t cookie;        /* ours, while registered */
  uint64_t remote_cookie; /* the peer's, for CTS and DATA */
  uint64_t msg_len;       /* recv: length announced by the sender */
  uint64_t allowed;       /* rndv: bytes that will be transferred */
  uint64_t sent;          /* rndv send: bytes handed to DATA frames */
  uint64_t xfer;          /* rndv recv: bytes landed */
  int nwrites;            /* transport writes still referencing this request */
  int err;                /* first error seen */
  mmp__req_cb cb;         /* internal requests: completion callback */
  void *cb_arg;
  void (*dtor)(mmp_request_t *r); /* runs before a user request is freed */
  struct mmp__unexp_s *claimed;
  mmp_status_t status;
  /* An opaque word an eager message carries besides its bytes (the
   * EAGER frame's a1; 0: none): sends set it through
   * mmp__isend_note_locked, receives find the sender's here. */
  uint64_t note;
  mmp__deadline_t tmo; /* user receive: its communicator's timeout */
  unsigned rflags;     /* recv: MMP__RECV_* */
  uint32_t tag_mask;   /* sink (MMP__RECV_SINK): the tag bits it compares */
};

/* ---- Communicators ------------------------------------------------------ */

/* State a layer above keeps per communicator (the collectives' network
 * model and choices), which the runtime only carries: it frees it with
 * the communicator and lets a communicator made from another derive its
 * own from the parent's. */
typedef struct mmp__comm_ext_ops_s {
  /* State for a new communicator made from one holding `parent`; NULL
   * (none yet, or out of memory) is fine. Lock NOT held. */
  void *(*inherit)(const void *parent);
  void (*free)(void *state); /* NULL is fine */
} mmp__comm_ext_ops_t;

/* Whether multicast works on a communicator, as its ranks agreed
 * (mmp__mcast_usable), or as the communicator it was made from had it:
 * the same on every rank. */
typedef struct mmp__mcast_verdict_s {
  int state;      /* 1 usable, -1 not, -2 some rank's MINIMP_MCAST_GROUP is
                     of the wrong family, 0 not tried (not usable) */
  size_t payload; /* payload bytes of a datagram every rank takes */
  double loss;    /* probe datagrams lost, the fraction over all ranks */
  size_t extra;   /* wire bytes a datagram adds to its payload and our
                     header: UDP, IP (by the group's family) and Ethernet */
  unsigned bad;   /* ranks whose MINIMP_MCAST_GROUP is of the wrong family */
} mmp__mcast_verdict_t;

struct mmp_comm_s {
  uint32_t ctx;      /* point-to-point context; collectives use ctx + 1 */
  uint32_t coll_seq; /* sequence number of the next collective (lock) */
  void *coll;        /* the collectives layer's state, or NULL */
  const mmp__comm_ext_ops_t *coll_ops; /* how to free/inherit `coll` */
  int holds; /* internal work that outlives its request (lock) */
  int freed; /* mmp_comm_free came while held: free on the last release */
  /* The user's handle (1 until mmp_comm_free) and every request handed
   * to the user on it, until mmp_wait frees it (mmp__comm_unref): the
   * free is deferred until both are gone, as MPI's MPI_Comm_free is. */
  atomic_int refs;
  int rank;
  int size;
  int *world_of; /* comm rank -> world rank; NULL means identity */
  int *local_of; /* world rank -> comm rank or -1; NULL means identity */
  int *node_of;  /* comm rank -> node; NULL: one rank per node */
  int nnodes;
  atomic_int coll_err;        /* 0, or the error every collective on it returns
                                 (MMP_ETIMEDOUT once one timed out) */
  atomic_uint timeout_ms;     /* mmp_comm_set_timeout; 0: none */
  mmp__mcast_verdict_t mcast; /* mmp__mcast_usable's, once checked */
  mmp__list_t live;           /* on engine.comms until freed (lock) */
  mmp__node_t *node; /* its node segment (runtime/node_coll.c), or NULL */
};

/* A request handed to the user takes a reference on its communicator
 * (refs) when it starts, and drops it when it is freed: mmp_comm_free of
 * a communicator with requests still out only marks it. Lock NOT held. */
static inline void mmp__comm_ref(mmp_comm_t *c) {
  atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

/* Frees a request handed to the user: its destructor, its reference on
 * its communicator, its memory. Lock NOT held. */
void mmp__req_user_free(mmp_request_t *r);

/* Tags in a communicator's collective context (ctx + 1), which user
 * messages never carry: 23 bits of the collective's sequence number and 8
 * bits of phase, always >= 0. */
#define MMP__COLL_TAG(seq, phase)                                              \
  ((int)((((uint32_t)(seq)&0x7fffffu) << 8) | ((uint32_t)(phase)&0xffu)))
/* The bits of such a tag that name the collective, whatever the phase: a
 * collective's sink (mmp__recv_sink_locked). A sequence number comes back
 * only after 2^23 collectives on one communicator. */
#define MMP__COLL_SEQ_MASK 0x7fffff00u

/* Phases. Algorithms use 1..MMP__PHASE_MAX. */
#define MMP__PHASE_FIRST 0 /* the header-carrying first message */
#define MMP__PHASE_MAX 239
#define MMP__PHASE_SYS 240 /* communicator creation */

/* Waits for an internal request (not on the heap) and returns its
 * result. Lock NOT held. */
int mmp__wait_internal(mmp__engine_t *e, mmp_request_t *r);

/* Lock held. The world rank of a member of `comm` (of the job when NULL)
 * that was lost, or -1. A receive from any source there fails at once
 * (it could wait for that rank for ever); an orderly close does not count. */
int mmp__comm_lost_locked(mmp__engine_t *e, const mmp_comm_t *comm);

/*
 * Waits for *rp, an internal request of the caller's (malloc'd, no
 * callback), until it completes or a member of `comm` is lost. Returns its
 * result, or MMP_EPEERLOST if a member was lost first: the operation may
 * wait for a live rank that gave up on the same loss, so it is not waited
 * for. A receive not yet matched is then cancelled; a transfer already
 * under way finishes in the background, and the runtime frees the request
 * and *own (may be NULL: the buffer it uses, malloc'd) when it does, and
 * sets *rp (and *own) to NULL. Lock NOT held.
 */
int mmp__wait_watch(mmp__engine_t *e, const mmp_comm_t *comm,
                    mmp_request_t **rp, void **own);
/* mmp__wait_watch that also ends once *stop is non-zero (NULL: never),
 * as for a lost member but with MMP_ETIMEDOUT: whoever sets it calls
 * mmp__engine_notify_locked so that the wait looks again (a deadline's
 * callback). Lock NOT held. */
int mmp__wait_watch_until(mmp__engine_t *e, const mmp_comm_t *comm,
                          mmp_request_t **rp, void **own,
                          const atomic_int *stop);

/* The timeout of a collective on `c` that names none of its own:
 * mmp_comm_set_timeout's, else MINIMP_COLL_TIMEOUT_MS (docs/embedding.md).
 * 0: none. */
unsigned mmp__rt_coll_timeout(const mmp__engine_t *e, const mmp_comm_t *c);

/* Comm rank -> world rank. */
static inline int mmp__comm_world(const mmp_comm_t *c, int r) {
  return c->world_of != NULL ? c->world_of[r] : r;
}

/*
 * The node of communicator rank `rank`, for collectives that treat the
 * ranks of one node apart. Ranks share a node when they run on one kernel
 * in the same network and IPC namespaces (docs/design/transport.md, "When the
 * shared-memory path is chosen"), whether or not MINIMP_SHM lets them use
 * shared memory. Nodes are numbered densely from 0 in the order of their
 * lowest communicator rank, so every rank of `c` computes the same
 * numbers. Where nothing is known (no boot id), every rank is its own
 * node. Any thread; no lock.
 */
static inline int mmp__comm_node_of(const mmp_comm_t *c, int rank) {
  assert(rank >= 0 && rank < c->size);
  return c->node_of != NULL ? c->node_of[rank] : rank;
}

/* How many nodes the ranks of `c` run on: 1 + the largest node number. */
static inline int mmp__comm_node_count(const mmp_comm_t *c) {
  return c->node_of != NULL ? c->nnodes : c->size;
}

/* Lock held. Work that may outlive its request (arrival_nb's root keeps
 * receiving ARRIVED messages) holds `c`, so that mmp_comm_free only marks
 * it and the last release frees it. */
void mmp__comm_hold_locked(mmp_comm_t *c);
void mmp__comm_release_locked(mmp_comm_t *c);

/* 1 if world rank `w` belongs to `c` (any communicator when NULL). */
static inline int mmp__comm_has(const mmp_comm_t *c, int w) {
  return c == NULL || c->local_of == NULL || c->local_of[w] >= 0;
}

/* ---- Node segments (runtime/node_coll.c) --------------------------------
 *
 * The shared memory the ranks of a communicator on one host use for
 * collectives that copy through it instead of sending messages (the
 * "shm" rows). It holds S = MMP__NODE_DEPTH * (n + 1) data slots of
 * MMP__NODE_CHUNK bytes, n ranks' flags and a header
 * (docs/design/transport.md, "Node segments"). Slots are numbered by a
 * count every rank advances alike, call by call: slot number u is data
 * slot u % S. Flags are slot numbers too, each written by its own rank
 * only and only ever raised: a rank that posts flag f = u says "as far as
 * f goes, I am past slot u - 1".
 * A call:
 *   mmp__node_begin  takes the segment (made on first use) and the call's
 *                    slot numbers [base, base + nslots);
 *   mmp__node_post / mmp__node_wait  publish and wait for flags;
 *   mmp__node_end    gives it back with the call's result.
 */

/* Bytes per data slot, and the slot sets (n + 1 slots each) a pipeline
 * may have in flight: the segment is about (n + 1) * 128 KiB. */
#define MMP__NODE_CHUNK (64u * 1024)
#define MMP__NODE_DEPTH 2
/* Ranks on one node a segment serves. */
#define MMP__NODE_MAX_RANKS 256

/* The flags of each rank. */
enum {
  MMP__NODE_READY = 0,   /* a writer's data is in the slots below it */
  MMP__NODE_DONE = 1,    /* this rank is finished with the slots below it */
  MMP__NODE_POSTED = 2,  /* this rank's contribution is in */
  MMP__NODE_REDUCED = 3, /* this rank's slice of the result is in */
  MMP__NODE_ARRIVE = 4,  /* barrier: this rank arrived */
  MMP__NODE_RELEASE = 5, /* barrier: the first rank let everyone go */
  MMP__NODE_NFLAGS = 6
};

/* Waits name one rank by its index, or every rank but the caller. */
#define MMP__NODE_ALL (-1)

/* A call's view of the segment. */
typedef struct mmp__node_view_s {
  int n;           /* the communicator's ranks on this node */
  int me;          /* the caller's index among them */
  const int *rank; /* index -> communicator rank (ascending) */
  uint64_t base;   /* the call's first slot number */
  uint64_t slots;  /* S, data slots */
  size_t chunk;    /* bytes per data slot */
} mmp__node_view_t;

/* 1 if the shm rows may run on `comm`: all its ranks on one node, at
 * most MMP__NODE_MAX_RANKS, and no segment given up on it yet. Every
 * rank computes the same: MINIMP_SHM, each rank's own, is not read here
 * but voted on when the segment is made (mmp__node_begin). The thread
 * that calls the communicator's collectives; no lock. */
int mmp__node_usable(const mmp_comm_t *comm);

/*
 * Lock NOT held; one call at a time per communicator, by every rank of
 * it on this node. Begins a call that will use slot numbers [v->base,
 * v->base + nslots), nslots >= 1, with a deadline of `timeout_ms` (0:
 * none). `sig` stands for the collective and its arguments: a wait that
 * finds another rank in the same call with another signature fails with
 * MMP_EMISMATCH (and where both take as many slots, the next call goes
 * on). The first call makes the segment, collectively: it takes a
 * collective sequence number and messages among the node's ranks, which
 * agree whether it worked. 0 with *out and *v; MMP_ENOTSUP where the
 * node's ranks could not all map a segment or one of them runs with
 * MINIMP_SHM=off (then every rank of the node gets it, now and later,
 * and mmp__node_usable says 0: run something else); MMP_EPROTO (a header or
 * flag no rank writes), MMP_EPEERLOST, MMP_ETIMEDOUT or the error a
 * failed call left in the segment; MMP_ENOMEM.
 */
int mmp__node_begin(mmp_comm_t *comm, unsigned timeout_ms, uint64_t nslots,
                    uint64_t sig, mmp__node_t **out, mmp__node_view_t *v);

/* The bytes of data slot number u (MMP__NODE_CHUNK of them). */
uint8_t *mmp__node_slot(mmp__node_t *nd, uint64_t u);

/* Raises the caller's flag `flag` to `value` (release order: what the
 * caller wrote before is visible to whoever sees the flag). */
void mmp__node_post(mmp__node_t *nd, int flag, uint64_t value);

/*
 * Waits until flag `flag` of rank `who` (an index, or MMP__NODE_ALL) is
 * at least `value` (acquire order), polling, and yielding the CPU where
 * ranks outnumber CPUs. 0; MMP_EPEERLOST when a member of the
 * communicator is lost; MMP_ETIMEDOUT past the call's deadline; MMP_EPROTO
 * for a flag that went down or beyond what any rank can have reached, or
 * a header that changed; MMP_EMISMATCH (see mmp__node_begin); the error
 * another rank's failed call left.
 */
int mmp__node_wait(mmp__node_t *nd, int flag, int who, uint64_t value);

/* Ends the call begun with mmp__node_begin, whose result is `rc`: on
 * success the next call's slot numbers follow this one's; on failure the
 * error is left in the segment, so that the node's other ranks stop
 * waiting, and every later call gets it (after a timeout every later
 * collective on `comm`). Returns rc. */
int mmp__node_end(mmp__node_t *nd, int rc);

/* Unmaps and frees a communicator's segment (NULL is fine). */
void mmp__node_free(mmp__node_t *nd);

/* ---- Progress, deadlines and timers ------------------------------------ */

/*
 * Blocks until pred(arg) is true, driving the loop when nobody else does.
 * pred runs with engine.lock held. Must not be called with the lock held or
 * in loop context.
 */
void mmp__progress_until(mmp__engine_t *e, int (*pred)(void *), void *arg);

/*
 * While `on`, this thread's waits sleep at once where they would poll and
 * yield (more ranks than CPUs): waits for bulk transfers, whose polling
 * would take the CPU from the ranks moving the bytes, and the broadcast
 * model's ring, which must be timed as the selection rules were checked
 * (docs/design/progress.md). Returns the previous setting.
 */
int mmp__progress_sleepy(int on);
/* Requests moving more than this many bytes are waited for sleepily. */
#define MMP__BULK_BYTES (4u * 1024)
/* mmp__progress_until for a wait on a request of `len` bytes: sleepily
 * past MMP__BULK_BYTES, as every wait for a request does. */
void mmp__progress_wait(mmp__engine_t *e, size_t len, int (*pred)(void *),
                        void *arg);

/* Lock held. Wakes whoever must notice a change: cv waiters and, outside
 * loop context, the loop's owner. */
void mmp__engine_notify_locked(mmp__engine_t *e);

typedef void (*mmp__task_fn)(void *arg);

typedef struct mmp__task_s {
  mmp__list_t node;
  mmp__task_fn fn;
  void *arg;
} mmp__task_t;

/* Lock held. Queues fn(arg) to run in loop context (lock not held) and
 * wakes the loop's owner. The task memory is the caller's until fn runs.
 * For a collective that must start a part only once another part's
 * result is in: a start takes no lock held (s2p/s2p.c). */
void mmp__engine_post_locked(mmp__engine_t *e, mmp__task_t *t, mmp__task_fn fn,
                             void *arg);

/*
 * Lock held. Runs cb(arg) once, in loop context with engine.lock held,
 * `ms` milliseconds from now. For the collectives layer, whose dynamic
 * algorithms wait a little before deciding. The timer cannot be cancelled
 * and frees itself after cb returns; nothing may touch it afterwards.
 * Returns 0 or MMP_ENOMEM (then cb never runs).
 */
int mmp__timer_start_locked(mmp__engine_t *e, uint64_t ms,
                            void (*cb)(void *arg), void *arg);

/*
 * Lock held. Arms `d` (caller's memory, not armed) to run cb(arg) in loop
 * context with engine.lock held, `ms` milliseconds from now, unless
 * mmp__deadline_stop_locked comes first. The owner may free `d` once it
 * is not armed: after cb started, or after the stop.
 */
void mmp__deadline_start_locked(mmp__engine_t *e, mmp__deadline_t *d,
                                unsigned ms, void (*cb)(void *arg), void *arg);
/* Lock held. Disarms `d` if it is armed; cb will not run. */
void mmp__deadline_stop_locked(mmp__engine_t *e, mmp__deadline_t *d);

/* ---- Point-to-point ----------------------------------------------------- */

/*
 * Lock NOT held. The point-to-point core the public calls and the
 * collectives use. `peer` is a world rank (or MMP_ANY_SOURCE for
 * receives); `ctx` a context id. `req` is caller-provided storage (heap or
 * stack) initialised by the call.
 */
int mmp__isend(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
               const void *buf, size_t len, int peer, int tag, unsigned mode,
               mmp_request_t *req);
int mmp__irecv(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
               void *buf, size_t cap, int peer, int tag, mmp_request_t *req);
/* The same with engine.lock already held (collectives post from completion
 * callbacks). `req->cb`/`cb_arg` and `on_heap` are kept; set them first. */
int mmp__isend_locked(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
                      const void *buf, size_t len, int peer, int tag,
                      unsigned mode, mmp_request_t *req);
/* As mmp__isend_locked with mode MMP_SEND_EAGER, the message carrying
 * `note`, which the matching receive finds in req->note (the collectives'
 * poison: why this rank's sends go out empty). Lock held. */
int mmp__isend_note_locked(mmp__engine_t *e, const mmp_comm_t *comm,
                           uint32_t ctx, const void *buf, size_t len, int peer,
                           int tag, uint64_t note, mmp_request_t *req);
int mmp__irecv_locked(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
                      void *buf, size_t cap, int peer, int tag,
                      mmp_request_t *req);
/* A receive from one peer that fails too when any member of its
 * communicator is lost, as one from any source does: the peer may be a
 * live rank that gave up on that loss before it knew it had to send (a
 * member of an arrival-aware broadcast's round). What the peer sends
 * later is the collective's to drop (mmp__recv_sink_locked). */
#define MMP__RECV_COMM_LOSS 0x1u
/* A sink (mmp__recv_sink_locked); never set by callers. */
#define MMP__RECV_SINK 0x2u
/* Lock held. Takes and drops, from now until finalize, every message of
 * context `ctx` whose tag agrees with `tag` in the bits of `mask`,
 * whatever its sender, those already here first: a receive that stays
 * posted and frees each message it matches. For a collective this rank
 * ended for a lost rank (its tags under the mask of its sequence number,
 * MMP__COLL_SEQ_MASK), whose receives failed or were never posted, so
 * that no live sender waits for a CTS from it and nothing is left
 * unexpected. */
void mmp__recv_sink_locked(mmp__engine_t *e, uint32_t ctx, int tag,
                           uint32_t mask);
/* mmp__irecv_locked with MMP__RECV_* flags. Lock held. */
int mmp__irecv_flags_locked(mmp__engine_t *e, const mmp_comm_t *comm,
                            uint32_t ctx, void *buf, size_t cap, int peer,
                            int tag, unsigned flags, mmp_request_t *req);
/* Lock held. Cancels a receive still waiting to be matched (it completes
 * with MMP_ECANCELED). MMP_EAGAIN if it already matched or is a send. */
int mmp__cancel_locked(mmp__engine_t *e, mmp_request_t *req);
/* Lock held. Completes any request (collective requests use it). */
void mmp__req_complete_locked(mmp__engine_t *e, mmp_request_t *req, int err);

/* Lock held. Looks for a matching unexpected message; fills *st. */
int mmp__iprobe_locked(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
                       int peer, int tag, mmp_status_t *st);
/* ---- Multicast ---------------------------------------------------------- */

/*
 * A collective's interest in the datagrams of (ctx, seq). `cb` runs with
 * engine.lock held, in loop context (or inside
 * mmp__mcast_listen_locked, for datagrams that came before it): for each
 * authentic datagram of this job with that context and sequence number
 * that another member of `comm` sent.
 */
typedef struct mmp__mcast_listener_s {
  mmp__list_t node;
  /* The communicator whose collective listens: only its members'
   * datagrams reach cb (another communicator may share ctx). */
  const mmp_comm_t *comm;
  uint32_t ctx;
  uint32_t seq;
  void (*cb)(void *arg, const mmp__dgram_hdr_t *h, const uint8_t *payload,
             size_t n);
  void *arg;
} mmp__mcast_listener_t;

/* Lock held, channel open. Starts delivering (l->ctx, l->seq) to l->cb,
 * beginning with the datagrams that came before. */
void mmp__mcast_listen_locked(mmp__engine_t *e, mmp__mcast_listener_t *l);
/* Lock held. Stops it; (ctx, seq) is finished on this rank: its datagrams
 * are replays from now on. Idempotent. */
void mmp__mcast_unlisten_locked(mmp__engine_t *e, mmp__mcast_listener_t *l);
/* Lock held, loop context. Sends one datagram to the group (h->src is
 * filled in). 0, MMP_EAGAIN (socket buffer full), MMP_ENOTSUP, MMP_EIO. */
int mmp__mcast_send_locked(mmp__engine_t *e, const mmp__dgram_hdr_t *h,
                           const void *payload, size_t n);
/* Lock held, loop context. The same to world rank `rank` alone (unicast
 * UDP to its host). MMP_ENOTSUP also where no address reaches that rank
 * alone (another rank of the job shares its address, or it has no IPv4
 * one): the caller multicasts instead. */
int mmp__mcast_send_to_locked(mmp__engine_t *e, int rank,
                              const mmp__dgram_hdr_t *h, const void *payload,
                              size_t n);
/* Lock held. Bytes of this rank's datagrams the kernel holds unsent
 * (queued at the interface): how long what it sends now will wait. */
uint64_t mmp__mcast_unsent_locked(mmp__engine_t *e);
/* Lock held. Counts a repair datagram the layer above sent, to one rank
 * (`unicast`) or to the group, for mmp__mcast_stats. */
void mmp__mcast_repaired_locked(mmp__engine_t *e, int unicast);
/* Lock held. Counts an authentic DATA datagram the layer above ignored:
 * its collective already held that piece (a duplicate), for
 * mmp__mcast_stats. */
void mmp__mcast_duplicate_locked(mmp__engine_t *e);

/*
 * Whether multicast works on `comm`: the verdict mmp_init found for the
 * job (mmp__mcast_world_up, runtime/mcast_probe.c), which every
 * communicator takes from the one it was made from. Local: no
 * collective's start ever checks with the other ranks. 0 with *out the
 * verdict (usable), MMP_ENOTSUP, or MMP_EINVAL on every rank where some
 * rank's MINIMP_MCAST_GROUP is not of its addresses' family.
 */
int mmp__mcast_usable(const mmp_comm_t *comm, mmp__mcast_verdict_t *out);

/* Lock NOT held. Logs again why an asked-for multicast cannot run on
 * `comm` where mmp_init said it: a misconfigured MINIMP_MCAST_GROUP. */
void mmp__mcast_explain(const mmp_comm_t *comm);

/* ---- Public calls ---------------------------------------------------------
 */

/*
 * Bracket a public call that may fail: mmp__api_enter() on entry, and
 * return mmp__api_leave(rc, __func__). When the outermost such call of the
 * thread fails and errors are fatal (mmp_set_errors_fatal), it logs the
 * function and the error and aborts the job; otherwise it returns rc.
 */
void mmp__api_enter(void);
int mmp__api_leave(int rc, const char *fn);
/* The blocking form of a non-blocking call that returned rc and *req:
 * waits for *req if rc is 0, then leaves as mmp__api_leave. */
int mmp__api_wait(int rc, mmp_request_t **req, const char *fn);

#endif /* MMP_RUNTIME_COLL_API_H */
