/* SPDX-License-Identifier: MIT */
/*
 * Matching semantics in one process (a singleton job talking to itself):
 * FIFO order, tag selection, wildcards, truncation, zero-length messages,
 * probe, the request calls, the per-call protocol flags and
 * MINIMP_EAGER_LIMIT, plus argument checking and the init life cycle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"
#include "runtime/internal.h"

static int group_setup(void **state) {
  (void)state;
  /* A small eager limit makes the AUTO switch observable. */
  setenv("MINIMP_EAGER_LIMIT", "1k", 1);
  return mmp_init(NULL, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  unsetenv("MINIMP_EAGER_LIMIT");
  return mmp_finalize() == 0 ? 0 : -1;
}

static void test_match_fifo_same_tag(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int i, v;
  (void)state;

  for (i = 0; i < 50; i++)
    assert_int_equal(mmp_send(&i, sizeof(i), 0, 5, w), 0);
  for (i = 0; i < 50; i++) {
    assert_int_equal(mmp_recv(&v, sizeof(v), 0, 5, w, MMP_STATUS_IGNORE), 0);
    assert_int_equal(v, i);
  }
}

static void test_match_tag_selects(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_status_t st;
  char c;
  (void)state;

  assert_int_equal(mmp_send("a", 1, 0, 1, w), 0);
  assert_int_equal(mmp_send("b", 1, 0, 2, w), 0);
  assert_int_equal(mmp_recv(&c, 1, 0, 2, w, &st), 0);
  assert_int_equal(c, 'b');
  assert_int_equal(st.tag, 2);
  assert_int_equal(mmp_recv(&c, 1, 0, 1, w, &st), 0);
  assert_int_equal(c, 'a');
  assert_int_equal(st.tag, 1);
}

static void test_match_wildcards_take_oldest(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_status_t st;
  int v;
  (void)state;

  v = 30;
  mmp_send(&v, sizeof(v), 0, 3, w);
  v = 40;
  mmp_send(&v, sizeof(v), 0, 4, w);
  assert_int_equal(mmp_recv(&v, sizeof(v), MMP_ANY_SOURCE, MMP_ANY_TAG, w, &st),
                   0);
  assert_int_equal(v, 30);
  assert_int_equal(st.tag, 3);
  assert_int_equal(st.source, 0);
  assert_int_equal(st.bytes, sizeof(v));
  assert_int_equal(mmp_recv(&v, sizeof(v), 0, MMP_ANY_TAG, w, &st), 0);
  assert_int_equal(v, 40);
  assert_int_equal(st.tag, 4);
}

static void test_match_posted_receive_first(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *r;
  mmp_status_t st;
  char buf[8] = {0};
  int flag = 1;
  (void)state;

  assert_int_equal(mmp_irecv(buf, sizeof(buf), MMP_ANY_SOURCE, 7, w, &r), 0);
  assert_int_equal(mmp_test(&r, &flag, &st), 0);
  assert_int_equal(flag, 0);
  assert_non_null(r);
  assert_int_equal(mmp_send("hello", 6, 0, 7, w), 0);
  assert_int_equal(mmp_wait(&r, &st), 0);
  assert_null(r);
  assert_string_equal(buf, "hello");
  assert_int_equal(st.bytes, 6);
  assert_int_equal(st.source, 0);
}

static void test_match_truncation(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  unsigned char src[4096], dst[10];
  mmp_status_t st;
  int i;
  (void)state;

  for (i = 0; i < 4096; i++)
    src[i] = (unsigned char)i;
  /* Eager size. */
  assert_int_equal(mmp_send(src, 100, 0, 11, w), 0);
  assert_int_equal(mmp_recv(dst, sizeof(dst), 0, 11, w, &st), MMP_ETRUNC);
  assert_int_equal(st.error, MMP_ETRUNC);
  assert_int_equal(st.bytes, sizeof(dst));
  assert_memory_equal(dst, src, sizeof(dst));
  /* Rendezvous size (above the 1 KiB limit set for this group). */
  {
    mmp_request_t *s;
    assert_int_equal(mmp_isend(src, sizeof(src), 0, 12, w, &s), 0);
    memset(dst, 0, sizeof(dst));
    assert_int_equal(mmp_recv(dst, sizeof(dst), 0, 12, w, &st), MMP_ETRUNC);
    assert_int_equal(st.bytes, sizeof(dst));
    assert_memory_equal(dst, src, sizeof(dst));
    assert_int_equal(mmp_wait(&s, NULL), 0);
  }
}

