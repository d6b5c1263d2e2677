/* SPDX-License-Identifier: MIT */
/*
 * The public collective calls mr_coll reaches only through other forms,
 * and the reductions of every type through every algorithm, run through
 * minimprun for p in {1, 2, 3, 5, 8}, against references every rank
 * computes from the same seeds:
 * - gatherv, igatherv, scatterv, iscatterv: uneven counts (some 0),
 *   blocks laid out in reverse rank order with gaps that must stay
 *   untouched, every root class, in place at the root; every algorithm
 *   through the non-blocking form (the flat one runs, the others are
 *   MMP_EINVAL on every rank: only the root knows the counts);
 * - alltoallv, ialltoallv: a count for every pair (some 0), gapped
 *   displacements, every algorithm, and in place (symmetric counts);
 *   Bruck with equal counts, since it moves equal blocks only; under
 *   AUTO with rank 0's blocks just short of the size where AUTO's choice
 *   changes and the others' at it;
 * - iallgatherv: every algorithm, packed and gapped (the s-to-p row
 *   refuses gaps when asked for, on every rank);
 * - scatter, reduce_scatter, ireduce_scatter_block: the plain forms;
 * - every type x every operation through every allreduce, reduce and
 *   reduce-scatter (block and v) algorithm, blocking and not, at 1 and
 *   2p + 3 elements, exact; the pairs a type does not support are
 *   MMP_EINVAL; a commutative user operation on 16-bit integers through
 *   every algorithm too.
 * Every non-blocking call's status is checked as well as its data.
 *
 * Algorithms are listed by name in one place (algs_of), so that a change
 * in how they are numbered touches one function.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "coll_ref.h"
#include "mr_common.h"

#define MAX_ALGS 32

/* The algorithms of collective `coll` (MMP_COLL_*), "auto" first, then
 * mmp_coll_algs's list: stores their names in out[] and returns how
 * many. */
static int algs_of(int coll, const char **out) {
  const char *s;
  int n = 0, i;

  out[n++] = "auto";
  for (i = 0; n < MAX_ALGS && (s = mr_alg(coll, i, NULL)) != NULL; i++)
    out[n++] = s;
  return n;
}

static int alg_is(const char *alg, const char *name) {
  return alg != NULL && strcmp(alg, name) == 0;
}

static mmp_coll_opts_t opts_for(const char *alg) {
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  o.algorithm = alg;
  return o;
}

/* Waits for a non-blocking collective and checks its status. */
static int wait_checked(mmp_request_t **q, const char *what) {
  mmp_status_t st;
  int rc;

  memset(&st, 0x5a, sizeof(st));
  rc = mmp_wait(q, &st);
  if (st.error != rc)
    fail_msg("%s: status.error %d, returned %d", what, st.error, rc);
  assert_null(*q);
  return rc;
}

/* Byte k of the block rank `from` gives rank `to` (-1: everyone). */
static uint8_t bb(int from, int to, size_t k, uint64_t seed) {
  uint64_t s =
      seed ^ ((uint64_t)(from + 1) << 40) ^ ((uint64_t)(to + 2) << 20) ^ k;
  return (uint8_t)mr_next(&s);
}

static void fill_block(uint8_t *b, size_t n, int from, int to, uint64_t seed) {
  size_t k;

  for (k = 0; k < n; k++)
    b[k] = bb(from, to, k, seed);
}

static void expect_block(const uint8_t *got, size_t n, int from, int to,
                         uint64_t seed, const char *what) {
  size_t k;

  for (k = 0; k < n; k++)
    if (got[k] != bb(from, to, k, seed))
      fail_msg("%s: byte %zu of rank %d's block is 0x%02x, not 0x%02x", what, k,
               from, got[k], bb(from, to, k, seed));
}

/* Bytes outside every block keep their fill. */
static void expect_gaps(const uint8_t *buf, size_t len, const size_t *cnt,
                        const size_t *dsp, int p, size_t esize,
                        const char *what) {
  size_t k;
  int i;

  for (k = 0; k < len; k++) {
    int in_block = 0;
    for (i = 0; i < p && !in_block; i++)
      in_block = k >= dsp[i] * esize && k < (dsp[i] + cnt[i]) * esize;
    if (!in_block && buf[k] != 0xee)
      fail_msg("%s: byte %zu between blocks was written", what, k);
  }
}

