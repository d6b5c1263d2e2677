/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the rendezvous client every rank runs
 * (transport/boot_client.c), against a server that answers anything: its
 * replies, pushed events and errors, well-formed or not, in reads of any
 * size, interleaved with the rank's own requests, a refused first connect,
 * timeouts, failed writes and an orderly close. On the fake libuv of
 * fake_uv.h.
 *
 * Input: a flags byte (bits 0-1: job size - 1; bits 2-3: this rank; bit 4:
 * the first connect is refused; bit 5: a 1 s start timeout; bit 6: debug
 * logging; bit 7: the rank seals, MINIMP_ENCRYPT), then actions until the
 * input ends; a CHALLENGE says whether the server seals, and then the
 * harness opens what the client writes after PROOF and seals what it
 * sends after a right WELCOME. Then the client is closed
 * and the loop run until nothing is left.
 *
 * Invariants:
 *  - what the client writes is HELLO with a nonce, its rank and size, then
 *    PROOF (only after the server's CHALLENGE, and verifying under the job
 *    key over that HELLO and the CHALLENGE; bootstrap version 3), then the
 *    requests it was asked for, in order, each with an id of its own,
 *    then at most a BYE, and nothing after it;
 *  - the start callback says success only after a WELCOME carrying the
 *    server's proof over both (the harness's A_WELCOME spoils it under a
 *    wrong key or with the client's role), where the server sent nothing
 *    but what the harness built;
 *  - the start callback runs once, each accepted request's callback once
 *    (a refused one never), close's callback once and last, cb->lost at
 *    most once (with 0 only after close), nothing after close's callback;
 *  - a GETALL that succeeds has one value per rank, a GET one value, each
 *    at most MMP__BOOT_MAX_VALUE bytes, and, where the server sent only
 *    well-formed messages, exactly the values it sent;
 *  - every handle is closed and no memory is left at the end.
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

#define BCF_MAX_REQS 256

static const uint8_t bcf_key[MMP__JOB_KEY_LEN] = "fuzz-job-key-16b";

/* One request the harness made, and what became of it. */
typedef struct bcf_req_s {
  uint8_t type;
  uint32_t id; /* learnt from what the client wrote; 0 before */
  int calls;   /* its callback ran this many times */
  int status;
  fuzz_buf_t want; /* the VALUES body the server sent first, if known */
  int want_set;
} bcf_req_t;

static struct {
  uv_loop_t loop;
  mmp__boot_client_t *c;
  int size, rank;
  int peer; /* the connection in use */
  int raw;  /* the server sent bytes not built by the harness */
  int start_calls, start_status;
  int lost_calls, lost_err;
  int close_called, close_calls;
  int after_close; /* a callback ran after close's */
  bcf_req_t reqs[BCF_MAX_REQS];
  int nreqs;
  /* What the client wrote, parsed. */
  mmp__boot_rx_t wrote;
  size_t wrote_off;
  int wrote_peer;
  int nwritten;                            /* its messages, HELLO first */
  uint8_t hello[MMP__BOOT_HDR_SIZE + 512]; /* its HELLO's body */
  uint32_t hello_len;
  uint8_t challenge[MMP__BOOT_CHALLENGE_LEN]; /* the CHALLENGE sent here */
  int challenged;
  int seal;        /* that CHALLENGE said MMP__BOOT_SEAL */
  int wrote_blind; /* sealed after a PROOF over bytes the harness did not
                      build: what follows cannot be opened here */
  mmp__seal_t *tx; /* the harness's side, after a right WELCOME */
  int proved;      /* the client's PROOF went out and verified */
  int welcome;     /* a WELCOME with the server's right proof was sent */
  int next_req;    /* the request the next message must be */
  uint32_t ids[BCF_MAX_REQS + 2];
  int nids;
  int bye;
} bcf;

/* ---- Callbacks
 * ---------------------------------------------------------------- */

static void bcf_on_start(void *arg, int status, size_t count,
                         const uint8_t *const *values, const size_t *lens) {
  (void)arg;
  (void)values;
  (void)lens;
  FUZZ_CHECK(!bcf.close_calls && bcf.start_calls++ == 0);
  FUZZ_CHECK(status <= 0 && count == 0);
  FUZZ_CHECK(status != 0 || bcf.raw || bcf.welcome);
  bcf.start_status = status;
}

