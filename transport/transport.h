/* SPDX-License-Identifier: MIT */
/*
 * The narrow interface between libminimp's runtime and its transport.
 *
 * A transport moves frames (frame.h) between the ranks of one job over one
 * full-duplex connection per pair of ranks. It authenticates every
 * connection with the job key, validates every header before it touches a
 * byte of payload, and reports what it receives through callbacks. It knows
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
  uint64_t *activity; /* loop context: bumped whenever bytes move; or NULL */
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
  uint64_t offset_; /* bytes of header+payload already written */
  int encoded_;
};

typedef struct mmp__tp_callbacks_s {
  void *ctx;
  /* The handshake with `peer` completed; frames may flow on `conn`. */
  void (*peer_up)(void *ctx, int peer, mmp__tp_conn_t *conn);
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
   * Returns 0 and *out, or MMP_ENOMEM / MMP_EINVAL.
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
   * Loop context. Closes every handle; `done(arg)` runs in loop context once
   * all are closed, after which `tp` is freed. No other callback runs after
   * this is called.
   */
  void (*destroy)(mmp__tp_t *tp, void (*done)(void *arg), void *arg);
} mmp__tp_ops_t;

extern const mmp__tp_ops_t mmp__tcp_ops;

/* The socket of a TCP connection, for tests that inspect its options. */
int mmp__tcp_conn_fd(const mmp__tp_conn_t *conn);

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
