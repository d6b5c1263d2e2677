/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the bootstrap service (transport/boot.h): the codec on its
 * own, then a server and several clients on one libuv loop in one process,
 * plus raw TCP connections that speak garbage or die without BYE. Every
 * test ends by stopping everything, running the loop until it is empty and
 * checking that uv_loop_close() succeeds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "minimp.h"
#include "transport/auth.h"
#include "transport/boot.h"
#include "transport/util.h"

#define WATCHDOG_MS 5000
#define MAX_CLIENTS 8

/* ---- Fixture ------------------------------------------------------------- */

typedef struct fx_s {
  uv_loop_t loop;
  uv_timer_t watchdog;
  int timed_out;
  mmp__boot_server_t *srv;
  struct sockaddr_storage addr;
  char name[64];
  uint8_t key[MMP__JOB_KEY_LEN];
  int size;
  /* What the server reported. */
  int joined;
  int lost;
  int lost_rank[MAX_CLIENTS]; /* in the order reported */
  char lost_reason[MAX_CLIENTS][128];
  int aborts;
  int abort_rank;
  int abort_code;
  char abort_msg[64];
  int all_done;
  int stopped;
} fx_t;

static void on_watchdog(uv_timer_t *t) {
  fx_t *fx = t->data;
  fx->timed_out = 1;
}

/* Runs the loop until `cond` holds; fails the test after WATCHDOG_MS. */
#define RUN_UNTIL(fx, cond)                                                    \
  do {                                                                         \
    (fx)->timed_out = 0;                                                       \
    uv_timer_start(&(fx)->watchdog, on_watchdog, WATCHDOG_MS, 0);              \
    while (!(cond) && !(fx)->timed_out)                                        \
      uv_run(&(fx)->loop, UV_RUN_ONCE);                                        \
    uv_timer_stop(&(fx)->watchdog);                                            \
    assert_true(cond);                                                         \
  } while (0)

/* Runs the loop for `ms` milliseconds. */
static void run_for(fx_t *fx, unsigned ms) {
  fx->timed_out = 0;
  uv_timer_start(&fx->watchdog, on_watchdog, ms, 0);
  while (!fx->timed_out)
    uv_run(&fx->loop, UV_RUN_ONCE);
}

static void srv_joined(void *ctx, int rank, const char *host, int pid) {
  fx_t *fx = ctx;
  (void)rank;
  (void)host;
  (void)pid;
  fx->joined++;
}

static void srv_lost(void *ctx, int rank, const char *reason) {
  fx_t *fx = ctx;
  assert_true(fx->lost < MAX_CLIENTS);
  fx->lost_rank[fx->lost] = rank;
  snprintf(fx->lost_reason[fx->lost], sizeof(fx->lost_reason[0]), "%s", reason);
  fx->lost++;
}

static void srv_abort(void *ctx, int rank, int code, const char *msg) {
  fx_t *fx = ctx;
  fx->aborts++;
  fx->abort_rank = rank;
  fx->abort_code = code;
  snprintf(fx->abort_msg, sizeof(fx->abort_msg), "%s", msg);
}

static void srv_all_done(void *ctx) {
  fx_t *fx = ctx;
  fx->all_done++;
}

static void srv_stopped(void *arg) {
  fx_t *fx = arg;
  fx->stopped = 1;
}

static void start_server(fx_t *fx, int size, unsigned hs_ms) {
  mmp__boot_server_cb_t cb = {fx, srv_joined, srv_lost, srv_abort,
                              srv_all_done};
  struct sockaddr_in sin;

  uv_ip4_addr("127.0.0.1", 0, &sin);
  fx->size = size;
  assert_int_equal(mmp__boot_server_start(
                       &fx->loop, (const struct sockaddr *)&sin, size, fx->key,
                       hs_ms, &cb, &fx->srv, fx->name, sizeof(fx->name)),
                   0);
  assert_int_equal(strncmp(fx->name, "127.0.0.1:", 10), 0);
  assert_int_equal(uv_ip4_addr("127.0.0.1", atoi(fx->name + 10),
                               (struct sockaddr_in *)&fx->addr),
                   0);
}

static int setup(void **state) {
  fx_t *fx = calloc(1, sizeof(*fx));
  int i;

  if (fx == NULL || uv_loop_init(&fx->loop) != 0)
    return -1;
  uv_timer_init(&fx->loop, &fx->watchdog);
  fx->watchdog.data = fx;
  for (i = 0; i < MMP__JOB_KEY_LEN; i++)
    fx->key[i] = (uint8_t)(0xa0 + i);
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fx_t *fx = *state;

  if (fx->srv != NULL) {
    mmp__boot_server_stop(fx->srv, srv_stopped, fx);
    fx->srv = NULL;
    RUN_UNTIL(fx, fx->stopped);
  }
  uv_close((uv_handle_t *)&fx->watchdog, NULL);
  uv_run(&fx->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&fx->loop), 0);
  free(fx);
  return 0;
}

/* ---- Clients ------------------------------------------------------------- */

typedef struct cl_s {
  fx_t *fx;
  mmp__boot_client_t *c;
  int started;
  int start_status;
  int lost;
  int lost_err;
  int closed;
  int events;
  uint32_t ev_kind;
  int ev_rank;
  int ev_code;
  char ev_msg[64];
} cl_t;

/* The outcome of one request, values copied out. */
typedef struct res_s {
  int done;
  int status;
  size_t count;
  uint8_t vals[MAX_CLIENTS][64];
  size_t lens[MAX_CLIENTS];
} res_t;

static void cl_event(void *ctx, uint32_t kind, int rank, int code,
                     const char *msg) {
  cl_t *cl = ctx;
  cl->events++;
  cl->ev_kind = kind;
  cl->ev_rank = rank;
  cl->ev_code = code;
  snprintf(cl->ev_msg, sizeof(cl->ev_msg), "%s", msg);
}

static void cl_lost(void *ctx, int err, const char *reason) {
  cl_t *cl = ctx;
  (void)reason;
  cl->lost++;
  cl->lost_err = err;
}

static void cl_started(void *arg, int status, size_t count,
                       const uint8_t *const *values, const size_t *lens) {
  cl_t *cl = arg;
  (void)values;
  (void)lens;
  assert_int_equal(count, 0);
  cl->started++;
  cl->start_status = status;
}

static void cl_closed(void *arg, int status, size_t count,
                      const uint8_t *const *values, const size_t *lens) {
  cl_t *cl = arg;
  (void)status;
  (void)count;
  (void)values;
  (void)lens;
  cl->closed++;
}

static void on_res(void *arg, int status, size_t count,
                   const uint8_t *const *values, const size_t *lens) {
  res_t *r = arg;
  size_t i;

  r->done++;
  r->status = status;
  r->count = count;
  assert_true(count <= MAX_CLIENTS);
  for (i = 0; i < count; i++) {
    assert_true(lens[i] <= sizeof(r->vals[i]));
    memcpy(r->vals[i], values[i], lens[i]);
    r->lens[i] = lens[i];
  }
}

static void cl_start_key(fx_t *fx, cl_t *cl, int rank, const uint8_t *key) {
  mmp__boot_client_cb_t cb = {cl, cl_event, cl_lost};

  memset(cl, 0, sizeof(*cl));
  cl->fx = fx;
  assert_int_equal(
      mmp__boot_client_start(&fx->loop, (struct sockaddr *)&fx->addr, key, rank,
                             fx->size, 2000, &cb, cl_started, cl, NULL, &cl->c),
      0);
}

