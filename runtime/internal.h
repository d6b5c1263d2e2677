/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of libminimp's runtime layer: configuration, the
 * progress engine (loop ownership and the background progress thread),
 * peers, requests, matching and the eager/rendezvous protocols. Nothing here
 * is visible to users. What the collectives layer may use (requests,
 * communicators, point-to-point calls, deadlines, multicast) is declared
 * in runtime/coll_api.h, which this header includes.
 *
 * Locking. One mutex, engine.lock, protects every field below that is not
 * marked otherwise: matching queues, requests, peers and send queues. The
 * libuv loop itself is not protected by it: only the loop's current owner
 * (see progress.c) may call libuv, and it runs uv_run without the lock.
 * Transport callbacks run in the owner's thread and take the lock.
 *
 * Contracts. A function whose name ends in _locked requires engine.lock.
 * The lock is taken with mmp__lock() and released with mmp__unlock(), and
 * "lock held", "lock NOT held" and "loop context" are asserted with
 * MMP__ASSERT_LOCKED, MMP__ASSERT_UNLOCKED and MMP__ASSERT_LOOP (debug
 * builds).
 */
#ifndef MMP_RUNTIME_INTERNAL_H
#define MMP_RUNTIME_INTERNAL_H

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "minimp.h"
#include "transport/boot.h"
#include "transport/transport.h"
#include "transport/udp.h"
#include "transport/util.h"

#include "runtime/coll_api.h"

/* ---- Configuration (config.c) ------------------------------------------ */

typedef struct mmp__config_s {
  int rank;
  int size;
  int local_rank;
  int local_size;
  int singleton; /* no launcher, no rendezvous: a job of one */
  int host_boot; /* serve the rendezvous from this process */
  char boot_addr[256];
  int boot_derived; /* boot_addr derived from a Slurm step (config.c) */
  int pmi;          /* MMP__PMI_*: bootstrap through the launcher (pmi.h) */
  int pmi_key;      /* on that path: the key is known (else mmp__pmi_key) */
  uint8_t key[MMP__JOB_KEY_LEN];
  char iface[128];
  int from_args; /* boot_addr, key and iface are mmp_init_ex's arguments */
  uint64_t eager_limit;     /* AUTO sends up to this size go eager */
  uint64_t shm_eager_limit; /* the same to peers through shared memory */
  uint64_t eager_buffer;    /* per-peer eager credit, bytes */
  uint64_t max_frame;       /* largest frame payload accepted */
  uint64_t chunk;           /* rendezvous DATA frame size */
  uint64_t window;          /* rendezvous bytes in flight per peer */
  unsigned spin_us;         /* idle polling before a blocking wait sleeps */
  int spin_auto;     /* spin_us is the runtime's choice, not the user's */
  int spin_yield;    /* polling yields the CPU each pass; -1 auto */
  int yield_auto;    /* spin_yield is the runtime's choice */
  int cpus_shared;   /* more ranks than CPUs share this machine */
  unsigned grace_us; /* idle time before the progress thread steps in */
  unsigned check_us; /* longest interval between the progress thread's
                        checks while the application is busy in the
                        library */
  int check_auto;    /* check_us is the runtime's choice */
  unsigned handshake_ms;
  unsigned peer_timeout_ms; /* silent-peer detection; 0 off */
  unsigned max_unexp_rts;   /* unmatched RTS entries one peer may leave */
  unsigned boot_timeout_ms;
  int connect_eager;         /* open every connection during init */
  int encrypt;               /* MINIMP_ENCRYPT: seal every TCP frame */
  int shm;                   /* MMP__SHM_*: MINIMP_SHM */
  uint64_t shm_ring;         /* MINIMP_SHM_RING bytes; 0: automatic */
  int mcast;                 /* MMP__MCAST_*: MINIMP_MCAST */
  int mcast_family;          /* MINIMP_MCAST_GROUP's: AF_INET, AF_INET6, or
                                0 unset (the job's addresses decide) */
  uint32_t mcast_group;      /* IPv4 range base, host order */
  unsigned mcast_bits;       /* its prefix length (32: that very group) */
  uint8_t mcast_group6[16];  /* IPv6 range base */
  unsigned mcast_bits6;      /* its prefix length (128: that very group) */
  unsigned mcast_port;       /* MINIMP_MCAST_PORT; 0: derived from the key */
  unsigned mcast_timeout_ms; /* MINIMP_MCAST_TIMEOUT_MS */
  uint64_t mcast_sockbuf;    /* MINIMP_MCAST_SOCKBUF bytes */
  int progress_external;     /* MINIMP_PROGRESS=external or
                                MMP_INIT_EXTERNAL_PROGRESS: no progress thread,
                                the embedder drives the loop (mmp_progress) */
  mmp__coll_config_t coll;
} mmp__config_t;