/* Uneven counts (some 0) in elements, and displacements that put the
 * blocks in reverse rank order with a gap of one element after every
 * second; returns the buffer's length in elements. */
static size_t v_layout(int p, uint64_t seed, size_t *cnt, size_t *dsp) {
  size_t at = 0;
  int i;

  for (i = 0; i < p; i++)
    cnt[i] = (size_t)((uint64_t)i * 3 + seed) % 5;
  for (i = p - 1; i >= 0; i--) {
    dsp[i] = at;
    at += cnt[i] + (size_t)(i % 2);
  }
  return at + 1;
}

/* ---- gatherv and scatterv ------------------------------------------------ */

#define E 4 /* MMP_INT32: elements are not bytes */

/* One gatherv (`gather`) or scatterv: blocking, or non-blocking with
 * algorithm `alg`; in place at the root or not. */
static void gs_v_case(int gather, int root, const char *alg, int nb,
                      int in_place, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i, rc, ok;
  int here = in_place && me == root;
  size_t *cnt = malloc(2 * (size_t)p * sizeof(size_t)), *dsp, len;
  uint8_t *mine, *all;
  mmp_coll_opts_t o = opts_for(alg);
  mmp_request_t *q = NULL;
  char what[96];

  assert_non_null(cnt);
  dsp = cnt + p;
  len = v_layout(p, seed, cnt, dsp) * E;
  mine = malloc(cnt[me] * E + E);
  all = malloc(len);
  assert_true(mine != NULL && all != NULL);
  memset(all, 0xee, len);
  memset(mine, 0xee, cnt[me] * E + E);
  if (gather) {
    fill_block(mine, cnt[me] * E, me, root, seed);
    if (here)
      memcpy(all + dsp[me] * E, mine, cnt[me] * E);
  } else if (me == root) {
    for (i = 0; i < p; i++)
      fill_block(all + dsp[i] * E, cnt[i] * E, root, i, seed);
  }
  snprintf(what, sizeof(what), "%s root %d %s nb %d in place %d",
           gather ? "gatherv" : "scatterv", root, alg, nb, in_place);
  /* Only the root knows the counts: the flat algorithm, or none. */
  ok = alg_is(alg, "auto") || alg_is(alg, "flat");
  if (gather && !nb)
    rc = mmp_gatherv(here ? MMP_IN_PLACE : mine, cnt[me],
                     me == root ? all : NULL, me == root ? cnt : NULL,
                     me == root ? dsp : NULL, MMP_INT32, root, w);
  else if (gather)
    rc = mmp_igatherv(here ? MMP_IN_PLACE : mine, cnt[me],
                      me == root ? all : NULL, me == root ? cnt : NULL,
                      me == root ? dsp : NULL, MMP_INT32, root, w, &o, &q);
  else if (!nb)
    rc = mmp_scatterv(me == root ? all : NULL, me == root ? cnt : NULL,
                      me == root ? dsp : NULL, here ? MMP_IN_PLACE : mine,
                      cnt[me], MMP_INT32, root, w);
  else
    rc = mmp_iscatterv(me == root ? all : NULL, me == root ? cnt : NULL,
                       me == root ? dsp : NULL, here ? MMP_IN_PLACE : mine,
                       cnt[me], MMP_INT32, root, w, &o, &q);
  if (rc == 0 && nb)
    rc = wait_checked(&q, what);
  if (rc != (ok ? 0 : MMP_EINVAL))
    fail_msg("%s: %s", what, mmp_err_name(rc));
  if (ok && gather && me == root) {
    for (i = 0; i < p; i++)
      expect_block(all + dsp[i] * E, cnt[i] * E, i, root, seed, what);
    expect_gaps(all, len, cnt, dsp, p, E, what);
  } else if (ok && !gather && !here) {
    expect_block(mine, cnt[me] * E, root, me, seed, what);
    for (i = 0; i < E; i++)
      assert_int_equal(mine[cnt[me] * E + (size_t)i], 0xee);
  }
  free(cnt);
  free(mine);
  free(all);
}

/* Root 0, the middle and the last. */
static int roots_of(int p, int *out) {
  int n = 0;

  out[n++] = 0;
  if (p / 2 != 0)
    out[n++] = p / 2;
  if (p - 1 != 0 && p - 1 != p / 2)
    out[n++] = p - 1;
  return n;
}

