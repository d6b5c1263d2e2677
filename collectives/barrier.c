/* SPDX-License-Identifier: MIT */
/*
 * Barrier: the dissemination algorithm. In round k every rank signals
 * rank + 2^k and waits for rank - 2^k; after ceil(log2 p) rounds every rank
 * has heard, directly or not, from every other. Zero-byte messages in the
 * communicator's collective context. mmp_ibarrier runs the same rounds as
 * a schedule.
 */
#include <string.h>

#include "collectives.h"

static int barrier_body(mmp_comm_t *comm) {
  mmp__engine_t *e = mmp__eng;
  int p, me, k, round = 0, rc = 0;
  uint32_t seq;

  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  /* Only a schedule can give up in time (the communicator's timeout). */
  if (mmp__comm_timeout(e, comm, 1) > 0) {
    mmp_request_t *r;
    rc = mmp_ibarrier(comm, &r);
    return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
  }
  p = comm->size;
  me = comm->rank;
  mmp__lock(e);
  seq = comm->coll_seq++;
  mmp__unlock(e);
  for (k = 1; k < p && rc == 0; k <<= 1, round++) {
    mmp_request_t sr, rr;
    int tag = MMP__COLL_TAG(seq, 1 + round), r2;
    memset(&sr, 0, sizeof(sr));
    memset(&rr, 0, sizeof(rr));
    rc = mmp__irecv(e, comm, comm->ctx + 1, NULL, 0,
                    mmp__comm_world(comm, (me - k + p) % p), tag, &rr);
    if (rc != 0)
      break;
    rc = mmp__isend(e, comm, comm->ctx + 1, NULL, 0,
                    mmp__comm_world(comm, (me + k) % p), tag, MMP_SEND_EAGER,
                    &sr);
    r2 = mmp__wait_internal(e, &rr);
    if (rc == 0)
      rc = mmp__wait_internal(e, &sr);
    if (rc == 0)
      rc = r2;
  }
  return rc;
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
