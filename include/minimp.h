/* SPDX-License-Identifier: MIT */
/*
 * minimp.h - the public interface of libminimp, a standalone message-passing
 * runtime for C programs on Ethernet clusters.
 *
 * This is the only header users include. Every type is opaque except
 * mmp_status_t, which is a plain value the caller owns. Every function
 * returns 0 (or a non-negative value where documented) on success and a
 * negative MMP_E* code on failure; mmp_strerror() turns a code into text.
 *
 * Threads: after mmp_init() every function may be called from any thread.
 *
 * Papers are cited by short names, e.g. [Hambrusch et al. 1998]; the full
 * citations are in docs/references.md.
 */
#ifndef MINIMP_H
#define MINIMP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MMP_BUILDING_LIBRARY) && defined(__GNUC__)
#define MMP_EXTERN __attribute__((visibility("default")))
#else
#define MMP_EXTERN /* nothing */
#endif

#if defined(__GNUC__)
#define MMP_NORETURN __attribute__((noreturn))
#else
#define MMP_NORETURN
#endif

#define MMP_VERSION_MAJOR 0
#define MMP_VERSION_MINOR 1
#define MMP_VERSION_PATCH 0

/*
 * Error codes. The values are part of the ABI and never change meaning.
 * XX(name, value, message)
 */
#define MMP_ERRNO_MAP(XX)                                                      \
  XX(EINVAL, -1, "invalid argument")                                           \
  XX(ENOMEM, -2, "out of memory")                                              \
  XX(ENOTINIT, -3, "libminimp is not initialised")                             \
  XX(EALREADY, -4, "libminimp is already initialised")                         \
  XX(EENV, -5, "malformed MINIMP_* environment variable")                      \
  XX(ERANK, -6, "rank out of range")                                           \
  XX(ETAG, -7, "tag out of range")                                             \
  XX(ETRUNC, -8, "message truncated: longer than the receive buffer")          \
  XX(EPEERLOST, -9, "connection to the peer was lost")                         \
  XX(ETIMEDOUT, -10, "operation timed out")                                    \
  XX(EPROTO, -11, "protocol violation by the peer")                            \
  XX(EAUTH, -12, "authentication failed: wrong job key")                       \
  XX(EBOOT, -13, "bootstrap (rendezvous) failed")                              \
  XX(EADDR, -14, "no usable local address for MINIMP_IFACE")                   \
  XX(EIO, -15, "input/output error")                                           \
  XX(ETOOBIG, -16, "length exceeds the configured maximum")                    \
  XX(ECANCELED, -17, "operation canceled")                                     \
  XX(EAGAIN, -18, "resource temporarily unavailable")                          \
  XX(ECOMM, -19, "invalid communicator")                                       \
  XX(EABORTED, -20, "the job was aborted")                                     \
  XX(ECONNREFUSED, -21, "connection refused")                                  \
  XX(EADDRINUSE, -22, "address already in use")                                \
  XX(ESHUTDOWN, -23, "libminimp is shutting down")                             \
  XX(EMISMATCH, -24, "ranks passed inconsistent arguments")                    \
  XX(ENOTSUP, -25, "operation not supported")                                  \
  XX(EINTERNAL, -26, "internal error")

typedef enum mmp_errno_e {
  MMP_OK = 0,
#define MMP__ERR_ENUM(name, val, msg) MMP_##name = (val),
  MMP_ERRNO_MAP(MMP__ERR_ENUM)
#undef MMP__ERR_ENUM
} mmp_errno_t;

/* Returns a static, human-readable message for an error code. Never NULL. */
MMP_EXTERN const char *mmp_strerror(int err);
/* Returns the symbolic name ("MMP_ETRUNC") of an error code. Never NULL. */
MMP_EXTERN const char *mmp_err_name(int err);

/* Wildcards for receives and probes. */
#define MMP_ANY_SOURCE (-1)
#define MMP_ANY_TAG (-1)
/* User tags are 0..MMP_TAG_MAX. */
#define MMP_TAG_MAX INT32_MAX

/*
 * Per-call protocol selection for mmp_send_ex() and mmp_isend_ex().
 *  MMP_SEND_AUTO   eager up to MINIMP_EAGER_LIMIT bytes, rendezvous above.
 *  MMP_SEND_EAGER  the send completes once the data is handed to the
 *                  transport, whether or not a receive is posted. Messages
 *                  larger than the per-peer eager buffer use rendezvous.
 *  MMP_SEND_RNDV   the send completes only after the receiver has matched
 *                  it; the data lands directly in the receive buffer.
 */
#define MMP_SEND_AUTO 0u
#define MMP_SEND_EAGER 1u
#define MMP_SEND_RNDV 2u

typedef struct mmp_comm_s mmp_comm_t;
typedef struct mmp_request_s mmp_request_t;

/* Completion information of a receive (and, for sends, the error). */
typedef struct mmp_status_s {
  int source;   /* rank the message came from, in the communicator */
  int tag;      /* the message's tag */
  size_t bytes; /* bytes stored in the receive buffer */
  int error;    /* 0 or a negative MMP_E* code */
  int reserved_[3];
} mmp_status_t;

#define MMP_STATUS_IGNORE ((mmp_status_t *)0)

/* ---- Start-up and shut-down -------------------------------------------- */

/*
 * Initialises the library from the environment minimprun sets (MINIMP_RANK,
 * MINIMP_SIZE, MINIMP_BOOT_ADDR, MINIMP_JOB_KEY, ...). Without any of them
 * the process runs as a singleton job of size 1. argc and argv may be NULL
 * and are not modified. Collective over the job: once every rank is up,
 * all measure the network model that automatic selection uses, which
 * every communicator inherits (mmp_comm_netmodel; nothing is measured
 * when a saved profile gives it). A MINIMP_<COLLECTIVE>_ALG that names no
 * collective, algorithm or option of it is MMP_EENV, with a message.
 * Unless MINIMP_MCAST=off, all then check whether multicast works, once
 * for the job (docs/design/transport.md); ranks whose MINIMP_MCAST differ get
 * MMP_EENV.
 * Returns 0, MMP_EALREADY, MMP_EENV, MMP_EBOOT, MMP_EADDR, MMP_ENOMEM.
 */
MMP_EXTERN int mmp_init(int *argc, char ***argv);

/* Flags for mmp_init_ex(). */
#define MMP_INIT_HOST_RENDEZVOUS 1u /* this process serves `rendezvous` */
/* No progress thread: the caller drives progress from its own event loop
 * with mmp_progress_fd() and mmp_progress() (as MINIMP_PROGRESS=external). */
#define MMP_INIT_EXTERNAL_PROGRESS 2u

/*
 * Initialises the library without minimprun. All `size` processes call it
 * with their own distinct `rank`, the same `rendezvous` address
 * ("host:port", "[v6addr]:port") and the same `job_key` (32 hex digits).
 * With MMP_INIT_HOST_RENDEZVOUS, this process also serves the rendezvous on
 * that address for the whole job (it must then stay alive until every rank
 * has finalised). `iface` selects the address to listen on (interface name
 * or CIDR); NULL picks the address that reaches the rendezvous.
 * With MMP_INIT_EXTERNAL_PROGRESS no progress thread is started (see
 * mmp_progress_fd); the call itself drives the loop while it measures the
 * network model and checks multicast with every rank, as any rank does.
 * The strings are only read during the call.
 * Returns as mmp_init(), plus MMP_EINVAL for bad arguments or flags.
 */
MMP_EXTERN int mmp_init_ex(int rank, int size, const char *rendezvous,
                           const char *job_key, const char *iface,
                           unsigned flags);

