/* SPDX-License-Identifier: MIT */
/*
 * The symmetric and arrival-aware broadcasts across ranks (minimprun, p up
 * to 16), under arrival patterns made with short sleeps before the call:
 * balanced, random, one receiver very late, the root late, and every rank
 * the root serves first (virtual ranks 1, 2, 4, ...) late; in eager and
 * rendezvous modes, for several roots, checked byte for byte. After each
 * broadcast no message of it may be left in the collective context.
 * Also: symmetric pieces of every shape (sizes below p, not divisible by
 * the p - 1 receivers, tiny sub-segments), the sub-group broadcast
 * choice, the modes with one late receiver (in eager mode it finds the
 * data already buffered, arrival_nb's push or the flat root's send, and
 * in rendezvous mode it does not), inconsistent lengths, a gathering
 * window, a split communicator, malformed tuning variables, and
 * non-blocking arrival-aware broadcasts in flight beside others.
 * meson runs it with MINIMP_BCAST_SYM_MIN=0, so that the symmetric
 * algorithm itself runs for short messages too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

enum { PAT_BALANCED, PAT_RANDOM, PAT_ONE_LATE, PAT_ROOT_LATE, PAT_CHILDREN };
#define NPAT 5
#define LATE_US 80000
#define RANDOM_US 40000

static const char *const pat_names[NPAT] = {"balanced", "random", "one_late",
                                            "root_late", "children_late"};

/* How long rank `me` sleeps before the call in pattern `pat`. Every rank
 * computes the same numbers from `iter`. */
static unsigned delay_us(int pat, int me, int root, int p, uint64_t iter) {
  int v = (me - root + p) % p;
  uint64_t s = iter * 131 + (uint64_t)me;

  switch (pat) {
  case PAT_RANDOM:
    return (unsigned)(mr_next(&s) % RANDOM_US);
  case PAT_ONE_LATE:
    return p > 1 && v == 1 + (int)(iter % (uint64_t)(p - 1)) ? LATE_US : 0;
  case PAT_ROOT_LATE:
    return v == 0 ? LATE_US : 0;
  case PAT_CHILDREN:
    return v > 0 && (v & (v - 1)) == 0 ? LATE_US : 0;
  default:
    return 0;
  }
}

/* Nothing of the last collective may be left unreceived here. All ranks
 * call it together: the barriers keep the next collective's messages out. */
static void assert_context_clean(void) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__engine_t *e = mmp__eng;
  mmp_status_t st;
  int found;

  assert_int_equal(mr_barrier(), 0);
  mmp__lock(e);
  found =
      mmp__iprobe_locked(e, w, w->ctx + 1, MMP_ANY_SOURCE, MMP_ANY_TAG, &st);
  mmp__unlock(e);
  if (found)
    fail_msg("rank %d: a collective message was left: from %d tag %#x, %zu "
             "bytes",
             mr_rank(), st.source, (unsigned)st.tag, st.bytes);
  assert_int_equal(mr_barrier(), 0);
}

/* One broadcast of n bytes from root, after this rank's delay. */
static void run_one(const mmp_bcast_opts_t *o, int root, size_t n,
                    unsigned delay, uint64_t seed, const char *what) {
  mmp_comm_t *w = mmp_comm_world();
  uint8_t *buf = malloc(n + 1), *want = malloc(n + 1);
  int rc;

  assert_non_null(buf);
  assert_non_null(want);
  mr_fill(want, n, seed);
  if (mr_rank() == root)
    memcpy(buf, want, n);
  else
    memset(buf, 0x5a, n);
  if (delay > 0)
    usleep(delay);
  rc = mmp_bcast_ex(buf, n, root, w, o);
  if (rc != 0 || memcmp(buf, want, n) != 0) {
    size_t i = 0;
    while (i < n && buf[i] == want[i])
      i++;
    fail_msg("%s %s mode %u inner %s root %d n %zu seg %zu: rc %s, first "
             "bad byte %zu",
             o->algorithm, what, o->mode, o->inner ? o->inner : "auto", root, n,
             o->segment, mmp_err_name(rc), i);
  }
  free(buf);
  free(want);
}

/* The arrival-aware broadcasts. */
static const char *const arrival[] = {"arrival_b", "arrival_nb"};

