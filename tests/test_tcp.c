/* SPDX-License-Identifier: MIT */
/*
 * The TCP transport on its own, without the runtime: two transports of a
 * two-rank job in one process on one loop, plus a raw socket that plays a
 * peer which knows the job key but then misbehaves. Checks the handshake,
 * TCP_NODELAY, frame delivery into sinks (in order, zero-length, large and
 * truncated payloads), direct writes, simultaneous connects, refused
 * connects, and that every violation after the handshake drops only the
 * offending connection with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "minimp.h"
#include "transport/transport.h"
#include "transport/util.h"
#include "hello_util.h"

#define MAXF 8

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
    assert_true(uv_hrtime() * 1e-9 - t0 < 5.0);
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(200);
  }
}

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
  cfg.max_frame = 1 << 20;
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
  int i;
  (void)state;
  memset(side, 0, sizeof(side));
  for (i = 0; i < MMP__JOB_KEY_LEN; i++)
    key[i] = (uint8_t)(i * 7 + 1);
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
    assert_true(side[1].hdr[i].seq == (uint64_t)i + 1); /* HELLO was 0 */
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

/* A raw socket that completes a real handshake as rank 2. */
static int fake_peer(int target) {
  uint8_t msg[MMP__FRAME_HDR_SIZE + MMP__HELLO_LEN], in[256];
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  size_t got = 0;

  assert_int_equal(connect(fd, (struct sockaddr *)&side[target].addr,
                           sizeof(struct sockaddr_in)),
                   0);
  hello_frame(msg, key, 2, 3);
  assert_int_equal(send(fd, msg, sizeof(msg), 0), (ssize_t)sizeof(msg));
  run_until(&side[target].ups, 1);
  /* Read the HELLO_ACK so that our next frame is the next in order. */
  while (got < sizeof(msg)) {
    ssize_t n = recv(fd, in + got, sizeof(msg) - got, MSG_DONTWAIT);
    if (n > 0)
      got += (size_t)n;
    uv_run(&loop, UV_RUN_NOWAIT);
  }
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
  violate(MMP__F_EAGER, 1, 1, 0, "frame with a forged source rank");
  violate(MMP__F_EAGER, 1, 2, (1 << 20) + 1,
          "payload length exceeds the configured maximum");
  violate(MMP__F_HELLO, 1, 2, MMP__HELLO_LEN,
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