/*
 * Completes outstanding sends, waits until every rank has reached
 * mmp_finalize, closes all connections and frees everything. Requests the
 * caller still holds are invalid afterwards.
 */
MMP_EXTERN int mmp_finalize(void);

/* Returns 1 between a successful mmp_init*() and mmp_finalize(), else 0. */
MMP_EXTERN int mmp_initialized(void);

/*
 * Aborts the whole job: minimprun stops every rank and exits with `code`.
 * Every other rank's operations with other ranks fail with MMP_EABORTED
 * from the moment it learns of the abort, which is how the ranks of an
 * embedded job (no launcher to stop them) learn that it is over. Never
 * returns.
 */
MMP_EXTERN MMP_NORETURN void mmp_abort(int code);

/* Seconds since an arbitrary point, monotonic, sub-microsecond resolution.
 * The clock is the same for every process on one machine. */
MMP_EXTERN double mmp_wtime(void);

/* ---- Embedding: external progress, logging, errors --------------------- */

/*
 * The descriptor to watch for readability when the library runs without a
 * progress thread (MMP_INIT_EXTERNAL_PROGRESS or MINIMP_PROGRESS=external).
 * It is level-triggered: it stays readable while progress is possible (a
 * socket is ready, another thread queued work, a library timer is due)
 * and mmp_progress() has not yet made it. The library owns it: never read,
 * write or close it. It stays the same until mmp_finalize().
 * Returns the descriptor (>= 0), MMP_ENOTINIT, or MMP_ENOTSUP when a
 * progress thread runs (the default).
 */
MMP_EXTERN int mmp_progress_fd(void);

/*
 * Makes whatever progress is possible now without blocking: reads what
 * arrived, writes what is queued, runs due timers and completes requests.
 * Call it when mmp_progress_fd() is readable. Harmless with a progress
 * thread, and while another thread is blocked in the library (that thread
 * is making the progress then). Returns 0, MMP_ENOTINIT, or MMP_EINVAL
 * when called from inside the library (a user reduction operation).
 */
MMP_EXTERN int mmp_progress(void);

/* Log levels, most severe first; a level passes the messages at it and
 * above it in severity. */
enum {
  MMP_LOG_ERROR = 0,
  MMP_LOG_WARN = 1, /* the default (MINIMP_LOG=warn) */
  MMP_LOG_INFO = 2,
  MMP_LOG_DEBUG = 3
};

/* Receives one log line: its level, and the text without a newline, with
 * stderr's prefix ("minimp[rank R] level: ", or "minimp[pid N] level: "
 * before the rank is known) left out. `line` is valid only during the
 * call. */
typedef void (*mmp_log_fn)(int level, const char *line, void *userdata);

/*
 * Routes the library's log lines to fn(level, line, userdata) instead of
 * stderr; fn NULL restores stderr. May be called at any time, before
 * mmp_init too. fn runs in whichever thread logs: an application thread
 * inside a library call, the progress thread, or the thread inside
 * mmp_progress(); several may call it at once. It must not call libminimp.
 * Once this returns, the previous fn is no longer running and will not be
 * called again. Returns 0, or MMP_EINVAL when called from inside fn.
 */
MMP_EXTERN int mmp_set_log_fn(mmp_log_fn fn, void *userdata);

/* Drops messages less severe than `level` (MMP_LOG_*), as MINIMP_LOG does;
 * mmp_init applies MINIMP_LOG when it is set. Returns 0 or MMP_EINVAL. */
MMP_EXTERN int mmp_set_log_level(int level);

/*
 * `on` 1: a library call that fails logs "<function>: <error>" and aborts
 * the job with mmp_abort(MMP_FATAL_EXIT), so minimprun exits non-zero
 * naming the rank (MPI's MPI_ERRORS_ARE_FATAL). `on` 0: calls return
 * their error codes (the default). MINIMP_ERRORS=fatal or =return sets it
 * at init. Process-wide; any thread, any time. Returns the old setting.
 */
MMP_EXTERN int mmp_set_errors_fatal(int on);
/* The exit code of a job aborted by a fatal error. */
#define MMP_FATAL_EXIT 70

/* ---- Communicators ----------------------------------------------------- */

/* The communicator of all ranks; NULL before a successful mmp_init() and
 * after mmp_finalize(). Not to be freed. */
MMP_EXTERN mmp_comm_t *mmp_comm_world(void);
/* Returns the caller's rank in `comm`; MMP_ENOTINIT when called before a
 * successful mmp_init() (a failed mmp_init left unchecked: the first such
 * call of any function logs it once), MMP_ECOMM for another NULL. */
MMP_EXTERN int mmp_comm_rank(const mmp_comm_t *comm);
/* Returns the number of ranks in `comm`, or an error as mmp_comm_rank. */
MMP_EXTERN int mmp_comm_size(const mmp_comm_t *comm);

/*
 * Creates a communicator with the same ranks as `comm` and a separate
 * message space. Collective over `comm`. *newcomm is freed with
 * mmp_comm_free. Returns 0, MMP_ECOMM, MMP_ENOMEM, MMP_EPEERLOST.
 */
MMP_EXTERN int mmp_comm_dup(mmp_comm_t *comm, mmp_comm_t **newcomm);

/* Color of a rank that joins no communicator in mmp_comm_split. */
#define MMP_UNDEFINED (-32766)

/*
 * Splits `comm`: ranks passing the same `color` (>= 0) form a new
 * communicator, ordered by `key`, then by rank in `comm`. A rank passing
 * MMP_UNDEFINED gets *newcomm = NULL. Collective over `comm`.
 */
MMP_EXTERN int mmp_comm_split(mmp_comm_t *comm, int color, int key,
                              mmp_comm_t **newcomm);

/*
 * Creates a communicator of the `n` ranks of `comm` listed in `ranks`, in
 * that order. Collective over `comm`; every rank passes the same list;
 * ranks not in it get *newcomm = NULL. MMP_EINVAL for a bad or repeated
 * rank.
 */
MMP_EXTERN int mmp_comm_create(mmp_comm_t *comm, int n, const int *ranks,
                               mmp_comm_t **newcomm);

/*
 * The rank in the world communicator of rank `rank` of `comm`: how the
 * members of different communicators are compared (MPI's groups). Local.
 * Returns it (>= 0), MMP_ENOTINIT, MMP_ECOMM for a NULL `comm`, or
 * MMP_ERANK when `rank` is not in 0 .. size - 1.
 */
MMP_EXTERN int mmp_comm_world_rank(const mmp_comm_t *comm, int rank);

/* Frees a communicator made by the calls above and sets *comm to NULL.
 * Requests still out on it (point-to-point or collective, not yet freed
 * by mmp_wait or a completing mmp_test) complete as usual: the
 * communicator goes when the last of them is freed. No new operation may
 * name it. The world communicator cannot be freed (MMP_ECOMM). */
MMP_EXTERN int mmp_comm_free(mmp_comm_t **comm);

/*
 * Sets the default timeout of `comm`, as Gloo's context timeout: a receive
 * (mmp_recv, mmp_irecv), a probe (mmp_probe) or a collective on `comm` that
 * names no timeout of its own fails with MMP_ETIMEDOUT after `ms`
 * milliseconds. The call's timeout_ms wins over it, and it over
 * MINIMP_COLL_TIMEOUT_MS (collectives only); 0 takes it away. Operations
 * already started keep the timeout they started with. Communicators made
 * from `comm` (dup, split, create) start with its value. Sends are not
 * timed: what they wait for is the peer, watched by MINIMP_PEER_TIMEOUT_MS;
 * nor are those three calls and the network model's measurement (in
 * mmp_init, mmp_comm_netmodel and mmp_comm_netmodel_measure;
 * docs/embedding.md).
 * What a timeout leaves behind: docs/embedding.md. Returns 0, MMP_ENOTINIT,
 * MMP_ECOMM.
 */
