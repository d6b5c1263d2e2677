/* SPDX-License-Identifier: MIT */
/*
 * The first automatic choice on a communicator, made by a non-blocking
 * collective that the ranks start at different points: each rank's start
 * must return without waiting for the others, whatever the order in which
 * they start their first collectives on the world, its duplicates and its
 * splits (the network model AUTO prices with is the world's, measured in
 * mmp_init and inherited). No saved profile is set, so that the model is
 * measured. The same for an explicit multicast broadcast and s-to-p
 * (case mcast): whether multicast works was decided in mmp_init, and a new
 * duplicate or split takes the world's verdict, so no start checks it
 * with the other ranks. Nor does an s-to-p whose lengths the ranks do
 * not know (case s2p_lens): the collective exchanges them as its first
 * steps, after the start has returned. A rank that waits longer than DEADLINE_S
 * for any of it fails the test instead of hanging it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mr_common.h"

#define DEADLINE_S 60
#define LEN 4096
#define COUNT 64

static void hung(int sig) {
  static const char msg[] =
      "mr_first_auto: a collective's start waited for the other ranks "
      "(deadline passed)\n";
  (void)sig;
  (void)!write(2, msg, sizeof(msg) - 1);
  _exit(3);
}

static void deadline_on(void) {
  signal(SIGALRM, hung);
  alarm(DEADLINE_S);
}

static void deadline_off(void) {
  alarm(0);
}

/* Rank 0 ends a blocking barrier on the world before it starts a
 * broadcast on a duplicate; the others start the broadcast first. */
static void test_barrier_then_ibcast_reversed(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *d = NULL;
  mmp_request_t *r = NULL;
  uint8_t buf[LEN], want[LEN];
  (void)state;

  assert_int_equal(mmp_comm_dup(w, &d), 0);
  mr_fill(want, LEN, 7);
  if (mr_rank() == 0)
    memcpy(buf, want, LEN);
  else
    memset(buf, 0, LEN);
  deadline_on();
  if (mr_rank() == 0) {
    assert_int_equal(mmp_barrier(w), 0);
    assert_int_equal(mmp_ibcast(buf, LEN, 0, d, NULL, &r), 0);
  } else {
    assert_int_equal(mmp_ibcast(buf, LEN, 0, d, NULL, &r), 0);
    assert_int_equal(mmp_barrier(w), 0);
  }
  assert_int_equal(mmp_wait(&r, NULL), 0);
  deadline_off();
  assert_memory_equal(buf, want, LEN);
  assert_int_equal(mmp_comm_free(&d), 0);
}

/* Two duplicates, each rank starting its first collectives on them in
 * the other order from its neighbours'. */
static void test_two_dups_reversed(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *d1 = NULL, *d2 = NULL;
  mmp_request_t *r[2] = {NULL, NULL};
  int p = mr_size(), me = mr_rank(), i;
  int32_t in[COUNT], sum[COUNT];
  uint8_t buf[LEN], want[LEN];
  (void)state;

  assert_int_equal(mmp_comm_dup(w, &d1), 0);
  assert_int_equal(mmp_comm_dup(w, &d2), 0);
  mr_fill(want, LEN, 11);
  memcpy(buf, want, LEN);
  if (me != p - 1)
    memset(buf, 0, LEN);
  for (i = 0; i < COUNT; i++)
    in[i] = me + i;
  deadline_on();
  if (me % 2 == 0) {
    assert_int_equal(mmp_ibcast(buf, LEN, p - 1, d1, NULL, &r[0]), 0);
    assert_int_equal(
        mmp_iallreduce(in, sum, COUNT, MMP_INT32, MMP_SUM, d2, NULL, &r[1]), 0);
  } else {
    assert_int_equal(
        mmp_iallreduce(in, sum, COUNT, MMP_INT32, MMP_SUM, d2, NULL, &r[1]), 0);
    assert_int_equal(mmp_ibcast(buf, LEN, p - 1, d1, NULL, &r[0]), 0);
  }
  assert_int_equal(mmp_wait(&r[0], NULL), 0);
  assert_int_equal(mmp_wait(&r[1], NULL), 0);
  deadline_off();
  assert_memory_equal(buf, want, LEN);
  for (i = 0; i < COUNT; i++)
    assert_int_equal(sum[i], p * (p - 1) / 2 + p * i);
  assert_int_equal(mmp_comm_free(&d1), 0);
  assert_int_equal(mmp_comm_free(&d2), 0);
}

/* A split in two halves and a duplicate: within each half, neighbours
 * start their first collectives on the half and on the duplicate in
 * opposite orders. */
