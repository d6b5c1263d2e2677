/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the rendezvous server (transport/boot_server.c) with
 * every connection, message, disconnection and timeout a job of 1 to 4
 * ranks can throw at it, on the fake libuv of fake_uv.h (no socket, no
 * clock: each input replays exactly).
 *
 * Input: a flags byte (bits 0-1: job size - 1; bit 2: debug logging, so
 * that the log lines are formatted too; bit 3: the server seals, so the
 * harness seals what it sends after a PROOF that verifies and opens what
 * the server writes after WELCOME), then actions until the input
 * ends: connect; send raw bytes, a well-formed HELLO (a fresh nonce, any
 * rank, right or wrong size), a PROOF over that HELLO and the server's
 * CHALLENGE (right, under a wrong key, or the server's role reflected),
 * PUT, GETALL, GET, FENCE, ABORT, SUSPECT or BYE on a connection, in reads
 * of any size (bootstrap version 3); EOF or reset; let time pass; make
 * writes fail; broadcast an EVENT; run the loop. Then the server is
 * stopped and the loop run until nothing is left.
 *
 * Invariants:
 *  - what the server writes to each connection is a stream of valid
 *    server messages: CHALLENGE first and once (a 32-byte nonce, and
 *    flags that say MMP__BOOT_SEAL exactly when the server seals), then
 *    WELCOME once, and only after a HELLO and then a PROOF that verifies
 *    under the job key over that HELLO and the CHALLENGE, itself carrying
 *    the server's proof over both; before it only an ERROR; nothing after
 *    an ERROR;
 *    VALUES and FENCE_DONE only in reply to a GET, GETALL or FENCE of that
 *    connection, VALUES with one value per rank for GETALL and one for
 *    GET; bodies exactly as boot.h describes them;
 *  - rank_joined runs at most once per rank, rank_lost and abort only for
 *    a joined rank (rank_lost once), all_done once and only when every
 *    rank joined; none runs after stop;
 *  - after stop, its callback runs once and every handle is closed; no
 *    memory is left (LeakSanitizer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_uv.h"
#include "fuzz.h"
#include "minimp.h"
#include "transport/auth.h"
#include "transport/boot.h"
#include "transport/transport.h"
#include "transport/util.h"

#define BSF_MAX_IDS 64

static const uint8_t bsf_key[MMP__JOB_KEY_LEN] = "fuzz-job-key-16b";

/* What the harness knows of one connection. */
typedef struct bsf_conn_s {
  int peer;
  /* The requests it sent, parsed as the server parses them. */
  mmp__boot_rx_t sent;
  int sent_bad;   /* the stream stopped parsing */
  int keyed;      /* a HELLO, then a PROOF under the job's key */
  uint8_t *hello; /* the body of the first message sent, if a HELLO */
  uint32_t hello_len;
  uint8_t challenge[MMP__BOOT_CHALLENGE_LEN]; /* the server's CHALLENGE */
  int challenged;
  mmp__seal_t *tx; /* sealing server: after a PROOF that verifies */
  int nmsgs;
  struct {
    uint32_t id;
    uint8_t type;
    int ambiguous; /* the id was used for two kinds of request */
    int replies;
    int uses;
  } ids[BSF_MAX_IDS];
  int nids;
  /* What the server wrote, parsed. */
  mmp__boot_rx_t got;
  size_t got_off;
  int welcomed;
  int errored;
  int replies; /* messages the server wrote */
} bsf_conn_t;

static struct {
  uv_loop_t loop;
  mmp__boot_server_t *srv;
  int size;
  int stopped;
  int done;
  int joined[4];
  int lost[4];
  int all_done;
  bsf_conn_t conns[FUV_MAX_PEERS];
  int nconns;
  bsf_conn_t *cur; /* the connection a parser callback is about */
  int seal;        /* the server seals */
} bsf;

/* ---- The server's callbacks ------------------------------------------------
 */

static void bsf_rank_joined(void *ctx, int rank, const char *host, int pid) {
  (void)ctx;
  (void)pid;
  FUZZ_CHECK(!bsf.stopped && host != NULL);
  FUZZ_CHECK(rank >= 0 && rank < bsf.size && !bsf.joined[rank]);
  bsf.joined[rank] = 1;
}

static void bsf_rank_lost(void *ctx, int rank, const char *reason) {
  (void)ctx;
  FUZZ_CHECK(!bsf.stopped && reason != NULL);
  FUZZ_CHECK(rank >= 0 && rank < bsf.size && bsf.joined[rank]);
  FUZZ_CHECK(!bsf.lost[rank]);
  bsf.lost[rank] = 1;
}

static void bsf_abort(void *ctx, int rank, int code, const char *message) {
  (void)ctx;
  (void)code;
  FUZZ_CHECK(!bsf.stopped && message != NULL);
  FUZZ_CHECK(rank >= 0 && rank < bsf.size && bsf.joined[rank]);
}

static void bsf_all_done(void *ctx) {
  int r;

  (void)ctx;
  FUZZ_CHECK(!bsf.stopped && !bsf.all_done);
  for (r = 0; r < bsf.size; r++)
    FUZZ_CHECK(bsf.joined[r]);
  bsf.all_done = 1;
}

static void bsf_stopped(void *arg) {
  (void)arg;
  FUZZ_CHECK(bsf.stopped && !bsf.done);
  bsf.done = 1;
}

/* ---- What the harness sent
 * ---------------------------------------------------- */

/* 1 if `mac` is `role`'s proof over the HELLO sent and the CHALLENGE. */
static int bsf_verify(const bsf_conn_t *c, int role, const uint8_t *mac) {
  mmp__auth_t a;
  int ok;

  mmp__auth_begin(&a, bsf_key, MMP__AUTH_BOOT, c->hello, c->hello_len,
                  c->challenge, sizeof(c->challenge));
  ok = mmp__auth_check(
      &a, role, role == MMP__AUTH_DIALER ? MMP__AUTH_PROVE : MMP__AUTH_ACCEPT,
      mac);
  mmp__auth_end(&a);
  return ok;
}

/* The keys the transcript gives: client to server, and back. */
static void bsf_keys(const bsf_conn_t *c, uint8_t d2l[MMP__SESSION_KEY_LEN],
                     uint8_t l2d[MMP__SESSION_KEY_LEN]) {
  mmp__auth_t a;

  mmp__auth_begin(&a, bsf_key, MMP__AUTH_BOOT, c->hello, c->hello_len,
                  c->challenge, sizeof(c->challenge));
  mmp__auth_session_keys(&a, bsf_key, d2l, l2d);
  mmp__auth_end(&a);
}

static int bsf_sent_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)ctx;
  return mmp__boot_hdr_decode(rx->hbuf, MMP__BOOT_MAX_BODY, &rx->hdr, why);
}

