/* SPDX-License-Identifier: MIT */
/*
 * AUTO under arrival patterns (collectives.h, "AUTO under arrival
 * patterns"): from 64 KiB on the root alone decides, for each broadcast,
 * between the static algorithm and an arrival-aware one, and the
 * receivers follow its first message. These tests make the ranks' own
 * histories differ (rotating roots, late ranks, broadcasts in flight at
 * once) and check, from every rank's record of what ran, that no rank
 * ever ran a different algorithm from the others for the same broadcast;
 * and that a root facing late receivers turns to an arrival-aware
 * broadcast, and back once they arrive together. A saved network profile
 * (set by meson) makes the model, and so the decisions, the same on every
 * machine: T(256 KiB) = 22 ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectives/bcast/bcast.h"
#include "collectives/core/state.h"
#include "mr_common.h"

#define LEN (256 * 1024)

/* Under TSan every transfer is many times slower and the ranks leave a
 * barrier far apart, so "balanced" is not balanced: the pattern test
 * checks the turns only elsewhere (TSan runs it for races). */
#if defined(__SANITIZE_THREAD__)
#define MR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MR_TSAN 1
#endif
#endif
#ifndef MR_TSAN
#define MR_TSAN 0
#endif

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* The name of broadcast row number `alg`. */
static const char *name_of(int alg) {
  const mmp__alg_t *a = mmp__alg_at(&mmp__bcast_family, alg);

  return a != NULL ? a->name : "?";
}

static int is_arrival(int alg) {
  const mmp__alg_t *a = mmp__alg_at(&mmp__bcast_family, alg);

  return a == &mmp__bcast_arrival_b_alg || a == &mmp__bcast_arrival_nb_alg;
}

/* AUTO's broadcast, non-blocking and waited for: on one host a blocking
 * broadcast runs through the node segment (the shm row), where a late
 * receiver copies the data out when it comes and nobody waits for it,
 * so the arrival-aware switch these tests follow is AUTO's choice among
 * the algorithms a non-blocking call runs. */
static int auto_bcast_nb(void *buf, size_t len, int root, mmp_comm_t *w) {
  mmp_request_t *r = NULL;
  int rc = mmp_ibcast(buf, len, root, w, NULL, &r);

  return rc != 0 ? rc : mmp_wait(&r, NULL);
}

/* One AUTO broadcast from `root`, this rank `late_us` late, checked. */
static void auto_bcast(int root, long late_us, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  uint8_t *buf = malloc(LEN), *want = malloc(LEN);

  assert_non_null(buf);
  assert_non_null(want);
  mr_fill(want, LEN, seed);
  if (mr_rank() == root)
    memcpy(buf, want, LEN);
  else
    memset(buf, 0, LEN);
  mmp_barrier(w);
  if (late_us > 0)
    sleep_us(late_us);
  assert_int_equal(auto_bcast_nb(buf, LEN, root, w), 0);
  assert_memory_equal(buf, want, LEN);
  free(buf);
  free(want);
}

/* The algorithm this rank ran for each of its logged broadcasts, by
 * sequence number (a receiver logs when its first message arrives, so
 * broadcasts in flight at once log in any order). */
static int my_log(uint32_t *seq, int *alg) {
  const mmp__alg_t *row[MMP__COLL_LOG];
  int n = mmp__coll_log_get(mmp_comm_world(), seq, row, MMP__COLL_LOG), i, j;

  for (i = 0; i < n; i++)
    alg[i] = mmp__alg_index(&mmp__bcast_family, row[i]);

  for (i = 1; i < n; i++)
    for (j = i; j > 0 && seq[j - 1] > seq[j]; j--) {
      uint32_t s = seq[j];
      int a = alg[j];
      seq[j] = seq[j - 1];
      alg[j] = alg[j - 1];
      seq[j - 1] = s;
      alg[j - 1] = a;
    }
  return n;
}

/* Every rank's log equals rank 0's, entry for entry. */
static void assert_logs_agree(void) {
  mmp_comm_t *w = mmp_comm_world();
  uint32_t seq[MMP__COLL_LOG], oseq[MMP__COLL_LOG];
  int alg[MMP__COLL_LOG], oalg[MMP__COLL_LOG], n, on, r, i;

  n = my_log(seq, alg);
  /* Rank 0 sends its log round; each rank compares with its own. */
  if (mr_rank() == 0) {
    for (r = 1; r < mr_size(); r++) {
      assert_int_equal(mmp_send(&n, sizeof(n), r, 40, w), 0);
      assert_int_equal(mmp_send(seq, sizeof(seq), r, 41, w), 0);
      assert_int_equal(mmp_send(alg, sizeof(alg), r, 42, w), 0);
    }
    return;
  }
  assert_int_equal(mmp_recv(&on, sizeof(on), 0, 40, w, NULL), 0);
  assert_int_equal(mmp_recv(oseq, sizeof(oseq), 0, 41, w, NULL), 0);
  assert_int_equal(mmp_recv(oalg, sizeof(oalg), 0, 42, w, NULL), 0);
  if (n != on)
    fail_msg("rank %d logged %d broadcasts, rank 0 %d (last %u/%d vs %u/%d)",
             mr_rank(), n, on, n ? seq[n - 1] : 0, n ? alg[n - 1] : -1,
             on ? oseq[on - 1] : 0, on ? oalg[on - 1] : -1);
  for (i = 0; i < n; i++) {
    assert_int_equal(seq[i], oseq[i]);
    if (alg[i] != oalg[i])
      fail_msg("broadcast %u: rank %d ran %s, rank 0 %s", seq[i], mr_rank(),
               name_of(alg[i]), name_of(oalg[i]));
  }
}

