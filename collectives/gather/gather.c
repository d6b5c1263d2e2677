/* SPDX-License-Identifier: MIT */
/*
 * Gather: the public calls, and the front-end it shares with scatter
 * (its rows: gather's table.c; scatter's in scatter/).
 *
 * The root works on its own buffer: gather receives into recvbuf,
 * scatter sends out of sendbuf (the schedule's read-only input). A rank
 * of the binomial tree keeps its subtree's blocks in scratch; of the flat
 * one, only its own block, where the caller has it. The v-forms run the
 * flat algorithm: only the root knows the counts.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/gather/gather.h"

int mmp__gs_start(const mmp__gs_call_t *c, mmp_request_t **req) {
  const mmp__alg_t *flat = mmp__alg_find(c->fam, "flat");
  int p, me, rc, noncomm, is_root, gather = c->fam->coll == MMP_COLL_GATHER;
  size_t *cnt, *dsp, hi = 0, mine, at = 0, blk;
  mmp__type_info_t ti;
  mmp__opts_t o;
  mmp__call_t call;
  mmp__desc_t d;
  mmp__arg_t a;
  mmp__sched_t *s;
  const void *fill = NULL;
  void *out = NULL;
  size_t fill_at = 0, fill_len = 0, out_at = 0, out_len = 0;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  if ((rc = mmp__coll_check(c->comm, c->type, 0, &ti, &noncomm)) != 0)
    return rc;
  p = c->comm->size;
  me = c->comm->rank;
  if (c->root < 0 || c->root >= p)
    return MMP_ERANK;
  is_root = me == c->root;
  if ((rc = mmp__coll_elems(c->mine, ti.size, &mine)) != 0 ||
      (rc = mmp__coll_elems(c->count, ti.size, &blk)) != 0 ||
      (rc = mmp__opts_from(c->fam, c->o, &o)) != 0)
    return rc;
  if (c->counts != NULL) {
    /* Only the root knows the counts: the flat algorithm. A call that
     * names another is wrong; MINIMP_<COLLECTIVE>_ALG, which serves the
     * equal-block form too, is not. */
    if (o.alg != NULL && o.alg != flat && !o.from_env)
      return MMP_EINVAL;
    o.alg = flat;
    if (is_root && c->displs == NULL)
      return MMP_EINVAL;
  }
  mmp__call_init(&call, c->fam, c->comm, c->root,
                 c->counts != NULL ? 0 : c->count, ti.size, ti.base, 0, 0, blk);
  if ((rc = mmp__opts_check(&call, &o)) != 0 ||
      (rc = mmp__resolve(&call, &o, &d, NULL)) != 0)
    return rc;
  cnt = calloc(2 * (size_t)p, sizeof(size_t));
  if (cnt == NULL)
    return MMP_ENOMEM;
  dsp = cnt + p;
  if (is_root) {
    rc = mmp__coll_layout(p, ti.size, c->count, c->counts, c->displs, cnt, dsp,
                          &hi);
    if (rc == 0 && ((gather && c->recvbuf == NULL && hi > 0) ||
                    (!gather && c->sendbuf == NULL && hi > 0)))
      rc = MMP_EINVAL;
    if (rc == 0)
      rc = mmp__coll_sched_new(c->comm, c->fam, &d, c->type, o.mode,
                               o.timeout_ms, gather ? c->recvbuf : NULL,
                               gather ? hi : 0, gather ? NULL : c->sendbuf,
                               gather ? 0 : hi, c->rebuild, &s);
    /* The root's own block, unless it is in place. */
    if (rc == 0 && gather && c->sendbuf != MMP_IN_PLACE) {
      fill = c->sendbuf;
      fill_at = dsp[me];
      fill_len = cnt[me];
    }
    if (rc == 0 && !gather && c->recvbuf != MMP_IN_PLACE && cnt[me] > 0)
      memcpy(c->recvbuf, (const uint8_t *)c->sendbuf + dsp[me], cnt[me]);
  } else if (d.alg == flat) {
    /* Only its own block, where the caller has it. */
    cnt[me] = mine;
    if ((gather ? c->sendbuf : c->recvbuf) == NULL && mine > 0)
      rc = MMP_EINVAL;
    if (rc == 0)
      rc = mmp__coll_sched_new(c->comm, c->fam, &d, c->type, o.mode,
                               o.timeout_ms, gather ? NULL : c->recvbuf,
                               gather ? 0 : mine, gather ? c->sendbuf : NULL,
                               gather ? mine : 0, c->rebuild, &s);
  } else {
    /* Its subtree's blocks, in scratch laid out as the root's buffer. */
    if ((gather ? c->sendbuf : c->recvbuf) == NULL && blk > 0)
      rc = MMP_EINVAL;
    if (rc == 0 && blk > 0 && (size_t)p > SIZE_MAX / blk)
      rc = MMP_ETOOBIG;
    if (rc == 0)
      rc = mmp__coll_sched_new(c->comm, c->fam, &d, c->type, o.mode,
                               o.timeout_ms, NULL, 0, NULL, 0, c->rebuild, &s);
    if (rc == 0) {
      int i;
      at = mmp__sched_scratch(s, blk * (size_t)p);
      for (i = 0; i < p; i++) {
        cnt[i] = blk;
        dsp[i] = at + (size_t)i * blk;
      }
      if (gather) {
        fill = c->sendbuf;
        fill_at = dsp[me];
        fill_len = blk;
      } else {
        out = c->recvbuf;
        out_at = dsp[me];
        out_len = blk;
      }
    }
  }
  if (rc != 0) {
    free(cnt);
    return rc;
  }
  memset(&a, 0, sizeof(a));
  a.cnt = cnt;
  a.dsp = dsp;
  rc = mmp__desc_build(s, &d, &a);
  if (rc != 0) {
    free(cnt);
    mmp__sched_free(s);
    return rc;
  }
  free(cnt);
  return mmp__coll_start(s, fill, fill_at, fill_len, out, out_at, out_len, req);
}

