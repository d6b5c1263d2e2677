/* SPDX-License-Identifier: MIT */
/*
 * s-to-p broadcast across ranks, run through minimprun for p in
 * {1, 2, 3, 7, 12, 16}: every algorithm on every source distribution of
 * [Hambrusch et al. 1998] with s in {0, 1, 2, sqrt(p), p/2, p-1, p}, with equal
 * and unequal lengths and zero-length messages, verified byte for byte on every
 * rank; the size-exchange form; automatic choice; eager and rendezvous modes
 * with long messages; grids of other shapes; several in flight; a short receive
 * buffer; bad arguments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "mr_common.h"

enum { LEN_EQUAL = 0, LEN_UNEQUAL = 1, LEN_ZERO = 2 };

/* Length of rank i's message: equal, unequal (some of them 0), or 0. */
static size_t len_of(int i, int kind, size_t base) {
  if (kind == LEN_EQUAL)
    return base;
  if (kind == LEN_ZERO)
    return 0;
  return (size_t)i % 4 == 3 ? 0 : base / 2 + ((size_t)i * 37) % (base + 1);
}

/* Algorithm i: 0 AUTO ("auto"), then the list (mmp_coll_algs) from 1;
 * NULL past its end. */
static const char *ALG(int i) {
  return i == 0 ? "auto" : mr_alg(MMP_COLL_S2P, i - 1, NULL);
}

static uint64_t seed_of(const char *alg, int i, int variant) {
  return mr_hash(alg) * 7919u + (uint64_t)i * 104729u + (uint64_t)variant;
}

typedef struct case_s {
  const char *alg;
  int dist, s, kind, rows, variant;
  size_t base;
  unsigned mode;
  int unknown; /* pass lens = NULL */
  int nb;      /* mmp_ibcast_s2p and mmp_wait */
} case_t;

static int env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v != NULL && strcmp(v, value) == 0;
}

static int mcast_refused(void) {
  return env_is("MINIMP_MCAST", "off") || env_is("MINIMP_ENCRYPT", "1");
}

/* Runs one s-to-p and checks every byte and every length on this rank. */
static void check_s2p(const case_t *c) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i, rc;
  unsigned char *mark = malloc((size_t)p);
  size_t *lens = malloc((size_t)p * sizeof(size_t));
  size_t *got = malloc((size_t)p * sizeof(size_t)), total = 0, at = 0;
  uint8_t *want, *buf, *mine;
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;

  assert_int_equal(mmp_s2p_dist(c->dist, c->s, p, c->rows, mark), 0);
  for (i = 0; i < p; i++) {
    lens[i] = mark[i] ? len_of(i, c->kind, c->base) : MMP_S2P_NONE;
    total += mark[i] ? lens[i] : 0;
  }
  want = malloc(total + 1);
  buf = malloc(total + 1);
  for (i = 0; i < p; i++)
    if (mark[i]) {
      mr_fill(want + at, lens[i], seed_of(c->alg, i, c->variant));
      at += lens[i];
    }
  memset(buf, 0xa5, total + 1);
  mine = malloc(mark[me] ? lens[me] + 1 : 1);
  mr_fill(mine, mark[me] ? lens[me] : 0, seed_of(c->alg, me, c->variant));
  o.algorithm = c->alg;
  o.mode = c->mode;
  o.rows = c->rows;
  if (c->nb) {
    mmp_request_t *q = NULL;
    mmp_status_t st;
    rc = mmp_ibcast_s2p(mine, mark[me] ? lens[me] : 0, mark[me], buf, total,
                        c->unknown ? NULL : lens, got, w, &o, &q);
    if (rc == 0) {
      memset(&st, 0xff, sizeof(st));
      rc = mmp_wait(&q, &st);
      /* The request's status counts every message's bytes. */
      if (rc == 0 && (st.bytes != total || st.error != 0))
        fail_msg("%s %s s %d kind %d: status.bytes %zu error %d, want %zu",
                 c->alg, mmp_s2p_dist_name(c->dist), c->s, c->kind, st.bytes,
                 st.error, total);
    }
  } else {
    rc = mmp_bcast_s2p(mine, mark[me] ? lens[me] : 0, mark[me], buf, total,
                       c->unknown ? NULL : lens, got, w, &o);
  }
  /* Where multicast is switched off or refused (a sealed job), its row
   * is MMP_ENOTSUP on every rank (mr_mcast checks that it is). */
  if (strcmp(c->alg, "multicast") == 0 && rc == MMP_ENOTSUP && mcast_refused())
    goto out;
  if (rc != 0 || memcmp(buf, want, total) != 0 || buf[total] != 0xa5) {
    size_t k = 0;
    while (k < total && buf[k] == want[k])
      k++;
    fail_msg("%s %s s %d kind %d base %zu rows %d mode %u: rc %s, first bad "
             "byte %zu of %zu",
             c->alg, mmp_s2p_dist_name(c->dist), c->s, c->kind, c->base,
             c->rows, c->mode, mmp_err_name(rc), k, total);
  }
  for (i = 0; i < p; i++)
    assert_true(got[i] == lens[i]);
