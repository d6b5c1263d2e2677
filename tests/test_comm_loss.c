/* SPDX-License-Identifier: MIT */
/*
 * Receives flagged MMP__RECV_COMM_LOSS (an arrival-aware broadcast's
 * rounds) and a collective's sink (mmp__recv_sink_locked, what a
 * collective that ended for a lost rank leaves). A flagged receive from a
 * live peer fails when another member of its communicator is lost,
 * whether posted before the loss or after; the sink then takes and drops
 * that collective's messages, those already here and every later one,
 * eager or rendezvous, in any phase, so that a live rendezvous sender
 * completes instead of waiting for a CTS for ever and nothing is left
 * unexpected; the next collective's messages are still received. Three
 * forked ranks of an embedded job (mmp_init_ex): rank 2 dies (or only
 * looks on), rank 1 sends late, rank 0 judges.
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
enum { T_MEET = 1, T_DIE, T_GO, T_SENT, T_END };

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

#define SEQ 77 /* the collective given up on */

/* Lock NOT held. Posts a receive from rank 1 of collective SEQ's message
 * of phase `phase`, flagged MMP__RECV_COMM_LOSS. */
static int post_watched(mmp_comm_t *w, void *buf, size_t cap, int phase,
                        mmp_request_t *r) {
  mmp__engine_t *e = mmp__eng;
  int rc;

  memset(r, 0, sizeof(*r));
  mmp__lock(e);
  rc = mmp__irecv_flags_locked(e, w, w->ctx + 1, buf, cap, 1,
                               MMP__COLL_TAG(SEQ, phase), MMP__RECV_COMM_LOSS,
                               r);
  mmp__unlock(e);
  return rc;
}

/* Lock NOT held. Rank 1's send in the collective context: the message of
 * collective `seq`, phase `phase`. */
static int coll_send(mmp_comm_t *w, const void *buf, size_t len, uint32_t seq,
                     int phase, unsigned mode) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t r;
  int rc;

  memset(&r, 0, sizeof(r));
  mmp__lock(e);
  rc = mmp__isend_locked(e, w, w->ctx + 1, buf, len, 0,
                         MMP__COLL_TAG(seq, phase), mode, &r);
  mmp__unlock(e);
  return rc != 0 ? rc : mmp__wait_internal(e, &r);
}

/* Lock NOT held. Collective SEQ ends for a lost rank: its sink. */
static void give_up(mmp_comm_t *w) {
  mmp__lock(mmp__eng);
  mmp__recv_sink_locked(mmp__eng, w->ctx + 1, MMP__COLL_TAG(SEQ, 0),
                        MMP__COLL_SEQ_MASK);
  mmp__unlock(mmp__eng);
}

/* Lock NOT held. 1 if nothing is unexpected and the only posted receive
 * is one sink. */
static int only_the_sink(void) {
  mmp__engine_t *e = mmp__eng;
  mmp__list_t *it;
  int n = 0, clean;

  mmp__lock(e);
  clean = mmp__list_empty(&e->unexpected);
  mmp__list_foreach(it, &e->posted) {
    const mmp_request_t *q = mmp__container_of(it, mmp_request_t, node);
    n += (q->rflags & MMP__RECV_SINK) != 0 ? 1 : 100;
  }
  mmp__unlock(e);
  return clean && n == 1;
}

/* Rank 0: its receives from live rank 1 fail on rank 2's loss; once it
 * gives up on the collective, rank 1's messages for them, sent
 * afterwards, vanish without a trace. */
