/* SPDX-License-Identifier: MIT */
/*
 * Reduce and reduce-scatter: the public calls (the algorithms are rows of
 * their tables in coll_algs.c, each in reduce_<name>.c or
 * reduce_scatter_<name>.c).
 *
 * Reduce works on the root's receive buffer there, and on an accumulator
 * in the schedule's scratch elsewhere; each rank's contribution is copied
 * into it first. Reduce-scatter works on a copy of the whole vector in
 * scratch, whose block i rank i keeps, copied out at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/core/coll.h"

/* ---- Reduce ------------------------------------------------------------- */

static int ireduce_body(const void *sendbuf, void *recvbuf, size_t count,
                        mmp_type_t type, mmp_op_t op, int root,
                        mmp_comm_t *comm, const mmp_reduce_opts_t *opts,
                        mmp_request_t **req) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;
  const mmp_coll_opts_t *o = opts != NULL ? opts : &defaults;
  int noncomm, rc, is_root, in_place = sendbuf == MMP_IN_PLACE;
  mmp__type_info_t ti;
  mmp__coll_desc_t d;
  mmp__coll_arg_t a;
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
  if ((rc = mmp__coll_elems(count, ti.size, &len)) != 0)
    return rc;
  memset(&d, 0, sizeof(d));
  d.coll = MMP_COLL_REDUCE;
  d.root = root;
  d.base = ti.base;
  d.esize = ti.size;
  d.op = op;
  d.count = count;
  if ((rc = mmp__coll_resolve(comm, &d, o, (double)len, noncomm)) != 0)
    return rc;
  rc = mmp__coll_sched_new(comm, &d, type, o, is_root ? recvbuf : NULL,
                           is_root ? len : 0, NULL, 0, &s);
  if (rc != 0)
    return rc;
  memset(&a, 0, sizeof(a));
  a.off = is_root ? 0 : mmp__sched_scratch(s, len);
  a.len = len;
  a.noncomm = noncomm;
  if ((rc = mmp__coll_build(s, &d, &a)) != 0) {
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

/* ---- Reduce-scatter ----------------------------------------------------- */

/* `counts` per rank (elements), or every rank `block` when NULL. */
static int rs_start(const void *sendbuf, void *recvbuf, const size_t *counts,
                    size_t block, mmp_type_t type, mmp_op_t op,
                    mmp_comm_t *comm, const mmp_coll_opts_t *o,
                    mmp_request_t **req) {
  int noncomm, rc, p, i, me, in_place = sendbuf == MMP_IN_PLACE;
  size_t *cnt = NULL, total = 0, len, acc;
  mmp__type_info_t ti;
  mmp__coll_desc_t d;
  mmp__coll_arg_t a;
  mmp__sched_t *s;

  if ((rc = mmp__coll_check(comm, type, op, &ti, &noncomm)) != 0)
    return rc;
  p = comm->size;
  me = comm->rank;
  if (op == 0)
    return MMP_EINVAL;
  cnt = malloc(2 * (size_t)p * sizeof(size_t));
  if (cnt == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < p && rc == 0; i++) {
    size_t c = counts != NULL ? counts[i] : block;
    rc = mmp__coll_elems(c, ti.size, &cnt[i]);
    if (rc == 0 && total + cnt[i] < total)
      rc = MMP_ETOOBIG;
    total += cnt[i];
  }
  len = total;
  if (rc == 0 && len > 0 &&
      (sendbuf == NULL || (in_place && recvbuf == NULL) ||
       (cnt[me] > 0 && recvbuf == NULL)))
    rc = MMP_EINVAL;
  memset(&d, 0, sizeof(d));
  d.coll = MMP_COLL_REDUCE_SCATTER;
  d.base = ti.base;
  d.esize = ti.size;
  d.op = op;
  d.count = len / (ti.size ? ti.size : 1);
  if (rc == 0)
    rc = mmp__coll_resolve(comm, &d, o, (double)len / p, noncomm);
  if (rc == 0)
    rc = mmp__coll_sched_new(comm, &d, type, o, NULL, 0, NULL, 0, &s);
  if (rc != 0) {
    free(cnt);
    return rc;
  }
  acc = mmp__sched_scratch(s, len);
  for (i = 0; i < p; i++)
    cnt[p + i] = i == 0 ? acc : cnt[p + i - 1] + cnt[i - 1];
  memset(&a, 0, sizeof(a));
  a.off = acc;
  a.len = len;
  a.noncomm = noncomm;
  a.cnt = cnt;
  a.dsp = cnt + p;
  rc = mmp__coll_build(s, &d, &a);
  if (rc != 0) {
    free(cnt);
    mmp__sched_free(s);
    return rc;
  }
  rc = mmp__coll_start(s, in_place ? recvbuf : sendbuf, acc, len, recvbuf,
                       cnt[p + me], cnt[me], req);
  free(cnt);
  return rc;
}

static int ireduce_scatter_body(const void *sendbuf, void *recvbuf,
                                const size_t *recvcounts, mmp_type_t type,
                                mmp_op_t op, mmp_comm_t *comm,
                                const mmp_reduce_scatter_opts_t *opts,
                                mmp_request_t **req) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if (recvcounts == NULL)
    return MMP_EINVAL;
  return rs_start(sendbuf, recvbuf, recvcounts, 0, type, op, comm,
                  opts != NULL ? opts : &defaults, req);
}

