/* SPDX-License-Identifier: MIT */
/*
 * Scan and exclusive scan under minimprun: every algorithm (and AUTO) x
 * every built-in type and operation, blocking and non-blocking, in place;
 * a non-commutative user operation (2x2 matrix products) in rank order;
 * count 0; rank 0's exclusive result left untouched; bad arguments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coll_ref.h"
#include "minimp.h"
#include "mr_common.h"

enum { N = 7, SENTINEL = 0x5a };

/* The segment every call asks for (0: the algorithm's): the linear chain
 * pipelines in segments of it. */
static size_t case_segment;

/* One call of the collective `coll` (MMP_COLL_SCAN or _EXSCAN) with
 * algorithm `alg` (NULL: AUTO), non-blocking when `nb`. */
static int scan_call(int coll, const char *alg, int nb, const void *in,
                     void *out, size_t n, mmp_type_t type, mmp_op_t op) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  mmp_request_t *r;
  int rc;

  o.algorithm = alg;
  o.segment = case_segment;
  if (!nb)
    return coll == MMP_COLL_SCAN ? mmp_scan_ex(in, out, n, type, op, w, &o)
                                 : mmp_exscan_ex(in, out, n, type, op, w, &o);
  rc = coll == MMP_COLL_SCAN ? mmp_iscan(in, out, n, type, op, w, &o, &r)
                             : mmp_iexscan(in, out, n, type, op, w, &o, &r);
  return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
}

/* Every algorithm of both collectives (and AUTO: i = -1) x every type and
 * operation, in four forms: blocking, non-blocking, in place of each. */
static void test_every_type_and_operation(void **state) {
  int p = mr_size(), me = mr_rank(), coll, i, type, op, r, form;
  (void)state;

  for (coll = MMP_COLL_SCAN; coll <= MMP_COLL_EXSCAN; coll++)
    for (i = -1; i < 0 || mr_alg(coll, i, NULL) != NULL; i++) {
      const char *alg = i < 0 ? NULL : mr_alg(coll, i, NULL);
      int ran = 0;
      for (type = MMP_BYTE; type < MMP_TYPE_BUILTIN_COUNT; type++)
        for (op = MMP_SUM; op < MMP_OP_BUILTIN_COUNT; op++) {
          uint8_t in[8 * N], out[8 * N], want[8 * N], mine[8 * N];
          size_t e, sz = mmp_type_size(type);
          int last = coll == MMP_COLL_SCAN ? me : me - 1;
          if (!ref_supported(type, op))
            continue;
          for (e = 0; e < N; e++) {
            int64_t acc = ref_val(type, op, 0, e);
            for (r = 1; r <= last; r++)
              acc = ref_op(op, acc, ref_val(type, op, r, e));
            ref_put(mine, type, e, ref_val(type, op, me, e));
            ref_put(want, type, e, acc);
          }
          for (form = 0; form < 4; form++) {
            int in_place = form >= 2, rc;
            memcpy(in, mine, sizeof(in));
            memset(out, SENTINEL, sizeof(out));
            if (in_place)
              memcpy(out, mine, N * sz);
            if (last < 0) /* rank 0's exclusive result: untouched */
              memcpy(want, out, sizeof(want));
            rc = scan_call(coll, alg, form & 1, in_place ? MMP_IN_PLACE : in,
                           out, N, type, op);
            if (rc != 0)
              fail_msg("%s %s type %d op %d form %d: %s", mmp_coll_name(coll),
                       alg ? alg : "auto", type, op, form, mmp_err_name(rc));
            if (memcmp(out, want, N * sz) != 0)
              fail_msg("%s %s type %d op %d form %d: wrong result at rank %d",
                       mmp_coll_name(coll), alg ? alg : "auto", type, op, form,
                       me);
            assert_memory_equal(in, mine, sizeof(in)); /* input kept */
          }
          ran++;
        }
      /* Every numeric type x SUM, PROD, MIN, MAX; integers x 5 more;
       * bytes x 3 bitwise. */
      assert_int_equal(ran, 10 * 4 + 8 * 5 + 3);
    }
  (void)p;
}

/* A non-commutative operation: rank i gets m_0 x m_1 x ... x m_i (its
 * exclusive scan: up to m_{i-1}), through every algorithm, in place too. */
