/* SPDX-License-Identifier: MIT */
/*
 * Barrier: the dissemination algorithm. In round k every rank signals
 * rank + 2^k and waits for rank - 2^k; after ceil(log2 p) rounds every rank
 * has heard, directly or not, from every other. Zero-byte messages in the
 * communicator's collective context, run as a schedule by mmp_ibarrier
 * and mmp_barrier alike.
 */
#include "collectives/core/collectives.h"

/* The blocking barrier runs the same schedule: a rank that loses a
 * partner must still signal the ranks that wait for it, with the cause (a
 * poison note), or they wait for ever (test_kill_coll's set barrier). */
static int barrier_body(mmp_comm_t *comm) {
  mmp_request_t *r;
  int rc = mmp_ibarrier(comm, &r);

  return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
}

int mmp_barrier(mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(barrier_body(comm), __func__);
}

/*
 * The same dissemination as a schedule, so that it runs in the progress
 * engine: round k's signal goes out once the signals of every earlier
 * round arrived. Waiting for round k - 1's alone would break the
 * barrier from p = 8 on: what a rank passes on must include all it has
 * heard, or a rank leaves before some rank entered (test_kill_coll at
 * p = 8 saw it, and mr_coll checks it).
 */
static int ibarrier_body(mmp_comm_t *comm, mmp_request_t **req) {
  mmp__sched_t *s;
  int p, me, k, round = 0, heard = -1, rc;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  p = comm->size;
  me = comm->rank;
  rc = mmp__sched_new(mmp__eng, comm, NULL, 0, MMP_SEND_EAGER, &s);
  for (k = 1; k < p && rc == 0; k <<= 1, round++) {
    int snd = mmp__sched_send(s, (me + k) % p, 0, 0, 1 + round);
    int rcv = mmp__sched_recv(s, (me - k + p) % p, 0, 0, 1 + round);
    int all = mmp__sched_nop(s); /* every signal so far is in */
    if (snd < 0 || rcv < 0 || all < 0)
      rc = MMP_ENOMEM;
    if (rc == 0)
      rc = mmp__sched_dep(s, heard, snd);
    if (rc == 0)
      rc = mmp__sched_dep(s, heard, all);
    if (rc == 0)
      rc = mmp__sched_dep(s, rcv, all);
    heard = all;
  }
  if (rc != 0) {
    mmp__sched_free(s);
    return rc;
  }
  return mmp__sched_start(s, req);
}

int mmp_ibarrier(mmp_comm_t *comm, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ibarrier_body(comm, req), __func__);
}