static void bsf_sent_message(void *ctx, const mmp__boot_hdr_t *h,
                             const uint8_t *body) {
  bsf_conn_t *c = ctx;
  int i;

  if (c->nmsgs == 0 && h->type == MMP__B_HELLO) {
    c->hello = malloc(h->len + 1);
    FUZZ_CHECK(c->hello != NULL);
    memcpy(c->hello, body, h->len);
    c->hello_len = h->len;
  }
  if (c->nmsgs++ == 1) {
    c->keyed = c->hello != NULL && c->challenged && h->type == MMP__B_PROOF &&
               h->len == MMP__MAC_LEN && bsf_verify(c, MMP__AUTH_DIALER, body);
    /* A sealing server opens what follows a PROOF it takes. */
    if (c->keyed && bsf.seal) {
      uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
      bsf_keys(c, d2l, l2d);
      c->tx = calloc(1, sizeof(*c->tx));
      FUZZ_CHECK(c->tx != NULL);
      memcpy(c->tx->key, d2l, sizeof(d2l));
    }
  }
  if (h->type != MMP__B_GET && h->type != MMP__B_GETALL &&
      h->type != MMP__B_FENCE)
    return;
  for (i = 0; i < c->nids; i++) {
    if (c->ids[i].id != h->id)
      continue;
    c->ids[i].ambiguous |= c->ids[i].type != h->type;
    c->ids[i].uses++;
    return;
  }
  if (c->nids == BSF_MAX_IDS) {
    c->sent_bad = 1; /* too many to follow: stop checking replies */
    return;
  }
  c->ids[c->nids].id = h->id;
  c->ids[c->nids].type = h->type;
  c->ids[c->nids].uses = 1;
  c->nids++;
}

