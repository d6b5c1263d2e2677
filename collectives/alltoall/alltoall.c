/* SPDX-License-Identifier: MIT */
/*
 * Alltoall and alltoallv: the public calls (the algorithms are rows of
 * its table, table.c, each in <name>.c). The schedule receives
 * into the caller's receive buffer and sends out of the send buffer, its
 * read-only input; in place, the input is first copied into scratch. This
 * rank's own block is copied before the start.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/alltoall/alltoall.h"

static int a2a_start(const void *sendbuf, const size_t *scounts,
                     const size_t *sdispls, void *recvbuf,
                     const size_t *rcounts, const size_t *rdispls, size_t count,
                     mmp_type_t type, mmp_comm_t *comm,
                     const mmp_coll_opts_t *opts, mmp_request_t **req) {
  const mmp__family_t *f = &mmp__alltoall_family;
  int p, me, i, rc, in_place = sendbuf == MMP_IN_PLACE, v = rcounts != NULL;
  size_t *cnt, shi = 0, rhi = 0, in = 0;
  mmp__type_info_t ti;
  mmp__opts_t o;
  mmp__call_t c;
  mmp__desc_t d;
  mmp__arg_t a;
  mmp__sched_t *s;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_check(comm, type, 0, &ti, NULL)) != 0)
    return rc;
  p = comm->size;
  me = comm->rank;
  if (v &&
      (rdispls == NULL || (!in_place && (scounts == NULL || sdispls == NULL))))
    return MMP_EINVAL;
  if ((cnt = calloc(4 * (size_t)p, sizeof(size_t))) == NULL)
    return MMP_ENOMEM;
  rc =
      mmp__coll_layout(p, ti.size, count, rcounts, rdispls, cnt, cnt + p, &rhi);
  if (rc == 0 && in_place)
    memcpy(cnt + 2 * p, cnt, 2 * (size_t)p * sizeof(size_t));
  else if (rc == 0)
    rc = mmp__coll_layout(p, ti.size, count, scounts, sdispls, cnt + 2 * p,
                          cnt + 3 * p, &shi);
  if (rc == 0 &&
      ((rhi > 0 && recvbuf == NULL) ||
       (!in_place && shi > 0 && sendbuf == NULL) || cnt[me] != cnt[2 * p + me]))
    rc = MMP_EINVAL;
  mmp__call_init(&c, f, comm, 0, v ? 0 : count, ti.size, ti.base, 0, 0,
                 rhi / (size_t)p);
  if (rc == 0)
    rc = mmp__opts_from(f, opts, &o);
  if (rc == 0)
    rc = mmp__opts_check(&c, &o);
  /* An alltoallv's counts differ from rank to rank, and each rank knows
   * only its own: a choice by size could differ between ranks (they
   * would fail with MMP_EMISMATCH). AUTO runs the linear exchange there,
   * which the model prices below pairwise at every size, Bruck (equal
   * blocks only) aside. */
  if (rc == 0 && v && o.alg == NULL)
    o.alg = &mmp__alltoall_linear_alg;
  if (rc == 0)
    rc = mmp__resolve(&c, &o, &d, NULL);
  /* Bruck moves equal blocks only: where the call did not name it
   * (MINIMP_ALLTOALL_ALG serves the equal-block form too), the v-form runs
   * pairwise exchange, on every rank alike whatever its counts. */
  if (rc == 0 && v && d.alg == &mmp__alltoall_bruck_alg &&
      (o.alg != &mmp__alltoall_bruck_alg || o.from_env))
    d.alg = &mmp__alltoall_pairwise_alg;
  if (rc == 0)
    rc = mmp__coll_sched_new(comm, f, &d, type, o.mode, o.timeout_ms, recvbuf,
                             rhi, in_place ? NULL : sendbuf, in_place ? 0 : shi,
                             NULL, &s);
  if (rc != 0) {
    free(cnt);
    return rc;
  }
  /* The input's addresses: after the buffer, or in scratch. */
  in = in_place ? mmp__sched_scratch(s, rhi) : rhi;
  for (i = 0; i < p; i++)
    cnt[3 * p + i] += in;
  memset(&a, 0, sizeof(a));
  a.cnt = cnt;
  a.dsp = cnt + p;
  a.scnt = cnt + 2 * p;
  a.sdsp = cnt + 3 * p;
  rc = mmp__desc_build(s, &d, &a);
  if (rc != 0) {
    free(cnt);
    mmp__sched_free(s);
    return rc;
  }
  if (!in_place && cnt[me] > 0)
    memcpy((uint8_t *)recvbuf + cnt[p + me],
           (const uint8_t *)sendbuf + cnt[3 * p + me] - in, cnt[me]);
  rc = mmp__coll_start(s, in_place ? recvbuf : NULL, in, in_place ? rhi : 0,
                       NULL, 0, 0, req);
  free(cnt);
  return rc;
}

