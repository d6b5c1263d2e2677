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
 * 3 over TCP; bit 4: debug logging; bit 5: sealed, MINIMP_ENCRYPT=1),
 * then actions until the input ends: accept a connection; connect to a
 * rank (or fail to); send the next handshake frame of version 2 (a
 * greeting, HELLO or CHALLENGE, then a proof, PROOF, HELLO_ACK or
 * HELLO_NACK; each field right or wrong, frames out of order, proofs under
 * a wrong key or role), a frame header with its payload, or raw bytes
 * (sealed into records once the harness's handshake is done, if the job
 * seals); EOF or reset; the runtime
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
 *    this rank as source: first its greeting (HELLO on connections it made,
 *    naming the rank it called; CHALLENGE on those it accepted), then its
 *    proof, which verifies under the job key over both greetings (PROOF
 *    only after the peer's CHALLENGE named the rank called; HELLO_ACK or
 *    HELLO_NACK only after the peer's PROOF proved a rank), then the
 *    runtime's frames, opened from sealed records when the job seals;
 *  - a write's callback runs exactly once unless write() failed; after
 *    abort() the rank is down; no callback but writes' after destroy();
 *    every handle is closed and no memory is left.
 *
 * All that depends on the handshake (version 2: HELLO, CHALLENGE, PROOF,
 * HELLO_ACK; docs/security.md) is in three functions: tcpf_proof (what
 * proves a rank), tcpf_check_hs_out (what the transport must send) and
 * tcpf_handshake (what a peer sends, its proof computed over the
 * transport's greeting as read from fuv_output()). libsodium's random
 * numbers are a fixed sequence (fuzz_util.c), so nonces replay too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_uv.h"
#include "fuzz.h"
#include "minimp.h"
#include "transport/auth.h"
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
  int hs_sent;                      /* handshake frames the harness sent */
  uint8_t greet_tp[MMP__GREET_LEN]; /* the transport's greeting */
  int have_greet_tp;
  int sealing;        /* the harness seals what it sends from now on */
  int out_sealed;     /* the transport's output from got_off is records */
  int keys;           /* tx and rx hold this connection's keys */
  mmp__seal_t tx, rx; /* harness to transport, transport to harness */
  fuzz_buf_t plain;   /* the transport's sealed output, opened */
  size_t plain_off;
} tcpf_conn_t;

static struct {
  uv_loop_t loop;
  mmp__tp_t *tp;
  int rank;
  uint64_t max_frame;
  int refuse3;
  int encrypt;
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

/* The greeting the harness sent first on `c`, if it is one the transport
 * must take: a HELLO (accepted connection) or CHALLENGE (one we made) of
 * sequence 0 naming this job's size, a rank of the job other than ours
 * and our sealing; on an accepted connection also the header's source and
 * our rank as the one called; on one we made, the rank we called, calling
 * anyone. Returns the rank it claims, or -1. */
static int tcpf_greeting_sent(const tcpf_conn_t *c) {
  mmp__frame_hdr_t h;
  mmp__greet_t g;
  const char *why;

  if (c->sent.len < MMP__FRAME_HDR_SIZE + MMP__GREET_LEN ||
      mmp__frame_decode(c->sent.p, tcpf.max_frame, &h, &why) != 0 ||
      h.seq != 0 || h.len != MMP__GREET_LEN ||
      h.type != (c->to < 0 ? MMP__F_HELLO : MMP__F_CHALLENGE) ||
      mmp__greet_decode(c->sent.p + MMP__FRAME_HDR_SIZE, &g) != 0 ||
      g.size != TCPF_SIZE || g.rank >= TCPF_SIZE || (int)g.rank == tcpf.rank ||
      ((g.flags & MMP__GREET_ENCRYPT) != 0) != tcpf.encrypt)
    return -1;
  if (c->to < 0 ? h.src != g.rank || g.peer != (uint32_t)tcpf.rank
                : (int)g.rank != c->to || g.peer != MMP__GREET_ANY)
    return -1;
  return (int)g.rank;
}

/* The transcript of `c`: the dialer's greeting, then the listener's; the
 * harness's is the first frame it sent (zeros if none). */
static void tcpf_begin(const tcpf_conn_t *c, mmp__auth_t *a) {
  uint8_t ours[MMP__GREET_LEN] = {0};

  if (c->sent.len >= MMP__FRAME_HDR_SIZE + MMP__GREET_LEN)
    memcpy(ours, c->sent.p + MMP__FRAME_HDR_SIZE, sizeof(ours));
  if (c->to < 0)
    mmp__auth_begin(a, tcpf_key, MMP__AUTH_TCP, ours, sizeof(ours), c->greet_tp,
                    MMP__GREET_LEN);
  else
    mmp__auth_begin(a, tcpf_key, MMP__AUTH_TCP, c->greet_tp, MMP__GREET_LEN,
                    ours, sizeof(ours));
}

/*
 * The rank that the first bytes the harness sent on `c` prove it is, or
 * -1. Version 2: a greeting the transport takes (tcpf_greeting_sent), then
 * as the frame of sequence 1 the proof of the job key over both greetings
 * (the transport's as it wrote it): PROOF with the dialer's proof on an
 * accepted connection, HELLO_ACK with the listener's accepting proof on
 * one we made.
 */
static int tcpf_proof(const tcpf_conn_t *c) {
  const size_t off = MMP__FRAME_HDR_SIZE + MMP__GREET_LEN;
  mmp__frame_hdr_t h;
  mmp__auth_t a;
  const char *why;
  int rank = tcpf_greeting_sent(c), ok;

  if (rank < 0 || !c->have_greet_tp ||
      c->sent.len < off + MMP__FRAME_HDR_SIZE + MMP__MAC_LEN ||
      mmp__frame_decode(c->sent.p + off, tcpf.max_frame, &h, &why) != 0 ||
      h.seq != 1 || h.len != MMP__MAC_LEN ||
      h.type != (c->to < 0 ? MMP__F_PROOF : MMP__F_HELLO_ACK))
    return -1;
  tcpf_begin(c, &a);
  ok = mmp__auth_check(&a, c->to < 0 ? MMP__AUTH_DIALER : MMP__AUTH_LISTENER,
                       c->to < 0 ? MMP__AUTH_PROVE : MMP__AUTH_ACCEPT,
                       c->sent.p + off + MMP__FRAME_HDR_SIZE);
  mmp__auth_end(&a);
  return ok ? rank : -1;
}

/* This connection's sealing keys, once both greetings are known. */
static void tcpf_keys(tcpf_conn_t *c) {
  uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
  mmp__auth_t a;

  if (c->keys)
    return;
  tcpf_begin(c, &a);
  mmp__auth_session_keys(&a, tcpf_key, d2l, l2d);
  mmp__auth_end(&a);
  /* On an accepted connection the harness is the dialer. */
  memcpy(c->tx.key, c->to < 0 ? d2l : l2d, sizeof(c->tx.key));
  memcpy(c->rx.key, c->to < 0 ? l2d : d2l, sizeof(c->rx.key));
  c->tx.next = c->rx.next = 0;
  c->keys = 1;
}

/* The handshake frame of sequence `seq` (0 or 1) the transport sent on
 * `c`, checked. */
static void tcpf_check_hs_out(tcpf_conn_t *c, const mmp__frame_hdr_t *h,
                              const uint8_t *payload, uint64_t seq) {
  mmp__greet_t g;
  mmp__auth_t a;
  int nack = h->type == MMP__F_HELLO_NACK;

  if (seq == 0) {
    FUZZ_CHECK(h->type == (c->to >= 0 ? MMP__F_HELLO : MMP__F_CHALLENGE));
    FUZZ_CHECK(h->len == MMP__GREET_LEN);
    FUZZ_CHECK(mmp__greet_decode(payload, &g) == 0);
    FUZZ_CHECK(g.rank == (uint32_t)tcpf.rank && g.size == TCPF_SIZE);
    FUZZ_CHECK(g.peer == (c->to >= 0 ? (uint32_t)c->to : MMP__GREET_ANY));
    FUZZ_CHECK(((g.flags & MMP__GREET_ENCRYPT) != 0) == tcpf.encrypt);
    memcpy(c->greet_tp, payload, MMP__GREET_LEN);
    c->have_greet_tp = 1;
    return;
  }
  FUZZ_CHECK(h->len == MMP__MAC_LEN);
  if (c->to >= 0) {
    FUZZ_CHECK(h->type == MMP__F_PROOF);
    FUZZ_CHECK(tcpf_greeting_sent(c) == c->to);
  } else {
    FUZZ_CHECK(h->type == MMP__F_HELLO_ACK || nack);
    FUZZ_CHECK(tcpf_proof(c) >= 0);
  }
  tcpf_begin(c, &a);
  FUZZ_CHECK(
      mmp__auth_check(&a, c->to >= 0 ? MMP__AUTH_DIALER : MMP__AUTH_LISTENER,
                      c->to >= 0 ? MMP__AUTH_PROVE
                                 : (nack ? MMP__AUTH_REFUSE : MMP__AUTH_ACCEPT),
                      payload));
  mmp__auth_end(&a);
  /* Everything the transport sends after its proof is sealed. */
  if (tcpf.encrypt && !nack) {
    tcpf_keys(c);
    c->out_sealed = 1;
  }
}

/* ---- What the transport wrote -------------------------------------------- */

/* Parses the frames in `p[*off, len)` that the transport wrote on `c`. */
static void tcpf_parse_out(tcpf_conn_t *c, const uint8_t *base, size_t len,
                           size_t *off, int sealed) {
  mmp__frame_hdr_t h;
  const char *why;

  while (len - *off >= MMP__FRAME_HDR_SIZE && (sealed || !c->out_sealed)) {
    const uint8_t *p = base + *off;
    FUZZ_CHECK(mmp__frame_decode(p, UINT64_MAX, &h, &why) == 0);
    if (len - *off - MMP__FRAME_HDR_SIZE < h.len)
      break;
    FUZZ_CHECK(h.seq == c->got_seq);
    FUZZ_CHECK(h.src == (uint32_t)tcpf.rank);
    *off += MMP__FRAME_HDR_SIZE + (size_t)h.len;
    if (c->got_seq <= 1)
      tcpf_check_hs_out(c, &h, p + MMP__FRAME_HDR_SIZE, c->got_seq);
    else
      FUZZ_CHECK(h.type == MMP__F_EAGER);
    c->got_seq++;
  }
}

static void tcpf_check_output(void) {
  static uint8_t rec[MMP__REC_MAX];
  int i;

  for (i = 0; i < tcpf.nconns; i++) {
    tcpf_conn_t *c = &tcpf.conns[i];
    const fuzz_buf_t *out = fuv_output(c->peer);

    tcpf_parse_out(c, out->p, out->len, &c->got_off, 0);
    if (!c->out_sealed)
      continue;
    /* Every record the transport sealed opens under its key. */
    while (c->got_off < out->len) {
      const char *why = NULL;
      size_t plain = 0;
      long n = mmp__open(&c->rx, out->p + c->got_off, out->len - c->got_off,
                         rec, &plain, &why);
      FUZZ_CHECK(n >= 0);
      if (n == 0)
        break;
      c->got_off += (size_t)n;
      fuzz_buf_put(&c->plain, rec, plain);
    }
    tcpf_parse_out(c, c->plain.p, c->plain.len, &c->plain_off, 1);
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

/* Sends `n` bytes on `c`, sealed once the harness's handshake is done on
 * a sealed job unless `raw`. */
static void tcpf_send_raw(tcpf_conn_t *c, const void *p, size_t n, size_t chunk,
                          int raw) {
  static uint8_t scratch[MMP__REC_MAX];
  struct iovec iov;
  uint8_t *sealed;
  uint64_t m;

  if (fuv_closed(c->peer))
    return;
  fuzz_buf_put(&c->sent, p, n);
  if (!c->sealing || raw || n == 0) {
    fuv_send(c->peer, p, n, chunk);
    return;
  }
  tcpf_keys(c);
  m = mmp__seal_size(n);
  sealed = malloc((size_t)m);
  FUZZ_CHECK(sealed != NULL);
  iov.iov_base = (void *)p;
  iov.iov_len = n;
  mmp__seal(&c->tx, &iov, 1, n, sealed, scratch);
  fuv_send(c->peer, sealed, (size_t)m, chunk);
  free(sealed);
}

static void tcpf_send(tcpf_conn_t *c, const void *p, size_t n, size_t chunk) {
  tcpf_send_raw(c, p, n, chunk, 0);
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

/*
 * The harness's next handshake frame on `c`: first its greeting (HELLO on
 * an accepted connection, CHALLENGE on one the transport made), then its
 * proof over both greetings (PROOF; HELLO_ACK, or HELLO_NACK). `how` spoils
 * it: 0x80 a wrong key, 0x40 a wrong size, 0x20 an unknown flag, 0x10 the
 * other type (a stranger's HELLO to our HELLO, a NACK), 0x08 the other
 * frame of the two (out of order), 0x04 the wrong called rank, 0x02 the
 * other sealing, 0x01 the other role's proof (reflected).
 */
static void tcpf_handshake(tcpf_conn_t *c, size_t chunk, fuzz_in_t *in) {
  uint8_t how = fuzz_u8(in);
  uint32_t rank = fuzz_below(in, TCPF_SIZE + 1);
  int accepted = c->to < 0;
  int greet = (c->hs_sent == 0) != ((how & 0x08) != 0);
  uint8_t buf[MMP__GREET_LEN];
  uint8_t type;
  size_t n;

  if (greet) {
    mmp__greet_t g;
    mmp__auth_nonce(g.nonce);
    g.rank = rank;
    g.size = how & 0x40 ? TCPF_SIZE + 1 : TCPF_SIZE;
    g.peer =
        accepted != ((how & 0x04) != 0) ? (uint32_t)tcpf.rank : MMP__GREET_ANY;
    g.flags = (tcpf.encrypt != ((how & 0x02) != 0)) ? MMP__GREET_ENCRYPT : 0;
    mmp__greet_encode(&g, buf);
    if (how & 0x20)
      buf[MMP__GREET_LEN - 1] |= 0x80; /* a flag this version does not know */
    type = accepted != ((how & 0x10) != 0) ? MMP__F_HELLO : MMP__F_CHALLENGE;
    n = MMP__GREET_LEN;
  } else {
    mmp__auth_t a;
    int nack = !accepted && (how & 0x10);
    int role =
        accepted != ((how & 0x01) != 0) ? MMP__AUTH_DIALER : MMP__AUTH_LISTENER;
    uint8_t key[MMP__JOB_KEY_LEN];
    memcpy(key, tcpf_key, sizeof(key));
    key[how % sizeof(key)] ^= how & 0x80 ? 1 : 0;
    tcpf_begin(c, &a);
    if (how & 0x80) {
      /* The same transcript under another key. */
      uint8_t ours[MMP__GREET_LEN] = {0};
      mmp__auth_end(&a);
      if (c->sent.len >= MMP__FRAME_HDR_SIZE + MMP__GREET_LEN)
        memcpy(ours, c->sent.p + MMP__FRAME_HDR_SIZE, sizeof(ours));
      mmp__auth_begin(&a, key, MMP__AUTH_TCP, accepted ? ours : c->greet_tp,
                      MMP__GREET_LEN, accepted ? c->greet_tp : ours,
                      MMP__GREET_LEN);
    }
    mmp__auth_mac(&a, role,
                  accepted ? MMP__AUTH_PROVE
                           : (nack ? MMP__AUTH_REFUSE : MMP__AUTH_ACCEPT),
                  buf);
    mmp__auth_end(&a);
    type =
        accepted ? MMP__F_PROOF : (nack ? MMP__F_HELLO_NACK : MMP__F_HELLO_ACK);
    n = MMP__MAC_LEN;
  }
  tcpf_frame_out(c, type, buf, n, chunk, in);
  c->hs_sent++;
  /* After its proof the transport reads records, if it seals. */
  if (!greet && tcpf.encrypt)
    c->sealing = 1;
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
      tcpf_send_raw(c, p, n, chunk, pick & 0x80);
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
  tcpf.encrypt = (flags & 32) != 0;
  fuzz_random_reset();
  mmp__log_level = flags & 16 ? MMP__LOG_DEBUG : -1;

  memset(&cfg, 0, sizeof(cfg));
  cfg.rank = tcpf.rank;
  cfg.size = TCPF_SIZE;
  memcpy(cfg.key, tcpf_key, sizeof(cfg.key));
  cfg.max_frame = tcpf.max_frame;
  cfg.handshake_timeout_ms = 1000;
  cfg.max_pending = 4;
  cfg.encrypt = tcpf.encrypt;
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
    fuzz_buf_free(&tcpf.conns[i].plain);
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

/* A whole handshake on connection `conn` as the rank `rank`: the greeting,
 * the loop, the proof (`how` spoils it), the loop. */
static void tcpf_seed_full(fuzz_buf_t *b, int conn, int rank, int how) {
  tcpf_seed_hs(b, conn, 0, rank, rank);
  fuzz_buf_op(b, A_RUN, 0, 0);
  tcpf_seed_hs(b, conn, how, rank, rank);
  fuzz_buf_op(b, A_RUN, 0, 0);
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

static void tcpf_seed_two_peers(fuzz_buf_t *b, int flags) {
  /* Rank 0: rank 1 connects in, rank 0 connects out to rank 2; frames
   * both ways, a shutdown, an EOF. */
  fuzz_buf_u8(b, (uint8_t)flags);
  fuzz_buf_op(b, A_ACCEPT, 0, 0);
  fuzz_buf_op(b, A_RUN, 0, 0);
  tcpf_seed_full(b, 0, 1, 0);
  fuzz_buf_op(b, A_CONNECT, 2, 0);
  fuzz_buf_op(b, A_RUN, 0, 0);
  tcpf_seed_full(b, 1, 2, 0);
  tcpf_seed_frame(b, 0, MMP__F_EAGER, "hello", 1, 0);
  tcpf_seed_frame(b, 1, MMP__F_PING, "", 2, 0x10);
  fuzz_buf_op(b, A_WRITE, 1, 0);
  fuzz_buf_bytes(b, "data", 4);
  fuzz_buf_op(b, A_DIRECT, 2, 0);
  fuzz_buf_bytes(b, "more", 4);
  fuzz_buf_op(b, A_RUN, 0, 0);
  fuzz_buf_op(b, A_SHUTDOWN, 1, 1);
  fuzz_buf_op(b, A_RUN, 0, 0);
  fuzz_buf_op(b, A_EOF, 0, 0);
  fuzz_buf_op(b, A_RUN, 0, 0);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  fuzz_buf_t b = {0};

  /* A valid v2 exchange both ways, in the clear and sealed. */
  tcpf_seed_two_peers(&b, 0);
  emit("two-peers", b.p, b.len);
  b.len = 0;
  tcpf_seed_two_peers(&b, 32);
  emit("two-peers-sealed", b.p, b.len);
  b.len = 0;

  /* Strangers, each after a right HELLO (but the last two): a proof under
   * a wrong key, a reflected proof, a HELLO again; a bad size, an unknown
   * flag, a forged source, our own rank, the other sealing, a CHALLENGE
   * in place of HELLO, a PROOF first; garbage, and silence until the
   * deadline. */
  fuzz_buf_u8(&b, 1 | 16);
  for (int i = 0; i < 11; i++) {
    static const int hs[][4] = {
        /* greeting how, rank, src, proof how (-1: none) */
        {0, 2, 2, 0x80 | 5}, {0, 2, 2, 0x01},  {0, 2, 2, 0x08}, {0x40, 2, 2, 0},
        {0x20, 2, 2, 0},     {0, 2, 3, 0},     {0, 1, 1, 0},    {0x02, 2, 2, 0},
        {0x10, 2, 2, -1},    {0x08, 2, 2, -1}, {-1, 0, 0, -1}};
    if (i == 4 || i == 8)
      fuzz_buf_op(&b, A_RUN, 0, 0);
    fuzz_buf_op(&b, A_ACCEPT, 0, 0);
    fuzz_buf_op(&b, A_RUN, 0, 0);
    if (hs[i][0] >= 0)
      tcpf_seed_hs(&b, i, hs[i][0], hs[i][1], hs[i][2]);
    fuzz_buf_op(&b, A_RUN, 0, 0);
    if (hs[i][3] >= 0)
      tcpf_seed_hs(&b, i, hs[i][3], hs[i][1], hs[i][2]);
  }
  fuzz_buf_op(&b, A_RAW, 10, 3);
  fuzz_buf_bytes(&b, "GET / HTTP/1.0\r\n\r\n", 18);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_TIME, 0, 3);
  emit("strangers", b.p, b.len);
  b.len = 0;

  /* Rank 0 calls ranks that answer wrongly: a CHALLENGE from the wrong
   * rank, one that calls someone, a HELLO in its place; an ACK under a
   * wrong key, an ACK reflecting our own proof. */
  fuzz_buf_u8(&b, 0);
  for (int i = 0; i < 5; i++) {
    static const int hs[][3] = {
        {0, 2, -1}, {0x04, 1, -1}, {0x10, 1, -1}, {0, 3, 0x80 | 3}, {0, 2, 1}};
    fuzz_buf_op(&b, A_CONNECT, hs[i][1], 0);
    fuzz_buf_op(&b, A_RUN, 0, 0);
    tcpf_seed_hs(&b, i, hs[i][0], i == 0 ? 3 : hs[i][1], 0);
    fuzz_buf_op(&b, A_RUN, 0, 0);
    if (hs[i][2] >= 0)
      tcpf_seed_hs(&b, i, hs[i][2], hs[i][1], 0);
    fuzz_buf_op(&b, A_RUN, 0, 0);
  }
  emit("wrong-listeners", b.p, b.len);
  b.len = 0;

  /* Established peers misbehave: a frame over the limit, a frame the
   * runtime rejects; rank 3 is refused (it must use shared memory). */
  fuzz_buf_u8(&b, 4 | 8);
  for (int i = 0; i < 3; i++) {
    fuzz_buf_op(&b, A_ACCEPT, 0, 0);
    fuzz_buf_op(&b, A_RUN, 0, 0);
    tcpf_seed_full(&b, i, i + 1, 0);
  }
  tcpf_seed_frame(&b, 0, MMP__F_RTS, "x", 1, 0x20);
  fuzz_buf_u32(&b, 1u << 20);
  tcpf_seed_frame(&b, 1, MMP__F_EAGER, "y", 2, 0x80 | 1);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_ABORT, 2, 0);
  fuzz_buf_op(&b, A_CONNECT, 3, 0x80);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  emit("misbehaving-peers", b.p, b.len);
  b.len = 0;

  /* Sealed: garbage in the clear after the handshake, then a record that
   * does not open. */
  fuzz_buf_u8(&b, 2 | 32);
  fuzz_buf_op(&b, A_ACCEPT, 0, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  tcpf_seed_full(&b, 0, 0, 0);
  fuzz_buf_op(&b, A_ACCEPT, 0, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  tcpf_seed_full(&b, 1, 1, 0);
  fuzz_buf_op(&b, A_RAW, 0x80, 0);
  fuzz_buf_bytes(&b, "plaintext frame?", 16);
  fuzz_buf_op(&b, A_RAW, 0x81, 0);
  fuzz_buf_bytes(&b, "\x10\0\0\0not a sealed record.", 24);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  emit("sealed-garbage", b.p, b.len);
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
  tcpf_seed_hs(&b, 0, 0, 0, 0);
  tcpf_seed_hs(&b, 1, 0, 2, 2);
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
