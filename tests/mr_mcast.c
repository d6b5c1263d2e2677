/* SPDX-License-Identifier: MIT */
/*
 * The multicast broadcast (algorithm "multicast") over loopback multicast,
 * where every rank of the host receives what the others send: every size
 * class around the datagram's payload, every root, both modes, several in
 * flight; forged, foreign and replayed datagrams sent to the group are
 * rejected and counted while broadcasts stay correct. With MINIMP_MCAST=off
 * (a second registration) the algorithm is MMP_ENOTSUP on every rank and
 * AUTO still works. The multicast s-to-p (its "multicast") likewise: s =
 * 1, 2, p/2 and p sources, equal and unequal lengths, both modes,
 * blocking and not, with and without the lengths, byte for byte.
 *
 * The job's family decides the channel's: over IPv6 (test_mcast6 runs
 * this program so) the group is in ff15::/16 and a datagram gives up 48
 * bytes of IPv6 and UDP headers to the MTU, over IPv4 28. Where
 * MINIMP_MCAST_GROUP is of the other family, both multicast algorithms
 * fail with MMP_EINVAL on every rank, the misconfigured ranks log why,
 * and AUTO still works.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "mr_common.h"
#include "runtime/internal.h"
#include "transport/transport.h"

/* The job's addresses are IPv6 (the TCP path listens on one). */
static int job_v6(void) {
  return mmp__eng->listen_name[0] == '[';
}

/* MINIMP_MCAST_GROUP names a group of the other family. */
static int mcast_mismatch(void) {
  const char *s = getenv("MINIMP_MCAST_GROUP");
  return s != NULL && *s != '\0' && (strchr(s, ':') != NULL) != job_v6();
}

static int mcast_off(void) {
  const char *s = getenv("MINIMP_MCAST");
  return s != NULL && strcmp(s, "off") == 0;
}

/* Multicast cannot run: switched off or misconfigured. */
static int mcast_unused(void) {
  return mcast_off() || mcast_mismatch();
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
  o.algorithm = "multicast";
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

/* The channel took the job's family: its group, its header bytes, and a
 * payload of the MTU less those and our header. */
static void check_family(void) {
  mmp__mcast_stats_t st;
  const char *set = getenv("MINIMP_MCAST_GROUP");

  assert_int_equal(mmp__mcast_stats(&st), 0);
  if (job_v6()) {
    assert_int_equal(st.udp.ip_udp, 40 + 8);
    if (set == NULL || *set == '\0')
      assert_true(strncmp(st.group, "[ff15::", 7) == 0);
    else
      assert_true(st.group[0] == '[');
  } else {
    assert_int_equal(st.udp.ip_udp, 20 + 8);
    assert_true(st.group[0] != '[');
  }
  assert_int_equal(st.udp.payload, (st.udp.mtu < 9000 ? st.udp.mtu : 9000) -
                                       st.udp.ip_udp - MMP__DGRAM_HDR);
}

/* AUTO's broadcast of 1000 bytes from rank 0 arrives intact. */
static void auto_bcast_works(uint64_t seed) {
  uint8_t b[1000], want[1000];

  mr_fill(want, sizeof(want), seed);
  if (mr_rank() == 0)
    memcpy(b, want, sizeof(b));
  else
    memset(b, 0, sizeof(b));
  assert_int_equal(mmp_bcast(b, sizeof(b), 0, mmp_comm_world()), 0);
  assert_memory_equal(b, want, sizeof(b));
}

static char mismatch_line[512];

/* Keeps the line that names MINIMP_MCAST_GROUP; the others go on to
 * stderr. */
static void keep_line(int level, const char *line, void *arg) {
  (void)arg;
  if (strstr(line, "MINIMP_MCAST_GROUP") != NULL)
    snprintf(mismatch_line, sizeof(mismatch_line), "%s", line);
  else
    fprintf(stderr, "minimp %d: %s\n", level, line);
}

/* MINIMP_MCAST_GROUP of the other family: MMP_EINVAL from both
 * multicast algorithms on every rank, every time, with the reason
 * logged as an error; AUTO still works. */
static void family_mismatch(uint8_t *c) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp_s2p_opts_t so = MMP_S2P_OPTS_INIT;
  int p = mr_size(), i;
  uint8_t *out = malloc((size_t)p);

  assert_non_null(out);
  o.algorithm = "multicast";
  mismatch_line[0] = '\0';
  assert_int_equal(mmp_set_log_fn(keep_line, NULL), 0);
  assert_int_equal(mmp_bcast_ex(c, 1, 0, w, &o), MMP_EINVAL);
  assert_int_equal(mmp_set_log_fn(NULL, NULL), 0);
  assert_non_null(strstr(mismatch_line, job_v6() ? "is an IPv4 group, but this "
                                                   "job's addresses are IPv6"
                                                 : "is an IPv6 group, but this "
                                                   "job's addresses are IPv4"));
  assert_int_equal(mmp_bcast_ex(c, 1, 0, w, &o), MMP_EINVAL);
  so.algorithm = "multicast";
  assert_int_equal(mmp_bcast_s2p(c, 1, 1, out, (size_t)p, NULL, NULL, w, &so),
                   MMP_EINVAL);
  auto_bcast_works(11);
  so.algorithm = NULL;
  *c = (uint8_t)(mr_rank() + 1);
  assert_int_equal(mmp_bcast_s2p(c, 1, 1, out, (size_t)p, NULL, NULL, w, &so),
                   0);
  for (i = 0; i < p; i++)
    assert_int_equal(out[i], i + 1);
  free(out);
}