/* MINIMP_SHM: ranks on the same host use shared memory (ON), with every
 * byte through the rings (RING), or TCP like the others (OFF). */
enum { MMP__SHM_OFF = 0, MMP__SHM_ON = 1, MMP__SHM_RING = 2 };

/*
 * Fills `cfg` with defaults, then applies the MINIMP_* tuning variables
 * (MINIMP_EAGER_LIMIT, MINIMP_SPIN_US, MINIMP_ENCRYPT, ...). Does not
 * touch the identity
 * fields (rank, size, boot_addr, key). Returns 0, or MMP_EENV after logging
 * which variable is malformed.
 */
int mmp__config_tuning(mmp__config_t *cfg);

/*
 * Reads the job identity minimprun exports (MINIMP_RANK, MINIMP_SIZE,
 * MINIMP_LOCAL_RANK, MINIMP_LOCAL_SIZE, MINIMP_BOOT_ADDR, MINIMP_JOB_KEY,
 * MINIMP_IFACE), or the Slurm equivalents. With none of them set, makes a
 * singleton. Returns 0 or MMP_EENV (logged).
 */
int mmp__config_identity(mmp__config_t *cfg);

/*
 * Fills `cc` from the collectives' variables (MINIMP_BCAST_SYM_MIN,
 * MINIMP_BCAST_ARRIVAL_WINDOW_US, MINIMP_NET_*). mmp__config_tuning calls
 * it; tests that change them in a running job call it again through
 * mmp__debug_config_reload. Returns 0, or MMP_EENV after logging which
 * variable is malformed (then `cc` is unchanged).
 */
int mmp__config_coll(mmp__coll_config_t *cc);

/* The collectives layer's hooks, set by mmp__rt_init (NULL before: the
 * names in MINIMP_<COLLECTIVE>_ALG go unchecked). Written under the init
 * mutex, read by the thread that initialises or reloads the config. */
extern const mmp__coll_hooks_t *mmp__coll_hooks;

/* MINIMP_SPIN_US unset: decided from the ranks per host and the CPUs. */
#define MMP__SPIN_AUTO 0xffffffffu

/* Settles values that depend on both identity and tuning. */
void mmp__config_resolve(mmp__config_t *cfg);
/* Sets what the user left automatic (spin budget, yielding) for a machine
 * whose CPUs are, or are not, shared by more ranks than it has. */
void mmp__config_shared(mmp__config_t *cfg, int shared);

/* ---- Requests (the request itself: runtime/coll_api.h) ----------------- */

/* An arrived (or self-sent) message that no receive matched yet. */
enum mmp__unexp_kind { MMP__U_EAGER = 1, MMP__U_RTS, MMP__U_SELF };

/* Eager payloads this short live in their unexpected entry itself. */
#define MMP__UNEXP_SMALL 16

/* Eager credit a message costs besides its length: over TCP, about its
 * frame header; through shared memory, where small messages pour in
 * faster than a busy receiver takes them, enough that the entries a
 * flood of them leaves unexpected take at most an eighth of the credit
 * (docs/design/transport.md, "Memory"). Both ends of a pair charge the same. */
#define MMP__EAGER_OVERHEAD 64u
#define MMP__EAGER_OVERHEAD_SHM 1024u

typedef struct mmp__unexp_s {
  mmp__list_t node; /* engine.unexpected, or the engine's cache */
  int kind;
  int src; /* world rank */
  uint32_t ctx;
  int tag;
  int complete;           /* the eager payload has fully arrived */
  uint64_t len;           /* message length */
  uint8_t *data;          /* eager payload (or self copy): `small` or the
                             heap; NULL for RTS */
  uint64_t cost;          /* eager credit charged for it */
  uint64_t cookie;        /* RTS: the sender's cookie */
  mmp_request_t *sreq;    /* self rndv: the sending request */
  mmp_request_t *claimer; /* a receive that matched it before completion */
  uint64_t note;          /* eager and self: the sender's note */
  uint8_t small[MMP__UNEXP_SMALL];
} mmp__unexp_t;

/* ---- Outgoing frames ---------------------------------------------------- */

typedef struct mmp__out_s {
  mmp__tp_write_t w;
  mmp__list_t node;   /* in the peer's send queue */
  mmp_request_t *req; /* request to notify when written, or NULL */
  int peer;
  int needs_credit; /* eager frame not yet covered by credit */
  uint64_t cost;    /* eager credit it consumes */
  uint64_t chunk;   /* DATA: payload bytes */
  size_t copy_cap;  /* bytes available in copy[] */
  uint8_t copy[];   /* payload copy, so the sender completes early */
} mmp__out_t;