static int judge(mmp_comm_t *w) {
  mmp_request_t r1, r2;
  char small[8];
  int v = 0;

  if (meet(w) != 0)
    return 10;
  if (post_watched(w, big, BIG, 10, &r1) != 0)
    return 11;
  if (mmp_send(&v, sizeof(v), 2, T_DIE, w) != 0)
    return 12;
  /* Posted before the loss: fails with it. */
  if (mmp__wait_internal(mmp__eng, &r1) != MMP_EPEERLOST)
    return 13;
  /* Posted after: fails at once. */
  if (post_watched(w, small, sizeof(small), 3, &r2) != MMP_EPEERLOST)
    return 14;
  give_up(w);
  /* Rank 1 now sends what both were waiting for; it says when its sends
   * are complete. */
  if (mmp_send(&v, sizeof(v), 1, T_GO, w) != 0)
    return 15;
  if (mmp_recv(&v, sizeof(v), 1, T_SENT, w, NULL) != 0 || v != 2)
    return 16;
  /* Both messages came before T_SENT: taken by the sink. */
  if (!only_the_sink())
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
  /* Without the sink at rank 0 this waits for a CTS for ever. */
  if (coll_send(w, big, BIG, SEQ, 10, MMP_SEND_RNDV) != 0)
    return 22;
  if (coll_send(w, small, sizeof(small), SEQ, 3, MMP_SEND_EAGER) != 0)
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

/* ---- A collective's sink, on its own ----------------------------------- */

/* Rank 0: a sink for collective SEQ takes the message that came before it
 * and every one after, whatever the phase, eager or rendezvous; a message
 * of the next collective is still received; the sink stays posted. */
static int sink_judge(mmp_comm_t *w) {
  mmp__engine_t *e = mmp__eng;
  mmp_request_t r;
  char got[8] = "";
  int v = 0, rc;

  if (meet(w) != 0)
    return 40;
  /* Rank 1's first message is here (unexpected) when T_GO comes. */
  if (mmp_recv(&v, sizeof(v), 1, T_GO, w, NULL) != 0)
    return 41;
  give_up(w);
  if (mmp_send(&v, sizeof(v), 1, T_GO, w) != 0)
    return 42;
  if (mmp_recv(&v, sizeof(v), 1, T_SENT, w, NULL) != 0 || v != 3)
    return 43;
  memset(&r, 0, sizeof(r));
  mmp__lock(e);
  rc = mmp__irecv_locked(e, w, w->ctx + 1, got, sizeof(got), 1,
                         MMP__COLL_TAG(SEQ + 1, 2), &r);
  mmp__unlock(e);
  if (rc != 0 || mmp__wait_internal(e, &r) != 0 || strcmp(got, "next") != 0)
    return 44;
  if (!only_the_sink())
    return 45;
  for (v = 1; v < NRANKS; v++)
    if (mmp_send(&v, sizeof(v), v, T_END, w) != 0)
      return 46;
  return 0;
}

/* Rank 1: sends collective SEQ's messages before and after rank 0 gives
 * up on it, then one of the next collective's. */
static int sink_sender(mmp_comm_t *w) {
  char first[8] = "first", small[8] = "small", next[8] = "next";
  int v = 0;

  if (meet(w) != 0)
    return 50;
  if (coll_send(w, first, sizeof(first), SEQ, 2, MMP_SEND_EAGER) != 0 ||
      mmp_send(&v, sizeof(v), 0, T_GO, w) != 0 ||
      mmp_recv(&v, sizeof(v), 0, T_GO, w, NULL) != 0)
    return 51;
  memset(big, 6, sizeof(big));
  /* Without the sink this waits for a CTS for ever. */
  if (coll_send(w, big, BIG, SEQ, 10, MMP_SEND_RNDV) != 0)
    return 52;
  if (coll_send(w, small, sizeof(small), SEQ, 3, MMP_SEND_EAGER) != 0 ||
      coll_send(w, next, sizeof(next), SEQ + 1, 2, MMP_SEND_EAGER) != 0)
    return 53;
  v = 3;
  if (mmp_send(&v, sizeof(v), 0, T_SENT, w) != 0)
    return 54;
  return mmp_recv(&v, sizeof(v), 0, T_END, w, NULL) == 0 ? 0 : 55;
}

/* Rank 2: only there. */
static int bystander(mmp_comm_t *w) {
  int v;

  if (meet(w) != 0)
    return 60;
  return mmp_recv(&v, sizeof(v), 0, T_END, w, NULL) == 0 ? 0 : 61;
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

typedef int (*body_fn)(mmp_comm_t *w);

/* Runs body[i] as rank i of an embedded job; each must exit with want[i]
 * (100 + a signal for one that dies). */
static void run3(const body_fn body[NRANKS], const int want[NRANKS]) {
  char addr[64];
  pid_t pid[NRANKS];
  int i;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (i = 0; i < NRANKS; i++)
    pid[i] = spawn(i, addr, body[i]);
  for (i = NRANKS - 1; i >= 0; i--)
    assert_int_equal(exit_code(pid[i]), want[i]);
}

static void test_comm_loss_fails_watched_receives_then_sinks(void **state) {
  const body_fn body[NRANKS] = {judge, late_sender, victim};
  const int want[NRANKS] = {0, 0, 100 + SIGKILL};
  (void)state;

  run3(body, want);
}

static void test_comm_loss_sink_takes_a_collectives_messages(void **state) {
  const body_fn body[NRANKS] = {sink_judge, sink_sender, bystander};
  const int want[NRANKS] = {0, 0, 0};
  (void)state;

  run3(body, want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_comm_loss_fails_watched_receives_then_sinks),
      cmocka_unit_test(test_comm_loss_sink_takes_a_collectives_messages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