MMP_EXTERN int mmp_comm_set_timeout(mmp_comm_t *comm, unsigned ms);
/* Stores in *ms the value mmp_comm_set_timeout gave `comm` (0: none).
 * Returns 0, MMP_ENOTINIT, MMP_ECOMM, or MMP_EINVAL for a NULL `ms`. */
MMP_EXTERN int mmp_comm_get_timeout(const mmp_comm_t *comm, unsigned *ms);

/* ---- Point-to-point ---------------------------------------------------- */

/*
 * Blocking send of `len` bytes to rank `dest` with `tag` (0..MMP_TAG_MAX).
 * The buffer may be reused when the call returns. Messages from one rank to
 * another on the same communicator and tag are received in the order sent.
 * Returns 0, MMP_EINVAL, MMP_ERANK, MMP_ETAG, MMP_ECOMM, MMP_EPEERLOST.
 */
MMP_EXTERN int mmp_send(const void *buf, size_t len, int dest, int tag,
                        mmp_comm_t *comm);
/* As mmp_send(), with an MMP_SEND_* protocol flag. */
MMP_EXTERN int mmp_send_ex(const void *buf, size_t len, int dest, int tag,
                           mmp_comm_t *comm, unsigned flags);

/*
 * Blocking receive into `buf` of `cap` bytes. `source` may be
 * MMP_ANY_SOURCE and `tag` MMP_ANY_TAG. `status` may be MMP_STATUS_IGNORE.
 * A longer message fills the buffer and returns MMP_ETRUNC. With a
 * communicator timeout (mmp_comm_set_timeout), a receive (this one, or
 * mmp_irecv's request) that no message matched in time gives up with
 * MMP_ETIMEDOUT.
 */
MMP_EXTERN int mmp_recv(void *buf, size_t cap, int source, int tag,
                        mmp_comm_t *comm, mmp_status_t *status);

/*
 * Nonblocking forms. On success *req is a new request that the caller owns
 * until mmp_wait/mmp_test/mmp_waitall/mmp_waitany completes it, which frees
 * it and sets the caller's pointer to NULL. The buffer belongs to the
 * library until then. On error *req is set to NULL.
 */
MMP_EXTERN int mmp_isend(const void *buf, size_t len, int dest, int tag,
                         mmp_comm_t *comm, mmp_request_t **req);
MMP_EXTERN int mmp_isend_ex(const void *buf, size_t len, int dest, int tag,
                            mmp_comm_t *comm, unsigned flags,
                            mmp_request_t **req);
MMP_EXTERN int mmp_irecv(void *buf, size_t cap, int source, int tag,
                         mmp_comm_t *comm, mmp_request_t **req);

/*
 * Waits for *req, fills `status` (may be MMP_STATUS_IGNORE), frees the
 * request and sets *req to NULL. A NULL *req returns 0 at once with an
 * empty status. Returns the operation's result (0, MMP_ETRUNC, ...).
 */
MMP_EXTERN int mmp_wait(mmp_request_t **req, mmp_status_t *status);

/*
 * Sets *flag to 1 and behaves as mmp_wait() if *req has completed;
 * otherwise sets *flag to 0 and returns 0.
 */
MMP_EXTERN int mmp_test(mmp_request_t **req, int *flag, mmp_status_t *status);

/*
 * Waits for all n requests (NULL entries are skipped). `statuses` is NULL or
 * an array of n. Returns 0 if all succeeded, else the first error in array
 * order; every request is completed and freed either way.
 */
MMP_EXTERN int mmp_waitall(size_t n, mmp_request_t **reqs,
                           mmp_status_t *statuses);

/*
 * Waits until one of the n requests completes, completes it as mmp_wait()
 * and stores its position in *index. With no non-NULL request, *index is
 * (size_t)-1 and the call returns 0.
 */
MMP_EXTERN int mmp_waitany(size_t n, mmp_request_t **reqs, size_t *index,
                           mmp_status_t *status);

/*
 * Blocks until a message matching (source, tag) can be received and
 * describes it in *status (bytes is the full message length) without
 * receiving it. MMP_ETIMEDOUT after the communicator's timeout, if any.
 */
MMP_EXTERN int mmp_probe(int source, int tag, mmp_comm_t *comm,
                         mmp_status_t *status);
/* Nonblocking probe: *flag is 1 and *status filled if a message matches. */
MMP_EXTERN int mmp_iprobe(int source, int tag, mmp_comm_t *comm, int *flag,
                          mmp_status_t *status);

/*
 * Cancels a receive (mmp_irecv) that no message has matched yet: it
 * completes at once with MMP_ECANCELED and an empty status, which the
 * mmp_wait or mmp_test the caller still owes it returns. A receive that
 * has already matched a message, or completed, is left alone and ends as
 * it would have (MPI_Cancel's rule: a cancel may come too late). *req
 * stays the caller's either way. Returns 1 when it was cancelled, 0 when
 * it came too late, MMP_ENOTSUP for a send or a collective's request,
 * MMP_EINVAL for NULL, MMP_ENOTINIT.
 */
MMP_EXTERN int mmp_cancel(mmp_request_t *req);

/* ---- Collectives ------------------------------------------------------- */

/* Blocks until every rank of `comm` has called it. Returns 0,
 * MMP_ENOTINIT, MMP_ECOMM, MMP_EPEERLOST, or MMP_ETIMEDOUT after the
 * communicator's timeout (mmp_comm_set_timeout) or MINIMP_COLL_TIMEOUT_MS. */
MMP_EXTERN int mmp_barrier(mmp_comm_t *comm);

/* ---- Algorithms and options --------------------------------------------
 *
 * Every collective runs one of its algorithms, each named by a short
 * string ("ring", "binomial"). AUTO, a NULL or "auto" name, chooses one
 * from the size, the ranks and a model of the network; docs/algorithms.md
 * has every algorithm's cost, docs/design/auto.md AUTO's rules. mmp_coll_algs
 * lists a collective's algorithms with the options each reads, so that a
 * program never needs to know how many there are. MINIMP_<COLLECTIVE>_ALG (e.g.
 * MINIMP_ALLREDUCE_ALG=ring, MINIMP_BCAST_ALG=knomial,radix=4) names the
 * algorithm, and options, that replace AUTO for every call that leaves
 * the choice to AUTO (docs/guide/tuning.md).
 */

/* The collectives, as mmp_coll_algs, mmp_coll_name and mmp_coll_select
 * name them. */
enum {
  MMP_COLL_ALLREDUCE = 1,
  MMP_COLL_REDUCE = 2,
  MMP_COLL_REDUCE_SCATTER = 3,
  MMP_COLL_GATHER = 4,
  MMP_COLL_SCATTER = 5,
  MMP_COLL_ALLGATHER = 6,
  MMP_COLL_ALLTOALL = 7,
  MMP_COLL_BCAST = 8,
  MMP_COLL_S2P = 9, /* mmp_bcast_s2p */
  MMP_COLL_BARRIER = 10,
  MMP_COLL_SCAN = 11,  /* mmp_scan */
  MMP_COLL_EXSCAN = 12 /* mmp_exscan */
};

/*
 * Options of every collective call (mmp_bcast_ex, mmp_allreduce_ex, ...).
 * Zero-initialise, then set what matters by name:
 *   mmp_coll_opts_t o = {.algorithm = "knomial", .radix = 4};
 * Each field has one meaning in every collective; an algorithm reads the
 * ones mmp_coll_algs lists for it (mode and timeout_ms: every one) and
 * ignores the others. A 0 or NULL field leaves the choice to the library.
 */
