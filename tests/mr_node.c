/* SPDX-License-Identifier: MIT */
/*
 * The shm rows (broadcast, reduce, allreduce, barrier through the node
 * segment), run by minimprun on one host at odd rank counts: every size
 * around the segment's chunk and the slice threshold, every root, every
 * type and operation, rank order for an operation that is not
 * commutative, mismatched arguments, a segment damaged by a rank, a rank
 * that never comes (a deadline), to a call or to the segment's making,
 * and AUTO's choice on one host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "coll_ref.h"
#include "mr_common.h"
#include "runtime/internal.h"

#define CHUNK MMP__NODE_CHUNK

/* Sizes in bytes around what the rows cut at: nothing, one byte, odd
 * sizes, a chunk and its neighbours, several chunks. */
static const size_t sizes[] = {0,
                               1,
                               13,
                               1000,
                               CHUNK - 1,
                               CHUNK,
                               CHUNK + 1,
                               3 * CHUNK + 17,
                               (1u << 20) + 5};
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };

static void test_bcast_every_size_and_root(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), root, k;
  const char *alg;
  uint8_t *buf = malloc(sizes[NSIZES - 1]), *want = malloc(sizes[NSIZES - 1]);
  (void)state;

  o.algorithm = "shm";
  for (k = 0; k < NSIZES; k++)
    for (root = 0; root < p; root++) {
      size_t n = sizes[k];
      /* Every root for small sizes, two for large ones. */
      if (n > CHUNK && root != 0 && root != p - 1)
        continue;
      mr_fill(want, n, 100 + (uint64_t)k * 31 + (uint64_t)root);
      if (me == root)
        memcpy(buf, want, n);
      else
        memset(buf, 0xa5, n);
      assert_int_equal(mmp_bcast_ex(buf, n, root, w, &o), 0);
      if (memcmp(buf, want, n) != 0)
        fail_msg("bcast %zu bytes from %d: wrong data on rank %d", n, root, me);
      assert_int_equal(mmp_bcast_last(w, &alg), 0);
      assert_string_equal(alg, "shm");
    }
  free(buf);
  free(want);
}

/* The reference: every rank's contribution combined in rank order. */
static void reference(int type, int op, size_t n, void *want) {
  int r, p = mr_size();
  size_t e;

  for (e = 0; e < n; e++) {
    int64_t acc = ref_val(type, op, 0, e);
    for (r = 1; r < p; r++)
      acc = ref_op(op, acc, ref_val(type, op, r, e));
    ref_put(want, type, e, acc);
  }
}

static void test_allreduce_every_type_op_and_size(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), type, op, k, ran = 0;
  size_t maxb = sizes[NSIZES - 1] + 64;
  uint8_t *in = malloc(maxb), *out = malloc(maxb), *want = malloc(maxb),
          *tmp = malloc(maxb);
  (void)state;

  o.algorithm = "shm";
  for (type = MMP_BYTE; type < MMP_TYPE_BUILTIN_COUNT; type++)
    for (op = MMP_SUM; op < MMP_OP_BUILTIN_COUNT; op++)
      for (k = 0; k < NSIZES; k++) {
        size_t es = mmp_type_size(type), n = sizes[k] / es, e;
        int rc;
        /* Every size for 4-byte integers and doubles, a few elsewhere. */
        if (type != MMP_INT32 && type != MMP_DOUBLE && k != 2 && k != 6)
          continue;
        for (e = 0; e < n; e++)
          ref_put(in, type, e, ref_val(type, op, me, e));
        rc = mmp_allreduce_ex(in, out, n, type, op, w, &o);
        if (rc == MMP_EINVAL)
          continue; /* an operation the type does not support */
        if (rc != 0)
          fail_msg("allreduce type %d op %d n %zu: %s", type, op, n,
                   mmp_err_name(rc));
        reference(type, op, n, want);
        if (memcmp(out, want, n * es) != 0)
          fail_msg("allreduce type %d op %d n %zu p %d: wrong result", type, op,
                   n, p);
        /* In place. */
        assert_int_equal(mmp_allreduce_ex(MMP_IN_PLACE, in, n, type, op, w, &o),
                         0);
        assert_memory_equal(in, want, n * es);
        ran++;
      }
  /* Every numeric type x SUM, PROD, MIN, MAX; integers x 5 more; at two
   * sizes each, and every size for INT32 and DOUBLE. */
  assert_int_equal(ran, (10 * 4 + 8 * 5 + 3) * 2 + (9 + 4) * (NSIZES - 2));
  free(in);
  free(out);
  free(want);
  free(tmp);
}

