/* SPDX-License-Identifier: MIT */
/*
 * The TCP transport on its own, without the runtime: two transports of a
 * two-rank job in one process on one loop, plus a raw socket that plays a
 * peer which knows the job key but then misbehaves, and a relay between
 * the two transports that records, alters or replays their bytes. Checks
 * the handshake, TCP_NODELAY, frame delivery into sinks (in order,
 * zero-length, large and truncated payloads), direct writes, simultaneous
 * connects, refused connects, that every violation after the handshake
 * drops only the offending connection with a reason; that no key material
 * crosses the wire, and that a replayed or reflected handshake and a wrong
 * key are refused; and, with sealing on, that payloads of every size
 * arrive intact and an altered or replayed record drops the connection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "hs_util.h"
#include "minimp.h"
#include "transport/auth.h"
#include "transport/transport.h"
#include "transport/util.h"

#define MAXF 8
/* The dialer's handshake frames: HELLO and PROOF, with their headers. */
#define HS_DIALER_BYTES                                                        \
  (2 * MMP__FRAME_HDR_SIZE + MMP__GREET_LEN + MMP__MAC_LEN)

typedef struct side_s {
  mmp__tp_t *tp;
  char name[64];
  struct sockaddr_storage addr;
  mmp__tp_conn_t *conn;
  int ups, downs, down_err;
  char down_reason[128];
  int frames;
  mmp__frame_hdr_t hdr[MAXF];
  uint8_t *buf[MAXF];
  size_t cap[MAXF];
  int done[MAXF];
  int reject_type; /* frame type the "runtime" refuses */
} side_t;

static uv_loop_t loop;
static side_t side[2];
static uint8_t key[MMP__JOB_KEY_LEN];
static const mmp__tp_ops_t *ops = &mmp__tcp_ops;

/* ---- A relay between two transports ------------------------------------
 *
 * Side 0 dials the relay instead of side 1; the relay dials side 1 and
 * forwards both ways, non-blocking, whenever the test's loop turns. It
 * records each direction ([0]: dialer to listener) and may alter the
 * dialer's stream on the way: flip one bit at an offset, or send the first
 * sealed record twice.
 */
typedef struct relay_s {
  int lfd, fd[2]; /* listening; [0] from side 0, [1] to side 1 */
  struct sockaddr_storage addr;
  uint8_t *rec[2];
  size_t len[2], cap[2], sent[2];
  int eof[2];
  size_t flip_at; /* offset in stream 0 whose lowest bit flips */
  int dup_record; /* repeat the first record after the handshake */
  int duped;
} relay_t;

static relay_t *relay;

static void relay_start(relay_t *r) {
  socklen_t len = sizeof(r->addr);

  memset(r, 0, sizeof(*r));
  r->fd[0] = r->fd[1] = -1;
  r->flip_at = SIZE_MAX;
  r->lfd = socket(AF_INET, SOCK_STREAM, 0);
  assert_int_equal(mmp__addr_parse("127.0.0.1:0", &r->addr), 0);
  assert_int_equal(
      bind(r->lfd, (struct sockaddr *)&r->addr, sizeof(struct sockaddr_in)), 0);
  assert_int_equal(listen(r->lfd, 4), 0);
  getsockname(r->lfd, (struct sockaddr *)&r->addr, &len);
  fcntl(r->lfd, F_SETFL, O_NONBLOCK);
  relay = r;
}

static void relay_append(relay_t *r, int d, const uint8_t *p, size_t n) {
  if (r->len[d] + n > r->cap[d]) {
    r->cap[d] = (r->len[d] + n) * 2;
    r->rec[d] = realloc(r->rec[d], r->cap[d]);
    assert_non_null(r->rec[d]);
  }
  memcpy(r->rec[d] + r->len[d], p, n);
  r->len[d] += n;
}

/* Moves what is readable now, both ways. */
static void relay_pump(relay_t *r) {
  static uint8_t buf[1 << 16];

  if (r->fd[0] < 0) {
    r->fd[0] = accept(r->lfd, NULL, NULL);
    if (r->fd[0] < 0)
      return;
    r->fd[1] = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(r->fd[1], (struct sockaddr *)&side[1].addr,
                             sizeof(struct sockaddr_in)),
                     0);
    fcntl(r->fd[0], F_SETFL, O_NONBLOCK);
    fcntl(r->fd[1], F_SETFL, O_NONBLOCK);
  }
  for (int d = 0; d < 2; d++) {
    ssize_t n = -1;
    while (!r->eof[d] && (n = recv(r->fd[d], buf, sizeof(buf), 0)) != 0) {
      size_t at = r->len[d];
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          r->eof[d] = 1;
        break;
      }
      relay_append(r, d, buf, (size_t)n);
      if (d == 0 && r->flip_at >= at && r->flip_at < r->len[d])
        r->rec[d][r->flip_at] ^= 1;
    }
    if (n == 0)
      r->eof[d] = 1;
    if (d == 0 && r->dup_record && !r->duped &&
        r->len[0] >= HS_DIALER_BYTES + MMP__REC_HDR) {
      size_t rl = MMP__REC_OVERHEAD + mmp__get_u32(r->rec[0] + HS_DIALER_BYTES);
      if (r->len[0] >= HS_DIALER_BYTES + rl) {
        /* Insert a copy of the first record right after it. */
        uint8_t *copy = malloc(rl);
        size_t tail = r->len[0] - HS_DIALER_BYTES - rl;
        memcpy(copy, r->rec[0] + HS_DIALER_BYTES, rl);
        relay_append(r, 0, copy, rl);
        memmove(r->rec[0] + HS_DIALER_BYTES + 2 * rl,
                r->rec[0] + HS_DIALER_BYTES + rl, tail);
        memcpy(r->rec[0] + HS_DIALER_BYTES + rl, copy, rl);
        free(copy);
        r->duped = 1;
      }
    }
    while (r->sent[d] < r->len[d]) {
      n = send(r->fd[1 - d], r->rec[d] + r->sent[d], r->len[d] - r->sent[d],
               MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n <= 0)
        break;
      r->sent[d] += (size_t)n;
    }
    if (r->eof[d] && r->sent[d] == r->len[d])
      shutdown(r->fd[1 - d], SHUT_WR);
  }
}