/* ---- Peers -------------------------------------------------------------- */

enum mmp__peer_state {
  MMP__P_IDLE = 0,   /* no connection yet */
  MMP__P_CONNECTING, /* asked the transport to connect */
  MMP__P_UP,
  MMP__P_CLOSING, /* BYE sent at finalize */
  MMP__P_CLOSED,  /* orderly close finished */
  MMP__P_DOWN     /* lost: operations with it fail */
};

/* A transport as the runtime holds it: its operations, the instance, and
 * the engine, which is the context of its callbacks. */
typedef struct mmp__via_s {
  struct mmp__engine_s *e;
  const mmp__tp_ops_t *ops;
  mmp__tp_t *tp; /* loop context only; NULL until created */
} mmp__via_t;

typedef struct mmp__peer_s {
  int state;
  mmp__via_t *via; /* the transport that carries it (init decides) */
  mmp__tp_conn_t *conn;
  struct sockaddr_storage addr;
  int have_addr;
  mmp__list_t sendq;      /* EAGER/RTS not yet given to the transport, in
                             matching order */
  mmp__list_t ctrlq;      /* CTS/CREDIT/PING: unordered with sendq */
  mmp__list_t dataq;      /* rndv sends with CTS received, FIFO */
  mmp__list_t dirty_node; /* on engine.dirty while sendq needs a pump */
  uint64_t data_inflight; /* DATA bytes handed to the transport */
  uint64_t eager_over;    /* eager credit a message costs besides its
                             length: MMP__EAGER_OVERHEAD, or
                             MMP__EAGER_OVERHEAD_SHM through shared
                             memory (local.c) */
  int64_t tx_credit;      /* eager bytes we may still send */
  uint64_t rx_used;       /* eager bytes the peer has outstanding here */
  uint64_t owed;          /* consumed credit not yet returned */
  int starving;           /* the peer asked for its credit back */
  int credit_asked;       /* we asked the peer for credit */
  int credit_waiters;     /* frames in sendq waiting for credit */
  int rx_kind;            /* what the payload in flight belongs to */
  void *rx_target;
  int bye;                     /* the peer said BYE */
  uint64_t last_rx;            /* mmp__clock_ms() when it was last heard:
                                  the heartbeat's tick that found
                                  rx_frames moved, or the connection's
                                  start */
  uint64_t rx_frames;          /* frames received from it */
  uint64_t rx_frames_seen;     /* rx_frames at the heartbeat's last tick */
  uint64_t last_ping;          /* mmp__clock_ms() of our last PING to it */
  unsigned unexp_rts;          /* its RTS entries in engine.unexpected */
  struct mmp__out_s *pong_out; /* our answer to its PING, still queued */
  int bye_pending;             /* finalize: send BYE once the queues drain */
  int dirty;                   /* on engine.dirty */
  int down_err;                /* why it is MMP__P_DOWN (mmp__peer_err) */
} mmp__peer_t;

enum { MMP__RX_NONE = 0, MMP__RX_REQ, MMP__RX_UNEXP, MMP__RX_DISCARD };

/* ---- Engine ------------------------------------------------------------- */

enum { MMP__OWN_NONE = 0, MMP__OWN_PROGRESS, MMP__OWN_APP };