int mmp_ireduce_scatter(const void *sendbuf, void *recvbuf,
                        const size_t *recvcounts, mmp_type_t type, mmp_op_t op,
                        mmp_comm_t *comm, const mmp_reduce_scatter_opts_t *opts,
                        mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ireduce_scatter_body(sendbuf, recvbuf, recvcounts, type,
                                             op, comm, opts, req),
                        __func__);
}

int mmp_reduce_scatter_ex(const void *sendbuf, void *recvbuf,
                          const size_t *recvcounts, mmp_type_t type,
                          mmp_op_t op, mmp_comm_t *comm,
                          const mmp_reduce_scatter_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_ireduce_scatter(sendbuf, recvbuf, recvcounts, type,
                                           op, comm, opts, &r),
                       &r, __func__);
}

int mmp_reduce_scatter(const void *sendbuf, void *recvbuf,
                       const size_t *recvcounts, mmp_type_t type, mmp_op_t op,
                       mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(
      mmp_reduce_scatter_ex(sendbuf, recvbuf, recvcounts, type, op, comm, NULL),
      __func__);
}

static int ireduce_scatter_block_body(const void *sendbuf, void *recvbuf,
                                      size_t recvcount, mmp_type_t type,
                                      mmp_op_t op, mmp_comm_t *comm,
                                      const mmp_reduce_scatter_opts_t *opts,
                                      mmp_request_t **req) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  return rs_start(sendbuf, recvbuf, NULL, recvcount, type, op, comm,
                  opts != NULL ? opts : &defaults, req);
}

int mmp_ireduce_scatter_block(const void *sendbuf, void *recvbuf,
                              size_t recvcount, mmp_type_t type, mmp_op_t op,
                              mmp_comm_t *comm,
                              const mmp_reduce_scatter_opts_t *opts,
                              mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ireduce_scatter_block_body(sendbuf, recvbuf, recvcount,
                                                   type, op, comm, opts, req),
                        __func__);
}

int mmp_reduce_scatter_block_ex(const void *sendbuf, void *recvbuf,
                                size_t recvcount, mmp_type_t type, mmp_op_t op,
                                mmp_comm_t *comm,
                                const mmp_reduce_scatter_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_ireduce_scatter_block(sendbuf, recvbuf, recvcount,
                                                 type, op, comm, opts, &r),
                       &r, __func__);
}

int mmp_reduce_scatter_block(const void *sendbuf, void *recvbuf,
                             size_t recvcount, mmp_type_t type, mmp_op_t op,
                             mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_reduce_scatter_block_ex(sendbuf, recvbuf, recvcount,
                                                    type, op, comm, NULL),
                        __func__);
}
