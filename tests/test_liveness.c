/* SPDX-License-Identifier: MIT */
/*
 * Liveness under a late loop: a rank whose loop ran nothing for several
 * times MINIMP_PEER_TIMEOUT_MS (descheduled on a saturated machine, or one
 * long iteration) must not declare lost a peer whose bytes kept arriving
 * meanwhile, while a peer that is really stopped is still found within
 * the timeout, with or without such a stall. Two forked ranks of an
 * embedded job (mmp_init_ex), each with its own timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "minimp.h"
#include "runtime/internal.h"
#include "embed_util.h"

static const char *key = "0123456789abcdef0123456789abcdef";

#define TIMEOUT_MS 300 /* the judging rank's MINIMP_PEER_TIMEOUT_MS */
#define NMSG 60        /* messages sent across the stall, 20 ms apart */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Forks rank `rank` of 2 with MINIMP_PEER_TIMEOUT_MS `timeout`; the child
 * runs body(world) and exits with its result (init failure: 90). */
static pid_t spawn(int rank, const char *addr, const char *timeout,
                   int (*body)(mmp_comm_t *w)) {
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20);
    setenv("MINIMP_PEER_TIMEOUT_MS", timeout, 1);
    if (mmp_init_ex(rank, 2, addr, key, NULL,
                    rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0) != 0)
      _exit(90);
    _exit(body(mmp_comm_world()));
  }
  return pid;
}

/* Rank 0, patient: once rank 1 says it stalls, keeps sending a byte every
 * 20 ms for about four of rank 1's timeouts after the stall began. */
static int sender(mmp_comm_t *w) {
  char b = 7;
  int i, v = 0;

  if (mmp_recv(&v, sizeof(v), 1, 1, w, NULL) != 0 ||
      mmp_send(&v, sizeof(v), 1, 2, w) != 0)
    return 10;
  for (i = 0; i < NMSG; i++) {
    if (mmp_send(&b, 1, 1, 3, w) != 0)
      return 11;
    usleep(20000);
  }
  if (mmp_recv(&v, sizeof(v), 1, 5, w, NULL) != 0 || v != NMSG)
    return 12;
  return mmp_finalize() == 0 ? 0 : 13;
}

/* Rank 1, with the short timeout: stalls its loop for four timeouts while
 * rank 0 sends, then must receive every byte, rank 0 never lost. */
static int stalled_receiver(mmp_comm_t *w) {
  char b = 0;
  int i, v = 1;

  /* A round trip first: the connection must be up before the stall. */
  if (mmp_send(&v, sizeof(v), 0, 1, w) != 0 ||
      mmp_recv(&v, sizeof(v), 0, 2, w, NULL) != 0)
    return 20;
  if (mmp__debug_stall_loop(4 * TIMEOUT_MS) != 0)
    return 21;
  for (i = 0; i < NMSG; i++) {
    int rc = mmp_recv(&b, 1, 0, 3, w, NULL);
    if (rc == MMP_EPEERLOST)
      return 22;
    if (rc != 0 || b != 7)
      return 23;
  }
  v = NMSG;
  if (mmp_send(&v, sizeof(v), 0, 5, w) != 0)
    return 24;
  return mmp_finalize() == 0 ? 0 : 25;
}

/* The loop of rank 1 runs nothing for 4 x its timeout while rank 0's
 * bytes arrive: afterwards the heartbeat must not call rank 0 lost
 * (it did: the tick runs before the poll that reads them, and frames were
 * dated by the loop's cached clock). */
static void test_liveness_stalled_loop_keeps_live_peer(void **state) {
  char addr[64];
  pid_t p0, p1;
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  p1 = spawn(1, addr, "300", stalled_receiver);
  p0 = spawn(0, addr, "20000", sender);
  assert_int_equal(exit_code(p1), 0);
  assert_int_equal(exit_code(p0), 0);
}

/* Rank 0, with the short timeout: after a round trip, waits for rank 1's
 * message, which comes after rank 1's busy phase. */
static int patient_judge(mmp_comm_t *w) {
  int v = 0;

  if (mmp_recv(&v, sizeof(v), 1, 1, w, NULL) != 0 ||
      mmp_send(&v, sizeof(v), 1, 2, w) != 0)
    return 50;
  if (mmp_recv(&v, sizeof(v), 1, 5, w, NULL) != 0 || v != 5)
    return 51;
  return mmp_finalize() == 0 ? 0 : 52;
}

/* Rank 1: inside the library for 4 x rank 0's timeout without ever
 * waiting (sends to itself and receives of what is already there need no
 * loop), then sends rank 0 its message. */