static void test_reduce_every_root(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), root, k;
  size_t maxb = sizes[NSIZES - 1] + 64;
  uint8_t *in = malloc(maxb), *out = malloc(maxb), *want = malloc(maxb),
          *tmp = malloc(maxb);
  (void)state;

  o.algorithm = "shm";
  for (k = 0; k < NSIZES; k++)
    for (root = 0; root < p; root++) {
      size_t n = sizes[k] / 8, e;
      if (sizes[k] > CHUNK && root != p / 2)
        continue;
      for (e = 0; e < n; e++)
        ref_put(in, MMP_INT64, e, ref_val(MMP_INT64, MMP_SUM, me, e));
      memset(out, 0, n * 8);
      assert_int_equal(mmp_reduce_ex(in, me == root ? out : NULL, n, MMP_INT64,
                                     MMP_SUM, root, w, &o),
                       0);
      if (me == root) {
        reference(MMP_INT64, MMP_SUM, n, want);
        assert_memory_equal(out, want, n * 8);
      }
    }
  free(in);
  free(out);
  free(want);
  free(tmp);
}

/* 2x2 matrices of uint64 modulo 2^64: a product that is not commutative. */
static void matmul(const void *in, void *inout, size_t count, mmp_type_t type,
                   void *ctx) {
  const uint64_t *a = in;
  uint64_t *b = inout;
  (void)type;
  (void)ctx;

  for (size_t i = 0; i < count; i++, a += 4, b += 4) {
    uint64_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                     a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    memcpy(b, c, sizeof(c));
  }
}

static void test_noncommutative_in_rank_order(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), r;
  /* Enough matrices that every rank combines a slice of its own. */
  size_t n = 3 * CHUNK / 32 + 5, e;
  uint64_t *in = malloc(n * 32), *out = malloc(n * 32), *want = malloc(n * 32),
           *m = malloc(n * 32);
  mmp_type_t mat;
  mmp_op_t op;
  (void)state;

  assert_int_equal(mmp_type_contiguous(4, MMP_UINT64, &mat), 0);
  assert_int_equal(mmp_op_create(matmul, 0, NULL, &op), 0);
  for (r = 0; r < p; r++) {
    uint64_t *dst = r == 0 ? want : m;
    for (e = 0; e < 4 * n; e++)
      dst[e] = (uint64_t)r * 1000003u + e * 7919u + 1;
    if (r == me)
      memcpy(in, dst, n * 32);
    if (r > 0) {
      /* want = want x m: the lower ranks on the left. */
      matmul(want, m, n, mat, NULL);
      memcpy(want, m, n * 32);
    }
  }
  o.algorithm = "shm";
  assert_int_equal(mmp_allreduce_ex(in, out, n, mat, op, w, &o), 0);
  assert_memory_equal(out, want, n * 32);
  o.algorithm = "shm";
  assert_int_equal(mmp_reduce_ex(in, out, n, mat, op, p - 1, w, &o), 0);
  if (me == p - 1)
    assert_memory_equal(out, want, n * 32);
  assert_int_equal(mmp_op_free(&op), 0);
  assert_int_equal(mmp_type_free(&mat), 0);
  free(in);
  free(out);
  free(want);
  free(m);
}

