/* SPDX-License-Identifier: MIT */
/*
 * Communicators: dup, split and create from a list of ranks.
 *
 * A communicator is a group of world ranks plus a context id that keeps
 * its messages apart: point-to-point traffic carries ctx, collectives
 * ctx + 1. Creating one is collective over the parent: every rank
 * contributes a small record (color, key, and its next free context id),
 * rank 0 of the parent gathers them and sends the table back, and every
 * rank then computes the same result. The new context id is the largest
 * "next free" id of all parent ranks, so no member uses it yet; all
 * communicators made by one split share it (and so may disjoint ones
 * made apart), which is safe because their members are disjoint: a rank
 * is in at most one communicator of an id, ever. Whatever every rank of
 * the job hears (the multicast group) tells them apart by the sender
 * (runtime/mcast.c), and a rank drops at once what comes for a context it
 * reserved without a communicator of it (mmp__comm_ctx_mine_locked).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct rec_s {
  int32_t color;
  int32_t key;
  uint32_t next_ctx;
  int32_t rank;
} rec_t;

int mmp__wait_internal(mmp__engine_t *e, mmp_request_t *r);

/* Gathers every rank's record at rank 0 of `comm` and sends the table back
 * to all. Collective; blocking. */
static int gather_records(mmp__engine_t *e, mmp_comm_t *comm, const rec_t *mine,
                          rec_t *all) {
  int p = comm->size, me = comm->rank, i, rc = 0;
  uint32_t seq;
  int tag;

  mmp__lock(e);
  seq = comm->coll_seq++;
  mmp__unlock(e);
  tag = MMP__COLL_TAG(seq, MMP__PHASE_SYS);
  if (me == 0) {
    mmp_request_t *q = calloc((size_t)p, sizeof(*q));
    if (q == NULL)
      return MMP_ENOMEM;
    all[0] = *mine;
    for (i = 1; i < p && rc == 0; i++)
      rc = mmp__irecv(e, comm, comm->ctx + 1, &all[i], sizeof(*all),
                      mmp__comm_world(comm, i), tag, &q[i]);
    for (i = 1; i < p; i++) {
      int r = q[i].kind ? mmp__wait_internal(e, &q[i]) : MMP_EINTERNAL;
      if (rc == 0 && (r != 0 || q[i].status.bytes != sizeof(*all)))
        rc = r != 0 ? r : MMP_EMISMATCH;
    }
    for (i = 1; i < p; i++) {
      int r = mmp__isend(e, comm, comm->ctx + 1, all, (size_t)p * sizeof(*all),
                         mmp__comm_world(comm, i), tag, MMP_SEND_AUTO, &q[i]);
      if (r == 0)
        r = mmp__wait_internal(e, &q[i]);
      if (rc == 0)
        rc = r;
    }
    free(q);
    return rc;
  }
  {
    mmp_request_t q;
    memset(&q, 0, sizeof(q));
    rc = mmp__isend(e, comm, comm->ctx + 1, mine, sizeof(*mine),
                    mmp__comm_world(comm, 0), tag, MMP_SEND_AUTO, &q);
    if (rc == 0)
      rc = mmp__wait_internal(e, &q);
    if (rc != 0)
      return rc;
    memset(&q, 0, sizeof(q));
    rc = mmp__irecv(e, comm, comm->ctx + 1, all, (size_t)p * sizeof(*all),
                    mmp__comm_world(comm, 0), tag, &q);
    if (rc == 0)
      rc = mmp__wait_internal(e, &q);
    if (rc == 0 && q.status.bytes != (size_t)p * sizeof(*all))
      rc = MMP_EMISMATCH;
  }
  return rc;
}

