/* SPDX-License-Identifier: MIT */
/*
 * Allgather and allgatherv: the public calls (the algorithms are rows of
 * its table, table.c, each in <name>.c). The schedule works on
 * the caller's receive buffer, with this rank's block copied to its place first
 * (in place: it is there). Block i is rank i's count at its displacement, which
 * every rank passes alike.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/allgather/allgather.h"

/* Blocks packed in rank order, as the s-to-p machinery needs. */
static int packed(int p, const size_t *cnt, const size_t *dsp) {
  int i;

  for (i = 1; i < p; i++)
    if (dsp[i] != dsp[i - 1] + cnt[i - 1])
      return 0;
  return p == 0 || dsp[0] == 0;
}

/* `counts`/`displs` (elements) or NULL for equal blocks of `count`. */
static int ag_start(const void *sendbuf, size_t sendcount, void *recvbuf,
                    size_t count, const size_t *counts, const size_t *displs,
                    mmp_type_t type, mmp_comm_t *comm,
                    const mmp_coll_opts_t *opts, mmp_request_t **req) {
  const mmp__family_t *f = &mmp__allgather_family;
  int p, me, rc, in_place = sendbuf == MMP_IN_PLACE;
  size_t *cnt, *dsp, hi = 0, mine = 0;
  mmp__type_info_t ti;
  mmp__opts_t o;
  mmp__call_t c;
  mmp__desc_t d;
  mmp__arg_t a;
  mmp_netmodel_t nm;
  mmp__sched_t *s;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_check(comm, type, 0, &ti, NULL)) != 0)
    return rc;
  p = comm->size;
  me = comm->rank;
  if (counts != NULL && displs == NULL)
    return MMP_EINVAL;
  if ((cnt = calloc(2 * (size_t)p, sizeof(size_t))) == NULL)
    return MMP_ENOMEM;
  dsp = cnt + p;
  rc = mmp__coll_layout(p, ti.size, count, counts, displs, cnt, dsp, &hi);
  if (rc == 0)
    rc = mmp__coll_elems(sendcount, ti.size, &mine);
  /* This rank's block is what it sends. */
  if (rc == 0 &&
      ((hi > 0 && recvbuf == NULL) ||
       (!in_place && (mine != cnt[me] || (mine > 0 && sendbuf == NULL)))))
    rc = MMP_EINVAL;
  mmp__call_init(&c, f, comm, 0,
                 counts != NULL ? hi / (ti.size ? ti.size : 1) : count, ti.size,
                 ti.base, 0, 0, hi / (size_t)p);
  if (rc == 0)
    rc = mmp__opts_from(f, opts, &o);
  if (rc == 0)
    rc = mmp__opts_check(&c, &o);
  if (rc == 0)
    rc = mmp__resolve(&c, &o, &d, NULL);
  /* The s-to-p machinery needs the blocks packed in rank order. A call
   * that names it for other blocks is wrong; MINIMP_ALLGATHER_ALG, which
   * serves every allgather, is not. */
  if (rc == 0 && d.alg == &mmp__allgather_s2p_alg && !packed(p, cnt, dsp)) {
    if (o.alg == &mmp__allgather_s2p_alg && !o.from_env)
      rc = MMP_EINVAL;
    d.alg = &mmp__allgather_ring_alg;
  }
  memset(&a, 0, sizeof(a));
  if (rc == 0 && (d.alg->flags & MMP__ALG_MODEL) && p > 1) {
    rc = mmp__netmodel_get(comm, &nm);
    a.nm = &nm;
  }
  if (rc == 0)
    rc = mmp__coll_sched_new(comm, f, &d, type, o.mode, o.timeout_ms, recvbuf,
                             hi, NULL, 0, NULL, &s);
  if (rc != 0) {
    free(cnt);
    return rc;
  }
  a.cnt = cnt;
  a.dsp = dsp;
  rc = mmp__desc_build(s, &d, &a);
  if (rc != 0) {
    free(cnt);
    mmp__sched_free(s);
    return rc;
  }
  rc = mmp__coll_start(s, in_place ? NULL : sendbuf, dsp[me],
                       in_place ? 0 : mine, NULL, 0, 0, req);
  free(cnt);
  return rc;
}

int mmp_iallgather(const void *sendbuf, size_t sendcount, void *recvbuf,
                   size_t recvcount, mmp_type_t type, mmp_comm_t *comm,
                   const mmp_allgather_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(
      ag_start(sendbuf, sendbuf == MMP_IN_PLACE ? recvcount : sendcount,
               recvbuf, recvcount, NULL, NULL, type, comm, opts, req),
      __func__);
}

int mmp_allgather_ex(const void *sendbuf, size_t sendcount, void *recvbuf,
                     size_t recvcount, mmp_type_t type, mmp_comm_t *comm,
                     const mmp_allgather_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_iallgather(sendbuf, sendcount, recvbuf, recvcount,
                                      type, comm, opts, &r),
                       &r, __func__);
}

int mmp_allgather(const void *sendbuf, size_t sendcount, void *recvbuf,
                  size_t recvcount, mmp_type_t type, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_allgather_ex(sendbuf, sendcount, recvbuf, recvcount,
                                         type, comm, NULL),
                        __func__);
}

static int iallgatherv_body(const void *sendbuf, size_t sendcount,
                            void *recvbuf, const size_t *recvcounts,
                            const size_t *displs, mmp_type_t type,
                            mmp_comm_t *comm, const mmp_allgather_opts_t *opts,
                            mmp_request_t **req) {
  if (recvcounts == NULL)
    return req != NULL ? (*req = NULL, MMP_EINVAL) : MMP_EINVAL;
  return ag_start(sendbuf, sendcount, recvbuf, 0, recvcounts, displs, type,
                  comm, opts, req);
}

int mmp_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                    const size_t *recvcounts, const size_t *displs,
                    mmp_type_t type, mmp_comm_t *comm,
                    const mmp_allgather_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(iallgatherv_body(sendbuf, sendcount, recvbuf,
                                         recvcounts, displs, type, comm, opts,
                                         req),
                        __func__);
}

int mmp_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                   const size_t *recvcounts, const size_t *displs,
                   mmp_type_t type, mmp_comm_t *comm) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_iallgatherv(sendbuf, sendcount, recvbuf, recvcounts,
                                       displs, type, comm, NULL, &r),
                       &r, __func__);
}