static double now_s(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Nobody leaves the barrier before the last rank entered it: each rank
 * enters late by its rank's milliseconds, and the time every rank leaves
 * (one clock: the ranks share a host) is after the latest entry. */
static void test_barrier_waits_for_the_last(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mr_rank(), round;
  (void)state;

  /* The first barrier makes the segment (AUTO on one host: the shm row). */
  assert_int_equal(mmp_barrier(w), 0);
  for (round = 0; round < 20; round++) {
    double in, out, last;
    usleep((useconds_t)(((me + round) % mr_size()) * 2000));
    in = now_s();
    assert_int_equal(mmp_barrier(w), 0);
    out = now_s();
    assert_int_equal(mmp_allreduce(&in, &last, 1, MMP_DOUBLE, MMP_MAX, w), 0);
    if (out < last)
      fail_msg("rank %d left %.6f s before the last rank came", me, last - out);
  }
}

/* Ranks that pass different arguments fail with MMP_EMISMATCH (all of
 * them in a reduction: each sees the others' signature), and the next
 * call works. */
static void test_mismatch_is_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), rc;
  double in[64], out[64];
  (void)state;

  if (p < 2)
    return;
  for (int i = 0; i < 64; i++)
    in[i] = me + i;
  o.algorithm = "shm";
  rc = mmp_allreduce_ex(in, out, me == 1 ? 40 : 41, MMP_DOUBLE, MMP_SUM, w, &o);
  assert_int_equal(rc, MMP_EMISMATCH);
  rc = mmp_allreduce_ex(in, out, 41, MMP_DOUBLE, me == 1 ? MMP_MAX : MMP_SUM, w,
                        &o);
  assert_int_equal(rc, MMP_EMISMATCH);
  assert_int_equal(mmp_allreduce_ex(in, out, 41, MMP_DOUBLE, MMP_SUM, w, &o),
                   0);
  assert_true(out[40] == (double)(p * (p - 1) / 2 + 40 * p));
}

/* A rank damages the segment of a communicator of its own: the others'
 * calls fail with MMP_EPROTO, not a crash or a hang, and so does every
 * later one on it, the damaging rank's included. */
static void test_damaged_segment_is_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *c;
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), rc, i, what;
  int64_t v = me, s;
  (void)state;

  if (p < 2)
    return;
  for (what = 0; what < 2; what++) {
    int *all = malloc((size_t)p * sizeof(*all));
    for (i = 0; i < p; i++)
      all[i] = i;
    assert_int_equal(mmp_comm_create(w, p, all, &c), 0);
    free(all);
    o.algorithm = "shm";
    assert_int_equal(mmp_allreduce_ex(&v, &s, 1, MMP_INT64, MMP_SUM, c, &o), 0);
    assert_int_equal(mr_barrier(), 0);
    /* Rank 0 raises a flag of its far beyond any call (0), or breaks the
     * header (1), and stays out of the next call. */
    if (me == 0)
      assert_int_equal(mmp__node_debug_damage(c, what), 0);
    else
      assert_int_equal(mmp_allreduce_ex(&v, &s, 1, MMP_INT64, MMP_SUM, c, &o),
                       MMP_EPROTO);
    assert_int_equal(mr_barrier(), 0);
    rc = mmp_allreduce_ex(&v, &s, 1, MMP_INT64, MMP_SUM, c, &o);
    assert_int_equal(rc, MMP_EPROTO);
    assert_int_equal(mr_barrier(), 0);
    assert_int_equal(mmp_comm_free(&c), 0);
  }
}

/* A rank that does not come: the others' barrier ends at the deadline,
 * and the late rank's own call finds the error the others left. */
static void test_missing_rank_times_out(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *c;
  int p = mr_size(), me = mr_rank(), rc, i;
  int *all = malloc((size_t)p * sizeof(*all));
  double t0;
  (void)state;

  if (p < 2) {
    free(all);
    return;
  }
  for (i = 0; i < p; i++)
    all[i] = i;
  assert_int_equal(mmp_comm_create(w, p, all, &c), 0);
  free(all);
  assert_int_equal(mmp_barrier(c), 0); /* makes the segment */
  assert_int_equal(mmp_comm_set_timeout(c, 300), 0);
  if (me == p - 1)
    usleep(1500 * 1000);
  t0 = now_s();
  rc = mmp_barrier(c);
  assert_int_equal(rc, MMP_ETIMEDOUT);
  if (me != p - 1 && now_s() - t0 > 1.2)
    fail_msg("rank %d waited %.2f s for a deadline of 0.3 s", me, now_s() - t0);
  assert_int_equal(mr_barrier(), 0);
  assert_int_equal(mmp_comm_free(&c), 0);
}

