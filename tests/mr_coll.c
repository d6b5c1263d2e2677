/* SPDX-License-Identifier: MIT */
/*
 * Reduce, allreduce, reduce-scatter, gather(v), scatter(v), allgather(v),
 * alltoall(v) and ibarrier across ranks, run through minimprun for p in
 * {1, 2, 3, 5, 8, 13, 16}, against serial references computed by every
 * rank from the same seeds.
 *
 * What runs (kept to a few seconds per p, as the whole suite runs twice
 * under sanitizers on 2 cores):
 * - every algorithm of every collective at counts 0, 1, p - 1 and p + 3
 *   (not divisible by p), doubles summed, checked bit for bit against the
 *   reference where the sum is exact (small integers in doubles); and
 *   again all eager and all by rendezvous;
 * - every type x every operation it supports at 7 elements, with AUTO,
 *   exact (integers wrap, as the reference does);
 * - large vectors on a subset: 96 Ki floats for every allreduce and
 *   reduce algorithm, 24 KiB blocks for the data-movement ones; floats
 *   with random values: bit-identical on every rank and in a second run,
 *   and within p * eps * sum |x| of the serial sum;
 * - a non-commutative user operation (2 x 2 integer matrix product, a
 *   contiguous type of 4 int64) against the rank-order product, for every
 *   algorithm that keeps rank order;
 * - the in-place forms; several non-blocking calls in flight; ibarrier;
 * - inconsistent counts and operations end in MMP_EMISMATCH, and the
 *   next collective works; bad arguments;
 * - a small alltoall waiting for a late rank burns no CPU;
 * - AUTO's cached decisions equal the model's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collectives/core/state.h"
#include "minimp.h"
#include "coll_ref.h"
#include "mr_common.h"

/* Algorithm i of collective `coll`: 0 AUTO ("auto"), then the list
 * (mmp_coll_algs) from 1; NULL past its end. */
static const char *ALG(int coll, int i) {
  return i == 0 ? "auto" : mr_alg(coll, i - 1, NULL);
}

/* ---- References ---------------------------------------------------------- */

/* Rank r's element e of a vector for test `seed`: small integers, so
 * that double sums are exact whatever the order. */
static double small_val(uint64_t seed, int r, size_t e) {
  uint64_t s = seed * 7919 + (uint64_t)r * 104729 + e;
  return (double)(mr_next(&s) % 2001) - 1000.0;
}

static void fill_small(double *v, size_t n, uint64_t seed, int r) {
  size_t e;

  for (e = 0; e < n; e++)
    v[e] = small_val(seed, r, e);
}

static double small_sum(uint64_t seed, int p, size_t e) {
  double s = 0;
  int r;

  for (r = 0; r < p; r++)
    s += small_val(seed, r, e);
  return s;
}

static void expect_sums(const double *got, size_t n, uint64_t seed, int p,
                        size_t e0, const char *what, const char *alg) {
  size_t e;

  for (e = 0; e < n; e++)
    if (got[e] != small_sum(seed, p, e0 + e))
      fail_msg("%s alg %s n %zu: element %zu is %g, not %g", what, alg, n, e,
               got[e], small_sum(seed, p, e0 + e));
}

/* ---- Every algorithm, small counts ------------------------------------- */

/* The mode every case below runs its collectives in. */
static unsigned case_mode = MMP_SEND_AUTO;
/* reduce_case's opts.radix and opts.segment (0: the defaults). */
static int case_radix;
static size_t case_segment;

static void counts_of(int p, size_t c[4]) {
  c[0] = 0;
  c[1] = 1;
  c[2] = p > 1 ? (size_t)p - 1 : 2;
  c[3] = (size_t)p + 3;
}

static void allreduce_case(const char *alg, size_t n, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  double *in = malloc(n * 8 + 8), *out = malloc(n * 8 + 8);
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int rc;

  fill_small(in, n, seed, mr_rank());
  o.algorithm = alg;
  o.mode = case_mode;
  rc = mmp_allreduce_ex(in, out, n, MMP_DOUBLE, MMP_SUM, w, &o);
  if (rc != 0)
    fail_msg("allreduce %s n %zu: %s", alg, n, mmp_err_name(rc));
  expect_sums(out, n, seed, mr_size(), 0, "allreduce", alg);
  /* In place. */
  assert_int_equal(
      mmp_allreduce_ex(MMP_IN_PLACE, in, n, MMP_DOUBLE, MMP_SUM, w, &o), 0);
  expect_sums(in, n, seed, mr_size(), 0, "allreduce in place", alg);
  free(in);
  free(out);
}

static void reduce_case(const char *alg, size_t n, int root, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  double *in = malloc(n * 8 + 8), *out = malloc(n * 8 + 8);
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int me = mr_rank(), rc;

  fill_small(in, n, seed, me);
  o.algorithm = alg;
  o.mode = case_mode;
  o.radix = case_radix;
  o.segment = case_segment;
  rc = mmp_reduce_ex(in, me == root ? out : NULL, n, MMP_DOUBLE, MMP_SUM, root,
                     w, &o);
  if (rc != 0)
    fail_msg("reduce %s n %zu root %d: %s", alg, n, root, mmp_err_name(rc));
  if (me == root)
    expect_sums(out, n, seed, mr_size(), 0, "reduce", alg);
  /* In place at the root. */
  rc = mmp_reduce_ex(me == root ? MMP_IN_PLACE : in, me == root ? in : NULL, n,
                     MMP_DOUBLE, MMP_SUM, root, w, &o);
  assert_int_equal(rc, 0);
  if (me == root)
    expect_sums(in, n, seed, mr_size(), 0, "reduce in place", alg);
  free(in);
  free(out);
}