static void cl_start(fx_t *fx, cl_t *cl, int rank) {
  cl_start_key(fx, cl, rank, fx->key);
}

static void cl_close(fx_t *fx, cl_t *cl) {
  mmp__boot_client_close(cl->c, cl_closed, cl);
  RUN_UNTIL(fx, cl->closed == 1);
  cl->c = NULL;
}

/* A recognisable binary value for rank r: contains NUL and 0xff bytes. */
static size_t value_of(int r, int gen, uint8_t *out) {
  size_t n = 10 + (size_t)r, i;

  for (i = 0; i < n; i++)
    out[i] = (uint8_t)(i * 7 + (size_t)r * 31 + (size_t)gen);
  out[1] = 0;
  out[2] = 0xff;
  return n;
}

/* ---- Raw TCP peers ------------------------------------------------------- */

typedef struct raw_s {
  uv_tcp_t tcp;
  uv_connect_t creq;
  int connected;
  int eof;
  int closed;
  uint8_t in[4096];
  size_t inlen;
} raw_t;

typedef struct raw_write_s {
  uv_write_t req;
  uint8_t data[];
} raw_write_t;

static void raw_on_close(uv_handle_t *h) {
  raw_t *r = h->data;
  r->closed = 1;
}

static void raw_close(raw_t *r) {
  if (!uv_is_closing((uv_handle_t *)&r->tcp))
    uv_close((uv_handle_t *)&r->tcp, raw_on_close);
}

static void raw_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  raw_t *r = h->data;
  (void)hint;
  *buf = uv_buf_init((char *)r->in + r->inlen,
                     (unsigned)(sizeof(r->in) - r->inlen));
}

static void raw_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  raw_t *r = s->data;
  (void)buf;
  if (n > 0)
    r->inlen += (size_t)n;
  else if (n < 0) {
    r->eof = 1;
    raw_close(r);
  }
}

static void raw_on_connect(uv_connect_t *req, int status) {
  raw_t *r = req->data;
  assert_int_equal(status, 0);
  r->connected = 1;
  assert_int_equal(
      uv_read_start((uv_stream_t *)&r->tcp, raw_alloc, raw_on_read), 0);
}

static void raw_connect(fx_t *fx, raw_t *r) {
  memset(r, 0, sizeof(*r));
  uv_tcp_init(&fx->loop, &r->tcp);
  r->tcp.data = r;
  r->creq.data = r;
  assert_int_equal(uv_tcp_connect(&r->creq, &r->tcp,
                                  (struct sockaddr *)&fx->addr, raw_on_connect),
                   0);
}

static void raw_on_write(uv_write_t *req, int status) {
  (void)status;
  free(mmp__container_of(req, raw_write_t, req));
}

static void raw_send(raw_t *r, const void *data, size_t n) {
  raw_write_t *w = malloc(sizeof(*w) + n);
  uv_buf_t b;

  assert_non_null(w);
  memcpy(w->data, data, n);
  b = uv_buf_init((char *)w->data, (unsigned)n);
  assert_int_equal(
      uv_write(&w->req, (uv_stream_t *)&r->tcp, &b, 1, raw_on_write), 0);
}

#define CHALLENGE_BYTES (MMP__BOOT_HDR_SIZE + MMP__BOOT_CHALLENGE_LEN)
#define PROOF_BYTES (MMP__BOOT_HDR_SIZE + MMP__MAC_LEN)

/* Encodes a HELLO by hand, the way a foreign client would: a fresh nonce,
 * then rank, size, pid and the host "raw". Returns the message's length. */
static size_t make_hello(uint8_t *out, uint32_t rank, uint32_t size) {
  mmp__boot_hdr_t h = {MMP__B_HELLO, 0, MMP__NONCE_LEN + 12 + 2 + 3};

  mmp__boot_hdr_encode(&h, out);
  mmp__auth_nonce(out + 16);
  mmp__put_u32(out + 48, rank);
  mmp__put_u32(out + 52, size);
  mmp__put_u32(out + 56, 4242);
  mmp__put_u16(out + 60, 3);
  memcpy(out + 62, "raw", 3);
  return 65;
}

/* Answers the server's CHALLENGE to a raw peer that sent `hello` (n bytes,
 * header included) with a PROOF under `key`, also kept in `proof`. */
static void raw_prove(fx_t *fx, raw_t *r, const uint8_t *hello, size_t n,
                      const uint8_t *key, uint8_t proof[PROOF_BYTES]) {
  mmp__boot_hdr_t h = {MMP__B_PROOF, 0, MMP__MAC_LEN};
  mmp__auth_t a;

  RUN_UNTIL(fx, r->inlen >= CHALLENGE_BYTES);
  assert_int_equal(r->in[5], MMP__B_CHALLENGE);
  mmp__auth_begin(&a, key, MMP__AUTH_BOOT, hello + 16, n - 16, r->in + 16,
                  MMP__BOOT_CHALLENGE_LEN);
  mmp__boot_hdr_encode(&h, proof);
  mmp__auth_mac(&a, MMP__AUTH_DIALER, MMP__AUTH_PROVE, proof + 16);
  mmp__auth_end(&a);
  raw_send(r, proof, PROOF_BYTES);
}

/* A raw peer joins as `rank` of `size` with a complete handshake. */
static void raw_join(fx_t *fx, raw_t *r, uint32_t rank, uint32_t size) {
  uint8_t hello[128], proof[PROOF_BYTES];
  size_t n = make_hello(hello, rank, size);

  raw_send(r, hello, n);
  raw_prove(fx, r, hello, n, fx->key, proof);
  RUN_UNTIL(fx, r->inlen >= CHALLENGE_BYTES + MMP__BOOT_HDR_SIZE);
}

/* Where a raw peer's replies start: after the CHALLENGE every connection
 * gets first. */
static size_t raw_skip(const raw_t *r) {
  assert_true(r->inlen >= CHALLENGE_BYTES);
  assert_int_equal(r->in[5], MMP__B_CHALLENGE);
  return CHALLENGE_BYTES;
}

/* The type of the first message a raw peer received after its CHALLENGE. */
static int raw_first_type(const raw_t *r) {
  mmp__boot_hdr_t h;
  const char *why;
  size_t at = raw_skip(r);

  if (r->inlen < at + MMP__BOOT_HDR_SIZE ||
      mmp__boot_hdr_decode(r->in + at, MMP__BOOT_MAX_BODY, &h, &why) != 0)
    return -1;
  return h.type;
}

static int raw_error_code(const raw_t *r) {
  size_t at = raw_skip(r);

  assert_true(r->inlen >= at + MMP__BOOT_HDR_SIZE + 4);
  return (int)(int32_t)mmp__get_u32(r->in + at + MMP__BOOT_HDR_SIZE);
}

static int count_eof(const raw_t *r, int n) {
  int i, k = 0;
  for (i = 0; i < n; i++)
    k += r[i].eof;
  return k;
}

static int count_connected(const raw_t *r, int n) {
  int i, k = 0;
  for (i = 0; i < n; i++)
    k += r[i].connected;
  return k;
}