static void bcf_on_done(void *arg, int status, size_t count,
                        const uint8_t *const *values, const size_t *lens) {
  bcf_req_t *r = &bcf.reqs[(intptr_t)arg];
  size_t i, off = 4;

  FUZZ_CHECK(!bcf.close_calls && r->calls++ == 0);
  FUZZ_CHECK(status <= 0);
  r->status = status;
  if (status != 0 || (r->type != MMP__B_GET && r->type != MMP__B_GETALL)) {
    FUZZ_CHECK(count == 0);
    return;
  }
  FUZZ_CHECK(count == (r->type == MMP__B_GETALL ? (size_t)bcf.size : 1));
  for (i = 0; i < count; i++) {
    FUZZ_CHECK(lens[i] <= MMP__BOOT_MAX_VALUE);
    FUZZ_CHECK(lens[i] == 0 || values[i] != NULL);
    if (r->want_set && !bcf.raw) {
      FUZZ_CHECK(off + 4 + lens[i] <= r->want.len);
      FUZZ_CHECK(mmp__get_u32(r->want.p + off) == lens[i]);
      FUZZ_CHECK(lens[i] == 0 ||
                 memcmp(r->want.p + off + 4, values[i], lens[i]) == 0);
      off += 4 + lens[i];
    }
  }
}

static void bcf_on_event(void *ctx, uint32_t kind, int rank, int code,
                         const char *msg) {
  (void)ctx;
  (void)kind;
  (void)rank;
  (void)code;
  FUZZ_CHECK(!bcf.close_calls && msg != NULL);
  FUZZ_CHECK(!bcf.lost_calls && !bcf.close_called);
}

static void bcf_on_lost(void *ctx, int err, const char *reason) {
  (void)ctx;
  FUZZ_CHECK(!bcf.close_calls && bcf.lost_calls++ == 0);
  FUZZ_CHECK(err < 0 || (err == 0 && bcf.close_called));
  FUZZ_CHECK(reason != NULL);
  bcf.lost_err = err;
}

static void bcf_on_closed(void *arg, int status, size_t count,
                          const uint8_t *const *values, const size_t *lens) {
  (void)arg;
  (void)status;
  (void)count;
  (void)values;
  (void)lens;
  FUZZ_CHECK(bcf.close_called && bcf.close_calls++ == 0);
}

/* ---- What the client wrote
 * ---------------------------------------------------- */

/* The keys the transcript gives: client to server, and back. */
static void bcf_keys(uint8_t d2l[MMP__SESSION_KEY_LEN],
                     uint8_t l2d[MMP__SESSION_KEY_LEN]) {
  mmp__auth_t a;

  mmp__auth_begin(&a, bcf_key, MMP__AUTH_BOOT, bcf.hello, bcf.hello_len,
                  bcf.challenge, sizeof(bcf.challenge));
  mmp__auth_session_keys(&a, bcf_key, d2l, l2d);
  mmp__auth_end(&a);
}

static int bcf_wrote_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)ctx;
  return mmp__boot_hdr_decode(rx->hbuf, MMP__BOOT_MAX_BODY, &rx->hdr, why);
}