static void reduce_scatter_case(const char *alg, size_t n, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i;
  size_t total = n * (size_t)p, *counts = malloc((size_t)p * sizeof(size_t));
  size_t off = 0, vtotal = 0;
  double *in = malloc(total * 8 + 8), *out = malloc(total * 8 + 8);
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;

  o.algorithm = alg;
  o.mode = case_mode;
  fill_small(in, total, seed, me);
  assert_int_equal(
      mmp_reduce_scatter_block_ex(in, out, n, MMP_DOUBLE, MMP_SUM, w, &o), 0);
  expect_sums(out, n, seed, p, (size_t)me * n, "reduce_scatter_block", alg);
  /* Uneven counts, in place. */
  for (i = 0; i < p; i++) {
    counts[i] = n + (size_t)(i % 3);
    if (i < me)
      off += counts[i];
    vtotal += counts[i];
  }
  in = realloc(in, vtotal * 8 + 8);
  fill_small(in, vtotal, seed + 1, me);
  assert_int_equal(mmp_reduce_scatter_ex(MMP_IN_PLACE, in, counts, MMP_DOUBLE,
                                         MMP_SUM, w, &o),
                   0);
  expect_sums(in, counts[me], seed + 1, p, off, "reduce_scatter", alg);
  free(counts);
  free(in);
  free(out);
}

/* Byte k of the block rank `from` gives rank `to` (-1: everyone). */
static uint8_t bb(int from, int to, size_t k, uint64_t seed) {
  uint64_t s =
      seed ^ ((uint64_t)(from + 1) << 40) ^ ((uint64_t)(to + 2) << 20) ^ k;
  return (uint8_t)mr_next(&s);
}

static void check_block(const uint8_t *got, size_t n, int from, int to,
                        uint64_t seed, const char *what) {
  size_t k;

  for (k = 0; k < n; k++)
    if (got[k] != bb(from, to, k, seed))
      fail_msg("%s: byte %zu of rank %d's block is wrong", what, k, from);
}

static void gather_case(const char *alg, size_t n, int root, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i;
  uint8_t *mine = malloc(n + 1), *all = malloc(n * (size_t)p + 1);
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int rc;

  o.algorithm = alg;
  o.mode = case_mode;
  for (size_t k = 0; k < n; k++)
    mine[k] = bb(me, -1, k, seed);
  rc = mmp_gather_ex(mine, n, all, n, MMP_BYTE, root, w, &o);
  if (rc != 0)
    fail_msg("gather %s n %zu: %s", alg, n, mmp_err_name(rc));
  if (me == root)
    for (i = 0; i < p; i++)
      check_block(all + (size_t)i * n, n, i, -1, seed, "gather");
  free(mine);
  free(all);
}

static void scatter_case(const char *alg, size_t n, int root, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i;
  uint8_t *mine = calloc(n + 1, 1), *all = malloc(n * (size_t)p + 1);
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int rc;

  o.algorithm = alg;
  o.mode = case_mode;
  /* The root's own block in place. */
  if (me == root)
    for (i = 0; i < p; i++)
      for (size_t k = 0; k < n; k++)
        all[(size_t)i * n + k] = bb(root, i, k, seed);
  rc = mmp_scatter_ex(all, n, me == root ? MMP_IN_PLACE : mine, n, MMP_BYTE,
                      root, w, &o);
  if (rc != 0)
    fail_msg("scatter %s n %zu: %s", alg, n, mmp_err_name(rc));
  if (me != root)
    check_block(mine, n, root, me, seed, "scatter");
  free(mine);
  free(all);
}

static void allgather_case(const char *alg, size_t n, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i;
  size_t *cnt = malloc((size_t)p * sizeof(size_t)),
         *dsp = malloc((size_t)p * sizeof(size_t)), at = 0;
  uint8_t *all = malloc(3 * (n + 3) * (size_t)p + 1), *mine = malloc(n + 4);
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int rc;

  o.algorithm = alg;
  o.mode = case_mode;
  for (size_t k = 0; k < n + 3; k++)
    mine[k] = bb(me, -1, k, seed);
  rc = mmp_allgather_ex(mine, n, all, n, MMP_BYTE, w, &o);
  if (rc != 0)
    fail_msg("allgather %s n %zu: %s", alg, n, mmp_err_name(rc));
  for (i = 0; i < p; i++)
    check_block(all + (size_t)i * n, n, i, -1, seed, "allgather");
  /* allgatherv: uneven counts, gaps (the s-to-p form falls back to the
   * ring when asked by AUTO, and refuses gaps when asked for). */
  for (i = 0; i < p; i++) {
    cnt[i] = n + (size_t)(i % 3);
    dsp[i] = at;
    at += cnt[i] + (strcmp(alg, "s2p") == 0 ? 0 : (size_t)(i % 2));
  }
  memcpy(all + dsp[me], mine, cnt[me]); /* in place */
  rc = mmp_allgatherv(MMP_IN_PLACE, 0, all, cnt, dsp, MMP_BYTE, w);
  assert_int_equal(rc, 0);
  for (i = 0; i < p; i++)
    check_block(all + dsp[i], cnt[i], i, -1, seed, "allgatherv");
  free(cnt);
  free(dsp);
  free(all);
  free(mine);
}

