/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap ("rendezvous") service of a job: a small key-value store
 * with barriers, in the spirit of PMI, reached over TCP. It carries each
 * rank's listening address, the init and finalize barriers, aborts and
 * failure notices. minimprun serves it; an embedding program can serve it
 * from one rank (MMP_INIT_HOST_RENDEZVOUS) or from an outside process.
 *
 * This header is the one thing the launcher shares with the library: the
 * wire codec (boot_wire.c), the server (boot_server.c) and the client
 * (boot_client.c). Everything runs on a libuv loop; functions marked "loop
 * context" must be called by the thread running that loop, and callbacks
 * run there.
 *
 * Wire format. Every message is a 16-byte little-endian header followed by
 * `len` body bytes:
 *   off 0  u32 magic "MMPB"      off 4 u8 version (2)   off 5 u8 type
 *   off 6  u16 reserved (0)      off 8 u32 request id   off 12 u32 len
 * Strings in bodies are u16 length + bytes (no NUL); blobs are u32 length +
 * bytes. Every length is checked against the remaining body and against
 * MMP__BOOT_MAX_BODY before anything is allocated.
 *
 * The handshake proves the job key without sending it (auth.h): the client
 * sends HELLO as soon as it is connected and the server CHALLENGE as soon
 * as it accepted, each with a fresh nonce; the client answers with PROOF, a
 * MAC over both bodies, and the server, once that verifies, with WELCOME,
 * its own MAC over them. The server looks at what HELLO claims (rank,
 * size) only after the proof. All of it must happen within the handshake
 * timeout; anything else, a wrong key, a bad or duplicate rank, closes the
 * connection with a logged reason.
 *
 * Sealing. CHALLENGE's flags say whether the server seals (MINIMP_ENCRYPT,
 * minimprun --encrypt). If it does, every byte after PROOF (client) and
 * after WELCOME (server) is a sealed record (auth.h) under keys of this
 * connection, derived from the job key and the transcript, which holds the
 * flags, so that stripping them breaks both proofs. A client follows the
 * server's flag and logs a different setting of its own; the ranks'
 * connections then refuse the mismatch (tcp.c).
 *
 * Messages (c = client, s = server):
 *  HELLO    c->s  nonce[32] rank u32 size u32 pid u32 host str
 *  CHALLENGE s->c nonce[32] flags u32 (MMP__BOOT_SEAL)
 *  PROOF    c->s  mac[32]: the client's proof over HELLO and CHALLENGE
 *  WELCOME  s->c  mac[32]: the server's proof; requests may follow
 *  PUT      c->s  name str, value blob          (no reply)
 *  GETALL   c->s  name str   -> VALUES s->c: count u32, count x blob, one per
 *                 rank in rank order; sent once every rank has PUT name.
 *  GET      c->s  rank u32, name str -> VALUES with count 1, once available.
 *  FENCE    c->s  epoch u32  -> FENCE_DONE s->c (same request id) once every
 *                 rank has entered that epoch.
 *  ABORT    c->s  code i32, message str          (no reply)
 *  SUSPECT  c->s  rank u32, reason str          (no reply): the sender lost
 *                 contact with `rank` (silence past the peer timeout, a
 *                 reset); the server then treats that rank as lost.
 *  BYE      c->s  (empty): the rank finished cleanly; it closes next.
 *  EVENT    s->c  kind u32, rank u32, code i32, message str
 *  ERROR    s->c  code i32, message str; the server closes afterwards.
 */
#ifndef MMP_TRANSPORT_BOOT_H
#define MMP_TRANSPORT_BOOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "auth.h" /* MMP__JOB_KEY_LEN */

#define MMP__BOOT_MAGIC 0x42504d4du /* "MMPB" */
/* 2: the key never travels; a challenge-response handshake proves it. */
/* 3: CHALLENGE carries flags, and MMP__BOOT_SEAL seals what follows the
 * handshake. */