typedef struct mmp__engine_s {
  mmp__config_t cfg;
  uv_loop_t loop;
  uv_async_t wakeup;
  uv_thread_t thread;
  int thread_started;
  uv_mutex_t lock;
  atomic_uintptr_t lock_owner;  /* mmp__lock()'s holder, or 0 (debug) */
  atomic_uintptr_t loop_thread; /* the loop's runner, or 0 (debug) */
  uv_cond_t cv;       /* app threads: loop released or a request done */
  uv_cond_t prog_cv;  /* the progress thread parks here */
  int owner;          /* MMP__OWN_* */
  int claims;         /* app threads inside a blocking wait */
  int waiters;        /* threads blocked on cv */
  uint64_t app_calls; /* calls of application threads into the
                         library; the progress thread notes when it
                         last saw this move (lock) */
  _Atomic uint64_t loop_turns; /* times a thread took or let go of the
                                  loop; the progress thread notes when it
                                  last saw this move */
  int nlost;                   /* peers in MMP__P_DOWN (lock) */
  uint64_t activity;           /* bumped by the transport whenever bytes move;
                                  loop owner only (progress.c) */
  int long_waits;              /* blocking waits in a row that outlasted the
                                  yielding spin (progress.c; lock) */
  int spin_off;                /* blocking waits left that sleep at once:
                                  the spin kept the peer off its CPU
                                  (progress.c; lock) */
  int spin_off_run;            /* how many the next time it is found:
                                  doubles at each, halves at each wait
                                  that ends within its spin (progress.c;
                                  lock) */
  uint64_t spin_offs;          /* times that was found (lock) */
  uint64_t polls;         /* loop passes that polled rather than slept (lock) */
  uint64_t handoffs;      /* polling passes that yielded the CPU to a peer
                             runnable on it (progress.c; lock) */
  uint64_t sleeps;        /* times a blocking wait let the loop sleep (lock) */
  int shared_looks;       /* looks in a row that found a peer runnable on our
                             CPU (progress.c; loop owner) */
  _Atomic uint64_t moves; /* times this rank moved off a CPU it shared
                             with a peer (progress.c) */
  int move_hold;          /* blocking waits left before a rank that does
                             not see its peers' CPUs may move again
                             (progress.c; lock) */
  int stop;
  mmp__via_t tcp; /* every peer on another host */
  mmp__via_t shm; /* the peers on this host, unless MINIMP_SHM=off */
  int shm_pairs;  /* peers carried by shm (set at init) */
  mmp__peer_t *peers;
  mmp__list_t posted;
  mmp__list_t unexpected;
  /* Frames and unexpected entries kept for reuse (p2p.c), so that a
   * steady flow of small messages allocates nothing (lock). */
  mmp__list_t out_cache, unexp_cache;
  unsigned out_cached, unexp_cached;
  uint64_t allocs; /* frames, entries and payload buffers the point-to-point
                      layer had to allocate (lock) */
  mmp__list_t dirty;
  mmp__list_t tasks;
  /* Cookies: registered requests awaiting a peer's CTS or DATA. */
  mmp_request_t **cookie_req;
  uint32_t *cookie_gen;
  uint32_t cookie_cap;
  uint32_t cookie_free; /* head of the free list, index + 1 */
  uint32_t *cookie_next;
  mmp__boot_client_t *boot;    /* loop context only */
  mmp__boot_server_t *bootsrv; /* loop context only */
  int boot_lost;
  int boot_all_done;         /* hosting: every rank said BYE */
  int close_timed_out;       /* finalize gave up waiting for EOFs */
  uv_timer_t timer;          /* finalize deadlines; loop context only */
  uv_timer_t heartbeat;      /* liveness checks; loop context only */
  uint64_t hb_at;            /* mmp__clock_ms() of its last tick; loop only */
  uv_timer_t deadline_timer; /* the earliest deadline; loop context only */
  mmp__list_t deadlines;     /* armed mmp__deadline_t (lock) */
  mmp__task_t deadline_task; /* sets deadline_timer from the loop */
  int deadline_posted;       /* deadline_task is queued (lock) */
  char listen_name[128];
  mmp_comm_t world;
  uint32_t next_ctx;    /* lowest context id no communicator of this rank
                           has used (lock) */
  mmp__list_t comms;    /* live communicators but world (lock) */
  uint64_t unexp_bytes; /* eager payload buffered unexpected */
  uint64_t unexp_peak;
  uint64_t unexp_rts_peak; /* most RTS entries one peer had unmatched */
  uint64_t checks;         /* times the progress thread woke to look (lock) */
  int ext_fd;              /* external progress: the descriptor the embedder
                              watches (epoll of libuv's and ext_timer), else -1 */
  int ext_timer;           /* timerfd: libuv's next timer, when the embedder
                              drives the loop; else -1 */
  struct mmp__mcast_s *mcast; /* the multicast channel (mcast.c), or NULL
                                 before its first use */
  int finalizing;             /* inside mmp_finalize */
  int closing;                /* past the finalize fence: BYE goes out */
} mmp__engine_t;

/* The line a rank logs when the job is aborted: by `rank` (its own
 * `msg`, if not empty), or by the launcher when rank is -1. Writes at most
 * `cap` bytes to buf, NUL-terminated. */
void mmp__abort_text(char *buf, size_t cap, int rank, int code,
                     const char *msg);

/* ---- Contracts: engine.lock and loop context -------------------------- */

/* Records that the calling thread now holds engine.lock (`held` 1) or is
 * about to give it up (0). Debug builds only. */
/* Milliseconds from a monotonic clock, read now. Liveness uses it rather
 * than uv_now(), which is the time the current loop iteration began and
 * can be seconds old after a long iteration or a descheduled thread. */
static inline uint64_t mmp__clock_ms(void) {
  return uv_hrtime() / 1000000;
}

static inline void mmp__lock_record(mmp__engine_t *e, int held) {
#ifndef NDEBUG
  uintptr_t self = mmp__thread_self();
  uintptr_t was = atomic_exchange_explicit(&e->lock_owner, held ? self : 0,
                                           memory_order_relaxed);

  /* Whoever held the mutex before cleared the record (or never set it). */
  assert(was == (held ? 0 : self));
  (void)was;
#else
  (void)e;
  (void)held;
#endif
}

