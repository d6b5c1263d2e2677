/* SPDX-License-Identifier: MIT */
/*
 * Multi-rank point-to-point tests, run through minimprun: a ring, an
 * all-pairs exchange of random sizes up to 8 MiB checked by checksum, and a
 * flood of 100,000 small messages with none lost or reordered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

static void test_ring_token(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size();
  int right = (r + 1) % p, left = (r + p - 1) % p;
  long token, expect;
  int round;
  (void)state;

  for (round = 0; round < 20; round++) {
    if (r == 0) {
      token = round * 1000L;
      assert_int_equal(mmp_send(&token, sizeof(token), right, 1, w), 0);
      assert_int_equal(mmp_recv(&token, sizeof(token), left, 1, w, NULL), 0);
      expect = round * 1000L + (long)p * (p - 1) / 2;
      assert_int_equal(token, expect);
    } else {
      assert_int_equal(mmp_recv(&token, sizeof(token), left, 1, w, NULL), 0);
      token += r;
      assert_int_equal(mmp_send(&token, sizeof(token), right, 1, w), 0);
    }
  }
}

static void test_ring_shift_large(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size();
  int right = (r + 1) % p, left = (r + p - 1) % p;
  size_t n = 3u << 20;
  uint8_t *out = malloc(n), *in = malloc(n), *want = malloc(n);
  mmp_request_t *q[2];
  mmp_status_t st[2];
  (void)state;

  assert_non_null(out);
  assert_non_null(in);
  assert_non_null(want);
  mr_fill(out, n, 77 + (uint64_t)r);
  mr_fill(want, n, 77 + (uint64_t)left);
  /* Both directions at once: every link is full-duplex. */
  assert_int_equal(mmp_irecv(in, n, left, 2, w, &q[0]), 0);
  assert_int_equal(mmp_isend(out, n, right, 2, w, &q[1]), 0);
  assert_int_equal(mmp_waitall(2, q, st), 0);
  assert_int_equal(st[0].bytes, n);
  assert_int_equal(st[0].source, left);
  assert_memory_equal(in, want, n);
  free(out);
  free(in);
  free(want);
}

/* Size of the message from `src` to `dst` in `round`: mostly below the
 * eager limit, one in four up to 8 MiB, with 0 and 8 MiB themselves. */
static size_t pair_size(int src, int dst, int round) {
  uint64_t s = (uint64_t)src * 1000003u + (uint64_t)dst * 7919u +
               (uint64_t)round * 104729u + 1;
  uint64_t v = mr_next(&s);

  if (round == 0 && src == 0)
    return dst == 1 ? 0 : 8u << 20;
  if (v % 4 == 0)
    return (size_t)(mr_next(&s) % ((8u << 20) + 1));
  return (size_t)(mr_next(&s) % 100000);
}

static uint64_t pair_seed(int src, int dst, int round) {
  return ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ (uint64_t)round;
}

static void test_all_pairs_random_sizes(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size(), round, j;
  mmp_request_t **q = calloc(4 * (size_t)p, sizeof(*q));
  uint8_t **in = calloc((size_t)p, sizeof(*in));
  uint8_t **out = calloc((size_t)p, sizeof(*out));
  uint64_t *sum_in = calloc((size_t)p, sizeof(*sum_in));
  uint64_t *sum_out = calloc((size_t)p, sizeof(*sum_out));
  (void)state;

  for (round = 0; round < 3; round++) {
    int nq = 0;
    for (j = 0; j < p; j++) {
      size_t nin = pair_size(j, r, round), nout = pair_size(r, j, round);
      if (j == r)
        continue;
      in[j] = malloc(nin + 1);
      out[j] = malloc(nout + 1);
      mr_fill(out[j], nout, pair_seed(r, j, round));
      sum_out[j] = mr_checksum(out[j], nout);
      assert_int_equal(mmp_irecv(in[j], nin, j, 10, w, &q[nq++]), 0);
      assert_int_equal(mmp_irecv(&sum_in[j], 8, j, 11, w, &q[nq++]), 0);
    }
    for (j = 0; j < p; j++) {
      if (j == r)
        continue;
      assert_int_equal(
          mmp_isend(out[j], pair_size(r, j, round), j, 10, w, &q[nq++]), 0);
      assert_int_equal(mmp_isend(&sum_out[j], 8, j, 11, w, &q[nq++]), 0);
    }
    assert_int_equal(mmp_waitall((size_t)nq, q, NULL), 0);
    for (j = 0; j < p; j++) {
      size_t nin = pair_size(j, r, round);
      if (j == r)
        continue;
      /* The checksum travelled separately; the bytes must match it. */
      assert_true(mr_checksum(in[j], nin) == sum_in[j]);
      free(in[j]);
      free(out[j]);
    }
  }
  free(q);
  free(in);
  free(out);
  free(sum_in);
  free(sum_out);
}

#define FLOOD 100000

typedef struct flood_rx_s {
  int left;
  int bad; /* first failure, reported by the main thread */
} flood_rx_t;

/* Receives the whole flood from the left neighbour, starting late so that
 * it first piles up as unexpected messages (and, past the eager credit, as
 * rendezvous requests). */
static void *flood_receiver(void *arg) {
  flood_rx_t *f = arg;
  mmp_comm_t *w = mmp_comm_world();
  uint32_t got[4];
  int i;

  usleep(100 * 1000);
  for (i = 0; i < FLOOD && f->bad == 0; i++) {
    mmp_status_t st;
    memset(got, 0xee, sizeof(got));
    if (mmp_recv(got, sizeof(got), f->left, 20, w, &st) != 0)
      f->bad = 1;
    else if (st.bytes != (size_t)(4 + i % 13) || got[0] != (uint32_t)i)
      f->bad = 2;
    else if (st.bytes >= 8 && got[1] != (uint32_t)f->left)
      f->bad = 3;
  }
  return NULL;
}