static void test_match_zero_length(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *s;
  mmp_status_t st;
  (void)state;

  assert_int_equal(mmp_send(NULL, 0, 0, 13, w), 0);
  assert_int_equal(mmp_isend_ex(NULL, 0, 0, 13, w, MMP_SEND_RNDV, &s), 0);
  st.bytes = 99;
  assert_int_equal(mmp_recv(NULL, 0, 0, 13, w, &st), 0);
  assert_int_equal(st.bytes, 0);
  assert_int_equal(st.tag, 13);
  assert_int_equal(mmp_recv(NULL, 0, 0, 13, w, &st), 0);
  assert_int_equal(st.bytes, 0);
  assert_int_equal(mmp_wait(&s, &st), 0);
}

static void test_match_rndv_waits_eager_does_not(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  char big[2048], out[2048];
  mmp_request_t *s, *r;
  int flag, i;
  (void)state;

  memset(big, 'x', sizeof(big));
  /* Forced rendezvous: incomplete until the receive is posted. */
  assert_int_equal(mmp_isend_ex("r", 1, 0, 14, w, MMP_SEND_RNDV, &s), 0);
  for (i = 0; i < 5; i++) {
    assert_int_equal(mmp_test(&s, &flag, NULL), 0);
    assert_int_equal(flag, 0);
    usleep(2000);
  }
  assert_int_equal(mmp_irecv(out, 1, 0, 14, w, &r), 0);
  assert_int_equal(mmp_wait(&s, NULL), 0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_int_equal(out[0], 'r');
  /* AUTO above MINIMP_EAGER_LIMIT is rendezvous too. */
  assert_int_equal(mmp_isend(big, sizeof(big), 0, 15, w, &s), 0);
  assert_int_equal(mmp_test(&s, &flag, NULL), 0);
  assert_int_equal(flag, 0);
  assert_int_equal(mmp_recv(out, sizeof(out), 0, 15, w, NULL), 0);
  assert_int_equal(mmp_wait(&s, NULL), 0);
  assert_memory_equal(out, big, sizeof(big));
  /* Forced eager completes with nobody receiving, even when large. */
  assert_int_equal(mmp_isend_ex(big, sizeof(big), 0, 16, w, MMP_SEND_EAGER, &s),
                   0);
  assert_int_equal(mmp_test(&s, &flag, NULL), 0);
  assert_int_equal(flag, 1);
  assert_null(s);
  memset(big, 'y', sizeof(big)); /* the library copied it */
  assert_int_equal(mmp_recv(out, sizeof(out), 0, 16, w, NULL), 0);
  assert_int_equal(out[0], 'x');
  assert_int_equal(out[sizeof(out) - 1], 'x');
}

static void test_match_probe(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_status_t st;
  char buf[42];
  int flag = -1;
  (void)state;

  assert_int_equal(mmp_iprobe(0, 9, w, &flag, &st), 0);
  assert_int_equal(flag, 0);
  memset(buf, 3, sizeof(buf));
  assert_int_equal(mmp_send(buf, sizeof(buf), 0, 9, w), 0);
  assert_int_equal(mmp_iprobe(0, 8, w, &flag, &st), 0);
  assert_int_equal(flag, 0);
  assert_int_equal(mmp_iprobe(MMP_ANY_SOURCE, MMP_ANY_TAG, w, &flag, &st), 0);
  assert_int_equal(flag, 1);
  assert_int_equal(st.tag, 9);
  assert_int_equal(st.bytes, 42);
  memset(&st, 0, sizeof(st));
  assert_int_equal(mmp_probe(0, 9, w, &st), 0);
  assert_int_equal(st.bytes, 42);
  assert_int_equal(st.source, 0);
  assert_int_equal(mmp_recv(buf, sizeof(buf), 0, 9, w, NULL), 0);
  assert_int_equal(mmp_iprobe(0, 9, w, &flag, &st), 0);
  assert_int_equal(flag, 0);
}

static void test_match_waitany_waitall(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *r[3];
  mmp_status_t st[3];
  int v[3] = {0, 0, 0}, x;
  size_t idx = 99;
  (void)state;

  assert_int_equal(mmp_irecv(&v[0], sizeof(int), 0, 20, w, &r[0]), 0);
  assert_int_equal(mmp_irecv(&v[1], sizeof(int), 0, 21, w, &r[1]), 0);
  assert_int_equal(mmp_irecv(&v[2], sizeof(int), 0, 22, w, &r[2]), 0);
  x = 21;
  mmp_send(&x, sizeof(x), 0, 21, w);
  assert_int_equal(mmp_waitany(3, r, &idx, &st[0]), 0);
  assert_int_equal(idx, 1);
  assert_null(r[1]);
  assert_int_equal(v[1], 21);
  x = 20;
  mmp_send(&x, sizeof(x), 0, 20, w);
  x = 22;
  mmp_send(&x, sizeof(x), 0, 22, w);
  assert_int_equal(mmp_waitall(3, r, st), 0);
  assert_int_equal(v[0], 20);
  assert_int_equal(v[2], 22);
  assert_int_equal(st[2].tag, 22);
  assert_int_equal(st[1].source, MMP_ANY_SOURCE); /* NULL entry: empty */
  /* All NULL: waitany returns at once with no index. */
  assert_int_equal(mmp_waitany(3, r, &idx, NULL), 0);
  assert_int_equal(idx, (size_t)-1);
}

static void test_args_rejected(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *r = (mmp_request_t *)w; /* must be reset to NULL */
  int v = 0, flag;
  (void)state;

  assert_int_equal(mmp_send(&v, 4, -1, 0, w), MMP_ERANK);
  assert_int_equal(mmp_send(&v, 4, 1, 0, w), MMP_ERANK);
  assert_int_equal(mmp_send(&v, 4, 0, -5, w), MMP_ETAG);
  assert_int_equal(mmp_send(&v, 4, 0, MMP_ANY_TAG, w), MMP_ETAG);
  assert_int_equal(mmp_send(&v, 4, 0, 0, NULL), MMP_ECOMM);
  assert_int_equal(mmp_send(NULL, 4, 0, 0, w), MMP_EINVAL);
  assert_int_equal(mmp_send_ex(&v, 4, 0, 0, w, 7), MMP_EINVAL);
  assert_int_equal(mmp_isend(&v, 4, 0, 0, w, NULL), MMP_EINVAL);
  assert_int_equal(mmp_isend(&v, 4, 5, 0, w, &r), MMP_ERANK);
  assert_null(r);
  assert_int_equal(mmp_recv(&v, 4, 3, 0, w, NULL), MMP_ERANK);
  assert_int_equal(mmp_recv(&v, 4, 0, -7, w, NULL), MMP_ETAG);
  assert_int_equal(mmp_irecv(NULL, 4, 0, 0, w, &r), MMP_EINVAL);
  assert_int_equal(mmp_wait(NULL, NULL), MMP_EINVAL);
  assert_int_equal(mmp_test(&r, NULL, NULL), MMP_EINVAL);
  assert_int_equal(mmp_iprobe(0, 0, w, NULL, NULL), MMP_EINVAL);
  assert_int_equal(mmp_waitany(1, &r, NULL, NULL), MMP_EINVAL);
  r = NULL;
  assert_int_equal(mmp_test(&r, &flag, NULL), 0);
  assert_int_equal(flag, 1);
  assert_int_equal(mmp_comm_rank(NULL), MMP_ECOMM);
  assert_int_equal(mmp_comm_size(NULL), MMP_ECOMM);
  assert_int_equal(mmp_comm_rank(w), 0);
  assert_int_equal(mmp_comm_size(w), 1);
}

static void test_wtime_is_monotonic_and_fine(void **state) {
  double t0 = mmp_wtime(), prev = t0, t;
  int distinct = 0;
  (void)state;

  /* Seconds, never going back, with sub-microsecond steps. */
  for (int i = 0; i < 1000; i++) {
    t = mmp_wtime();
    assert_true(t >= prev);
    distinct += t > prev;
    prev = t;
  }
  assert_true(distinct > 100);
  usleep(20000);
  t = mmp_wtime() - t0;
  assert_true(t >= 0.019 && t < 1.0);
}

/* ---- Life cycle and environment (no group setup) ------------------------ */

static void test_calls_before_init_fail(void **state) {
  int v = 0;
  (void)state;

  assert_int_equal(mmp_initialized(), 0);
  assert_null(mmp_comm_world());
  assert_int_equal(mmp_finalize(), MMP_ENOTINIT);
  /* No communicator exists before init; the engine check comes first. */
  assert_int_equal(mmp_send(&v, 4, 0, 0, NULL), MMP_ENOTINIT);
  assert_int_equal(mmp_recv(&v, 4, 0, 0, NULL, NULL), MMP_ENOTINIT);
  assert_int_equal(mmp_comm_set_timeout(NULL, 5), MMP_ENOTINIT);
  assert_int_equal(mmp_comm_get_timeout(NULL, NULL), MMP_ENOTINIT);
}

static void test_init_twice_and_reinit(void **state) {
  (void)state;

  assert_int_equal(mmp_init(NULL, NULL), 0);
  assert_int_equal(mmp_initialized(), 1);
  assert_int_equal(mmp_init(NULL, NULL), MMP_EALREADY);
  assert_int_equal(mmp_finalize(), 0);
  /* A second life works. */
  assert_int_equal(mmp_init(NULL, NULL), 0);
  assert_int_equal(mmp_comm_size(mmp_comm_world()), 1);
  assert_int_equal(mmp_finalize(), 0);
}

/* One rank: the communicator's timeout ends a receive and a probe that
 * nothing matches, a dup starts with it, and a message sent afterwards is
 * still received. */
static void test_comm_timeout_one_rank(void **state) {
  mmp_request_t *r;
  mmp_comm_t *w, *d;
  unsigned ms = 0;
  int v = 0, got = -1;
  double t0;
  (void)state;

  assert_int_equal(mmp_init(NULL, NULL), 0);
  w = mmp_comm_world();
  assert_int_equal(mmp_comm_set_timeout(w, 100), 0);
  t0 = mmp_wtime();
  assert_int_equal(mmp_recv(&got, sizeof(got), 0, 1, w, NULL), MMP_ETIMEDOUT);
  assert_true(mmp_wtime() - t0 >= 0.09 && mmp_wtime() - t0 < 1.0);
  t0 = mmp_wtime();
  assert_int_equal(mmp_probe(0, 1, w, NULL), MMP_ETIMEDOUT);
  assert_true(mmp_wtime() - t0 >= 0.09 && mmp_wtime() - t0 < 1.0);
  assert_int_equal(mmp_comm_dup(w, &d), 0);
  assert_int_equal(mmp_comm_get_timeout(d, &ms), 0);
  assert_int_equal(ms, 100);
  assert_int_equal(mmp_comm_free(&d), 0);
  v = 42;
  assert_int_equal(mmp_isend(&v, sizeof(v), 0, 1, w, &r), 0);
  assert_int_equal(mmp_recv(&got, sizeof(got), 0, 1, w, NULL), 0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_int_equal(got, 42);
  assert_int_equal(mmp_finalize(), 0);
}

static void expect_env_error(const char *name, const char *value) {
  setenv(name, value, 1);
  assert_int_equal(mmp_init(NULL, NULL), MMP_EENV);
  assert_int_equal(mmp_initialized(), 0);
  unsetenv(name);
}

static void test_bad_environment_is_reported(void **state) {
  (void)state;

  expect_env_error("MINIMP_EAGER_LIMIT", "banana");
  expect_env_error("MINIMP_EAGER_LIMIT", "2g");
  expect_env_error("MINIMP_SPIN_US", "-3");
  expect_env_error("MINIMP_SPIN_YIELD", "yes");
  expect_env_error("MINIMP_CONNECT", "sometimes");
  expect_env_error("MINIMP_ENCRYPT", "yes");
  expect_env_error("MINIMP_ENCRYPT", "2");
  expect_env_error("MINIMP_LOG", "loud");
  expect_env_error("MINIMP_RNDV_CHUNK", "1g"); /* above MINIMP_MAX_FRAME */
  /* An incomplete or inconsistent identity. */
  expect_env_error("MINIMP_RANK", "0");
  setenv("MINIMP_SIZE", "2", 1);
  setenv("MINIMP_BOOT_ADDR", "127.0.0.1:1", 1);
  setenv("MINIMP_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
  expect_env_error("MINIMP_RANK", "2");
  expect_env_error("MINIMP_RANK", "x");
  setenv("MINIMP_JOB_KEY", "0011", 1);
  expect_env_error("MINIMP_RANK", "1");
  setenv("MINIMP_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
  setenv("MINIMP_RANK", "1", 1);
  expect_env_error("MINIMP_BOOT_HOST", "yes");
  unsetenv("MINIMP_RANK");
  unsetenv("MINIMP_SIZE");
  unsetenv("MINIMP_BOOT_ADDR");
  unsetenv("MINIMP_JOB_KEY");
  /* Clean again: the singleton starts. */
  assert_int_equal(mmp_init(NULL, NULL), 0);
  assert_int_equal(mmp_finalize(), 0);
}

/* MINIMP_SHM and MINIMP_SHM_RING: the accepted values, and the rest
 * refused at init. */
static void test_shm_environment(void **state) {
  mmp__config_t c;
  (void)state;

  expect_env_error("MINIMP_SHM", "yes");
  expect_env_error("MINIMP_SHM", "ON");
  expect_env_error("MINIMP_SHM_RING", "3000"); /* not a power of two */
  expect_env_error("MINIMP_SHM_RING", "1k");   /* below 4k */
  expect_env_error("MINIMP_SHM_RING", "2g");   /* above 1g */
  memset(&c, 0, sizeof(c));
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.shm, MMP__SHM_ON);
  assert_int_equal(c.shm_ring, 0); /* automatic */
  setenv("MINIMP_SHM", "ring", 1);
  setenv("MINIMP_SHM_RING", "64k", 1);
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.shm, MMP__SHM_RING);
  assert_int_equal(c.shm_ring, 65536);
  setenv("MINIMP_SHM", "off", 1);
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.shm, MMP__SHM_OFF);
  unsetenv("MINIMP_SHM");
  unsetenv("MINIMP_SHM_RING");
}

/* MINIMP_MCAST_GROUP=`value` is the IPv6 group `addr` with prefix length
 * `bits`. */
static void expect_group6(const char *value, const char *addr, unsigned bits) {
  mmp__config_t c;
  uint8_t want[16];

  memset(&c, 0, sizeof(c));
  setenv("MINIMP_MCAST_GROUP", value, 1);
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(inet_pton(AF_INET6, addr, want), 1);
  assert_memory_equal(c.mcast_group6, want, sizeof(want));
  assert_int_equal(c.mcast_bits6, bits);
  assert_int_equal(c.mcast_family, AF_INET6);
}

/* MINIMP_MCAST*: the accepted values, and the rest refused at init. */
static void test_mcast_environment(void **state) {
  mmp__config_t c;
  (void)state;

  expect_env_error("MINIMP_MCAST", "yes");
  expect_env_error("MINIMP_MCAST_GROUP", "10.1.2.3"); /* not multicast */
  expect_env_error("MINIMP_MCAST_GROUP", "239.1.2.3/40");
  expect_env_error("MINIMP_MCAST_GROUP", "239.1.2");
  expect_env_error("MINIMP_MCAST_GROUP", "fd00::1");    /* not multicast */
  expect_env_error("MINIMP_MCAST_GROUP", "ff15::/129"); /* too long */
  expect_env_error("MINIMP_MCAST_GROUP", "ff15::/4");   /* too short */
  expect_env_error("MINIMP_MCAST_GROUP", "ff15:::1");   /* malformed */
  expect_env_error("MINIMP_MCAST_GROUP", "[ff15::1]");  /* no brackets */
  expect_env_error("MINIMP_MCAST_PORT", "70000");
  expect_env_error("MINIMP_MCAST_TIMEOUT_MS", "soon");
  expect_env_error("MINIMP_MCAST_SOCKBUF", "1k"); /* below 64k */
  memset(&c, 0, sizeof(c));
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.mcast, MMP__MCAST_AUTO);
  assert_int_equal(c.mcast_group, 0xef000000u); /* 239.0.0.0/8 */
  assert_int_equal(c.mcast_bits, 8);
  assert_int_equal(c.mcast_port, 0); /* derived from the key */
  /* Unset: the job's family decides; IPv6 jobs derive in ff15::/16. */
  assert_int_equal(c.mcast_family, 0);
  assert_int_equal(c.mcast_group6[0], 0xff);
  assert_int_equal(c.mcast_group6[1], 0x15);
  assert_int_equal(c.mcast_group6[15], 0);
  assert_int_equal(c.mcast_bits6, 16);
  setenv("MINIMP_MCAST", "off", 1);
  setenv("MINIMP_MCAST_GROUP", "239.192.0.0/14", 1);
  setenv("MINIMP_MCAST_PORT", "4321", 1);
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.mcast, MMP__MCAST_OFF);
  assert_int_equal(c.mcast_group, 0xefc00000u);
  assert_int_equal(c.mcast_bits, 14);
  assert_int_equal(c.mcast_port, 4321);
  setenv("MINIMP_MCAST_GROUP", "239.1.2.3", 1);
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.mcast_group, 0xef010203u);
  assert_int_equal(c.mcast_bits, 32);
  assert_int_equal(c.mcast_family, AF_INET);
  /* An IPv6 group, alone or as a range; its family is kept for the
   * channel to check against the job's. */
  expect_group6("ff15::1:2", "ff15::1:2", 128);
  expect_group6("ff18:0:0:0:0:0:abcd:0/112", "ff18::abcd:0", 112);
  unsetenv("MINIMP_MCAST");
  unsetenv("MINIMP_MCAST_GROUP");
  unsetenv("MINIMP_MCAST_PORT");
}

