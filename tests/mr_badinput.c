/* SPDX-License-Identifier: MIT */
/*
 * Bad input against a running job (three ranks through minimprun). Rank 0
 * opens raw TCP connections to rank 1's listening port and sends garbage, a
 * proof made with a wrong job key, an oversized length, an unknown
 * version, the old version that sent the key, an impossible rank, a
 * duplicate of its own rank (with a valid proof), that handshake replayed
 * byte for byte, and nothing at all. Each must be closed by rank 1 and
 * counted as rejected; afterwards the job must still exchange data
 * correctly between every pair.
 *
 * The job runs with MINIMP_HANDSHAKE_TIMEOUT_MS=500 (set by meson).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"
#include "hs_util.h"
#include "transport/auth.h"

enum { N_ATTACKS = 9 };

/* The dialer's handshake frames (HELLO, PROOF) of attack 5, replayed by
 * attack 7. */
static uint8_t
    recorded[2 * MMP__FRAME_HDR_SIZE + MMP__GREET_LEN + MMP__MAC_LEN];

static int open_to_rank1(void) {
  struct sockaddr_storage ss;
  char addr[128];
  int fd;

  assert_int_equal(mmp__debug_listen_addr(1, addr, sizeof(addr)), 0);
  assert_int_equal(mmp__addr_parse(addr, &ss), 0);
  fd = socket(ss.ss_family, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(connect(fd, (struct sockaddr *)&ss,
                           ss.ss_family == AF_INET
                               ? sizeof(struct sockaddr_in)
                               : sizeof(struct sockaddr_in6)),
                   0);
  return fd;
}

/* The peer must close the connection within `ms`: read returns EOF (or a
 * reset), after draining whatever it may have answered. */
static void expect_closed(int fd, int ms) {
  double t0 = mmp_wtime();
  char buf[256];

  for (;;) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int left = ms - (int)((mmp_wtime() - t0) * 1000);
    ssize_t n;
    assert_true(left > 0);
    if (poll(&pfd, 1, left) <= 0)
      continue;
    n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
      break;
    assert_true(n > 0);
  }
  close(fd);
}

