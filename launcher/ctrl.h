/* SPDX-License-Identifier: MIT */
/*
 * The control protocol between minimprun and its per-host daemons
 * ("minimprun --daemon", the counterpart of Open MPI's orted and Hydra's
 * proxy). minimprun serves it on the address --iface chose; each daemon,
 * started through the agent ("ssh HOST minimprun --daemon ADDR INDEX"),
 * connects back, proves it belongs to the job and receives what to start.
 * It is private to the launcher: the library never speaks it.
 *
 * Framing reuses the bootstrap codec of transport/boot.h (the writer, the
 * bounds-checked reader and the reassembler) with a header of its own: the
 * same 16 bytes, but magic "MMPD" and version MMP__CTRL_VERSION, so neither
 * protocol can be mistaken for the other.
 *   off 0 u32 magic "MMPD"   off 4 u8 version   off 5 u8 type
 *   off 6 u16 reserved (0)   off 8 u32 id (0)   off 12 u32 len
 * Strings are u16 length + bytes, blobs u32 length + bytes; every length
 * is checked against the remaining body, and every body against its
 * type's cap, before anything is allocated.
 *
 * The handshake proves the job key without sending it (transport/auth.h):
 * the daemon sends HELLO as soon as it is connected and minimprun
 * CHALLENGE as soon as it accepted, each with a fresh nonce; the daemon
 * answers with PROOF, a MAC over both bodies, and minimprun, once that
 * verifies, with WELCOME, its own MAC over them, then LAUNCH. The daemon
 * runs nothing before WELCOME verifies.
 *
 * With MMP__CTRL_SEAL (minimprun --encrypt), every byte after PROOF (from
 * the daemon) and after WELCOME (from minimprun) is a sealed record
 * (transport/auth.h) under keys of this connection alone, derived from the
 * job key and the transcript, which holds the flag: an attacker who strips
 * it breaks both proofs.
 *
 * Messages (d = daemon, m = minimprun):
 *  HELLO     d->m  nonce[32], host u32, pid u32, hostname str, version
 *                  str (the daemon's MMP__LAUNCHER_VERSION). First.
 *  CHALLENGE m->d  nonce[32], flags u32 (MMP__CTRL_SEAL: both directions
 *                  are sealed after the handshake). First.
 *  PROOF     d->m  mac[32]: the daemon's proof. HELLO and PROOF within
 *                  MMP__CTRL_HELLO_MS; a wrong proof or host closes.
 *  WELCOME   m->d  mac[32]: minimprun's proof.
 *  LAUNCH    m->d  follows WELCOME; see mmp__ctrl_launch_t.
 *  STARTED   d->m  rank u32, pid u32, err i32 (0, or the libuv error of a
 *                  failed start; then no EXIT follows).
 *  OUTPUT    d->m  rank u32, fd u32 (1|2), data blob; empty data is EOF.
 *  EXIT      d->m  rank u32, status i32, signo u32.
 *  BYE       d->m  (empty) every rank was reported; the daemon exits.
 *  STDIN     m->d  data blob for the rank with MMP__CTRL_RANK_STDIN;
 *                  empty data is EOF.
 *  STDIN_ACK d->m  bytes u32 of STDIN consumed (credit flow control).
 *  KILL      m->d  (empty) SIGTERM to every rank, SIGKILL 1.5 s later.
 *  SIGNAL    m->d  signo u32: SIGINT, SIGTERM or SIGKILL to every rank.
 *  ERROR     both  code i32, message str; the sender closes next.
 */
#ifndef MMP_LAUNCHER_CTRL_H
#define MMP_LAUNCHER_CTRL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "transport/boot.h"

#define MMP__CTRL_MAGIC 0x44504d4du /* "MMPD" */
/* 3: CHALLENGE carries flags, and MMP__CTRL_SEAL seals what follows the
 * handshake. 4: HELLO carries the daemon's minimprun version, which must
 * be minimprun's own. */