/* The first use detects availability on every rank alike. */
static void test_mcast_detected(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  uint8_t c = (uint8_t)mr_rank();
  int rc;
  (void)state;

  o.algorithm = "multicast";
  if (mcast_mismatch() && mr_size() > 1) {
    family_mismatch(&c);
    return;
  }
  rc = mmp_bcast_ex(&c, 1, 0, w, &o);
  if (mr_size() == 1) { /* nobody to send to: nothing to detect */
    assert_int_equal(rc, 0);
    return;
  }
  if (mcast_off()) {
    assert_int_equal(rc, MMP_ENOTSUP);
    /* Asked again: the same answer, and AUTO still works. */
    assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_ENOTSUP);
    auto_bcast_works(7);
    return;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(c, 0);
  assert_true(payload() >= 64);
  check_family();
}

static void test_mcast_sizes_every_root(void **state) {
  size_t pl, sizes[10];
  int p = mr_size(), root, k, nsizes;
  (void)state;

  if (mcast_unused() || p == 1)
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

  if (mcast_unused() || p == 1)
    skip();
  for (i = 0; i < K; i++) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    int root = (i * 3) % p;
    o.algorithm = "multicast";
    o.mode = i % 2 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
    b[i] = malloc(N);
    assert_non_null(b[i]);
    mr_fill(b[i], N, 900 + (uint64_t)i);
    if (mr_rank() != root)
      memset(b[i], 0, N);
    assert_int_equal(mmp_ibcast(b[i], N, root, w, &o, &q[i]), 0);
  }
  for (i = K - 1; i >= 0; i--) {
    mmp_status_t st;
    assert_int_equal(mmp_wait(&q[i], &st), 0);
    assert_int_equal(st.bytes, N);
  }
  for (i = 0; i < K; i++) {
    mr_fill(want, N, 900 + (uint64_t)i);
    assert_memory_equal(b[i], want, N);
    free(b[i]);
  }
}

/* Two disjoint communicators of one split share a context number, and
 * every rank of the job hears every datagram: both halves broadcast at
 * once, each from its own root with its own bytes, both modes, blocking
 * and not; every rank ends with its own root's bytes, and every rank
 * counts the other half's datagrams as not for it. */