static void alltoall_case(const char *alg, size_t n, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i;
  uint8_t *out = malloc(n * (size_t)p + 1), *in = malloc(n * (size_t)p + 1);
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  int rc;

  o.algorithm = alg;
  o.mode = case_mode;
  o.window = strcmp(alg, "linear") == 0 ? 2 : 0;
  for (i = 0; i < p; i++)
    for (size_t k = 0; k < n; k++)
      out[(size_t)i * n + k] = bb(me, i, k, seed);
  rc = mmp_alltoall_ex(out, n, in, n, MMP_BYTE, w, &o);
  if (rc != 0)
    fail_msg("alltoall %s n %zu: %s", alg, n, mmp_err_name(rc));
  for (i = 0; i < p; i++)
    check_block(in + (size_t)i * n, n, i, me, seed, "alltoall");
  /* In place. */
  rc = mmp_alltoall_ex(MMP_IN_PLACE, n, out, n, MMP_BYTE, w, &o);
  assert_int_equal(rc, 0);
  for (i = 0; i < p; i++)
    check_block(out + (size_t)i * n, n, i, me, seed, "alltoall in place");
  free(out);
  free(in);
}

static void test_every_algorithm(void **state) {
  int p = mr_size(), alg, k, coll;
  size_t c[4];
  (void)state;

  counts_of(p, c);
  for (coll = MMP_COLL_ALLREDUCE; coll <= MMP_COLL_ALLTOALL; coll++)
    for (alg = 0; ALG(coll, alg) != NULL; alg++)
      for (k = 0; k < 4; k++) {
        uint64_t seed = (uint64_t)coll * 1000 + (uint64_t)alg * 10 + k;
        switch (coll) {
        case MMP_COLL_ALLREDUCE:
          allreduce_case(ALG(coll, alg), c[k], seed);
          break;
        case MMP_COLL_REDUCE:
          reduce_case(ALG(coll, alg), c[k], k % 2 ? 0 : p - 1, seed);
          break;
        case MMP_COLL_REDUCE_SCATTER:
          reduce_scatter_case(ALG(coll, alg), c[k], seed);
          break;
        case MMP_COLL_GATHER:
          gather_case(ALG(coll, alg), c[k], k % 2 ? p / 2 : 0, seed);
          break;
        case MMP_COLL_SCATTER:
          scatter_case(ALG(coll, alg), c[k], k % 2 ? p / 2 : 0, seed);
          break;
        case MMP_COLL_ALLGATHER:
          allgather_case(ALG(coll, alg), c[k], seed);
          break;
        case MMP_COLL_ALLTOALL:
          alltoall_case(ALG(coll, alg), c[k], seed);
          break;
        }
      }
}

/* Every algorithm of every collective with every data message eager, then
 * with every one by rendezvous (moved only once the receiver is there). */
static void test_every_algorithm_both_modes(void **state) {
  int p = mr_size(), alg, m;
  static const unsigned modes[] = {MMP_SEND_EAGER, MMP_SEND_RNDV};
  size_t n = (size_t)p + 3;
  (void)state;

  for (m = 0; m < 2; m++) {
    case_mode = modes[m];
    for (alg = 1; ALG(MMP_COLL_ALLREDUCE, alg) != NULL; alg++)
      allreduce_case(ALG(MMP_COLL_ALLREDUCE, alg), n, 900 + (uint64_t)alg);
    for (alg = 1; ALG(MMP_COLL_REDUCE, alg) != NULL; alg++)
      reduce_case(ALG(MMP_COLL_REDUCE, alg), n, p / 2, 910 + (uint64_t)alg);
    for (alg = 1; ALG(MMP_COLL_REDUCE_SCATTER, alg) != NULL; alg++)
      reduce_scatter_case(ALG(MMP_COLL_REDUCE_SCATTER, alg), n,
                          920 + (uint64_t)alg);
    for (alg = 1; ALG(MMP_COLL_GATHER, alg) != NULL; alg++)
      gather_case(ALG(MMP_COLL_GATHER, alg), 5000, p - 1, 930 + (uint64_t)alg);
    for (alg = 1; ALG(MMP_COLL_SCATTER, alg) != NULL; alg++)
      scatter_case(ALG(MMP_COLL_SCATTER, alg), 5000, p - 1,
                   935 + (uint64_t)alg);
    for (alg = 1; ALG(MMP_COLL_ALLGATHER, alg) != NULL; alg++)
      allgather_case(ALG(MMP_COLL_ALLGATHER, alg), 5000, 940 + (uint64_t)alg);
    for (alg = 1; ALG(MMP_COLL_ALLTOALL, alg) != NULL; alg++)
      alltoall_case(ALG(MMP_COLL_ALLTOALL, alg), 5000, 950 + (uint64_t)alg);
  }
  case_mode = MMP_SEND_AUTO;
}

