/* SPDX-License-Identifier: MIT */
/*
 * The multicast broadcast (MMP_BCAST_MULTICAST) over loopback multicast,
 * where every rank of the host receives what the others send: every size
 * class around the datagram's payload, every root, both modes, several in
 * flight; forged, foreign and replayed datagrams sent to the group are
 * rejected and counted while broadcasts stay correct. With MINIMP_MCAST=off
 * (a second registration) the algorithm is MMP_ENOTSUP on every rank and
 * AUTO still works.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "mr_common.h"
#include "runtime/internal.h"

static int mcast_off(void) {
  const char *s = getenv("MINIMP_MCAST");
  return s != NULL && strcmp(s, "off") == 0;
}

static size_t payload(void) {
  mmp__mcast_stats_t st;

  assert_int_equal(mmp__mcast_stats(&st), 0);
  return st.udp.payload;
}

static void check(int root, size_t n, unsigned mode, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  uint8_t *buf = malloc(n + 1), *want = malloc(n + 1);
  int rc;

  assert_non_null(buf);
  assert_non_null(want);
  mr_fill(want, n, seed);
  if (mr_rank() == root)
    memcpy(buf, want, n);
  else
    memset(buf, 0x5a, n);
  o.algorithm = MMP_BCAST_MULTICAST;
  o.mode = mode;
  rc = mmp_bcast_ex(buf, n, root, w, &o);
  if (rc != 0 || memcmp(buf, want, n) != 0) {
    size_t i = 0;
    while (i < n && buf[i] == want[i])
      i++;
    fail_msg("multicast root %d n %zu mode %u: rc %s, first bad byte %zu", root,
             n, mode, mmp_err_name(rc), i);
  }
  free(buf);
  free(want);
}

/* The first use detects availability on every rank alike. */
static void test_mcast_detected(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  uint8_t c = (uint8_t)mr_rank();
  int rc;
  (void)state;

  o.algorithm = MMP_BCAST_MULTICAST;
  rc = mmp_bcast_ex(&c, 1, 0, w, &o);
  if (mr_size() == 1) { /* nobody to send to: nothing to detect */
    assert_int_equal(rc, 0);
    return;
  }
  if (mcast_off()) {
    assert_int_equal(rc, MMP_ENOTSUP);
    /* Asked again: the same answer, and AUTO still works. */
    assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_ENOTSUP);
    {
      uint8_t b[1000], want[1000];
      mr_fill(want, sizeof(want), 7);
      if (mr_rank() == 0)
        memcpy(b, want, sizeof(b));
      else
        memset(b, 0, sizeof(b));
      assert_int_equal(mmp_bcast(b, sizeof(b), 0, w), 0);
      assert_memory_equal(b, want, sizeof(b));
    }
    return;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(c, 0);
  assert_true(payload() >= 64);
}

static void test_mcast_sizes_every_root(void **state) {
  size_t pl, sizes[10];
  int p = mr_size(), root, k, nsizes;
  (void)state;

  if (mcast_off() || p == 1)
    skip();
  pl = payload();
  sizes[0] = 0;
  sizes[1] = 1;
  sizes[2] = pl - 1;
  sizes[3] = pl;
  sizes[4] = pl + 1;
  sizes[5] = 2 * pl - 1;
  sizes[6] = 2 * pl;
  sizes[7] = 2 * pl + 1;
  sizes[8] = 100 * pl + 7;
  sizes[9] = (1u << 20) + 3;
  nsizes = 10;
  for (root = 0; root < p; root++)
    for (k = 0; k < nsizes; k++) {
      /* The largest once per mode, at two roots: it is the slowest. */
      if (k == 9 && root != 0 && root != p - 1)
        continue;
      check(root, sizes[k], MMP_SEND_EAGER, (uint64_t)(root * 100 + k));
      check(root, sizes[k], MMP_SEND_RNDV, (uint64_t)(root * 100 + k + 50));
    }
}

static void test_mcast_several_in_flight(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), i;
  enum { K = 4, N = 30001 };
  mmp_request_t *q[K];
  uint8_t *b[K], want[N];
  (void)state;

  if (mcast_off() || p == 1)
    skip();
  for (i = 0; i < K; i++) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    int root = (i * 3) % p;
    o.algorithm = MMP_BCAST_MULTICAST;
    o.mode = i % 2 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
    b[i] = malloc(N);
    assert_non_null(b[i]);
    mr_fill(b[i], N, 900 + (uint64_t)i);
    if (mr_rank() != root)
      memset(b[i], 0, N);
    assert_int_equal(mmp_ibcast(b[i], N, root, w, &o, &q[i]), 0);
  }
  for (i = K - 1; i >= 0; i--)
    assert_int_equal(mmp_wait(&q[i], MMP_STATUS_IGNORE), 0);
  for (i = 0; i < K; i++) {
    mr_fill(want, N, 900 + (uint64_t)i);
    assert_memory_equal(b[i], want, N);
    free(b[i]);
  }
}