static void test_gatherv_scatterv(void **state) {
  int p = mr_size(), roots[3], nr = roots_of(p, roots), na;
  const char *algs[MAX_ALGS];
  int k, a;
  (void)state;

  for (k = 0; k < nr; k++) {
    uint64_t seed = 100 + (uint64_t)k * 10;
    gs_v_case(1, roots[k], "auto", 0, 0, seed);
    gs_v_case(1, roots[k], "auto", 0, 1, seed + 1);
    gs_v_case(0, roots[k], "auto", 0, 0, seed + 2);
    gs_v_case(0, roots[k], "auto", 0, 1, seed + 3);
    na = algs_of(MMP_COLL_GATHER, algs);
    for (a = 0; a < na; a++)
      gs_v_case(1, roots[k], algs[a], 1, a % 2, seed + 4 + (uint64_t)a);
    na = algs_of(MMP_COLL_SCATTER, algs);
    for (a = 0; a < na; a++)
      gs_v_case(0, roots[k], algs[a], 1, a % 2, seed + 5 + (uint64_t)a);
  }
}

/* ---- alltoallv ----------------------------------------------------------- */

/* Elements rank i sends rank j: 0 .. 3; symmetric for the in-place form;
 * 2 everywhere for Bruck. */
static size_t a2a_count(int i, int j, uint64_t seed, int kind) {
  if (kind == 2)
    return 2;
  if (kind == 1)
    return (size_t)((uint64_t)(i + j) + seed) % 4;
  return (size_t)((uint64_t)i * 7 + (uint64_t)j * 3 + seed) % 4;
}

/* kind: 0 uneven, 1 symmetric and in place, 2 equal. */
static void alltoallv_case(const char *alg, int nb, int kind, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), j, rc;
  size_t np = (size_t)p, *sc = malloc(4 * np * sizeof(size_t));
  size_t *sd = sc + np, *rc_ = sc + 2 * np, *rd = sc + 3 * np, sat = 0, rat = 0;
  uint8_t *sbuf, *rbuf;
  mmp_coll_opts_t o = opts_for(alg);
  mmp_request_t *q = NULL;
  char what[96];

  assert_non_null(sc);
  /* Send blocks in reverse order with gaps; receive blocks in rank
   * order with gaps of their own (the same as the send side in place). */
  for (j = p - 1; j >= 0; j--) {
    sc[j] = a2a_count(me, j, seed, kind);
    sd[j] = sat;
    sat += sc[j] + (size_t)(j % 2);
  }
  for (j = 0; j < p; j++) {
    rc_[j] = a2a_count(j, me, seed, kind);
    rd[j] = kind == 1 ? sd[j] : rat;
    rat += rc_[j] + (size_t)((j + 1) % 2);
  }
  if (kind == 1)
    rat = sat;
  sbuf = malloc(sat * E + 1);
  rbuf = malloc(rat * E + 1);
  assert_true(sbuf != NULL && rbuf != NULL);
  memset(rbuf, 0xee, rat * E + 1);
  for (j = 0; j < p; j++)
    fill_block((kind == 1 ? rbuf : sbuf) + sd[j] * E, sc[j] * E, me, j, seed);
  snprintf(what, sizeof(what), "alltoallv %s nb %d kind %d", alg, nb, kind);
  if (!nb && kind != 1)
    rc = mmp_alltoallv(sbuf, sc, sd, rbuf, rc_, rd, MMP_INT32, w);
  else if (!nb)
    rc = mmp_alltoallv(MMP_IN_PLACE, NULL, NULL, rbuf, rc_, rd, MMP_INT32, w);
  else {
    rc = mmp_ialltoallv(kind == 1 ? MMP_IN_PLACE : sbuf, sc, sd, rbuf, rc_, rd,
                        MMP_INT32, w, &o, &q);
    if (rc == 0)
      rc = wait_checked(&q, what);
  }
  if (rc != 0)
    fail_msg("%s: %s", what, mmp_err_name(rc));
  for (j = 0; j < p; j++)
    expect_block(rbuf + rd[j] * E, rc_[j] * E, j, me, seed, what);
  expect_gaps(rbuf, rat * E, rc_, rd, p, E, what);
  free(sc);
  free(sbuf);
  free(rbuf);
}

