/* SPDX-License-Identifier: MIT */
/*
 * AUTO on rested and drained links (docs/design/auto.md, "Rested or
 * drained links"): in adaptive mode the root lets the burst allowance
 * count only once burst·β has passed since its last adaptive broadcast
 * ended. A saved profile (set by meson) with a burst makes the two
 * prices pick different algorithms at LEN and a refill of 0.55 s, so that
 * "at once" and "after a rest" are far apart even on a loaded machine.
 * Every rank must still run what the root chose (the receivers follow its
 * first message), back to back and after rests alike. The broadcasts are
 * non-blocking: on one host a blocking one runs through the node segment
 * (the shm row), which has no regime, and mmp_bcast_select tells what a
 * blocking call runs, so the test follows what the broadcasts ran.
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

#define LEN (64 * 1024)

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* One AUTO broadcast from rank 0, non-blocking and waited for, checked. */
static void bcast_checked(uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  uint8_t *buf = malloc(LEN), *want = malloc(LEN);
  mmp_request_t *r = NULL;

  assert_non_null(buf);
  assert_non_null(want);
  mr_fill(want, LEN, seed);
  if (mr_rank() == 0)
    memcpy(buf, want, LEN);
  else
    memset(buf, 0, LEN);
  assert_int_equal(mmp_ibcast(buf, LEN, 0, w, NULL, &r), 0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_memory_equal(buf, want, LEN);
  free(buf);
  free(want);
}

/* The name of broadcast row number `alg`. */
static const char *name_of(int alg) {
  const mmp__alg_t *a = mmp__alg_at(&mmp__bcast_family, alg);

  return a != NULL ? a->name : "?";
}

/* The last broadcast this rank logged. */
static int last_ran(void) {
  uint32_t seq[MMP__COLL_LOG];
  const mmp__alg_t *alg[MMP__COLL_LOG];
  int n, i, last = 0;

  n = mmp__coll_log_get(mmp_comm_world(), seq, alg, MMP__COLL_LOG);
  assert_true(n > 0);
  for (i = 1; i < n; i++)
    if (seq[i] > seq[last])
      last = i;
  return mmp__alg_index(&mmp__bcast_family, alg[last]);
}

/* Every rank ran `want` for the last broadcast (rank 0 says what). */
static void assert_all_ran(int want) {
  mmp_comm_t *w = mmp_comm_world();
  int r, mine = last_ran(), theirs;

  if (mr_rank() == 0) {
    assert_int_equal(mine, want);
    for (r = 1; r < mr_size(); r++) {
      assert_int_equal(mmp_recv(&theirs, sizeof(theirs), r, 50, w, NULL), 0);
      if (theirs != want)
        fail_msg("rank %d ran %s, the root %s", r, name_of(theirs),
                 name_of(want));
    }
  } else {
    assert_int_equal(mmp_send(&mine, sizeof(mine), 0, 50, w), 0);
  }
}

static void test_rested_and_drained(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_netmodel_t nm;
  mmp__desc_t d;
  int rested, drained, i;
  long refill_us;
  (void)state;

  if (mr_size() < 3)
    skip();
  assert_int_equal(mmp_comm_netmodel(w, &nm), 0);
  assert_true(nm.burst > 0);
  refill_us = (long)(nm.burst * nm.beta * 1e6);
  memset(&d, 0, sizeof(d));
  mmp__bcast_choose_auto(mr_size(), LEN, &nm, NULL, &d);
  rested = mmp__alg_index(&mmp__bcast_family, d.alg);
  memset(&d, 0, sizeof(d));
  mmp__bcast_choose_drained(mr_size(), LEN, &nm, &d);
  drained = mmp__alg_index(&mmp__bcast_family, d.alg);
  /* The profile is chosen so that the two prices disagree. */
  assert_int_not_equal(rested, drained);

  for (i = 0; i < 3; i++) {
    /* After a rest of twice the refill: the burst counts. */
    assert_int_equal(mmp_barrier(w), 0);
    sleep_us(2 * refill_us);
    bcast_checked(100 + (uint64_t)i);
    assert_all_ran(rested);
    /* Straight after one: it does not. */
    bcast_checked(200 + (uint64_t)i);
    assert_all_ran(drained);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rested_and_drained),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