typedef struct mmp_coll_opts_s {
  const char *algorithm; /* the algorithm's name; NULL or "auto": AUTO */
  const char *inner;     /* the algorithm a composite runs within each of
                            its groups (hierarchical: each group; node: each
                            node; arrival_b/_nb: the ranks that arrived
                            together); one that mmp_coll_algs flags
                            MMP_ALG_PART. NULL: chosen for it */
  const char *outer;     /* the algorithm between the groups' leaders, as
                            inner. NULL: chosen for it */
  size_t segment;        /* bytes per pipelined segment (symmetric: per
                            sub-segment of a piece); 0: the algorithm's */
  int radix;             /* a tree's children per level, 2 to 16 (2: a
                            binomial tree); 0: the algorithm's */
  int groups;            /* the groups a composite forms, 1 to p; 0: the
                            algorithm's (hierarchical: ceil(sqrt(p)); node:
                            the leaders in groups as the model prices) */
  int rows;              /* the rows of a logical grid, a divisor of p; 0:
                            the largest divisor of p not above sqrt(p) */
  int window;            /* exchanges in flight; 0: the algorithm's */
  unsigned mode;         /* MMP_SEND_AUTO, _EAGER (push to receivers that
                            have not arrived) or _RNDV (move data only once
                            they have), for every data send */
  unsigned timeout_ms;   /* give up after this many milliseconds: the call
                            (or the request) fails with MMP_ETIMEDOUT and the
                            communicator is unusable for collectives (docs/
                            embedding.md); 0: the communicator's timeout
                            (mmp_comm_set_timeout), else MINIMP_COLL_TIMEOUT_MS,
                            whose default 0 waits for ever */
  int reserved_[8];      /* 0 */
} mmp_coll_opts_t;

#define MMP_COLL_OPTS_INIT                                                     \
  { 0 }

/* One name per collective, for reading. */
typedef mmp_coll_opts_t mmp_bcast_opts_t;
typedef mmp_coll_opts_t mmp_s2p_opts_t;
typedef mmp_coll_opts_t mmp_allreduce_opts_t;
typedef mmp_coll_opts_t mmp_reduce_opts_t;
typedef mmp_coll_opts_t mmp_reduce_scatter_opts_t;
typedef mmp_coll_opts_t mmp_gather_opts_t;
typedef mmp_coll_opts_t mmp_scatter_opts_t;
typedef mmp_coll_opts_t mmp_allgather_opts_t;
typedef mmp_coll_opts_t mmp_alltoall_opts_t;
typedef mmp_coll_opts_t mmp_scan_opts_t;
#define MMP_BCAST_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_S2P_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_ALLREDUCE_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_REDUCE_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_REDUCE_SCATTER_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_GATHER_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_SCATTER_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_ALLGATHER_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_ALLTOALL_OPTS_INIT MMP_COLL_OPTS_INIT
#define MMP_SCAN_OPTS_INIT MMP_COLL_OPTS_INIT

/* The option fields an algorithm reads (mmp_alg_info_t.options). */
#define MMP_OPT_SEGMENT 0x1u
#define MMP_OPT_RADIX 0x2u
#define MMP_OPT_GROUPS 0x4u
#define MMP_OPT_INNER 0x8u
#define MMP_OPT_OUTER 0x10u
#define MMP_OPT_ROWS 0x20u
#define MMP_OPT_WINDOW 0x40u

/* What an algorithm is (mmp_alg_info_t.flags). */
#define MMP_ALG_AUTO 0x1u /* AUTO may choose it */
#define MMP_ALG_ORDERED                                                        \
  0x2u                    /* keeps rank order: runs non-commutative            \
                             operations (mmp_op_create) */
#define MMP_ALG_PART 0x4u /* may be a composite's inner or outer */

/* An algorithm of a collective, as mmp_coll_algs describes it. The
 * strings are the library's and last as long as it is loaded. */
typedef struct mmp_alg_info_s {
  const char *name;    /* what opts.algorithm, inner, outer and
                          MINIMP_<COLLECTIVE>_ALG take */
  const char *summary; /* one line: its shape */
  unsigned options;    /* MMP_OPT_*: the fields of mmp_coll_opts_t it reads
                          besides mode and timeout_ms */
  unsigned flags;      /* MMP_ALG_* */
  int reserved_[4];
} mmp_alg_info_t;

/* Algorithm number i (0, 1, ...) of collective `coll` (MMP_COLL_*) into
 * *info. Returns 0, or MMP_EINVAL past the last one, for an unknown
 * collective or a NULL info. Works before mmp_init. */
MMP_EXTERN int mmp_coll_algs(int coll, int i, mmp_alg_info_t *info);
/* "bcast", "s2p", "allreduce", "reduce_scatter", ...: the collective's
 * name (in capitals, its MINIMP_<COLLECTIVE>_ALG); NULL for an unknown
 * number. */
MMP_EXTERN const char *mmp_coll_name(int coll);

/*
 * Broadcasts `len` bytes of `buf` from `root` to every rank of `comm`.
 * Collective: every rank passes the same root and length. Returns 0,
 * MMP_EINVAL, MMP_ERANK, MMP_ECOMM, MMP_EPEERLOST, MMP_ETIMEDOUT (opts'
 * timeout_ms, mmp_comm_set_timeout, MINIMP_COLL_TIMEOUT_MS; docs/embedding.md),
 * or MMP_EMISMATCH when this rank's arguments (or an upstream rank's) disagree
 * with the root's.
 * From 64 KiB on, AUTO's root decides, broadcast by broadcast, between a
 * static algorithm and an arrival-aware one from how late the ranks
 * arrived before, and the others follow it (docs/design/auto.md). A rank
 * whose length falls on the other side of 64 KiB gets MMP_EMISMATCH too,
 * but a root that runs arrival_b (messages over half a rank's eager
 * buffer) waits for it.
 */
MMP_EXTERN int mmp_bcast(void *buf, size_t len, int root, mmp_comm_t *comm);
/* As mmp_bcast, with options (NULL: all defaults). */
MMP_EXTERN int mmp_bcast_ex(void *buf, size_t len, int root, mmp_comm_t *comm,
                            const mmp_bcast_opts_t *opts);
/* Non-blocking broadcast: *req completes (mmp_wait/mmp_test) when this
 * rank's part is done. `buf` belongs to the library until then. */
MMP_EXTERN int mmp_ibcast(void *buf, size_t len, int root, mmp_comm_t *comm,
                          const mmp_bcast_opts_t *opts, mmp_request_t **req);

/* As mmp_coll_select(comm, MMP_COLL_BCAST, len, MMP_BYTE, 0, out). */
MMP_EXTERN int mmp_bcast_select(mmp_comm_t *comm, size_t len,
                                mmp_bcast_opts_t *out);

/*
 * The algorithm this rank's latest broadcast on `comm` ran (*alg, its
 * name, the library's string), AUTO resolved: what the root chose, as
 * the root and every receiver saw it. It can differ from
 * mmp_bcast_select's answer, which is the static choice before arrival
 * patterns are seen. Returns 0, MMP_ENOTINIT, MMP_ECOMM, or MMP_EINVAL
 * for a NULL `alg` or before the first broadcast.
 */
MMP_EXTERN int mmp_bcast_last(mmp_comm_t *comm, const char **alg);

/* The network as automatic selection models it (Hockney, plus a burst).
 * Where some but not all ranks of the communicator share a node, alpha,
 * beta and burst are the links between nodes, and alpha_node and
 * beta_node those between ranks of one node; elsewhere the two pairs are
 * equal. */
