/* SPDX-License-Identifier: MIT */
/*
 * Gather: its table (table.c), and the front-end it shares with scatter
 * (gather.c), which lays out the root's blocks and this rank's.
 */
#ifndef MMP_COLLECTIVES_GATHER_GATHER_H
#define MMP_COLLECTIVES_GATHER_GATHER_H

#include "collectives/core/call.h"
#include "collectives/select/auto.h"
#include "collectives/patterns/blocks.h"

extern const mmp__family_t mmp__gather_family;

/* One gather or scatter call. `counts`/`displs` (root, elements) or
 * NULL for equal blocks of `count`; `mine` is this rank's own count. */
typedef struct mmp__gs_call_s {
  const mmp__family_t *fam;      /* gather's or scatter's */
  mmp__sched_rebuild_fn rebuild; /* a sender's description differs: NULL
                                    fails, else rebuild the sender's plan */
  const void *sendbuf;
  void *recvbuf;
  size_t mine;
  size_t count; /* equal blocks: the root's per-rank count */
  const size_t *counts, *displs;
  mmp_type_t type;
  int root;
  mmp_comm_t *comm;
  const mmp_coll_opts_t *o;
} mmp__gs_call_t;

/* Starts a gather (c->fam gather's) or a scatter: checks, layout, the
 * schedule. 0 with *req, or an error. */
int mmp__gs_start(const mmp__gs_call_t *c, mmp_request_t **req);

/* The equal-block and the v-form calls of gather (f gather's) and scatter
 * on mmp__gs_start: `mine` is this rank's own count, `count` the root's
 * per-rank one; counts and displs (elements) are read at the root only. */
int mmp__gs_equal(const mmp__family_t *f, mmp__sched_rebuild_fn rebuild,
                  const void *sendbuf, void *recvbuf, size_t mine, size_t count,
                  mmp_type_t type, int root, mmp_comm_t *comm,
                  const mmp_coll_opts_t *opts, mmp_request_t **req);
int mmp__gs_varying(const mmp__family_t *f, mmp__sched_rebuild_fn rebuild,
                    const void *sendbuf, void *recvbuf, size_t mine,
                    const size_t *counts, const size_t *displs, mmp_type_t type,
                    int root, mmp_comm_t *comm, const mmp_coll_opts_t *opts,
                    mmp_request_t **req);

#endif /* MMP_COLLECTIVES_GATHER_GATHER_H */