static int count_closed(const raw_t *r, int n) {
  int i, k = 0;
  for (i = 0; i < n; i++)
    k += r[i].closed;
  return k;
}

/* ---- Codec ----------------------------------------------------------------
 */

static void test_boot_wire_round_trip(void **state) {
  mmp__boot_wr_t w;
  mmp__boot_hdr_t h;
  mmp__boot_rd_t rd;
  const char *why, *s;
  const uint8_t *b;
  uint8_t blob[5] = {0, 1, 0xff, 0, 7};
  (void)state;

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, 0xdeadbeefu);
  mmp__boot_wr_str(&w, "addr", 4);
  mmp__boot_wr_blob(&w, blob, sizeof(blob));
  mmp__boot_wr_blob(&w, NULL, 0);
  assert_int_equal(mmp__boot_wr_finish(&w, MMP__B_PUT, 77), 0);
  assert_int_equal(w.len, 16 + 4 + 6 + 9 + 4);
  /* Layout: "MMPB", version, type, reserved, id, len, little-endian. */
  assert_memory_equal(w.buf, "MMPB", 4);
  assert_int_equal(w.buf[4], MMP__BOOT_VERSION);
  assert_int_equal(w.buf[5], MMP__B_PUT);
  assert_int_equal(mmp__get_u16(w.buf + 6), 0);
  assert_int_equal(w.buf[8], 77);
  assert_int_equal(w.buf[16], 0xef);

  assert_int_equal(mmp__boot_hdr_decode(w.buf, MMP__BOOT_MAX_BODY, &h, &why),
                   0);
  assert_int_equal(h.type, MMP__B_PUT);
  assert_int_equal(h.id, 77);
  assert_int_equal(h.len, w.len - 16);

  mmp__boot_rd_init(&rd, w.buf + 16, h.len);
  assert_int_equal(mmp__boot_rd_u32(&rd), 0xdeadbeefu);
  assert_int_equal(mmp__boot_rd_str(&rd, &s, MMP__BOOT_MAX_NAME), 4);
  assert_memory_equal(s, "addr", 4);
  assert_int_equal(mmp__boot_rd_blob(&rd, &b, MMP__BOOT_MAX_VALUE), 5);
  assert_memory_equal(b, blob, 5);
  assert_int_equal(mmp__boot_rd_blob(&rd, &b, MMP__BOOT_MAX_VALUE), 0);
  assert_int_equal(rd.left, 0);
  assert_false(rd.bad);
  free(w.buf);

  /* An empty body still makes a full header. */
  mmp__boot_wr_init(&w);
  assert_int_equal(mmp__boot_wr_finish(&w, MMP__B_BYE, 0), 0);
  assert_int_equal(w.len, 16);
  assert_int_equal(mmp__boot_hdr_decode(w.buf, 0, &h, &why), 0);
  assert_int_equal(h.len, 0);
  free(w.buf);
}

static void test_boot_wire_rejects_bad_headers(void **state) {
  mmp__boot_hdr_t h = {MMP__B_GETALL, 1, 10}, d;
  uint8_t b[MMP__BOOT_HDR_SIZE], x[MMP__BOOT_HDR_SIZE];
  const char *why = NULL;
  (void)state;

  mmp__boot_hdr_encode(&h, b);
  assert_int_equal(mmp__boot_hdr_decode(b, 10, &d, &why), 0);

  memcpy(x, b, sizeof(x));
  x[0] ^= 1;
  assert_int_equal(mmp__boot_hdr_decode(x, 10, &d, &why), MMP_EPROTO);
  assert_string_equal(why, "bad magic");

  memcpy(x, b, sizeof(x));
  x[4] = MMP__BOOT_VERSION + 1;
  assert_int_equal(mmp__boot_hdr_decode(x, 10, &d, &why), MMP_EPROTO);
  assert_string_equal(why, "unsupported protocol version");

  memcpy(x, b, sizeof(x));
  x[5] = 0;
  assert_int_equal(mmp__boot_hdr_decode(x, 10, &d, &why), MMP_EPROTO);
  x[5] = MMP__B_TYPE_MAX + 1;
  assert_int_equal(mmp__boot_hdr_decode(x, 10, &d, &why), MMP_EPROTO);

  memcpy(x, b, sizeof(x));
  x[7] = 1;
  assert_int_equal(mmp__boot_hdr_decode(x, 10, &d, &why), MMP_EPROTO);

  /* One byte over the cap is refused before anything is allocated. */
  assert_int_equal(mmp__boot_hdr_decode(b, 9, &d, &why), MMP_ETOOBIG);
  h.len = MMP__BOOT_MAX_BODY + 1;
  mmp__boot_hdr_encode(&h, x);
  assert_int_equal(mmp__boot_hdr_decode(x, MMP__BOOT_MAX_BODY, &d, &why),
                   MMP_ETOOBIG);
  h.len = UINT32_MAX;
  mmp__boot_hdr_encode(&h, x);
  assert_int_equal(mmp__boot_hdr_decode(x, MMP__BOOT_MAX_BODY, &d, &why),
                   MMP_ETOOBIG);
}

static void test_boot_wire_reader_catches_truncation(void **state) {
  uint8_t body[16] = {0};
  mmp__boot_rd_t rd;
  const char *s;
  const uint8_t *b;
  (void)state;

  /* A u32 from two bytes. */
  mmp__boot_rd_init(&rd, body, 2);
  assert_int_equal(mmp__boot_rd_u32(&rd), 0);
  assert_true(rd.bad);

  /* A blob whose length runs past the body. */
  mmp__put_u32(body, 100);
  mmp__boot_rd_init(&rd, body, 8);
  assert_int_equal(mmp__boot_rd_blob(&rd, &b, 4096), 0);
  assert_true(rd.bad);
  assert_int_equal(rd.left, 0);
  /* Once bad, reads yield nothing. */
  assert_int_equal(mmp__boot_rd_u32(&rd), 0);
  assert_true(rd.bad);

  /* A string longer than the caller's maximum, though present. */
  mmp__put_u16(body, 5);
  memcpy(body + 2, "hello", 5);
  mmp__boot_rd_init(&rd, body, 7);
  assert_int_equal(mmp__boot_rd_str(&rd, &s, 4), 0);
  assert_true(rd.bad);
  assert_string_equal(s, "");

  /* A string whose length runs past the body. */
  mmp__boot_rd_init(&rd, body, 5);
  assert_int_equal(mmp__boot_rd_str(&rd, &s, 64), 0);
  assert_true(rd.bad);

  /* The exact fit is fine. */
  mmp__boot_rd_init(&rd, body, 7);
  assert_int_equal(mmp__boot_rd_str(&rd, &s, 5), 5);
  assert_false(rd.bad);
  assert_memory_equal(s, "hello", 5);
}

/* ---- Server and clients -----------------------------------------------------
 */

/* A whole job; `seal`: the server and every client seal (MINIMP_ENCRYPT),
 * a PUT queued before WELCOME included. */