static void test_alltoallv(void **state) {
  const char *algs[MAX_ALGS];
  int na = algs_of(MMP_COLL_ALLTOALL, algs), a;
  (void)state;

  alltoallv_case("auto", 0, 0, 300);
  alltoallv_case("auto", 0, 1, 301);
  for (a = 0; a < na; a++) {
    uint64_t seed = 310 + (uint64_t)a * 3;
    /* Bruck moves equal blocks only. */
    if (alg_is(algs[a], "bruck")) {
      alltoallv_case(algs[a], 1, 2, seed);
      continue;
    }
    alltoallv_case(algs[a], 1, 0, seed);
    alltoallv_case(algs[a], 1, 1, seed + 1);
  }
}

/* AUTO's alltoall for a block of `count` bytes (mmp_coll_select): its
 * algorithm's name. */
static const char *a2a_auto(size_t count) {
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;

  assert_int_equal(mmp_coll_select(mmp_comm_world(), MMP_COLL_ALLTOALL, count,
                                   MMP_BYTE, 0, &o),
                   0);
  assert_non_null(o.algorithm);
  return o.algorithm;
}

/* An alltoallv under AUTO where rank 0 receives blocks just short of the
 * size at which AUTO's alltoall changes algorithm and the others blocks
 * of that size: each rank knows only its own counts, yet every rank must
 * run the same algorithm (they ran different ones and failed with
 * MMP_EMISMATCH). */
static void test_alltoallv_auto_ranks_disagree_on_size(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), j;
  const char *small = a2a_auto(1);
  size_t lo = 1, hi = (size_t)1 << 22, np = (size_t)p;
  size_t *sc = malloc(4 * np * sizeof(size_t)), *sd, *rcn, *rd, at;
  uint8_t *sbuf, *rbuf;
  (void)state;

  assert_non_null(sc);
  if (strcmp(a2a_auto(hi), small) == 0) { /* one algorithm at every size here */
    free(sc);
    skip();
  }
  while (hi - lo > 1) { /* the smallest size AUTO prices otherwise */
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(a2a_auto(mid), small) == 0)
      lo = mid;
    else
      hi = mid;
  }
  sd = sc + np;
  rcn = sc + 2 * np;
  rd = sc + 3 * np;
  for (j = 0, at = 0; j < p; j++) {
    sc[j] = j == 0 ? lo : hi;
    sd[j] = at;
    at += sc[j];
  }
  sbuf = malloc(at);
  for (j = 0, at = 0; j < p; j++) {
    rcn[j] = me == 0 ? lo : hi;
    rd[j] = at;
    at += rcn[j];
  }
  rbuf = malloc(at);
  assert_true(sbuf != NULL && rbuf != NULL);
  for (j = 0; j < p; j++)
    fill_block(sbuf + sd[j], sc[j], me, j, 600);
  assert_int_equal(mmp_alltoallv(sbuf, sc, sd, rbuf, rcn, rd, MMP_BYTE, w), 0);
  for (j = 0; j < p; j++)
    expect_block(rbuf + rd[j], rcn[j], j, me, 600, "alltoallv auto");
  free(sc);
  free(sbuf);
  free(rbuf);
}

/* ---- iallgatherv --------------------------------------------------------- */

static void allgatherv_case(const char *alg, int gaps, uint64_t seed) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i, rc, ok;
  size_t *cnt = malloc(2 * (size_t)p * sizeof(size_t)), *dsp, len, at = 0;
  uint8_t *mine, *all;
  mmp_coll_opts_t o = opts_for(alg);
  mmp_request_t *q = NULL;
  char what[96];

  assert_non_null(cnt);
  dsp = cnt + p;
  if (gaps) {
    len = v_layout(p, seed, cnt, dsp);
  } else {
    for (i = 0; i < p; i++) {
      cnt[i] = (size_t)((uint64_t)i * 3 + seed) % 5;
      dsp[i] = at;
      at += cnt[i];
    }
    len = at + 1;
  }
  mine = malloc(cnt[me] * E + 1);
  all = malloc(len * E);
  assert_true(mine != NULL && all != NULL);
  fill_block(mine, cnt[me] * E, me, -1, seed);
  memset(all, 0xee, len * E);
  snprintf(what, sizeof(what), "iallgatherv %s gaps %d", alg, gaps);
  /* The s-to-p row takes the blocks packed in rank order only. */
  for (i = 0, at = 0, ok = 1; i < p; at += cnt[i++])
    ok = ok && dsp[i] == at;
  ok = ok || !alg_is(alg, "s2p");
  rc = mmp_iallgatherv(mine, cnt[me], all, cnt, dsp, MMP_INT32, w, &o, &q);
  if (rc == 0)
    rc = wait_checked(&q, what);
  if (rc != (ok ? 0 : MMP_EINVAL))
    fail_msg("%s: %s", what, mmp_err_name(rc));
  if (ok) {
    for (i = 0; i < p; i++)
      expect_block(all + dsp[i] * E, cnt[i] * E, i, -1, seed, what);
    expect_gaps(all, len * E, cnt, dsp, p, E, what);
  }
  free(cnt);
  free(mine);
  free(all);
}