static void bcf_wrote_message(void *ctx, const mmp__boot_hdr_t *h,
                              const uint8_t *body) {
  int i;

  (void)ctx;
  FUZZ_CHECK(!bcf.bye); /* nothing after BYE */
  if (bcf.nwritten++ == 0) {
    FUZZ_CHECK(h->type == MMP__B_HELLO && h->len >= MMP__NONCE_LEN + 14);
    FUZZ_CHECK(h->len <= sizeof(bcf.hello));
    FUZZ_CHECK(mmp__get_u32(body + 32) == (uint32_t)bcf.rank);
    FUZZ_CHECK(mmp__get_u32(body + 36) == (uint32_t)bcf.size);
    memcpy(bcf.hello, body, h->len);
    bcf.hello_len = h->len;
    bcf.ids[bcf.nids++] = h->id;
    return;
  }
  if (bcf.nwritten == 2) {
    mmp__auth_t a;
    FUZZ_CHECK(h->type == MMP__B_PROOF && h->len == MMP__MAC_LEN);
    FUZZ_CHECK(bcf.challenged);
    mmp__auth_begin(&a, bcf_key, MMP__AUTH_BOOT, bcf.hello, bcf.hello_len,
                    bcf.challenge, sizeof(bcf.challenge));
    FUZZ_CHECK(bcf.raw ||
               mmp__auth_check(&a, MMP__AUTH_DIALER, MMP__AUTH_PROVE, body));
    mmp__auth_end(&a);
    bcf.proved = 1;
    /* What the client writes after PROOF is sealed if CHALLENGE said so
     * (it writes nothing more unless WELCOME verifies). */
    if (bcf.raw) {
      bcf.wrote_blind = 1;
    } else if (bcf.seal) {
      uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
      bcf_keys(d2l, l2d);
      FUZZ_CHECK(mmp__boot_rx_seal(&bcf.wrote, d2l) == 0);
    }
    return;
  }
  /* A fresh id for every message (ids are given when a request is made,
   * so a HELLO sent after a redial may carry a later one). */
  for (i = 0; i < bcf.nids; i++)
    FUZZ_CHECK(bcf.ids[i] != h->id);
  if (bcf.nids < BCF_MAX_REQS + 2)
    bcf.ids[bcf.nids++] = h->id;
  if (h->type == MMP__B_BYE) {
    FUZZ_CHECK(bcf.close_called && h->len == 0);
    bcf.bye = 1;
    return;
  }
  /* The requests go out in the order they were made; some never do. */
  while (bcf.next_req < bcf.nreqs && bcf.reqs[bcf.next_req].type != h->type)
    bcf.next_req++;
  FUZZ_CHECK(bcf.next_req < bcf.nreqs);
  bcf.reqs[bcf.next_req++].id = h->id;
}

static void bcf_wrote_error(void *ctx, int err, const char *why) {
  (void)ctx;
  (void)err;
  (void)why;
  FUZZ_CHECK(!"the client wrote a malformed header");
}

static int bcf_wrote_closed(void *ctx) {
  (void)ctx;
  return bcf.wrote_blind;
}

static const mmp__boot_rx_ops_t bcf_wrote_ops = {
    bcf_wrote_header, bcf_wrote_message, bcf_wrote_error, bcf_wrote_closed};

static void bcf_check_output(void) {
  const fuzz_buf_t *out;
  int p = fuv_last_connect();

  if (p < 0)
    return;
  if (p != bcf.wrote_peer) {
    /* A new connection (after a refused one) starts over with HELLO. */
    FUZZ_CHECK(bcf.nwritten == 0);
    bcf.challenged = 0;
    bcf.wrote_peer = p;
    bcf.wrote_off = 0;
  }
  out = fuv_output(p);
  if (out->len > bcf.wrote_off && !bcf.wrote_blind) {
    mmp__boot_rx_feed(&bcf.wrote, out->p + bcf.wrote_off,
                      out->len - bcf.wrote_off, &bcf_wrote_ops, NULL);
    bcf.wrote_off = out->len;
  }
}

/* ---- Actions ----------------------------------------------------------------
 */

/* A server message built with the writer, sent on the connection. */
static void bcf_reply(mmp__boot_wr_t *w, uint8_t type, uint32_t id,
                      size_t chunk) {
  int p = fuv_last_connect();

  if (mmp__boot_wr_finish(w, type, id) != 0)
    return;
  if (bcf.tx != NULL)
    FUZZ_CHECK(mmp__boot_seal_msg(bcf.tx, &w->buf, &w->len) == 0);
  if (p >= 0)
    fuv_send(p, w->buf, w->len, chunk);
  free(w->buf);
}

/* The request a reply is for: one the client wrote, or any id. */
static bcf_req_t *bcf_target(fuzz_in_t *in, uint32_t *id) {
  uint8_t k = fuzz_u8(in);
  bcf_req_t *r;

  if (bcf.nreqs == 0 || k == 0xff) {
    *id = k;
    return NULL;
  }
  r = &bcf.reqs[k % bcf.nreqs];
  *id = r->id;
  return r;
}

static const char *bcf_name(fuzz_in_t *in, char *buf, size_t len) {
  static const char *const names[] = {"addr", "node", ""};
  const uint8_t *p;
  uint8_t k = fuzz_u8(in);
  size_t n;

  if (k < 3)
    return names[k];
  n = fuzz_bytes(in, &p, len - 1); /* past 64 bytes: refused */
  memcpy(buf, p, n);
  buf[n] = '\0';
  return buf;
}

/* Records a request the client accepted (rc 0). */
static void bcf_made(uint8_t type, int rc) {
  FUZZ_CHECK(rc <= 0);
  if (rc == 0)
    bcf.nreqs++;
  else
    memset(&bcf.reqs[bcf.nreqs], 0, sizeof(bcf.reqs[0]));
  (void)type;
}

