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
 * and are not modified.
 * Returns 0, MMP_EALREADY, MMP_EENV, MMP_EBOOT, MMP_EADDR, MMP_ENOMEM.
 */
MMP_EXTERN int mmp_init(int *argc, char ***argv);

/* Flags for mmp_init_ex(). */
#define MMP_INIT_HOST_RENDEZVOUS 1u /* this process serves `rendezvous` */

/*
 * Initialises the library without minimprun. All `size` processes call it
 * with their own distinct `rank`, the same `rendezvous` address
 * ("host:port", "[v6addr]:port") and the same `job_key` (32 hex digits).
 * With MMP_INIT_HOST_RENDEZVOUS, this process also serves the rendezvous on
 * that address for the whole job (it must then stay alive until every rank
 * has finalised). `iface` selects the address to listen on (interface name
 * or CIDR); NULL picks the address that reaches the rendezvous.
 * The strings are only read during the call.
 * Returns as mmp_init(), plus MMP_EINVAL for bad arguments.
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
 * Aborts the whole job: minimprun (or the rendezvous host) stops every rank
 * and exits with `code`. Never returns.
 */
MMP_EXTERN MMP_NORETURN void mmp_abort(int code);

/* Seconds since an arbitrary point, monotonic, sub-microsecond resolution.
 * The clock is the same for every process on one machine. */
MMP_EXTERN double mmp_wtime(void);

/* ---- Communicators ----------------------------------------------------- */

/* The communicator of all ranks; NULL before mmp_init(). Not to be freed. */
MMP_EXTERN mmp_comm_t *mmp_comm_world(void);
/* Returns the caller's rank in `comm`, or MMP_ECOMM. */
MMP_EXTERN int mmp_comm_rank(const mmp_comm_t *comm);
/* Returns the number of ranks in `comm`, or MMP_ECOMM. */
MMP_EXTERN int mmp_comm_size(const mmp_comm_t *comm);

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
 * A longer message fills the buffer and returns MMP_ETRUNC.
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
 * receiving it.
 */
MMP_EXTERN int mmp_probe(int source, int tag, mmp_comm_t *comm,
                         mmp_status_t *status);
/* Nonblocking probe: *flag is 1 and *status filled if a message matches. */
MMP_EXTERN int mmp_iprobe(int source, int tag, mmp_comm_t *comm, int *flag,
                          mmp_status_t *status);

#ifdef __cplusplus
}
#endif
#endif /* MINIMP_H */