static int ialltoall_body(const void *sendbuf, size_t sendcount, void *recvbuf,
                          size_t recvcount, mmp_type_t type, mmp_comm_t *comm,
                          const mmp_alltoall_opts_t *opts,
                          mmp_request_t **req) {
  if (sendbuf != MMP_IN_PLACE && sendcount != recvcount)
    return req != NULL ? (*req = NULL, MMP_EINVAL) : MMP_EINVAL;
  return a2a_start(sendbuf, NULL, NULL, recvbuf, NULL, NULL, recvcount, type,
                   comm, opts, req);
}

int mmp_ialltoall(const void *sendbuf, size_t sendcount, void *recvbuf,
                  size_t recvcount, mmp_type_t type, mmp_comm_t *comm,
                  const mmp_alltoall_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ialltoall_body(sendbuf, sendcount, recvbuf, recvcount,
                                       type, comm, opts, req),
                        __func__);
}

int mmp_alltoall_ex(const void *sendbuf, size_t sendcount, void *recvbuf,
                    size_t recvcount, mmp_type_t type, mmp_comm_t *comm,
                    const mmp_alltoall_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_ialltoall(sendbuf, sendcount, recvbuf, recvcount,
                                     type, comm, opts, &r),
                       &r, __func__);
}

int mmp_alltoall(const void *sendbuf, size_t sendcount, void *recvbuf,
                 size_t recvcount, mmp_type_t type, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(
      mmp_alltoall_ex(sendbuf, sendcount, recvbuf, recvcount, type, comm, NULL),
      __func__);
}

static int ialltoallv_body(const void *sendbuf, const size_t *sendcounts,
                           const size_t *sdispls, void *recvbuf,
                           const size_t *recvcounts, const size_t *rdispls,
                           mmp_type_t type, mmp_comm_t *comm,
                           const mmp_alltoall_opts_t *opts,
                           mmp_request_t **req) {
  if (recvcounts == NULL)
    return req != NULL ? (*req = NULL, MMP_EINVAL) : MMP_EINVAL;
  return a2a_start(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls,
                   0, type, comm, opts, req);
}

int mmp_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                   const size_t *sdispls, void *recvbuf,
                   const size_t *recvcounts, const size_t *rdispls,
                   mmp_type_t type, mmp_comm_t *comm,
                   const mmp_alltoall_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(ialltoallv_body(sendbuf, sendcounts, sdispls, recvbuf,
                                        recvcounts, rdispls, type, comm, opts,
                                        req),
                        __func__);
}

int mmp_alltoallv(const void *sendbuf, const size_t *sendcounts,
                  const size_t *sdispls, void *recvbuf,
                  const size_t *recvcounts, const size_t *rdispls,
                  mmp_type_t type, mmp_comm_t *comm) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_ialltoallv(sendbuf, sendcounts, sdispls, recvbuf,
                                      recvcounts, rdispls, type, comm, NULL,
                                      &r),
                       &r, __func__);
}