static void relay_stop(relay_t *r) {
  for (int d = 0; d < 2; d++) {
    if (r->fd[d] >= 0)
      close(r->fd[d]);
    free(r->rec[d]);
  }
  close(r->lfd);
  relay = NULL;
}

static void on_up(void *ctx, int peer, mmp__tp_conn_t *conn) {
  side_t *s = ctx;
  (void)peer;
  s->conn = conn;
  s->ups++;
}

static int on_frame(void *ctx, int peer, const mmp__frame_hdr_t *h,
                    mmp__sink_t *sink) {
  side_t *s = ctx;
  int i = s->frames;
  (void)peer;
  if (h->type == s->reject_type)
    return MMP_EPROTO;
  assert_true(i < MAXF);
  s->hdr[i] = *h;
  sink->buf = s->buf[i];
  sink->len = s->cap[i];
  s->frames++;
  return 0;
}

static int on_done(void *ctx, int peer, const mmp__frame_hdr_t *h) {
  side_t *s = ctx;
  (void)peer;
  (void)h;
  s->done[s->frames - 1] = 1;
  return 0;
}

static void on_down(void *ctx, int peer, int err, const char *reason) {
  side_t *s = ctx;
  (void)peer;
  s->downs++;
  s->down_err = err;
  s->conn = NULL;
  snprintf(s->down_reason, sizeof(s->down_reason), "%s", reason);
}

static void run_until(int *flag, int want) {
  double t0 = uv_hrtime() * 1e-9;
  while (*flag < want) {
    assert_true(uv_hrtime() * 1e-9 - t0 < 10.0);
    uv_run(&loop, UV_RUN_NOWAIT);
    if (relay != NULL)
      relay_pump(relay);
    usleep(200);
  }
}

/* Turns the loop (and the relay) for about `ms`. */
static void spin(int ms) {
  for (int i = 0; i < ms * 2; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    if (relay != NULL)
      relay_pump(relay);
    usleep(500);
  }
}

static int side_encrypt[2];
static uint64_t side_max_frame = 1 << 20;

static void start_side(int rank, unsigned handshake_ms) {
  side_t *s = &side[rank];
  mmp__tp_config_t cfg;
  mmp__tp_callbacks_t cb;
  struct sockaddr_storage any;

  memset(&cfg, 0, sizeof(cfg));
  memset(&cb, 0, sizeof(cb));
  cfg.rank = rank;
  cfg.size = 3; /* rank 2 is the raw socket */
  memcpy(cfg.key, key, sizeof(key));
  cfg.max_frame = side_max_frame;
  cfg.encrypt = side_encrypt[rank];
  cfg.handshake_timeout_ms = handshake_ms;
  cb.ctx = s;
  cb.peer_up = on_up;
  cb.frame = on_frame;
  cb.frame_done = on_done;
  cb.peer_down = on_down;
  assert_int_equal(ops->create(&loop, &cfg, &cb, &s->tp), 0);
  assert_int_equal(mmp__addr_parse("127.0.0.1:0", &any), 0);
  assert_int_equal(
      ops->listen(s->tp, (struct sockaddr *)&any, s->name, sizeof(s->name)), 0);
  assert_int_equal(mmp__addr_parse(s->name, &s->addr), 0);
}

static void destroyed(void *arg) {
  (*(int *)arg)++;
}

static int setup(void **state) {
  uint8_t rnd[MMP__NONCE_LEN];
  int i;
  (void)state;
  memset(side, 0, sizeof(side));
  /* A random key, so that no pattern of the test's data can look like it. */
  if (mmp__auth_init() != 0)
    return -1;
  mmp__auth_nonce(rnd);
  memcpy(key, rnd, sizeof(key));
  if (uv_loop_init(&loop) != 0)
    return -1;
  for (i = 0; i < 2; i++)
    side[i].reject_type = -1;
  start_side(0, 2000);
  start_side(1, 2000);
  return 0;
}

static int teardown(void **state) {
  int done = 0, i;
  (void)state;
  for (i = 0; i < 2; i++)
    ops->destroy(side[i].tp, destroyed, &done);
  run_until(&done, 2);
  uv_run(&loop, UV_RUN_DEFAULT);
  for (i = 0; i < 2; i++)
    for (int k = 0; k < MAXF; k++)
      free(side[i].buf[k]);
  /* Every handle was closed and freed. */
  return uv_loop_close(&loop) == 0 ? 0 : -1;
}