static void test_flood_small_messages(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size();
  int right = (r + 1) % p;
  flood_rx_t f = {(r + p - 1) % p, 0};
  mmp_request_t *q[1000];
  uint32_t msg[1000][4];
  pthread_t rx;
  int i, k;
  (void)state;

  if (p < 2)
    skip();
  /* One thread sends while another receives: the library is used from two
   * threads of the same process at once. */
  assert_int_equal(pthread_create(&rx, NULL, flood_receiver, &f), 0);
  for (i = 0; i < FLOOD; i += 1000) {
    for (k = 0; k < 1000; k++) {
      msg[k][0] = (uint32_t)(i + k);
      msg[k][1] = (uint32_t)r;
      msg[k][2] = msg[k][0] * 2654435761u;
      msg[k][3] = 0;
      assert_int_equal(
          mmp_isend(msg[k], (size_t)(4 + (i + k) % 13), right, 20, w, &q[k]),
          0);
    }
    assert_int_equal(mmp_waitall(1000, q, NULL), 0);
  }
  assert_int_equal(pthread_join(rx, NULL), 0);
  assert_int_equal(f.bad, 0);
  assert_int_equal(mr_barrier(), 0);
}

static void test_flood_forced_eager_backpressure(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size();
  char buf[200];
  int i;
  (void)state;

  if (p < 2)
    skip();
  /* Rank 0 pushes far more forced-eager data than rank 1's eager buffer
   * holds while rank 1 is busy; rank 0 must be held back, not rank 1's
   * memory. */
  if (r == 0) {
    for (i = 0; i < 20000; i++) {
      memset(buf, (char)i, sizeof(buf));
      memcpy(buf, &i, sizeof(i));
      assert_int_equal(mmp_send_ex(buf, sizeof(buf), 1, 30, w, MMP_SEND_EAGER),
                       0);
    }
  } else if (r == 1) {
    usleep(300 * 1000);
    for (i = 0; i < 20000; i++) {
      int v;
      assert_int_equal(mmp_recv(buf, sizeof(buf), 0, 30, w, NULL), 0);
      memcpy(&v, buf, sizeof(v));
      assert_int_equal(v, i);
      assert_int_equal(buf[sizeof(buf) - 1], (char)i);
    }
    /* Unexpected eager data from rank 0 never exceeded its credit. */
    assert_true(mmp__debug_unexp_peak() <= mmp__debug_eager_buffer());
  }
  assert_int_equal(mr_barrier(), 0);
}

/*
 * mmp_comm_free with requests still out on the communicator: they
 * complete as usual, the free waiting for the last (a receive that
 * matches only after the free; a broadcast that the root starts after
 * the others have freed it). Under ASan a use after free fails it.
 */
static void test_comm_free_with_requests_out(void **state) {
  enum { BIG = 1 << 20 };
  mmp_comm_t *w = mmp_comm_world(), *c = NULL;
  mmp_request_t *rq = NULL, *bq = NULL;
  mmp_status_t st;
  int r = mr_rank(), p = mr_size(), v = -1, i;
  char *big = malloc(BIG);
  (void)state;

  assert_non_null(big);
  memset(big, r == 0 ? 'z' : 0, BIG);
  assert_int_equal(mmp_comm_dup(w, &c), 0);
  /* The ranks start the broadcast apart, its first automatic choice on
   * `c`: it must not wait for the others (the model is the world's,
   * measured in mmp_init and inherited). */
  if (r == 0) {
    /* Matched only after the free: the sender waits for the second
     * barrier. The broadcast starts after the others freed theirs. */
    assert_int_equal(mmp_irecv(&v, sizeof(v), p - 1, 5, c, &rq), 0);
    assert_int_equal(mmp_barrier(w), 0);
    assert_int_equal(mmp_ibcast(big, BIG, 0, c, NULL, &bq), 0);
    assert_int_equal(mmp_comm_free(&c), 0);
    assert_null(c);
    assert_int_equal(mmp_barrier(w), 0);
  } else {
    assert_int_equal(mmp_ibcast(big, BIG, 0, c, NULL, &bq), 0);
    if (r != p - 1)
      assert_int_equal(mmp_comm_free(&c), 0);
    assert_int_equal(mmp_barrier(w), 0);
    assert_int_equal(mmp_barrier(w), 0);
    if (r == p - 1) {
      v = 77;
      assert_int_equal(mmp_isend(&v, sizeof(v), 0, 5, c, &rq), 0);
      assert_int_equal(mmp_comm_free(&c), 0);
    }
  }
  if (rq != NULL) {
    assert_int_equal(mmp_wait(&rq, &st), 0);
    if (r == 0) {
      assert_int_equal(v, 77);
      assert_int_equal(st.source, p - 1);
    }
  }
  assert_int_equal(mmp_wait(&bq, MMP_STATUS_IGNORE), 0);
  for (i = 0; i < BIG; i += 4093)
    assert_int_equal(big[i], 'z');
  free(big);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring_token),
      cmocka_unit_test(test_ring_shift_large),
      cmocka_unit_test(test_all_pairs_random_sizes),
      cmocka_unit_test(test_flood_small_messages),
      cmocka_unit_test(test_flood_forced_eager_backpressure),
      cmocka_unit_test(test_comm_free_with_requests_out),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
