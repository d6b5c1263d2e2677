/* SPDX-License-Identifier: MIT */
/*
 * Scan and exclusive scan: the public calls (the algorithms are rows of
 * their tables, table.c, each in <name>.c). The inclusive scan works on
 * the caller's receive buffer, into which the contribution is copied
 * first (in place: it is there already). The exclusive one works on a
 * copy of the contribution in scratch and writes only its result to the
 * receive buffer, so that rank 0's is left untouched.
 */
#include <string.h>

#include "collectives/scan/scan.h"

static int iscan_body(int excl, const void *sendbuf, void *recvbuf,
                      size_t count, mmp_type_t type, mmp_op_t op,
                      mmp_comm_t *comm, const mmp_scan_opts_t *opts,
                      mmp_request_t **req) {
  const mmp__family_t *f = excl ? &mmp__exscan_family : &mmp__scan_family;
  int in_place = sendbuf == MMP_IN_PLACE, noncomm, rc;
  const void *in = in_place ? recvbuf : sendbuf;
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
  if (op == 0 || (count > 0 && (recvbuf == NULL || sendbuf == NULL)))
    return MMP_EINVAL;
  if ((rc = mmp__coll_elems(count, ti.size, &len)) != 0 ||
      (rc = mmp__opts_from(f, opts, &o)) != 0)
    return rc;
  mmp__call_init(&c, f, comm, 0, count, ti.size, ti.base, op, noncomm, len);
  if ((rc = mmp__opts_check(&c, &o)) != 0 ||
      (rc = mmp__resolve(&c, &o, &d, NULL)) != 0)
    return rc;
  rc = mmp__coll_sched_new(comm, f, &d, type, o.mode, o.timeout_ms, recvbuf,
                           len, NULL, 0, NULL, &s);
  if (rc != 0)
    return rc;
  memset(&a, 0, sizeof(a));
  a.len = len;
  a.noncomm = noncomm;
  if (excl)
    a.off = mmp__sched_scratch(s, len);
  if ((rc = mmp__desc_build(s, &d, &a)) != 0) {
    mmp__sched_free(s);
    return rc;
  }
  if (!excl && in_place)
    return mmp__coll_start(s, NULL, 0, 0, NULL, 0, 0, req);
  return mmp__coll_start(s, in, a.off, len, NULL, 0, 0, req);
}

int mmp_iscan(const void *sendbuf, void *recvbuf, size_t count, mmp_type_t type,
              mmp_op_t op, mmp_comm_t *comm, const mmp_scan_opts_t *opts,
              mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(
      iscan_body(0, sendbuf, recvbuf, count, type, op, comm, opts, req),
      __func__);
}

int mmp_iexscan(const void *sendbuf, void *recvbuf, size_t count,
                mmp_type_t type, mmp_op_t op, mmp_comm_t *comm,
                const mmp_scan_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(
      iscan_body(1, sendbuf, recvbuf, count, type, op, comm, opts, req),
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