static void bsf_sent_error(void *ctx, int err, const char *why) {
  (void)err;
  (void)why;
  ((bsf_conn_t *)ctx)->sent_bad = 1;
}

static int bsf_sent_closed(void *ctx) {
  return ((bsf_conn_t *)ctx)->sent_bad;
}

static const mmp__boot_rx_ops_t bsf_sent_ops = {
    bsf_sent_header, bsf_sent_message, bsf_sent_error, bsf_sent_closed};

/* Raw bytes go as they are, even on a sealed connection. */
static void bsf_send(bsf_conn_t *c, const void *p, size_t n, size_t chunk) {
  if (fuv_closed(c->peer))
    return;
  if (c->tx == NULL)
    mmp__boot_rx_feed(&c->sent, p, n, &bsf_sent_ops, c);
  else
    c->sent_bad = 1; /* the server stops there: stop following */
  fuv_send(c->peer, p, n, chunk);
}

/* ---- What the server wrote
 * ---------------------------------------------------- */

static int bsf_got_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)ctx;
  return mmp__boot_hdr_decode(rx->hbuf, MMP__BOOT_MAX_BODY, &rx->hdr, why);
}

static void bsf_check_values(bsf_conn_t *c, const mmp__boot_hdr_t *h,
                             mmp__boot_rd_t *rd) {
  uint32_t count = mmp__boot_rd_u32(rd), i;
  const uint8_t *v;
  int k;

  for (i = 0; i < count && !rd->bad; i++)
    mmp__boot_rd_blob(rd, &v, MMP__BOOT_MAX_VALUE);
  FUZZ_CHECK(!rd->bad && rd->left == 0);
  if (c->sent_bad)
    return;
  for (k = 0; k < c->nids && c->ids[k].id != h->id; k++)
    ;
  FUZZ_CHECK(k < c->nids); /* a reply to a request of this connection */
  if (c->ids[k].ambiguous)
    return;
  FUZZ_CHECK(c->ids[k].type == MMP__B_GET || c->ids[k].type == MMP__B_GETALL);
  FUZZ_CHECK(count ==
             (c->ids[k].type == MMP__B_GETALL ? (uint32_t)bsf.size : 1));
  FUZZ_CHECK(++c->ids[k].replies <= c->ids[k].uses);
}