typedef struct mmp_netmodel_s {
  double alpha;      /* seconds per message */
  double beta;       /* seconds per byte, sustained */
  double burst;      /* bytes an idle link passes at once (0: none seen) */
  int shared_cpus;   /* 1: more ranks than CPUs share a machine */
  double gamma;      /* seconds per byte reduced (a float sum) */
  int nodes;         /* nodes the communicator's ranks run on */
  int node_size;     /* ranks on its most populated node */
  double alpha_node; /* seconds per message within a node */
  double beta_node;  /* seconds per byte within a node */
  double gap;        /* seconds one more message costs sent back to back
                        on a link (0: not measured, taken as alpha) */
} mmp_netmodel_t;

/*
 * The network model automatic selection uses on `comm`. mmp_init measures
 * the world's, by all ranks at once, and communicators made from a
 * communicator inherit its figures, so that no collective's start waits
 * for the other ranks to measure them (a non-blocking one may start on
 * each rank at a different point); nodes and node_size are always
 * `comm`'s own. Where none was measured (a measurement at init that
 * failed), this call measures it, by all ranks
 * of `comm` at once (collective then, local afterwards); until then
 * automatic selection prices with fixed figures. A saved profile replaces
 * every measurement: MINIMP_NET_ALPHA_US and MINIMP_NET_BETA_NS (and
 * optionally MINIMP_NET_BURST_BYTES, MINIMP_NET_SHARED_CPUS,
 * MINIMP_NET_GAMMA_NS, MINIMP_NET_GAP_US and MINIMP_NET_NODE_ALPHA_US
 * with MINIMP_NET_NODE_BETA_NS). Returns 0, MMP_ENOTINIT, MMP_ECOMM,
 * MMP_EINVAL for a NULL `out`, or an error of the measurement
 * (MMP_EPEERLOST, MMP_ENOMEM).
 */
MMP_EXTERN int mmp_comm_netmodel(mmp_comm_t *comm, mmp_netmodel_t *out);

/*
 * Measures the network model of `comm` anew, by all its ranks at once
 * (collective), stores it in *out, and makes it the one automatic
 * selection uses on `comm` and on the communicators made from it
 * afterwards (those made before keep theirs). For links that changed
 * since, or a communicator whose ranks' links differ from the world's. A
 * saved profile is returned as mmp_comm_netmodel does, without measuring.
 * Returns as mmp_comm_netmodel.
 */
MMP_EXTERN int mmp_comm_netmodel_measure(mmp_comm_t *comm, mmp_netmodel_t *out);

/* ---- Element types and reduction operations ------------------------------
 *
 * The reducing collectives count in elements of a type and combine them
 * with an operation; the others count in elements too (MMP_BYTE moves
 * bytes). Reductions are deterministic: for the same p, algorithm and
 * input every run and every rank gets bit-identical results
 * (docs/algorithms.md states each algorithm's order of combination).
 */
typedef int mmp_type_t;
enum {
  MMP_BYTE = 0, /* data movement; BAND, BOR, BXOR only */
  MMP_INT8 = 1,
  MMP_UINT8 = 2,
  MMP_INT16 = 3,
  MMP_UINT16 = 4,
  MMP_INT32 = 5,
  MMP_UINT32 = 6,
  MMP_INT64 = 7,
  MMP_UINT64 = 8,
  MMP_FLOAT = 9,
  MMP_DOUBLE = 10,
  MMP_TYPE_BUILTIN_COUNT = 11
};

/* Bytes of one element of `type`; 0 for an unknown type. */
MMP_EXTERN size_t mmp_type_size(mmp_type_t type);

/*
 * A type whose one element is `n` consecutive elements of the built-in
 * type `base` (MPI_Type_contiguous): a 2 x 2 matrix is contiguous(4,
 * MMP_DOUBLE). Collectives never cut an element, so a user operation sees
 * whole ones; built-in operations apply to the base elements. *out is
 * freed with mmp_type_free. Returns 0, MMP_EINVAL or MMP_ENOMEM (at most
 * 64 such types at once).
 */
MMP_EXTERN int mmp_type_contiguous(size_t n, mmp_type_t base, mmp_type_t *out);
/* Frees a type made by mmp_type_contiguous and sets *type to MMP_BYTE.
 * Collectives in flight that use it must have completed. Returns 0 or
 * MMP_EINVAL. */
MMP_EXTERN int mmp_type_free(mmp_type_t *type);

typedef int mmp_op_t;
enum {
  MMP_SUM = 1,  /* numeric types */
  MMP_PROD = 2, /* numeric types */
  MMP_MIN = 3,  /* numeric types */
  MMP_MAX = 4,  /* numeric types */
  MMP_BAND = 5, /* integers and MMP_BYTE */
  MMP_BOR = 6,  /* integers and MMP_BYTE */
  MMP_BXOR = 7, /* integers and MMP_BYTE */
  MMP_LAND = 8, /* integers: nonzero is true, the result 1 or 0 */
  MMP_LOR = 9,  /* integers */
  MMP_OP_BUILTIN_COUNT = 10
};

/* A user operation: combines `count` elements of `in` into `inout`,
 * inout[i] = in[i] o inout[i], where `in` comes from lower ranks than
 * `inout` when the operation is not commutative. It must be associative,
 * must not call libminimp, and runs in whichever thread drives the
 * library's loop (the progress thread, or a thread inside a library call
 * or mmp_progress). */
typedef void (*mmp_user_fn)(const void *in, void *inout, size_t count,
                            mmp_type_t type, void *ctx);

/*
 * Makes a user operation. `commutative` 0 restricts the collectives to
 * algorithms that keep rank order (AUTO knows which). `ctx` is passed to
 * every call. Every rank creates its operations in the same order (their
 * numbers are compared across ranks). *op is freed with mmp_op_free.
 * Returns 0, MMP_EINVAL or MMP_ENOMEM (at most 64 at once).
 */
MMP_EXTERN int mmp_op_create(mmp_user_fn fn, int commutative, void *ctx,
                             mmp_op_t *op);
/* Frees a user operation and sets *op to 0. Returns 0 or MMP_EINVAL. */
MMP_EXTERN int mmp_op_free(mmp_op_t *op);

/*
 * inout[i] = in[i] op inout[i] for `count` elements of `type`, in this
 * process alone (MPI_Reduce_local): the arithmetic the reducing
 * collectives run, or the user operation's function, called in the
 * caller's thread. Needs no mmp_init. Returns 0, or MMP_EINVAL (a NULL
 * buffer with a nonzero count, an unknown type or operation, an operation
 * the type does not support).
 */
MMP_EXTERN int mmp_reduce_local(const void *in, void *inout, size_t count,
                                mmp_type_t type, mmp_op_t op);

/* The send buffer of the in-place forms: the data is taken from (and the
 * result left in) the receive buffer, as MPI_IN_PLACE. */
#define MMP_IN_PLACE ((void *)1)

/*
 * The collectives MPI and Gloo programs use, in MPI's argument order with
 * counts in elements of `type`. Collective: every rank of `comm` calls
 * them with the same counts, type, operation and root. Each has an _ex
 * form with options (NULL: all defaults) and a non-blocking mmp_i... form
 * whose *req completes with mmp_wait/mmp_test; the buffers belong to the
 * library until then (the blocking forms: until they return). The caller
 * keeps ownership of every pointer. MMP_IN_PLACE as sendbuf where stated.
 *
 * They return 0, MMP_ENOTINIT, MMP_ECOMM, MMP_EINVAL (a NULL buffer with
 * a nonzero count, an unknown type, an operation the type does not
 * support, an algorithm the operation rules out: a non-commutative one
 * with an algorithm that does not keep rank order), MMP_ERANK (root),
 * MMP_ENOMEM, MMP_EPEERLOST when a peer died, MMP_ETIMEDOUT (opts'
 * timeout_ms, MINIMP_COLL_TIMEOUT_MS), or MMP_EMISMATCH when
 * ranks passed different counts, types, operations or roots (every rank
 * that learns of it: the ranks that disagree and those after them;
 * docs/design/collectives.md, "Inconsistent arguments", says where it
 * can hang).
 */