/* Balanced, then receivers late by 100 to 200 ms (T(m) = 22 ms; at least
 * four times it, so that a loaded machine's slower transfers do not hide
 * the imbalance), then balanced again, all from root 0: AUTO turns to an
 * arrival-aware broadcast, and back. */
static void test_auto_follows_the_pattern(void **state) {
  uint32_t seq[MMP__COLL_LOG];
  int alg[MMP__COLL_LOG], n, i, k, me = mr_rank(), late = 0, back = 0;
  uint64_t rng = 12345 + (uint64_t)me;
  (void)state;

  for (k = 0; k < 4; k++)
    auto_bcast(0, 0, (uint64_t)k);
  for (k = 0; k < 8; k++)
    auto_bcast(0, me == 0 ? 0 : 100000 + (long)(mr_next(&rng) % 100000),
               100 + k);
  for (k = 0; k < 8; k++)
    auto_bcast(0, 0, 200 + (uint64_t)k);
  assert_logs_agree();
  n = my_log(seq, alg);
  assert_true(n >= 20);
  /* The last 20 logged are the three phases. */
  for (i = n - 16; i < n - 8; i++)
    late += is_arrival(alg[i]);
  for (i = n - 8; i < n; i++)
    back += !is_arrival(alg[i]);
  if (mr_size() >= 3 && !MR_TSAN) {
    assert_true(late >= 4); /* it turned */
    assert_true(back >= 4); /* and back */
  }
}

/* Roots rotate, a different rank is late each time, and broadcasts of
 * two sizes are in flight at once: every rank still runs what the root
 * runs. */
static void test_auto_consistent_across_ranks(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), k, j;
  uint8_t *buf[3];
  (void)state;

  for (j = 0; j < 3; j++) {
    buf[j] = calloc(LEN, 1);
    assert_non_null(buf[j]);
  }
  for (k = 0; k < 12; k++) {
    int root = k % p;
    auto_bcast(root, me == (k * 5 + 1) % p ? 30000 : 0, 300 + (uint64_t)k);
  }
  for (k = 0; k < 6; k++) {
    mmp_request_t *r[3];
    size_t len[3] = {LEN, 100 * 1024, LEN - 7};
    for (j = 0; j < 3; j++) {
      if (me == (k + j) % p)
        mr_fill(buf[j], len[j], 400 + (uint64_t)(k * 3 + j));
      if (me == (k * 3 + j) % p && j == 1)
        sleep_us(20000);
      assert_int_equal(mmp_ibcast(buf[j], len[j], (k + j) % p, w, NULL, &r[j]),
                       0);
    }
    for (j = 0; j < 3; j++) {
      uint8_t *want = malloc(len[j]);
      assert_int_equal(mmp_wait(&r[j], NULL), 0);
      mr_fill(want, len[j], 400 + (uint64_t)(k * 3 + j));
      assert_memory_equal(buf[j], want, len[j]);
      free(want);
    }
  }
  assert_logs_agree();
  for (j = 0; j < 3; j++)
    free(buf[j]);
}

/* Root 0 first learns a regime (receivers on time: static; 40 ms late:
 * arrival-aware), then one rank's length falls on the other side of the
 * switch, each way. */
static void straddle(int late) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), rc, k;
  uint8_t *buf = calloc(MMP__ADAPT_MIN + 100, 1);

  for (k = 0; k < 6; k++) {
    mmp_barrier(w);
    if (late && me != 0)
      sleep_us(40000);
    assert_int_equal(auto_bcast_nb(buf, MMP__ADAPT_MIN + 7, 0, w), 0);
  }
  /* The root below the switch, the last rank above it. */
  rc = auto_bcast_nb(buf, me == p - 1 ? MMP__ADAPT_MIN + 7 : MMP__ADAPT_MIN - 7,
                     0, w);
  if (me == p - 1)
    assert_int_equal(rc, MMP_EMISMATCH);
  if (me == 0)
    assert_int_equal(rc, 0);
  assert_int_equal(mmp_barrier(w), 0);
  /* The root above it, the last rank below it. */
  rc = auto_bcast_nb(buf, me == p - 1 ? MMP__ADAPT_MIN - 7 : MMP__ADAPT_MIN + 7,
                     0, w);
  if (me == p - 1)
    assert_int_equal(rc, MMP_EMISMATCH);
  if (me == 0)
    assert_int_equal(rc, 0);
  assert_int_equal(mmp_barrier(w), 0);
  auto_bcast(0, 0, 999);
  free(buf);
}

/* A receiver whose length crosses into AUTO's adaptive mode while the
 * root's does not, and the other way round, with the root in either
 * regime: the disagreeing rank gets MMP_EMISMATCH, nobody waits forever,
 * and the next broadcast works. */
static void test_auto_lengths_across_the_switch(void **state) {
  (void)state;

  if (mr_size() < 3)
    skip();
  straddle(0);
  straddle(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_auto_follows_the_pattern),
      cmocka_unit_test(test_auto_consistent_across_ranks),
      cmocka_unit_test(test_auto_lengths_across_the_switch),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