static void job_put_getall_get_fence(fx_t *fx, int seal) {
  cl_t cl[4];
  res_t all0, all2, get, later, fence[4], put3;
  uint8_t v[64];
  size_t n;
  int i;

  memset(&all0, 0, sizeof(all0));
  memset(&all2, 0, sizeof(all2));
  memset(&get, 0, sizeof(get));
  memset(&later, 0, sizeof(later));
  memset(fence, 0, sizeof(fence));
  memset(&put3, 0, sizeof(put3));
  start_server(fx, 4, 2000);
  if (seal)
    assert_int_equal(mmp__boot_server_seal(fx->srv), 0);
  for (i = 0; i < 4; i++) {
    cl_start(fx, &cl[i], i);
    if (seal)
      mmp__boot_client_seal(cl[i].c);
  }
  /* Requests may be queued before WELCOME. */
  n = value_of(3, 0, v);
  assert_int_equal(mmp__boot_put(cl[3].c, "addr", v, n, on_res, &put3), 0);
  RUN_UNTIL(fx, cl[0].started && cl[1].started && cl[2].started &&
                    cl[3].started && put3.done);
  for (i = 0; i < 4; i++)
    assert_int_equal(cl[i].start_status, 0);
  assert_int_equal(put3.status, 0);
  assert_int_equal(fx->joined, 4);

  /* GETALL waits until every rank has PUT the name. */
  assert_int_equal(mmp__boot_getall(cl[0].c, "addr", on_res, &all0), 0);
  for (i = 0; i < 2; i++) {
    n = value_of(i, 0, v);
    assert_int_equal(mmp__boot_put(cl[i].c, "addr", v, n, NULL, NULL), 0);
  }
  run_for(fx, 50);
  assert_int_equal(all0.done, 0);
  n = value_of(2, 0, v);
  assert_int_equal(mmp__boot_put(cl[2].c, "addr", v, n, NULL, NULL), 0);
  RUN_UNTIL(fx, all0.done == 1);
  assert_int_equal(all0.status, 0);
  assert_int_equal(all0.count, 4);
  for (i = 0; i < 4; i++) {
    n = value_of(i, 0, v);
    assert_int_equal(all0.lens[i], n);
    assert_memory_equal(all0.vals[i], v, n);
  }

  /* A re-PUT replaces the rank's value. */
  n = value_of(1, 1, v);
  assert_int_equal(mmp__boot_put(cl[1].c, "addr", v, n, NULL, NULL), 0);
  assert_int_equal(mmp__boot_getall(cl[2].c, "addr", on_res, &all2), 0);
  /* GET of one rank; GET of a name not yet PUT waits for it. */
  assert_int_equal(mmp__boot_get(cl[0].c, 2, "addr", on_res, &get), 0);
  assert_int_equal(mmp__boot_get(cl[0].c, 3, "later", on_res, &later), 0);
  RUN_UNTIL(fx, all2.done && get.done);
  assert_int_equal(all2.count, 4);
  assert_int_equal(all2.lens[1], n);
  assert_memory_equal(all2.vals[1], v, n);
  n = value_of(0, 0, v);
  assert_memory_equal(all2.vals[0], v, n);
  assert_int_equal(get.status, 0);
  assert_int_equal(get.count, 1);
  n = value_of(2, 0, v);
  assert_int_equal(get.lens[0], n);
  assert_memory_equal(get.vals[0], v, n);
  assert_int_equal(later.done, 0);
  assert_int_equal(mmp__boot_put(cl[3].c, "later", "", 0, NULL, NULL), 0);
  RUN_UNTIL(fx, later.done);
  assert_int_equal(later.status, 0);
  assert_int_equal(later.count, 1);
  assert_int_equal(later.lens[0], 0);

  /* FENCE completes for everyone only once all four entered. */
  for (i = 0; i < 3; i++)
    assert_int_equal(mmp__boot_fence(cl[i].c, 7, on_res, &fence[i]), 0);
  run_for(fx, 50);
  for (i = 0; i < 3; i++)
    assert_int_equal(fence[i].done, 0);
  assert_int_equal(mmp__boot_fence(cl[3].c, 7, on_res, &fence[3]), 0);
  RUN_UNTIL(fx,
            fence[0].done && fence[1].done && fence[2].done && fence[3].done);
  for (i = 0; i < 4; i++) {
    assert_int_equal(fence[i].done, 1);
    assert_int_equal(fence[i].status, 0);
  }

  /* Everyone says BYE: all_done, and nobody was lost. */
  for (i = 0; i < 4; i++) {
    cl_close(fx, &cl[i]);
    assert_int_equal(cl[i].lost, 1);
    assert_int_equal(cl[i].lost_err, 0);
  }
  RUN_UNTIL(fx, fx->all_done == 1);
  assert_int_equal(fx->lost, 0);
}

static void test_boot_job_put_getall_get_fence(void **state) {
  job_put_getall_get_fence(*state, 0);
}

static void test_boot_sealed_job_put_getall_get_fence(void **state) {
  job_put_getall_get_fence(*state, 1);
}

/* On a sealing server, a joined rank whose next bytes are in clear (an
 * injection after the handshake) is lost, and says why. */
static void test_boot_sealed_server_refuses_clear_bytes(void **state) {
  fx_t *fx = *state;
  raw_t raw;
  uint8_t buf[64];

  start_server(fx, 2, 2000);
  assert_int_equal(mmp__boot_server_seal(fx->srv), 0);
  raw_connect(fx, &raw);
  RUN_UNTIL(fx, raw.connected);
  raw_join(fx, &raw, 1, 2);
  assert_int_equal(mmp__get_u32(raw.in + 16 + MMP__NONCE_LEN), MMP__BOOT_SEAL);
  {
    mmp__boot_hdr_t h = {MMP__B_PUT, 5, 2 + 4 + 4};
    mmp__boot_hdr_encode(&h, buf);
    mmp__put_u16(buf + 16, 4);
    memcpy(buf + 18, "addr", 4);
    mmp__put_u32(buf + 22, 0);
    raw_send(&raw, buf, 26);
  }
  RUN_UNTIL(fx, raw.eof && fx->lost >= 1);
  assert_int_equal(fx->lost_rank[0], 1);
  assert_non_null(strstr(fx->lost_reason[0], "sealed record"));
  RUN_UNTIL(fx, raw.closed);
}

static void test_boot_wrong_key_is_rejected(void **state) {
  fx_t *fx = *state;
  uint8_t bad[MMP__JOB_KEY_LEN];
  cl_t cl;

  start_server(fx, 2, 2000);
  memcpy(bad, fx->key, sizeof(bad));
  bad[5] ^= 0x40;
  cl_start_key(fx, &cl, 0, bad);
  RUN_UNTIL(fx, cl.started && cl.lost);
  assert_int_equal(cl.start_status, MMP_EAUTH);
  assert_int_equal(cl.lost_err, MMP_EAUTH);
  assert_int_equal(fx->joined, 0);
  assert_int_equal(fx->lost, 0);
  /* Requests on a dead client fail at once. */
  assert_int_equal(mmp__boot_fence(cl.c, 1, on_res, NULL), MMP_EPEERLOST);
  cl_close(fx, &cl);
  assert_int_equal(cl.lost, 1);
}