/*
 * mmp__lock() and mmp__unlock() take and release engine.lock, recording in
 * debug builds which thread holds it, so that MMP__ASSERT_LOCKED(e) (this
 * thread holds it) and MMP__ASSERT_UNLOCKED(e) (it does not) can check the
 * contracts. Pair them: a lock taken with mmp__lock() is released with
 * mmp__unlock(), and a condition variable waits on it with mmp__cond_wait()
 * or mmp__cond_timedwait(), never with uv_cond_wait().
 * Nothing takes engine.lock any other way, so the record is exact.
 */
static inline void mmp__lock(mmp__engine_t *e) {
  /* Locking twice in one thread would deadlock. */
  assert(atomic_load_explicit(&e->lock_owner, memory_order_relaxed) !=
         mmp__thread_self());
  uv_mutex_lock(&e->lock);
  mmp__lock_record(e, 1);
}

static inline void mmp__unlock(mmp__engine_t *e) {
  mmp__lock_record(e, 0);
  uv_mutex_unlock(&e->lock);
}

/* 1 if the calling thread holds engine.lock (debug builds; the record is
 * not kept with NDEBUG, where only assertions, also gone, ask). */
static inline int mmp__lock_held(mmp__engine_t *e) {
  return atomic_load_explicit(&e->lock_owner, memory_order_relaxed) ==
         mmp__thread_self();
}

#define MMP__ASSERT_LOCKED(e) assert(mmp__lock_held(e))
#define MMP__ASSERT_UNLOCKED(e)                                                \
  assert(atomic_load_explicit(&(e)->lock_owner, memory_order_relaxed) !=       \
         mmp__thread_self())

/* uv_cond_wait on engine.lock, which the caller holds (mmp__lock). */
static inline void mmp__cond_wait(mmp__engine_t *e, uv_cond_t *cv) {
  mmp__lock_record(e, 0);
  uv_cond_wait(cv, &e->lock);
  mmp__lock_record(e, 1);
}

/* The same for at most `ns` nanoseconds; uv_cond_timedwait's result. */
static inline int mmp__cond_timedwait(mmp__engine_t *e, uv_cond_t *cv,
                                      uint64_t ns) {
  int rc;

  mmp__lock_record(e, 0);
  rc = uv_cond_timedwait(cv, &e->lock, ns);
  mmp__lock_record(e, 1);
  return rc;
}

/* Loop context: the calling thread runs the engine's loop (progress.c
 * records the runner); only it may call libuv on it. */
#define MMP__ASSERT_LOOP(e)                                                    \
  assert(atomic_load_explicit(&(e)->loop_thread, memory_order_relaxed) ==      \
         mmp__thread_self())

/* ---- Progress engine (progress.c) -------------------------------------- */

/* Initialises the loop, locks and async handle. Returns 0 or MMP_ENOMEM. */
int mmp__engine_init(mmp__engine_t *e);

/* Starts the background progress thread. Returns 0 or MMP_EINTERNAL. */
int mmp__engine_start_thread(mmp__engine_t *e);

/* Lock NOT held. Stops and joins the progress thread; the calling thread
 * then runs the loop (loop context) until mmp__engine_fini. */
void mmp__engine_stop_thread(mmp__engine_t *e);

/* Loop context, after mmp__engine_stop_thread. Closes the async handle,
 * runs the loop empty and closes it. */
void mmp__engine_fini(mmp__engine_t *e);

/* Loop context, after mmp__engine_stop_thread. Runs the loop once as its
 * only user. */
void mmp__run_loop(mmp__engine_t *e, uv_run_mode mode);

/* Lock NOT held. Makes a non-blocking pass over the loop if no thread
 * owns it (external progress: passes while bytes move). */
void mmp__progress_poke(mmp__engine_t *e);

/* Lock NOT held, before any progress. Sets up external progress instead
 * of the progress thread: the descriptor of mmp_progress_fd. Returns 0 or
 * MMP_EIO (the descriptors are closed by mmp__engine_fini either way). */
int mmp__engine_external(mmp__engine_t *e);

/* Lock NOT held, not in loop context. Runs fn(arg) in loop context (lock
 * not held) and returns once it has. */
void mmp__engine_call(mmp__engine_t *e, mmp__task_fn fn, void *arg);

/* Returns 1 when the calling thread is running the loop. */
int mmp__in_loop(void);

/* ---- Point-to-point (p2p.c) -------------------------------------------- */