#define MMP__BOOT_VERSION 3
#define MMP__BOOT_SEAL 1 /* CHALLENGE flags: seal after the handshake */
#define MMP__BOOT_CHALLENGE_LEN (MMP__NONCE_LEN + 4)
#define MMP__BOOT_HDR_SIZE 16
#define MMP__BOOT_MAX_BODY (1u << 20) /* default cap on one message body */
#define MMP__BOOT_MAX_NAME 64
#define MMP__BOOT_MAX_VALUE 4096

typedef enum mmp__boot_type {
  MMP__B_HELLO = 1,
  MMP__B_WELCOME = 2,
  MMP__B_PUT = 3,
  MMP__B_GETALL = 4,
  MMP__B_GET = 5,
  MMP__B_VALUES = 6,
  MMP__B_FENCE = 7,
  MMP__B_FENCE_DONE = 8,
  MMP__B_ABORT = 9,
  MMP__B_BYE = 10,
  MMP__B_EVENT = 11,
  MMP__B_ERROR = 12,
  MMP__B_SUSPECT = 13,
  MMP__B_CHALLENGE = 14,
  MMP__B_PROOF = 15,
  MMP__B_TYPE_MAX = 15
} mmp__boot_type_t;

/* EVENT kinds. */
enum {
  MMP__BOOT_EV_RANK_FAILED = 1, /* `rank` died or lost its connection */
  MMP__BOOT_EV_ABORT = 2,       /* the job is being aborted with `code` */
  MMP__BOOT_EV_ABORTED = 3      /* `rank` called mmp_abort(`code`) */
};

typedef struct mmp__boot_hdr_s {
  uint8_t type;
  uint32_t id;
  uint32_t len;
} mmp__boot_hdr_t;

/* ---- Codec (boot_wire.c): no sockets, unit-tested on its own. ---------- */

void mmp__boot_hdr_encode(const mmp__boot_hdr_t *h,
                          uint8_t out[MMP__BOOT_HDR_SIZE]);
/* Validates magic, version, type, reserved and len <= max_body.
 * Returns 0, MMP_EPROTO or MMP_ETOOBIG with *why set. */
int mmp__boot_hdr_decode(const uint8_t in[MMP__BOOT_HDR_SIZE],
                         uint32_t max_body, mmp__boot_hdr_t *h,
                         const char **why);

/* A bounds-checked cursor over a received body. Any read past the end sets
 * `bad` and yields zeros / empty strings; check it once at the end. */
typedef struct mmp__boot_rd_s {
  const uint8_t *p;
  size_t left;
  int bad;
} mmp__boot_rd_t;

void mmp__boot_rd_init(mmp__boot_rd_t *r, const void *body, size_t len);
uint32_t mmp__boot_rd_u32(mmp__boot_rd_t *r);
/* Points *s at the string bytes inside the body (not NUL-terminated). */
size_t mmp__boot_rd_str(mmp__boot_rd_t *r, const char **s, size_t max);
size_t mmp__boot_rd_blob(mmp__boot_rd_t *r, const uint8_t **b, size_t max);
/* Points at the next `n` bytes of a fixed-size field (a nonce, a proof),
 * or returns NULL and marks the cursor bad. */
const uint8_t *mmp__boot_rd_raw(mmp__boot_rd_t *r, size_t n);

/* A growable message being built: header space first, then the body. */
typedef struct mmp__boot_wr_s {
  uint8_t *buf;
  size_t len;
  size_t cap;
  int oom;
} mmp__boot_wr_t;

void mmp__boot_wr_init(mmp__boot_wr_t *w); /* reserves the header */
void mmp__boot_wr_u32(mmp__boot_wr_t *w, uint32_t v);
void mmp__boot_wr_str(mmp__boot_wr_t *w, const char *s, size_t n);
void mmp__boot_wr_blob(mmp__boot_wr_t *w, const void *b, size_t n);
/* Appends `n` bytes of a fixed-size field, without a length. */
void mmp__boot_wr_raw(mmp__boot_wr_t *w, const void *b, size_t n);
/* Fills in the header. Returns 0 or MMP_ENOMEM (then the buffer is freed).
 * On success the caller owns w->buf (w->len bytes) and frees it. */