/* recvbuf = the reduction over all ranks of sendbuf (count elements).
 * MMP_IN_PLACE: the data is in recvbuf. */
MMP_EXTERN int mmp_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                             mmp_type_t type, mmp_op_t op, mmp_comm_t *comm);
MMP_EXTERN int mmp_allreduce_ex(const void *sendbuf, void *recvbuf,
                                size_t count, mmp_type_t type, mmp_op_t op,
                                mmp_comm_t *comm,
                                const mmp_allreduce_opts_t *opts);
MMP_EXTERN int mmp_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                              mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                              const mmp_allreduce_opts_t *opts,
                              mmp_request_t **req);

/* recvbuf at rank i = x_0 op x_1 op ... op x_i, x_j being rank j's
 * sendbuf (count elements), in rank order for any associative operation.
 * MMP_IN_PLACE: the data is in recvbuf. */
MMP_EXTERN int mmp_scan(const void *sendbuf, void *recvbuf, size_t count,
                        mmp_type_t type, mmp_op_t op, mmp_comm_t *comm);
MMP_EXTERN int mmp_scan_ex(const void *sendbuf, void *recvbuf, size_t count,
                           mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                           const mmp_scan_opts_t *opts);
MMP_EXTERN int mmp_iscan(const void *sendbuf, void *recvbuf, size_t count,
                         mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                         const mmp_scan_opts_t *opts, mmp_request_t **req);

/* The exclusive scan: recvbuf at rank i > 0 = x_0 op ... op x_{i-1}; rank
 * 0's recvbuf is left untouched (in place too: it keeps rank 0's data).
 * MMP_IN_PLACE: the data is in recvbuf. */
MMP_EXTERN int mmp_exscan(const void *sendbuf, void *recvbuf, size_t count,
                          mmp_type_t type, mmp_op_t op, mmp_comm_t *comm);
MMP_EXTERN int mmp_exscan_ex(const void *sendbuf, void *recvbuf, size_t count,
                             mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                             const mmp_scan_opts_t *opts);
MMP_EXTERN int mmp_iexscan(const void *sendbuf, void *recvbuf, size_t count,
                           mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                           const mmp_scan_opts_t *opts, mmp_request_t **req);

/* The reduction lands in the root's recvbuf (ignored elsewhere, may be
 * NULL). MMP_IN_PLACE at the root: its data is in recvbuf. */
MMP_EXTERN int mmp_reduce(const void *sendbuf, void *recvbuf, size_t count,
                          mmp_type_t type, mmp_op_t op, int root,
                          mmp_comm_t *comm);
MMP_EXTERN int mmp_reduce_ex(const void *sendbuf, void *recvbuf, size_t count,
                             mmp_type_t type, mmp_op_t op, int root,
                             mmp_comm_t *comm, const mmp_reduce_opts_t *opts);
MMP_EXTERN int mmp_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                           mmp_type_t type, mmp_op_t op, int root,
                           mmp_comm_t *comm, const mmp_reduce_opts_t *opts,
                           mmp_request_t **req);

/* The reduction of sum(recvcounts) elements, rank i keeping recvcounts[i]
 * of them (in rank order) in recvbuf. MMP_IN_PLACE: the input is in
 * recvbuf, which then holds all of it. */
MMP_EXTERN int mmp_reduce_scatter(const void *sendbuf, void *recvbuf,
                                  const size_t *recvcounts, mmp_type_t type,
                                  mmp_op_t op, mmp_comm_t *comm);
MMP_EXTERN int mmp_reduce_scatter_ex(const void *sendbuf, void *recvbuf,
                                     const size_t *recvcounts, mmp_type_t type,
                                     mmp_op_t op, mmp_comm_t *comm,
                                     const mmp_reduce_scatter_opts_t *opts);
MMP_EXTERN int mmp_ireduce_scatter(const void *sendbuf, void *recvbuf,
                                   const size_t *recvcounts, mmp_type_t type,
                                   mmp_op_t op, mmp_comm_t *comm,
                                   const mmp_reduce_scatter_opts_t *opts,
                                   mmp_request_t **req);
/* The equal-block form: every rank keeps recvcount elements. */
MMP_EXTERN int mmp_reduce_scatter_block(const void *sendbuf, void *recvbuf,
                                        size_t recvcount, mmp_type_t type,
                                        mmp_op_t op, mmp_comm_t *comm);
MMP_EXTERN int mmp_reduce_scatter_block_ex(
    const void *sendbuf, void *recvbuf, size_t recvcount, mmp_type_t type,
    mmp_op_t op, mmp_comm_t *comm, const mmp_reduce_scatter_opts_t *opts);
MMP_EXTERN int mmp_ireduce_scatter_block(const void *sendbuf, void *recvbuf,
                                         size_t recvcount, mmp_type_t type,
                                         mmp_op_t op, mmp_comm_t *comm,
                                         const mmp_reduce_scatter_opts_t *opts,
                                         mmp_request_t **req);

/* Rank i's sendcount elements land at block i of the root's recvbuf
 * (recvcount elements each; ignored elsewhere). MMP_IN_PLACE at the
 * root: its block is already in place. */
MMP_EXTERN int mmp_gather(const void *sendbuf, size_t sendcount, void *recvbuf,
                          size_t recvcount, mmp_type_t type, int root,
                          mmp_comm_t *comm);
MMP_EXTERN int mmp_gather_ex(const void *sendbuf, size_t sendcount,
                             void *recvbuf, size_t recvcount, mmp_type_t type,
                             int root, mmp_comm_t *comm,
                             const mmp_gather_opts_t *opts);
MMP_EXTERN int mmp_igather(const void *sendbuf, size_t sendcount, void *recvbuf,
                           size_t recvcount, mmp_type_t type, int root,
                           mmp_comm_t *comm, const mmp_gather_opts_t *opts,
                           mmp_request_t **req);
/* Rank i's sendcount elements land at displs[i] (elements) of the root's
 * recvbuf; recvcounts and displs are read at the root only. */
MMP_EXTERN int mmp_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                           const size_t *recvcounts, const size_t *displs,
                           mmp_type_t type, int root, mmp_comm_t *comm);
MMP_EXTERN int mmp_igatherv(const void *sendbuf, size_t sendcount,
                            void *recvbuf, const size_t *recvcounts,
                            const size_t *displs, mmp_type_t type, int root,
                            mmp_comm_t *comm, const mmp_gather_opts_t *opts,
                            mmp_request_t **req);

/* Block i of the root's sendbuf (sendcount elements) lands in rank i's
 * recvbuf (recvcount). MMP_IN_PLACE as the root's recvbuf: it keeps its
 * block where it is. */
MMP_EXTERN int mmp_scatter(const void *sendbuf, size_t sendcount, void *recvbuf,
                           size_t recvcount, mmp_type_t type, int root,
                           mmp_comm_t *comm);
MMP_EXTERN int mmp_scatter_ex(const void *sendbuf, size_t sendcount,
                              void *recvbuf, size_t recvcount, mmp_type_t type,
                              int root, mmp_comm_t *comm,
                              const mmp_scatter_opts_t *opts);