static void test_iallgatherv(void **state) {
  const char *algs[MAX_ALGS];
  int na = algs_of(MMP_COLL_ALLGATHER, algs), a;
  (void)state;

  for (a = 0; a < na; a++) {
    allgatherv_case(algs[a], 0, 400 + (uint64_t)a);
    allgatherv_case(algs[a], 1, 450 + (uint64_t)a);
  }
  /* AUTO, or MINIMP_ALLGATHER_ALG (coll_calls_env_n3), on both layouts. */
  allgatherv_case("auto", 0, 498);
  allgatherv_case("auto", 1, 499);
}

/* ---- The plain forms ------------------------------------------------------
 */

static void test_plain_forms(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i, root = p - 1;
  size_t np = (size_t)p, n = 5, *counts = malloc(np * sizeof(size_t)), off = 0;
  int64_t *all = malloc(np * (n + 2) * 8), *mine = malloc((n + 2) * 8);
  mmp_request_t *q = NULL;
  (void)state;

  assert_true(counts != NULL && all != NULL && mine != NULL);
  /* scatter: block i of the root's buffer to rank i. */
  for (i = 0; i < p; i++)
    for (size_t k = 0; k < n; k++)
      all[(size_t)i * n + k] = i * 100 + (int64_t)k;
  assert_int_equal(
      mmp_scatter(me == root ? all : NULL, n, mine, n, MMP_INT64, root, w), 0);
  for (size_t k = 0; k < n; k++)
    assert_int_equal(mine[k], me * 100 + (int64_t)k);
  /* reduce_scatter: rank i keeps counts[i] = i % 3 + 1 sums of the
   * ranks' element e = r + e. */
  for (i = 0; i < p; i++) {
    counts[i] = (size_t)(i % 3) + 1;
    if (i < me)
      off += counts[i];
  }
  {
    size_t total = off, k;
    for (i = me; i < p; i++)
      total += counts[i];
    for (k = 0; k < total; k++)
      all[k] = me + (int64_t)k;
    assert_int_equal(
        mmp_reduce_scatter(all, mine, counts, MMP_INT64, MMP_SUM, w), 0);
    for (k = 0; k < counts[me]; k++)
      assert_int_equal(mine[k], (int64_t)p * (int64_t)(off + k) +
                                    (int64_t)p * (p - 1) / 2);
  }
  /* ireduce_scatter_block: n each, the maximum of r * (e + 1). */
  for (size_t k = 0; k < np * n; k++)
    all[k] = me * (int64_t)(k + 1);
  assert_int_equal(
      mmp_ireduce_scatter_block(all, mine, n, MMP_INT64, MMP_MAX, w, NULL, &q),
      0);
  assert_int_equal(wait_checked(&q, "ireduce_scatter_block"), 0);
  for (size_t k = 0; k < n; k++)
    assert_int_equal(mine[k],
                     (int64_t)(p - 1) * (int64_t)((size_t)me * n + k + 1));
  free(counts);
  free(all);
  free(mine);
}

/* ---- Every type and operation through every algorithm -------------------- */

/* A commutative user operation: 16-bit wrapping sums. */
static void add16(const void *in, void *inout, size_t count, mmp_type_t type,
                  void *ctx) {
  const uint16_t *a = in;
  uint16_t *b = inout;
  size_t i;
  (void)type;
  (void)ctx;

  for (i = 0; i < count; i++)
    b[i] = (uint16_t)(a[i] + b[i]);
}

/* One reduction: every rank's `in` of `n` elements (and `nall` for the
 * reduce-scatter forms), the expected reduction in `want`. */
typedef struct red_s {
  int type, op, ref_op; /* ref_op: the built-in op the reference uses */
  size_t n, esize;
  uint8_t *in, *want, *out;
} red_t;

