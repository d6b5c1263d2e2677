/* SPDX-License-Identifier: MIT */
/*
 * Reduce-scatter: the public calls (the algorithms are rows of its table,
 * table.c, each in <name>.c). It works on a copy of the whole vector in
 * scratch, whose block i rank i keeps, copied out at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/reduce_scatter/reduce_scatter.h"

/* `counts` per rank (elements), or every rank `block` when NULL. */
static int rs_start(const void *sendbuf, void *recvbuf, const size_t *counts,
                    size_t block, mmp_type_t type, mmp_op_t op,
                    mmp_comm_t *comm, const mmp_coll_opts_t *opts,
                    mmp_request_t **req) {
  const mmp__family_t *f = &mmp__reduce_scatter_family;
  int noncomm, rc, p, i, me, in_place = sendbuf == MMP_IN_PLACE;
  size_t *cnt = NULL, total = 0, len, acc;
  mmp__type_info_t ti;
  mmp__opts_t o;
  mmp__call_t call;
  mmp__desc_t d;
  mmp__arg_t a;
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
  mmp__call_init(&call, f, comm, 0, len / (ti.size ? ti.size : 1), ti.size,
                 ti.base, op, noncomm, len / (size_t)p);
  if (rc == 0)
    rc = mmp__opts_from(f, opts, &o);
  if (rc == 0)
    rc = mmp__opts_check(&call, &o);
  if (rc == 0)
    rc = mmp__resolve(&call, &o, &d, NULL);
  if (rc == 0)
    rc = mmp__coll_sched_new(comm, f, &d, type, o.mode, o.timeout_ms, NULL, 0,
                             NULL, 0, NULL, &s);
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
  rc = mmp__desc_build(s, &d, &a);
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
  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if (recvcounts == NULL)
    return MMP_EINVAL;
  return rs_start(sendbuf, recvbuf, recvcounts, 0, type, op, comm, opts, req);
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
  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  return rs_start(sendbuf, recvbuf, NULL, recvcount, type, op, comm, opts, req);
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