MMP_EXTERN int mmp_iscatter(const void *sendbuf, size_t sendcount,
                            void *recvbuf, size_t recvcount, mmp_type_t type,
                            int root, mmp_comm_t *comm,
                            const mmp_scatter_opts_t *opts,
                            mmp_request_t **req);
/* sendcounts and displs (elements) are read at the root only. */
MMP_EXTERN int mmp_scatterv(const void *sendbuf, const size_t *sendcounts,
                            const size_t *displs, void *recvbuf,
                            size_t recvcount, mmp_type_t type, int root,
                            mmp_comm_t *comm);
MMP_EXTERN int mmp_iscatterv(const void *sendbuf, const size_t *sendcounts,
                             const size_t *displs, void *recvbuf,
                             size_t recvcount, mmp_type_t type, int root,
                             mmp_comm_t *comm, const mmp_scatter_opts_t *opts,
                             mmp_request_t **req);

/* Every rank's sendcount elements, in rank order, in every recvbuf.
 * MMP_IN_PLACE: each rank's block is already at its place in recvbuf. */
MMP_EXTERN int mmp_allgather(const void *sendbuf, size_t sendcount,
                             void *recvbuf, size_t recvcount, mmp_type_t type,
                             mmp_comm_t *comm);
MMP_EXTERN int mmp_allgather_ex(const void *sendbuf, size_t sendcount,
                                void *recvbuf, size_t recvcount,
                                mmp_type_t type, mmp_comm_t *comm,
                                const mmp_allgather_opts_t *opts);
MMP_EXTERN int mmp_iallgather(const void *sendbuf, size_t sendcount,
                              void *recvbuf, size_t recvcount, mmp_type_t type,
                              mmp_comm_t *comm,
                              const mmp_allgather_opts_t *opts,
                              mmp_request_t **req);
/* Rank i's block is recvcounts[i] elements at displs[i]; every rank
 * passes the same arrays. */
MMP_EXTERN int mmp_allgatherv(const void *sendbuf, size_t sendcount,
                              void *recvbuf, const size_t *recvcounts,
                              const size_t *displs, mmp_type_t type,
                              mmp_comm_t *comm);
MMP_EXTERN int mmp_iallgatherv(const void *sendbuf, size_t sendcount,
                               void *recvbuf, const size_t *recvcounts,
                               const size_t *displs, mmp_type_t type,
                               mmp_comm_t *comm,
                               const mmp_allgather_opts_t *opts,
                               mmp_request_t **req);

/* Block j of rank i's sendbuf lands as block i of rank j's recvbuf
 * (sendcount = recvcount elements). MMP_IN_PLACE: sendbuf is recvbuf. */
MMP_EXTERN int mmp_alltoall(const void *sendbuf, size_t sendcount,
                            void *recvbuf, size_t recvcount, mmp_type_t type,
                            mmp_comm_t *comm);
MMP_EXTERN int mmp_alltoall_ex(const void *sendbuf, size_t sendcount,
                               void *recvbuf, size_t recvcount, mmp_type_t type,
                               mmp_comm_t *comm,
                               const mmp_alltoall_opts_t *opts);
MMP_EXTERN int mmp_ialltoall(const void *sendbuf, size_t sendcount,
                             void *recvbuf, size_t recvcount, mmp_type_t type,
                             mmp_comm_t *comm, const mmp_alltoall_opts_t *opts,
                             mmp_request_t **req);
/* Counts and displacements in elements, p entries each. */
MMP_EXTERN int mmp_alltoallv(const void *sendbuf, const size_t *sendcounts,
                             const size_t *sdispls, void *recvbuf,
                             const size_t *recvcounts, const size_t *rdispls,
                             mmp_type_t type, mmp_comm_t *comm);
MMP_EXTERN int mmp_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                              const size_t *sdispls, void *recvbuf,
                              const size_t *recvcounts, const size_t *rdispls,
                              mmp_type_t type, mmp_comm_t *comm,
                              const mmp_alltoall_opts_t *opts,
                              mmp_request_t **req);

/* Non-blocking barrier: *req completes once every rank has called it. */
MMP_EXTERN int mmp_ibarrier(mmp_comm_t *comm, mmp_request_t **req);

/*
 * What AUTO would run in a blocking call of collective `coll` on `comm`
 * with `count`
 * elements of `type` per rank (reductions: the vector; the others: one
 * block; a broadcast: count bytes of MMP_BYTE) and operation `op` (0 for
 * data movement), if this rank were the root: fills out->algorithm and
 * the options it settled (segment, radix, groups, inner, outer; 0 or
 * NULL where the algorithm takes none), mode and timeout_ms 0. Where
 * MINIMP_<COLLECTIVE>_ALG names an algorithm, that one with its options.
 * A broadcast's AUTO can still turn to an arrival-aware algorithm from
 * 64 KiB on (mmp_bcast_last says what ran). For mmp_bcast_s2p,
 * mmp_s2p_select. Local: mmp_init decided whether multicast works
 * (docs/design/auto.md, "Multicast"). Returns 0, MMP_EINVAL,
 * MMP_ENOTINIT or MMP_ECOMM.
 */
MMP_EXTERN int mmp_coll_select(mmp_comm_t *comm, int coll, size_t count,
                               mmp_type_t type, mmp_op_t op,
                               mmp_coll_opts_t *out);

/* ---- s-to-p broadcast -------------------------------------------------- */

/*
 * s of the p ranks each contribute one message (of any length, 0
 * included) and every rank receives all s of them, concatenated in the
 * order of their source ranks ([Hambrusch et al. 1998]). It is
 * MPI_Allgatherv where ranks may take no part as senders. docs/
 * algorithms.md gives every algorithm's cost.
 */

/* In `lens` and `out_lens`: this rank contributes no message. */
#define MMP_S2P_NONE ((size_t)-1)

/*
 * s-to-p broadcast over `comm`. Collective: every rank calls it.
 *  - `is_source`: 1 if this rank contributes `sendlen` bytes of `sendbuf`
 *    (sendlen may be 0), 0 if it contributes nothing (then sendbuf and
 *    sendlen are ignored). The message is copied during the call.
 *  - `recvbuf` receives all messages in source-rank order, up to `recvcap`
 *    bytes. If they need more, the first recvcap bytes are stored, the
 *    collective still completes everywhere, and this rank gets
 *    MMP_ETRUNC. recvbuf belongs to the library until the call returns
 *    (until the request completes for mmp_ibcast_s2p).
 *  - `lens`: NULL, or p entries known to every rank alike (the paper's
 *    assumption): rank i's message length, or MMP_S2P_NONE. With NULL the
 *    collective's first step exchanges the lengths: a Br_Lin s-to-p of 8
 *    bytes from every rank, ceil(log2 p) rounds, about ceil(log2 p) alpha
 *    + 8 (p - 1) beta.
 *    Lengths that differ between ranks are an error the library detects
 *    only as far as the messages disagree (MMP_EMISMATCH); disagreeing
 *    about who is a source may hang, as in MPI.
 *  - `out_lens`: NULL, or p entries that receive every rank's length or
 *    MMP_S2P_NONE (before the data arrives, for mmp_ibcast_s2p).
 *  - `opts`: NULL for all defaults.
 * The caller keeps ownership of every pointer. Returns 0, MMP_EINVAL (bad
 * arguments, lens[rank] not matching is_source/sendlen, rows not
 * dividing p), MMP_ENOTINIT, MMP_ECOMM, MMP_ETOOBIG (lengths overflow),
 * MMP_ETRUNC, MMP_ENOMEM, MMP_EPEERLOST, MMP_ETIMEDOUT or MMP_EMISMATCH.
 */
