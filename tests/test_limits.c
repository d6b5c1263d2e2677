/* SPDX-License-Identifier: MIT */
/*
 * Per-peer bounds on what a peer can make a rank hold: a peer that leaves
 * more rendezvous requests unmatched than MINIMP_MAX_UNEXPECTED_RTS has its
 * connection cut (operations with it fail with MMP_EPEERLOST) and the rank
 * never holds more entries than the limit; a program that stays within the
 * limit, with many unexpected eager messages besides, works. Two forked
 * ranks of an embedded job (mmp_init_ex).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "minimp.h"
#include "embed_util.h"
#include "runtime/internal.h"

static const char *key = "0123456789abcdef0123456789abcdef";

#define LIMIT 100    /* rank 1's MINIMP_MAX_UNEXPECTED_RTS */
#define NEAGER 500   /* unexpected eager messages beside the RTS */
#define FLOOD 1000   /* RTS a misbehaving rank sends */
#define TAG_EAGER 1000

static pid_t spawn(int rank, const char *addr, int (*body)(mmp_comm_t *)) {
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(30);
    if (rank == 1)
      setenv("MINIMP_MAX_UNEXPECTED_RTS", "100", 1);
    if (mmp_init_ex(rank, 2, addr, key, NULL,
                    rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0) != 0)
      _exit(90);
    _exit(body(mmp_comm_world()));
  }
  return pid;
}

static void run_pair(int (*r0)(mmp_comm_t *), int (*r1)(mmp_comm_t *)) {
  char addr[64];
  pid_t p0, p1;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  p1 = spawn(1, addr, r1);
  p0 = spawn(0, addr, r0);
  assert_int_equal(exit_code(p1), 0);
  assert_int_equal(exit_code(p0), 0);
}

/* Waits until a message with `tag` from rank 0 is here. */
static int arrived(mmp_comm_t *w, int tag) {
  int flag = 0, k;

  for (k = 0; k < 2000 && !flag; k++) {
    if (mmp_iprobe(0, tag, w, &flag, NULL) != 0)
      return 0;
    if (!flag)
      usleep(5000);
  }
  return flag;
}

/* Rank 0: LIMIT rendezvous sends (tags 0..LIMIT-1) and NEAGER eager ones,
 * none of which rank 1 has a receive for yet. */
static int within_sender(mmp_comm_t *w) {
  static int v[LIMIT + NEAGER];
  mmp_request_t *r[LIMIT + NEAGER];
  int i;

  for (i = 0; i < LIMIT + NEAGER; i++) {
    v[i] = i;
    if (mmp_isend_ex(&v[i], sizeof(v[i]), 1,
                     i < LIMIT ? i : TAG_EAGER + i - LIMIT, w,
                     i < LIMIT ? MMP_SEND_RNDV : MMP_SEND_EAGER, &r[i]) != 0)
      return 10;
  }
  if (mmp_waitall(LIMIT + NEAGER, r, NULL) != 0)
    return 11;
  return mmp_finalize() == 0 ? 0 : 12;
}

/* Rank 1: once everything is here, receives it all in reverse order. */
static int within_receiver(mmp_comm_t *w) {
  int i, v;

  if (!arrived(w, TAG_EAGER + NEAGER - 1) || !arrived(w, LIMIT - 1))
    return 20;
  for (i = LIMIT + NEAGER - 1; i >= 0; i--) {
    v = -1;
    if (mmp_recv(&v, sizeof(v), 0, i < LIMIT ? i : TAG_EAGER + i - LIMIT, w,
                 NULL) != 0 ||
        v != i)
      return 21;
  }
  /* All of rank 0's RTS were unmatched here at once: exactly the limit. */
  if (mmp__debug_unexp_rts_peak() != LIMIT)
    return 22;
  return mmp_finalize() == 0 ? 0 : 23;
}

/* A program with as many unmatched rendezvous requests as the limit
 * allows, and many unexpected eager messages, runs to the end. */
static void test_limits_unexpected_within_limit_work(void **state) {
  (void)state;
  run_pair(within_sender, within_receiver);
}

/* Rank 0: FLOOD rendezvous sends that rank 1 never matches. */
static int flooder(mmp_comm_t *w) {
  static char b[FLOOD];
  mmp_request_t *r[FLOOD];
  int i, rc;

  for (i = 0; i < FLOOD; i++) {
    rc = mmp_isend_ex(&b[i], 1, 1, i, w, MMP_SEND_RNDV, &r[i]);
    if (rc == MMP_EPEERLOST && i > LIMIT)
      break; /* already cut off: later sends fail at once */
    if (rc != 0)
      return 30;
  }
  /* Rank 1 cuts the connection: the sends cannot complete. */
  rc = mmp_waitall((size_t)i, r, NULL);
  return rc == MMP_EPEERLOST ? 0 : 31;
}

/* Rank 1: waits for a message rank 0 never sends; the flood must end it
 * with MMP_EPEERLOST, and the entries held never passed the limit. */
static int flooded(mmp_comm_t *w) {
  int v;

  if (mmp_recv(&v, sizeof(v), 0, FLOOD + 1, w, NULL) != MMP_EPEERLOST)
    return 40;
  if (mmp__debug_unexp_rts_peak() != LIMIT)
    return 41;
  return 0;
}

static void test_limits_rts_flood_is_cut_off(void **state) {
  (void)state;
  run_pair(flooder, flooded);
}

/* A limit that is not a number from 1 up is refused at init. */
static void test_limits_bad_value_refused(void **state) {
  static const char *const bad[] = {"0", "-5", "lots", "99999999999"};
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("MINIMP_MAX_UNEXPECTED_RTS", bad[i], 1);
    assert_int_equal(mmp_init_ex(0, 2, "127.0.0.1:1", key, NULL, 0),
                     MMP_EENV);
  }
  unsetenv("MINIMP_MAX_UNEXPECTED_RTS");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_limits_unexpected_within_limit_work),
      cmocka_unit_test(test_limits_rts_flood_is_cut_off),
      cmocka_unit_test(test_limits_bad_value_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