/* The collectives' variables are read with the rest, at init, under
 * the same rule: a malformed value is MMP_EENV naming the variable. */
static void test_bad_collective_environment_is_reported(void **state) {
  mmp__config_t c;
  (void)state;

  expect_env_error("MINIMP_BCAST_SYM_MIN", "-3");
  expect_env_error("MINIMP_BCAST_ARRIVAL_WINDOW_US", "soon");
  expect_env_error("MINIMP_NET_ALPHA_US", "fast");
  expect_env_error("MINIMP_NET_SHARED_CPUS", "yes");
  expect_env_error("MINIMP_NET_BURST_BYTES", "-1");
  expect_env_error("MINIMP_NET_GAMMA_NS", "0.2x");
  /* Links within a node only with the rest of a saved profile. */
  expect_env_error("MINIMP_NET_NODE_ALPHA_US", "3");
  /* Half a saved profile is no profile, and says so. */
  expect_env_error("MINIMP_NET_BETA_NS", "84");
  setenv("MINIMP_NET_ALPHA_US", "80", 1);
  setenv("MINIMP_NET_BETA_NS", "84", 1);
  setenv("MINIMP_BCAST_SYM_MIN", "64k", 1);
  setenv("MINIMP_NET_GAMMA_NS", "0.5", 1);
  memset(&c, 0, sizeof(c));
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.coll.net_profile, 1);
  assert_true(c.coll.net_gamma_ns == 0.5);
  assert_true(c.coll.net_node_alpha_us < 0 && c.coll.net_node_beta_ns < 0);
  assert_true(c.coll.net_alpha_us == 80 && c.coll.net_beta_ns == 84);
  assert_int_equal(c.coll.bcast_sym_min, 65536);
  assert_int_equal(c.coll.arrival_window_us, -1);
  unsetenv("MINIMP_NET_ALPHA_US");
  unsetenv("MINIMP_NET_BETA_NS");
  unsetenv("MINIMP_BCAST_SYM_MIN");
  unsetenv("MINIMP_NET_GAMMA_NS");
  memset(&c, 0, sizeof(c));
  assert_int_equal(mmp__config_tuning(&c), 0);
  assert_int_equal(c.coll.net_profile, 0);
  assert_true(c.coll.net_gamma_ns < 0);
  assert_int_equal(c.coll.bcast_sym_min, -1);
}

