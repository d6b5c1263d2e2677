/* SPDX-License-Identifier: MIT */
/*
 * What a flood of small messages costs in memory between ranks that
 * share memory (docs/design/transport.md, "Memory"), run through minimprun on
 * one host: rank 0 keeps 500 non-blocking 8-byte sends in flight to rank
 * 1, which receives them in windows of 500. The sender runs ahead of the
 * receiver, so what bounds the memory is the eager credit between them
 * and the absence of copies and allocations per message: the heap of
 * either rank, sampled all along, may grow by at most 8 MiB over its
 * size before the flood, and the point-to-point layer allocates no more
 * than what the credit lets pile up, however many messages pass.
 * FLOOD_N sets the number of messages (default 200000).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_util.h"
#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

#define WINDOW 500
#define HEAP_BOUND (8ull << 20)

static long flood_count(void) {
  const char *s = getenv("FLOOD_N");
  long n = s != NULL ? atol(s) : 0;
  return n > 0 ? n : 200000;
}

/* Rank 0 sends `n` 8-byte messages numbered from `first` to rank 1,
 * WINDOW at a time; rank 1 receives and checks them. Notes the heap's
 * size into `h` after every window. */
static void flood(long first, long n, heap_peak_t *h) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *q[WINDOW];
  uint64_t v[WINDOW];

  for (long i = 0; i < n; i += WINDOW) {
    int k, m = n - i < WINDOW ? (int)(n - i) : WINDOW;
    for (k = 0; k < m; k++) {
      if (mr_rank() == 0) {
        v[k] = (uint64_t)(first + i + k);
        assert_int_equal(mmp_isend(&v[k], 8, 1, 31, w, &q[k]), 0);
      } else {
        assert_int_equal(mmp_irecv(&v[k], 8, 0, 31, w, &q[k]), 0);
      }
    }
    assert_int_equal(mmp_waitall((size_t)m, q, NULL), 0);
    if (mr_rank() == 1)
      for (k = 0; k < m; k++)
        if (v[k] != (uint64_t)(first + i + k))
          fail_msg("message %ld carried %llu", first + i + k,
                   (unsigned long long)v[k]);
    heap_peak_note(h);
  }
}

static void test_flood_of_small_messages_is_bounded(void **state) {
  long n = flood_count();
  uint64_t base, peak, allocs, most;
  heap_peak_t h;
  (void)state;

  if (mr_size() < 2 || !mmp__debug_peer_shm(1 - (mr_rank() & 1))) {
    if (mr_rank() == 0)
      print_message("no shared memory between ranks 0 and 1: nothing to "
                    "check\n");
    return;
  }
  assert_int_equal(mr_barrier(), 0);
  if (mr_rank() <= 1) {
    /* Entries the credit lets pile up, frames the caches keep, and some
     * for the rest: a flood of far more messages stays below. */
    most =
        mmp__debug_eager_buffer() / mmp__debug_eager_overhead(1 - mr_rank()) +
        4096 + 1024;
    assert_true((uint64_t)n >= 4 * most);
    base = heap_in_use();
    allocs = mmp__debug_p2p_allocs();
    assert_int_equal(heap_peak_start(&h), 0);
    flood(0, n, &h);
    peak = heap_peak_stop(&h);
    allocs = mmp__debug_p2p_allocs() - allocs;
    print_message("rank %d: heap %.1f MiB before, peak %.1f MiB above, "
                  "%llu allocations\n",
                  mr_rank(), base / 1048576.0,
                  peak > base ? (peak - base) / 1048576.0 : 0.0,
                  (unsigned long long)allocs);
    if (peak > base + HEAP_BOUND)
      fail_msg("the heap grew by %.1f MiB in a flood of %ld messages",
               (peak - base) / 1048576.0, n);
    if (allocs > most)
      fail_msg("%llu allocations in a flood of %ld messages",
               (unsigned long long)allocs, n);
  }
  assert_int_equal(mr_barrier(), 0);
}

/* What bounds it: between ranks that share memory a message costs
 * more eager credit besides its length than between others, so that the
 * credit bounds the number of entries a flood leaves unexpected. */
static void test_shared_memory_charges_more_credit(void **state) {
  (void)state;

  for (int j = 0; j < mr_size(); j++) {
    if (j == mr_rank())
      continue;
    assert_int_equal(mmp__debug_eager_overhead(j),
                     mmp__debug_peer_shm(j) ? 1024 : 64);
  }
  assert_int_equal(mr_barrier(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flood_of_small_messages_is_bounded),
      cmocka_unit_test(test_shared_memory_charges_more_credit),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