int mmp__gs_equal(const mmp__family_t *f, mmp__sched_rebuild_fn rebuild,
                  const void *sendbuf, void *recvbuf, size_t mine, size_t count,
                  mmp_type_t type, int root, mmp_comm_t *comm,
                  const mmp_coll_opts_t *opts, mmp_request_t **req) {
  mmp__gs_call_t c;

  memset(&c, 0, sizeof(c));
  c.fam = f;
  c.rebuild = rebuild;
  c.sendbuf = sendbuf;
  c.recvbuf = recvbuf;
  c.mine = mine;
  c.count = count;
  c.type = type;
  c.root = root;
  c.comm = comm;
  c.o = opts;
  /* The layout's block: the root's count, elsewhere this rank's own
   * (equal in a correct program; the header compares them). */
  if (comm != NULL && mmp__eng != NULL && comm->rank != root)
    c.count = mine;
  return mmp__gs_start(&c, req);
}

int mmp__gs_varying(const mmp__family_t *f, mmp__sched_rebuild_fn rebuild,
                    const void *sendbuf, void *recvbuf, size_t mine,
                    const size_t *counts, const size_t *displs, mmp_type_t type,
                    int root, mmp_comm_t *comm, const mmp_coll_opts_t *opts,
                    mmp_request_t **req) {
  static const size_t none = 0;
  mmp__gs_call_t c;

  memset(&c, 0, sizeof(c));
  c.fam = f;
  c.rebuild = rebuild;
  c.sendbuf = sendbuf;
  c.recvbuf = recvbuf;
  c.mine = mine;
  c.counts = counts != NULL ? counts : &none; /* non-roots: not read */
  c.displs = displs;
  c.type = type;
  c.root = root;
  c.comm = comm;
  c.o = opts;
  if (comm != NULL && mmp__eng != NULL && comm->rank == root &&
      (counts == NULL || displs == NULL))
    return req != NULL ? (*req = NULL, MMP_EINVAL) : MMP_EINVAL;
  return mmp__gs_start(&c, req);
}

int mmp_igather(const void *sendbuf, size_t sendcount, void *recvbuf,
                size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm,
                const mmp_gather_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__gs_equal(&mmp__gather_family, NULL, sendbuf,
                                      recvbuf, sendcount, recvcount, type, root,
                                      comm, opts, req),
                        __func__);
}

int mmp_gather_ex(const void *sendbuf, size_t sendcount, void *recvbuf,
                  size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm,
                  const mmp_gather_opts_t *opts) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_igather(sendbuf, sendcount, recvbuf, recvcount, type,
                                   root, comm, opts, &r),
                       &r, __func__);
}

int mmp_gather(const void *sendbuf, size_t sendcount, void *recvbuf,
               size_t recvcount, mmp_type_t type, int root, mmp_comm_t *comm) {
  mmp__api_enter();
  return mmp__api_leave(mmp_gather_ex(sendbuf, sendcount, recvbuf, recvcount,
                                      type, root, comm, NULL),
                        __func__);
}

int mmp_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                 const size_t *recvcounts, const size_t *displs,
                 mmp_type_t type, int root, mmp_comm_t *comm,
                 const mmp_gather_opts_t *opts, mmp_request_t **req) {
  mmp__api_enter();
  return mmp__api_leave(mmp__gs_varying(&mmp__gather_family, NULL, sendbuf,
                                        recvbuf, sendcount, recvcounts, displs,
                                        type, root, comm, opts, req),
                        __func__);
}

int mmp_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                const size_t *recvcounts, const size_t *displs, mmp_type_t type,
                int root, mmp_comm_t *comm) {
  mmp_request_t *r;

  mmp__api_enter();
  return mmp__api_wait(mmp_igatherv(sendbuf, sendcount, recvbuf, recvcounts,
                                    displs, type, root, comm, NULL, &r),
                       &r, __func__);
}
