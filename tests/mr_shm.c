/* SPDX-License-Identifier: MIT */
/*
 * Multi-rank tests of the shared-memory path, run through minimprun on one
 * host, so that every pair of ranks shares memory unless MINIMP_SHM=off
 * (then the same tests check that nothing does). Checks the choice of
 * transport and the node numbers, that no name of the job is left in
 * /dev/shm once init returns, messages of exactly the ring size and one
 * byte either side in every mode, streams that wrap the rings many times
 * in both directions at once, thousands of requests outstanding, single
 * copy for rendezvous data (or the rings, with MINIMP_SHM=ring), and a
 * sleeping receiver woken by its doorbell without burning CPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

/* MINIMP_SHM as this job runs: MMP__SHM_ON, _RING or _OFF. */
static int shm_mode(void) {
  const char *s = getenv("MINIMP_SHM");
  if (s == NULL || *s == '\0' || strcmp(s, "on") == 0)
    return MMP__SHM_ON;
  return strcmp(s, "ring") == 0 ? MMP__SHM_RING : MMP__SHM_OFF;
}

static mmp__shm_stats_t stats(void) {
  mmp__shm_stats_t st;
  assert_int_equal(mmp__debug_shm_stats(&st), 0);
  return st;
}

static void test_every_local_peer_uses_shared_memory(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *half;
  int me = mr_rank(), p = mr_size(), on = shm_mode() != MMP__SHM_OFF;
  mmp__shm_stats_t st = stats();
  (void)state;

  for (int j = 0; j < p; j++)
    if (j != me)
      assert_int_equal(mmp__debug_peer_shm(j), on);
  assert_int_equal(st.peers, on ? p - 1 : 0);
  if (shm_mode() == MMP__SHM_ON)
    assert_int_equal(st.single_copy, p - 1);
  else
    assert_int_equal(st.single_copy, 0);
  /* One host is one node, shared memory or not, in every communicator. */
  assert_int_equal(mmp__comm_node_count(w), 1);
  for (int j = 0; j < p; j++)
    assert_int_equal(mmp__comm_node_of(w, j), 0);
  assert_int_equal(mmp_comm_split(w, me % 2, -me, &half), 0);
  assert_int_equal(mmp__comm_node_count(half), 1);
  assert_int_equal(mmp__comm_node_of(half, mmp_comm_size(half) - 1), 0);
  assert_int_equal(mmp_comm_free(&half), 0);
}

static void test_no_name_is_left_after_init(void **state) {
  uint8_t key[MMP__JOB_KEY_LEN];
  char seg[MMP__SHM_NAME_MAX], bell[MMP__SHM_NAME_MAX], path[96];
  (void)state;

  assert_int_equal(mmp__debug_job_key(key), 0);
  for (int j = 0; j < mr_size(); j++) {
    mmp__shm_names(key, j, seg, bell);
    snprintf(path, sizeof(path), "/dev/shm%s", seg);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(bell, F_OK), -1);
  }
}

/* Every rank sends `n` bytes in `mode` to every other, tagged `tag`, and
 * checks what it gets. */
static void all_pairs(size_t n, unsigned mode, int tag) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mr_rank(), p = mr_size(), nq = 0;
  uint8_t *out = malloc(n + 1), *in = malloc((n + 1) * (size_t)p);
  uint8_t *want = malloc(n + 1);
  mmp_request_t **q = calloc(2 * (size_t)p, sizeof(*q));
  mmp_status_t *st = calloc(2 * (size_t)p, sizeof(*st));

  mr_fill(out, n, (uint64_t)me * 7919 + n + (uint64_t)tag);
  for (int j = 0; j < p; j++) {
    if (j == me)
      continue;
    assert_int_equal(mmp_irecv(in + (size_t)j * (n + 1), n, j, tag, w, &q[nq]),
                     0);
    nq++;
    assert_int_equal(mmp_isend_ex(out, n, j, tag, w, mode, &q[nq++]), 0);
  }
  assert_int_equal(mmp_waitall((size_t)nq, q, st), 0);
  for (int j = 0, k = 0; j < p; j++) {
    if (j == me)
      continue;
    assert_int_equal(st[k].bytes, n);
    assert_int_equal(st[k].source, j);
    k += 2;
    mr_fill(want, n, (uint64_t)j * 7919 + n + (uint64_t)tag);
    assert_memory_equal(in + (size_t)j * (n + 1), want, n);
  }
  free(out);
  free(in);
  free(want);
  free(q);
  free(st);
}

static void test_sizes_around_the_ring(void **state) {
  static const unsigned modes[] = {MMP_SEND_AUTO, MMP_SEND_EAGER,
                                   MMP_SEND_RNDV};
  /* Without shared memory (MINIMP_SHM=off) the sizes still make a test. */
  size_t r = stats().ring_bytes ? (size_t)stats().ring_bytes : 4096;
  size_t h = MMP__FRAME_HDR_SIZE;
  /* Around the ring (payload, and whole frame with its header), around
   * the single-copy threshold, and across several rings. */
  size_t sizes[] = {r - h - 1, r - h, r - h + 1, r - 1, r,
                    r + 1,     16383, 16384,     16385, 3 * r + 1};
  int tag = 100;
  (void)state;

  for (size_t m = 0; m < MMP__ARRAY_SIZE(modes); m++)
    for (size_t i = 0; i < MMP__ARRAY_SIZE(sizes); i++)
      all_pairs(sizes[i], modes[m], tag++);
  assert_int_equal(mr_barrier(), 0);
}