static void test_mcast_disjoint_comms(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *sub = NULL;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp__mcast_stats_t before, after;
  int me = mr_rank(), color = me % 2, round, i;
  enum { N = 4097, ROUNDS = 8 };
  uint8_t *b = malloc(N);
  (void)state;

  if (mcast_unused() || mr_size() < 4) {
    free(b);
    skip();
  }
  assert_non_null(b);
  assert_int_equal(mmp_comm_split(w, color, -me, &sub), 0);
  assert_int_equal(mmp__mcast_stats(&before), 0);
  o.algorithm = "multicast";
  for (round = 0; round < ROUNDS; round++) {
    uint8_t v = (uint8_t)(0xa0 + color + 2 * round);
    mmp_request_t *q = NULL;
    int rc;
    o.mode = round % 2 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
    memset(b, mmp_comm_rank(sub) == 0 ? v : 0x5a, N);
    if (round % 4 < 2) {
      rc = mmp_bcast_ex(b, N, 0, sub, &o);
    } else {
      rc = mmp_ibcast(b, N, 0, sub, &o, &q);
      if (rc == 0)
        rc = mmp_wait(&q, MMP_STATUS_IGNORE);
    }
    for (i = 0; i < N && b[i] == v; i++)
      ;
    if (rc != 0 || i < N)
      fail_msg("round %d half %d: rc %s, byte %d is 0x%02x, want 0x%02x", round,
               color, mmp_err_name(rc), i, i < N ? b[i] : 0, v);
  }
  /* The other half's datagrams reached this rank too (loopback
   * multicast): dropped and counted, whether they came during this
   * half's broadcasts or before them. */
  assert_int_equal(mmp_barrier(w), 0);
  for (i = 0; i < 200; i++) {
    assert_int_equal(mmp__mcast_stats(&after), 0);
    if (after.other_comm > before.other_comm)
      break;
    usleep(10000);
  }
  assert_true(after.other_comm > before.other_comm);
  assert_int_equal(mmp_comm_free(&sub), 0);
  free(b);
}

/* A rank outside a communicator (split with MMP_UNDEFINED) hears its
 * multicast datagrams too: it has no communicator of that context and
 * never will, so it drops them at once, counted as another
 * communicator's, rather than keep them for a collective that never
 * comes (up to 16 MiB, each searched at every collective's start and
 * end). */
static void test_mcast_outsider_keeps_nothing(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *sub = NULL;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp__mcast_stats_t before, after;
  int me = mr_rank(), out = mr_size() - 1, round, i;
  enum { N = 4097, ROUNDS = 8 };
  uint8_t b[N];
  (void)state;

  if (mcast_unused() || mr_size() < 3)
    skip();
  assert_int_equal(mmp__mcast_stats(&before), 0);
  assert_int_equal(mmp_comm_split(w, me == out ? MMP_UNDEFINED : 0, me, &sub),
                   0);
  assert_true((sub == NULL) == (me == out));
  o.algorithm = "multicast";
  for (round = 0; sub != NULL && round < ROUNDS; round++) {
    uint8_t v = (uint8_t)(0x30 + round);
    memset(b, mmp_comm_rank(sub) == 0 ? v : 0, N);
    assert_int_equal(mmp_bcast_ex(b, N, 0, sub, &o), 0);
    for (i = 0; i < N; i++)
      if (b[i] != v)
        fail_msg("round %d: byte %d is 0x%02x, want 0x%02x", round, i, b[i], v);
  }
  /* The outsider looks while the others broadcast, before the barrier:
   * after it, their next test's datagrams may come early. */
  if (me == out) {
    for (i = 0; i < 200; i++) {
      assert_int_equal(mmp__mcast_stats(&after), 0);
      if (after.other_comm > before.other_comm)
        break;
      usleep(10000);
    }
    if (after.other_comm == before.other_comm ||
        after.early_bytes > before.early_bytes)
      fail_msg("outside the communicator: %llu datagrams dropped as another "
               "communicator's, %llu bytes kept (%llu before)",
               (unsigned long long)(after.other_comm - before.other_comm),
               (unsigned long long)after.early_bytes,
               (unsigned long long)before.early_bytes);
  } else {
    assert_int_equal(mmp_comm_free(&sub), 0);
  }
  assert_int_equal(mmp_barrier(w), 0);
}

/* A job that makes and frees many communicators, each broadcasting by
 * multicast: what the channel keeps for a communicator's context goes
 * with the communicator (it was kept for ever, and every datagram and
 * every collective's end searched all of it). A broadcast may outlive
 * its call and hold the freed communicator until its ACKs are in (an
 * eager root, a receiver whose children have not acknowledged yet), and
 * the barrier through the node segment does not wait for them: what the
 * channel keeps is counted once those have ended, within a bound. */