static void test_arrival_patterns(void **state) {
  static const char *const algs[] = {"arrival_b", "arrival_nb", "symmetric"};
  static const unsigned modes[] = {MMP_SEND_EAGER, MMP_SEND_RNDV};
  int p = mr_size(), me = mr_rank(), pat, a, m;
  uint64_t iter = 0;
  (void)state;

  for (pat = 0; pat < NPAT; pat++)
    for (a = 0; a < 3; a++)
      for (m = 0; m < 2; m++, iter++) {
        mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
        int root = (int)((iter * 5) % (uint64_t)p);
        o.algorithm = algs[a];
        o.mode = modes[m];
        /* arrival_b alternates chain and scatter-allgather sub-groups. */
        if (strcmp(algs[a], "arrival_b") == 0 && pat % 2)
          o.inner = "scatter_ring";
        run_one(&o, root, 100003 + iter, delay_us(pat, me, root, p, iter),
                900 + iter, pat_names[pat]);
        assert_context_clean();
      }
}

/* With a gathering window the root waits before deciding from idle; the
 * result must be the same. */
static void test_arrival_window(void **state) {
  int p = mr_size(), me = mr_rank(), pat, a;
  uint64_t iter = 50;
  (void)state;

  assert_int_equal(setenv("MINIMP_BCAST_ARRIVAL_WINDOW_US", "3000", 1), 0);
  assert_int_equal(mmp__debug_config_reload(), 0); /* read at init only */
  for (pat = PAT_BALANCED; pat <= PAT_ONE_LATE; pat++)
    for (a = 0; a < 4; a++, iter++) {
      mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
      int root = (int)(iter % (uint64_t)p);
      o.algorithm = a % 2 ? "arrival_nb" : "arrival_b";
      o.mode = a < 2 ? MMP_SEND_EAGER : MMP_SEND_RNDV;
      run_one(&o, root, 50001, delay_us(pat, me, root, p, iter), iter,
              pat_names[pat]);
      assert_context_clean();
    }
  unsetenv("MINIMP_BCAST_ARRIVAL_WINDOW_US");
  assert_int_equal(mmp__debug_config_reload(), 0);
}

static void test_arrival_small_and_auto_mode(void **state) {
  int p = mr_size(), me = mr_rank(), a, k;
  static const size_t sizes[] = {0, 1, 3, 1000, 65536 + 7};
  uint64_t iter = 100;
  (void)state;

  for (a = 0; a < 2; a++)
    for (k = 0; k < 5; k++, iter++) {
      mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
      int root = (int)(iter % (uint64_t)p);
      o.algorithm = arrival[a];
      o.segment = k % 2 ? 1000 : 0;
      run_one(&o, root, sizes[k], delay_us(PAT_RANDOM, me, root, p, iter), iter,
              "small");
      assert_context_clean();
    }
}

static void test_symmetric_piece_shapes(void **state) {
  int p = mr_size(), me = mr_rank(), k, root;
  size_t sizes[] = {0,
                    1,
                    (size_t)(p > 2 ? p - 2 : 1),
                    (size_t)p - 1,
                    (size_t)p,
                    2 * (size_t)p + 1,
                    7919,
                    300007};
  /* Sub-segments: whole pieces, single bytes, odd sizes. */
  static const size_t segs[] = {0, 1, 7, 1, 0, 1, 64, 4096};
  (void)state;

  for (root = 0; root<p; root += p> 3 ? p / 3 : 1)
    for (k = 0; k < 8; k++) {
      mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
      o.algorithm = "symmetric";
      o.segment = segs[k];
      o.mode = k % 3 == 0 ? MMP_SEND_RNDV : MMP_SEND_AUTO;
      run_one(&o, root, sizes[k],
              delay_us(PAT_RANDOM, me, root, p, (uint64_t)k) / 4,
              (uint64_t)k * 17 + (uint64_t)root, "shapes");
    }
  assert_context_clean();
}

/* In eager mode, waits (up to 30 s) until the progress engine has
 * buffered n bytes here; in rendezvous mode, just lets 300 ms pass. */
