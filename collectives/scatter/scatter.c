/* SPDX-License-Identifier: MIT */
/*
 * Scatter: the public calls (the algorithms are rows of its table,
 * table.c, each in <name>.c), on gather's front-end the other way round:
 * the root sends out of sendbuf, the schedule's read-only input, and
 * every other rank receives into recvbuf, or into scratch laid out as the
 * root's buffer where a tree forwards its subtree's blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/scatter/scatter.h"

/*
 * Lock held. A scatter whose first message says the sender's call
 * differs (another root, count or algorithm): appends the plan of the
 * sender's call, which runs in poison mode, so that this rank passes the
 * failure on to the ranks that wait for it in that plan. Poison mode
 * touches no byte of the address space, so equal blocks of the sender's
 * count over nothing give the plan's shape.
 */
static int scatter_rebuild(mmp__sched_t *s, const uint8_t *hdr, size_t n) {
  mmp__desc_t d;
  mmp__arg_t a;
  size_t blk, *cnt;
  int i, rc;

  if (mmp__desc_decode(&mmp__scatter_family, hdr, n, &d) != 0 || d.root < 0 ||
      d.root >= s->p || d.esize == 0 ||
      d.count > SIZE_MAX / d.esize / (size_t)s->p)
    return MMP_EMISMATCH;
  blk = (size_t)d.count * d.esize;
  if ((cnt = calloc(2 * (size_t)s->p, sizeof(size_t))) == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < s->p; i++) {
    cnt[i] = blk;
    cnt[s->p + i] = (size_t)i * blk;
  }
  memset(&a, 0, sizeof(a));
  a.cnt = cnt;
  a.dsp = cnt + s->p;
  rc = mmp__desc_build(s, &d, &a);
  free(cnt);
  return rc == 0 || rc == MMP_ENOMEM ? rc : MMP_EMISMATCH;
}

int mmp_iscatter(const void *sendbuf, size_t sendcount, void *recvbuf,
                 size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm,
                 const mmp_scatter_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__gs_equal(&mmp__scatter_family, scatter_rebuild,
                                      sendbuf, recvbuf, recvcount, sendcount,
                                      type, root, comm, opts, req),
                        __func__);
}

int mmp_scatter_ex(const void *sendbuf, size_t sendcount, void *recvbuf,
                   size_t recvcount, mmp_type_t type, int root,
                   mmp_comm_t *comm, const mmp_scatter_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_iscatter(sendbuf, sendcount, recvbuf, recvcount,
                                    type, root, comm, opts, &r),
                       &r, __func__);
}

int mmp_scatter(const void *sendbuf, size_t sendcount, void *recvbuf,
                size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_scatter_ex(sendbuf, sendcount, recvbuf, recvcount,
                                       type, root, comm, NULL),
                        __func__);
}

int mmp_iscatterv(const void *sendbuf, const size_t *sendcounts,
                  const size_t *displs, void *recvbuf, size_t recvcount,
                  mmp_type_t type, int root, mmp_comm_t *comm,
                  const mmp_scatter_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__gs_varying(&mmp__scatter_family, scatter_rebuild,
                                        sendbuf, recvbuf, recvcount, sendcounts,
                                        displs, type, root, comm, opts, req),
                        __func__);
}

int mmp_scatterv(const void *sendbuf, const size_t *sendcounts,
                 const size_t *displs, void *recvbuf, size_t recvcount,
                 mmp_type_t type, int root, mmp_comm_t *comm) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_iscatterv(sendbuf, sendcounts, displs, recvbuf,
                                     recvcount, type, root, comm, NULL, &r),
                       &r, __func__);
}
