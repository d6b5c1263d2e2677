/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the TCP transport (transport/tcp.c) from the wire: the
 * HELLO handshake on connections it accepts and on those it makes, then
 * the frame stream, fed whatever any process that reaches a rank's port
 * may send, while the runtime above it writes, shuts down and aborts
 * connections. On the fake libuv of fake_uv.h: no socket, no clock.
 *
 * Input: a flags byte (bits 0-1: our rank in a job of four; bit 2: a
 * 16 KiB frame limit instead of 64 KiB; bit 3: the runtime refuses rank
 * 3 over TCP; bit 4: debug logging), then actions until the input ends:
 * accept a connection; connect to a rank (or fail to); send a handshake
 * frame (HELLO, HELLO_ACK or HELLO_NACK, each field right or wrong), a
 * frame header with its payload, or raw bytes; EOF or reset; the runtime
 * writes a frame (queued or direct), shuts down or aborts a connection;
 * time passes; writes fail; the loop runs. Then the transport is
 * destroyed and the loop runs until nothing is left.
 *
 * Invariants:
 *  - peer_up(p) only once a connection proved it is rank p of this job
 *    (tcpf_proof), each proof used at most once, and never for a rank
 *    already up;
 *  - frame() and frame_done() only from a rank that is up, in pairs, with
 *    a known data type, the rank as source and len within the limit;
 *  - what the transport writes parses as frames in sequence from 0 with
 *    this rank as source: first the handshake (a HELLO on connections it
 *    made; a HELLO_ACK or HELLO_NACK, and only after a proof, on those it
 *    accepted), then the runtime's frames;
 *  - a write's callback runs exactly once unless write() failed; after
 *    abort() the rank is down; no callback but writes' after destroy();
 *    every handle is closed and no memory is left.
 *
 * All that depends on main's handshake (the key in HELLO and HELLO_ACK)
 * is in three functions: tcpf_proof (what proves a rank), tcpf_check_hs_out
 * (what the transport must send) and tcpf_handshake (what a peer sends).
 * A challenge-response handshake changes those three (tcpf_handshake can
 * read the transport's challenge from fuv_output() first).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_uv.h"
#include "fuzz.h"
#include "minimp.h"
#include "transport/frame.h"
#include "transport/transport.h"
#include "transport/util.h"

#define TCPF_SIZE 4
#define TCPF_SINK (64 * 1024)

static const uint8_t tcpf_key[MMP__JOB_KEY_LEN] = "fuzz-job-key-16b";

typedef struct tcpf_conn_s {
  int peer;        /* fake_uv's */
  int to;          /* the rank we connected to, or -1: accepted */
  fuzz_buf_t sent; /* every byte the harness sent on it */
  uint64_t tx_seq; /* the sequence number of the next frame we build */
  int proof_used;  /* a peer_up was granted on its proof */
  size_t got_off;  /* how much of what the transport wrote was parsed */
  uint64_t got_seq;
} tcpf_conn_t;

static struct {
  uv_loop_t loop;
  mmp__tp_t *tp;
  int rank;
  uint64_t max_frame;
  int refuse3;
  tcpf_conn_t conns[FUV_MAX_PEERS];
  int nconns;
  int up[TCPF_SIZE];
  mmp__tp_conn_t *conn[TCPF_SIZE];
  int shut[TCPF_SIZE];     /* the runtime shut it down: no more writes */
  int in_frame[TCPF_SIZE]; /* a frame() awaits its frame_done() */
  int writes[TCPF_SIZE];   /* writes whose callback is due */
  int nwrites;
  int nups;
  int destroying, destroyed;
} tcpf;

static uint8_t tcpf_sinkbuf[TCPF_SIZE][TCPF_SINK];

/* ---- The handshake rule -------------------------------------------------- */

/*
 * The rank that the first bytes the harness sent on `c` prove it is, or
 * -1. Main's handshake: the first frame is a HELLO (a HELLO_ACK on a
 * connection we made) of sequence 0 whose 32-byte payload carries the job
 * key, the job's size and a rank of the job other than ours (on an
 * accepted connection also the header's source; on one we made, the rank
 * we called).
 */
static int tcpf_proof(const tcpf_conn_t *c) {
  mmp__frame_hdr_t h;
  uint8_t key[MMP__JOB_KEY_LEN];
  uint32_t rank, size;
  const char *why;

  if (c->sent.len < MMP__FRAME_HDR_SIZE + MMP__HELLO_LEN ||
      mmp__frame_decode(c->sent.p, tcpf.max_frame, &h, &why) != 0 ||
      h.seq != 0 || h.len != MMP__HELLO_LEN ||
      h.type != (c->to < 0 ? MMP__F_HELLO : MMP__F_HELLO_ACK) ||
      mmp__hello_decode(c->sent.p + MMP__FRAME_HDR_SIZE, key, &rank, &size) !=
          0 ||
      memcmp(key, tcpf_key, sizeof(key)) != 0 || size != TCPF_SIZE ||
      rank >= TCPF_SIZE || (int)rank == tcpf.rank)
    return -1;
  if (c->to < 0 ? h.src != rank : (int)rank != c->to)
    return -1;
  return (int)rank;
}

/* The handshake frame the transport sends first on `c`, checked. */
static void tcpf_check_hs_out(const tcpf_conn_t *c, const mmp__frame_hdr_t *h,
                              const uint8_t *payload) {
  uint8_t key[MMP__JOB_KEY_LEN];
  uint32_t rank, size;

  if (c->to >= 0) {
    FUZZ_CHECK(h->type == MMP__F_HELLO);
  } else {
    FUZZ_CHECK(h->type == MMP__F_HELLO_ACK || h->type == MMP__F_HELLO_NACK);
    FUZZ_CHECK(tcpf_proof(c) >= 0);
  }
  FUZZ_CHECK(h->len == MMP__HELLO_LEN);
  FUZZ_CHECK(mmp__hello_decode(payload, key, &rank, &size) == 0);
  FUZZ_CHECK(memcmp(key, tcpf_key, sizeof(key)) == 0);
  FUZZ_CHECK(rank == (uint32_t)tcpf.rank && size == TCPF_SIZE);
}

/* ---- What the transport wrote -------------------------------------------- */

static void tcpf_check_output(void) {
  int i;

  for (i = 0; i < tcpf.nconns; i++) {
    tcpf_conn_t *c = &tcpf.conns[i];
    const fuzz_buf_t *out = fuv_output(c->peer);
    mmp__frame_hdr_t h;
    const char *why;

    while (out->len - c->got_off >= MMP__FRAME_HDR_SIZE) {
      const uint8_t *p = out->p + c->got_off;
      FUZZ_CHECK(mmp__frame_decode(p, UINT64_MAX, &h, &why) == 0);
      if (out->len - c->got_off - MMP__FRAME_HDR_SIZE < h.len)
        break;
      FUZZ_CHECK(h.seq == c->got_seq);
      FUZZ_CHECK(h.src == (uint32_t)tcpf.rank);
      if (c->got_seq == 0)
        tcpf_check_hs_out(c, &h, p + MMP__FRAME_HDR_SIZE);
      else
        FUZZ_CHECK(h.type == MMP__F_EAGER);
      c->got_seq++;
      c->got_off += MMP__FRAME_HDR_SIZE + (size_t)h.len;
    }
  }
}

/* ---- The runtime's callbacks --------------------------------------------- */

static void tcpf_peer_up(void *ctx, int peer, mmp__tp_conn_t *conn) {
  int i;

  (void)ctx;
  FUZZ_CHECK(!tcpf.destroying);
  FUZZ_CHECK(peer >= 0 && peer < TCPF_SIZE && peer != tcpf.rank);
  FUZZ_CHECK(!tcpf.up[peer] && conn != NULL);
  FUZZ_CHECK(!(tcpf.refuse3 && peer == 3));
  for (i = 0; i < tcpf.nconns; i++)
    if (!tcpf.conns[i].proof_used && tcpf_proof(&tcpf.conns[i]) == peer)
      break;
  FUZZ_CHECK(i < tcpf.nconns);
  tcpf.conns[i].proof_used = 1;
  tcpf.up[peer] = 1;
  tcpf.nups++;
  tcpf.conn[peer] = conn;
  tcpf.shut[peer] = 0;
  tcpf.in_frame[peer] = 0;
}

static const char *tcpf_refuse(void *ctx, int peer) {
  (void)ctx;
  FUZZ_CHECK(peer >= 0 && peer < TCPF_SIZE && peer != tcpf.rank);
  return tcpf.refuse3 && peer == 3 ? "uses shared memory" : NULL;
}

static int tcpf_frame(void *ctx, int peer, const mmp__frame_hdr_t *h,
                      mmp__sink_t *sink) {
  (void)ctx;
  FUZZ_CHECK(!tcpf.destroying);
  FUZZ_CHECK(peer >= 0 && peer < TCPF_SIZE && tcpf.up[peer]);
  FUZZ_CHECK(!tcpf.in_frame[peer]);
  FUZZ_CHECK(h->type >= MMP__F_EAGER && h->type <= MMP__F_TYPE_MAX);
  FUZZ_CHECK(h->src == (uint32_t)peer && h->len <= tcpf.max_frame);
  /* The runtime too rejects what it does not like (tag 666). */
  if (h->tag == 666)
    return MMP_EPROTO;
  tcpf.in_frame[peer] = 1;
  sink->buf = tcpf_sinkbuf[peer];
  sink->len = h->len < TCPF_SINK ? (size_t)h->len : TCPF_SINK;
  if (h->tag == 665)
    sink->len /= 2; /* a truncating receive: the rest is discarded */
  return 0;
}

static int tcpf_frame_done(void *ctx, int peer, const mmp__frame_hdr_t *h) {
  (void)ctx;
  FUZZ_CHECK(!tcpf.destroying);
  FUZZ_CHECK(peer >= 0 && peer < TCPF_SIZE && tcpf.up[peer]);
  FUZZ_CHECK(tcpf.in_frame[peer]);
  tcpf.in_frame[peer] = 0;
  return h->tag == 667 ? MMP_EPROTO : 0;
}

static void tcpf_peer_down(void *ctx, int peer, int err, const char *reason) {
  (void)ctx;
  (void)err;
  FUZZ_CHECK(!tcpf.destroying);
  FUZZ_CHECK(peer >= 0 && peer < TCPF_SIZE && peer != tcpf.rank);
  FUZZ_CHECK(reason != NULL);
  tcpf.up[peer] = 0;
  tcpf.conn[peer] = NULL;
  tcpf.in_frame[peer] = 0;
}

/* ---- The runtime's writes ------------------------------------------------ */

typedef struct tcpf_write_s {
  mmp__tp_write_t w;
  int peer;
  uint8_t data[];
} tcpf_write_t;

static void tcpf_write_cb(mmp__tp_write_t *w, int status) {
  tcpf_write_t *tw = (tcpf_write_t *)w;

  (void)status;
  FUZZ_CHECK(tcpf.writes[tw->peer] > 0);
  tcpf.writes[tw->peer]--;
  tcpf.nwrites--;
  free(tw);
}

static void tcpf_write(int peer, int direct, fuzz_in_t *in) {
  const uint8_t *p;
  size_t n = fuzz_bytes(in, &p, 300);
  tcpf_write_t *tw;
  int rc;

  if (!tcpf.up[peer] || tcpf.shut[peer])
    return;
  tw = calloc(1, sizeof(*tw) + n + 1);
  FUZZ_CHECK(tw != NULL);
  memcpy(tw->data, p, n);
  tw->peer = peer;
  tw->w.hdr.type = MMP__F_EAGER;
  tw->w.hdr.len = n;
  tw->w.hdr.a0 = n;
  tw->w.payload[0] = uv_buf_init((char *)tw->data, (unsigned)n);
  tw->w.npayload = 1;
  tw->w.cb = tcpf_write_cb;
  /* Direct only when nothing is queued (its contract); with no socket it
   * writes nothing, and the frame goes to write() next. */
  if (direct && tcpf.writes[peer] == 0)
    FUZZ_CHECK(mmp__tcp_ops.write_direct(tcpf.conn[peer], &tw->w) == 0);
  rc = mmp__tcp_ops.write(tcpf.conn[peer], &tw->w);
  FUZZ_CHECK(rc == 0 || rc == MMP_EPEERLOST);
  if (rc != 0) {
    free(tw);
    return;
  }
  tcpf.writes[peer]++;
  tcpf.nwrites++;
}

/* ---- Actions ------------------------------------------------------------- */

static void tcpf_send(tcpf_conn_t *c, const void *p, size_t n, size_t chunk) {
  if (fuv_closed(c->peer))
    return;
  fuzz_buf_put(&c->sent, p, n);
  fuv_send(c->peer, p, n, chunk);
}

/* A frame header from the input, its fields near what the transport
 * checks, then `n` bytes of payload. */
static void tcpf_frame_out(tcpf_conn_t *c, uint8_t type, const void *payload,
                           size_t n, size_t chunk, fuzz_in_t *in) {
  uint8_t wire[MMP__FRAME_HDR_SIZE];
  mmp__frame_hdr_t h;
  uint8_t how = fuzz_u8(in);

  memset(&h, 0, sizeof(h));
  h.type = type;
  h.src = fuzz_below(in, TCPF_SIZE + 1);
  h.tag = (int32_t)(how & 0x80 ? 665 + (how & 3) : fuzz_u8(in));
  h.seq = c->tx_seq + (how & 0x40 ? 1 : 0);
  h.len = how & 0x20 ? fuzz_u32(in) : n;
  h.flags = how & 0x10 ? MMP__FF_REQ : 0;
  h.a0 = n;
  mmp__frame_encode(&h, wire);
  c->tx_seq++;
  tcpf_send(c, wire, sizeof(wire), chunk);
  tcpf_send(c, payload, n, chunk);
}

static void tcpf_handshake(tcpf_conn_t *c, size_t chunk, fuzz_in_t *in) {
  static const uint8_t types[] = {MMP__F_HELLO, MMP__F_HELLO_ACK,
                                  MMP__F_HELLO_NACK};
  uint8_t key[MMP__JOB_KEY_LEN], hello[MMP__HELLO_LEN];
  uint8_t how = fuzz_u8(in);
  uint32_t rank = fuzz_below(in, TCPF_SIZE + 1);

  memcpy(key, tcpf_key, sizeof(key));
  key[how % sizeof(key)] ^= how & 0x80 ? 1 : 0;
  mmp__hello_encode(key, rank, how & 0x40 ? TCPF_SIZE + 1 : TCPF_SIZE, hello);
  if (how & 0x20)
    hello[MMP__HELLO_LEN - 1] = 1; /* the reserved word */
  /* The usual answer to our HELLO is an ACK; a stranger says HELLO. */
  tcpf_frame_out(c, types[(c->to >= 0) + (how & 0x10 ? 1 : 0)], hello,
                 sizeof(hello), chunk, in);
}

enum {
  A_ACCEPT,
  A_CONNECT,
  A_HANDSHAKE,
  A_FRAME,
  A_RAW,
  A_EOF,
  A_RESET,
  A_WRITE,
  A_DIRECT,
  A_SHUTDOWN,
  A_ABORT,
  A_TIME,
  A_FAIL_WRITES,
  A_RUN,
  A_COUNT
};

static void tcpf_connect(int rank, int fail) {
  struct sockaddr_storage addr;
  int before = fuv_last_connect(), rc;

  /* The runtime connects over TCP only to ranks that use it: refuse() is
   * asked about connecting sides alone. */
  if (tcpf.refuse3 && rank == 3)
    return;
  /* A connect that fails at once leaves its two handles closing until the
   * loop runs; run it before the fake's handle table fills up (real
   * libuv has no such table). */
  if (fuv_open_handles() + 4 > FUV_MAX_HANDLES)
    fuv_run();
  FUZZ_CHECK(mmp__addr_parse("127.0.0.2:9000", &addr) == 0);
  fuv_set_connect_status(fail ? UV_ECONNREFUSED : 0);
  rc = mmp__tcp_ops.connect(tcpf.tp, rank, (struct sockaddr *)&addr);
  /* MMP_ENOMEM: the fake has no peer left, as libuv may fail to start a
   * connect (the contract's other error). */
  FUZZ_CHECK(rc == 0 || rc == MMP_ENOMEM ||
             (rc == MMP_EINVAL &&
              (rank < 0 || rank >= TCPF_SIZE || rank == tcpf.rank)));
  if (rc == 0 && fuv_last_connect() != before && tcpf.nconns < FUV_MAX_PEERS) {
    tcpf_conn_t *c = &tcpf.conns[tcpf.nconns++];
    memset(c, 0, sizeof(*c));
    c->peer = fuv_last_connect();
    c->to = rank;
  }
}

static void tcpf_action(fuzz_in_t *in) {
  static const uint64_t steps[] = {0, 1, 999, 1000, 2000, 10000, 60000};
  int op = (int)fuzz_below(in, A_COUNT);
  uint8_t pick = fuzz_u8(in);
  size_t chunk = fuzz_u8(in);
  int rank = pick % TCPF_SIZE;
  tcpf_conn_t *c = tcpf.nconns > 0 ? &tcpf.conns[pick % tcpf.nconns] : NULL;
  const uint8_t *p;
  size_t n;
  int peer;

  switch (op) {
  case A_ACCEPT:
    peer = fuv_incoming();
    if (peer >= 0 && tcpf.nconns < FUV_MAX_PEERS) {
      c = &tcpf.conns[tcpf.nconns++];
      memset(c, 0, sizeof(*c));
      c->peer = peer;
      c->to = -1;
    }
    break;
  case A_CONNECT:
    tcpf_connect(chunk & 0x40 ? (int)(pick % (TCPF_SIZE + 2)) - 1 : rank,
                 chunk & 0x80);
    break;
  case A_HANDSHAKE:
  case A_FRAME:
  case A_RAW:
  case A_EOF:
  case A_RESET:
    if (c == NULL)
      break;
    if (op == A_HANDSHAKE) {
      tcpf_handshake(c, chunk, in);
    } else if (op == A_FRAME) {
      n = fuzz_bytes(in, &p, 4096);
      tcpf_frame_out(c, (uint8_t)(MMP__F_EAGER + fuzz_below(in, 8)), p, n,
                     chunk, in);
    } else if (op == A_RAW) {
      n = fuzz_bytes(in, &p, 4096);
      tcpf_send(c, p, n, chunk);
    } else if (op == A_EOF) {
      fuv_eof(c->peer);
    } else {
      fuv_reset_peer(c->peer);
    }
    break;
  case A_WRITE:
  case A_DIRECT:
    tcpf_write(rank, op == A_DIRECT, in);
    break;
  case A_SHUTDOWN:
    if (tcpf.up[rank] && !tcpf.shut[rank]) {
      tcpf.shut[rank] = 1;
      mmp__tcp_ops.shutdown(tcpf.conn[rank], chunk % 2 ? 1000 : 0);
    }
    break;
  case A_ABORT:
    if (tcpf.up[rank]) {
      mmp__tcp_ops.abort(tcpf.conn[rank], MMP_EPROTO, "aborted by the fuzzer");
      FUZZ_CHECK(!tcpf.up[rank]);
    }
    break;
  case A_TIME:
    fuv_advance(steps[chunk % (sizeof(steps) / sizeof(steps[0]))]);
    break;
  case A_FAIL_WRITES:
    fuv_fail_writes(chunk % 3);
    break;
  default:
    fuv_run();
    break;
  }
  tcpf_check_output();
}

static void tcpf_destroyed(void *arg) {
  (void)arg;
  FUZZ_CHECK(tcpf.destroying && !tcpf.destroyed);
  tcpf.destroyed = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mmp__tp_callbacks_t cb = {
      NULL,       tcpf_peer_up,    tcpf_refuse,
      tcpf_frame, tcpf_frame_done, tcpf_peer_down};
  mmp__tp_config_t cfg;
  mmp__tp_stats_t st;
  struct sockaddr_storage addr;
  char name[64];
  fuzz_in_t in;
  int flags, i;

  memset(&tcpf, 0, sizeof(tcpf));
  fuv_reset(&tcpf.loop);
  fuzz_in_init(&in, data, size);
  flags = fuzz_u8(&in);
  tcpf.rank = flags & 3;
  tcpf.max_frame = flags & 4 ? 16 * 1024 : 64 * 1024;
  tcpf.refuse3 = (flags & 8) != 0;
  mmp__log_level = flags & 16 ? MMP__LOG_DEBUG : -1;

  memset(&cfg, 0, sizeof(cfg));
  cfg.rank = tcpf.rank;
  cfg.size = TCPF_SIZE;
  memcpy(cfg.key, tcpf_key, sizeof(cfg.key));
  cfg.max_frame = tcpf.max_frame;
  cfg.handshake_timeout_ms = 1000;
  cfg.max_pending = 4;
  FUZZ_CHECK(mmp__tcp_ops.create(&tcpf.loop, &cfg, &cb, &tcpf.tp) == 0);
  FUZZ_CHECK(mmp__addr_parse("127.0.0.1:0", &addr) == 0);
  FUZZ_CHECK(mmp__tcp_ops.listen(tcpf.tp, (struct sockaddr *)&addr, name,
                                 sizeof(name)) == 0);
  while (in.left > 0)
    tcpf_action(&in);

  fuv_run();
  tcpf_check_output();
  mmp__tcp_ops.stats(tcpf.tp, &st);
  tcpf.destroying = 1;
  mmp__tcp_ops.destroy(tcpf.tp, tcpf_destroyed, NULL);
  fuv_run();
  fuv_advance(10000);
  FUZZ_CHECK(tcpf.destroyed);
  FUZZ_CHECK(tcpf.nwrites == 0);
  FUZZ_CHECK(fuv_open_handles() == 0);
  for (i = 0; i < tcpf.nconns; i++) {
    FUZZ_CHECK(fuv_closed(tcpf.conns[i].peer));
    fuzz_buf_free(&tcpf.conns[i].sent);
  }
  if (getenv("FUZZ_TRACE") != NULL)
    fprintf(stderr, "%d connection(s), %d up, %llu rejected, %llu dropped\n",
            tcpf.nconns, tcpf.nups, (unsigned long long)st.rejected,
            (unsigned long long)st.dropped);
  fuv_reset(&tcpf.loop);
  mmp__log_level = -1;
  return 0;
}

/* ---- Seeds --------------------------------------------------------------- */

/* A handshake frame on connection `conn`: `how` as tcpf_handshake reads
 * it (0: the right one), claiming `rank`, the header's source `src`. */
static void tcpf_seed_hs(fuzz_buf_t *b, int conn, int how, int rank, int src) {
  fuzz_buf_op(b, A_HANDSHAKE, conn, 0);
  fuzz_buf_u8(b, (uint8_t)how);
  fuzz_buf_u8(b, (uint8_t)rank);
  fuzz_buf_u8(b, 0); /* tcpf_frame_out's how: all fields right */
  fuzz_buf_u8(b, (uint8_t)src);
  fuzz_buf_u8(b, 7); /* tag */
}

static void tcpf_seed_frame(fuzz_buf_t *b, int conn, int type, const char *s,
                            int src, int how) {
  fuzz_buf_op(b, A_FRAME, conn, 0);
  fuzz_buf_bytes(b, s, strlen(s));
  fuzz_buf_u8(b, (uint8_t)(type - MMP__F_EAGER));
  fuzz_buf_u8(b, (uint8_t)how);
  fuzz_buf_u8(b, (uint8_t)src);
  if (!(how & 0x80))
    fuzz_buf_u8(b, 9); /* tag */
}

void fuzz_seeds(fuzz_emit_fn emit) {
  fuzz_buf_t b = {0};

  /* Rank 0: rank 1 connects in, rank 0 connects out to rank 2; frames
   * both ways, a shutdown, an EOF. */
  fuzz_buf_u8(&b, 0);
  fuzz_buf_op(&b, A_ACCEPT, 0, 0);
  tcpf_seed_hs(&b, 0, 0, 1, 1);
  fuzz_buf_op(&b, A_CONNECT, 2, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  tcpf_seed_hs(&b, 1, 0, 2, 2);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  tcpf_seed_frame(&b, 0, MMP__F_EAGER, "hello", 1, 0);
  tcpf_seed_frame(&b, 1, MMP__F_PING, "", 2, 0x10);
  fuzz_buf_op(&b, A_WRITE, 1, 0);
  fuzz_buf_bytes(&b, "data", 4);
  fuzz_buf_op(&b, A_DIRECT, 2, 0);
  fuzz_buf_bytes(&b, "more", 4);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_SHUTDOWN, 1, 1);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_EOF, 0, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  emit("two-peers", b.p, b.len);
  b.len = 0;

  /* Strangers: a wrong key, a bad size, a reserved word set, a forged
   * source; then, once those are gone, our own rank, an ACK in place of a
   * HELLO, garbage, and silence until the deadline. */
  fuzz_buf_u8(&b, 1 | 16);
  for (int i = 0; i < 8; i++) {
    if (i == 4)
      fuzz_buf_op(&b, A_RUN, 0, 0);
    fuzz_buf_op(&b, A_ACCEPT, 0, 0);
    if (i < 6)
      tcpf_seed_hs(&b, i, (int[]){0x80 | 5, 0x40, 0x20, 0, 0, 0x10}[i],
                   i == 4 ? 1 : 2,
                   i == 3   ? 3
                   : i == 4 ? 1
                            : 2);
  }
  fuzz_buf_op(&b, A_RAW, 6, 3);
  fuzz_buf_bytes(&b, "GET / HTTP/1.0\r\n\r\n", 18);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_TIME, 0, 3);
  emit("strangers", b.p, b.len);
  b.len = 0;

  /* Established peers misbehave: a frame over the limit, a frame the
   * runtime rejects; rank 3 is refused (it must use shared memory). */
  fuzz_buf_u8(&b, 4 | 8);
  for (int i = 0; i < 3; i++) {
    fuzz_buf_op(&b, A_ACCEPT, 0, 0);
    tcpf_seed_hs(&b, i, 0, i + 1, i + 1);
  }
  fuzz_buf_op(&b, A_RUN, 0, 0);
  tcpf_seed_frame(&b, 0, MMP__F_RTS, "x", 1, 0x20);
  fuzz_buf_u32(&b, 1u << 20);
  tcpf_seed_frame(&b, 1, MMP__F_EAGER, "y", 2, 0x80 | 1);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_ABORT, 2, 0);
  fuzz_buf_op(&b, A_CONNECT, 3, 0x80);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  emit("misbehaving-peers", b.p, b.len);
  b.len = 0;

  /* Both sides connect at once (we are rank 1, the peer rank 0 and rank 2):
   * the lower rank's connection wins, a NACK sends us waiting. */
  fuzz_buf_u8(&b, 1);
  fuzz_buf_op(&b, A_CONNECT, 0, 0);
  fuzz_buf_op(&b, A_CONNECT, 2, 0);
  fuzz_buf_op(&b, A_ACCEPT, 0, 0);
  fuzz_buf_op(&b, A_ACCEPT, 0, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  tcpf_seed_hs(&b, 2, 0, 0, 0);
  tcpf_seed_hs(&b, 3, 0, 2, 2);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  tcpf_seed_hs(&b, 0, 0x10, 0, 0);
  tcpf_seed_hs(&b, 1, 0, 2, 2);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_TIME, 0, 4);
  emit("simultaneous-connects", b.p, b.len);
  fuzz_buf_free(&b);
}