static void test_mcast_freed_comms_forgotten(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *d = NULL;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp__mcast_stats_t before, after;
  uint8_t b[3000], want[3000];
  int i, k;
  (void)state;

  if (mcast_unused() || mr_size() == 1)
    skip();
  o.algorithm = "multicast";
  assert_int_equal(mmp_barrier(w), 0);
  assert_int_equal(mmp__mcast_stats(&before), 0);
  for (i = 0; i < 40; i++) {
    assert_int_equal(mmp_comm_dup(w, &d), 0);
    for (k = 0; k < 2; k++) {
      mr_fill(want, sizeof(want), 5000 + (uint64_t)(i * 2 + k));
      if (mmp_comm_rank(d) == k % mr_size())
        memcpy(b, want, sizeof(b));
      else
        memset(b, 0, sizeof(b));
      o.mode = k ? MMP_SEND_RNDV : MMP_SEND_EAGER;
      assert_int_equal(mmp_bcast_ex(b, sizeof(b), k % mr_size(), d, &o), 0);
      assert_memory_equal(b, want, sizeof(b));
    }
    assert_int_equal(mmp_comm_free(&d), 0);
  }
  assert_int_equal(mmp_barrier(w), 0);
  for (i = 0; i < 1000; i++) {
    assert_int_equal(mmp__mcast_stats(&after), 0);
    if (after.contexts <= before.contexts)
      break;
    usleep(10000);
  }
  if (after.contexts > before.contexts)
    fail_msg("the channel keeps %llu contexts 10 s after 40 communicators "
             "came and went, %llu before",
             (unsigned long long)after.contexts,
             (unsigned long long)before.contexts);
}

/* ---- Multicast s-to-p ------------------------------------------------- */

/* Source j of s: every (p / s)-th rank, the last ones when s = p. Its
 * message: `base` bytes (equal), or base - j * 7 + (j % 3) (unequal,
 * down to 0), seeded by the source. */
static size_t s2p_len(int j, size_t base, int unequal) {
  size_t d = (size_t)j * 7;
  if (!unequal)
    return base;
  return d > base ? (size_t)(j % 3) : base - d + (size_t)(j % 3);
}

/* Runs one multicast s-to-p with s sources and checks every byte and
 * every length on this rank; `nb` uses the non-blocking call, `unknown`
 * passes no lengths (the size exchange first). */
static void check_s2p(int s, size_t base, int unequal, unsigned mode, int nb,
                      int unknown, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), i, j = 0, rc;
  size_t *lens = malloc((size_t)p * sizeof(size_t));
  size_t *got = malloc((size_t)p * sizeof(size_t)), total = 0, at = 0;
  uint8_t *want, *buf, *mine;
  mmp_request_t *q = NULL;

  assert_non_null(lens);
  assert_non_null(got);
  for (i = 0; i < p; i++) {
    int src = s == p || (i % (p / s) == 0 && i / (p / s) < s);
    lens[i] = src ? s2p_len(j++, base, unequal) : MMP_S2P_NONE;
    total += src ? lens[i] : 0;
  }
  assert_int_equal(j, s);
  want = malloc(total + 1);
  buf = malloc(total + 1);
  mine = malloc(base + 8);
  assert_true(want != NULL && buf != NULL && mine != NULL);
  for (i = 0; i < p; i++)
    if (lens[i] != MMP_S2P_NONE) {
      mr_fill(want + at, lens[i], seed + (uint64_t)i);
      at += lens[i];
    }
  if (lens[me] != MMP_S2P_NONE)
    mr_fill(mine, lens[me], seed + (uint64_t)me);
  memset(buf, 0xa5, total + 1);
  o.algorithm = "multicast";
  o.mode = mode;
  if (nb) {
    rc = mmp_ibcast_s2p(mine, lens[me] != MMP_S2P_NONE ? lens[me] : 0,
                        lens[me] != MMP_S2P_NONE, buf, total,
                        unknown ? NULL : lens, got, w, &o, &q);
    if (rc == 0) {
      mmp_status_t st;
      rc = mmp_wait(&q, &st);
      if (rc == 0)
        assert_int_equal(st.bytes, total);
    }
  } else {
    rc = mmp_bcast_s2p(mine, lens[me] != MMP_S2P_NONE ? lens[me] : 0,
                       lens[me] != MMP_S2P_NONE, buf, total,
                       unknown ? NULL : lens, got, w, &o);
  }
  if (rc != 0 || memcmp(buf, want, total) != 0 || buf[total] != 0xa5) {
    size_t k = 0;
    while (k < total && buf[k] == want[k])
      k++;
    fail_msg("multicast s2p s %d base %zu unequal %d mode %u nb %d unknown %d: "
             "rc %s, first bad byte %zu of %zu",
             s, base, unequal, mode, nb, unknown, mmp_err_name(rc), k, total);
  }
  for (i = 0; i < p; i++)
    assert_true(got[i] == lens[i]);
  free(lens);
  free(got);
  free(want);
  free(buf);
  free(mine);
}