static void arrive_late(unsigned mode, size_t n) {
  int k;

  if (mode != MMP_SEND_EAGER) {
    usleep(300000);
    return;
  }
  for (k = 0; k < 3000 && mmp__debug_unexp_peak() < n; k++)
    usleep(10000);
}

/* One very late receiver (the last rank). In eager mode the data reaches
 * it before it calls: arrival_nb's root pushes the message when nobody
 * else waits, the flat broadcast just sends. In rendezvous mode nothing is
 * pushed and nothing moves before it arrives. The peak of buffered bytes
 * only grows, so rendezvous runs first, and each eager check uses a larger
 * message than the last. */
static void test_modes_with_a_late_receiver(void **state) {
  static const char *const algs[] = {"arrival_nb", "flat"};
  int p = mr_size(), me = mr_rank(), m, a;
  (void)state;

  if (p < 3 || p > 8)
    skip();
  for (m = 0; m < 2; m++)
    for (a = 0; a < 2; a++) {
      mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
      size_t n = ((size_t)a + 1) * (1u << 20) + 5;
      uint64_t peak;
      o.algorithm = algs[a];
      o.mode = m == 0 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
      if (me == p - 1)
        arrive_late(o.mode, n);
      peak = mmp__debug_unexp_peak();
      if (me == p - 1 && m == 0 && peak >= n)
        fail_msg("%s rendezvous: %llu bytes buffered before arrival", algs[a],
                 (unsigned long long)peak);
      if (me == p - 1 && m == 1 && peak < n)
        fail_msg("%s eager: the data was not buffered (peak %llu)", algs[a],
                 (unsigned long long)peak);
      run_one(&o, 0, n, 0, 77 + (uint64_t)m, "late");
      assert_context_clean();
    }
}

/* The last rank passes a longer length: it alone fails, the others get
 * the data, and the next broadcast works. */
static void test_arrival_inconsistent_length(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), a, k, rc;
  /* 70,008 bytes cut into as many 4 KiB segments as 70,001; 8,199 into
   * one more than 8,192, which the late rank must still take as the root
   * cut them. */
  static const size_t sizes[] = {70001, 8192};
  uint8_t *buf, *want;
  (void)state;

  if (p < 3)
    skip();
  buf = malloc(70001 + 8);
  want = malloc(70001);
  mr_fill(want, 70001, 4242);
  for (k = 0; k < 2; k++)
    for (a = 0; a < 2; a++) {
      size_t n = sizes[k];
      mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
      o.algorithm = arrival[a];
      o.segment = 4096;
      memcpy(buf, want, n);
      if (me != 0)
        memset(buf, 0, n);
      /* Late, so that arrival_nb pushes to it before it arrives. */
      if (me == p - 1)
        usleep(50000);
      rc = mmp_bcast_ex(buf, me == p - 1 ? n + 7 : n, 0, w, &o);
      if (me == p - 1) {
        assert_int_equal(rc, MMP_EMISMATCH);
      } else {
        assert_int_equal(rc, 0);
        assert_memory_equal(buf, want, n);
      }
      assert_context_clean();
      run_one(&o, 1, 5000, 0, 11, "after mismatch");
    }
  free(buf);
  free(want);
}

static void test_arrival_ibcast_in_flight(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i;
  enum { K = 4, N = 150001 };
  static const char *const algs[K] = {"arrival_b", "symmetric", "arrival_nb",
                                      "binomial"};
  mmp_request_t *q[K];
  uint8_t *b[K], *want = malloc(N);
  (void)state;

  for (i = 0; i < K; i++) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    int root = (i * 3 + 1) % p;
    o.algorithm = algs[i];
    b[i] = malloc(N);
    mr_fill(want, N, 300 + (uint64_t)i);
    if (me == root)
      memcpy(b[i], want, N);
    else
      memset(b[i], 0, N);
    assert_int_equal(mmp_ibcast(b[i], N, root, w, &o, &q[i]), 0);
  }
  assert_int_equal(mmp_waitall(K, q, NULL), 0);
  for (i = 0; i < K; i++) {
    mr_fill(want, N, 300 + (uint64_t)i);
    assert_memory_equal(b[i], want, N);
    free(b[i]);
  }
  free(want);
  assert_context_clean();
}

