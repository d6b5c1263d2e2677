/* SPDX-License-Identifier: MIT */
/*
 * Allreduce: the public calls (the algorithms are rows of its table,
 * table.c, each in <name>.c). The schedule works on the caller's
 * receive buffer, into which the contribution is copied first (in place: it is
 * there already); every algorithm takes the scratch it needs.
 */
#include <string.h>

#include "collectives/allreduce/allreduce.h"

static int iallreduce_body(const void *sendbuf, void *recvbuf, size_t count,
                           mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                           const mmp_allreduce_opts_t *opts,
                           mmp_request_t **req) {
  const mmp__family_t *f = &mmp__allreduce_family;
  int in_place = sendbuf == MMP_IN_PLACE, noncomm, rc;
  mmp__type_info_t ti;
  mmp__opts_t o;
  mmp__call_t c;
  mmp__desc_t d;
  mmp__arg_t a;
  mmp_netmodel_t nm;
  mmp__sched_t *s;
  size_t len;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_check(comm, type, op, &ti, &noncomm)) != 0)
    return rc;
  if (op == 0 || (count > 0 && (recvbuf == NULL || sendbuf == NULL)))
    return MMP_EINVAL;
  if ((rc = mmp__coll_elems(count, ti.size, &len)) != 0 ||
      (rc = mmp__opts_from(f, opts, &o)) != 0)
    return rc;
  mmp__call_init(&c, f, comm, 0, count, ti.size, ti.base, op, noncomm, len);
  if ((rc = mmp__opts_check(&c, &o)) != 0 ||
      (rc = mmp__resolve(&c, &o, &d, NULL)) != 0)
    return rc;
  memset(&a, 0, sizeof(a));
  /* A composite chooses its parts from the model. */
  if (d.alg->flags & MMP__ALG_MODEL) {
    if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
      return rc;
    a.nm = &nm;
  }
  rc = mmp__coll_sched_new(comm, f, &d, type, o.mode, o.timeout_ms, recvbuf,
                           len, NULL, 0, NULL, &s);
  if (rc != 0)
    return rc;
  a.len = len;
  a.noncomm = noncomm;
  if ((rc = mmp__desc_build(s, &d, &a)) != 0) {
    mmp__sched_free(s);
    return rc;
  }
  return mmp__coll_start(s, in_place ? NULL : sendbuf, 0, in_place ? 0 : len,
                         NULL, 0, 0, req);
}

int mmp_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                   mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                   const mmp_allreduce_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(
      iallreduce_body(sendbuf, recvbuf, count, type, op, comm, opts, req),
      __func__);
}

static int allreduce_ex_body(const void *sendbuf, void *recvbuf, size_t count,
                             mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                             const mmp_allreduce_opts_t *opts) {
  mmp_request_t *r;
  int rc = mmp_iallreduce(sendbuf, recvbuf, count, type, op, comm, opts, &r);

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