enum {
  A_RAW,
  A_CHALLENGE,
  A_WELCOME,
  A_VALUES,
  A_FENCE_DONE,
  A_EVENT,
  A_ERROR,
  A_PUT,
  A_GETALL,
  A_GET,
  A_FENCE,
  A_ABORT,
  A_SUSPECT,
  A_CLOSE,
  A_EOF,
  A_RESET,
  A_TIME,
  A_FAIL_WRITES,
  A_RUN,
  A_COUNT
};

static void bcf_request(int op, fuzz_in_t *in) {
  bcf_req_t *r = &bcf.reqs[bcf.nreqs];
  void *arg = (void *)(intptr_t)bcf.nreqs;
  char name[80], msg[300];
  const char *s;
  const uint8_t *p;
  size_t n;
  int rc = MMP_EINVAL;

  if (bcf.nreqs == BCF_MAX_REQS || bcf.close_called)
    return;
  memset(r, 0, sizeof(*r));
  switch (op) {
  case A_PUT:
    r->type = MMP__B_PUT;
    s = bcf_name(in, name, sizeof(name));
    n = fuzz_bytes(in, &p, MMP__BOOT_MAX_VALUE + 4);
    rc = mmp__boot_put(bcf.c, s, n > 0 ? p : NULL, n, bcf_on_done, arg);
    break;
  case A_GETALL:
    r->type = MMP__B_GETALL;
    rc = mmp__boot_getall(bcf.c, bcf_name(in, name, sizeof(name)), bcf_on_done,
                          arg);
    break;
  case A_GET:
    r->type = MMP__B_GET;
    n = fuzz_below(in, (uint32_t)bcf.size + 1);
    rc = mmp__boot_get(bcf.c, (int)n, bcf_name(in, name, sizeof(name)),
                       bcf_on_done, arg);
    break;
  case A_FENCE:
    r->type = MMP__B_FENCE;
    rc = mmp__boot_fence(bcf.c, fuzz_u8(in), bcf_on_done, arg);
    break;
  default:
    r->type = op == A_ABORT ? MMP__B_ABORT : MMP__B_SUSPECT;
    n = fuzz_bytes(in, &p, sizeof(msg) - 1);
    memcpy(msg, p, n);
    msg[n] = '\0';
    if (op == A_ABORT)
      rc = mmp__boot_abort(bcf.c, -(int)fuzz_u8(in), msg, bcf_on_done, arg);
    else
      rc = mmp__boot_suspect(bcf.c, (int)fuzz_below(in, (uint32_t)bcf.size + 1),
                             msg, bcf_on_done, arg);
    break;
  }
  bcf_made(r->type, rc);
}