static void bsf_got_message(void *ctx, const mmp__boot_hdr_t *h,
                            const uint8_t *body) {
  bsf_conn_t *c = ctx;
  mmp__boot_rd_t rd;
  const char *s;
  int k;

  mmp__boot_rd_init(&rd, body, h->len);
  c->replies++;
  FUZZ_CHECK(!c->errored); /* nothing follows an ERROR */
  FUZZ_CHECK(c->challenged || h->type == MMP__B_CHALLENGE ||
             h->type == MMP__B_ERROR);
  FUZZ_CHECK(c->welcomed || h->type == MMP__B_CHALLENGE ||
             h->type == MMP__B_WELCOME || h->type == MMP__B_ERROR);
  switch (h->type) {
  case MMP__B_CHALLENGE:
    FUZZ_CHECK(!c->challenged && h->len == MMP__BOOT_CHALLENGE_LEN);
    FUZZ_CHECK(mmp__get_u32(body + MMP__NONCE_LEN) ==
               (bsf.seal ? MMP__BOOT_SEAL : 0u));
    memcpy(c->challenge, body, MMP__BOOT_CHALLENGE_LEN);
    c->challenged = 1;
    break;
  case MMP__B_WELCOME:
    FUZZ_CHECK(!c->welcomed && h->len == MMP__MAC_LEN);
    FUZZ_CHECK(c->keyed);
    FUZZ_CHECK(bsf_verify(c, MMP__AUTH_LISTENER, body));
    c->welcomed = 1;
    /* What a sealing server writes after WELCOME is sealed. */
    if (bsf.seal) {
      uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
      bsf_keys(c, d2l, l2d);
      FUZZ_CHECK(mmp__boot_rx_seal(&c->got, l2d) == 0);
    }
    break;
  case MMP__B_VALUES:
    bsf_check_values(c, h, &rd);
    break;
  case MMP__B_FENCE_DONE:
    FUZZ_CHECK(h->len == 0);
    if (c->sent_bad)
      break;
    for (k = 0; k < c->nids && c->ids[k].id != h->id; k++)
      ;
    FUZZ_CHECK(k < c->nids);
    FUZZ_CHECK(c->ids[k].ambiguous || (c->ids[k].type == MMP__B_FENCE &&
                                       ++c->ids[k].replies <= c->ids[k].uses));
    break;
  case MMP__B_EVENT:
    mmp__boot_rd_u32(&rd);
    mmp__boot_rd_u32(&rd);
    mmp__boot_rd_u32(&rd);
    mmp__boot_rd_str(&rd, &s, 4096);
    FUZZ_CHECK(!rd.bad && rd.left == 0);
    break;
  case MMP__B_ERROR:
    FUZZ_CHECK((int32_t)mmp__boot_rd_u32(&rd) < 0);
    mmp__boot_rd_str(&rd, &s, 4096);
    FUZZ_CHECK(!rd.bad && rd.left == 0);
    c->errored = 1;
    break;
  default:
    FUZZ_CHECK(!"a message type servers do not send");
  }
}

static void bsf_got_error(void *ctx, int err, const char *why) {
  (void)ctx;
  (void)err;
  (void)why;
  FUZZ_CHECK(!"the server wrote a malformed header");
}

static int bsf_got_closed(void *ctx) {
  (void)ctx;
  return 0;
}

static const mmp__boot_rx_ops_t bsf_got_ops = {bsf_got_header, bsf_got_message,
                                               bsf_got_error, bsf_got_closed};

/* Parses what the server wrote since the last look. */
static void bsf_check_output(void) {
  int i;

  for (i = 0; i < bsf.nconns; i++) {
    bsf_conn_t *c = &bsf.conns[i];
    const fuzz_buf_t *out = fuv_output(c->peer);
    if (out->len > c->got_off) {
      mmp__boot_rx_feed(&c->got, out->p + c->got_off, out->len - c->got_off,
                        &bsf_got_ops, c);
      c->got_off = out->len;
    }
  }
}

/* ---- Actions
 * ------------------------------------------------------------------- */

/* One byte picks a connection (NULL while there is none). */
static bsf_conn_t *bsf_pick(fuzz_in_t *in) {
  uint8_t k = fuzz_u8(in);

  return bsf.nconns > 0 ? &bsf.conns[k % bsf.nconns] : NULL;
}

/* A name: a common one, or any bytes (up to 70, past the 64 allowed). */
static size_t bsf_name(fuzz_in_t *in, const char **name) {
  static const char *const names[] = {"addr", "node", "x"};
  const uint8_t *p;
  uint8_t k = fuzz_u8(in);

  if (k < 3) {
    *name = names[k];
    return strlen(*name);
  }
  k = (uint8_t)fuzz_bytes(in, &p, 70);
  *name = (const char *)p;
  return k;
}