/* s = 1, 2, p/2 and p sources; lengths equal and unequal, around the
 * datagram's payload and over many datagrams; both modes, blocking and
 * not, with and without the lengths. */
static void test_mcast_s2p(void **state) {
  int p = mr_size(), svals[4] = {1, 2, p / 2, p}, k, v;
  size_t pl, bases[4];
  (void)state;

  if (mcast_unused() || p == 1)
    skip();
  pl = payload();
  bases[0] = 1;
  bases[1] = pl;
  bases[2] = pl + 1;
  bases[3] = 20 * pl + 5;
  for (k = 0; k < 4; k++) {
    if (svals[k] < 1 || (k > 0 && svals[k] == svals[k - 1]))
      continue;
    for (v = 0; v < 4; v++) {
      uint64_t seed = 7000 + (uint64_t)(k * 100 + v * 10);
      check_s2p(svals[k], bases[v], 0, MMP_SEND_EAGER, v % 2, 0, seed);
      check_s2p(svals[k], bases[v], 1, MMP_SEND_RNDV, (v + 1) % 2, v == 3,
                seed + 1);
    }
  }
  /* The lengths exchanged first, both modes, equal lengths. */
  check_s2p(p, 3 * pl, 0, MMP_SEND_EAGER, 1, 1, 7900);
  check_s2p(p / 2 > 0 ? p / 2 : 1, 0, 0, MMP_SEND_RNDV, 0, 1, 7901);
  /* Its parts are broadcasts, but the latest broadcast is still the one
   * the program made. */
  {
    mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
    uint8_t b[64] = {0};
    const char *alg = NULL;
    bo.algorithm = "binomial";
    assert_int_equal(mmp_bcast_ex(b, sizeof(b), 0, mmp_comm_world(), &bo), 0);
    check_s2p(p, pl, 0, MMP_SEND_EAGER, 0, 0, 7902);
    assert_int_equal(mmp_bcast_last(mmp_comm_world(), &alg), 0);
    assert_string_equal(alg, "binomial");
  }
}

/* Two multicast s-to-p and a multicast broadcast in flight at once. */
static void test_mcast_s2p_in_flight(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), i, k;
  enum { N = 5000 };
  uint8_t *b[2], *mine, bc[N], want[N];
  mmp_request_t *q[3];
  (void)state;

  if (mcast_unused() || p == 1)
    skip();
  mine = malloc(N);
  assert_non_null(mine);
  o.algorithm = "multicast";
  bo.algorithm = "multicast";
  for (k = 0; k < 2; k++) {
    b[k] = malloc((size_t)N * (size_t)p);
    assert_non_null(b[k]);
    mr_fill(mine, N, 8100 + (uint64_t)(k * 64 + me));
    o.mode = k ? MMP_SEND_RNDV : MMP_SEND_EAGER;
    /* Every rank a source: the send buffer is free on return. */
    assert_int_equal(mmp_ibcast_s2p(mine, N, 1, b[k], (size_t)N * (size_t)p,
                                    NULL, NULL, w, &o, &q[k]),
                     0);
  }
  mr_fill(want, N, 8300);
  if (me == p - 1)
    memcpy(bc, want, N);
  else
    memset(bc, 0, N);
  assert_int_equal(mmp_ibcast(bc, N, p - 1, w, &bo, &q[2]), 0);
  for (k = 2; k >= 0; k--)
    assert_int_equal(mmp_wait(&q[k], MMP_STATUS_IGNORE), 0);
  assert_memory_equal(bc, want, N);
  for (k = 0; k < 2; k++) {
    for (i = 0; i < p; i++) {
      mr_fill(mine, N, 8100 + (uint64_t)(k * 64 + i));
      assert_memory_equal(b[k] + (size_t)i * N, mine, N);
    }
    free(b[k]);
  }
  free(mine);
}