static void red_fill(red_t *r, size_t n) {
  int p = mr_size(), me = mr_rank(), k;
  size_t e;

  r->n = n;
  r->esize = mmp_type_size(r->type);
  r->in = malloc(n * r->esize + 8);
  r->want = malloc(n * r->esize + 8);
  r->out = malloc(n * r->esize + 8);
  assert_true(r->in != NULL && r->want != NULL && r->out != NULL);
  for (e = 0; e < n; e++) {
    int64_t acc = ref_val(r->type, r->ref_op, 0, e);
    for (k = 1; k < p; k++)
      acc = ref_op(r->ref_op, acc, ref_val(r->type, r->ref_op, k, e));
    ref_put(r->in, r->type, e, ref_val(r->type, r->ref_op, me, e));
    ref_put(r->want, r->type, e, acc);
  }
}

static void red_free(red_t *r) {
  free(r->in);
  free(r->want);
  free(r->out);
}

static void allreduce_alg(red_t *r, const char *alg, int nb) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = opts_for(alg);
  mmp_request_t *q = NULL;
  int rc;

  memset(r->out, 0, r->n * r->esize);
  if (nb) {
    rc = mmp_iallreduce(r->in, r->out, r->n, r->type, r->op, w, &o, &q);
    if (rc == 0)
      rc = wait_checked(&q, "iallreduce");
    /* The shm rows serve blocking calls only: refused on every rank. */
    if (rc == MMP_ENOTSUP && strcmp(alg, "shm") == 0)
      return;
  } else {
    rc = mmp_allreduce_ex(r->in, r->out, r->n, r->type, r->op, w, &o);
  }
  if (rc != 0)
    fail_msg("allreduce %s type %d op %d n %zu: %s", alg, r->type, r->op, r->n,
             mmp_err_name(rc));
  if (r->n > 0 && memcmp(r->out, r->want, r->n * r->esize) != 0)
    fail_msg("allreduce %s type %d op %d n %zu: wrong result", alg, r->type,
             r->op, r->n);
}

static void reduce_alg(red_t *r, const char *alg, int nb, int root) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = opts_for(alg);
  mmp_request_t *q = NULL;
  int rc, me = mr_rank();

  memset(r->out, 0, r->n * r->esize);
  if (nb) {
    rc = mmp_ireduce(r->in, me == root ? r->out : NULL, r->n, r->type, r->op,
                     root, w, &o, &q);
    if (rc == 0)
      rc = wait_checked(&q, "ireduce");
    /* The shm rows serve blocking calls only: refused on every rank. */
    if (rc == MMP_ENOTSUP && strcmp(alg, "shm") == 0)
      return;
  } else {
    rc = mmp_reduce_ex(r->in, me == root ? r->out : NULL, r->n, r->type, r->op,
                       root, w, &o);
  }
  if (rc != 0)
    fail_msg("reduce %s type %d op %d n %zu: %s", alg, r->type, r->op, r->n,
             mmp_err_name(rc));
  if (me == root && r->n > 0 && memcmp(r->out, r->want, r->n * r->esize) != 0)
    fail_msg("reduce %s type %d op %d n %zu root %d: wrong result", alg,
             r->type, r->op, r->n, root);
}

/* r->n must be a multiple of p for the block form: block n / p each;
 * the v form keeps counts e % 3 of the p ranks' share in turn. */