/* Finishes `w` as a message and sends it in reads of `chunk` bytes. */
static void bsf_send_msg(bsf_conn_t *c, mmp__boot_wr_t *w, uint8_t type,
                         uint32_t id, size_t chunk) {
  if (mmp__boot_wr_finish(w, type, id) != 0)
    return;
  if (c->tx != NULL && !fuv_closed(c->peer)) {
    mmp__boot_rx_feed(&c->sent, w->buf, w->len, &bsf_sent_ops, c);
    FUZZ_CHECK(mmp__boot_seal_msg(c->tx, &w->buf, &w->len) == 0);
    fuv_send(c->peer, w->buf, w->len, chunk);
  } else {
    bsf_send(c, w->buf, w->len, chunk);
  }
  free(w->buf);
}

/* HELLO as a rank's client writes it (boot_client.c): a fresh nonce, rank,
 * size, pid, host. */
static void bsf_hello(mmp__boot_wr_t *w, uint32_t rank, uint32_t size,
                      const char *host, size_t hlen) {
  uint8_t nonce[MMP__NONCE_LEN];

  mmp__auth_nonce(nonce);
  mmp__boot_wr_raw(w, nonce, sizeof(nonce));
  mmp__boot_wr_u32(w, rank);
  mmp__boot_wr_u32(w, size);
  mmp__boot_wr_u32(w, 1234);
  mmp__boot_wr_str(w, host, hlen);
}

enum {
  A_CONNECT,
  A_RAW,
  A_HELLO,
  A_PROOF,
  A_PUT,
  A_GETALL,
  A_GET,
  A_FENCE,
  A_ABORT,
  A_SUSPECT,
  A_BYE,
  A_EOF,
  A_RESET,
  A_TIME,
  A_FAIL_WRITES,
  A_BROADCAST,
  A_RUN,
  A_COUNT
};