MMP_EXTERN int mmp_bcast_s2p(const void *sendbuf, size_t sendlen, int is_source,
                             void *recvbuf, size_t recvcap, const size_t *lens,
                             size_t *out_lens, mmp_comm_t *comm,
                             const mmp_s2p_opts_t *opts);

/* Non-blocking form: *req completes (mmp_wait/mmp_test) when this rank
 * holds every message; its status.bytes is their total. With lens ==
 * NULL the lengths are exchanged as the collective's first step, after
 * the call returns (no start waits for other ranks), and out_lens is
 * filled when they are in; errors that depend on them (MMP_ETOOBIG,
 * MMP_ENOTSUP) then complete *req instead of failing the call. */
MMP_EXTERN int mmp_ibcast_s2p(const void *sendbuf, size_t sendlen,
                              int is_source, void *recvbuf, size_t recvcap,
                              const size_t *lens, size_t *out_lens,
                              mmp_comm_t *comm, const mmp_s2p_opts_t *opts,
                              mmp_request_t **req);

/* What AUTO would run for these lengths (p entries, as above), or the
 * algorithm MINIMP_S2P_ALG names: fills out->algorithm and out->rows, as
 * mmp_coll_select does. Local. */
MMP_EXTERN int mmp_s2p_select(mmp_comm_t *comm, const size_t *lens,
                              mmp_s2p_opts_t *out);

/* The source distributions of [Hambrusch et al. 1998], section 4, for tests and
 * benchmarks. */
enum {
  MMP_S2P_DIST_ROW = 0,    /* R(s): evenly spaced full rows */
  MMP_S2P_DIST_COL = 1,    /* C(s): evenly spaced full columns */
  MMP_S2P_DIST_EQUAL = 2,  /* E(s): every p/s-th rank */
  MMP_S2P_DIST_DIAG_R = 3, /* Dr(s): evenly spaced right diagonals */
  MMP_S2P_DIST_DIAG_L = 4, /* Dl(s): evenly spaced left diagonals */
  MMP_S2P_DIST_BAND = 5,   /* B(s): ceil(c/r) bands of diagonals */
  MMP_S2P_DIST_CROSS = 6,  /* Cr(s): rows and columns, half each */
  MMP_S2P_DIST_SQUARE = 7, /* Sq(s): a ceil(sqrt s) square block */
  MMP_S2P_DIST_COUNT = 8
};

/*
 * Marks the s sources of distribution `dist` on p ranks seen as a grid of
 * `rows` rows (0: as mmp_s2p_opts_t.rows), row-major: is_source[i] = 1
 * for exactly s ranks, 0 for the others (p entries, written by the
 * call). Returns 0 or MMP_EINVAL (bad dist, s < 0 or s > p, rows not
 * dividing p).
 */
MMP_EXTERN int mmp_s2p_dist(int dist, int s, int p, int rows,
                            unsigned char *is_source);
/* "row", "col", "equal", "diag_r", "diag_l", "band", "cross", "square";
 * NULL for an unknown number. */
MMP_EXTERN const char *mmp_s2p_dist_name(int dist);
/* The number of a distribution name, or MMP_EINVAL. */
MMP_EXTERN int mmp_s2p_dist_from_name(const char *name);

#ifndef MMP_NO_DEPRECATED
/*
 * Deprecated: the names programs used when algorithms were numbers. Each
 * now stands for its algorithm's name, so that assigning one to
 * opts.algorithm, inner or outer chooses as before; a name the library
 * returns is compared with strcmp, not ==. Define MMP_NO_DEPRECATED to
 * leave them out.
 */
#define MMP_BCAST_AUTO ((const char *)0)
#define MMP_BCAST_FLAT "flat"
#define MMP_BCAST_CHAIN "chain"
#define MMP_BCAST_PIPELINE "pipeline"
#define MMP_BCAST_BINARY "binary"
#define MMP_BCAST_SPLIT_BINARY "split_binary"
#define MMP_BCAST_BINOMIAL "binomial"
#define MMP_BCAST_SCATTER_RING "scatter_ring"
#define MMP_BCAST_SCATTER_RD "scatter_rd"
#define MMP_BCAST_HIERARCHICAL "hierarchical"
#define MMP_BCAST_SYMMETRIC "symmetric"
#define MMP_BCAST_ARRIVAL_B "arrival_b"
#define MMP_BCAST_ARRIVAL_NB "arrival_nb"
#define MMP_BCAST_KNOMIAL "knomial"
#define MMP_BCAST_NODE "node"
#define MMP_BCAST_MULTICAST "multicast"
#define MMP_ALLREDUCE_AUTO ((const char *)0)
#define MMP_ALLREDUCE_RECURSIVE_DOUBLING "recursive_doubling"
#define MMP_ALLREDUCE_RING "ring"
#define MMP_ALLREDUCE_RING_SEGMENTED "ring_segmented"
#define MMP_ALLREDUCE_RABENSEIFNER "rabenseifner"
#define MMP_ALLREDUCE_REDUCE_BCAST "reduce_bcast"
#define MMP_ALLREDUCE_HIERARCHICAL "hierarchical"
#define MMP_REDUCE_AUTO ((const char *)0)
#define MMP_REDUCE_BINOMIAL "binomial"
#define MMP_REDUCE_PIPELINE "pipeline"
#define MMP_REDUCE_RABENSEIFNER "rabenseifner"
#define MMP_REDUCE_HIERARCHICAL "hierarchical"
#define MMP_REDUCE_KNOMIAL "knomial"
#define MMP_REDUCE_SCATTER_AUTO ((const char *)0)
#define MMP_REDUCE_SCATTER_RING "ring"
#define MMP_REDUCE_SCATTER_HALVING "halving"
#define MMP_REDUCE_SCATTER_PAIRWISE "pairwise"
#define MMP_SCAN_AUTO ((const char *)0)
#define MMP_SCAN_LINEAR "linear"
#define MMP_SCAN_RECURSIVE_DOUBLING "recursive_doubling"
#define MMP_GATHER_AUTO ((const char *)0)
#define MMP_GATHER_FLAT "flat"
#define MMP_GATHER_BINOMIAL "binomial"
#define MMP_SCATTER_AUTO ((const char *)0)
#define MMP_SCATTER_FLAT "flat"
#define MMP_SCATTER_BINOMIAL "binomial"
#define MMP_ALLGATHER_AUTO ((const char *)0)
#define MMP_ALLGATHER_RING "ring"
#define MMP_ALLGATHER_BRUCK "bruck"
#define MMP_ALLGATHER_RECURSIVE_DOUBLING "recursive_doubling"
#define MMP_ALLGATHER_S2P "s2p"
#define MMP_ALLTOALL_AUTO ((const char *)0)
#define MMP_ALLTOALL_PAIRWISE "pairwise"
#define MMP_ALLTOALL_BRUCK "bruck"
#define MMP_ALLTOALL_LINEAR "linear"
#define MMP_S2P_AUTO ((const char *)0)
#define MMP_S2P_2STEP "2step"
#define MMP_S2P_ALLTOALL "alltoall"
#define MMP_S2P_BR_LIN "br_lin"
#define MMP_S2P_BR_XY_SOURCE "br_xy_source"
#define MMP_S2P_BR_XY_DIM "br_xy_dim"
#define MMP_S2P_REPOS_LIN "repos_lin"
#define MMP_S2P_REPOS_XY_SOURCE "repos_xy_source"
#define MMP_S2P_PART_LIN "part_lin"
#define MMP_S2P_PART_XY_SOURCE "part_xy_source"
#define MMP_S2P_RING "ring"
#define MMP_S2P_MULTICAST "multicast"
#endif /* MMP_NO_DEPRECATED */

#ifdef __cplusplus
}
#endif
#endif /* MINIMP_H */