static void test_noncommutative_rank_order(void **state) {
  int p = mr_size(), me = mr_rank(), r, coll, i, in_place;
  size_t n = (size_t)p + 3, e;
  mmp_type_t mat;
  mmp_op_t op;
  uint64_t *in = malloc(n * 32), *out = malloc(n * 32);
  uint64_t *inc = malloc(n * 32), *exc = malloc(n * 32);
  (void)state;

  assert_int_equal(mmp_type_contiguous(4, MMP_UINT64, &mat), 0);
  assert_int_equal(mmp_op_create(ref_matmul, 0, NULL, &op), 0);
  for (e = 0; e < n; e++) {
    uint64_t acc[4], m[4];
    ref_matrix(0, e, acc);
    memset(exc + 4 * e, SENTINEL, 32);
    for (r = 1; r <= me; r++) {
      memcpy(exc + 4 * e, acc, 32);
      ref_matrix(r, e, m);
      ref_matmul(acc, m, 1, mat, NULL); /* m = acc x m */
      memcpy(acc, m, sizeof(m));
    }
    memcpy(inc + 4 * e, acc, 32);
    ref_matrix(me, e, in + 4 * e);
  }
  for (coll = MMP_COLL_SCAN; coll <= MMP_COLL_EXSCAN; coll++)
    for (i = 0; mr_alg(coll, i, NULL) != NULL; i++)
      for (in_place = 0; in_place < 2; in_place++) {
        const uint64_t *want = coll == MMP_COLL_SCAN ? inc : exc;
        memset(out, SENTINEL, n * 32);
        if (in_place)
          memcpy(out, in, n * 32);
        if (coll == MMP_COLL_EXSCAN && me == 0) /* untouched */
          memcpy(exc, out, n * 32);
        assert_int_equal(scan_call(coll, mr_alg(coll, i, NULL), in_place,
                                   in_place ? MMP_IN_PLACE : in, out, n, mat,
                                   op),
                         0);
        if (memcmp(out, want, n * 32) != 0)
          fail_msg("%s %s: not the rank-order product at rank %d",
                   mmp_coll_name(coll), mr_alg(coll, i, NULL), me);
      }
  assert_int_equal(mmp_op_free(&op), 0);
  assert_int_equal(mmp_type_free(&mat), 0);
  free(in);
  free(out);
  free(inc);
  free(exc);
}

/* Count 0: nothing moves, NULL buffers allowed, every algorithm. */
static void test_count_zero(void **state) {
  int coll, i;
  (void)state;

  for (coll = MMP_COLL_SCAN; coll <= MMP_COLL_EXSCAN; coll++)
    for (i = 0; mr_alg(coll, i, NULL) != NULL; i++) {
      assert_int_equal(scan_call(coll, mr_alg(coll, i, NULL), 0, NULL, NULL, 0,
                                 MMP_INT32, MMP_SUM),
                       0);
      assert_int_equal(scan_call(coll, mr_alg(coll, i, NULL), 1, NULL, NULL, 0,
                                 MMP_INT32, MMP_SUM),
                       0);
    }
  assert_int_equal(
      mmp_scan(NULL, NULL, 0, MMP_DOUBLE, MMP_MAX, mmp_comm_world()), 0);
  assert_int_equal(
      mmp_exscan(NULL, NULL, 0, MMP_DOUBLE, MMP_MAX, mmp_comm_world()), 0);
}

/* The plain calls; bad arguments are errors on every rank alike. */
static void test_plain_calls_and_bad_arguments(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mr_rank(), x = me + 1, y = -1;
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  mmp_request_t *r;
  (void)state;

  assert_int_equal(mmp_scan(&x, &y, 1, MMP_INT32, MMP_SUM, w), 0);
  assert_int_equal(y, (me + 1) * (me + 2) / 2);
  y = -1;
  assert_int_equal(mmp_exscan(&x, &y, 1, MMP_INT32, MMP_SUM, w), 0);
  assert_int_equal(y, me == 0 ? -1 : me * (me + 1) / 2);
  assert_int_equal(mmp_scan(&x, &y, 1, MMP_INT32, 0, w), MMP_EINVAL);
  assert_int_equal(mmp_exscan(&x, NULL, 1, MMP_INT32, MMP_SUM, w), MMP_EINVAL);
  assert_int_equal(mmp_iscan(&x, &y, 1, MMP_INT32, MMP_SUM, w, NULL, NULL),
                   MMP_EINVAL);
  o.algorithm = "no_such_algorithm";
  assert_int_equal(mmp_iexscan(&x, &y, 1, MMP_INT32, MMP_SUM, w, &o, &r),
                   MMP_EINVAL);
  assert_int_equal(mmp_scan(&x, &y, 1, MMP_BYTE, MMP_SUM, w), MMP_EINVAL);
}

/* Both tests again with one-element (8 B) and one-matrix (32 B)
 * segments, so that the chain runs as a pipeline. */
static void test_in_segments(void **state) {
  case_segment = 8;
  test_every_type_and_operation(state);
  case_segment = 32;
  test_noncommutative_rank_order(state);
  case_segment = 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_type_and_operation),
      cmocka_unit_test(test_noncommutative_rank_order),
      cmocka_unit_test(test_in_segments),
      cmocka_unit_test(test_count_zero),
      cmocka_unit_test(test_plain_calls_and_bad_arguments),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
