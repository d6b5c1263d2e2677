/* SPDX-License-Identifier: MIT */
/*
 * The narrow interface between libminimp's runtime and its transport.
 *
 * A transport moves frames (frame.h) between the ranks of one job over one
 * full-duplex connection per pair of ranks. It authenticates every
 * connection by proving knowledge of the job key without sending it
 * (auth.h), may seal every frame after that, validates every header before
 * it touches a byte of payload, and reports what it receives through
 * callbacks. It knows
 * nothing of matching, requests or protocols: those belong to the runtime.
 *
 * Threading. A transport lives on one uv_loop_t. Every operation marked
 * "loop context" must be called by the thread currently running that loop
 * (the runtime hands the loop between threads, see runtime/progress.c), and
 * every callback runs in loop context. write_direct() is the one exception:
 * it may be called from any thread, provided the caller serialises all
 * writes to that connection (see its contract).
 */
#ifndef MMP_TRANSPORT_TRANSPORT_H
#define MMP_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "frame.h"
#include "util.h"

typedef struct mmp__tp_s mmp__tp_t;
typedef struct mmp__tp_conn_s mmp__tp_conn_t;

typedef struct mmp__tp_config_s {
  int rank;
  int size;
  uint8_t key[MMP__JOB_KEY_LEN];
  uint64_t max_frame;            /* largest payload accepted, bytes */
  unsigned handshake_timeout_ms; /* an unfinished handshake is dropped */
  unsigned max_pending;          /* unauthenticated connections at once */
  unsigned user_timeout_ms;      /* TCP_USER_TIMEOUT + keepalive; 0 off */
  int encrypt; /* TCP: seal every frame after the handshake (MINIMP_ENCRYPT);
                  a peer that does not agree fails the handshake */
  uint64_t *activity; /* loop context: bumped whenever bytes move; or NULL */
  /* Shared memory only (shm.c); the TCP transport ignores them. */
  const int *local;    /* world ranks of the job on this host that use
                          shared memory, ascending, this rank included;
                          copied by create() */
  int nlocal;          /* how many */
  uint64_t ring_bytes; /* capacity of each ring this rank receives on: a
                          power of two, MMP__SHM_RING_MIN..MMP__SHM_RING_MAX */
  int single_copy;     /* 1: large DATA payloads by cross-memory attach
                          where the kernel allows it; 0: all through rings */
} mmp__tp_config_t;

/* Where the payload of an incoming frame goes. Bytes beyond `len` are read
 * and discarded; buf may be NULL when len is 0. */
typedef struct mmp__sink_s {
  void *buf;
  size_t len;
} mmp__sink_t;

/*
 * An outgoing frame. The caller owns it and keeps it (and the payload it
 * points at) alive until its callback runs, or until write_direct() reports
 * it completely written. Fill `hdr` and `payload`/`npayload`; the transport
 * assigns hdr.seq and hdr.src and encodes the header when the frame is
 * committed to the wire, exactly once.
 */
typedef struct mmp__tp_write_s mmp__tp_write_t;
typedef void (*mmp__tp_write_cb)(mmp__tp_write_t *w, int status);

struct mmp__tp_write_s {
  mmp__frame_hdr_t hdr;
  uv_buf_t payload[2];
  unsigned npayload;
  mmp__tp_write_cb cb;
  void *data; /* the caller's */
  /* transport private */
  uv_write_t req_;
  uint8_t wire_[MMP__FRAME_HDR_SIZE];
  uint64_t offset_; /* bytes of header+payload (sealed: of the sealed
                       records) already written */
  int encoded_;
  uint8_t *ct_; /* tcp, sealed: the records of this frame, owned by
                   the transport while the frame is being written */
  uint64_t ctlen_;
  mmp__list_t node_; /* shm: in a queue of the connection */
  int status_;       /* shm: the result its callback will report */
};