static void test_boot_replayed_handshake_is_rejected(void **state) {
  fx_t *fx = *state;
  uint8_t hello[128], proof[PROOF_BYTES];
  raw_t first, again;
  size_t n;

  start_server(fx, 2, 2000);
  /* A complete handshake, recorded... */
  raw_connect(fx, &first);
  RUN_UNTIL(fx, first.connected);
  n = make_hello(hello, 1, 2);
  raw_send(&first, hello, n);
  raw_prove(fx, &first, hello, n, fx->key, proof);
  RUN_UNTIL(fx, fx->joined == 1);
  raw_close(&first);
  RUN_UNTIL(fx, first.closed && fx->lost == 1);
  /* ...and sent again, byte for byte, on a new connection: the server's
   * nonce is new, so the old proof is worthless. */
  raw_connect(fx, &again);
  RUN_UNTIL(fx, again.connected);
  raw_send(&again, hello, n);
  raw_send(&again, proof, sizeof(proof));
  RUN_UNTIL(fx, again.eof);
  assert_memory_not_equal(again.in + 16, first.in + 16, MMP__NONCE_LEN);
  assert_int_equal(raw_first_type(&again), MMP__B_ERROR);
  assert_int_equal(raw_error_code(&again), MMP_EAUTH);
  assert_int_equal(fx->joined, 1);
  RUN_UNTIL(fx, again.closed);
}

/* A server that does not hold the key: it takes the client's HELLO and
 * PROOF and answers WELCOME with that very proof, reflected. */
typedef struct fake_server_s {
  int lfd;
  int port;
} fake_server_t;

static void recv_exact(int fd, uint8_t *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = recv(fd, p + got, n - got, 0);
    if (k <= 0)
      return;
    got += (size_t)k;
  }
}

static void *fake_server_main(void *arg) {
  fake_server_t *fs = arg;
  uint8_t hdr[16], body[512], msg[64];
  mmp__boot_hdr_t h;
  const char *why;
  int fd = accept(fs->lfd, NULL, NULL);

  if (fd < 0)
    return NULL;
  h.type = MMP__B_CHALLENGE;
  h.id = 0;
  h.len = MMP__BOOT_CHALLENGE_LEN;
  mmp__boot_hdr_encode(&h, msg);
  memset(msg + 16, 0x5a, MMP__NONCE_LEN);
  mmp__put_u32(msg + 16 + MMP__NONCE_LEN, 0); /* flags: no sealing */
  send(fd, msg, CHALLENGE_BYTES, MSG_NOSIGNAL);
  for (int i = 0; i < 2; i++) {
    recv_exact(fd, hdr, sizeof(hdr));
    if (mmp__boot_hdr_decode(hdr, 512, &h, &why) != 0)
      break;
    recv_exact(fd, body, h.len);
    if (h.type == MMP__B_PROOF) {
      h.type = MMP__B_WELCOME;
      mmp__boot_hdr_encode(&h, msg);
      memcpy(msg + 16, body, MMP__MAC_LEN);
      send(fd, msg, PROOF_BYTES, MSG_NOSIGNAL);
    }
  }
  recv_exact(fd, hdr, 1); /* until the client hangs up */
  close(fd);
  return NULL;
}

static void test_boot_server_without_key_is_refused(void **state) {
  fx_t *fx = *state;
  struct sockaddr_in sin;
  socklen_t len = sizeof(sin);
  fake_server_t fs;
  pthread_t th;
  cl_t cl;

  fs.lfd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fs.lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
  assert_int_equal(listen(fs.lfd, 1), 0);
  getsockname(fs.lfd, (struct sockaddr *)&sin, &len);
  memcpy(&fx->addr, &sin, sizeof(sin));
  fx->size = 1;
  assert_int_equal(pthread_create(&th, NULL, fake_server_main, &fs), 0);
  cl_start(fx, &cl, 0);
  RUN_UNTIL(fx, cl.started && cl.lost);
  assert_int_equal(cl.start_status, MMP_EAUTH);
  assert_int_equal(cl.lost_err, MMP_EAUTH);
  cl_close(fx, &cl);
  pthread_join(th, NULL);
  close(fs.lfd);
}

static void test_boot_duplicate_rank_is_rejected(void **state) {
  fx_t *fx = *state;
  cl_t a, dup, b;
  res_t get, fa, fb;
  uint8_t v[64];
  size_t n = value_of(0, 3, v);

  memset(&get, 0, sizeof(get));
  memset(&fa, 0, sizeof(fa));
  memset(&fb, 0, sizeof(fb));
  start_server(fx, 2, 2000);
  cl_start(fx, &a, 0);
  RUN_UNTIL(fx, a.started);
  assert_int_equal(a.start_status, 0);
  cl_start(fx, &dup, 0);
  RUN_UNTIL(fx, dup.started);
  assert_int_equal(dup.start_status, MMP_ERANK);
  assert_int_equal(fx->joined, 1);

  /* The original keeps working. */
  assert_int_equal(mmp__boot_put(a.c, "k", v, n, NULL, NULL), 0);
  assert_int_equal(mmp__boot_get(a.c, 0, "k", on_res, &get), 0);
  RUN_UNTIL(fx, get.done);
  assert_int_equal(get.status, 0);
  assert_int_equal(get.lens[0], n);
  assert_memory_equal(get.vals[0], v, n);
  cl_start(fx, &b, 1);
  assert_int_equal(mmp__boot_fence(a.c, 1, on_res, &fa), 0);
  assert_int_equal(mmp__boot_fence(b.c, 1, on_res, &fb), 0);
  RUN_UNTIL(fx, fa.done && fb.done);
  assert_int_equal(fa.status, 0);
  assert_int_equal(fb.status, 0);
  assert_int_equal(fx->lost, 0);
  assert_int_equal(a.lost, 0);

  cl_close(fx, &dup);
  cl_close(fx, &a);
  cl_close(fx, &b);
  RUN_UNTIL(fx, fx->all_done == 1);
}

static void test_boot_garbage_is_closed_others_unharmed(void **state) {
  fx_t *fx = *state;
  raw_t junk, huge, early, trunc, silent;
  uint8_t buf[128];
  mmp__boot_hdr_t h;
  cl_t cl;
  res_t f;
  size_t n;

  memset(&f, 0, sizeof(f));
  start_server(fx, 1, 300);
  raw_connect(fx, &junk);
  raw_connect(fx, &huge);
  raw_connect(fx, &early);
  raw_connect(fx, &trunc);
  raw_connect(fx, &silent);
  RUN_UNTIL(fx, junk.connected && huge.connected && early.connected &&
                    trunc.connected && silent.connected);

  memset(buf, 0xab, 64);
  raw_send(&junk, buf, 64);
  /* A valid header announcing more than the cap. */
  h.type = MMP__B_HELLO;
  h.id = 0;
  h.len = MMP__BOOT_MAX_BODY + 1;
  mmp__boot_hdr_encode(&h, buf);
  raw_send(&huge, buf, 16);
  /* A request before HELLO. */
  h.type = MMP__B_FENCE;
  h.len = 4;
  mmp__boot_hdr_encode(&h, buf);
  raw_send(&early, buf, 20);
  /* A HELLO whose host string claims more bytes than the body holds. */
  n = make_hello(buf, 0, 1);
  mmp__put_u16(buf + 60, 40);
  raw_send(&trunc, buf, n);

  RUN_UNTIL(fx, junk.eof && huge.eof && early.eof && trunc.eof);
  assert_int_equal(raw_first_type(&junk), MMP__B_ERROR);
  assert_int_equal(raw_error_code(&junk), MMP_EPROTO);
  assert_int_equal(raw_first_type(&huge), MMP__B_ERROR);
  assert_int_equal(raw_error_code(&huge), MMP_ETOOBIG);
  assert_int_equal(raw_first_type(&early), MMP__B_ERROR);
  assert_int_equal(raw_first_type(&trunc), MMP__B_ERROR);
  assert_int_equal(raw_error_code(&trunc), MMP_EPROTO);
  /* The silent one is dropped by the handshake timeout, with no word
   * beyond its CHALLENGE. */
  RUN_UNTIL(fx, silent.eof);
  assert_int_equal(silent.inlen, CHALLENGE_BYTES);

  /* A well-behaved client still gets through. */
  cl_start(fx, &cl, 0);
  assert_int_equal(mmp__boot_fence(cl.c, 3, on_res, &f), 0);
  RUN_UNTIL(fx, f.done);
  assert_int_equal(cl.start_status, 0);
  assert_int_equal(f.status, 0);
  assert_int_equal(fx->joined, 1);
  assert_int_equal(fx->lost, 0);
  cl_close(fx, &cl);
  RUN_UNTIL(fx, junk.closed && huge.closed && early.closed && trunc.closed &&
                    silent.closed && fx->all_done == 1);
}