/* A rank that comes to the segment's making only after the deadline:
 * the others' first call, which makes the segment, ends at the deadline
 * instead of waiting for it, and so does the late rank's own; the
 * communicator then fails every collective, as after any timeout. */
static void test_missing_rank_at_setup_times_out(void **state) {
  mmp_comm_t *c;
  mmp_coll_opts_t o;
  int p = mr_size(), me = mr_rank(), rc;
  double t0;
  (void)state;

  if (p < 2)
    return;
  assert_int_equal(mmp_comm_dup(mmp_comm_world(), &c), 0);
  assert_int_equal(mmp_comm_set_timeout(c, 300), 0);
  assert_int_equal(
      mmp_coll_select(c, MMP_COLL_BARRIER, 0, MMP_BYTE, MMP_SUM, &o), 0);
  assert_string_equal(o.algorithm, "shm");
  assert_int_equal(mmp__node_debug_calls(c), 0); /* no segment yet */
  if (me == p - 1)
    usleep(1500 * 1000);
  t0 = now_s();
  rc = mmp_barrier(c);
  assert_int_equal(rc, MMP_ETIMEDOUT);
  if (now_s() - t0 > 1.2)
    fail_msg("rank %d waited %.2f s for a deadline of 0.3 s", me, now_s() - t0);
  assert_int_equal(mmp__node_debug_calls(c), 0);
  assert_int_equal(mmp_barrier(c), MMP_ETIMEDOUT);
  assert_int_equal(mr_barrier(), 0);
  assert_int_equal(mmp_comm_free(&c), 0);
}

/* AUTO on one host: blocking broadcasts, allreduces, reduces and
 * barriers run the shm rows (reductions up to 64 KiB), which the one-host
 * benchmark finds faster than the point-to-point algorithms AUTO ran there
 * before (docs/performance.md, "8 ranks: broadcast, allreduce and barrier
 * through the node segment"). node_n* give a saved profile whose burst
 * (4 MiB) a measurement on one host may report: AUTO credits no row with
 * it there, or the binomial tree would undercut the shm row. */
static void test_auto_picks_shm_on_one_host(void **state) {
  static const size_t bytes[] = {8, 1024, 64 * 1024, 1 << 20};
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o;
  double *buf = malloc(1 << 20), *out = malloc(1 << 20);
  uint64_t calls;
  const char *alg;
  int k;
  (void)state;

  memset(buf, 0, 1 << 20);
  for (k = 0; k < 4; k++) {
    size_t n = bytes[k] / 8;
    assert_int_equal(mmp_bcast(buf, bytes[k], 0, w), 0);
    assert_int_equal(mmp_bcast_last(w, &alg), 0);
    if (strcmp(alg, "shm") != 0)
      fail_msg("AUTO broadcast of %zu bytes ran %s", bytes[k], alg);
    /* At 1 MiB the segmented ring, which overlaps its arithmetic with
     * its transfers, may price below the row: not asserted. */
    if (k == 3)
      continue;
    assert_int_equal(
        mmp_coll_select(w, MMP_COLL_ALLREDUCE, n, MMP_DOUBLE, MMP_SUM, &o), 0);
    if (strcmp(o.algorithm, "shm") != 0)
      fail_msg("AUTO allreduce of %zu bytes: %s", bytes[k], o.algorithm);
    calls = mmp__node_debug_calls(w);
    assert_int_equal(mmp_allreduce(buf, out, n, MMP_DOUBLE, MMP_SUM, w), 0);
    assert_int_equal(mmp__node_debug_calls(w), calls + 1);
    assert_int_equal(
        mmp_coll_select(w, MMP_COLL_REDUCE, n, MMP_DOUBLE, MMP_SUM, &o), 0);
    assert_string_equal(o.algorithm, "shm");
  }
  calls = mmp__node_debug_calls(w);
  assert_int_equal(mmp_barrier(w), 0);
  assert_int_equal(mmp__node_debug_calls(w), calls + 1);
  /* Non-blocking calls never run them (they would block): named, they
   * are refused on every rank. */
  {
    mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
    mmp_request_t *r = NULL;
    bo.algorithm = "shm";
    assert_int_equal(mmp_ibcast(buf, 8, 0, w, &bo, &r), MMP_ENOTSUP);
    assert_null(r);
    assert_int_equal(mmp_ibarrier(w, &r), 0);
    assert_int_equal(mmp_wait(&r, NULL), 0);
    assert_int_equal(mmp__node_debug_calls(w), calls + 1);
  }
  free(buf);
  free(out);
}