/* ---- Every type and operation ------------------------------------------- */

static void test_every_type_and_operation(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), type, op, r, ran = 0;
  enum { N = 7 };
  (void)state;

  for (type = MMP_BYTE; type < MMP_TYPE_BUILTIN_COUNT; type++)
    for (op = MMP_SUM; op < MMP_OP_BUILTIN_COUNT; op++) {
      uint8_t in[8 * N], out[8 * N], want[8 * N];
      size_t e;
      int rc;
      for (e = 0; e < N; e++) {
        int64_t acc = ref_val(type, op, 0, e);
        for (r = 1; r < p; r++)
          acc = ref_op(op, acc, ref_val(type, op, r, e));
        ref_put(in, type, e, ref_val(type, op, me, e));
        ref_put(want, type, e, acc);
      }
      rc = mmp_allreduce(in, out, N, type, op, w);
      if (rc == MMP_EINVAL)
        continue; /* an operation the type does not support */
      if (rc != 0 || memcmp(out, want, N * mmp_type_size(type)) != 0)
        fail_msg("allreduce type %d op %d: %s", type, op, mmp_err_name(rc));
      rc = mmp_reduce(in, out, N, type, op, p - 1, w);
      assert_int_equal(rc, 0);
      if (me == p - 1)
        assert_memory_equal(out, want, N * mmp_type_size(type));
      ran++;
    }
  /* Every numeric type x SUM, PROD, MIN, MAX; integers x 5 more. */
  assert_int_equal(ran, 10 * 4 + 8 * 5 + 3);
}

/* ---- Large vectors: floats, bit for bit -------------------------------- */

static void test_large_floats_deterministic(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), alg, coll;
  size_t n = 96 * 1024, e;
  float *in = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
  uint64_t *sums = malloc((size_t)p * 8), mine;
  (void)state;

  for (e = 0; e < n; e++) {
    uint64_t s = (uint64_t)me * 1000003 + e;
    in[e] = (float)((double)(mr_next(&s) >> 11) / 9007199254740992.0 - 0.5);
  }
  for (coll = MMP_COLL_ALLREDUCE; coll <= MMP_COLL_REDUCE; coll++)
    for (alg = 1; ALG(coll, alg) != NULL; alg++) {
      mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
      o.algorithm = ALG(coll, alg);
      o.mode = case_mode;
      if (coll == MMP_COLL_ALLREDUCE) {
        assert_int_equal(mmp_allreduce_ex(in, a, n, MMP_FLOAT, MMP_SUM, w, &o),
                         0);
        assert_int_equal(mmp_allreduce_ex(in, b, n, MMP_FLOAT, MMP_SUM, w, &o),
                         0);
      } else {
        assert_int_equal(mmp_reduce_ex(in, a, n, MMP_FLOAT, MMP_SUM, 0, w, &o),
                         0);
        assert_int_equal(mmp_reduce_ex(in, b, n, MMP_FLOAT, MMP_SUM, 0, w, &o),
                         0);
        if (me != 0)
          continue;
      }
      /* The same bits in both runs, and within the bound of the serial
       * sum: p eps sum |x| (each |x| < 0.5). */
      assert_memory_equal(a, b, n * 4);
      for (e = 0; e < n; e += 97) {
        double ref = 0, bound = 0;
        for (int r = 0; r < p; r++) {
          uint64_t s = (uint64_t)r * 1000003 + e;
          float x =
              (float)((double)(mr_next(&s) >> 11) / 9007199254740992.0 - 0.5);
          ref += x;
          bound += fabs(x);
        }
        if (fabs(a[e] - ref) > p * FLT_EPSILON * bound + 1e-30)
          fail_msg("%s: element %zu %g, serial %g", ALG(coll, alg), e, a[e],
                   ref);
      }
      if (coll != MMP_COLL_ALLREDUCE)
        continue;
      /* Every rank the same bits. */
      mine = mr_checksum(a, n * 4);
      assert_int_equal(mmp_allgather(&mine, 1, sums, 1, MMP_UINT64, w), 0);
      for (int r = 0; r < p; r++)
        if (sums[r] != mine)
          fail_msg("%s: rank %d's result differs", ALG(coll, alg), r);
    }
  free(in);
  free(a);
  free(b);
  free(sums);
}

static void test_large_blocks(void **state) {
  int alg, p = mr_size();
  size_t n = p > 8 ? 8 * 1024 : 24 * 1024;
  (void)state;

  for (alg = 1; ALG(MMP_COLL_ALLGATHER, alg) != NULL; alg++)
    allgather_case(ALG(MMP_COLL_ALLGATHER, alg), n, 5);
  for (alg = 1; ALG(MMP_COLL_ALLTOALL, alg) != NULL; alg++)
    alltoall_case(ALG(MMP_COLL_ALLTOALL, alg), n, 6);
  for (alg = 1; ALG(MMP_COLL_GATHER, alg) != NULL; alg++)
    gather_case(ALG(MMP_COLL_GATHER, alg), n, p - 1, 7);
  for (alg = 1; ALG(MMP_COLL_SCATTER, alg) != NULL; alg++)
    scatter_case(ALG(MMP_COLL_SCATTER, alg), n, p - 1, 7);
  for (alg = 1; ALG(MMP_COLL_REDUCE_SCATTER, alg) != NULL; alg++)
    reduce_scatter_case(ALG(MMP_COLL_REDUCE_SCATTER, alg), n, 8);
}