#define MMP__CTRL_VERSION 4
/* The longest version string HELLO may carry. */
#define MMP__CTRL_MAX_VERSION 64
#define MMP__CTRL_MAX_BODY (1u << 20)    /* every message but LAUNCH */
#define MMP__CTRL_MAX_LAUNCH (64u << 20) /* LAUNCH */
#define MMP__CTRL_MAX_STR (1u << 20)     /* one argument or variable */
#define MMP__CTRL_MAX_RANK (1 << 24)
#define MMP__CTRL_CHUNK 65536    /* largest OUTPUT / STDIN data */
#define MMP__CTRL_HELLO_MS 10000 /* a new connection must prove the key */
#define MMP__CTRL_HIGH_WATER (1u << 20)  /* unsent bytes: stop producing */
#define MMP__CTRL_LOW_WATER (256u << 10) /* ...and resume below this */

typedef enum mmp__ctrl_type {
  MMP__C_HELLO = 1,
  MMP__C_LAUNCH = 2,
  MMP__C_STARTED = 3,
  MMP__C_OUTPUT = 4,
  MMP__C_EXIT = 5,
  MMP__C_BYE = 6,
  MMP__C_STDIN = 7,
  MMP__C_STDIN_ACK = 8,
  MMP__C_KILL = 9,
  MMP__C_SIGNAL = 10,
  MMP__C_ERROR = 11,
  MMP__C_CHALLENGE = 12,
  MMP__C_PROOF = 13,
  MMP__C_WELCOME = 14,
  MMP__C_TYPE_MAX = 14
} mmp__ctrl_type_t;

/* ---- Codec: no sockets, unit-tested on its own. ----------------------- */

/* Validates magic, version, type, reserved and the type's body cap.
 * Returns 0, MMP_EPROTO or MMP_ETOOBIG with *why set. */
int mmp__ctrl_hdr_decode(const uint8_t in[MMP__BOOT_HDR_SIZE],
                         mmp__boot_hdr_t *h, const char **why);

/* Like mmp__boot_wr_finish() with this protocol's header. Returns 0 or
 * MMP_ENOMEM (the buffer is freed then). */
int mmp__ctrl_finish(mmp__boot_wr_t *w, uint8_t type);

enum {
  MMP__CTRL_SEAL = 1 /* CHALLENGE flags: seal after the handshake */
};
#define MMP__CTRL_CHALLENGE_LEN (MMP__NONCE_LEN + 4)

enum {
  /* launch flags */
  MMP__CTRL_LAUNCH_VERBOSE = 1,         /* the daemon reports more */
  MMP__CTRL_LAUNCH_BIND_CORE = 2,       /* --bind-to core */
  MMP__CTRL_LAUNCH_REPORT_BINDINGS = 4, /* --report-bindings */
  MMP__CTRL_LAUNCH_WDIR = 8 /* cwd is --wdir: no fallback to $HOME */
};
enum {
  MMP__CTRL_RANK_STDIN = 1 /* rank flags: gets the job's standard input */
};

/* One rank a daemon starts, and what its environment adds for it. */
typedef struct mmp__ctrl_rank_s {
  int rank;
  unsigned flags; /* MMP__CTRL_RANK_* */
  int nvars;
  char **vars; /* "NAME=VALUE", NULL-terminated */
} mmp__ctrl_rank_t;

/*
 * LAUNCH body: flags u32, cwd blob, argc u32 + argc blobs, nenv u32 + nenv
 * blobs ("NAME=VALUE" added to every rank's environment), nranks u32, and
 * per rank: rank u32, flags u32, nvars u32 + nvars blobs. No string holds
 * a NUL; every variable has a name and '='.
 */
typedef struct mmp__ctrl_launch_s {
  unsigned flags; /* MMP__CTRL_LAUNCH_* */
  char *cwd;
  int argc;
  char **argv; /* NULL-terminated */
  int nenv;
  char **env; /* NULL-terminated */
  int nranks;
  mmp__ctrl_rank_t *ranks;
  void *mem; /* one block holding all of the above */
} mmp__ctrl_launch_t;

/* Encodes the part of a LAUNCH body before the ranks; `nranks` calls of
 * mmp__ctrl_launch_rank() must follow. Errors surface at finish. */
void mmp__ctrl_launch_begin(mmp__boot_wr_t *w, unsigned flags, const char *cwd,
                            char *const *argv, char *const *env, int nranks);
void mmp__ctrl_launch_rank(mmp__boot_wr_t *w, int rank, unsigned flags,
                           char *const *vars, int nvars);

/* Decodes and validates a LAUNCH body into *l, which owns one allocation
 * (free it with mmp__ctrl_launch_free). Returns 0, MMP_EPROTO (*why set)
 * or MMP_ENOMEM. */