static void prepare_sinks(side_t *s, size_t cap) {
  for (int k = 0; k < MAXF; k++) {
    s->buf[k] = calloc(cap ? cap : 1, 1);
    s->cap[k] = cap;
  }
}

static void written(mmp__tp_write_t *w, int status) {
  (void)status;
  (*(int *)w->data)++;
}

static void test_tcp_handshake_and_nodelay(void **state) {
  int one = 0;
  socklen_t len = sizeof(one);
  (void)state;

  assert_int_equal(
      ops->connect(side[0].tp, 1, (struct sockaddr *)&side[1].addr), 0);
  run_until(&side[0].ups, 1);
  run_until(&side[1].ups, 1);
  assert_non_null(side[0].conn);
  assert_int_equal(getsockopt(mmp__tcp_conn_fd(side[0].conn), IPPROTO_TCP,
                              TCP_NODELAY, &one, &len),
                   0);
  assert_int_equal(one, 1);
  len = sizeof(one);
  one = 0;
  getsockopt(mmp__tcp_conn_fd(side[1].conn), IPPROTO_TCP, TCP_NODELAY, &one,
             &len);
  assert_int_equal(one, 1);
  /* Connecting again while connected does nothing. */
  assert_int_equal(
      ops->connect(side[0].tp, 1, (struct sockaddr *)&side[1].addr), 0);
  assert_int_equal(
      ops->connect(side[0].tp, 0, (struct sockaddr *)&side[1].addr),
      MMP_EINVAL);
}

static void test_tcp_frames_into_sinks(void **state) {
  static uint8_t big[600000];
  mmp__tp_write_t w[4];
  mmp__tp_stats_t st;
  int written_n = 0, i;
  (void)state;

  test_tcp_handshake_and_nodelay(state);
  prepare_sinks(&side[1], sizeof(big));
  side[1].cap[2] = 10; /* truncated: the rest is read and dropped */
  for (i = 0; i < (int)sizeof(big); i++)
    big[i] = (uint8_t)(i * 13);
  memset(w, 0, sizeof(w));
  for (i = 0; i < 4; i++) {
    w[i].hdr.type = MMP__F_EAGER;
    w[i].hdr.tag = i;
    w[i].cb = written;
    w[i].data = &written_n;
  }
  w[0].hdr.len = 5;
  w[0].payload[0] = uv_buf_init("hello", 5);
  w[0].npayload = 1;
  w[1].hdr.len = 0; /* zero-length */
  w[2].hdr.len = 100;
  w[2].payload[0] = uv_buf_init((char *)big, 100);
  w[2].npayload = 1;
  w[3].hdr.len = sizeof(big); /* large: read straight into the sink */
  w[3].payload[0] = uv_buf_init((char *)big, 1000);
  w[3].payload[1] = uv_buf_init((char *)big + 1000, sizeof(big) - 1000);
  w[3].npayload = 2;
  /* The first goes directly on an idle socket; the others queue. */
  assert_int_equal(ops->write_direct(side[0].conn, &w[0]), 1);
  for (i = 1; i < 4; i++)
    assert_int_equal(ops->write(side[0].conn, &w[i]), 0);
  /* With writes in flight, a direct write must refuse. */
  {
    mmp__tp_write_t x;
    memset(&x, 0, sizeof(x));
    x.hdr.type = MMP__F_PING;
    assert_int_equal(ops->write_direct(side[0].conn, &x), 0);
    x.cb = written;
    x.data = &written_n;
    assert_int_equal(ops->write(side[0].conn, &x), 0);
    run_until(&written_n, 4);
    run_until(&side[1].frames, 5);
    assert_int_equal(side[1].hdr[4].type, MMP__F_PING);
  }
  for (i = 0; i < 4; i++) {
    assert_int_equal(side[1].hdr[i].tag, i);
    assert_int_equal(side[1].hdr[i].src, 0);
    /* HELLO and PROOF were 0 and 1. */
    assert_true(side[1].hdr[i].seq == (uint64_t)i + 2);
    assert_int_equal(side[1].done[i], 1);
  }
  assert_memory_equal(side[1].buf[0], "hello", 5);
  assert_memory_equal(side[1].buf[2], big, 10);
  assert_int_equal(side[1].buf[2][10], 0);
  assert_memory_equal(side[1].buf[3], big, sizeof(big));
  ops->stats(side[1].tp, &st);
  assert_true(st.frames_in >= 6);
  assert_int_equal(st.rejected, 0);
  assert_int_equal(side[0].downs + side[1].downs, 0);
}

static void test_tcp_runtime_rejection_drops_connection(void **state) {
  mmp__tp_write_t w;
  mmp__tp_stats_t st;
  (void)state;

  test_tcp_handshake_and_nodelay(state);
  prepare_sinks(&side[1], 16);
  side[1].reject_type = MMP__F_CTS;
  memset(&w, 0, sizeof(w));
  w.hdr.type = MMP__F_CTS;
  assert_int_equal(ops->write_direct(side[0].conn, &w), 1);
  run_until(&side[1].downs, 1);
  run_until(&side[0].downs, 1);
  assert_int_equal(side[1].down_err, MMP_EPROTO);
  assert_string_equal(side[1].down_reason, "frame rejected by the runtime");
  assert_int_equal(side[0].down_err, MMP_EPEERLOST);
  ops->stats(side[1].tp, &st);
  assert_int_equal(st.dropped, 1);
}