/* Transport callbacks (loop context). `ctx` is the mmp__via_t of the
 * transport that calls; a peer's frames are accepted only from its own. */
void mmp__p2p_peer_up(void *ctx, int peer, mmp__tp_conn_t *conn);
int mmp__p2p_frame(void *ctx, int peer, const mmp__frame_hdr_t *h,
                   mmp__sink_t *sink);
int mmp__p2p_frame_done(void *ctx, int peer, const mmp__frame_hdr_t *h);
int mmp__p2p_frame_whole(void *ctx, int peer, const mmp__frame_hdr_t *h,
                         const void *p0, size_t n0, const void *p1, size_t n1);
void mmp__p2p_peer_down(void *ctx, int peer, int err, const char *reason);
const char *mmp__p2p_refuse(void *ctx, int peer);

/* Fills what every transport of the engine is created with: the job's
 * identity and limits, and the callbacks above with `via` as context. The
 * caller adds what is particular to the transport. */
void mmp__p2p_tp_init(mmp__engine_t *e, mmp__via_t *via, mmp__tp_config_t *tc,
                      mmp__tp_callbacks_t *cb);

/* Loop context, lock held. Writes what the dirty peers' queues allow. */
void mmp__p2p_pump_dirty_locked(mmp__engine_t *e);

/*
 * Loop context, lock NOT held. Pings peers that have been quiet for a
 * quarter of MINIMP_PEER_TIMEOUT_MS and declares lost those silent for all
 * of it: their operations fail with MMP_EPEERLOST and the rendezvous is
 * told (SUSPECT), so that a launcher can stop the job and name the rank.
 */
void mmp__p2p_heartbeat(mmp__engine_t *e);

/* Lock held. Fails every operation involving `peer` with `err`. Does not
 * close the connection: a caller in loop context that wants it gone takes
 * peers[peer].conn first and aborts it after dropping the lock. */
void mmp__p2p_fail_peer_locked(mmp__engine_t *e, int peer, int err);

/* Allocates the peer table and cookie table. Returns 0 or MMP_ENOMEM. */
int mmp__p2p_init(mmp__engine_t *e);
/* Lock held, loop context, the transports destroyed: fails the frames
 * still queued for each peer (they can no longer reach the wire) with
 * MMP_ESHUTDOWN, while the engine's lock still exists. */
void mmp__p2p_drop_queues_locked(mmp__engine_t *e);
/* Frees what is left (after the loop stopped and the engine's lock is
 * gone); the peers' queues must be empty (mmp__p2p_drop_queues_locked). */
void mmp__p2p_fini(mmp__engine_t *e);

/* Lock held, loop context. Starts the orderly close of every connection
 * (BYE, half-close). */
void mmp__p2p_close_all_locked(mmp__engine_t *e);
/* Lock held. 1 when no connection is still open. */
int mmp__p2p_all_closed_locked(mmp__engine_t *e);
/* Lock held. 1 when every send queue and data queue is empty. */
int mmp__p2p_quiet_locked(mmp__engine_t *e);

/* The same, completing it with `err` (< 0) instead. */
int mmp__cancel_err_locked(mmp__engine_t *e, mmp_request_t *req, int err);
/* Lock held. Cancels every internal receive (one with a completion
 * callback: a collective's) still posted. At finalize, once every
 * connection is closed, nothing can match them any more, and their
 * owners free themselves from the callbacks. */
void mmp__p2p_cancel_internal_locked(mmp__engine_t *e);

/* ---- Multicast (mcast.c) ----------------------------------------------- */

/* Lock NOT held, not loop context. Opens the job's multicast channel on
 * first use (MINIMP_MCAST, docs/design/transport.md), in the family of the
 * address the TCP path listens on. 0, or MMP_ENOTSUP when it is off or
 * cannot run here (logged at debug level), MMP_EINVAL when
 * MINIMP_MCAST_GROUP is of the other family (logged as an error),
 * MMP_ENOMEM. The answer is kept. */
int mmp__mcast_open(mmp__engine_t *e);
/* 1 if the job may use the channel at all: MINIMP_MCAST is not off, the
 * job is not a singleton and does not seal its data (MINIMP_ENCRYPT).
 * The same on every rank (init refuses ranks that differ). */
int mmp__mcast_wanted(const mmp__engine_t *e);
/* Lock NOT held. MMP_EINVAL, logged as an error as mmp__mcast_open does,
 * when MINIMP_MCAST_GROUP is of the other family than this rank's
 * addresses; else 0. */
int mmp__mcast_group_ok(const mmp__engine_t *e);
/* Lock NOT held; every rank of the world, once it is up, in mmp_init,
 * whatever its progress mode (they may differ between ranks). Decides
 * whether multicast works for the job (comm->mcast of the world,
 * runtime/mcast_probe.c): at once where the channel is not wanted
 * (mmp__mcast_wanted), else collectively. A failure is logged, and
 * multicast is then unusable on this rank. */