static void test_boot_unauthenticated_connections_are_capped(void **state) {
  fx_t *fx = *state;
  enum { N = 66 };
  raw_t *r = calloc(N, sizeof(*r));
  double t0;
  cl_t cl;
  int i;

  assert_non_null(r);
  start_server(fx, 1, 1000);
  t0 = mmp_wtime();
  for (i = 0; i < N; i++)
    raw_connect(fx, &r[i]);
  RUN_UNTIL(fx, count_connected(r, N) == N);
  /* 64 strangers and the one rank still to come may wait for their
   * HELLO; the real rank arriving behind 66 silent peers makes 67, so
   * the two oldest are closed at once, and the rank joins at once. */
  cl_start(fx, &cl, 0);
  RUN_UNTIL(fx, cl.started && count_eof(r, N) >= 2);
  assert_true(mmp_wtime() - t0 < 0.9); /* before any handshake timeout */
  assert_int_equal(cl.start_status, 0);
  assert_int_equal(fx->joined, 1);
  assert_int_equal(count_eof(r, N), 2);
  assert_true(r[0].eof && r[1].eof);
  /* The other 64 get their full timeout. */
  RUN_UNTIL(fx, count_eof(r, N) == N);
  assert_true(mmp_wtime() - t0 >= 0.95);
  cl_close(fx, &cl);
  for (i = 0; i < N; i++)
    raw_close(&r[i]);
  RUN_UNTIL(fx, count_closed(r, N) == N && fx->all_done == 1);
  free(r);
}

/* Plain blocking sockets to the server, opened while its loop does not
 * run, so that they wait in the kernel's backlog as a flood's do. */
static int sock_connect(const fx_t *fx) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);

  assert_true(fd >= 0);
  assert_int_equal(connect(fd, (const struct sockaddr *)&fx->addr,
                           sizeof(struct sockaddr_in)),
                   0);
  return fd;
}

/* 1 once the server closed fd (EOF or reset); drains what it sent. */
static int sock_closed(int fd) {
  char buf[256];

  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      return 1;
    if (n < 0)
      return 0;
  }
}

/*
 * A slow-loris, one byte of a HELLO every 100 ms, arriving behind a flood
 * of 300 silent connections, must be closed at its handshake deadline
 * counted from its arrival. The server used to stop accepting at 64
 * unauthenticated connections, and a connection waiting in the kernel's
 * backlog had no deadline running: this one was closed after about 6 s.
 */