static void test_duplex_stream_wraps_the_rings(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mr_rank(), p = mr_size(), peer = me ^ 1, i;
  enum { N = 1500 };
  uint64_t before = stats().bytes_in, total = 0;
  uint8_t *out = malloc(70000), *in = malloc(70000), *want = malloc(70000);
  mmp_request_t *q[2];
  (void)state;

  /* Pairs (0,1), (2,3)... stream both ways at once, sizes up to past the
   * eager limit, each message checked and in order. */
  if (peer < p) {
    for (i = 0; i < N; i++) {
      size_t n = (size_t)((i * 7331) % 70000);
      mr_fill(out, n, (uint64_t)me * 100000 + (uint64_t)i);
      assert_int_equal(mmp_irecv(in, 70000, peer, 7, w, &q[0]), 0);
      assert_int_equal(mmp_isend(out, n, peer, 7, w, &q[1]), 0);
      assert_int_equal(mmp_waitall(2, q, NULL), 0);
      mr_fill(want, n, (uint64_t)peer * 100000 + (uint64_t)i);
      assert_memory_equal(in, want, n);
      total += n;
    }
    if (shm_mode() == MMP__SHM_RING) {
      /* Every byte crossed our rings, round and round. */
      mmp__shm_stats_t st = stats();
      assert_true(st.bytes_in - before >= total);
      assert_true(total > 50 * st.ring_bytes);
    }
  }
  free(out);
  free(in);
  free(want);
  assert_int_equal(mr_barrier(), 0);
}

static void test_thousands_outstanding(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mr_rank(), p = mr_size(), i;
  enum { N = 2000 };
  mmp_request_t **q = calloc(N, sizeof(*q));
  uint8_t *buf = malloc((size_t)N * 2100);
  (void)state;

  /* Rank 0 posts every send before rank 1 posts a receive, so sends wait
   * in queues, in rings and as unexpected messages all at once; then all
   * receives are posted before anyone waits. */
  if (me == 0) {
    for (i = 0; i < N; i++) {
      size_t n = (size_t)(i * 37) % 2100;
      mr_fill(buf + (size_t)i * 2100, n, (uint64_t)i);
      assert_int_equal(mmp_isend_ex(buf + (size_t)i * 2100, n, 1, 8, w,
                                    i % 3 == 0 ? MMP_SEND_RNDV : MMP_SEND_AUTO,
                                    &q[i]),
                       0);
    }
    assert_int_equal(mmp_send(NULL, 0, 1, 9, w), 0);
    assert_int_equal(mmp_waitall(N, q, NULL), 0);
  } else if (me == 1) {
    assert_int_equal(mmp_recv(NULL, 0, 0, 9, w, NULL), 0);
    for (i = 0; i < N; i++)
      assert_int_equal(mmp_irecv(buf + (size_t)i * 2100, 2100, 0, 8, w, &q[i]),
                       0);
    assert_int_equal(mmp_waitall(N, q, NULL), 0);
    for (i = 0; i < N; i++) {
      size_t n = (size_t)(i * 37) % 2100;
      uint8_t want[2100];
      mr_fill(want, n, (uint64_t)i);
      assert_memory_equal(buf + (size_t)i * 2100, want, n);
    }
  }
  (void)p;
  free(q);
  free(buf);
  assert_int_equal(mr_barrier(), 0);
}

static void test_rendezvous_by_single_copy(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  size_t n = (4u << 20) + 20000; /* every chunk over the threshold */
  uint8_t *b = malloc(n), *want = malloc(n);
  mmp__shm_stats_t st0 = stats(), st1;
  (void)state;

  if (mr_rank() == 0) {
    mr_fill(b, n, 77);
    assert_int_equal(mmp_send(b, n, 1, 10, w), 0);
  } else if (mr_rank() == 1) {
    assert_int_equal(mmp_recv(b, n, 0, 10, w, NULL), 0);
    mr_fill(want, n, 77);
    assert_memory_equal(b, want, n);
    st1 = stats();
    if (shm_mode() == MMP__SHM_ON) {
      /* Straight from rank 0's buffer into ours, none through a ring. */
      assert_int_equal(st1.pulled - st0.pulled, n);
      assert_true(st1.bytes_in - st0.bytes_in < 4096);
    } else if (shm_mode() == MMP__SHM_RING) {
      assert_int_equal(st1.pulled, 0);
      assert_true(st1.bytes_in - st0.bytes_in >= n);
    } else {
      assert_int_equal(st1.bytes_in, 0);
    }
  }
  free(b);
  free(want);
  assert_int_equal(mr_barrier(), 0);
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void test_sleeping_receiver_is_rung_awake(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__shm_stats_t st0 = stats(), st1;
  (void)state;

  if (mr_rank() == 0) {
    usleep(400 * 1000);
    assert_int_equal(mmp_send("x", 1, 1, 11, w), 0);
    st1 = stats();
    /* The receiver slept: our send rang its doorbell. */
    if (shm_mode() != MMP__SHM_OFF)
      assert_true(st1.bells > st0.bells);
  } else if (mr_rank() == 1) {
    double cpu0 = cpu_seconds(), t0 = mmp_wtime();
    char c;
    assert_int_equal(mmp_recv(&c, 1, 0, 11, w, NULL), 0);
    assert_true(mmp_wtime() - t0 > 0.3);
    assert_true(cpu_seconds() - cpu0 < 0.1);
    st1 = stats();
    if (shm_mode() != MMP__SHM_OFF)
      assert_true(st1.arms > st0.arms);
  }
  assert_int_equal(mr_barrier(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_local_peer_uses_shared_memory),
      cmocka_unit_test(test_no_name_is_left_after_init),
      cmocka_unit_test(test_sizes_around_the_ring),
      cmocka_unit_test(test_duplex_stream_wraps_the_rings),
      cmocka_unit_test(test_thousands_outstanding),
      cmocka_unit_test(test_rendezvous_by_single_copy),
      cmocka_unit_test(test_sleeping_receiver_is_rung_awake),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
