/* SPDX-License-Identifier: MIT */
/*
 * Allreduce: the public calls (the algorithms are rows of its table,
 * table.c, each in <name>.c), through the reductions' front-end
 * (reduce/reduce.c). The schedule works on the caller's receive buffer,
 * into which the contribution is copied first (in place: it is there
 * already); every algorithm takes the scratch it needs.
 */
#include "collectives/allreduce/allreduce.h"
#include "collectives/reduce/reduce.h"

int mmp_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                   mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                   const mmp_allreduce_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__red_start(&mmp__allreduce_family, 0, sendbuf,
                                       recvbuf, count, type, op, 0, comm, opts,
                                       req),
                        __func__);
}

static int allreduce_ex_body(const void *sendbuf, void *recvbuf, size_t count,
                             mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                             const mmp_allreduce_opts_t *opts) {
  mmp_request_t *r;
  int rc = mmp__red_start(&mmp__allreduce_family, MMP__RED_BLOCKING, sendbuf,
                          recvbuf, count, type, op, 0, comm, opts, &r);

  return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
}

int mmp_allreduce_ex(const void *sendbuf, void *recvbuf, size_t count,
                     mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                     const mmp_allreduce_opts_t *opts) {
  mmp__api_enter();
  return mmp__api_leave(
      allreduce_ex_body(sendbuf, recvbuf, count, type, op, comm, opts),
      __func__);
}

int mmp_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                  mmp_type_t type, mmp_op_t op, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(
      mmp_allreduce_ex(sendbuf, recvbuf, count, type, op, comm, NULL),
      __func__);
}