/* ---- A non-commutative operation ---------------------------------------- */

/* 2 x 2 integer matrices, inout = in x inout (wrapping). */
static void test_noncommutative_rank_order(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), r, coll, alg;
  size_t n = (size_t)p + 3, e;
  mmp_type_t mat;
  mmp_op_t op;
  uint64_t *in = malloc(n * 32), *out = malloc(n * 32), *want = malloc(n * 32);
  (void)state;

  assert_int_equal(mmp_type_contiguous(4, MMP_UINT64, &mat), 0);
  assert_int_equal(mmp_type_size(mat), 32);
  assert_int_equal(mmp_op_create(ref_matmul, 0, NULL, &op), 0);
  for (e = 0; e < n; e++) {
    uint64_t acc[4], m[4];
    ref_matrix(0, e, acc);
    for (r = 1; r < p; r++) {
      ref_matrix(r, e, m);
      /* acc = acc x m: the lower ranks on the left. */
      ref_matmul(acc, m, 1, mat, NULL);
      memcpy(acc, m, sizeof(m));
    }
    memcpy(want + 4 * e, acc, 32);
    ref_matrix(me, e, in + 4 * e);
  }
  for (coll = MMP_COLL_ALLREDUCE; coll <= MMP_COLL_REDUCE; coll++)
    for (alg = 0; ALG(coll, alg) != NULL; alg++) {
      mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
      int rc;
      o.algorithm = ALG(coll, alg);
      o.mode = case_mode;
      /* The k-nomial reduce at a radix that is not the binomial tree's. */
      o.radix = coll == MMP_COLL_REDUCE && strcmp(o.algorithm, "knomial") == 0
                    ? 3
                    : 0;
      memset(out, 0, n * 32);
      rc = coll == MMP_COLL_ALLREDUCE
               ? mmp_allreduce_ex(in, out, n, mat, op, w, &o)
               : mmp_reduce_ex(in, out, n, mat, op, p / 2, w, &o);
      if (rc == MMP_EINVAL)
        continue; /* the ring does not keep rank order */
      if (rc != 0)
        fail_msg("%s: %s", ALG(coll, alg), mmp_err_name(rc));
      if ((coll == MMP_COLL_ALLREDUCE || me == p / 2) &&
          memcmp(out, want, n * 32) != 0)
        fail_msg("%s %s: not the rank-order product",
                 coll == 1 ? "allreduce" : "reduce", ALG(coll, alg));
    }
  /* Reduce-scatter: pairwise keeps rank order; AUTO picks it. */
  {
    uint64_t *v = malloc(n * (size_t)p * 32);
    for (e = 0; e < n * (size_t)p; e++)
      ref_matrix(me, e % n, v + 4 * e);
    assert_int_equal(mmp_reduce_scatter_block(v, out, n, mat, op, w), 0);
    assert_memory_equal(out, want, n * 32);
    free(v);
  }
  {
    mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
    o.algorithm = "ring";
    assert_int_equal(mmp_allreduce_ex(in, out, n, mat, op, w, &o),
                     p > 0 ? MMP_EINVAL : 0);
  }
  assert_int_equal(mmp_op_free(&op), 0);
  assert_int_equal(mmp_type_free(&mat), 0);
  free(in);
  free(out);
  free(want);
}

/* mmp_reduce_local: the built-in arithmetic, and a user operation with
 * `in` on the left. */
static void test_reduce_local(void **state) {
  int32_t a[3] = {1, -2, 3}, b[3] = {10, 20, 30};
  uint64_t l[4], r[4], want[4];
  mmp_type_t mat;
  mmp_op_t op;
  (void)state;

  assert_int_equal(mmp_reduce_local(a, b, 3, MMP_INT32, MMP_SUM), 0);
  assert_int_equal(b[0], 11);
  assert_int_equal(b[1], 18);
  assert_int_equal(b[2], 33);
  assert_int_equal(mmp_reduce_local(a, b, 3, MMP_INT32, MMP_MIN), 0);
  assert_int_equal(b[1], -2);
  assert_int_equal(mmp_reduce_local(a, b, 0, MMP_INT32, MMP_SUM), 0);
  assert_int_equal(mmp_reduce_local(NULL, b, 1, MMP_INT32, MMP_SUM),
                   MMP_EINVAL);
  assert_int_equal(mmp_reduce_local(a, b, 3, MMP_FLOAT, MMP_BAND), MMP_EINVAL);
  assert_int_equal(mmp_reduce_local(a, b, 3, MMP_INT32, 0), MMP_EINVAL);
  /* Matrix products do not commute: r becomes l x r. */
  assert_int_equal(mmp_type_contiguous(4, MMP_UINT64, &mat), 0);
  assert_int_equal(mmp_op_create(ref_matmul, 0, NULL, &op), 0);
  ref_matrix(1, 0, l);
  ref_matrix(2, 0, r);
  memcpy(want, r, sizeof(want));
  ref_matmul(l, want, 1, mat, NULL);
  assert_int_equal(mmp_reduce_local(l, r, 1, mat, op), 0);
  assert_memory_equal(r, want, sizeof(want));
  assert_int_equal(mmp_op_free(&op), 0);
  assert_int_equal(mmp_type_free(&mat), 0);
}