/* Receives exactly n bytes on a raw socket while the loop turns. */
static void recv_all(int fd, uint8_t *in, size_t n) {
  double t0 = uv_hrtime() * 1e-9;
  size_t got = 0;

  while (got < n) {
    ssize_t k = recv(fd, in + got, n - got, MSG_DONTWAIT);
    assert_true(k != 0);
    if (k > 0)
      got += (size_t)k;
    assert_true(uv_hrtime() * 1e-9 - t0 < 5.0);
    uv_run(&loop, UV_RUN_NOWAIT);
  }
}

/* A raw socket that completes a real handshake with side `target` as rank
 * 2, with `k` as the key it believes in. Returns the socket; *challenge
 * gets the listener's greeting. */
static int raw_dial(int target, const uint8_t *k, uint8_t *hello_out,
                    uint8_t *challenge) {
  uint8_t msg[256], in[256];
  uint8_t mac[MMP__MAC_LEN];
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  size_t n;

  assert_int_equal(connect(fd, (struct sockaddr *)&side[target].addr,
                           sizeof(struct sockaddr_in)),
                   0);
  hs_greeting(hello_out, 2, 3, (uint32_t)target, 0);
  n = hs_frame(msg, MMP__F_HELLO, 0, 2, MMP__GREET_LEN, MMP__FRAME_VERSION,
               hello_out, MMP__GREET_LEN);
  assert_int_equal(send(fd, msg, n, 0), (ssize_t)n);
  recv_all(fd, in, MMP__FRAME_HDR_SIZE + MMP__GREET_LEN);
  assert_int_equal(in[5], MMP__F_CHALLENGE);
  memcpy(challenge, in + MMP__FRAME_HDR_SIZE, MMP__GREET_LEN);
  hs_proof(mac, k, hello_out, challenge);
  n = hs_frame(msg, MMP__F_PROOF, 1, 2, MMP__MAC_LEN, MMP__FRAME_VERSION, mac,
               MMP__MAC_LEN);
  assert_int_equal(send(fd, msg, n, 0), (ssize_t)n);
  return fd;
}

/* A raw socket that completes a real handshake as rank 2. */
static int fake_peer(int target) {
  uint8_t hello[MMP__GREET_LEN], challenge[MMP__GREET_LEN];
  uint8_t in[MMP__FRAME_HDR_SIZE + MMP__MAC_LEN];
  mmp__auth_t a;
  int fd = raw_dial(target, key, hello, challenge);

  run_until(&side[target].ups, 1);
  /* Read the HELLO_ACK, and check the listener's proof. */
  recv_all(fd, in, sizeof(in));
  assert_int_equal(in[5], MMP__F_HELLO_ACK);
  mmp__auth_begin(&a, key, MMP__AUTH_TCP, hello, MMP__GREET_LEN, challenge,
                  MMP__GREET_LEN);
  assert_true(mmp__auth_check(&a, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT,
                              in + MMP__FRAME_HDR_SIZE));
  mmp__auth_end(&a);
  return fd;
}