static void reduce_scatter_alg(red_t *r, const char *alg, int nb) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = opts_for(alg);
  mmp_request_t *q = NULL;
  int p = mr_size(), me = mr_rank(), i, rc;
  size_t blk = r->n / (size_t)p, *counts = malloc((size_t)p * sizeof(size_t));
  size_t off = 0, left = r->n;
  const char *name = alg;

  assert_non_null(counts);
  memset(r->out, 0, r->n * r->esize);
  if (nb) {
    rc = mmp_ireduce_scatter_block(r->in, r->out, blk, r->type, r->op, w, &o,
                                   &q);
    if (rc == 0)
      rc = wait_checked(&q, "ireduce_scatter_block");
  } else {
    rc = mmp_reduce_scatter_block_ex(r->in, r->out, blk, r->type, r->op, w, &o);
  }
  if (rc != 0)
    fail_msg("reduce_scatter_block %s type %d op %d n %zu: %s", name, r->type,
             r->op, r->n, mmp_err_name(rc));
  if (blk > 0 &&
      memcmp(r->out, r->want + (size_t)me * blk * r->esize, blk * r->esize))
    fail_msg("reduce_scatter_block %s type %d op %d n %zu: wrong result", name,
             r->type, r->op, r->n);
  /* Uneven counts over the whole vector, the last rank taking the rest. */
  for (i = 0; i < p; i++) {
    counts[i] = i == p - 1 ? left : (size_t)(i % 3) * left / 4;
    left -= counts[i];
    if (i < me)
      off += counts[i];
  }
  memset(r->out, 0, r->n * r->esize);
  if (nb) {
    rc = mmp_ireduce_scatter(r->in, r->out, counts, r->type, r->op, w, &o, &q);
    if (rc == 0)
      rc = wait_checked(&q, "ireduce_scatter");
  } else {
    rc = mmp_reduce_scatter_ex(r->in, r->out, counts, r->type, r->op, w, &o);
  }
  if (rc != 0)
    fail_msg("reduce_scatter %s type %d op %d n %zu: %s", name, r->type, r->op,
             r->n, mmp_err_name(rc));
  if (counts[me] > 0 &&
      memcmp(r->out, r->want + off * r->esize, counts[me] * r->esize) != 0)
    fail_msg("reduce_scatter %s type %d op %d n %zu: wrong result", name,
             r->type, r->op, r->n);
  free(counts);
}

/* Every algorithm of the three reductions on `r`, blocking and not in
 * turn, at 1 element and 2p + 3 (block forms: 2p). */
static void every_reduction_alg(int type, int op, int ref_op, uint64_t turn) {
  int p = mr_size(), na, a, k;
  const char *algs[MAX_ALGS];
  size_t sizes[2] = {1, 2 * (size_t)p + 3};

  for (k = 0; k < 2; k++) {
    red_t r;
    memset(&r, 0, sizeof(r));
    r.type = type;
    r.op = op;
    r.ref_op = ref_op;
    red_fill(&r, sizes[k]);
    na = algs_of(MMP_COLL_ALLREDUCE, algs);
    for (a = 0; a < na; a++)
      allreduce_alg(&r, algs[a], (int)((turn + (uint64_t)a) % 2));
    na = algs_of(MMP_COLL_REDUCE, algs);
    for (a = 0; a < na; a++)
      reduce_alg(&r, algs[a], (int)((turn + (uint64_t)a + 1) % 2), (a + k) % p);
    red_free(&r);
    /* Block forms: a multiple of p elements. */
    memset(&r, 0, sizeof(r));
    r.type = type;
    r.op = op;
    r.ref_op = ref_op;
    red_fill(&r, (sizes[k] / (size_t)p) * (size_t)p + (size_t)p * k);
    na = algs_of(MMP_COLL_REDUCE_SCATTER, algs);
    for (a = 0; a < na; a++)
      reduce_scatter_alg(&r, algs[a], (int)((turn + (uint64_t)a) % 2));
    red_free(&r);
  }
}

static void test_every_type_op_and_algorithm(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int type, op, ran = 0;
  uint64_t turn = 0;
  (void)state;

  for (type = MMP_BYTE; type < MMP_TYPE_BUILTIN_COUNT; type++)
    for (op = MMP_SUM; op < MMP_OP_BUILTIN_COUNT; op++) {
      if (!ref_supported(type, op)) {
        uint8_t x[8] = {0}, y[8];
        assert_int_equal(mmp_allreduce(x, y, 1, type, op, w), MMP_EINVAL);
        continue;
      }
      every_reduction_alg(type, op, op, turn++);
      ran++;
    }
  /* Every numeric type x SUM, PROD, MIN, MAX; integers x 5 more; bytes x
   * BAND, BOR, BXOR. */
  assert_int_equal(ran, 10 * 4 + 8 * 5 + 3);
}

static void test_user_op_every_algorithm(void **state) {
  mmp_op_t add = 0;
  (void)state;

  assert_int_equal(mmp_op_create(add16, 1, NULL, &add), 0);
  every_reduction_alg(MMP_UINT16, add, MMP_SUM, 1);
  assert_int_equal(mmp_op_free(&add), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gatherv_scatterv),
      cmocka_unit_test(test_alltoallv),
      cmocka_unit_test(test_alltoallv_auto_ranks_disagree_on_size),
      cmocka_unit_test(test_iallgatherv),
      cmocka_unit_test(test_plain_forms),
      cmocka_unit_test(test_every_type_op_and_algorithm),
      cmocka_unit_test(test_user_op_every_algorithm),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