void mmp__mcast_world_up(mmp__engine_t *e);
/* The largest payload of one datagram; 0 when the channel is not open. */
size_t mmp__mcast_payload(mmp__engine_t *e);
/* The IP and UDP header bytes in front of each datagram (by the
 * channel's family); 0 when the channel is not open. */
size_t mmp__mcast_ip_udp(mmp__engine_t *e);
/* Lock held. The communicator of context `comm_ctx` (its collectives'
 * datagrams carry comm_ctx + 1) is gone on this rank: forgets what the
 * channel kept for it, and drops its later datagrams (counted as stale)
 * until 64 other communicators have gone since. */
void mmp__mcast_comm_freed_locked(mmp__engine_t *e, uint32_t comm_ctx);
/* Lock held. This rank reserved context `comm_ctx` without a
 * communicator of it: what the channel kept of that context's datagrams
 * is another communicator's, dropped and counted. */
void mmp__mcast_not_mine_locked(mmp__engine_t *e, uint32_t comm_ctx);

/* Loop context, at finalize: closes the channel; *done becomes 1 once it
 * is closed. Then mmp__mcast_free. */
void mmp__mcast_close(mmp__engine_t *e, int *done);
void mmp__mcast_free(mmp__engine_t *e);

/* What the channel did, for tests (debug.c's neighbours). */
typedef struct mmp__mcast_stats_s {
  mmp__udp_stats_t udp;
  uint64_t stale;            /* authentic, but of a finished collective or
                                 outside the window: replays */
  uint64_t early_dropped;    /* kept for a collective not started, then
                                 dropped for room */
  uint64_t repair_unicast;   /* repairs this rank sent to one rank */
  uint64_t repair_multicast; /* and to the group */
  uint64_t duplicate;        /* DATA for a piece its live collective already
                                held: ignored */
  uint64_t other_comm;       /* authentic, but from a rank outside this
                                rank's communicator of its context: another
                                communicator's */
  uint64_t contexts;         /* contexts whose collectives it tracks */
  uint64_t early_bytes;      /* payload kept for collectives not started */
  int open;                  /* 1 open, -1 unusable, -2 misconfigured, 0 not
                                tried */
  char group[64];            /* "a.b.c.d:port" or "[ff15::...]:port" */
} mmp__mcast_stats_t;
/* 0, or MMP_EINVAL before init. */
int mmp__mcast_stats(mmp__mcast_stats_t *out);

/* ---- Ranks on the same host (local.c) ---------------------------------- */

/* Writes this rank's host identity, published beside its address: the
 * kernel's boot id, its network, IPC and pid namespaces, and whether it
 * may use shared memory (docs/design/transport.md). */
void mmp__local_identity(const mmp__engine_t *e, char *out, size_t cap);

/*
 * Loop context, lock NOT held. Learns from ident[i] the identity rank i
 * published (ident[e->cfg.rank] is this rank's): numbers the world's nodes
 * (e->world.node_of), tells the configuration whether more ranks than CPUs
 * share this kernel (mmp__config_shared), and sets up shared memory with
 * the ranks of this node, choosing each peer's transport. done(arg, rc)
 * runs in loop context, lock not held, once that is decided, perhaps
 * before this returns: rc is 0, MMP_ENOMEM, or MMP_EBOOT when a rank of
 * this node left the job meanwhile. `ident` may be freed on return.
 */
void mmp__local_setup(mmp__engine_t *e, const char *const *ident,
                      void (*done)(void *arg, int rc), void *arg);

/* ---- Communicators (comm.c) -------------------------------------------- */

/* The timeout an operation on `c` that names none of its own takes:
 * mmp_comm_set_timeout's, or for collectives (`coll`) the environment's
 * MINIMP_COLL_TIMEOUT_MS (docs/embedding.md). 0: none. */
static inline unsigned mmp__comm_timeout(const mmp__engine_t *e,
                                         const mmp_comm_t *c, int coll) {
  unsigned ms = atomic_load_explicit(&((mmp_comm_t *)c)->timeout_ms,
                                     memory_order_relaxed);

  return ms > 0 ? ms : coll ? e->cfg.coll.timeout_ms : 0;
}

/* Sets c->node_of and c->nnodes from the nodes of `parent`'s ranks:
 * members[i] is the parent rank that becomes rank i of `c`. Returns 0 or
 * MMP_ENOMEM. */
int mmp__comm_nodes_from(mmp_comm_t *c, const mmp_comm_t *parent,
                         const int *members, int n);