static void violate(uint8_t type, uint64_t seq, uint32_t src, uint64_t len,
                    const char *reason) {
  uint8_t b[MMP__FRAME_HDR_SIZE];
  mmp__frame_hdr_t h;
  mmp__tp_stats_t st;
  int fd;

  side[0].ups = side[0].downs = 0;
  fd = fake_peer(0);
  memset(&h, 0, sizeof(h));
  h.type = type;
  h.seq = seq;
  h.src = src;
  h.len = len;
  mmp__frame_encode(&h, b);
  assert_int_equal(send(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
  run_until(&side[0].downs, 1);
  assert_string_equal(side[0].down_reason, reason);
  ops->stats(side[0].tp, &st);
  assert_true(st.dropped >= 1);
  close(fd);
}

static void test_tcp_violations_after_handshake(void **state) {
  (void)state;

  prepare_sinks(&side[0], 16);
  violate(MMP__F_EAGER, 5, 2, 0, "frame out of sequence");
  violate(MMP__F_EAGER, 2, 1, 0, "frame with a forged source rank");
  violate(MMP__F_EAGER, 2, 2, (1 << 20) + 1,
          "payload length exceeds the configured maximum");
  violate(MMP__F_HELLO, 2, 2, MMP__GREET_LEN,
          "handshake frame after the handshake");
  violate(MMP__F_PROOF, 2, 2, MMP__MAC_LEN,
          "handshake frame after the handshake");
  /* The legitimate side is untouched throughout. */
  assert_int_equal(side[1].downs, 0);
}

static void test_tcp_simultaneous_connect(void **state) {
  mmp__tp_stats_t st0, st1;
  (void)state;

  assert_int_equal(
      ops->connect(side[0].tp, 1, (struct sockaddr *)&side[1].addr), 0);
  assert_int_equal(
      ops->connect(side[1].tp, 0, (struct sockaddr *)&side[0].addr), 0);
  run_until(&side[0].ups, 1);
  run_until(&side[1].ups, 1);
  /* Give the losing attempt time to be refused and closed. */
  for (int i = 0; i < 200; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(500);
  }
  assert_int_equal(side[0].ups, 1);
  assert_int_equal(side[1].ups, 1);
  assert_int_equal(side[0].downs + side[1].downs, 0);
  ops->stats(side[0].tp, &st0);
  ops->stats(side[1].tp, &st1);
  assert_int_equal(st0.rejected + st1.rejected, 0);
}

static void test_tcp_refused_connect_reports_down(void **state) {
  struct sockaddr_storage dead;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  socklen_t len = sizeof(dead);
  (void)state;

  /* An address nobody listens on: bind a socket, note it, close it. */
  assert_int_equal(mmp__addr_parse("127.0.0.1:0", &dead), 0);
  assert_int_equal(
      bind(fd, (struct sockaddr *)&dead, sizeof(struct sockaddr_in)), 0);
  getsockname(fd, (struct sockaddr *)&dead, &len);
  close(fd);
  assert_int_equal(ops->connect(side[0].tp, 1, (struct sockaddr *)&dead), 0);
  run_until(&side[0].downs, 1);
  assert_int_equal(side[0].down_err, MMP_ECONNREFUSED);
  assert_int_equal(side[0].ups, 0);
}

/* Starts the relay, gives side 1 sinks of `cap` bytes and brings side 0
 * up with side 1 through it. */
static void relay_connect(relay_t *r, size_t cap) {
  relay_start(r);
  prepare_sinks(&side[1], cap);
  assert_int_equal(ops->connect(side[0].tp, 1, (struct sockaddr *)&r->addr), 0);
  run_until(&side[0].ups, 1);
  run_until(&side[1].ups, 1);
}

/* ---- What crosses the wire --------------------------------------------- */

/* Fails if `pat` (n bytes) occurs anywhere in the recorded stream. */
static void assert_absent(const relay_t *r, const void *pat, size_t n,
                          const char *what) {
  for (int d = 0; d < 2; d++) {
    if (memmem(r->rec[d], r->len[d], pat, n) != NULL)
      fail_msg("%s found in the %s stream", what,
               d == 0 ? "dialer's" : "listener's");
  }
}

/* Every encoding of the key a careless protocol might send, and every
 * secret derived from it. */
static void assert_no_key_material(const relay_t *r) {
  char hex[2 * MMP__JOB_KEY_LEN + 1], b64[64];
  uint8_t d2l[32], l2d[32], rev[MMP__JOB_KEY_LEN];
  mmp__auth_t a;

  for (size_t i = 0; i + 6 <= sizeof(key); i++)
    assert_absent(r, key + i, 6, "6 bytes of the key");
  for (size_t i = 0; i < sizeof(key); i++)
    rev[i] = key[sizeof(key) - 1 - i];
  assert_absent(r, rev, sizeof(rev), "the key reversed");
  mmp__hex_encode(key, sizeof(key), hex);
  assert_absent(r, hex, 12, "the key in lowercase hex");
  for (size_t i = 0; hex[i] != '\0'; i++)
    if (hex[i] >= 'a' && hex[i] <= 'f')
      hex[i] = (char)(hex[i] - 'a' + 'A');
  assert_absent(r, hex, 12, "the key in uppercase hex");
  sodium_bin2base64(b64, sizeof(b64), key, sizeof(key),
                    sodium_base64_VARIANT_ORIGINAL);
  assert_absent(r, b64, 12, "the key in base64");
  sodium_bin2base64(b64, sizeof(b64), key, sizeof(key),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  assert_absent(r, b64, 12, "the key in url-safe base64");
  /* The secrets of this very handshake: its MAC key, its session keys. */
  assert_true(r->len[0] >= MMP__FRAME_HDR_SIZE + MMP__GREET_LEN &&
              r->len[1] >= MMP__FRAME_HDR_SIZE + MMP__GREET_LEN);
  mmp__auth_begin(&a, key, MMP__AUTH_TCP, r->rec[0] + MMP__FRAME_HDR_SIZE,
                  MMP__GREET_LEN, r->rec[1] + MMP__FRAME_HDR_SIZE,
                  MMP__GREET_LEN);
  mmp__auth_session_keys(&a, key, d2l, l2d);
  assert_absent(r, a.key, 8, "the handshake's MAC key");
  assert_absent(r, d2l, 8, "a session key");
  assert_absent(r, l2d, 8, "a session key");
  mmp__auth_end(&a);
}

static const char marker[] = "plaintext-marker-0123456789";

/* Side 0 and side 1 through the relay: a handshake, then a small and a
 * large frame whose payloads repeat `marker`. */
static void talk_through_relay(relay_t *r) {
  static uint8_t big[200000];
  mmp__tp_write_t w[2];
  int written_n = 0;

  for (size_t i = 0; i < sizeof(big); i++)
    big[i] = (uint8_t)marker[i % (sizeof(marker) - 1)];
  relay_connect(r, sizeof(big));
  memset(w, 0, sizeof(w));
  for (int i = 0; i < 2; i++) {
    w[i].hdr.type = MMP__F_EAGER;
    w[i].cb = written;
    w[i].data = &written_n;
    w[i].npayload = 1;
  }
  w[0].hdr.len = 40;
  w[0].payload[0] = uv_buf_init((char *)big, 40);
  w[1].hdr.len = sizeof(big);
  w[1].payload[0] = uv_buf_init((char *)big, sizeof(big));
  assert_int_equal(ops->write(side[0].conn, &w[0]), 0);
  assert_int_equal(ops->write(side[0].conn, &w[1]), 0);
  run_until(&written_n, 2);
  run_until(&side[1].frames, 2);
  run_until(&side[1].done[1], 1);
  assert_memory_equal(side[1].buf[1], big, sizeof(big));
}

static void test_tcp_capture_carries_no_key(void **state) {
  relay_t r;
  (void)state;

  talk_through_relay(&r);
  /* The capture is real: both greetings, and the payload in clear. */
  assert_int_equal(r.rec[0][5], MMP__F_HELLO);
  assert_int_equal(r.rec[1][5], MMP__F_CHALLENGE);
  assert_non_null(memmem(r.rec[0], r.len[0], marker, sizeof(marker) - 1));
  assert_no_key_material(&r);
  relay_stop(&r);
}

static void test_tcp_sealed_capture_carries_no_key_nor_data(void **state) {
  relay_t r;
  (void)state;

  talk_through_relay(&r);
  assert_int_equal(r.rec[0][5], MMP__F_HELLO);
  assert_true(r.len[0] > 200000);
  assert_no_key_material(&r);
  /* Sealed: not even a piece of the payload shows. */
  assert_absent(&r, marker, 12, "the payload");
  relay_stop(&r);
}

/* Waits for `fd` to reach EOF (or a reset) and returns the bytes read. */
static size_t drain_to_eof(int fd, uint8_t *in, size_t cap) {
  double t0 = uv_hrtime() * 1e-9;
  size_t got = 0;

  for (;;) {
    ssize_t k = recv(fd, in + got, cap - got, MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno == ECONNRESET))
      return got;
    if (k > 0)
      got += (size_t)k;
    assert_true(got < cap);
    assert_true(uv_hrtime() * 1e-9 - t0 < 5.0);
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(200);
  }
}

static void test_tcp_replayed_handshake_is_rejected(void **state) {
  uint8_t in[1024];
  mmp__tp_stats_t st;
  relay_t r;
  size_t got;
  int fd;
  (void)state;

  /* Record a real handshake of rank 0 with rank 1, then end it. */
  relay_connect(&r, 16);
  assert_true(r.len[0] >= HS_DIALER_BYTES);
  ops->abort(side[1].conn, MMP_EPEERLOST, "test");
  run_until(&side[1].downs, 1);
  run_until(&side[0].downs, 1);
  /* Send the recorded HELLO and PROOF again on a new connection. */
  fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_int_equal(
      connect(fd, (struct sockaddr *)&side[1].addr, sizeof(struct sockaddr_in)),
      0);
  assert_int_equal(send(fd, r.rec[0], HS_DIALER_BYTES, 0),
                   (ssize_t)HS_DIALER_BYTES);
  got = drain_to_eof(fd, in, sizeof(in));
  close(fd);
  /* It got a fresh CHALLENGE, then the door: no HELLO_ACK. */
  assert_int_equal(got, MMP__FRAME_HDR_SIZE + MMP__GREET_LEN);
  assert_int_equal(in[5], MMP__F_CHALLENGE);
  assert_memory_not_equal(in + MMP__FRAME_HDR_SIZE,
                          r.rec[1] + MMP__FRAME_HDR_SIZE, MMP__NONCE_LEN);
  assert_int_equal(side[1].ups, 1);
  ops->stats(side[1].tp, &st);
  assert_int_equal(st.rejected, 1);
  relay_stop(&r);
}

/* A raw listener for side 0 to dial: accepts, and reads its HELLO. */
static int raw_accept_hello(int lfd, uint8_t hello[MMP__GREET_LEN]) {
  uint8_t in[MMP__FRAME_HDR_SIZE + MMP__GREET_LEN];
  double t0 = uv_hrtime() * 1e-9;
  int fd;

  while ((fd = accept(lfd, NULL, NULL)) < 0) {
    assert_true(uv_hrtime() * 1e-9 - t0 < 5.0);
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(200);
  }
  recv_all(fd, in, sizeof(in));
  assert_int_equal(in[5], MMP__F_HELLO);
  memcpy(hello, in + MMP__FRAME_HDR_SIZE, MMP__GREET_LEN);
  return fd;
}

static int raw_listener(struct sockaddr_storage *addr) {
  socklen_t len = sizeof(*addr);
  int lfd = socket(AF_INET, SOCK_STREAM, 0);

  assert_int_equal(mmp__addr_parse("127.0.0.1:0", addr), 0);
  assert_int_equal(
      bind(lfd, (struct sockaddr *)addr, sizeof(struct sockaddr_in)), 0);
  assert_int_equal(listen(lfd, 4), 0);
  getsockname(lfd, (struct sockaddr *)addr, &len);
  fcntl(lfd, F_SETFL, O_NONBLOCK);
  return lfd;
}

/* Side 0 dials a raw listener that answers its PROOF with `answer`: its
 * own proof reflected back (reflect), or a proof made with a wrong key. */
static void answer_dialer(int reflect) {
  uint8_t hello[MMP__GREET_LEN], chal[MMP__GREET_LEN], msg[256];
  uint8_t in[MMP__FRAME_HDR_SIZE + MMP__MAC_LEN], bad[MMP__JOB_KEY_LEN];
  uint8_t mac[MMP__MAC_LEN];
  struct sockaddr_storage addr;
  mmp__greet_t g;
  mmp__auth_t a;
  int lfd = raw_listener(&addr), fd;
  size_t n;

  assert_int_equal(ops->connect(side[0].tp, 1, (struct sockaddr *)&addr), 0);
  fd = raw_accept_hello(lfd, hello);
  /* Reflecting: the dialer's own nonce comes back as our challenge. */
  if (reflect)
    memcpy(g.nonce, hello, MMP__NONCE_LEN);
  else
    mmp__auth_nonce(g.nonce);
  g.rank = 1;
  g.size = 3;
  g.peer = MMP__GREET_ANY;
  g.flags = 0;
  mmp__greet_encode(&g, chal);
  n = hs_frame(msg, MMP__F_CHALLENGE, 0, 1, MMP__GREET_LEN, MMP__FRAME_VERSION,
               chal, MMP__GREET_LEN);
  assert_int_equal(send(fd, msg, n, 0), (ssize_t)n);
  recv_all(fd, in, sizeof(in));
  assert_int_equal(in[5], MMP__F_PROOF);
  if (reflect) {
    memcpy(mac, in + MMP__FRAME_HDR_SIZE, MMP__MAC_LEN);
  } else {
    memcpy(bad, key, sizeof(bad));
    bad[0] ^= 0x01;
    mmp__auth_begin(&a, bad, MMP__AUTH_TCP, hello, MMP__GREET_LEN, chal,
                    MMP__GREET_LEN);
    mmp__auth_mac(&a, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, mac);
    mmp__auth_end(&a);
  }
  n = hs_frame(msg, MMP__F_HELLO_ACK, 1, 1, MMP__MAC_LEN, MMP__FRAME_VERSION,
               mac, MMP__MAC_LEN);
  assert_int_equal(send(fd, msg, n, 0), (ssize_t)n);
  run_until(&side[0].downs, 1);
  assert_int_equal(side[0].ups, 0);
  assert_int_equal(side[0].down_err, MMP_EAUTH);
  assert_string_equal(side[0].down_reason,
                      "peer does not hold the job key (its proof does not "
                      "verify)");
  close(fd);
  close(lfd);
}

static void test_tcp_reflected_proof_is_refused(void **state) {
  (void)state;
  answer_dialer(1);
}

static void test_tcp_wrong_key_is_refused(void **state) {
  uint8_t bad[MMP__JOB_KEY_LEN], hello[MMP__GREET_LEN], chal[MMP__GREET_LEN];
  uint8_t in[256];
  mmp__tp_stats_t st;
  int fd;
  (void)state;

  /* A dialer with the wrong key gets no HELLO_ACK and no connection. */
  memcpy(bad, key, sizeof(bad));
  bad[15] ^= 0x80;
  fd = raw_dial(1, bad, hello, chal);
  assert_int_equal(drain_to_eof(fd, in, sizeof(in)), 0);
  close(fd);
  assert_int_equal(side[1].ups, 0);
  ops->stats(side[1].tp, &st);
  assert_int_equal(st.rejected, 1);
  /* A listener with the wrong key is refused by the dialer. */
  answer_dialer(0);
}

/* ---- Sealed connections ------------------------------------------------- */

static void test_tcp_sealed_sizes_arrive_intact(void **state) {
  enum { NF = 6 };
  const size_t len[NF] = {8u << 20, 0, 1, 61440, 600000, 100};
  mmp__tp_write_t w[NF];
  uint8_t *src = malloc(8u << 20);
  int written_n = 0, i;
  (void)state;

  test_tcp_handshake_and_nodelay(state);
  for (i = 0; i < (8 << 20); i++)
    src[i] = (uint8_t)(i * 7 + (i >> 13));
  for (i = 0; i < NF; i++) {
    side[1].cap[i] = i == 5 ? 10 : len[i]; /* the last is truncated */
    side[1].buf[i] = calloc(len[i] + 1, 1);
  }
  memset(w, 0, sizeof(w));
  for (i = 0; i < NF; i++) {
    w[i].hdr.type = MMP__F_EAGER;
    w[i].hdr.tag = i;
    w[i].hdr.len = len[i];
    w[i].cb = written;
    w[i].data = &written_n;
    w[i].payload[0] = uv_buf_init((char *)src, (unsigned)len[i]);
    w[i].npayload = 1;
  }
  /* Two pieces, and started by a direct write that the socket cannot take
   * whole: the rest must follow from the same sealed records. */
  w[0].payload[0] = uv_buf_init((char *)src, 1000);
  w[0].payload[1] = uv_buf_init((char *)src + 1000, (8u << 20) - 1000);
  w[0].npayload = 2;
  assert_int_equal(ops->write_direct(side[0].conn, &w[0]), 0);
  for (i = 0; i < NF; i++)
    assert_int_equal(ops->write(side[0].conn, &w[i]), 0);
  run_until(&written_n, NF);
  run_until(&side[1].frames, NF);
  run_until(&side[1].done[NF - 1], 1);
  for (i = 0; i < NF; i++) {
    assert_int_equal(side[1].hdr[i].tag, i);
    assert_true(side[1].hdr[i].len == len[i]);
    assert_true(side[1].hdr[i].seq == (uint64_t)i + 2);
    assert_int_equal(side[1].done[i], 1);
    if (i < 5)
      assert_memory_equal(side[1].buf[i], src, len[i]);
  }
  assert_memory_equal(side[1].buf[5], src, 10);
  assert_int_equal(side[1].buf[5][10], 0);
  /* And back the other way, through a direct write that completes. */
  {
    mmp__tp_write_t x;
    memset(&x, 0, sizeof(x));
    x.hdr.type = MMP__F_EAGER;
    x.hdr.tag = 77;
    x.hdr.len = 3;
    x.payload[0] = uv_buf_init("abc", 3);
    x.npayload = 1;
    side[0].cap[0] = 3;
    side[0].buf[0] = calloc(3, 1);
    assert_int_equal(ops->write_direct(side[1].conn, &x), 1);
    run_until(&side[0].frames, 1);
    run_until(&side[0].done[0], 1);
    assert_memory_equal(side[0].buf[0], "abc", 3);
    assert_int_equal(side[0].hdr[0].tag, 77);
  }
  assert_int_equal(side[0].downs + side[1].downs, 0);
  free(src);
}

/* Side 0 sends two frames through a relay that alters its stream: flips
 * the bit at `flip_at`, or sends the first record twice (`dup`). */
static void send_altered(relay_t *r, size_t flip_at, int dup) {
  static uint8_t data[3000];
  mmp__tp_write_t w[2];
  int written_n = 0;

  for (size_t i = 0; i < sizeof(data); i++)
    data[i] = (uint8_t)(i * 3);
  relay_connect(r, sizeof(data));
  r->flip_at = flip_at;
  r->dup_record = dup;
  memset(w, 0, sizeof(w));
  for (int i = 0; i < 2; i++) {
    w[i].hdr.type = MMP__F_EAGER;
    w[i].hdr.len = sizeof(data);
    w[i].payload[0] = uv_buf_init((char *)data, sizeof(data));
    w[i].npayload = 1;
    w[i].cb = written;
    w[i].data = &written_n;
    assert_int_equal(ops->write(side[0].conn, &w[i]), 0);
  }
  run_until(&written_n, 2);
  run_until(&side[1].downs, 1);
  assert_int_equal(side[1].down_err, MMP_EPROTO);
  assert_string_equal(side[1].down_reason,
                      "sealed record fails authentication (altered, replayed, "
                      "reordered or foreign)");
}

static void test_tcp_sealed_flipped_bit_drops(void **state) {
  mmp__tp_stats_t st;
  relay_t r;
  (void)state;

  /* A bit inside the first sealed record's ciphertext. */
  send_altered(&r, HS_DIALER_BYTES + MMP__REC_HDR + 20, 0);
  /* The altered frame never reached the runtime, not even its header. */
  assert_int_equal(side[1].frames, 0);
  ops->stats(side[1].tp, &st);
  assert_int_equal(st.dropped, 1);
  relay_stop(&r);
}

static void test_tcp_sealed_replayed_record_drops(void **state) {
  relay_t r;
  (void)state;

  send_altered(&r, SIZE_MAX, 1);
  /* The first frame (one record) arrived; its copy did not open. */
  assert_int_equal(side[1].frames, 1);
  assert_int_equal(side[1].done[0], 1);
  relay_stop(&r);
}

static void test_tcp_mixed_sealing_fails(void **state) {
  mmp__tp_stats_t st;
  (void)state;

  /* side 0 seals, side 1 does not. */
  assert_int_equal(
      ops->connect(side[0].tp, 1, (struct sockaddr *)&side[1].addr), 0);
  run_until(&side[0].downs, 1);
  spin(50);
  assert_int_equal(side[0].ups + side[1].ups, 0);
  assert_int_equal(side[0].down_err, MMP_EPROTO);
  assert_string_equal(side[0].down_reason,
                      "rank 1 runs with MINIMP_ENCRYPT=0 and this rank with "
                      "MINIMP_ENCRYPT=1: every rank of a job must agree");
  ops->stats(side[1].tp, &st);
  assert_int_equal(st.rejected, 1);
}

static int setup_sealed(void **state) {
  side_encrypt[0] = side_encrypt[1] = 1;
  side_max_frame = 16u << 20;
  return setup(state);
}

static int setup_mixed(void **state) {
  side_encrypt[0] = 1;
  side_encrypt[1] = 0;
  return setup(state);
}

static int teardown_all(void **state) {
  int rc = teardown(state);
  side_encrypt[0] = side_encrypt[1] = 0;
  side_max_frame = 1 << 20;
  return rc;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_tcp_handshake_and_nodelay, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_tcp_frames_into_sinks, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          test_tcp_runtime_rejection_drops_connection, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tcp_violations_after_handshake,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_tcp_simultaneous_connect, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_tcp_refused_connect_reports_down,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_tcp_capture_carries_no_key, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_tcp_replayed_handshake_is_rejected,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_tcp_reflected_proof_is_refused,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_tcp_wrong_key_is_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_tcp_handshake_and_nodelay,
                                      setup_sealed, teardown_all),
      cmocka_unit_test_setup_teardown(test_tcp_sealed_sizes_arrive_intact,
                                      setup_sealed, teardown_all),
      cmocka_unit_test_setup_teardown(
          test_tcp_sealed_capture_carries_no_key_nor_data, setup_sealed,
          teardown_all),
      cmocka_unit_test_setup_teardown(test_tcp_sealed_flipped_bit_drops,
                                      setup_sealed, teardown_all),
      cmocka_unit_test_setup_teardown(test_tcp_sealed_replayed_record_drops,
                                      setup_sealed, teardown_all),
      cmocka_unit_test_setup_teardown(test_tcp_simultaneous_connect,
                                      setup_sealed, teardown_all),
      cmocka_unit_test_setup_teardown(test_tcp_mixed_sealing_fails, setup_mixed,
                                      teardown_all),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