int mmp__ctrl_launch_decode(const uint8_t *body, size_t len,
                            mmp__ctrl_launch_t *l, const char **why);
void mmp__ctrl_launch_free(mmp__ctrl_launch_t *l);

/* ---- A connection: framing, a write queue and a deadline. -------------- */

typedef struct mmp__ctrl_conn_s mmp__ctrl_conn_t;

typedef struct mmp__ctrl_cb_s {
  /* A whole message other than ERROR; `body` lives only during the call. */
  void (*message)(mmp__ctrl_conn_t *c, uint8_t type, const uint8_t *body,
                  size_t len);
  /* The connection ended on its own: the peer closed or sent ERROR, bad
   * input, a failed write, the deadline. `c` is closed and freed after
   * the call; drop every pointer to it. */
  void (*ended)(mmp__ctrl_conn_t *c, const char *reason);
  /* May be NULL. Unsent bytes fell to MMP__CTRL_LOW_WATER or below. */
  void (*drained)(mmp__ctrl_conn_t *c);
} mmp__ctrl_cb_t;

/* Loop context. Allocates a connection whose callbacks are `cb` (borrowed,
 * static) and whose owner's pointer is `data`. Returns 0 or MMP_ENOMEM. */
int mmp__ctrl_conn_alloc(uv_loop_t *loop, const mmp__ctrl_cb_t *cb, void *data,
                         mmp__ctrl_conn_t **out);

/* The owner's pointer given at alloc, or changed since. */
void *mmp__ctrl_conn_data(const mmp__ctrl_conn_t *c);
void mmp__ctrl_conn_set_data(mmp__ctrl_conn_t *c, void *data);

/* Writes the peer's address ("ip:port") into out, or "?". */
void mmp__ctrl_conn_peer(const mmp__ctrl_conn_t *c, char *out, size_t len);

/* Loop context. Accepts a connection from `server` and starts reading.
 * Returns 0 or a libuv error (then close `c`). */
int mmp__ctrl_conn_accept(mmp__ctrl_conn_t *c, uv_stream_t *server);

/* Loop context. Connects to `addr`; `connected` runs once it is, and then
 * reading starts. A failure ends the connection (cb->ended). Returns 0 or
 * a libuv error (then close `c`). */
int mmp__ctrl_conn_connect(mmp__ctrl_conn_t *c, const struct sockaddr *addr,
                           void (*connected)(mmp__ctrl_conn_t *c));

/* Loop context. Ends the connection with `why` unless this is called
 * again (or with ms 0, which cancels) within `ms` milliseconds. */
void mmp__ctrl_conn_deadline(mmp__ctrl_conn_t *c, unsigned ms, const char *why);

/* Loop context. Finishes `w` as a message of `type` and queues it; the
 * buffer is taken over in every case. Returns 0 or MMP_ENOMEM / a libuv
 * error, after which the connection has ended (cb->ended ran). */
int mmp__ctrl_send(mmp__ctrl_conn_t *c, uint8_t type, mmp__boot_wr_t *w);

/* Loop context. Queues a finished message of `len` bytes at `buf` (from
 * mmp__ctrl_finish), taking it over. Same returns as mmp__ctrl_send(). */
int mmp__ctrl_send_buf(mmp__ctrl_conn_t *c, uint8_t *buf, size_t len);

/* Loop context, once, in the handler of the last clear message received
 * and after the last clear message sent: from then on what is sent is
 * sealed under `tx` and what is received (even the rest of the current
 * read) must open under `rx`. Returns 0 or MMP_ENOMEM (then the
 * connection has ended). */
int mmp__ctrl_conn_seal(mmp__ctrl_conn_t *c,
                        const uint8_t tx[MMP__SESSION_KEY_LEN],
                        const uint8_t rx[MMP__SESSION_KEY_LEN]);

/* Bytes queued and not yet written. */
size_t mmp__ctrl_conn_queued(const mmp__ctrl_conn_t *c);

/*
 * Loop context. Closes the connection without any further callback: reads
 * stop, queued writes get a short time to drain (after an ERROR with
 * `error` as its message, if not NULL), then the handles close and `c` is
 * freed. Safe on NULL.
 */
void mmp__ctrl_conn_close(mmp__ctrl_conn_t *c, const char *error);

#endif /* MMP_LAUNCHER_CTRL_H */