int mmp__boot_wr_finish(mmp__boot_wr_t *w, uint8_t type, uint32_t id);

/* Reassembles messages from a byte stream: a header, then its body. Both
 * ends of the protocol feed what they read into one of these. */
typedef struct mmp__boot_rx_s {
  uint8_t hbuf[MMP__BOOT_HDR_SIZE];
  size_t hhave;
  mmp__boot_hdr_t hdr; /* the message being received */
  uint8_t *body;       /* a body split across reads, or NULL */
  size_t bhave;
  /* Once sealed (mmp__boot_rx_seal), every byte fed is part of a sealed
   * record (auth.h): a record received in part waits in `rec`, and an
   * opened one is parsed from `plain`. */
  mmp__seal_t *seal;
  uint8_t *rec; /* MMP__REC_MAX + MMP__REC_OVERHEAD bytes */
  size_t rhave;
  uint8_t *plain; /* MMP__REC_MAX bytes */
} mmp__boot_rx_t;

typedef struct mmp__boot_rx_ops_s {
  /* A header arrived in rx->hbuf: decode and check it into rx->hdr (its
   * length must be capped here). Return 0, or an error with *why set. */
  int (*header)(void *ctx, mmp__boot_rx_t *rx, const char **why);
  /* A whole message; `body` (hdr->len bytes) lives only during the call. */
  void (*message)(void *ctx, const mmp__boot_hdr_t *hdr, const uint8_t *body);
  /* The header was refused (its code) or memory ran out: stop reading. */
  void (*error)(void *ctx, int err, const char *why);
  /* 1 once the reader was closed, so that feeding stops. */
  int (*closed)(void *ctx);
} mmp__boot_rx_ops_t;

/* Feeds n bytes. Bodies that arrive whole are passed without a copy. A
 * record that fails to open is reported through ops->error (MMP_EPROTO). */
void mmp__boot_rx_feed(mmp__boot_rx_t *rx, const uint8_t *p, size_t n,
                       const mmp__boot_rx_ops_t *ops, void *ctx);
/* From the next byte on, even the rest of a feed whose ops->message calls
 * this, the stream is sealed records under `key`. Once only. Returns 0 or
 * MMP_ENOMEM. */
int mmp__boot_rx_seal(mmp__boot_rx_t *rx,
                      const uint8_t key[MMP__SESSION_KEY_LEN]);
/* Frees a partly received body and the sealing state. */
void mmp__boot_rx_fini(mmp__boot_rx_t *rx);

/* Replaces the finished message at *buf (*len bytes) by its sealed records
 * under `tx`, for a protocol that seals after its handshake. Returns 0, or
 * MMP_ENOMEM after freeing *buf. */
int mmp__boot_seal_msg(mmp__seal_t *tx, uint8_t **buf, size_t *len);

/* ---- Server (boot_server.c) -------------------------------------------- */

typedef struct mmp__boot_server_s mmp__boot_server_t;

typedef struct mmp__boot_server_cb_s {
  void *ctx;
  /* A rank completed HELLO. */
  void (*rank_joined)(void *ctx, int rank, const char *host, int pid);
  /* A rank's connection ended without BYE (death, crash, cut link). */
  void (*rank_lost)(void *ctx, int rank, const char *reason);
  /* A rank asked to abort the job. */
  void (*abort)(void *ctx, int rank, int code, const char *message);
  /* Every rank sent BYE. */
  void (*all_done)(void *ctx);
} mmp__boot_server_cb_t;

/*
 * Loop context. Serves a job of `size` ranks with `key` on `addr` (port 0
 * picks one); the bound address is written to `name` as "ip:port".
 * Returns 0, MMP_EADDRINUSE, MMP_EADDR, MMP_ENOMEM, MMP_EINVAL.
 */
int mmp__boot_server_start(uv_loop_t *loop, const struct sockaddr *addr,
                           int size, const uint8_t key[MMP__JOB_KEY_LEN],
                           unsigned handshake_timeout_ms,
                           const mmp__boot_server_cb_t *cb,
                           mmp__boot_server_t **out, char *name,
                           size_t namelen);

