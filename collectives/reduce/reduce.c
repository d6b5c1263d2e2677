/* SPDX-License-Identifier: MIT */
/*
 * Reduce: the public calls (the algorithms are rows of its table,
 * table.c, each in <name>.c). Reduce works on the root's receive buffer
 * there, and on an accumulator in the schedule's scratch elsewhere; each
 * rank's contribution is copied into it first.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/reduce/reduce.h"

static int ireduce_body(const void *sendbuf, void *recvbuf, size_t count,
                        mmp_type_t type, mmp_op_t op, int root,
                        mmp_comm_t *comm, const mmp_reduce_opts_t *opts,
                        mmp_request_t **req) {
  const mmp__family_t *f = &mmp__reduce_family;
  int noncomm, rc, is_root, in_place = sendbuf == MMP_IN_PLACE;
  mmp__type_info_t ti;
  mmp__opts_t o;
  mmp__call_t c;
  mmp__desc_t d;
  mmp__arg_t a;
  mmp__sched_t *s;
  size_t len;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_check(comm, type, op, &ti, &noncomm)) != 0)
    return rc;
  if (root < 0 || root >= comm->size)
    return MMP_ERANK;
  is_root = comm->rank == root;
  if (op == 0 ||
      (count > 0 && (sendbuf == NULL || (is_root && recvbuf == NULL) ||
                     (!is_root && in_place))))
    return MMP_EINVAL;
  if ((rc = mmp__coll_elems(count, ti.size, &len)) != 0 ||
      (rc = mmp__opts_from(f, opts, &o)) != 0)
    return rc;
  mmp__call_init(&c, f, comm, root, count, ti.size, ti.base, op, noncomm, len);
  if ((rc = mmp__opts_check(&c, &o)) != 0 ||
      (rc = mmp__resolve(&c, &o, &d, NULL)) != 0)
    return rc;
  rc = mmp__coll_sched_new(comm, f, &d, type, o.mode, o.timeout_ms,
                           is_root ? recvbuf : NULL, is_root ? len : 0, NULL, 0,
                           NULL, &s);
  if (rc != 0)
    return rc;
  memset(&a, 0, sizeof(a));
  a.off = is_root ? 0 : mmp__sched_scratch(s, len);
  a.len = len;
  a.noncomm = noncomm;
  if ((rc = mmp__desc_build(s, &d, &a)) != 0) {
    mmp__sched_free(s);
    return rc;
  }
  return mmp__coll_start(s, in_place ? NULL : sendbuf, a.off,
                         in_place ? 0 : len, NULL, 0, 0, req);
}

int mmp_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                mmp_type_t type, mmp_op_t op, int root, mmp_comm_t *comm,
                const mmp_reduce_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(
      ireduce_body(sendbuf, recvbuf, count, type, op, root, comm, opts, req),
      __func__);
}

static int reduce_ex_body(const void *sendbuf, void *recvbuf, size_t count,
                          mmp_type_t type, mmp_op_t op, int root,
                          mmp_comm_t *comm, const mmp_reduce_opts_t *opts) {
  mmp_request_t *r;
  int rc = mmp_ireduce(sendbuf, recvbuf, count, type, op, root, comm, opts, &r);

  return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
}

int mmp_reduce_ex(const void *sendbuf, void *recvbuf, size_t count,
                  mmp_type_t type, mmp_op_t op, int root, mmp_comm_t *comm,
                  const mmp_reduce_opts_t *opts) {
  mmp__api_enter();
  return mmp__api_leave(
      reduce_ex_body(sendbuf, recvbuf, count, type, op, root, comm, opts),
      __func__);
}

int mmp_reduce(const void *sendbuf, void *recvbuf, size_t count,
               mmp_type_t type, mmp_op_t op, int root, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(
      mmp_reduce_ex(sendbuf, recvbuf, count, type, op, root, comm, NULL),
      __func__);
}
