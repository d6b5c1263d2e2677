/* SPDX-License-Identifier: MIT */
/*
 * The s-to-p plans without a network: for every round-based algorithm,
 * every distribution, every s and every p up to 40 (and a few grids of
 * other shapes), the simulated holdings must end with every rank holding
 * every message, and the plan must price to something finite. Also the
 * automatic choice's obvious cases. Much larger p than the multi-rank
 * tests can afford.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

/* The s-to-p row of that name. */
#define S(name) mmp__alg_find(&mmp__s2p_family, #name)

static const mmp_netmodel_t net = {50e-6, 8e-9}; /* 100 Mbit/s-ish */

/* Fills x for distribution d with s sources of `len` bytes. */
static void make(mmp__s2p_t *x, int p, int rows, int d, int s, size_t len) {
  unsigned char *m = malloc((size_t)p);
  size_t *lens = malloc((size_t)p * sizeof(size_t));
  int i;

  assert_int_equal(mmp_s2p_dist(d, s, p, rows, m), 0);
  for (i = 0; i < p; i++)
    lens[i] = m[i] ? len + (size_t)(i % 3) : MMP_S2P_NONE;
  assert_int_equal(mmp__s2p_init(x, p, 0, rows, lens), 0);
  free(m);
  free(lens);
}

/* Every row built from rounds, in turn: row i onwards (i < nrows), or
 * -1 after the last. */
static int next_planned(int i) {
  while (i < mmp__s2p_family.nrows && mmp__s2p_family.rows[i]->plan == NULL)
    i++;
  return i < mmp__s2p_family.nrows ? i : -1;
}

static void check_plan(const mmp__alg_t *alg, const mmp__s2p_t *x, int d) {
  mmp__s2p_plan_t pl;
  int rc;

  assert_int_equal(mmp__s2p_plan_init(&pl, x, NULL, &net), 0);
  rc = alg->plan(&pl);
  if (rc == 0)
    rc = mmp__s2p_plan_check(&pl);
  if (rc != 0)
    fail_msg("%s on %s, p %d (%d x %d), s %d: %s", alg->name,
             mmp_s2p_dist_name(d), x->p, x->rows, x->cols, x->ns,
             mmp_err_name(rc));
  assert_true(isfinite(pl.cost) && pl.cost >= 0);
  mmp__s2p_plan_fini(&pl);
}

static void test_s2p_plan_every_case_completes(void **state) {
  int p, d, s, alg;
  (void)state;

  for (p = 1; p <= 40; p++)
    for (d = 0; d < MMP_S2P_DIST_COUNT; d++)
      for (s = 0; s <= p; s++)
        for (alg = next_planned(0); alg >= 0; alg = next_planned(alg + 1)) {
          mmp__s2p_t x;
          make(&x, p, 0, d, s, 100);
          check_plan(mmp__s2p_family.rows[alg], &x, d);
          mmp__s2p_fini(&x);
        }
}

static void test_s2p_plan_other_grids(void **state) {
  static const int shapes[][2] = {{2, 12}, {12, 2}, {3, 8}, {5, 5},
                                  {1, 30}, {6, 7},  {4, 16}};
  size_t k;
  int d, s, alg;
  (void)state;

  for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
    int r = shapes[k][0], p = r * shapes[k][1];
    for (d = 0; d < MMP_S2P_DIST_COUNT; d++)
      for (s = 0; s <= p; s += 1 + p / 10)
        for (alg = next_planned(0); alg >= 0; alg = next_planned(alg + 1)) {
          mmp__s2p_t x;
          make(&x, p, r, d, s, 1000);
          check_plan(mmp__s2p_family.rows[alg], &x, d);
          mmp__s2p_fini(&x);
        }
  }
}

static void test_s2p_plan_ideal_distribution_never_merges_early(void **state) {
  mmp__s2p_t x;
  mmp__s2p_plan_t pl;
  int p = 64, s = 8;
  (void)state;

  /* Repos_Lin on sources already on the first s ranks costs exactly
   * Br_Lin's rounds: log2(p/s) = 3 rounds of one message, then 1, 2, 4. */
  make(&x, p, 0, MMP_S2P_DIST_ROW, s, 1000);
  for (int j = 0; j < s; j++)
    x.len[j] = 1000;
  assert_int_equal(x.src[s - 1], s - 1);
  assert_int_equal(mmp__s2p_plan_init(&pl, &x, NULL, &net), 0);
  assert_int_equal(S(repos_lin)->plan(&pl), 0);
  assert_true(fabs(pl.cost - (6 * net.alpha + (3 + 7) * 1000 * net.beta)) <
              1e-9);
  mmp__s2p_plan_fini(&pl);
  mmp__s2p_fini(&x);
}

static void test_s2p_choice_obvious_cases(void **state) {
  mmp__s2p_t x;
  (void)state;

  /* One long message: a pipelined broadcast beats log2 p whole copies. */
  make(&x, 16, 0, MMP_S2P_DIST_EQUAL, 1, 1 << 20);
  assert_ptr_equal(mmp__s2p_choose(&x, &net, NULL), S(2step));
  mmp__s2p_fini(&x);
  /* Many tiny messages: log2 p rounds beat p - 1. */
  make(&x, 64, 0, MMP_S2P_DIST_EQUAL, 64, 8);
  assert_ptr_not_equal(mmp__s2p_choose(&x, &net, NULL), S(ring));
  assert_ptr_not_equal(mmp__s2p_choose(&x, &net, NULL), S(alltoall));
  mmp__s2p_fini(&x);
}

/* The multicast row (docs/design/auto.md, "Multicast"): never priced
 * without usable multicast figures; without loss one source's datagrams
 * reach all 15 receivers in one pass, which beats any TCP row; under 10%
 * loss the repairs price it out. */
static void test_s2p_choice_multicast(void **state) {
  mmp__mcast_verdict_t mc = {1, 1408, 0, 42}, off = {0, 1408, 0, 42};
  mmp__s2p_t x;
  (void)state;

  make(&x, 16, 0, MMP_S2P_DIST_EQUAL, 1, 1 << 20);
  assert_ptr_not_equal(mmp__s2p_choose(&x, &net, NULL), S(multicast));
  assert_ptr_not_equal(mmp__s2p_choose(&x, &net, &off), S(multicast));
  assert_true(isinf(mmp__s2p_cost(S(multicast), &x, &net, &off)));
  assert_ptr_equal(mmp__s2p_choose(&x, &net, &mc), S(multicast));
  mc.loss = 0.10;
  assert_ptr_not_equal(mmp__s2p_choose(&x, &net, &mc), S(multicast));
  mmp__s2p_fini(&x);
  /* s sources share the receivers' links: s times one source's time. */
  mc.loss = 0;
  make(&x, 16, 0, MMP_S2P_DIST_EQUAL, 1, 65536);
  {
    double one = mmp__s2p_cost(S(multicast), &x, &net, &mc), four;
    mmp__s2p_fini(&x);
    make(&x, 16, 0, MMP_S2P_DIST_EQUAL, 4, 65536);
    four = mmp__s2p_cost(S(multicast), &x, &net, &mc);
    assert_true(four > 3.9 * (one - net.alpha) && four < 4.1 * one);
  }
  mmp__s2p_fini(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_s2p_choice_multicast),
      cmocka_unit_test(test_s2p_plan_every_case_completes),
      cmocka_unit_test(test_s2p_plan_other_grids),
      cmocka_unit_test(test_s2p_plan_ideal_distribution_never_merges_early),
      cmocka_unit_test(test_s2p_choice_obvious_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