/* Loads the tuning variables as init does, then settles them for a
 * machine with (shared = 1) or without more ranks than CPUs. */
static mmp__config_t tuned(int shared) {
  mmp__config_t c;

  memset(&c, 0, sizeof(c));
  assert_int_equal(mmp__config_tuning(&c), 0);
  mmp__config_shared(&c, shared);
  return c;
}

static void test_waits_poll_and_yield_on_shared_cpus(void **state) {
  mmp__config_t c;
  (void)state;

  unsetenv("MINIMP_SPIN_US");
  unsetenv("MINIMP_SPIN_YIELD");
  c = tuned(0); /* a core per rank: a short spin, no yielding */
  assert_int_equal(c.spin_us, 50);
  assert_int_equal(c.spin_yield, 0);
  c = tuned(1); /* more ranks than CPUs: a longer spin that yields */
  assert_int_equal(c.spin_us, 1000);
  assert_int_equal(c.spin_yield, 1);
  /* The machine may turn out shared only once every rank has published
   * where it runs: settling again follows, automatic values only. */
  mmp__config_shared(&c, 0);
  assert_int_equal(c.spin_us, 50);
  assert_int_equal(c.spin_yield, 0);

  setenv("MINIMP_SPIN_YIELD", "0", 1); /* no yielding: no spinning either */
  c = tuned(1);
  assert_int_equal(c.spin_yield, 0);
  assert_int_equal(c.spin_us, 0);
  setenv("MINIMP_SPIN_US", "200", 1); /* the user's values stand */
  c = tuned(1);
  assert_int_equal(c.spin_us, 200);
  assert_int_equal(c.spin_yield, 0);
  setenv("MINIMP_SPIN_YIELD", "1", 1);
  c = tuned(0);
  assert_int_equal(c.spin_us, 200);
  assert_int_equal(c.spin_yield, 1);
  unsetenv("MINIMP_SPIN_US");
  unsetenv("MINIMP_SPIN_YIELD");
}