/* Loop context, right after start, before the loop runs: every connection
 * is sealed after its handshake, and says so in CHALLENGE. Returns 0 or
 * MMP_ENOMEM. */
int mmp__boot_server_seal(mmp__boot_server_t *s);

/* Loop context. Sends EVENT to every connected rank except `except` (-1:
 * none). */
void mmp__boot_server_broadcast(mmp__boot_server_t *s, uint32_t kind, int rank,
                                int code, const char *msg, int except);

/* Loop context. Closes everything; `done(arg)` runs once all handles are
 * closed and `s` is freed. No server callback runs after this call. */
void mmp__boot_server_stop(mmp__boot_server_t *s, void (*done)(void *arg),
                           void *arg);

/* ---- Client (boot_client.c) -------------------------------------------- */

typedef struct mmp__boot_client_s mmp__boot_client_t;

typedef struct mmp__boot_client_cb_s {
  void *ctx;
  /* The server pushed an EVENT. */
  void (*event)(void *ctx, uint32_t kind, int rank, int code, const char *msg);
  /* The connection to the server ended (err < 0), or was closed after BYE
   * (err 0). */
  void (*lost)(void *ctx, int err, const char *reason);
} mmp__boot_client_cb_t;

/* Completion of one request. For GETALL/GET, values[i] (lens[i] bytes) are
 * valid only during the call; count is the number of values. status < 0
 * means the request failed (connection lost, ERROR from server). */
typedef void (*mmp__boot_done_cb)(void *arg, int status, size_t count,
                                  const uint8_t *const *values,
                                  const size_t *lens);

/*
 * Loop context. Connects to the server at `addr`, runs the handshake and
 * calls `done` (count 0) once WELCOME arrived and proved the server holds
 * `key`, or the attempt failed (MMP_EAUTH: the server's proof did not
 * verify). The client
 * object exists from the call on; requests may be queued before WELCOME.
 * `local` (may be NULL) receives the local address of the connection once
 * connected, before `done` runs.
 */
int mmp__boot_client_start(uv_loop_t *loop, const struct sockaddr *addr,
                           const uint8_t key[MMP__JOB_KEY_LEN], int rank,
                           int size, unsigned timeout_ms,
                           const mmp__boot_client_cb_t *cb,
                           mmp__boot_done_cb done, void *arg,
                           struct sockaddr_storage *local,
                           mmp__boot_client_t **out);

/* Loop context, right after start, before the loop runs: this rank seals
 * (MINIMP_ENCRYPT); a server that does not is followed, and an error
 * logged. */
void mmp__boot_client_seal(mmp__boot_client_t *c);

/* Loop context. Requests; `done` runs exactly once unless an error is
 * returned. PUT's done runs once the message is written. */
int mmp__boot_put(mmp__boot_client_t *c, const char *name, const void *val,
                  size_t len, mmp__boot_done_cb done, void *arg);
int mmp__boot_getall(mmp__boot_client_t *c, const char *name,
                     mmp__boot_done_cb done, void *arg);
int mmp__boot_get(mmp__boot_client_t *c, int rank, const char *name,
                  mmp__boot_done_cb done, void *arg);
int mmp__boot_fence(mmp__boot_client_t *c, uint32_t epoch,
                    mmp__boot_done_cb done, void *arg);
/* Sends ABORT; done runs once it was written (or failed). */
int mmp__boot_abort(mmp__boot_client_t *c, int code, const char *msg,
                    mmp__boot_done_cb done, void *arg);
/* Sends SUSPECT about `rank`; done (may be NULL) runs once written. */
int mmp__boot_suspect(mmp__boot_client_t *c, int rank, const char *reason,
                      mmp__boot_done_cb done, void *arg);
/* Sends BYE and closes once it is written; `done` runs after the close.
 * Pending requests fail with MMP_ESHUTDOWN. No callback of `cb` runs
 * afterwards except `lost` with err 0. */
void mmp__boot_client_close(mmp__boot_client_t *c, mmp__boot_done_cb done,
                            void *arg);

#endif /* MMP_TRANSPORT_BOOT_H */