/* Sends one datagram to the job's group from a socket of its own. */
static void send_raw(const char *group, const uint8_t *d, size_t n) {
  struct sockaddr_in to;
  struct in_addr lo;
  char host[32];
  const char *colon = strchr(group, ':');
  int fd = socket(AF_INET, SOCK_DGRAM, 0);

  assert_true(fd >= 0 && colon != NULL);
  memcpy(host, group, (size_t)(colon - group));
  host[colon - group] = '\0';
  memset(&to, 0, sizeof(to));
  to.sin_family = AF_INET;
  to.sin_port = htons((uint16_t)atoi(colon + 1));
  assert_int_equal(inet_pton(AF_INET, host, &to.sin_addr), 1);
  lo.s_addr = htonl(INADDR_LOOPBACK);
  (void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof(lo));
  assert_true(sendto(fd, d, n, 0, (struct sockaddr *)&to, sizeof(to)) ==
              (ssize_t)n);
  close(fd);
}

/* Forged, foreign and replayed datagrams: counted, never delivered. */
static void test_mcast_rejects_forgeries(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  uint8_t key[MMP__JOB_KEY_LEN], other[MMP__JOB_KEY_LEN], d[2048];
  uint8_t junk[100];
  mmp__dgram_keys_t k, ko;
  mmp__dgram_hdr_t h;
  mmp__mcast_stats_t before, after;
  int i, p = mr_size();
  uint32_t old;
  (void)state;

  if (mcast_off() || p == 1)
    skip();
  /* A multicast broadcast every rank finishes: replaying it later is
   * stale everywhere. */
  check(0, 100, MMP_SEND_RNDV, 3999);
  old = w->coll_seq - 1;
  assert_int_equal(mmp__mcast_stats(&before), 0);
  /* Every rank has its `before` when the forgeries go out. */
  assert_int_equal(mmp_barrier(w), 0);
  assert_int_equal(mmp__debug_job_key(key), 0);
  mmp__auth_dgram_keys(key, &k);
  memcpy(other, key, sizeof(other));
  other[0] ^= 1;
  mmp__auth_dgram_keys(other, &ko);
  memset(junk, 0xee, sizeof(junk));
  memset(&h, 0, sizeof(h));
  h.kind = MMP__DG_DATA;
  h.ctx = w->ctx + 1;
  h.total = sizeof(junk);
  h.src = 0; /* rank 0 sends them; it drops its own unheard */
  if (mr_rank() == 0) {
    /* Another job's key and id. */
    h.seq = w->coll_seq + 2;
    mmp__dgram_encode(&ko, ko.job_id, &h, junk, sizeof(junk), d);
    send_raw(before.group, d, MMP__DGRAM_HDR + sizeof(junk));
    /* Our job's id, a MAC made with another key. */
    mmp__dgram_encode(&ko, k.job_id, &h, junk, sizeof(junk), d);
    send_raw(before.group, d, MMP__DGRAM_HDR + sizeof(junk));
    /* Authentic, flipped after the MAC. */
    mmp__dgram_encode(&k, k.job_id, &h, junk, sizeof(junk), d);
    d[MMP__DGRAM_HDR + 3] ^= 0x40;
    send_raw(before.group, d, MMP__DGRAM_HDR + sizeof(junk));
    /* Authentic, of a broadcast every rank finished: a replay. */
    h.seq = old;
    mmp__dgram_encode(&k, k.job_id, &h, junk, sizeof(junk), d);
    send_raw(before.group, d, MMP__DGRAM_HDR + sizeof(junk));
    /* Too short to hold a header. */
    send_raw(before.group, junk, 20);
  }
  /* The next broadcasts are intact whatever arrived meanwhile. */
  for (i = 0; i < 3; i++)
    check(i % p, sizeof(junk), MMP_SEND_EAGER, 4000 + (uint64_t)i);
  /* Loopback delivers at once; allow the receiving loop a moment. */
  for (i = 0; i < 200; i++) {
    assert_int_equal(mmp__mcast_stats(&after), 0);
    if (after.udp.foreign > before.udp.foreign &&
        after.udp.bad_mac >= before.udp.bad_mac + 2 &&
        after.udp.malformed > before.udp.malformed &&
        after.stale > before.stale)
      break;
    usleep(10000);
  }
  assert_true(after.udp.foreign >= before.udp.foreign + 1);
  assert_true(after.udp.bad_mac >= before.udp.bad_mac + 2);
  assert_true(after.udp.malformed >= before.udp.malformed + 1);
  if (mr_rank() != 0) /* a rank drops its own datagrams unheard */
    assert_true(after.stale >= before.stale + 1);
  assert_int_equal(mmp_barrier(w), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mcast_detected),
      cmocka_unit_test(test_mcast_sizes_every_root),
      cmocka_unit_test(test_mcast_several_in_flight),
      cmocka_unit_test(test_mcast_rejects_forgeries),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