static void test_progress_checks_rarely_on_shared_cpus(void **state) {
  mmp__config_t c;
  (void)state;

  unsetenv("MINIMP_PROGRESS_CHECK_US");
  c = tuned(0);
  assert_int_equal(c.check_us, 4000);
  assert_int_equal(c.cpus_shared, 0);
  c = tuned(1); /* each check would preempt a rank */
  assert_int_equal(c.check_us, 64000);
  assert_int_equal(c.cpus_shared, 1);
  mmp__config_shared(&c, 0); /* settled again once the machine is known */
  assert_int_equal(c.check_us, 4000);
  setenv("MINIMP_PROGRESS_CHECK_US", "20000", 1);
  c = tuned(1);
  assert_int_equal(c.check_us, 20000);
  setenv("MINIMP_PROGRESS_CHECK_US", "50", 1); /* below the minimum */
  memset(&c, 0, sizeof(c));
  assert_int_equal(mmp__config_tuning(&c), MMP_EENV);
  unsetenv("MINIMP_PROGRESS_CHECK_US");
}

static void test_init_ex_rejects_bad_arguments(void **state) {
  const char *key = "00112233445566778899aabbccddeeff";
  (void)state;

  assert_int_equal(mmp_init_ex(0, 0, "127.0.0.1:1", key, NULL, 0), MMP_EINVAL);
  assert_int_equal(mmp_init_ex(2, 2, "127.0.0.1:1", key, NULL, 0), MMP_EINVAL);
  assert_int_equal(mmp_init_ex(0, 2, NULL, key, NULL, 0), MMP_EINVAL);
  assert_int_equal(mmp_init_ex(0, 2, "127.0.0.1:1", "zz", NULL, 0), MMP_EINVAL);
  assert_int_equal(mmp_init_ex(0, 2, "127.0.0.1:1", key, NULL, 0x80),
                   MMP_EINVAL);
  assert_int_equal(mmp_init_ex(0, 2, "not-an-address", key, NULL, 0),
                   MMP_EINVAL);
  assert_int_equal(mmp_initialized(), 0);
}