/* The last rank has half the room it needs: only it fails (MMP_ETRUNC,
 * with what fits), nobody waits for it; then a rank that believes rank
 * 0's message is longer fails with MMP_EMISMATCH and nobody hangs. */
static void test_mcast_s2p_short_buffer_and_mismatch(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), i, rc;
  size_t np = (unsigned)p, n = 3000, total = n * np, *lens;
  size_t cap = me == p - 1 ? total / 2 + 1 : total;
  uint8_t *b = calloc(total + n, 1), *mine = malloc(n);
  (void)state;

  if (mcast_unused() || p == 1) {
    free(b);
    free(mine);
    skip();
  }
  lens = malloc(np * sizeof(size_t));
  assert_true(b != NULL && mine != NULL && lens != NULL);
  memset(mine, me, n);
  o.algorithm = "multicast";
  rc = mmp_bcast_s2p(mine, n, 1, b, cap, NULL, NULL, w, &o);
  assert_int_equal(rc, cap < total ? MMP_ETRUNC : 0);
  for (i = 0; i < (int)cap; i++)
    assert_int_equal(b[i], (uint8_t)((size_t)i / n));
  assert_int_equal(mmp_barrier(w), 0);
  for (i = 0; i < p; i++)
    lens[i] = n;
  if (me == p - 1)
    lens[0] += 7;
  rc = mmp_bcast_s2p(mine, n, 1, b, total + n, lens, NULL, w, &o);
  if (me == p - 1)
    assert_int_equal(rc, MMP_EMISMATCH);
  else
    assert_true(rc == 0 || rc == MMP_EMISMATCH);
  assert_int_equal(mmp_barrier(w), 0);
  free(lens);
  free(b);
  free(mine);
}

/* Switched off: the multicast s-to-p is MMP_ENOTSUP on every rank, with
 * and without the lengths, and another algorithm still works. */
static void test_mcast_s2p_off(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), i;
  size_t np = (unsigned)p, *lens = malloc(np * sizeof(size_t));
  uint8_t c = (uint8_t)(me + 1), *out = malloc(np);
  (void)state;

  if (!mcast_off() || p == 1) {
    free(lens);
    free(out);
    skip();
  }
  assert_true(lens != NULL && out != NULL);
  for (i = 0; i < p; i++)
    lens[i] = 1;
  o.algorithm = "multicast";
  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, out, np, lens, NULL, w, &o),
                   MMP_ENOTSUP);
  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, out, np, NULL, NULL, w, &o),
                   MMP_ENOTSUP);
  o.algorithm = NULL;
  memset(out, 0, np);
  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, out, np, lens, NULL, w, &o), 0);
  for (i = 0; i < p; i++)
    assert_int_equal(out[i], i + 1);
  free(lens);
  free(out);
}

/* Sends one datagram to the job's group ("a.b.c.d:port" or
 * "[addr]:port") from a socket of its own. */
static void send_raw(const char *group, const uint8_t *d, size_t n) {
  struct sockaddr_storage to;
  struct in_addr lo;
  int fd;

  assert_int_equal(mmp__addr_parse(group, &to), 0);
  fd = socket(to.ss_family, SOCK_DGRAM, 0);
  assert_true(fd >= 0);
  /* IPv4 on loopback; IPv6 where the kernel routes ff00::/8 (test_mcast6's
   * one multicast interface). */
  lo.s_addr = htonl(INADDR_LOOPBACK);
  if (to.ss_family == AF_INET)
    (void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof(lo));
  assert_true(sendto(fd, d, n, 0, (struct sockaddr *)&to,
                     to.ss_family == AF_INET6
                         ? sizeof(struct sockaddr_in6)
                         : sizeof(struct sockaddr_in)) == (ssize_t)n);
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

  if (mcast_unused() || p == 1)
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
      cmocka_unit_test(test_mcast_disjoint_comms),
      cmocka_unit_test(test_mcast_freed_comms_forgotten),
      cmocka_unit_test(test_mcast_outsider_keeps_nothing),
      cmocka_unit_test(test_mcast_rejects_forgeries),
      cmocka_unit_test(test_mcast_s2p),
      cmocka_unit_test(test_mcast_s2p_in_flight),
      cmocka_unit_test(test_mcast_s2p_short_buffer_and_mismatch),
      cmocka_unit_test(test_mcast_s2p_off),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