/* Lock held. 0 if this rank has no live communicator of context
 * `comm_ctx` and never will (it is below next_ctx): traffic of that
 * context is another communicator's. */
int mmp__comm_ctx_mine_locked(mmp__engine_t *e, uint32_t comm_ctx);

void mmp__comm_unref(mmp_comm_t *c);

/* Frees what the layers above keep about `c` (mmp__comm_ext_ops_t). */
void mmp__comm_ext_free(mmp_comm_t *c);

/* ---- Errors (errors.c; the brackets of public calls: runtime/coll_api.h) */

/* mmp_abort(code) with `why` as the reason the launcher reports. Never
 * returns. */
MMP_NORETURN void mmp__abort_with(int code, const char *why);

/* ---- Test introspection (debug.c) -------------------------------------- */

/* Writes `rank`'s listening address ("ip:port"). 0 or MMP_EINVAL. */
int mmp__debug_listen_addr(int rank, char *buf, size_t len);
/* Copies the transport's counters. 0 or MMP_EINVAL. */
int mmp__debug_tp_stats(mmp__tp_stats_t *out);
/* Peak of buffered unexpected eager bytes, and the per-peer credit. */
uint64_t mmp__debug_unexp_peak(void);
/* Most unmatched RTS entries any one peer had here at once. */
uint64_t mmp__debug_unexp_rts_peak(void);
uint64_t mmp__debug_eager_buffer(void);
/* Frames, unexpected entries and their payload buffers the point-to-point
 * layer allocated so far (its caches' misses); 0 before init. */
uint64_t mmp__debug_p2p_allocs(void);
/* The eager credit a message to or from `peer` costs besides its
 * length. */
uint64_t mmp__debug_eager_overhead(int peer);
/* The progress engine's counters. 0, or MMP_EINVAL before init. */
typedef struct mmp__debug_progress_s {
  uint64_t checks;    /* times the progress thread woke to look for an idle
                         application */
  unsigned check_us;  /* the longest interval between two such looks */
  uint64_t polls;     /* loop passes that polled rather than slept */
  int yield;          /* polling yields the CPU */
  int long_waits;     /* waits in a row that outlasted the spin */
  uint64_t spin_offs; /* times a wait's spin kept its peer off the CPU
                         (the next waits sleep at once) */
  int spin_off;       /* blocking waits left that sleep at once */
  uint64_t handoffs;  /* polling passes that yielded the CPU to a peer
                         that shares memory and was runnable on it */
  uint64_t sleeps;    /* times a blocking wait let the loop sleep */
  unsigned spin_us;   /* the spin budget (MINIMP_SPIN_US, or automatic) */
  uint64_t moves;     /* times this rank moved off a CPU it kept sharing
                         with a peer */
} mmp__debug_progress_t;
int mmp__debug_progress(mmp__debug_progress_t *out);
/* Re-reads the collectives' MINIMP_* variables into the running engine,
 * for tests that change them after init: 0, MMP_EINVAL before init, or
 * MMP_EENV (logged; the old values stay). Never called by the library. */
int mmp__debug_config_reload(void);
/* Runs a task in loop context that sleeps `ms` milliseconds, as a rank
 * whose loop thread was descheduled or ran one long iteration: nothing is
 * read meanwhile. Returns after it, 0, or MMP_EINVAL before init. */
int mmp__debug_stall_loop(unsigned ms);
/* Tests only: damages `comm`'s node segment as a corrupted rank would:
 * raises this rank's POSTED flag far beyond any call (`what` 0), or
 * breaks the header (1). 0, or MMP_EINVAL without a segment. */
int mmp__node_debug_damage(mmp_comm_t *comm, int what);
/* Tests only: the calls `comm`'s node segment served (0: none). */
uint64_t mmp__node_debug_calls(const mmp_comm_t *comm);

/* Copies the job key. 0 or MMP_EINVAL. */
int mmp__debug_job_key(uint8_t key[MMP__JOB_KEY_LEN]);
/* The shared-memory transport's counters (all zero without it). 0 or
 * MMP_EINVAL before init. */
int mmp__debug_shm_stats(mmp__shm_stats_t *out);
/* 1 if world rank `peer` is reached through shared memory. */
int mmp__debug_peer_shm(int peer);
/* Makes this rank corrupt an index it shares with `peer` (see
 * mmp__shm_debug_corrupt), from loop context. 0 or MMP_EINVAL. */
int mmp__debug_shm_corrupt(int peer, int which, uint64_t value);
/* Called, if set, at the stages of init named "shm-created" and
 * "shm-attached", for tests that kill a rank there. */
extern void (*mmp__debug_init_hook)(const char *stage);

#endif /* MMP_RUNTIME_INTERNAL_H */