typedef struct mmp__tp_callbacks_s {
  void *ctx;
  /* The handshake with `peer` completed; frames may flow on `conn`. */
  void (*peer_up)(void *ctx, int peer, mmp__tp_conn_t *conn);
  /* May be NULL. A connecting side proved it holds the key and claims to
   * be `peer`: return 0 to go on, or a static reason to refuse it as bad
   * input (a rank that must use another transport). */
  const char *(*refuse)(void *ctx, int peer);
  /*
   * A valid header arrived from `peer`. Fill *sink and return 0, or return a
   * negative code to drop the connection (peer_down follows). `h` is only
   * valid during the call. The payload goes into *sink; frame_done follows
   * once all h->len payload bytes were read.
   */
  int (*frame)(void *ctx, int peer, const mmp__frame_hdr_t *h,
               mmp__sink_t *sink);
  /* The payload of the frame announced last on this connection is in place.
   * Return 0, or a negative code to drop the connection. */
  int (*frame_done)(void *ctx, int peer, const mmp__frame_hdr_t *h);
  /*
   * The connection to `peer` is gone (EOF, error, protocol violation, failed
   * connect). `reason` is a static or transient string, valid during the
   * call. After this no callback mentions the old connection again, and its
   * mmp__tp_conn_t must not be used.
   */
  void (*peer_down)(void *ctx, int peer, int err, const char *reason);
  /*
   * May be NULL. A valid header and its whole payload, which the transport
   * holds in up to two pieces (p0, n0 then p1, n1; n0 + n1 == h->len),
   * valid during the call: the same as frame, copying the payload into
   * the sink it would fill, then frame_done. Return 0, or a negative code
   * to drop the connection. Transports use it for small frames, whose
   * handling is mostly the two calls' bookkeeping.
   */
  int (*frame_whole)(void *ctx, int peer, const mmp__frame_hdr_t *h,
                     const void *p0, size_t n0, const void *p1, size_t n1);
} mmp__tp_callbacks_t;

typedef struct mmp__tp_stats_s {
  uint64_t rejected; /* connections refused before or during handshake */
  uint64_t dropped;  /* established connections closed for bad input */
  uint64_t frames_in;
  uint64_t frames_out;
} mmp__tp_stats_t;

typedef struct mmp__tp_ops_s {
  const char *name;
  /*
   * Loop context. Creates a transport on `loop`. `cfg` and `cb` are copied.
   * Returns 0 and *out, or MMP_ENOMEM / MMP_EINVAL, or MMP_EIO when
   * libsodium cannot start.
   */
  int (*create)(uv_loop_t *loop, const mmp__tp_config_t *cfg,
                const mmp__tp_callbacks_t *cb, mmp__tp_t **out);
  /*
   * Loop context. Listens on `addr` (port 0 picks one) and writes the bound
   * address as "ip:port" / "[ip]:port" into `name`.
   * Returns 0, MMP_EADDRINUSE, MMP_EADDR, MMP_EIO.
   */
  int (*listen)(mmp__tp_t *tp, const struct sockaddr *addr, char *name,
                size_t namelen);
  /*
   * Loop context. Starts a connection to `peer` at `addr`. The outcome is
   * peer_up or peer_down. If a connection to the peer exists or is being
   * made, this does nothing and returns 0.
   * Returns 0, MMP_EINVAL (bad address), MMP_ENOMEM.
   */
  int (*connect)(mmp__tp_t *tp, int peer, const struct sockaddr *addr);
  /*
   * Loop context. Queues `w` behind earlier writes on `conn`; w->cb runs in
   * loop context once the frame was handed to the kernel (status 0) or
   * could not be (negative status). If an error is returned, the callback
   * never runs. Returns 0 or MMP_EPEERLOST.
   */
  int (*write)(mmp__tp_conn_t *conn, mmp__tp_write_t *w);
  /*
   * Any thread. Tries to write `w` at once without blocking. The caller
   * guarantees that no write is queued or in flight on `conn` and that no
   * other thread writes to it meanwhile, and that peer_down has not yet
   * run for it. Returns 1 if the whole frame was written (no callback will
   * run), 0 if only part or none was (pass the same `w` to write() next,
   * before any other frame), never an error: errors surface on write().
   */
  int (*write_direct)(mmp__tp_conn_t *conn, mmp__tp_write_t *w);
  /*
   * Any thread, under write_direct's conditions; NULL where the transport
   * has none. Writes the whole frame `h` (its seq, src and len are the
   * transport's to set) with the `len` bytes at `buf` as payload, now, if
   * it can without waiting: a lighter write_direct for small frames,
   * which needs no mmp__tp_write_t. Returns 1 if the frame was written, 0
   * if nothing was (then use write_direct or write as usual).
   */
  int (*send_inline)(mmp__tp_conn_t *conn, const mmp__frame_hdr_t *h,
                     const void *buf, size_t len);
  /*
   * Loop context. Orderly close: after the queued writes, half-closes the
   * sending side and keeps reading until the peer's EOF (peer_down then
   * reports err 0), or until `timeout_ms` passes.
   */
  void (*shutdown)(mmp__tp_conn_t *conn, unsigned timeout_ms);
  /* Loop context. Closes `conn` at once; peer_down reports `err`. */
  void (*abort)(mmp__tp_conn_t *conn, int err, const char *reason);
  /* Any context. Copies the counters. */
  void (*stats)(mmp__tp_t *tp, mmp__tp_stats_t *out);
  /*
   * Loop context; NULL for a transport that the loop's own polling serves
   * (TCP). Never blocks: moves whatever can move now (incoming frames into
   * their sinks, queued writes into free space, callbacks that are due)
   * and returns 1 if anything did or is ready to, else 0. With `arm` set
   * and nothing to do, it also arms the transport's wake-up before
   * returning 0, so that whatever arrives afterwards makes the loop's next
   * blocking poll return; the arming ends with that poll. The progress
   * engine calls it between its own polls while it spins, and with `arm`
   * right before it lets the loop sleep.
   */
  int (*poll)(mmp__tp_t *tp, int arm);
  /*
   * Loop context; NULL where the peers' scheduling cannot be seen (TCP).
   * Publishes `cpu` as the CPU this rank polls on, and returns the
   * highest world rank among the peers that are not asleep and last
   * polled on that very CPU, or -1 if there is none: such a peer is
   * runnable there and waits for the CPU the caller's polling holds, so
   * the caller should yield it rather than spin. Never blocks.
   */
  int (*cpu_shared)(mmp__tp_t *tp, int cpu);
  /*
   * Any context, lock held by the caller; NULL for "as the runtime says".
   * The payload size of the DATA frames that suits `conn`, given the
   * runtime's (MINIMP_RNDV_CHUNK): a transport that moves large payloads
   * without copying them through its own buffers asks for larger ones,
   * since each frame costs it a round trip.
   */
  uint64_t (*data_chunk)(const mmp__tp_conn_t *conn, uint64_t dflt);
  /*
   * Loop context; NULL for a transport that hands over only whole frames
   * (shm). When a byte last arrived on `conn`, as uv_hrtime() / 10^6 read
   * when it was read, not the loop's cached time; 0 if none did yet. Part
   * of a large payload counts: liveness must not wait for a frame's end.
   */
  uint64_t (*rx_ms)(const mmp__tp_conn_t *conn);
  /*
   * Loop context. Closes every handle; `done(arg)` runs in loop context once
   * all are closed, after which `tp` is freed. No other callback runs after
   * this is called, except those of writes still held, which complete with
   * an error.
   */
  void (*destroy)(mmp__tp_t *tp, void (*done)(void *arg), void *arg);
} mmp__tp_ops_t;

