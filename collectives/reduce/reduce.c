/* SPDX-License-Identifier: MIT */
/*
 * Reduce: the public calls (the algorithms are rows of its table,
 * table.c, each in <name>.c), and the front-end every reduction shares
 * (allreduce and scan call it too). A reduction works on the receive
 * buffer where the result is (every rank's, or the root's), and on an
 * accumulator in the schedule's scratch elsewhere and for the exclusive
 * scan, whose receive buffer takes only the result; each rank's
 * contribution is copied into the accumulator first.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/reduce/reduce.h"

int mmp__red_start(const mmp__family_t *f, unsigned how, const void *sendbuf,
                   void *recvbuf, size_t count, mmp_type_t type, mmp_op_t op,
                   int root, mmp_comm_t *comm, const mmp_coll_opts_t *opts,
                   mmp_request_t **req) {
  int in_place = sendbuf == MMP_IN_PLACE, rooted = how & MMP__RED_ROOTED;
  int noncomm, rc, has_res, scratch;
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
  if (!rooted)
    root = 0;
  else if (root < 0 || root >= comm->size)
    return MMP_ERANK;
  has_res = !rooted || comm->rank == root;
  if (op == 0 ||
      (count > 0 && (sendbuf == NULL || (has_res && recvbuf == NULL) ||
                     (!has_res && in_place))))
    return MMP_EINVAL;
  if ((rc = mmp__coll_elems(count, ti.size, &len)) != 0 ||
      (rc = mmp__opts_from(f, opts, &o)) != 0 ||
      (rc = mmp__opts_blocking(&o, (how & MMP__RED_BLOCKING) != 0)) != 0)
    return rc;
  mmp__call_init(&c, f, comm, root, count, ti.size, ti.base, op, noncomm, len);
  c.node = (how & MMP__RED_BLOCKING) && mmp__node_usable(comm);
  if ((rc = mmp__opts_check(&c, &o)) != 0 ||
      (rc = mmp__resolve(&c, &o, &d, NULL)) != 0)
    return rc;
  if (d.alg->flags & MMP__ALG_DYNAMIC) {
    /* The shm row runs to completion in the call: blocking calls only,
     * which mmp__opts_blocking and c.node see to. */
    assert(how & MMP__RED_BLOCKING);
    rc = mmp__coll_run_dynamic(comm, f, &d, &o, has_res ? recvbuf : NULL,
                               in_place ? recvbuf : sendbuf,
                               mmp__reduce_arg(op, type), req);
    /* AUTO's shm row where no segment serves: what AUTO picks without. */
    if (rc != MMP_ENOTSUP || o.alg != NULL)
      return rc;
    return mmp__red_start(f, how & ~MMP__RED_BLOCKING, sendbuf, recvbuf, count,
                          type, op, root, comm, opts, req);
  }
  memset(&a, 0, sizeof(a));
  /* A composite chooses its parts from the model. */
  if (d.alg->flags & MMP__ALG_MODEL) {
    if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
      return rc;
    a.nm = &nm;
  }
  rc = mmp__coll_sched_new(comm, f, &d, type, o.mode, o.timeout_ms,
                           has_res ? recvbuf : NULL, has_res ? len : 0, NULL, 0,
                           NULL, &s);
  if (rc != 0)
    return rc;
  scratch = (how & MMP__RED_EXCL) || !has_res;
  a.off = scratch ? mmp__sched_scratch(s, len) : 0;
  a.len = len;
  a.noncomm = noncomm;
  if ((rc = mmp__desc_build(s, &d, &a)) != 0) {
    mmp__sched_free(s);
    return rc;
  }
  /* In place, the contribution is in the accumulator already. */
  if (in_place && !scratch)
    return mmp__coll_start(s, NULL, 0, 0, NULL, 0, 0, req);
  return mmp__coll_start(s, in_place ? recvbuf : sendbuf, a.off, len, NULL, 0,
                         0, req);
}

int mmp_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                mmp_type_t type, mmp_op_t op, int root, mmp_comm_t *comm,
                const mmp_reduce_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__red_start(&mmp__reduce_family, MMP__RED_ROOTED,
                                       sendbuf, recvbuf, count, type, op, root,
                                       comm, opts, req),
                        __func__);
}

static int reduce_ex_body(const void *sendbuf, void *recvbuf, size_t count,
                          mmp_type_t type, mmp_op_t op, int root,
                          mmp_comm_t *comm, const mmp_reduce_opts_t *opts) {
  mmp_request_t *r;
  int rc =
      mmp__red_start(&mmp__reduce_family, MMP__RED_ROOTED | MMP__RED_BLOCKING,
                     sendbuf, recvbuf, count, type, op, root, comm, opts, &r);

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