static void test_boot_deadline_holds_under_a_flood(void **state) {
  fx_t *fx = *state;
  enum { FLOOD = 300 };
  int *flood = calloc(FLOOD, sizeof(*flood));
  uint8_t hello[128];
  size_t sent = 0, n;
  double t0, closed_after = -1;
  cl_t cl;
  int i, loris;

  assert_non_null(flood);
  start_server(fx, 2, 1000);
  for (i = 0; i < FLOOD; i++)
    flood[i] = sock_connect(fx);
  loris = sock_connect(fx);
  t0 = mmp_wtime();
  n = make_hello(hello, 0, 2);
  while (mmp_wtime() - t0 < 4.0) {
    run_for(fx, 100);
    if (sock_closed(loris)) {
      closed_after = mmp_wtime() - t0;
      break;
    }
    if (sent < n - 1 &&
        send(loris, hello + sent, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
      sent++;
  }
  /* Closed by its own deadline (1 s), not before, and not much after. */
  print_message("slow-loris closed after %.3f s\n", closed_after);
  assert_true(closed_after >= 0); /* within 4 s at all */
  assert_true(closed_after >= 0.9);
  assert_true(closed_after <= 2.0);
  assert_true(sent >= 5);

  /* Ranks still get in while the flood's connections are held open. */
  cl_start(fx, &cl, 1);
  RUN_UNTIL(fx, cl.started);
  assert_int_equal(cl.start_status, 0);
  assert_int_equal(fx->joined, 1);
  cl_close(fx, &cl);
  close(loris);
  for (i = 0; i < FLOOD; i++)
    close(flood[i]);
  free(flood);
}

static void test_boot_lost_rank_fails_waiters(void **state) {
  fx_t *fx = *state;
  raw_t raw;
  cl_t a;
  res_t f;

  memset(&f, 0, sizeof(f));
  start_server(fx, 2, 2000);
  cl_start(fx, &a, 0);
  raw_connect(fx, &raw);
  RUN_UNTIL(fx, a.started && raw.connected);
  raw_join(fx, &raw, 1, 2);
  assert_int_equal(raw_first_type(&raw), MMP__B_WELCOME);
  assert_int_equal(fx->joined, 2);

  /* Rank 1 dies without BYE while rank 0 waits in a fence. */
  assert_int_equal(mmp__boot_fence(a.c, 1, on_res, &f), 0);
  run_for(fx, 30);
  assert_int_equal(f.done, 0);
  raw_close(&raw);
  RUN_UNTIL(fx, fx->lost == 2 && f.done && a.lost);
  assert_int_equal(fx->lost_rank[0], 1);
  assert_string_equal(fx->lost_reason[0], "connection closed without BYE");
  assert_int_equal(f.status, MMP_EPEERLOST);
  assert_int_equal(a.lost_err, MMP_EPEERLOST);
  /* The server closed rank 0 in turn, as its fence can never complete. */
  assert_int_equal(fx->lost_rank[1], 0);
  assert_string_equal(fx->lost_reason[1], "rank 1 left the job");
  assert_int_equal(fx->all_done, 0);
  cl_close(fx, &a);
  assert_int_equal(a.lost, 1);
  RUN_UNTIL(fx, raw.closed);
}

static void test_boot_suspect_marks_rank_lost(void **state) {
  fx_t *fx = *state;
  cl_t a, b, c;

  start_server(fx, 3, 2000);
  cl_start(fx, &a, 0);
  cl_start(fx, &b, 1);
  cl_start(fx, &c, 2);
  RUN_UNTIL(fx, a.started && b.started && c.started);
  assert_int_equal(fx->joined, 3);

  /* Rank 0 reports rank 2 silent: the server drops rank 2 and says who
   * accused it. A second report about the same rank changes nothing. */
  assert_int_equal(
      mmp__boot_suspect(a.c, 2, "no heartbeat for 10 s", NULL, NULL), 0);
  assert_int_equal(mmp__boot_suspect(b.c, 2, "reset", NULL, NULL), 0);
  RUN_UNTIL(fx, fx->lost >= 1 && c.lost);
  run_for(fx, 30);
  assert_int_equal(fx->lost_rank[0], 2);
  assert_string_equal(
      fx->lost_reason[0],
      "unresponsive, reported by rank 0: no heartbeat for 10 s");
  assert_true(fx->lost == 1 || fx->lost_rank[1] != 2);

  /* Accusing oneself, or a rank that does not exist, is malformed. */
  assert_int_equal(mmp__boot_suspect(a.c, 0, "me", NULL, NULL), 0);
  RUN_UNTIL(fx, a.lost);
  assert_int_equal(mmp__boot_suspect(b.c, 5, "x", NULL, NULL), MMP_ERANK);
  cl_close(fx, &a);
  cl_close(fx, &b);
  cl_close(fx, &c);
}

static void test_boot_joined_rank_sending_garbage_is_lost(void **state) {
  fx_t *fx = *state;
  raw_t raw;
  uint8_t buf[64];
  cl_t a;
  res_t f;

  memset(&f, 0, sizeof(f));
  start_server(fx, 2, 2000);
  cl_start(fx, &a, 0);
  raw_connect(fx, &raw);
  RUN_UNTIL(fx, a.started && raw.connected);
  raw_join(fx, &raw, 1, 2);
  /* A PUT whose name length runs past its body. */
  {
    mmp__boot_hdr_t h = {MMP__B_PUT, 5, 8};
    mmp__boot_hdr_encode(&h, buf);
    mmp__put_u16(buf + 16, 60);
    memcpy(buf + 18, "abcdef", 6);
    raw_send(&raw, buf, 24);
  }
  RUN_UNTIL(fx, raw.eof && fx->lost >= 1);
  assert_int_equal(fx->lost_rank[0], 1);
  assert_string_equal(fx->lost_reason[0], "protocol violation: malformed PUT");
  /* The ERROR came after CHALLENGE and WELCOME. */
  assert_true(raw.inlen >=
              CHALLENGE_BYTES + PROOF_BYTES + MMP__BOOT_HDR_SIZE + 4);
  assert_int_equal(raw.in[CHALLENGE_BYTES + PROOF_BYTES + 5], MMP__B_ERROR);
  /* Rank 0 was not waiting on anything, so it stays. */
  run_for(fx, 30);
  assert_int_equal(fx->lost, 1);
  assert_int_equal(a.lost, 0);
  assert_int_equal(mmp__boot_put(a.c, "still", "ok", 2, on_res, &f), 0);
  RUN_UNTIL(fx, f.done);
  assert_int_equal(f.status, 0);
  cl_close(fx, &a);
  RUN_UNTIL(fx, raw.closed);
}

static void test_boot_server_stop_drops_clients(void **state) {
  fx_t *fx = *state;
  cl_t a, b;
  res_t all;

  memset(&all, 0, sizeof(all));
  start_server(fx, 3, 2000);
  cl_start(fx, &a, 0);
  cl_start(fx, &b, 1);
  RUN_UNTIL(fx, a.started && b.started);
  assert_int_equal(mmp__boot_getall(a.c, "x", on_res, &all), 0);
  run_for(fx, 30);
  mmp__boot_server_stop(fx->srv, srv_stopped, fx);
  fx->srv = NULL;
  RUN_UNTIL(fx, fx->stopped && a.lost && b.lost && all.done);
  assert_true(a.lost_err < 0);
  assert_true(b.lost_err < 0);
  assert_int_equal(all.status, a.lost_err);
  /* No server callback after stop. */
  assert_int_equal(fx->lost, 0);
  cl_close(fx, &a);
  cl_close(fx, &b);
  assert_int_equal(a.lost, 1);
}

static void test_boot_client_close_while_connecting(void **state) {
  fx_t *fx = *state;
  cl_t a;
  res_t f;

  memset(&f, 0, sizeof(f));
  start_server(fx, 1, 2000);
  cl_start(fx, &a, 0);
  assert_int_equal(mmp__boot_fence(a.c, 1, on_res, &f), 0);
  mmp__boot_client_close(a.c, cl_closed, &a);
  assert_int_equal(a.started, 1);
  assert_int_equal(a.start_status, MMP_ESHUTDOWN);
  assert_int_equal(f.done, 1);
  assert_int_equal(f.status, MMP_ESHUTDOWN);
  RUN_UNTIL(fx, a.closed == 1);
  assert_int_equal(a.lost, 1);
  assert_int_equal(a.lost_err, 0);
  assert_int_equal(fx->joined, 0);
}

static void test_boot_abort_and_events(void **state) {
  fx_t *fx = *state;
  cl_t a, b;
  res_t ab;

  memset(&ab, 0, sizeof(ab));
  start_server(fx, 2, 2000);
  cl_start(fx, &a, 0);
  cl_start(fx, &b, 1);
  RUN_UNTIL(fx, a.started && b.started);
  assert_int_equal(mmp__boot_abort(b.c, 5, "boom", on_res, &ab), 0);
  RUN_UNTIL(fx, ab.done && fx->aborts == 1);
  assert_int_equal(ab.status, 0);
  assert_int_equal(fx->abort_rank, 1);
  assert_int_equal(fx->abort_code, 5);
  assert_string_equal(fx->abort_msg, "boom");

  mmp__boot_server_broadcast(fx->srv, MMP__BOOT_EV_ABORT, 1, 5, "stopping", 1);
  RUN_UNTIL(fx, a.events == 1);
  assert_int_equal(a.ev_kind, MMP__BOOT_EV_ABORT);
  assert_int_equal(a.ev_rank, 1);
  assert_int_equal(a.ev_code, 5);
  assert_string_equal(a.ev_msg, "stopping");
  run_for(fx, 30);
  assert_int_equal(b.events, 0); /* excepted */

  cl_close(fx, &a);
  cl_close(fx, &b);
  RUN_UNTIL(fx, fx->all_done == 1);
  assert_int_equal(fx->lost, 0);
}

static void test_boot_close_fails_pending_requests(void **state) {
  fx_t *fx = *state;
  cl_t a;
  res_t all, f;

  memset(&all, 0, sizeof(all));
  memset(&f, 0, sizeof(f));
  start_server(fx, 2, 2000);
  cl_start(fx, &a, 0);
  RUN_UNTIL(fx, a.started);
  assert_int_equal(mmp__boot_getall(a.c, "never", on_res, &all), 0);
  assert_int_equal(mmp__boot_fence(a.c, 9, on_res, &f), 0);
  run_for(fx, 30);
  mmp__boot_client_close(a.c, cl_closed, &a);
  /* Pending requests fail at once, before the close completes. */
  assert_int_equal(all.done, 1);
  assert_int_equal(all.status, MMP_ESHUTDOWN);
  assert_int_equal(f.done, 1);
  assert_int_equal(f.status, MMP_ESHUTDOWN);
  assert_int_equal(mmp__boot_put(a.c, "x", "y", 1, NULL, NULL), MMP_ESHUTDOWN);
  RUN_UNTIL(fx, a.closed == 1);
  assert_int_equal(a.lost, 1);
  assert_int_equal(a.lost_err, 0);
  /* It said BYE, so the server saw no loss. */
  run_for(fx, 30);
  assert_int_equal(fx->lost, 0);
}

/* A "server" that answers every connection with garbage. */
typedef struct evil_s {
  uv_tcp_t listener;
  uv_tcp_t conn;
  int accepted;
  int closed;
} evil_t;

static void evil_on_close(uv_handle_t *h) {
  evil_t *e = h->data;
  e->closed++;
}

static void evil_on_connection(uv_stream_t *l, int status) {
  evil_t *e = l->data;
  static uint8_t garbage[32];
  uv_buf_t b = uv_buf_init((char *)garbage, sizeof(garbage));

  assert_int_equal(status, 0);
  memset(garbage, 0x5a, sizeof(garbage));
  uv_tcp_init(l->loop, &e->conn);
  e->conn.data = e;
  assert_int_equal(uv_accept(l, (uv_stream_t *)&e->conn), 0);
  assert_true(uv_try_write((uv_stream_t *)&e->conn, &b, 1) > 0);
  e->accepted = 1;
}

static void test_boot_client_survives_bad_server(void **state) {
  fx_t *fx = *state;
  struct sockaddr_in sin;
  int len = sizeof(fx->addr);
  evil_t e;
  cl_t cl;
  res_t f;

  memset(&e, 0, sizeof(e));
  memset(&f, 0, sizeof(f));
  uv_tcp_init(&fx->loop, &e.listener);
  e.listener.data = &e;
  uv_ip4_addr("127.0.0.1", 0, &sin);
  assert_int_equal(uv_tcp_bind(&e.listener, (struct sockaddr *)&sin, 0), 0);
  assert_int_equal(uv_listen((uv_stream_t *)&e.listener, 4, evil_on_connection),
                   0);
  assert_int_equal(
      uv_tcp_getsockname(&e.listener, (struct sockaddr *)&fx->addr, &len), 0);
  fx->size = 2;
  cl_start(fx, &cl, 1);
  assert_int_equal(mmp__boot_fence(cl.c, 1, on_res, &f), 0);
  RUN_UNTIL(fx, cl.started && cl.lost && f.done);
  assert_int_equal(cl.start_status, MMP_EPROTO);
  assert_int_equal(cl.lost_err, MMP_EPROTO);
  assert_int_equal(f.status, MMP_EPROTO);
  cl_close(fx, &cl);
  assert_int_equal(cl.lost, 1);
  uv_close((uv_handle_t *)&e.listener, evil_on_close);
  if (e.accepted)
    uv_close((uv_handle_t *)&e.conn, evil_on_close);
  RUN_UNTIL(fx, e.closed == 1 + e.accepted);
}

static void on_mute_connection(uv_stream_t *l, int status) {
  /* Never accepts: the kernel completes the handshake, nobody answers. */
  (void)l;
  (void)status;
}

static void on_mute_close(uv_handle_t *h) {
  *(int *)h->data = 1;
}

static void test_boot_connect_refused_and_timeout(void **state) {
  fx_t *fx = *state;
  struct sockaddr_in sin;
  uv_tcp_t mute;
  int len = sizeof(fx->addr), mute_closed = 0;
  cl_t cl;

  /* Nobody listens on a port we bound and closed: the client redials
   * until its start timeout, then gives up. */
  start_server(fx, 1, 2000);
  mmp__boot_server_stop(fx->srv, srv_stopped, fx);
  fx->srv = NULL;
  RUN_UNTIL(fx, fx->stopped);
  {
    mmp__boot_client_cb_t cb = {&cl, cl_event, cl_lost};
    memset(&cl, 0, sizeof(cl));
    assert_int_equal(
        mmp__boot_client_start(&fx->loop, (struct sockaddr *)&fx->addr, fx->key,
                               0, 1, 300, &cb, cl_started, &cl, NULL, &cl.c),
        0);
  }
  RUN_UNTIL(fx, cl.started && cl.lost);
  assert_int_equal(cl.start_status, MMP_ETIMEDOUT);
  cl_close(fx, &cl);

  /* A server that starts listening after the client began to dial (an
   * embedded job whose hosting rank starts last) is still reached. */
  cl_start(fx, &cl, 0);
  for (int i = 0; i < 30; i++) {
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    usleep(5000);
  }
  assert_int_equal(cl.started, 0);
  {
    mmp__boot_server_cb_t scb = {fx, srv_joined, srv_lost, srv_abort,
                                 srv_all_done};
    fx->stopped = 0;
    assert_int_equal(mmp__boot_server_start(
                         &fx->loop, (struct sockaddr *)&fx->addr, 1, fx->key,
                         2000, &scb, &fx->srv, fx->name, sizeof(fx->name)),
                     0);
  }
  RUN_UNTIL(fx, cl.started);
  assert_int_equal(cl.start_status, 0);
  cl_close(fx, &cl);
  mmp__boot_server_stop(fx->srv, srv_stopped, fx);
  fx->srv = NULL;
  RUN_UNTIL(fx, fx->stopped);

  /* A listener that never answers: the start times out. */
  uv_tcp_init(&fx->loop, &mute);
  uv_ip4_addr("127.0.0.1", 0, &sin);
  assert_int_equal(uv_tcp_bind(&mute, (struct sockaddr *)&sin, 0), 0);
  assert_int_equal(uv_listen((uv_stream_t *)&mute, 4, on_mute_connection), 0);
  assert_int_equal(
      uv_tcp_getsockname(&mute, (struct sockaddr *)&fx->addr, &len), 0);
  {
    mmp__boot_client_cb_t cb = {&cl, cl_event, cl_lost};
    memset(&cl, 0, sizeof(cl));
    assert_int_equal(
        mmp__boot_client_start(&fx->loop, (struct sockaddr *)&fx->addr, fx->key,
                               0, 1, 100, &cb, cl_started, &cl, NULL, &cl.c),
        0);
  }
  RUN_UNTIL(fx, cl.started && cl.lost);
  assert_int_equal(cl.start_status, MMP_ETIMEDOUT);
  cl_close(fx, &cl);
  mute.data = &mute_closed;
  uv_close((uv_handle_t *)&mute, on_mute_close);
  RUN_UNTIL(fx, mute_closed);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_boot_wire_round_trip),
      cmocka_unit_test(test_boot_wire_rejects_bad_headers),
      cmocka_unit_test(test_boot_wire_reader_catches_truncation),
      cmocka_unit_test_setup_teardown(test_boot_sealed_job_put_getall_get_fence,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_boot_sealed_server_refuses_clear_bytes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_job_put_getall_get_fence, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_boot_wrong_key_is_rejected, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_boot_replayed_handshake_is_rejected,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_server_without_key_is_refused,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_duplicate_rank_is_rejected,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_boot_garbage_is_closed_others_unharmed, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_boot_unauthenticated_connections_are_capped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_deadline_holds_under_a_flood,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_lost_rank_fails_waiters, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_boot_suspect_marks_rank_lost, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          test_boot_joined_rank_sending_garbage_is_lost, setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_server_stop_drops_clients,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_client_close_while_connecting,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_abort_and_events, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_boot_close_fails_pending_requests,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_client_survives_bad_server,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_boot_connect_refused_and_timeout,
                                      setup, teardown),
  };

  /* The server's warnings about the garbage are expected; keep them quiet. */
  mmp__log_level = MMP__LOG_ERROR;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