static int cmp_rec(const void *a, const void *b) {
  const rec_t *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Makes a communicator of the parent ranks `members` (n of them, in
 * order) with context `ctx`; *out is NULL if the caller is not among them. */
static int make_comm(mmp__engine_t *e, mmp_comm_t *parent, const int *members,
                     int n, uint32_t ctx, mmp_comm_t **out) {
  mmp_comm_t *c;
  int i, me = -1;

  *out = NULL;
  for (i = 0; i < n; i++)
    if (members[i] == parent->rank)
      me = i;
  if (me < 0)
    return 0;
  c = calloc(1, sizeof(*c));
  if (c == NULL)
    return MMP_ENOMEM;
  c->ctx = ctx;
  c->rank = me;
  c->size = n;
  atomic_init(&c->refs, 1);
  atomic_init(&c->timeout_ms,
              atomic_load_explicit(&parent->timeout_ms, memory_order_relaxed));
  /* Multicast works among any of the parent's ranks where it works among
   * all of them (each heard every other, the smallest payload is no
   * larger), and where it does not, the parent's verdict is the one
   * every member holds without asking the others: no check is ever made
   * in a collective's start (runtime/mcast_probe.c). */
  c->mcast = parent->mcast;
  /* What the layers above know of the parent carries over (the measured
   * network model: every parent rank has it or none does). */
  if (parent->coll_ops != NULL && parent->coll != NULL) {
    c->coll_ops = parent->coll_ops;
    c->coll = parent->coll_ops->inherit(parent->coll);
  }
  c->world_of = malloc((size_t)n * sizeof(*c->world_of));
  c->local_of = malloc((size_t)e->cfg.size * sizeof(*c->local_of));
  if (c->world_of == NULL || c->local_of == NULL) {
    free(c->world_of);
    free(c->local_of);
    free(c);
    return MMP_ENOMEM;
  }
  for (i = 0; i < e->cfg.size; i++)
    c->local_of[i] = -1;
  for (i = 0; i < n; i++) {
    c->world_of[i] = mmp__comm_world(parent, members[i]);
    c->local_of[c->world_of[i]] = i;
  }
  if (mmp__comm_nodes_from(c, parent, members, n) != 0) {
    mmp__comm_ext_free(c);
    free(c->world_of);
    free(c->local_of);
    free(c);
    return MMP_ENOMEM;
  }
  *out = c;
  return 0;
}

/* The collective core of every creation: exchanges records and agrees on a
 * context id, which every parent rank then reserves. */
static int exchange(mmp__engine_t *e, mmp_comm_t *comm, int color, int key,
                    rec_t *all, uint32_t *ctx) {
  rec_t mine;
  int i, rc;

  mmp__lock(e);
  mine.next_ctx = e->next_ctx;
  mmp__unlock(e);
  mine.color = color;
  mine.key = key;
  mine.rank = comm->rank;
  rc = gather_records(e, comm, &mine, all);
  if (rc != 0)
    return rc;
  *ctx = 0;
  for (i = 0; i < comm->size; i++)
    if (all[i].next_ctx > *ctx)
      *ctx = all[i].next_ctx;
  return 0;
}

/* Reserves `ctx` (agreed by exchange) and lists `c`, this rank's
 * communicator of it or NULL, in one step: from then on, traffic of that
 * context for no communicator of this rank is known to be another's
 * (mmp__comm_ctx_mine_locked), and never before `c` is listed. */
static void reserve(mmp__engine_t *e, uint32_t ctx, mmp_comm_t *c) {
  mmp__lock(e);
  if (e->next_ctx < ctx + 2)
    e->next_ctx = ctx + 2;
  if (c != NULL)
    mmp__list_insert_tail(&e->comms, &c->live);
  else
    mmp__mcast_not_mine_locked(e, ctx);
  mmp__unlock(e);
}

int mmp__comm_ctx_mine_locked(mmp__engine_t *e, uint32_t comm_ctx) {
  const mmp__list_t *it;

  MMP__ASSERT_LOCKED(e);
  if (comm_ctx == e->world.ctx || comm_ctx >= e->next_ctx)
    return 1;
  mmp__list_foreach(it, &e->comms) {
    const mmp_comm_t *c = mmp__container_of(it, mmp_comm_t, live);
    if (c->ctx == comm_ctx)
      return 1;
  }
  return 0;
}

static int comm_split_body(mmp_comm_t *comm, int color, int key,
                           mmp_comm_t **newcomm) {
  mmp__engine_t *e = mmp__eng;
  rec_t *all, *grp;
  int *members, i, n = 0, rc;
  uint32_t ctx;

  if (newcomm == NULL)
    return MMP_EINVAL;
  *newcomm = NULL;
  if (e == NULL)
    return mmp__not_init("mmp_comm_split");
  if (comm == NULL)
    return MMP_ECOMM;
  if (color < 0 && color != MMP_UNDEFINED)
    return MMP_EINVAL;
  all = calloc((size_t)comm->size, sizeof(*all));
  grp = calloc((size_t)comm->size, sizeof(*grp));
  members = calloc((size_t)comm->size, sizeof(*members));
  if (all == NULL || grp == NULL || members == NULL) {
    rc = MMP_ENOMEM;
    goto out;
  }
  rc = exchange(e, comm, color, key, all, &ctx);
  if (rc != 0)
    goto out;
  if (color != MMP_UNDEFINED) {
    for (i = 0; i < comm->size; i++)
      if (all[i].color == color)
        grp[n++] = all[i];
    qsort(grp, (size_t)n, sizeof(*grp), cmp_rec);
    for (i = 0; i < n; i++)
      members[i] = grp[i].rank;
    rc = make_comm(e, comm, members, n, ctx, newcomm);
  }
  reserve(e, ctx, *newcomm);
out:
  free(all);
  free(grp);
  free(members);
  return rc;
}

int mmp_comm_split(mmp_comm_t *comm, int color, int key, mmp_comm_t **newcomm) {
  mmp__api_enter();
  return mmp__api_leave(comm_split_body(comm, color, key, newcomm), __func__);
}

static int comm_dup_body(mmp_comm_t *comm, mmp_comm_t **newcomm) {
  if (comm == NULL) {
    if (newcomm != NULL)
      *newcomm = NULL;
    return mmp__eng == NULL ? mmp__not_init("mmp_comm_dup") : MMP_ECOMM;
  }
  return mmp_comm_split(comm, 0, comm->rank, newcomm);
}

int mmp_comm_dup(mmp_comm_t *comm, mmp_comm_t **newcomm) {
  mmp__api_enter();
  return mmp__api_leave(comm_dup_body(comm, newcomm), __func__);
}

static int comm_create_body(mmp_comm_t *comm, int n, const int *ranks,
                            mmp_comm_t **newcomm) {
  mmp__engine_t *e = mmp__eng;
  rec_t *all;
  char *seen;
  int i, rc = 0;
  uint32_t ctx;

  if (newcomm == NULL)
    return MMP_EINVAL;
  *newcomm = NULL;
  if (e == NULL)
    return mmp__not_init("mmp_comm_create");
  if (comm == NULL)
    return MMP_ECOMM;
  if (n < 1 || n > comm->size || ranks == NULL)
    return MMP_EINVAL;
  seen = calloc((size_t)comm->size, 1);
  all = calloc((size_t)comm->size, sizeof(*all));
  if (seen == NULL || all == NULL) {
    free(seen);
    free(all);
    return MMP_ENOMEM;
  }
  /* Every rank checks the same list, so all return the same error. */
  for (i = 0; i < n && rc == 0; i++) {
    if (ranks[i] < 0 || ranks[i] >= comm->size || seen[ranks[i]])
      rc = MMP_EINVAL;
    else
      seen[ranks[i]] = 1;
  }
  if (rc == 0)
    rc = exchange(e, comm, 0, 0, all, &ctx);
  if (rc == 0) {
    rc = make_comm(e, comm, ranks, n, ctx, newcomm);
    reserve(e, ctx, *newcomm);
  }
  free(seen);
  free(all);
  return rc;
}

int mmp_comm_create(mmp_comm_t *comm, int n, const int *ranks,
                    mmp_comm_t **newcomm) {
  mmp__api_enter();
  return mmp__api_leave(comm_create_body(comm, n, ranks, newcomm), __func__);
}

void mmp__comm_ext_free(mmp_comm_t *c) {
  if (c->coll_ops != NULL && c->coll_ops->free != NULL)
    c->coll_ops->free(c->coll);
  c->coll = NULL;
  mmp__node_free(c->node);
  c->node = NULL;
}

static void comm_destroy(mmp_comm_t *c) {
  mmp__comm_ext_free(c);
  free(c->world_of);
  free(c->local_of);
  free(c->node_of);
  free(c);
}

void mmp__comm_hold_locked(mmp_comm_t *c) {
  c->holds++;
}

void mmp__comm_release_locked(mmp_comm_t *c) {
  if (--c->holds == 0 && c->freed) {
    mmp__list_remove(&c->live);
    mmp__mcast_comm_freed_locked(mmp__eng, c->ctx);
    comm_destroy(c);
  }
}

/* The handle and the user's requests are gone: internal work still
 * holding `c` frees it on its last release, else it goes now. */
static void comm_last_ref(mmp__engine_t *e, mmp_comm_t *c) {
  int held = 0;

  if (e != NULL) {
    mmp__lock(e);
    held = c->holds > 0;
    c->freed = held;
    /* What the multicast channel keeps for it goes with it (when the
     * last collective holding it lets go, if one still does). */
    if (!held) {
      mmp__list_remove(&c->live);
      mmp__mcast_comm_freed_locked(e, c->ctx);
    }
    mmp__unlock(e);
  }
  if (!held)
    comm_destroy(c);
}

void mmp__comm_unref(mmp_comm_t *c) {
  mmp__engine_t *e = mmp__eng;

  /* The world is never freed; its count only moves. */
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1 &&
      (e == NULL || c != &e->world))
    comm_last_ref(e, c);
}