/* ---- Non-blocking, mismatches, bad arguments ----------------------------- */

static void test_nonblocking_in_flight(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), k;
  enum { K = 4, N = 1000 };
  double in[K][N], out[K][N];
  mmp_request_t *r[K + 2];
  int32_t g[64], one = me;
  (void)state;

  for (k = 0; k < K; k++) {
    mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
    o.algorithm = ALG(MMP_COLL_ALLREDUCE, k + 1) != NULL
                      ? ALG(MMP_COLL_ALLREDUCE, k + 1)
                      : "ring";
    fill_small(in[k], N, 77 + (uint64_t)k, me);
    assert_int_equal(
        mmp_iallreduce(in[k], out[k], N, MMP_DOUBLE, MMP_SUM, w, &o, &r[k]), 0);
  }
  assert_int_equal(mmp_ibarrier(w, &r[K]), 0);
  assert_int_equal(mmp_iallgather(&one, 1, g, 1, MMP_INT32, w, NULL, &r[K + 1]),
                   0);
  assert_int_equal(mmp_waitall(K + 2, r, NULL), 0);
  for (k = 0; k < K; k++)
    expect_sums(out[k], N, 77 + (uint64_t)k, p, 0, "iallreduce",
                ALG(MMP_COLL_ALLREDUCE, k + 1));
  for (k = 0; k < p; k++)
    assert_int_equal(g[k], k);
}

/* The k-nomial reduce at every kind of radix (2: the binomial tree; 16:
 * one level up to 16 ranks), whole and in segments of two elements. */
static void test_reduce_knomial_radices(void **state) {
  static const int radices[] = {2, 3, 4, 16};
  int p = mr_size(), i, k, s;
  size_t c[4];
  (void)state;

  counts_of(p, c);
  for (i = 0; i < 4; i++)
    for (s = 0; s < 2; s++)
      for (k = 0; k < 4; k++) {
        case_radix = radices[i];
        case_segment = s ? 16 : 0;
        reduce_case("knomial", c[k], k % 2 ? 0 : p - 1,
                    7000 + (uint64_t)(i * 8 + s * 4 + k));
      }
  case_radix = 0;
  case_segment = 0;
}

static void test_inconsistent_arguments_are_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), alg, rc;
  double in[64], out[64];
  (void)state;

  if (p < 2)
    return;
  fill_small(in, 64, 3, me);
  for (alg = 1; ALG(MMP_COLL_ALLREDUCE, alg) != NULL; alg++) {
    mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
    o.algorithm = ALG(MMP_COLL_ALLREDUCE, alg);
    o.mode = case_mode;
    /* Rank 1 passes another count, then another operation. */
    rc = mmp_allreduce_ex(in, out, me == 1 ? 40 : 41, MMP_DOUBLE, MMP_SUM, w,
                          &o);
    if (me == 1 && rc != MMP_EMISMATCH)
      fail_msg("%s: rank 1 got %s", o.algorithm, mmp_err_name(rc));
    rc = mmp_allreduce_ex(in, out, 41, MMP_DOUBLE, me == 1 ? MMP_MAX : MMP_SUM,
                          w, &o);
    if (me == 1 && rc != MMP_EMISMATCH)
      fail_msg("%s op: rank 1 got %s", o.algorithm, mmp_err_name(rc));
    /* The next one works everywhere. */
    assert_int_equal(mr_barrier(), 0);
    assert_int_equal(mmp_allreduce_ex(in, out, 41, MMP_DOUBLE, MMP_SUM, w, &o),
                     0);
    expect_sums(out, 41, 3, p, 0, "after a mismatch", o.algorithm);
  }
  /* Gather: a block of another size reaches the root as a mismatch. */
  rc = mmp_gather(in, me == p - 1 ? 3 : 4, out, 4, MMP_DOUBLE, 0, w);
  if (me == 0)
    assert_int_equal(rc, MMP_EMISMATCH);
  assert_int_equal(mr_barrier(), 0);
}

/* Scatter: rank 2 names root 1 where the others name 0. Its receive is
 * from any rank, so it learns the true call from its parent there, fails
 * with MMP_EMISMATCH and passes the failure on to its own children in
 * that tree, instead of everyone waiting for ever. */