int main(void) {
  const struct CMUnitTest life[] = {
      cmocka_unit_test(test_calls_before_init_fail),
      cmocka_unit_test(test_init_twice_and_reinit),
      cmocka_unit_test(test_comm_timeout_one_rank),
      cmocka_unit_test(test_bad_environment_is_reported),
      cmocka_unit_test(test_shm_environment),
      cmocka_unit_test(test_mcast_environment),
      cmocka_unit_test(test_bad_collective_environment_is_reported),
      cmocka_unit_test(test_waits_poll_and_yield_on_shared_cpus),
      cmocka_unit_test(test_progress_checks_rarely_on_shared_cpus),
      cmocka_unit_test(test_init_ex_rejects_bad_arguments),
  };
  const struct CMUnitTest match[] = {
      cmocka_unit_test(test_match_fifo_same_tag),
      cmocka_unit_test(test_match_tag_selects),
      cmocka_unit_test(test_match_wildcards_take_oldest),
      cmocka_unit_test(test_match_posted_receive_first),
      cmocka_unit_test(test_match_truncation),
      cmocka_unit_test(test_match_zero_length),
      cmocka_unit_test(test_match_rndv_waits_eager_does_not),
      cmocka_unit_test(test_match_probe),
      cmocka_unit_test(test_match_waitany_waitall),
      cmocka_unit_test(test_args_rejected),
      cmocka_unit_test(test_wtime_is_monotonic_and_fine),
  };
  int rc = cmocka_run_group_tests_name("life", life, NULL, NULL);
  rc |=
      cmocka_run_group_tests_name("match", match, group_setup, group_teardown);
  return rc;
}