static void bsf_action(fuzz_in_t *in) {
  static const uint64_t steps[] = {0, 1, 999, 1000, 9999, 10000, 60000};
  int op = (int)fuzz_below(in, A_COUNT);
  bsf_conn_t *c = op == A_CONNECT || op >= A_TIME ? NULL : bsf_pick(in);
  size_t chunk = fuzz_u8(in);
  mmp__boot_wr_t w;
  const uint8_t *p;
  const char *s;
  size_t n;
  int peer;

  if (op != A_CONNECT && op < A_TIME && c == NULL)
    return;
  mmp__boot_wr_init(&w);
  switch (op) {
  case A_CONNECT:
    peer = fuv_incoming();
    if (peer >= 0) {
      c = &bsf.conns[bsf.nconns++];
      memset(c, 0, sizeof(*c));
      c->peer = peer;
    }
    break;
  case A_RAW:
    n = fuzz_bytes(in, &p, 4096);
    bsf_send(c, p, n, chunk);
    break;
  case A_HELLO: {
    uint8_t how = fuzz_u8(in);
    n = fuzz_bytes(in, &p, 300);
    bsf_hello(&w, fuzz_below(in, (uint32_t)bsf.size + 1),
              (uint32_t)bsf.size + (how & 0x40 ? 1 : 0), (const char *)p, n);
    bsf_send_msg(c, &w, MMP__B_HELLO, 0, chunk);
    break;
  }
  case A_PROOF: {
    /* Over the first HELLO sent (nothing if none) and the CHALLENGE seen;
     * 0x80: under a wrong key; 0x01: the server's role. */
    uint8_t how = fuzz_u8(in), key[MMP__JOB_KEY_LEN], mac[MMP__MAC_LEN];
    mmp__auth_t a;
    memcpy(key, bsf_key, sizeof(key));
    key[how % MMP__JOB_KEY_LEN] ^= how & 0x80 ? 1 : 0;
    mmp__auth_begin(&a, key, MMP__AUTH_BOOT, c->hello, c->hello_len,
                    c->challenge, sizeof(c->challenge));
    mmp__auth_mac(&a, how & 1 ? MMP__AUTH_LISTENER : MMP__AUTH_DIALER,
                  how & 1 ? MMP__AUTH_ACCEPT : MMP__AUTH_PROVE, mac);
    mmp__auth_end(&a);
    mmp__boot_wr_raw(&w, mac, sizeof(mac));
    bsf_send_msg(c, &w, MMP__B_PROOF, 0, chunk);
    break;
  }
  case A_PUT:
    n = bsf_name(in, &s);
    mmp__boot_wr_str(&w, s, n);
    n = fuzz_bytes(in, &p, 4100);
    mmp__boot_wr_blob(&w, p, n);
    bsf_send_msg(c, &w, MMP__B_PUT, fuzz_u8(in), chunk);
    break;
  case A_GETALL:
  case A_GET:
    if (op == A_GET)
      mmp__boot_wr_u32(&w, fuzz_below(in, (uint32_t)bsf.size + 1));
    n = bsf_name(in, &s);
    mmp__boot_wr_str(&w, s, n);
    bsf_send_msg(c, &w, op == A_GET ? MMP__B_GET : MMP__B_GETALL, fuzz_u8(in),
                 chunk);
    break;
  case A_FENCE:
    mmp__boot_wr_u32(&w, fuzz_below(in, 3));
    bsf_send_msg(c, &w, MMP__B_FENCE, fuzz_u8(in), chunk);
    break;
  case A_ABORT:
  case A_SUSPECT:
    mmp__boot_wr_u32(&w, op == A_ABORT
                             ? fuzz_u32(in)
                             : fuzz_below(in, (uint32_t)bsf.size + 1));
    n = fuzz_bytes(in, &p, 4100);
    mmp__boot_wr_str(&w, (const char *)p, n);
    bsf_send_msg(c, &w, op == A_ABORT ? MMP__B_ABORT : MMP__B_SUSPECT, 0,
                 chunk);
    break;
  case A_BYE:
    bsf_send_msg(c, &w, MMP__B_BYE, 0, chunk);
    break;
  case A_EOF:
    fuv_eof(c->peer);
    break;
  case A_RESET:
    fuv_reset_peer(c->peer);
    break;
  case A_TIME:
    fuv_advance(steps[chunk % (sizeof(steps) / sizeof(steps[0]))]);
    break;
  case A_FAIL_WRITES:
    fuv_fail_writes(chunk % 4);
    break;
  case A_BROADCAST:
    n = fuzz_bytes(in, &p, 64);
    if (!bsf.stopped) {
      char msg[65];
      memcpy(msg, p, n);
      msg[n] = '\0';
      mmp__boot_server_broadcast(bsf.srv, MMP__BOOT_EV_RANK_FAILED,
                                 (int)(chunk % 4), MMP_EPEERLOST, msg,
                                 (int)(chunk >> 4) - 1);
    }
    break;
  default:
    fuv_run();
    break;
  }
  bsf_check_output();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mmp__boot_server_cb_t cb = {NULL, bsf_rank_joined, bsf_rank_lost,
                                           bsf_abort, bsf_all_done};
  struct sockaddr_storage addr;
  char name[64];
  fuzz_in_t in;
  int flags, rc, i;

  memset(&bsf, 0, sizeof(bsf));
  fuv_reset(&bsf.loop);
  fuzz_in_init(&in, data, size);
  fuzz_random_reset();
  flags = fuzz_u8(&in);
  bsf.size = 1 + (flags & 3);
  mmp__log_level = flags & 4 ? MMP__LOG_DEBUG : -1;
  bsf.seal = (flags & 8) != 0;
  FUZZ_CHECK(mmp__addr_parse("127.0.0.1:0", &addr) == 0);
  rc =
      mmp__boot_server_start(&bsf.loop, (struct sockaddr *)&addr, bsf.size,
                             bsf_key, 10000, &cb, &bsf.srv, name, sizeof(name));
  FUZZ_CHECK(rc == 0);
  FUZZ_CHECK(strcmp(name, "127.0.0.1:7000") == 0);
  if (bsf.seal)
    FUZZ_CHECK(mmp__boot_server_seal(bsf.srv) == 0);
  while (in.left > 0)
    bsf_action(&in);

  fuv_run();
  bsf_check_output();
  bsf.stopped = 1;
  mmp__boot_server_stop(bsf.srv, bsf_stopped, NULL);
  fuv_run();
  bsf_check_output();
  FUZZ_CHECK(bsf.done);
  FUZZ_CHECK(fuv_open_handles() == 0);
  for (i = 0; i < bsf.nconns; i++) {
    bsf_conn_t *c = &bsf.conns[i];
    if (getenv("FUZZ_TRACE") != NULL)
      fprintf(stderr,
              "connection %d: %d messages sent, %d replies, welcomed %d, "
              "error %d\n",
              i, c->nmsgs, c->replies, c->welcomed, c->errored);
    FUZZ_CHECK(fuv_closed(bsf.conns[i].peer));
    mmp__boot_rx_fini(&bsf.conns[i].sent);
    mmp__boot_rx_fini(&bsf.conns[i].got);
    free(bsf.conns[i].hello);
    free(bsf.conns[i].tx);
  }
  fuv_reset(&bsf.loop);
  mmp__log_level = -1;
  return 0;
}