static void test_scatter_wrong_root_is_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), alg, rc, i;
  double *in, out[4];
  (void)state;

  if (p < 3)
    return;
  in = calloc(4 * (size_t)p, sizeof(double));
  assert_non_null(in);
  for (i = 0; i < 4 * p; i++)
    in[i] = i;
  for (alg = 1; ALG(MMP_COLL_SCATTER, alg) != NULL; alg++) {
    mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
    o.algorithm = ALG(MMP_COLL_SCATTER, alg);
    o.mode = case_mode;
    rc = mmp_scatter_ex(in, 4, out, 4, MMP_DOUBLE, me == 2 ? 1 : 0, w, &o);
    if (me == 2 && rc != MMP_EMISMATCH)
      fail_msg("%s: rank 2 got %s", o.algorithm, mmp_err_name(rc));
    if (rc != 0 && rc != MMP_EMISMATCH)
      fail_msg("%s: rank %d got %s", o.algorithm, me, mmp_err_name(rc));
    /* The next one works everywhere. */
    assert_int_equal(mr_barrier(), 0);
    assert_int_equal(mmp_scatter_ex(in, 4, out, 4, MMP_DOUBLE, 0, w, &o), 0);
    for (i = 0; i < 4; i++)
      assert_true(out[i] == (double)(4 * me + i));
  }
  free(in);
}

/* ibarrier is a barrier: rank 1 enters 300 ms after the others, and
 * nobody may leave before it entered. Each rank times its own call from
 * a blocking barrier's exit, whose spread is far below the margin. */
static void test_ibarrier_waits_for_the_last_rank(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *r;
  double t0;
  (void)state;

  if (mr_size() < 2)
    return;
  assert_int_equal(mr_barrier(), 0);
  t0 = mmp_wtime();
  if (mr_rank() == 1)
    usleep(300 * 1000);
  assert_int_equal(mmp_ibarrier(w, &r), 0);
  assert_int_equal(mmp_wait(&r, MMP_STATUS_IGNORE), 0);
  if (mr_rank() != 1 && mmp_wtime() - t0 < 0.15)
    fail_msg("rank %d left ibarrier %.3f s after the start, before rank 1 "
             "entered at 0.3 s",
             mr_rank(), mmp_wtime() - t0);
}

/* Never run: a non-commutative operation whose flag alone matters to
 * AUTO's choice. */
static void noop_user(const void *in, void *inout, size_t count,
                      mmp_type_t type, void *ctx) {
  (void)in;
  (void)inout;
  (void)count;
  (void)type;
  (void)ctx;
}

/* AUTO's decisions are cached per communicator: for every collective,
 * size and operation class, the decision served from the cache equals
 * the one the model gives with the cache empty, also after other calls
 * have filled (and evicted from) its slots; and a new model generation
 * makes every cached decision stale. */
static void test_auto_cache_matches_model(void **state) {
  static const size_t counts[] = {0, 1, 3, 100, 1000, 4096, 70000, 1 << 20};
  enum { NC = sizeof(counts) / sizeof(counts[0]) };
  mmp_comm_t *w = mmp_comm_world();
  mmp__coll_state_t *st;
  mmp_coll_opts_t fresh[MMP_COLL_ALLTOALL + 1][NC][2], o;
  mmp_op_t nc = 0;
  unsigned hits;
  int coll, k, n;
  (void)state;

  assert_int_equal(mmp_op_create(noop_user, 0, NULL, &nc), 0);
  st = mmp__coll_state(w);
  assert_non_null(st);
  for (coll = MMP_COLL_ALLREDUCE; coll <= MMP_COLL_ALLTOALL; coll++)
    for (k = 0; k < NC; k++)
      for (n = 0; n < 2; n++) {
        int reducing = coll <= MMP_COLL_REDUCE_SCATTER;
        mmp_op_t op = !reducing ? 0 : n ? nc : MMP_SUM;
        mmp_type_t t = n && reducing ? MMP_INT64 : MMP_FLOAT;
        if (n && !reducing)
          continue;
        /* Uncached: the model's answer. */
        memset(st->autos, 0, sizeof(st->autos));
        assert_int_equal(
            mmp_coll_select(w, coll, counts[k], t, op, &fresh[coll][k][n]), 0);
        hits = st->auto_hits;
        assert_int_equal(mmp_coll_select(w, coll, counts[k], t, op, &o), 0);
        assert_int_equal(st->auto_hits, hits + 1);
        assert_string_equal(o.algorithm, fresh[coll][k][n].algorithm);
        assert_int_equal(o.segment, fresh[coll][k][n].segment);
      }
  /* Everything again, with the slots shared and evicted in turn. */
  for (coll = MMP_COLL_ALLREDUCE; coll <= MMP_COLL_ALLTOALL; coll++)
    for (k = NC - 1; k >= 0; k--)
      for (n = 0; n < 2; n++) {
        int reducing = coll <= MMP_COLL_REDUCE_SCATTER;
        if (n && !reducing)
          continue;
        assert_int_equal(mmp_coll_select(w, coll, counts[k],
                                         n ? MMP_INT64 : MMP_FLOAT,
                                         !reducing ? 0
                                         : n       ? nc
                                                   : MMP_SUM,
                                         &o),
                         0);
        assert_string_equal(o.algorithm, fresh[coll][k][n].algorithm);
        assert_int_equal(o.segment, fresh[coll][k][n].segment);
      }
  /* A changed model: the cached decision is not used. */
  assert_int_equal(
      mmp_coll_select(w, MMP_COLL_ALLREDUCE, 1000, MMP_FLOAT, MMP_SUM, &o), 0);
  st->net_gen++;
  hits = st->auto_hits;
  assert_int_equal(
      mmp_coll_select(w, MMP_COLL_ALLREDUCE, 1000, MMP_FLOAT, MMP_SUM, &o), 0);
  assert_int_equal(st->auto_hits, hits);
  assert_int_equal(mmp_op_free(&nc), 0);
}

