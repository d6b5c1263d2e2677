/* SPDX-License-Identifier: MIT */
/*
 * Scan and exclusive scan: the public calls (the algorithms are rows of
 * their tables, table.c, each in <name>.c), through the reductions'
 * front-end (reduce/reduce.c). The inclusive scan works on the caller's
 * receive buffer, into which the contribution is copied first (in place:
 * it is there already). The exclusive one works on a copy of the
 * contribution in scratch and writes only its result to the receive
 * buffer, so that rank 0's is left untouched.
 */
#include "collectives/reduce/reduce.h"
#include "collectives/scan/scan.h"

int mmp_iscan(const void *sendbuf, void *recvbuf, size_t count, mmp_type_t type,
              mmp_op_t op, mmp_comm_t *comm, const mmp_scan_opts_t *opts,
              mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__red_start(&mmp__scan_family, 0, sendbuf, recvbuf,
                                       count, type, op, 0, comm, opts, req),
                        __func__);
}

int mmp_iexscan(const void *sendbuf, void *recvbuf, size_t count,
                mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                const mmp_scan_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__red_start(&mmp__exscan_family, MMP__RED_EXCL,
                                       sendbuf, recvbuf, count, type, op, 0,
                                       comm, opts, req),
                        __func__);
}

int mmp_scan_ex(const void *sendbuf, void *recvbuf, size_t count,
                mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                const mmp_scan_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(
      mmp_iscan(sendbuf, recvbuf, count, type, op, comm, opts, &r), &r,
      __func__);
}

int mmp_exscan_ex(const void *sendbuf, void *recvbuf, size_t count,
                  mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                  const mmp_scan_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(
      mmp_iexscan(sendbuf, recvbuf, count, type, op, comm, opts, &r), &r,
      __func__);
}

int mmp_scan(const void *sendbuf, void *recvbuf, size_t count, mmp_type_t type,
             mmp_op_t op, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(
      mmp_scan_ex(sendbuf, recvbuf, count, type, op, comm, NULL), __func__);
}

int mmp_exscan(const void *sendbuf, void *recvbuf, size_t count,
               mmp_type_t type, mmp_op_t op, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(
      mmp_exscan_ex(sendbuf, recvbuf, count, type, op, comm, NULL), __func__);
}