static int busy_in_library(mmp_comm_t *w) {
  double t0;
  int v = 1;
  char b = 0;

  if (mmp_send(&v, sizeof(v), 0, 1, w) != 0 ||
      mmp_recv(&v, sizeof(v), 0, 2, w, NULL) != 0)
    return 55;
  t0 = now_s();
  while (now_s() - t0 < 4 * TIMEOUT_MS * 1e-3)
    if (mmp_send(&b, 1, 1, 8, w) != 0 || mmp_recv(&b, 1, 1, 8, w, NULL) != 0)
      return 56;
  v = 5;
  if (mmp_send(&v, sizeof(v), 0, 5, w) != 0)
    return 57;
  return mmp_finalize() == 0 ? 0 : 58;
}

/* A rank busy in the library without running its loop (it posted no wait)
 * still answers its peers' PINGs: the progress thread gives the loop a
 * pass every heartbeat period (before, it waited for the application to
 * be idle, and rank 0 declared rank 1 lost). */
static void test_liveness_busy_rank_stays_alive(void **state) {
  char addr[64];
  pid_t p0, p1;
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  /* Rank 1's application never looks idle to its progress thread, even
   * when it is descheduled for a moment on a loaded machine. */
  setenv("MINIMP_PROGRESS_GRACE_US", "10000000", 1);
  p1 = spawn(1, addr, "300", busy_in_library);
  unsetenv("MINIMP_PROGRESS_GRACE_US");
  p0 = spawn(0, addr, "300", patient_judge);
  assert_int_equal(exit_code(p0), 0);
  assert_int_equal(exit_code(p1), 0);
}

/* Rank 1 stops itself (SIGSTOP) after a round trip, so that the
 * connection is up on both sides (a send alone may still be queued). */
static int stopper(mmp_comm_t *w) {
  int v = 1;

  if (mmp_send(&v, sizeof(v), 0, 1, w) != 0 ||
      mmp_recv(&v, sizeof(v), 0, 2, w, NULL) != 0)
    return 30;
  raise(SIGSTOP);
  return 31; /* only if continued */
}

/* Rank 0 with the short timeout: how long after the hello (or after its
 * own stall, when `stall_ms` > 0) until a receive from rank 1 fails with
 * MMP_EPEERLOST. Exit 0 if within the bound, else a code saying why. */
static int judge(mmp_comm_t *w, unsigned stall_ms) {
  int v = 0, rc;
  double t0, t;

  /* Before the peer's last message: its last sign of life is later, so
   * the loss must come at least a timeout after this (taken after the
   * receive, a descheduled rank saw it sooner and the check failed). */
  t0 = now_s();
  if (mmp_recv(&v, sizeof(v), 1, 1, w, NULL) != 0 ||
      mmp_send(&v, sizeof(v), 1, 2, w) != 0)
    return 40;
  if (stall_ms > 0 && mmp__debug_stall_loop(stall_ms) != 0)
    return 41;
  t = now_s();
  rc = mmp_recv(&v, sizeof(v), 1, 9, w, NULL);
  if (rc != MMP_EPEERLOST)
    return 42;
  /* The timeout, a tick or two of the heartbeat (timeout / 8), and slack
   * for a loaded machine; never before a whole timeout of silence. */
  if (now_s() - t0 < TIMEOUT_MS * 1e-3)
    return 43;
  if (now_s() - t > TIMEOUT_MS * 1e-3 + 1.2)
    return 44;
  return 0;
}

static int judge_no_stall(mmp_comm_t *w) {
  return judge(w, 0);
}

static int judge_after_stall(mmp_comm_t *w) {
  return judge(w, 4 * TIMEOUT_MS);
}

static void run_stopped(int (*body)(mmp_comm_t *)) {
  char addr[64];
  pid_t p0, p1;
  int rc0;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  p1 = spawn(1, addr, "20000", stopper);
  p0 = spawn(0, addr, "300", body);
  rc0 = exit_code(p0);
  /* The stopped peer goes whatever the judge said, or meson waits on it. */
  kill(p1, SIGKILL);
  assert_int_equal(exit_code(p1), 100 + SIGKILL);
  assert_int_equal(rc0, 0);
}

/* A stopped peer is still lost within the timeout plus a tick or two. */
static void test_liveness_stopped_peer_is_lost(void **state) {
  (void)state;
  run_stopped(judge_no_stall);
}

/* After this rank's own stall, the grace is one timeout, not more: a
 * stopped peer is lost within the timeout of the loop running again. */
static void test_liveness_stopped_peer_is_lost_after_own_stall(void **state) {
  (void)state;
  run_stopped(judge_after_stall);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_liveness_stalled_loop_keeps_live_peer),
      cmocka_unit_test(test_liveness_busy_rank_stays_alive),
      cmocka_unit_test(test_liveness_stopped_peer_is_lost),
      cmocka_unit_test(test_liveness_stopped_peer_is_lost_after_own_stall),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