static double cpu_seconds(void) {
  struct rusage ru;

  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* A small alltoall's waits poll (its messages are not bulk), but a wait
 * for a rank that is late still ends up asleep: while rank 0 enters half
 * a second late, every other rank uses less than 0.1 s of CPU (the whole
 * process, its progress thread included). */
static void test_small_collective_wait_sleeps(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank();
  uint8_t *in = calloc((size_t)p, 8), *out = calloc((size_t)p, 8);
  double cpu0, t0;
  (void)state;

  assert_non_null(in);
  assert_non_null(out);
  if (p < 2) {
    free(in);
    free(out);
    return;
  }
  assert_int_equal(mr_barrier(), 0);
  cpu0 = cpu_seconds();
  t0 = mmp_wtime();
  if (me == 0)
    usleep(500 * 1000);
  assert_int_equal(mmp_alltoall(in, 8, out, 8, MMP_BYTE, w), 0);
  if (me != 0) {
    assert_true(mmp_wtime() - t0 > 0.4);
    if (cpu_seconds() - cpu0 >= 0.1)
      fail_msg("rank %d used %.3f s of CPU waiting 0.5 s for rank 0", me,
               cpu_seconds() - cpu0);
  }
  free(in);
  free(out);
}

static void test_bad_arguments(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  double x[4] = {0}, y[4];
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  mmp_request_t *r = (mmp_request_t *)&o;
  (void)state;

  assert_int_equal(mmp_allreduce(NULL, y, 4, MMP_DOUBLE, MMP_SUM, w),
                   MMP_EINVAL);
  assert_int_equal(mmp_allreduce(x, y, 4, 99, MMP_SUM, w), MMP_EINVAL);
  assert_int_equal(mmp_allreduce(x, y, 4, MMP_DOUBLE, MMP_BAND, w), MMP_EINVAL);
  assert_int_equal(mmp_allreduce(x, y, 4, MMP_DOUBLE, 0, w), MMP_EINVAL);
  assert_int_equal(mmp_allreduce(x, y, 4, MMP_BYTE, MMP_SUM, w), MMP_EINVAL);
  assert_int_equal(mmp_allreduce(x, y, 4, MMP_DOUBLE, MMP_SUM, NULL),
                   MMP_ECOMM);
  assert_int_equal(mmp_reduce(x, y, 4, MMP_DOUBLE, MMP_SUM, mr_size(), w),
                   MMP_ERANK);
  o.algorithm = "nope";
  assert_int_equal(mmp_iallreduce(x, y, 4, MMP_DOUBLE, MMP_SUM, w, &o, &r),
                   MMP_EINVAL);
  assert_null(r);
  /* A name of another collective's. */
  o.algorithm = "bruck";
  assert_int_equal(mmp_allreduce_ex(x, y, 4, MMP_DOUBLE, MMP_SUM, w, &o),
                   MMP_EINVAL);
  o.algorithm = "auto";
  assert_int_equal(mmp_allreduce_ex(x, y, 4, MMP_DOUBLE, MMP_SUM, w, &o), 0);
  /* A radix outside 2 .. 16 (0: chosen). */
  o.algorithm = "knomial";
  o.radix = 1;
  assert_int_equal(mmp_reduce_ex(x, y, 4, MMP_DOUBLE, MMP_SUM, 0, w, &o),
                   MMP_EINVAL);
  o.radix = 17;
  assert_int_equal(mmp_reduce_ex(x, y, 4, MMP_DOUBLE, MMP_SUM, 0, w, &o),
                   MMP_EINVAL);
  assert_int_equal(mmp_gather(x, 1, y, 1, MMP_DOUBLE, -1, w), MMP_ERANK);
  assert_int_equal(mmp_alltoall(x, 1, y, 2, MMP_DOUBLE, w), MMP_EINVAL);
  assert_int_equal(mmp_ibarrier(w, NULL), MMP_EINVAL);
  assert_int_equal(mmp_type_contiguous(0, MMP_DOUBLE, NULL), MMP_EINVAL);
  assert_int_equal(mmp_op_create(NULL, 1, NULL, NULL), MMP_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_algorithm),
      cmocka_unit_test(test_every_algorithm_both_modes),
      cmocka_unit_test(test_every_type_and_operation),
      cmocka_unit_test(test_large_floats_deterministic),
      cmocka_unit_test(test_large_blocks),
      cmocka_unit_test(test_noncommutative_rank_order),
      cmocka_unit_test(test_reduce_local),
      cmocka_unit_test(test_reduce_knomial_radices),
      cmocka_unit_test(test_nonblocking_in_flight),
      cmocka_unit_test(test_inconsistent_arguments_are_an_error),
      cmocka_unit_test(test_scatter_wrong_root_is_an_error),
      cmocka_unit_test(test_ibarrier_waits_for_the_last_rank),
      cmocka_unit_test(test_small_collective_wait_sleeps),
      cmocka_unit_test(test_auto_cache_matches_model),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