extern const mmp__tp_ops_t mmp__tcp_ops;
extern const mmp__tp_ops_t mmp__shm_ops;

/* The socket of a TCP connection, for tests that inspect its options. */
int mmp__tcp_conn_fd(const mmp__tp_conn_t *conn);

/* ---- Shared memory (transport/shm.c) ----------------------------------
 *
 * mmp__shm_ops moves frames between the ranks of one host through rings in
 * shared memory (docs/design/transport.md, "Ranks on the same host"). Its pairs
 * are set up once, at init, in three steps, each of which every local rank
 * finishes before any starts the next (the runtime makes sure of it
 * through the rendezvous):
 *   1. create() makes this rank's segment and doorbell, named from the job
 *      key and the rank (mmp__shm_names);
 *   2. mmp__shm_attach() maps each other local rank's segment;
 *   3. mmp__shm_unlink() removes this rank's names, and mmp__shm_start()
 *      brings up the pairs both sides attached.
 * listen() and connect() have nothing to do: listen returns MMP_EINVAL and
 * connect 0 (the pair is up, or was never agreed on).
 */

#define MMP__SHM_RING_MIN (4u * 1024)
#define MMP__SHM_RING_MAX (1u << 30)

/*
 * Loop context. Maps the segment of local rank `peer` (a world rank in
 * cfg.local), checks that it is this job's (owner, mode 0600, size,
 * header) and opens its doorbell. `same_pid_ns`: the peer's process ids
 * mean the same here, so its death can be watched and its memory read
 * directly (if the kernel allows; that is tried now). Returns 0,
 * MMP_EINVAL (not a local rank), MMP_EIO (logged: missing, foreign or
 * malformed); the pair then stays unused and the peer should use TCP.
 */
int mmp__shm_attach(mmp__tp_t *tp, int peer, int same_pid_ns);

/* Loop context. Removes this rank's segment and doorbell names (mapped
 * memory and open descriptors stay valid). Idempotent. */
void mmp__shm_unlink(mmp__tp_t *tp);

/* Loop context. Brings up the pair with `peer`, which both sides attached:
 * peer_up runs before it returns. Returns 0 or MMP_EINVAL (not
 * attached). */
int mmp__shm_start(mmp__tp_t *tp, int peer);