static void bcf_action(fuzz_in_t *in) {
  static const uint64_t steps[] = {0, 1, 20, 40, 500, 999, 1000, 60000};
  int op = (int)fuzz_below(in, A_COUNT);
  size_t chunk = fuzz_u8(in);
  int p = fuv_last_connect();
  mmp__boot_wr_t w;
  bcf_req_t *r;
  const uint8_t *d;
  uint32_t id, i, count;
  size_t n;

  mmp__boot_wr_init(&w);
  if (getenv("FUZZ_TRACE") != NULL)
    fprintf(stderr, "action %d chunk %zu (peer %d)\n", op, chunk, p);
  switch (op) {
  case A_RAW:
    n = fuzz_bytes(in, &d, 4096);
    if (p >= 0 && n > 0) {
      fuv_send(p, d, n, chunk);
      bcf.raw = 1;
    }
    break;
  case A_CHALLENGE: {
    /* A fresh nonce and flags (0x40: the server seals; 0x20: a flag no
     * version knows); the first on a connection is the one that counts.
     * 0x80: one byte short. */
    uint8_t body[MMP__BOOT_CHALLENGE_LEN];
    mmp__auth_nonce(body);
    mmp__put_u32(body + MMP__NONCE_LEN,
                 (chunk & 0x40 ? MMP__BOOT_SEAL : 0) | (chunk & 0x20 ? 2u : 0));
    if (!bcf.challenged && p >= 0 && p == bcf.wrote_peer) {
      memcpy(bcf.challenge, body, sizeof(body));
      bcf.challenged = 1;
      bcf.seal = (chunk & 0x40) != 0;
    }
    mmp__boot_wr_raw(&w, body, chunk & 0x80 ? sizeof(body) - 1 : sizeof(body));
    bcf_reply(&w, MMP__B_CHALLENGE, 0, chunk);
    break;
  }
  case A_WELCOME: {
    /* The server's proof over the HELLO written and the CHALLENGE sent;
     * 0x80: under a wrong key; 0x01: the client's role. */
    uint8_t how = fuzz_u8(in), key[MMP__JOB_KEY_LEN], mac[MMP__MAC_LEN];
    mmp__auth_t a;
    memcpy(key, bcf_key, sizeof(key));
    key[how % MMP__JOB_KEY_LEN] ^= how & 0x80 ? 1 : 0;
    mmp__auth_begin(&a, key, MMP__AUTH_BOOT, bcf.hello, bcf.hello_len,
                    bcf.challenge, sizeof(bcf.challenge));
    mmp__auth_mac(&a, how & 1 ? MMP__AUTH_DIALER : MMP__AUTH_LISTENER,
                  how & 1 ? MMP__AUTH_PROVE : MMP__AUTH_ACCEPT, mac);
    mmp__auth_end(&a);
    if (!(how & 0x81) && bcf.challenged && bcf.nwritten > 0 &&
        p == bcf.wrote_peer)
      bcf.welcome = 1;
    mmp__boot_wr_raw(&w, mac, sizeof(mac));
    bcf_reply(&w, MMP__B_WELCOME, 0, chunk);
    /* After a right WELCOME the server seals if its CHALLENGE said so. */
    if (bcf.welcome && bcf.seal && bcf.tx == NULL) {
      uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
      bcf_keys(d2l, l2d);
      bcf.tx = calloc(1, sizeof(*bcf.tx));
      FUZZ_CHECK(bcf.tx != NULL);
      memcpy(bcf.tx->key, l2d, sizeof(l2d));
    }
    break;
  }
  case A_VALUES:
    r = bcf_target(in, &id);
    count = fuzz_u8(in);
    /* Mostly the right count; 0x80 and up: as the byte says. */
    if (count < 0x80 && r != NULL)
      count = r->type == MMP__B_GETALL ? (uint32_t)bcf.size : 1;
    else
      count &= 0x7f;
    mmp__boot_wr_u32(&w, count);
    for (i = 0; i < count; i++) {
      n = fuzz_bytes(in, &d, MMP__BOOT_MAX_VALUE + 1);
      mmp__boot_wr_blob(&w, d, n);
    }
    if (r != NULL && r->id != 0 && !r->want_set && !w.oom && w.buf != NULL) {
      fuzz_buf_put(&r->want, w.buf + MMP__BOOT_HDR_SIZE,
                   w.len - MMP__BOOT_HDR_SIZE);
      r->want_set = 1;
    }
    bcf_reply(&w, MMP__B_VALUES, id, chunk);
    break;
  case A_FENCE_DONE:
    bcf_target(in, &id);
    bcf_reply(&w, MMP__B_FENCE_DONE, id, chunk);
    break;
  case A_EVENT:
  case A_ERROR:
    if (op == A_EVENT) {
      mmp__boot_wr_u32(&w, fuzz_u8(in));
      mmp__boot_wr_u32(&w, fuzz_u8(in));
    } else {
      bcf_target(in, &id);
    }
    mmp__boot_wr_u32(&w, (uint32_t) - (int32_t)fuzz_u8(in));
    n = fuzz_bytes(in, &d, 4100);
    mmp__boot_wr_str(&w, (const char *)d, n);
    bcf_reply(&w, op == A_EVENT ? MMP__B_EVENT : MMP__B_ERROR,
              op == A_EVENT ? 0 : id, chunk);
    break;
  case A_CLOSE:
    if (!bcf.close_called) {
      bcf.close_called = 1;
      mmp__boot_client_close(bcf.c, bcf_on_closed, NULL);
    }
    break;
  case A_EOF:
    if (p >= 0)
      fuv_eof(p);
    break;
  case A_RESET:
    if (p >= 0)
      fuv_reset_peer(p);
    break;
  case A_TIME:
    fuv_advance(steps[chunk % (sizeof(steps) / sizeof(steps[0]))]);
    break;
  case A_FAIL_WRITES:
    fuv_fail_writes(chunk % 3);
    break;
  case A_RUN:
    fuv_run();
    break;
  default:
    bcf_request(op, in);
    break;
  }
  bcf_check_output();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mmp__boot_client_cb_t cb = {NULL, bcf_on_event, bcf_on_lost};
  struct sockaddr_storage addr, local;
  fuzz_in_t in;
  int flags, rc, i;

  memset(&bcf, 0, sizeof(bcf));
  bcf.wrote_peer = -1;
  fuzz_random_reset();
  fuv_reset(&bcf.loop);
  fuzz_in_init(&in, data, size);
  flags = fuzz_u8(&in);
  bcf.size = 1 + (flags & 3);
  bcf.rank = ((flags >> 2) & 3) % bcf.size;
  mmp__log_level = flags & 64 ? MMP__LOG_DEBUG : -1;
  fuv_set_connect_status(flags & 16 ? UV_ECONNREFUSED : 0);
  FUZZ_CHECK(mmp__addr_parse("127.0.0.1:7000", &addr) == 0);
  rc = mmp__boot_client_start(&bcf.loop, (struct sockaddr *)&addr, bcf_key,
                              bcf.rank, bcf.size, flags & 32 ? 1000 : 0, &cb,
                              bcf_on_start, NULL, &local, &bcf.c);
  FUZZ_CHECK(rc == 0);
  if (flags & 128)
    mmp__boot_client_seal(bcf.c);
  fuv_run();
  fuv_set_connect_status(0);
  bcf_check_output();
  while (in.left > 0)
    bcf_action(&in);

  if (!bcf.close_called) {
    bcf.close_called = 1;
    mmp__boot_client_close(bcf.c, bcf_on_closed, NULL);
  }
  fuv_advance(2000); /* past the BYE linger */
  bcf_check_output();
  FUZZ_CHECK(bcf.start_calls == 1 && bcf.close_calls == 1);
  FUZZ_CHECK(bcf.lost_calls == 1);
  if (getenv("FUZZ_TRACE") != NULL) {
    fprintf(stderr, "start %d, lost %d, %d messages written\n",
            bcf.start_status, bcf.lost_err, bcf.nwritten);
    for (i = 0; i < bcf.nreqs; i++)
      fprintf(stderr, "request %d: type %d, id %u, status %d\n", i,
              bcf.reqs[i].type, (unsigned)bcf.reqs[i].id, bcf.reqs[i].status);
  }
  for (i = 0; i < bcf.nreqs; i++) {
    FUZZ_CHECK(bcf.reqs[i].calls == 1);
    fuzz_buf_free(&bcf.reqs[i].want);
  }
  FUZZ_CHECK(fuv_open_handles() == 0);
  mmp__boot_rx_fini(&bcf.wrote);
  free(bcf.tx);
  fuv_reset(&bcf.loop);
  mmp__log_level = -1;
  return 0;
}