/* ---- Seeds -----------------------------------------------------------------
 */

/* Seeds are written with the same actions the harness reads. */
static void bsf_op(fuzz_buf_t *b, int op, int conn, int chunk) {
  fuzz_buf_u8(b, (uint8_t)op);
  if (op != A_CONNECT && op < A_TIME)
    fuzz_buf_u8(b, (uint8_t)conn);
  fuzz_buf_u8(b, (uint8_t)chunk);
}

/* HELLO (`how`'s 0x40: a wrong size), then, after the loop, PROOF
 * (`how`'s other bits: 0x80 a wrong key, 0x01 reflected). */
static void bsf_seed_hello(fuzz_buf_t *b, int conn, int rank, int how) {
  bsf_op(b, A_HELLO, conn, 0);
  fuzz_buf_u8(b, (uint8_t)how);
  fuzz_buf_bytes(b, "node1", 5);
  fuzz_buf_u8(b, (uint8_t)rank);
  bsf_op(b, A_RUN, 0, 0);
  bsf_op(b, A_PROOF, conn, 0);
  fuzz_buf_u8(b, (uint8_t)(how & ~0x40));
}

static void bsf_seed_named(fuzz_buf_t *b, int op, int conn, int rank, int id) {
  bsf_op(b, op, conn, 0);
  if (op == A_GET)
    fuzz_buf_u8(b, (uint8_t)rank);
  fuzz_buf_u8(b, 0); /* "addr" */
  if (op == A_PUT)
    fuzz_buf_bytes(b, "127.0.0.1:4000", 14);
  fuzz_buf_u8(b, (uint8_t)id);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  fuzz_buf_t b = {0};
  int r;

  /* A job of two: join, exchange addresses, fence, leave; in clear, then
   * sealed. */
  for (int sealed = 0; sealed < 2; sealed++) {
    fuzz_buf_u8(&b, sealed ? 1 | 8 : 1);
    for (r = 0; r < 2; r++) {
      bsf_op(&b, A_CONNECT, 0, 0);
      bsf_seed_hello(&b, r, r, 0);
    }
    bsf_op(&b, A_RUN, 0, 0);
    for (r = 0; r < 2; r++) {
      bsf_seed_named(&b, A_PUT, r, 0, 0);
      bsf_seed_named(&b, A_GETALL, r, 0, 1);
      bsf_seed_named(&b, A_GET, r, 1 - r, 2);
      bsf_op(&b, A_FENCE, r, 7);
      fuzz_buf_u8(&b, 1);
      fuzz_buf_u8(&b, 3);
    }
    bsf_op(&b, A_RUN, 0, 0);
    for (r = 0; r < 2; r++)
      bsf_op(&b, A_BYE, r, 0);
    bsf_op(&b, A_RUN, 0, 0);
    emit(sealed ? "job-of-two-sealed" : "job-of-two", b.p, b.len);
    b.len = 0;
  }

  /* Wrong key, wrong size, a rank twice, a reflected proof, a PROOF
   * before HELLO, a HELLO and no PROOF until the deadline. */
  fuzz_buf_u8(&b, 2 | 4);
  for (r = 0; r < 7; r++)
    bsf_op(&b, A_CONNECT, 0, 0);
  bsf_op(&b, A_RUN, 0, 0);
  bsf_seed_hello(&b, 0, 0, 0x80 | 5);
  bsf_seed_hello(&b, 1, 1, 0x40);
  bsf_seed_hello(&b, 2, 2, 0);
  bsf_seed_hello(&b, 3, 2, 0);
  bsf_seed_hello(&b, 4, 0, 1);
  bsf_op(&b, A_PROOF, 5, 0);
  fuzz_buf_u8(&b, 0);
  bsf_op(&b, A_HELLO, 6, 0);
  fuzz_buf_u8(&b, 0);
  fuzz_buf_bytes(&b, "node2", 5);
  fuzz_buf_u8(&b, 1);
  bsf_op(&b, A_RUN, 0, 0);
  bsf_op(&b, A_TIME, 0, 5);
  emit("bad-hellos-and-timeout", b.p, b.len);
  b.len = 0;

  /* A rank dies while the other waits in a fence and a GETALL; the other
   * accuses a third. */
  fuzz_buf_u8(&b, 2);
  for (r = 0; r < 3; r++) {
    bsf_op(&b, A_CONNECT, 0, 0);
    bsf_seed_hello(&b, r, r, 0);
  }
  bsf_op(&b, A_FENCE, 0, 1);
  fuzz_buf_u8(&b, 0);
  fuzz_buf_u8(&b, 9);
  bsf_seed_named(&b, A_GETALL, 0, 0, 10);
  bsf_op(&b, A_RUN, 0, 0);
  bsf_op(&b, A_RESET, 1, 0);
  bsf_op(&b, A_SUSPECT, 0, 3);
  fuzz_buf_u8(&b, 2);
  fuzz_buf_bytes(&b, "silent", 6);
  bsf_op(&b, A_ABORT, 2, 0);
  fuzz_buf_u32(&b, (uint32_t)-3);
  fuzz_buf_bytes(&b, "giving up", 9);
  bsf_op(&b, A_BROADCAST, 0, 0x11);
  fuzz_buf_bytes(&b, "rank 1 failed", 13);
  bsf_op(&b, A_RUN, 0, 0);
  emit("rank-lost-mid-fence", b.p, b.len);
  b.len = 0;

  /* Garbage: a body larger than HELLO may be, bad magic, one byte a read. */
  fuzz_buf_u8(&b, 0);
  bsf_op(&b, A_CONNECT, 0, 0);
  bsf_op(&b, A_CONNECT, 0, 0);
  bsf_op(&b, A_RAW, 0, 1);
  fuzz_buf_bytes(&b, "MMPB\002\001\000\000\000\000\000\000\377\377\000\000",
                 16);
  bsf_op(&b, A_RAW, 1, 3);
  fuzz_buf_bytes(&b, "GET / HTTP/1.0\r\n\r\n", 18);
  bsf_op(&b, A_FAIL_WRITES, 0, 1);
  bsf_op(&b, A_RUN, 0, 0);
  emit("garbage", b.p, b.len);
  fuzz_buf_free(&b);
}