/* Loop context. Forgets an attached pair that will not be started (the
 * peer could not attach ours): unmaps its segment. */
void mmp__shm_detach(mmp__tp_t *tp, int peer);

/* What the shared-memory transport did, for tests and benchmarks. */
typedef struct mmp__shm_stats_s {
  int peers;           /* pairs up */
  uint64_t ring_bytes; /* capacity of this rank's rings */
  uint64_t bytes_in;   /* frame bytes (headers included) read from rings */
  uint64_t bytes_out;  /* frame bytes written into rings */
  uint64_t pulled;     /* DATA payload bytes read from a peer's memory */
  uint64_t pull_frames;
  uint64_t bells;  /* doorbells rung (a sleeping peer woken) */
  uint64_t arms;   /* times the loop was let sleep armed */
  int single_copy; /* pairs whose DATA this rank pulls by single copy */
} mmp__shm_stats_t;

/* Any context. */
void mmp__shm_stats(mmp__tp_t *tp, mmp__shm_stats_t *out);

/* Tests only: makes this rank misbehave towards `peer` as a corrupted
 * process would, by writing `value` into an index in shared memory: the
 * tail of the ring we write into it (`which` 0), the head (1) or the pull
 * count (2) of the ring it writes into us; or (3) by writing 64 bytes of
 * garbage into its ring. Loop context; (3) writes the ring, so the caller
 * serialises it with the pair's writes, as for write(). Returns 0 or
 * MMP_EINVAL. */
int mmp__shm_debug_corrupt(mmp__tp_t *tp, int peer, int which, uint64_t value);

/* ---- Node segments (transport/shm_coll.c) --------------------------------
 *
 * A node segment is one shared mapping that all the ranks of a
 * communicator on one host use for its collectives (runtime/node_coll.c
 * lays it out). Its creator names it, the others map it by that name and
 * check it, and the creator removes the name once every one has it, so
 * nothing outlives the processes.
 */

/* A mapped node segment. */
typedef struct mmp__shm_map_s {
  void *base;
  size_t bytes;
} mmp__shm_map_t;

/* Longest name mmp__shm_map_create writes, with its NUL. */
#define MMP__SHM_MAP_NAME 64

/*
 * Any thread. Creates and maps a zeroed segment of `bytes` bytes, mode
 * 0600, under a fresh name made from `tag` (hex digits of the caller's)
 * and random bits, written to name[MMP__SHM_MAP_NAME]. 0, MMP_ENOMEM or
 * MMP_EIO (logged).
 */
int mmp__shm_map_create(const char *tag, size_t bytes, mmp__shm_map_t *out,
                        char name[MMP__SHM_MAP_NAME]);

/*
 * Any thread. Maps the segment `name` another rank created, after
 * checking that it is an object of this user with mode 0600 and exactly
 * `bytes` bytes: the name comes from a message, so anything else is
 * refused. 0, MMP_EINVAL (a malformed name) or MMP_EIO (logged: missing,
 * foreign or of the wrong size).
 */
int mmp__shm_map_attach(const char *name, size_t bytes, mmp__shm_map_t *out);

/* Any thread. Removes a name (the mappings stay valid). Idempotent. */
void mmp__shm_map_unlink(const char *name);

/* Any thread. Unmaps `m` (zeroed: nothing to do). */
void mmp__shm_map_free(mmp__shm_map_t *m);

/* ---- Addresses (transport/addr.c) -------------------------------------- */

/*
 * Parses "host:port", "ip:port" or "[ipv6]:port" (host names are resolved).
 * Returns 0, MMP_EINVAL or MMP_EADDR.
 */
int mmp__addr_parse(const char *s, struct sockaddr_storage *out);

/* Formats an address as "ip:port" or "[ip]:port". Returns 0 or MMP_EINVAL. */
int mmp__addr_format(const struct sockaddr *sa, char *out, size_t len);

/*
 * Chooses the local address to listen on (port 0).
 *  spec NULL or "": the local address the kernel uses to reach `toward`
 *                   (which may be NULL: then 127.0.0.1).
 *  "eth0":          the first IPv4 address of that interface, else its first
 *                   global IPv6 address.
 *  "10.1.0.0/16", "fd00::/8": the first local address inside the prefix.
 *  "10.1.2.3", "::1": that literal address, which must be local.
 * Returns 0, or MMP_EADDR when nothing matches, MMP_EINVAL when malformed.
 */
int mmp__addr_select(const char *spec, const struct sockaddr *toward,
                     struct sockaddr_storage *out);

#endif /* MMP_TRANSPORT_TRANSPORT_H */