static void test_split_and_dup_reversed(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *s = NULL, *d = NULL;
  mmp_request_t *r[2] = {NULL, NULL};
  int p = mr_size(), me = mr_rank(), i, q, sp;
  int32_t mine[COUNT], all[COUNT * 16], sum[COUNT];
  (void)state;

  assert_true(p <= 16);
  assert_int_equal(mmp_comm_split(w, me % 2, -me, &s), 0);
  assert_int_equal(mmp_comm_dup(w, &d), 0);
  sp = mmp_comm_size(s);
  for (i = 0; i < COUNT; i++)
    mine[i] = me * 1000 + i;
  deadline_on();
  if ((me / 2) % 2 == 0) {
    assert_int_equal(
        mmp_iallgather(mine, COUNT, all, COUNT, MMP_INT32, d, NULL, &r[0]), 0);
    assert_int_equal(
        mmp_iallreduce(mine, sum, COUNT, MMP_INT32, MMP_SUM, s, NULL, &r[1]),
        0);
  } else {
    assert_int_equal(
        mmp_iallreduce(mine, sum, COUNT, MMP_INT32, MMP_SUM, s, NULL, &r[1]),
        0);
    assert_int_equal(
        mmp_iallgather(mine, COUNT, all, COUNT, MMP_INT32, d, NULL, &r[0]), 0);
  }
  assert_int_equal(mmp_wait(&r[0], NULL), 0);
  assert_int_equal(mmp_wait(&r[1], NULL), 0);
  deadline_off();
  for (q = 0; q < p; q++)
    for (i = 0; i < COUNT; i++)
      assert_int_equal(all[q * COUNT + i], q * 1000 + i);
  for (i = 0; i < COUNT; i++) {
    int32_t want = 0;
    for (q = me % 2; q < p; q += 2)
      want += q * 1000 + i;
    assert_int_equal(sum[i], want);
  }
  assert_int_equal(sp, (p - me % 2 + 1) / 2);
  assert_int_equal(mmp_comm_free(&s), 0);
  assert_int_equal(mmp_comm_free(&d), 0);
}

/* Explicit multicast, non-blocking, on communicators no collective has
 * touched: rank 0 starts a broadcast on a new duplicate and on a new split
 * after a barrier of the world, the others start them before it and in
 * the other order; then a multicast s-to-p on a second duplicate, rank 0
 * before the barrier and the others after it. A start that checked
 * multicast with the other ranks would wait for ranks that wait in the
 * barrier. Every rank ends with its root's bytes, and the s-to-p's
 * status counts all of them. */
static void test_mcast_reversed(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *d = NULL, *s = NULL, *d2 = NULL;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp_s2p_opts_t so = MMP_S2P_OPTS_INIT;
  mmp_request_t *r[3] = {NULL, NULL, NULL};
  int p = mr_size(), me = mr_rank(), q;
  uint8_t buf[LEN], want[LEN], half[LEN], hwant[LEN];
  uint8_t mine[LEN], all[LEN * 16], awant[LEN];
  size_t lens[16];
  mmp_status_t st;
  (void)state;

  assert_true(p <= 16);
  assert_int_equal(mmp_comm_dup(w, &d), 0);
  assert_int_equal(mmp_comm_split(w, me % 2, me, &s), 0);
  assert_int_equal(mmp_comm_dup(w, &d2), 0);
  o.algorithm = "multicast";
  so.algorithm = "multicast";
  mr_fill(want, LEN, 21);
  mr_fill(hwant, LEN, 22 + (uint64_t)(me % 2));
  memcpy(buf, want, LEN);
  memcpy(half, hwant, LEN);
  if (me != 0)
    memset(buf, 0, LEN);
  if (mmp_comm_rank(s) != 0)
    memset(half, 0, LEN);
  for (q = 0; q < p; q++)
    lens[q] = LEN;
  mr_fill(mine, LEN, 100 + (uint64_t)me);
  deadline_on();
  if (me == 0) {
    assert_int_equal(mmp_ibcast_s2p(mine, LEN, 1, all, LEN * (size_t)p, lens,
                                    NULL, d2, &so, &r[2]),
                     0);
    assert_int_equal(mmp_barrier(w), 0);
    assert_int_equal(mmp_ibcast(buf, LEN, 0, d, &o, &r[0]), 0);
    assert_int_equal(mmp_ibcast(half, LEN, 0, s, &o, &r[1]), 0);
  } else {
    assert_int_equal(mmp_ibcast(half, LEN, 0, s, &o, &r[1]), 0);
    assert_int_equal(mmp_ibcast(buf, LEN, 0, d, &o, &r[0]), 0);
    assert_int_equal(mmp_barrier(w), 0);
    assert_int_equal(mmp_ibcast_s2p(mine, LEN, 1, all, LEN * (size_t)p, lens,
                                    NULL, d2, &so, &r[2]),
                     0);
  }
  assert_int_equal(mmp_wait(&r[0], NULL), 0);
  assert_int_equal(mmp_wait(&r[1], NULL), 0);
  assert_int_equal(mmp_wait(&r[2], &st), 0);
  deadline_off();
  assert_memory_equal(buf, want, LEN);
  assert_memory_equal(half, hwant, LEN);
  assert_int_equal(st.bytes, LEN * (size_t)p);
  for (q = 0; q < p; q++) {
    mr_fill(awant, LEN, 100 + (uint64_t)q);
    assert_memory_equal(all + (size_t)q * LEN, awant, LEN);
  }
  assert_int_equal(mmp_comm_free(&d), 0);
  assert_int_equal(mmp_comm_free(&s), 0);
  assert_int_equal(mmp_comm_free(&d2), 0);
}