/* With MINIMP_SHM=off the rows are refused on every rank, and AUTO runs
 * others. */
static void test_refused_without_shared_memory(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  double v = 1, s = 0;
  const char *alg;
  (void)state;

  bo.algorithm = "shm";
  assert_int_equal(mmp_bcast_ex(&v, 8, 0, w, &bo), MMP_ENOTSUP);
  o.algorithm = "shm";
  assert_int_equal(mmp_allreduce_ex(&v, &s, 1, MMP_DOUBLE, MMP_SUM, w, &o),
                   MMP_ENOTSUP);
  assert_int_equal(mmp_bcast(&v, 8, 0, w), 0);
  assert_int_equal(mmp_bcast_last(w, &alg), 0);
  assert_string_not_equal(alg, "shm");
  assert_int_equal(mmp_allreduce(&v, &s, 1, MMP_DOUBLE, MMP_SUM, w), 0);
  assert_true(s == (double)mr_size());
  assert_int_equal(mmp_barrier(w), 0);
  assert_int_equal(mmp__node_debug_calls(w), 0);
}

/* Ranks that disagree on MINIMP_SHM (the job's last rank runs with it
 * off, mr_node_mixed_env): they agree at the segment's making that it is
 * not used, so a named row is MMP_ENOTSUP on every rank, AUTO runs the
 * same other algorithm on every rank, and nothing waits for ever. Each
 * communicator's first call of the segment is the one that decides: an
 * AUTO barrier on one, a named broadcast on another. */
static void test_mixed_shared_memory_agrees(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *a, *b;
  mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  double v[4] = {1, 2, 3, 4}, s[4];
  const char *alg;
  int p = mr_size(), me = mr_rank(), k;
  (void)state;

  assert_int_equal(mmp_comm_dup(w, &a), 0);
  assert_int_equal(mmp_comm_dup(w, &b), 0);
  /* Every call here ends well before the communicators' 5 s: a rank left
   * waiting for a segment the others never make fails the test. */
  assert_int_equal(mmp_comm_set_timeout(a, 5000), 0);
  assert_int_equal(mmp_comm_set_timeout(b, 5000), 0);

  assert_int_equal(mmp_barrier(a), 0);
  assert_int_equal(mmp_barrier(a), 0);
  assert_int_equal(mmp_allreduce(v, s, 4, MMP_DOUBLE, MMP_SUM, a), 0);
  for (k = 0; k < 4; k++)
    assert_true(s[k] == v[k] * p);
  assert_int_equal(
      mmp_coll_select(a, MMP_COLL_ALLREDUCE, 4, MMP_DOUBLE, MMP_SUM, &o), 0);
  assert_string_not_equal(o.algorithm, "shm");
  assert_int_equal(mmp__node_debug_calls(a), 0);

  bo.algorithm = "shm";
  s[0] = me == 1 ? 42 : 0;
  assert_int_equal(mmp_bcast_ex(s, 8, 1, b, &bo), MMP_ENOTSUP);
  o = (mmp_coll_opts_t)MMP_COLL_OPTS_INIT;
  o.algorithm = "shm";
  assert_int_equal(mmp_allreduce_ex(v, s, 4, MMP_DOUBLE, MMP_SUM, b, &o),
                   MMP_ENOTSUP);
  s[0] = me == 1 ? 42 : 0;
  assert_int_equal(mmp_bcast(s, 8, 1, b), 0);
  assert_true(s[0] == 42);
  assert_int_equal(mmp_bcast_last(b, &alg), 0);
  assert_string_not_equal(alg, "shm");
  assert_int_equal(mmp_barrier(b), 0);
  assert_int_equal(mmp__node_debug_calls(b), 0);

  assert_int_equal(mmp_comm_free(&a), 0);
  assert_int_equal(mmp_comm_free(&b), 0);
}

