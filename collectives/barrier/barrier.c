/* SPDX-License-Identifier: MIT */
/*
 * Barrier: the public calls (the algorithms are rows of its table,
 * table.c, each in <name>.c), a schedule run by mmp_ibarrier and
 * mmp_barrier alike.
 */
#include <string.h>

#include "collectives/barrier/barrier.h"

/* The blocking barrier runs the same schedule: a rank that loses a
 * partner must still signal the ranks that wait for it, with the cause (a
 * poison note), or they wait for ever (test_kill_coll's set barrier). */
static int ibarrier_body(mmp_comm_t *comm, mmp_request_t **req, int blocking);

static int barrier_body(mmp_comm_t *comm) {
  mmp_request_t *r;
  int rc = ibarrier_body(comm, &r, 1);

  return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
}

int mmp_barrier(mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(barrier_body(comm), __func__);
}

/* The barrier runs as a schedule, so that it runs in the progress
 * engine. Its signals carry no header: AUTO's choice or
 * MINIMP_BARRIER_ALG's is the same on every rank (the call takes no
 * options), and the shm row and a schedule never meet. */
static int ibarrier_body(mmp_comm_t *comm, mmp_request_t **req, int blocking) {
  mmp__opts_t o;
  mmp__sched_t *s;
  mmp__call_t c;
  mmp__desc_t d;
  mmp__arg_t a;
  int rc;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_ready(comm)) != 0 ||
      (rc = mmp__opts_from(&mmp__barrier_family, NULL, &o)) != 0 ||
      (rc = mmp__opts_blocking(&o, blocking)) != 0)
    return rc;
  mmp__call_init(&c, &mmp__barrier_family, comm, 0, 0, 0, 0, 0, 0, 0);
  c.node = blocking && mmp__node_usable(comm);
  if ((rc = mmp__resolve(&c, &o, &d, NULL)) != 0)
    return rc;
  if (d.alg->flags & MMP__ALG_DYNAMIC) {
    /* The shm row runs to completion in the call: blocking calls only,
     * which mmp__opts_blocking and c.node see to. */
    assert(blocking);
    rc = mmp__coll_run_dynamic(comm, &mmp__barrier_family, &d, &o, NULL, NULL,
                               NULL, req);
    /* AUTO's shm row where no segment serves: what AUTO picks without. */
    return rc != MMP_ENOTSUP || o.alg != NULL ? rc
                                              : ibarrier_body(comm, req, 0);
  }
  if ((rc = mmp__sched_new(mmp__eng, comm, NULL, 0, MMP_SEND_EAGER, &s)) != 0)
    return rc;
  memset(&a, 0, sizeof(a));
  rc = mmp__desc_build(s, &d, &a);
  if (rc != 0) {
    mmp__sched_free(s);
    return rc;
  }
  return mmp__sched_start(s, req);
}

int mmp_ibarrier(mmp_comm_t *comm, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ibarrier_body(comm, req, 0), __func__);
}