static int comm_free_body(mmp_comm_t **comm) {
  mmp__engine_t *e = mmp__eng;

  if (comm == NULL || *comm == NULL)
    return MMP_EINVAL;
  if (e != NULL && *comm == &e->world)
    return MMP_ECOMM;
  /* Requests still out on it keep it until mmp_wait frees them. */
  mmp__comm_unref(*comm);
  *comm = NULL;
  return 0;
}

int mmp_comm_free(mmp_comm_t **comm) {
  mmp__api_enter();
  return mmp__api_leave(comm_free_body(comm), __func__);
}

static int comm_timeout_check(const mmp_comm_t *comm, const char *fn) {
  if (mmp__eng == NULL)
    return mmp__not_init(fn);
  return comm == NULL ? MMP_ECOMM : 0;
}

int mmp_comm_set_timeout(mmp_comm_t *comm, unsigned ms) {
  int rc;

  mmp__api_enter();
  rc = comm_timeout_check(comm, __func__);
  if (rc == 0)
    atomic_store_explicit(&comm->timeout_ms, ms, memory_order_relaxed);
  return mmp__api_leave(rc, __func__);
}

int mmp_comm_get_timeout(const mmp_comm_t *comm, unsigned *ms) {
  int rc;

  mmp__api_enter();
  rc = comm_timeout_check(comm, __func__);
  if (rc == 0 && ms == NULL)
    rc = MMP_EINVAL;
  if (rc == 0)
    *ms = atomic_load_explicit(&((mmp_comm_t *)comm)->timeout_ms,
                               memory_order_relaxed);
  return mmp__api_leave(rc, __func__);
}

int mmp_comm_world_rank(const mmp_comm_t *comm, int rank) {
  int rc;

  mmp__api_enter();
  rc = comm_timeout_check(comm, __func__);
  if (rc == 0)
    rc = rank >= 0 && rank < comm->size ? mmp__comm_world(comm, rank)
                                        : MMP_ERANK;
  return mmp__api_leave(rc, __func__);
}