/* MINIMP_<COLLECTIVE>_ALG=shm for all four (node_n3_env): blocking
 * calls run the rows; non-blocking ones, where the rows cannot run, run
 * AUTO's choice instead of failing, and touch no segment. */
static void test_env_row_steers_blocking_calls_only(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *r = NULL;
  double v = 1 + mr_rank(), s = 0, b = mr_rank() == 0 ? 7 : 0;
  const char *alg;
  uint64_t calls;
  int p = mr_size();
  (void)state;

  assert_int_equal(mmp_barrier(w), 0);
  calls = mmp__node_debug_calls(w);
  assert_true(calls >= 1);
  assert_int_equal(mmp_allreduce(&v, &s, 1, MMP_DOUBLE, MMP_SUM, w), 0);
  assert_true(s == p * (p + 1) / 2.0);
  assert_int_equal(mmp_bcast(&b, 8, 0, w), 0);
  assert_true(b == 7);
  assert_int_equal(mmp_bcast_last(w, &alg), 0);
  assert_string_equal(alg, "shm");
  assert_int_equal(mmp__node_debug_calls(w), calls + 2);

  s = 0;
  b = mr_rank() == 0 ? 9 : 0;
  assert_int_equal(mmp_iallreduce(&v, &s, 1, MMP_DOUBLE, MMP_SUM, w, NULL, &r),
                   0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_true(s == p * (p + 1) / 2.0);
  assert_int_equal(mmp_ireduce(&v, &s, 1, MMP_DOUBLE, MMP_SUM, 0, w, NULL, &r),
                   0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_int_equal(mmp_ibcast(&b, 8, 0, w, NULL, &r), 0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_true(b == 9);
  assert_int_equal(mmp_bcast_last(w, &alg), 0);
  assert_string_not_equal(alg, "shm");
  assert_int_equal(mmp_ibarrier(w, &r), 0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_int_equal(mmp__node_debug_calls(w), calls + 2);
}

/* MR_NODE_SHM_OFF_RANK=r: rank r (MINIMP_RANK, set by minimprun) runs
 * with MINIMP_SHM=off, the others with shared memory. 1 when set. */
static int mr_node_mixed_env(void) {
  const char *off = getenv("MR_NODE_SHM_OFF_RANK");
  const char *rank = getenv("MINIMP_RANK");

  if (off == NULL)
    return 0;
  if (rank != NULL && strcmp(off, rank) == 0)
    setenv("MINIMP_SHM", "off", 1);
  return 1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bcast_every_size_and_root),
      cmocka_unit_test(test_allreduce_every_type_op_and_size),
      cmocka_unit_test(test_reduce_every_root),
      cmocka_unit_test(test_noncommutative_in_rank_order),
      cmocka_unit_test(test_barrier_waits_for_the_last),
      cmocka_unit_test(test_mismatch_is_an_error),
      cmocka_unit_test(test_damaged_segment_is_an_error),
      cmocka_unit_test(test_missing_rank_times_out),
      cmocka_unit_test(test_missing_rank_at_setup_times_out),
      cmocka_unit_test(test_auto_picks_shm_on_one_host),
  };
  const struct CMUnitTest off[] = {
      cmocka_unit_test(test_refused_without_shared_memory),
  };
  const struct CMUnitTest mixed[] = {
      cmocka_unit_test(test_mixed_shared_memory_agrees),
  };
  const struct CMUnitTest env[] = {
      cmocka_unit_test(test_env_row_steers_blocking_calls_only),
  };
  const char *bcast_alg = getenv("MINIMP_BCAST_ALG");
  int rc, is_mixed = mr_node_mixed_env();

  if (mmp_init(NULL, NULL) != 0)
    return 1;
  if (is_mixed)
    rc = cmocka_run_group_tests(mixed, NULL, NULL);
  else if (bcast_alg != NULL && strcmp(bcast_alg, "shm") == 0)
    rc = cmocka_run_group_tests(env, NULL, NULL);
  else
    rc = mr_shm_off() ? cmocka_run_group_tests(off, NULL, NULL)
                      : cmocka_run_group_tests(tests, NULL, NULL);
  mmp_finalize();
  return rc;
}
