/* SPDX-License-Identifier: MIT */
/*
 * Receives flagged MMP__RECV_COMM_LOSS (an arrival-aware broadcast's
 * rounds): one from a live peer fails when another member of its
 * communicator is lost, whether posted before the loss or after; and the
 * live peer's messages that were meant for it, sent later, are taken and
 * dropped, so that its rendezvous send completes instead of waiting for a
 * CTS for ever, and nothing is left unexpected. Three forked ranks of an
 * embedded job (mmp_init_ex): rank 2 dies, rank 1 sends late, rank 0
 * judges.
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

#include "minimp.h"
#include "runtime/internal.h"
#include "embed_util.h"

static const char *key = "0123456789abcdef0123456789abcdef";

#define NRANKS 3
#define BIG (1u << 20) /* sent by rendezvous */
enum { T_MEET = 1, T_DIE, T_GO, T_BIG, T_SMALL, T_SENT, T_END };

static char big[BIG];

/* Every rank greets every other, so that all connections are up. */
static int meet(mmp_comm_t *w) {
  int me = mmp_comm_rank(w), r, v = me;

  for (r = 0; r < NRANKS; r++)
    if (r != me && mmp_send(&v, sizeof(v), r, T_MEET, w) != 0)
      return -1;
  for (r = 0; r < NRANKS; r++)
    if (r != me && (mmp_recv(&v, sizeof(v), r, T_MEET, w, NULL) != 0 || v != r))
      return -1;
  return 0;
}

/* Lock NOT held. Posts a receive from rank 1 flagged MMP__RECV_COMM_LOSS. */
static int post_watched(mmp_comm_t *w, void *buf, size_t cap, int tag,
                        mmp_request_t *r) {
  mmp__engine_t *e = mmp__eng;
  int rc;

  memset(r, 0, sizeof(*r));
  mmp__lock(e);
  rc = mmp__irecv_flags_locked(e, w, w->ctx, buf, cap, 1, tag,
                               MMP__RECV_COMM_LOSS, r);
  mmp__unlock(e);
  return rc;
}

/* Rank 0: its receives from live rank 1 fail on rank 2's loss; rank 1's
 * messages for them, sent afterwards, vanish without a trace. */
static int judge(mmp_comm_t *w) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t r1, r2;
  char small[8];
  int v = 0, clean;

  if (meet(w) != 0)
    return 10;
  if (post_watched(w, big, BIG, T_BIG, &r1) != 0)
    return 11;
  if (mmp_send(&v, sizeof(v), 2, T_DIE, w) != 0)
    return 12;
  /* Posted before the loss: fails with it. */
  if (mmp__wait_internal(e, &r1) != MMP_EPEERLOST)
    return 13;
  /* Posted after: fails at once. */
  if (post_watched(w, small, sizeof(small), T_SMALL, &r2) != MMP_EPEERLOST)
    return 14;
  /* Rank 1 now sends what both were waiting for; it says when its sends
   * are complete. */
  if (mmp_send(&v, sizeof(v), 1, T_GO, w) != 0)
    return 15;
  if (mmp_recv(&v, sizeof(v), 1, T_SENT, w, NULL) != 0 || v != 2)
    return 16;
  /* Both messages came before T_SENT: taken by drains, which are gone. */
  mmp__lock(e);
  clean = mmp__list_empty(&e->unexpected) && mmp__list_empty(&e->posted);
  mmp__unlock(e);
  if (!clean)
    return 17;
  return mmp_send(&v, sizeof(v), 1, T_END, w) == 0 ? 0 : 18;
}

/* Rank 1: alive throughout; sends late to receives that already failed. */
static int late_sender(mmp_comm_t *w) {
  char small[8] = "minimp";
  int v = 0;

  if (meet(w) != 0)
    return 20;
  if (mmp_recv(&v, sizeof(v), 0, T_GO, w, NULL) != 0)
    return 21;
  memset(big, 5, sizeof(big));
  /* Without a drain at rank 0 this waits for a CTS for ever. */
  if (mmp_send_ex(big, BIG, 0, T_BIG, w, MMP_SEND_RNDV) != 0)
    return 22;
  if (mmp_send_ex(small, sizeof(small), 0, T_SMALL, w, MMP_SEND_EAGER) != 0)
    return 23;
  v = 2;
  if (mmp_send(&v, sizeof(v), 0, T_SENT, w) != 0)
    return 24;
  /* Gone only once rank 0 is done: its receive from us must not fail. */
  return mmp_recv(&v, sizeof(v), 0, T_END, w, NULL) == 0 ? 0 : 25;
}

/* Rank 2: dies when told. */
static int victim(mmp_comm_t *w) {
  int v;

  if (meet(w) != 0)
    return 30;
  if (mmp_recv(&v, sizeof(v), 0, T_DIE, w, NULL) != 0)
    return 31;
  raise(SIGKILL);
  return 32;
}

static pid_t spawn(int rank, const char *addr, int (*body)(mmp_comm_t *w)) {
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20); /* a send or receive that waits for ever ends here */
    if (mmp_init_ex(rank, NRANKS, addr, key, NULL,
                    rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0) != 0)
      _exit(90);
    _exit(body(mmp_comm_world()));
  }
  return pid;
}

static void test_comm_loss_fails_watched_receives_and_drains(void **state) {
  char addr[64];
  pid_t p0, p1, p2;
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  p0 = spawn(0, addr, judge);
  p1 = spawn(1, addr, late_sender);
  p2 = spawn(2, addr, victim);
  assert_int_equal(exit_code(p2), 100 + SIGKILL);
  assert_int_equal(exit_code(p0), 0);
  assert_int_equal(exit_code(p1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_comm_loss_fails_watched_receives_and_drains),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