/* On a sub-communicator whose ranks are not the world's, in reverse. */
static void test_on_a_split_communicator(void **state) {
  static const char *const algs[] = {"arrival_b", "arrival_nb", "symmetric"};
  mmp_comm_t *half = NULL;
  int me = mr_rank(), a, n, r;
  size_t len = 30011;
  uint8_t *buf = malloc(len), *want = malloc(len);
  (void)state;

  assert_int_equal(mmp_comm_split(mmp_comm_world(), me % 2, -me, &half), 0);
  n = mmp_comm_size(half);
  r = mmp_comm_rank(half);
  for (a = 0; a < 3; a++) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    int root = (a + 1) % n;
    o.algorithm = algs[a];
    mr_fill(want, len, 600 + (uint64_t)a);
    if (r == root)
      memcpy(buf, want, len);
    else
      memset(buf, 0, len);
    usleep(r == 0 ? 20000 : 0);
    assert_int_equal(mmp_bcast_ex(buf, len, root, half, &o), 0);
    assert_memory_equal(buf, want, len);
  }
  assert_int_equal(mmp_comm_free(&half), 0);
  free(buf);
  free(want);
  assert_context_clean();
}

/* arrival_nb's root returns once every receiver is served, while it still
 * receives the ARRIVED messages of receivers it pushed to; freeing the
 * communicator then must not free it under that receive (ASan). */
static void test_nb_root_frees_the_communicator_early(void **state) {
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp_comm_t *dup = NULL;
  int me = mr_rank();
  size_t len = 20000;
  uint8_t *buf = malloc(len), *want = malloc(len);
  (void)state;

  assert_int_equal(mmp_comm_dup(mmp_comm_world(), &dup), 0);
  o.algorithm = "arrival_nb";
  mr_fill(want, len, 700);
  if (me == 0)
    memcpy(buf, want, len);
  else
    memset(buf, 0, len);
  /* Late receivers: the root pushes to all of them and returns first. */
  usleep(me == 0 ? 0 : 50000);
  assert_int_equal(mmp_bcast_ex(buf, len, 0, dup, &o), 0);
  assert_memory_equal(buf, want, len);
  assert_int_equal(mmp_comm_free(&dup), 0);
  assert_null(dup);
  /* The late ARRIVED messages reach the root while it waits here. */
  assert_int_equal(mmp_barrier(mmp_comm_world()), 0);
  assert_int_equal(mmp_barrier(mmp_comm_world()), 0);
  free(buf);
  free(want);
}

static void test_arrival_names_and_bad_inner(void **state) {
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  char c = 0;
  (void)state;

  o.algorithm = "arrival_b";
  o.inner = "hierarchical";
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, mmp_comm_world(), &o), MMP_EINVAL);
  o.inner = "symmetric";
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, mmp_comm_world(), &o), MMP_EINVAL);
  /* Malformed tuning variables are rejected where they are read, at
   * init (test_match checks mmp_init), and leave the settings alone. */
  o.inner = NULL;
  assert_int_equal(setenv("MINIMP_BCAST_ARRIVAL_WINDOW_US", "soon", 1), 0);
  assert_int_equal(mmp__debug_config_reload(), MMP_EENV);
  unsetenv("MINIMP_BCAST_ARRIVAL_WINDOW_US");
  assert_int_equal(setenv("MINIMP_BCAST_SYM_MIN", "-3", 1), 0);
  assert_int_equal(mmp__debug_config_reload(), MMP_EENV);
  assert_int_equal(setenv("MINIMP_BCAST_SYM_MIN", "0", 1), 0);
  assert_int_equal(mmp__debug_config_reload(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arrival_names_and_bad_inner),
      cmocka_unit_test(test_arrival_patterns),
      cmocka_unit_test(test_arrival_window),
      cmocka_unit_test(test_arrival_small_and_auto_mode),
      cmocka_unit_test(test_symmetric_piece_shapes),
      cmocka_unit_test(test_modes_with_a_late_receiver),
      cmocka_unit_test(test_arrival_inconsistent_length),
      cmocka_unit_test(test_arrival_ibcast_in_flight),
      cmocka_unit_test(test_on_a_split_communicator),
      cmocka_unit_test(test_nb_root_frees_the_communicator_early),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