/* ---- Seeds -----------------------------------------------------------------
 */

static void bcf_op(fuzz_buf_t *b, int op, int chunk) {
  fuzz_buf_u8(b, (uint8_t)op);
  fuzz_buf_u8(b, (uint8_t)chunk);
}

/* The server's side of the handshake: CHALLENGE (sealing with `seal`),
 * the loop (PROOF), and WELCOME (`how` as A_WELCOME reads it; 0: the right
 * proof). */
static void bcf_seed_handshake(fuzz_buf_t *b, int chunk, int how, int seal) {
  bcf_op(b, A_CHALLENGE, seal ? 0x40 : 0);
  bcf_op(b, A_RUN, 0);
  bcf_op(b, A_WELCOME, chunk);
  fuzz_buf_u8(b, (uint8_t)how);
}

static void bcf_seed_welcome(fuzz_buf_t *b, int chunk, int how) {
  bcf_seed_handshake(b, chunk, how, 0);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  fuzz_buf_t b = {0};
  int k;

  /* A rank of three: put, getall, get, fence, answered; then close. In
   * clear, then sealed. */
  for (int sealed = 0; sealed < 2; sealed++) {
    fuzz_buf_u8(&b, (2 | 1 << 2) | (sealed ? 128 : 0));
    bcf_seed_handshake(&b, 0, 0, sealed);
    bcf_op(&b, A_PUT, 0);
    fuzz_buf_u8(&b, 0);
    fuzz_buf_bytes(&b, "127.0.0.1:4001", 14);
    bcf_op(&b, A_GETALL, 0);
    fuzz_buf_u8(&b, 0);
    bcf_op(&b, A_GET, 0);
    fuzz_buf_u8(&b, 2);
    fuzz_buf_u8(&b, 0);
    bcf_op(&b, A_FENCE, 0);
    fuzz_buf_u8(&b, 1);
    bcf_op(&b, A_RUN, 0);
    bcf_op(&b, A_VALUES, 0);
    fuzz_buf_u8(&b, 1); /* the GETALL */
    fuzz_buf_u8(&b, 0); /* the right count */
    for (k = 0; k < 3; k++)
      fuzz_buf_bytes(&b, "127.0.0.1:4000", 14);
    bcf_op(&b, A_VALUES, 7);
    fuzz_buf_u8(&b, 2); /* the GET */
    fuzz_buf_u8(&b, 0);
    fuzz_buf_bytes(&b, "127.0.0.1:4002", 14);
    bcf_op(&b, A_FENCE_DONE, 0);
    fuzz_buf_u8(&b, 3);
    bcf_op(&b, A_EVENT, 0);
    fuzz_buf_u8(&b, MMP__BOOT_EV_RANK_FAILED);
    fuzz_buf_u8(&b, 2);
    fuzz_buf_u8(&b, 9);
    fuzz_buf_bytes(&b, "rank 2 lost", 11);
    bcf_op(&b, A_RUN, 0);
    bcf_op(&b, A_CLOSE, 0);
    bcf_op(&b, A_RUN, 0);
    emit(sealed ? "session-sealed" : "session", b.p, b.len);
    b.len = 0;
  }

  /* Refused, redialled, then an ERROR about a pending GETALL. */
  fuzz_buf_u8(&b, 1 | 16 | 32);
  bcf_op(&b, A_TIME, 2);
  bcf_op(&b, A_RUN, 0);
  bcf_seed_welcome(&b, 1, 0);
  bcf_op(&b, A_GETALL, 0);
  fuzz_buf_u8(&b, 1);
  bcf_op(&b, A_RUN, 0);
  bcf_op(&b, A_ERROR, 0);
  fuzz_buf_u8(&b, 0);
  fuzz_buf_u8(&b, 9);
  fuzz_buf_bytes(&b, "a rank left the job", 19);
  bcf_op(&b, A_RUN, 0);
  emit("refused-then-error", b.p, b.len);
  b.len = 0;

  /* No WELCOME before the timeout; a VALUES with a wrong count. */
  fuzz_buf_u8(&b, 3 | 32 | 64);
  bcf_op(&b, A_GETALL, 0);
  fuzz_buf_u8(&b, 0);
  bcf_op(&b, A_VALUES, 0);
  fuzz_buf_u8(&b, 0);
  fuzz_buf_u8(&b, 0x81);
  fuzz_buf_bytes(&b, "x", 1);
  bcf_op(&b, A_TIME, 6);
  emit("no-welcome", b.p, b.len);
  b.len = 0;

  /* Garbage from the server, a reset, requests after the loss. */
  fuzz_buf_u8(&b, 0);
  bcf_op(&b, A_RAW, 3);
  fuzz_buf_bytes(&b,
                 "MMPB\002\002\000\000\000\000\000\000\000\000\000\000"
                 "MMPB\001\006\000\000\007\000\000\000\004\000\000\000",
                 32);
  bcf_op(&b, A_RESET, 0);
  bcf_op(&b, A_RUN, 0);
  bcf_op(&b, A_FENCE, 0);
  fuzz_buf_u8(&b, 0);
  emit("garbage", b.p, b.len);
  b.len = 0;

  /* Servers that do not hold the key: a WELCOME under a wrong key, one
   * reflecting the client's proof, one without a CHALLENGE first; a short
   * CHALLENGE. */
  for (k = 0; k < 4; k++) {
    fuzz_buf_u8(&b, 1 | 64);
    bcf_op(&b, A_GETALL, 0);
    fuzz_buf_u8(&b, 0);
    if (k < 2) {
      bcf_seed_welcome(&b, 0, k == 0 ? 0x80 | 3 : 1);
    } else if (k == 2) {
      bcf_op(&b, A_WELCOME, 0);
      fuzz_buf_u8(&b, 0);
    } else {
      bcf_op(&b, A_CHALLENGE, 0x80);
    }
    bcf_op(&b, A_RUN, 0);
    char name[32];
    snprintf(name, sizeof(name), "impostor-%d", k);
    emit(name, b.p, b.len);
    b.len = 0;
  }
  fuzz_buf_free(&b);
}