static void send_all(int fd, const void *buf, size_t n) {
  assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* A HELLO from `rank` to rank 1 with a fresh nonce. */
static size_t hello(uint8_t *out, uint32_t rank, uint64_t len,
                    uint8_t version) {
  uint8_t g[MMP__GREET_LEN];

  hs_greeting(g, rank, (uint32_t)mr_size(), 1, 0);
  return hs_frame(out, MMP__F_HELLO, 0, rank, len, version, g, sizeof(g));
}

static void recv_all(int fd, uint8_t *p, size_t n) {
  size_t got = 0;

  while (got < n) {
    ssize_t k = recv(fd, p + got, n - got, 0);
    assert_true(k > 0);
    got += (size_t)k;
  }
}

/* A whole handshake as `rank` with `key`; its bytes go to `rec` if not
 * NULL. */
static void prove(int fd, uint32_t rank, const uint8_t *key, uint8_t *rec) {
  uint8_t msg[256], in[MMP__FRAME_HDR_SIZE + MMP__GREET_LEN];
  uint8_t mac[MMP__MAC_LEN];
  size_t n = hello(msg, rank, MMP__GREET_LEN, MMP__FRAME_VERSION);

  send_all(fd, msg, n);
  recv_all(fd, in, sizeof(in));
  assert_int_equal(in[5], MMP__F_CHALLENGE);
  hs_proof(mac, key, msg + MMP__FRAME_HDR_SIZE, in + MMP__FRAME_HDR_SIZE);
  n += hs_frame(msg + n, MMP__F_PROOF, 1, rank, MMP__MAC_LEN,
                MMP__FRAME_VERSION, mac, sizeof(mac));
  send_all(fd, msg + MMP__FRAME_HDR_SIZE + MMP__GREET_LEN,
           n - MMP__FRAME_HDR_SIZE - MMP__GREET_LEN);
  if (rec != NULL)
    memcpy(rec, msg, n);
}

static void attack(int which) {
  uint8_t key[MMP__JOB_KEY_LEN], bad[MMP__JOB_KEY_LEN];
  uint8_t msg[256];
  int fd = open_to_rank1(), i;

  assert_int_equal(mmp__debug_job_key(key), 0);
  memcpy(bad, key, sizeof(bad));
  bad[3] ^= 0x40;
  switch (which) {
  case 0: /* garbage */
    for (i = 0; i < 112; i++)
      msg[i] = (uint8_t)(i * 37 + 11);
    send_all(fd, msg, 112);
    break;
  case 1: /* a proof made with a wrong job key */
    prove(fd, 2, bad, NULL);
    break;
  case 2: /* oversized length: rejected before any allocation */
    send_all(fd, msg, hello(msg, 2, 1ull << 40, MMP__FRAME_VERSION));
    break;
  case 3: /* unknown protocol version */
    send_all(fd, msg, hello(msg, 2, MMP__GREET_LEN, MMP__FRAME_VERSION + 7));
    break;
  case 4: /* rank out of range */
    send_all(fd, msg, hello(msg, 99, MMP__GREET_LEN, MMP__FRAME_VERSION));
    break;
  case 5: /* duplicate with a valid proof: rank 0 is already connected to
             rank 1 (over TCP, or through shared memory, which it must keep
             using) */
    prove(fd, 0, key, recorded);
    break;
  case 6: /* silence: the handshake timer must fire */
    break;
  case 7: /* attack 5's handshake replayed: the challenge is new, so the
             proof fails before the duplicate is even looked at */
    send_all(fd, recorded, sizeof(recorded));
    break;
  case 8: /* the old protocol, which carried the key itself */
    send_all(fd, msg, hello(msg, 2, 32, 1));
    break;
  }
  expect_closed(fd, 3000);
}

static void exchange_all_pairs(int tag) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size(), j;
  size_t n = 150000; /* rendezvous-sized */
  uint8_t *out = malloc(n), *in = malloc(n * (size_t)p), *want = malloc(n);
  mmp_request_t **q = calloc(2 * (size_t)p, sizeof(*q));
  int nq = 0;

  mr_fill(out, n, (uint64_t)r * 31 + (uint64_t)tag);
  for (j = 0; j < p; j++) {
    if (j == r)
      continue;
    assert_int_equal(mmp_irecv(in + (size_t)j * n, n, j, tag, w, &q[nq++]), 0);
    assert_int_equal(mmp_isend(out, n, j, tag, w, &q[nq++]), 0);
  }
  assert_int_equal(mmp_waitall((size_t)nq, q, NULL), 0);
  for (j = 0; j < p; j++) {
    if (j == r)
      continue;
    mr_fill(want, n, (uint64_t)j * 31 + (uint64_t)tag);
    assert_memory_equal(in + (size_t)j * n, want, n);
  }
  free(out);
  free(in);
  free(want);
  free(q);
}

static void test_bad_connections_are_rejected(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int i;
  (void)state;

  assert_true(mr_size() >= 3);
  /* Make sure 0 and 1 are connected, so that case 5 is a duplicate. */
  exchange_all_pairs(1);
  if (mr_rank() == 0) {
    for (i = 0; i < N_ATTACKS; i++)
      attack(i);
    assert_int_equal(mmp_send(NULL, 0, 1, 2, w), 0);
  } else if (mr_rank() == 1) {
    mmp__tp_stats_t st;
    assert_int_equal(mmp_recv(NULL, 0, 0, 2, w, NULL), 0);
    assert_int_equal(mmp__debug_tp_stats(&st), 0);
    assert_int_equal(st.rejected, N_ATTACKS);
    assert_int_equal(st.dropped, 0);
  }
  assert_int_equal(mr_barrier(), 0);
}

static void test_job_still_works_afterwards(void **state) {
  (void)state;
  exchange_all_pairs(3);
  exchange_all_pairs(4);
  assert_int_equal(mr_barrier(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_connections_are_rejected),
      cmocka_unit_test(test_job_still_works_afterwards),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