out:
  free(mark);
  free(lens);
  free(got);
  free(want);
  free(buf);
  free(mine);
}

/* s in {0, 1, 2, sqrt(p), p/2, p - 1, p}, without repeats. */
static int sources_of(int p, int *out) {
  int cand[7], n = 0, i, k;

  cand[0] = 0;
  cand[1] = 1;
  cand[2] = 2;
  cand[3] = (int)floor(sqrt((double)p));
  cand[4] = p / 2;
  cand[5] = p - 1;
  cand[6] = p;
  for (i = 0; i < 7; i++) {
    if (cand[i] < 0 || cand[i] > p)
      continue;
    for (k = 0; k < n && out[k] != cand[i]; k++)
      ;
    if (k == n)
      out[n++] = cand[i];
  }
  return n;
}

static void test_s2p_every_algorithm_and_distribution(void **state) {
  int p = mr_size(), svals[7], ns = sources_of(p, svals), alg, d, k, kind;
  (void)state;

  for (alg = 1; ALG(alg) != NULL; alg++)
    for (d = 0; d < MMP_S2P_DIST_COUNT; d++)
      for (k = 0; k < ns; k++)
        for (kind = LEN_EQUAL; kind <= LEN_UNEQUAL; kind++) {
          /* Blocking and not, both for every algorithm and distribution. */
          case_t c = {ALG(alg), d,  svals[k], kind, 0,
                      0,        61, 0,        0,    (k + kind) % 2};
          check_s2p(&c);
        }
}

static void test_s2p_zero_length_messages(void **state) {
  int p = mr_size(), svals[7], ns = sources_of(p, svals), alg, k;
  (void)state;

  for (alg = 1; ALG(alg) != NULL; alg++)
    for (k = 0; k < ns; k++) {
      case_t c = {
          ALG(alg), MMP_S2P_DIST_EQUAL, svals[k], LEN_ZERO, 0, 1, 0, 0, 0,
          k % 2};
      check_s2p(&c);
    }
}

static void test_s2p_size_exchange(void **state) {
  int p = mr_size(), alg;
  (void)state;

  for (alg = 0; ALG(alg) != NULL; alg++) {
    case_t c = {
        ALG(alg), MMP_S2P_DIST_CROSS, (p + 1) / 2, LEN_UNEQUAL, 0, 2, 300, 0, 1,
        0};
    check_s2p(&c);
    c.s = p;
    c.dist = MMP_S2P_DIST_DIAG_L;
    c.nb = 1;
    check_s2p(&c);
  }
}

static void test_s2p_long_messages_and_modes(void **state) {
  static const unsigned modes[] = {MMP_SEND_AUTO, MMP_SEND_EAGER,
                                   MMP_SEND_RNDV};
  int p = mr_size(), alg, m;
  (void)state;

  for (m = 0; m < 3; m++)
    for (alg = 0; ALG(alg) != NULL; alg++) {
      case_t c = {ALG(alg),
                  MMP_S2P_DIST_BAND,
                  p > 2 ? p - 1 : p,
                  LEN_UNEQUAL,
                  0,
                  3,
                  70000,
                  modes[m],
                  0,
                  m == 1};
      check_s2p(&c);
    }
}

static void test_s2p_other_grids(void **state) {
  int p = mr_size(), rows, alg, d;
  (void)state;

  for (rows = 1; rows <= p; rows++) {
    if (p % rows != 0)
      continue;
    /* Every algorithm that runs on the grid. */
    for (alg = 1; ALG(alg) != NULL; alg++)
      for (d = 0; d < MMP_S2P_DIST_COUNT; d += 3) {
        case_t c = {ALG(alg), d, p / 3 + 1, LEN_EQUAL, rows, 4, 40, 0, 0, 0};
        if (!(mr_alg_options(MMP_COLL_S2P, alg - 1) & MMP_OPT_ROWS))
          break;
        if (c.s > p)
          c.s = p;
        check_s2p(&c);
      }
  }
}