/* s-to-p with the lengths unknown (lens NULL) on two duplicates, started
 * in opposite orders by neighbouring ranks, then waited on: the lengths
 * are exchanged by the collective, not inside the start, so neither
 * start waits for a rank that is still in the other. Every rank ends
 * with every source's bytes, the lengths in out_lens and status.bytes
 * their total. Rank q sends LEN - 7q bytes (odd ranks nothing on b). */
static void test_s2p_lens_reversed(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *c[2] = {NULL, NULL};
  mmp_request_t *r[2] = {NULL, NULL};
  int p = mr_size(), me = mr_rank(), q, k, first;
  uint8_t mine[2][LEN], all[2][LEN * 16], want[LEN];
  size_t got[2][16], total[2] = {0, 0}, off;
  mmp_status_t st[2];
  (void)state;

  assert_true(p <= 16);
  assert_int_equal(mmp_comm_dup(w, &c[0]), 0);
  assert_int_equal(mmp_comm_dup(w, &c[1]), 0);
  for (k = 0; k < 2; k++) {
    mr_fill(mine[k], LEN, 200 + 16 * (uint64_t)k + (uint64_t)me);
    memset(all[k], 0, sizeof(all[k]));
    for (q = 0; q < p; q++)
      total[k] += k == 1 && q % 2 == 1 ? 0 : LEN - 7 * (size_t)q;
  }
  deadline_on();
  /* Even ranks start on c[0] then c[1], odd ones the other way. */
  first = me % 2;
  for (q = 0; q < 2; q++) {
    k = q ^ first;
    assert_int_equal(
        mmp_ibcast_s2p(mine[k], LEN - 7 * (size_t)me, k == 0 || me % 2 == 0,
                       all[k], sizeof(all[k]), NULL, got[k], c[k], NULL, &r[k]),
        0);
  }
  assert_int_equal(mmp_wait(&r[0], &st[0]), 0);
  assert_int_equal(mmp_wait(&r[1], &st[1]), 0);
  deadline_off();
  for (k = 0; k < 2; k++) {
    assert_int_equal(st[k].error, 0);
    assert_int_equal(st[k].bytes, total[k]);
    for (q = 0, off = 0; q < p; q++) {
      size_t len = LEN - 7 * (size_t)q;
      if (k == 1 && q % 2 == 1) {
        assert_int_equal(got[k][q], MMP_S2P_NONE);
        continue;
      }
      assert_int_equal(got[k][q], len);
      mr_fill(want, LEN, 200 + 16 * (uint64_t)k + (uint64_t)q);
      assert_memory_equal(all[k] + off, want, len);
      off += len;
    }
  }
  assert_int_equal(mmp_comm_free(&c[0]), 0);
  assert_int_equal(mmp_comm_free(&c[1]), 0);
}

/* One case per job (argv[1]: barrier, dups, split, mcast or
 * s2p_lens), so that each
 * starts on communicators that no earlier collective has touched. */
int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_barrier_then_ibcast_reversed),
      cmocka_unit_test(test_two_dups_reversed),
      cmocka_unit_test(test_split_and_dup_reversed),
      cmocka_unit_test(test_mcast_reversed),
      cmocka_unit_test(test_s2p_lens_reversed),
  };
  static const char *const names[] = {"barrier", "dups", "split", "mcast",
                                      "s2p_lens"};
  size_t i;

  for (i = 0; argc == 2 && i < sizeof(names) / sizeof(names[0]); i++)
    if (strcmp(argv[1], names[i]) == 0)
      return _cmocka_run_group_tests(names[i], &tests[i], 1, mr_setup,
                                     mr_teardown);
  fprintf(stderr, "usage: mr_first_auto barrier|dups|split|mcast|s2p_lens\n");
  return 64;
}