static void test_s2p_several_in_flight(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i, k;
  enum { K = 3 };
  static const char *const algs[K] = {"br_lin", "ring", "repos_xy_source"};
  mmp_request_t *q[K];
  uint8_t *b[K], mine[100];
  size_t *lens = malloc((size_t)p * sizeof(size_t));
  (void)state;

  for (i = 0; i < p; i++)
    lens[i] = 100;
  for (k = 0; k < K; k++) {
    mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
    o.algorithm = algs[k];
    b[k] = calloc((size_t)p, 100);
    memset(mine, me + 10 * k, sizeof(mine));
    assert_int_equal(mmp_ibcast_s2p(mine, 100, 1, b[k], 100 * (size_t)p, lens,
                                    NULL, w, &o, &q[k]),
                     0);
  }
  {
    int flag = 0;
    while (!flag)
      assert_int_equal(mmp_test(&q[0], &flag, NULL), 0);
  }
  assert_int_equal(mmp_waitall(K, q, NULL), 0);
  for (k = 0; k < K; k++) {
    for (i = 0; i < 100 * p; i++)
      assert_int_equal(b[k][i], (uint8_t)(i / 100 + 10 * k));
    free(b[k]);
  }
  free(lens);
}

static void test_s2p_short_buffer_is_truncated(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i, rc;
  size_t total = 50 * (size_t)p, cap = me == p - 1 ? total / 2 : total;
  uint8_t *b = calloc(total, 1), mine[50];
  (void)state;

  memset(mine, me, sizeof(mine));
  /* The last rank has half the room it needs: only it fails, and nobody
   * waits for it forever. */
  rc = mmp_bcast_s2p(mine, 50, 1, b, cap, NULL, NULL, w, NULL);
  assert_int_equal(rc, cap < total ? MMP_ETRUNC : 0);
  for (i = 0; i < (int)cap; i++)
    assert_int_equal(b[i], (uint8_t)(i / 50));
  assert_int_equal(mmp_barrier(w), 0);
  free(b);
}

static void test_s2p_bad_arguments(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank();
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  size_t *lens = calloc((size_t)p, sizeof(size_t));
  mmp_request_t *r = (mmp_request_t *)w;
  unsigned char mark[4];
  char c = 0;
  (void)state;

  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, &c, 1, NULL, NULL, NULL, NULL),
                   MMP_ECOMM);
  assert_int_equal(mmp_bcast_s2p(NULL, 1, 1, &c, 1, NULL, NULL, w, NULL),
                   MMP_EINVAL);
  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, NULL, 1, NULL, NULL, w, NULL),
                   MMP_EINVAL);
  /* lens[me] must say what this rank sends. */
  lens[me] = 2;
  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, &c, 1, lens, NULL, w, NULL),
                   MMP_EINVAL);
  assert_int_equal(mmp_bcast_s2p(&c, 1, 0, &c, 1, lens, NULL, w, NULL),
                   MMP_EINVAL);
  o.algorithm = "nope";
  assert_int_equal(mmp_ibcast_s2p(&c, 1, 1, &c, 1, NULL, NULL, w, &o, &r),
                   MMP_EINVAL);
  assert_null(r);
  o.algorithm = NULL;
  o.rows = p + 1;
  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, &c, 1, NULL, NULL, w, &o),
                   MMP_EINVAL);
  o.rows = 0;
  o.mode = 7;
  assert_int_equal(mmp_bcast_s2p(&c, 1, 1, &c, 1, NULL, NULL, w, &o),
                   MMP_EINVAL);
  assert_int_equal(mmp_s2p_dist(MMP_S2P_DIST_COUNT, 1, 4, 0, mark), MMP_EINVAL);
  assert_int_equal(mmp_s2p_dist(0, 5, 4, 0, mark), MMP_EINVAL);
  assert_int_equal(mmp_s2p_dist(0, 2, 4, 3, mark), MMP_EINVAL);
  assert_int_equal(mmp_s2p_dist_from_name("cross"), MMP_S2P_DIST_CROSS);
  assert_null(mmp_s2p_dist_name(99));
  free(lens);
}

/* Local: every distribution places exactly s sources on every grid, and
 * a few land where the paper puts them. */
static void test_s2p_distributions(void **state) {
  unsigned char m[100];
  int d, s, p, rows, i, n;
  (void)state;

  for (p = 1; p <= 20; p++)
    for (rows = 1; rows <= p; rows++)
      for (d = 0; d < MMP_S2P_DIST_COUNT && p % rows == 0; d++)
        for (s = 0; s <= p; s++) {
          assert_int_equal(mmp_s2p_dist(d, s, p, rows, m), 0);
          for (i = 0, n = 0; i < p; i++)
            n += m[i];
          assert_int_equal(n, s);
        }
  /* 10 x 10: R(30) is rows 0, 3, 6; Dr(10) the main diagonal; E(4) every
   * 25th rank; Sq(9) the top-left 3 x 3. */
  assert_int_equal(mmp_s2p_dist(MMP_S2P_DIST_ROW, 30, 100, 10, m), 0);
  assert_true(m[0] && m[39] && m[60] && m[69] && !m[10] && !m[70]);
  assert_int_equal(mmp_s2p_dist(MMP_S2P_DIST_DIAG_R, 10, 100, 10, m), 0);
  for (i = 0; i < 10; i++)
    assert_true(m[i * 11]);
  assert_int_equal(mmp_s2p_dist(MMP_S2P_DIST_EQUAL, 4, 100, 10, m), 0);
  assert_true(m[0] && m[25] && m[50] && m[75]);
  assert_int_equal(mmp_s2p_dist(MMP_S2P_DIST_SQUARE, 9, 100, 10, m), 0);
  assert_true(m[0] && m[1] && m[2] && m[10] && m[22] && !m[3] && !m[30]);
}

static void test_s2p_inconsistent_lengths_are_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i, rc, all_rc;
  size_t *lens, total = 0;
  uint8_t *buf, mine[64];
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  int *rcs;
  (void)state;

  if (p < 2)
    skip();
  lens = malloc((size_t)p * sizeof(size_t));
  rcs = malloc((size_t)p * sizeof(int));
  /* The last rank believes rank 0's message is 7 bytes longer: it fails,
   * whoever it passes messages to may fail, nobody hangs. */
  for (i = 0; i < p; i++)
    lens[i] = 64;
  if (me == p - 1)
    lens[0] += 7;
  for (i = 0; i < p; i++)
    total += lens[i];
  buf = malloc(total);
  memset(mine, me, sizeof(mine));
  o.algorithm = "br_lin";
  rc = mmp_bcast_s2p(mine, 64, 1, buf, total, lens, NULL, w, &o);
  if (me == p - 1)
    assert_int_equal(rc, MMP_EMISMATCH);
  else
    assert_true(rc == 0 || rc == MMP_EMISMATCH);
  /* Everyone learns every result, and the next collectives work. */
  assert_int_equal(mmp_barrier(w), 0);
  assert_int_equal(mmp_bcast_s2p(&rc, sizeof(int), 1, rcs,
                                 (size_t)p * sizeof(int), NULL, NULL, w, NULL),
                   0);
  for (i = 0, all_rc = 0; i < p; i++)
    all_rc |= rcs[i] != 0;
  assert_true(all_rc);
  free(lens);
  free(buf);
  free(rcs);
}

static void test_s2p_automatic_choice_is_the_same_everywhere(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), i, d, found;
  uint64_t *algs = malloc((size_t)p * sizeof(uint64_t)), mine;
  size_t *lens = malloc((size_t)p * sizeof(size_t));
  unsigned char *mark = malloc((size_t)p);
  mmp_s2p_opts_t sel;
  (void)state;

  for (d = 0; d < MMP_S2P_DIST_COUNT; d++) {
    assert_int_equal(mmp_s2p_dist(d, (p + 2) / 3, p, 0, mark), 0);
    for (i = 0; i < p; i++)
      lens[i] = mark[i] ? 1000 * (size_t)(d + 1) : MMP_S2P_NONE;
    assert_int_equal(mmp_s2p_select(w, lens, &sel), 0);
    for (i = 1, found = 0; ALG(i) != NULL; i++)
      found += strcmp(ALG(i), sel.algorithm) == 0;
    assert_int_equal(found, 1);
    mine = mr_hash(sel.algorithm);
    assert_int_equal(mmp_bcast_s2p(&mine, sizeof(mine), 1, algs,
                                   (size_t)p * sizeof(mine), NULL, NULL, w,
                                   NULL),
                     0);
    for (i = 0; i < p; i++)
      assert_true(algs[i] == mine);
  }
  free(algs);
  free(lens);
  free(mark);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_s2p_distributions),
      cmocka_unit_test(test_s2p_bad_arguments),
      cmocka_unit_test(test_s2p_every_algorithm_and_distribution),
      cmocka_unit_test(test_s2p_zero_length_messages),
      cmocka_unit_test(test_s2p_size_exchange),
      cmocka_unit_test(test_s2p_long_messages_and_modes),
      cmocka_unit_test(test_s2p_other_grids),
      cmocka_unit_test(test_s2p_several_in_flight),
      cmocka_unit_test(test_s2p_short_buffer_is_truncated),
      cmocka_unit_test(test_s2p_inconsistent_lengths_are_an_error),
      cmocka_unit_test(test_s2p_automatic_choice_is_the_same_everywhere),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
