/* SPDX-License-Identifier: MIT */
/*
 * Multicast s-to-p: every source multicasts its own message once and the
 * switch copies it to every host; every rank assembles the s messages in
 * place. It runs as s concurrent multicast broadcasts (the broadcast
 * table's multicast row, found in it by name), one
 * per source in source order, each with its own collective sequence
 * number, so that their datagrams, NACKs, repairs and ACK trees never
 * mix. Every rank starts them in the same order, so the numbers agree.
 *
 * Availability is the broadcast's, decided in mmp_init: where multicast
 * is unusable it fails with MMP_ENOTSUP on every rank before anything is
 * sent. With no source at
 * all nothing is sent and the call succeeds.
 *
 * Cost: each source sends its L_j once (alpha + L_j beta at the source),
 * each rank receives S - L_me, flat in p. Each of the s sources paces at
 * 1/s of the model's rate and burst (pace_share), since all of them share
 * every receiver's link (docs/data/history/performance.md, "The multicast
 * s-to-p"). Selected by AUTO where its price (multicast_cost) is 3% below every
 * other row's, under the broadcast's conditions, MINIMP_MCAST=on among
 * them (docs/design/auto.md, "Multicast"); else when asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

typedef struct s2p_mc_s s2p_mc_t;

/* One source's broadcast as this rank follows it. */
typedef struct mc_sub_s {
  s2p_mc_t *owner;
  mmp_request_t *req; /* the broadcast's request, ours to free */
  void *own_arg;      /* its cb_arg while we borrow the callback */
} mc_sub_t;

struct s2p_mc_s {
  mmp__engine_t *e;
  mmp_request_t *creq;
  mc_sub_t *sub;
  int nsub; /* started */
  int left; /* started and not yet complete */
  int err;
  void (*fini)(int *err, void *arg);
  void *fini_arg;
};

/* Lock held: every broadcast is over. The request's status counts every
 * message's bytes, as the other rows' schedules do. */
static void mc_finish(s2p_mc_t *c) {
  if (c->fini != NULL)
    c->fini(&c->err, c->fini_arg);
  c->fini = NULL;
  c->creq->status.error = c->err;
  c->creq->status.bytes = c->err == 0 ? c->creq->len : 0;
  mmp__req_complete_locked(c->e, c->creq, c->err);
}

static void mc_note(s2p_mc_t *c, int err) {
  if (c->err == 0 && err != 0)
    c->err = err;
}

/* Lock held: one broadcast completed. Its request goes back to what it
 * was before we borrowed its callback (its destructor reads cb_arg). */
static void sub_done(mmp_request_t *r, void *arg) {
  mc_sub_t *sb = arg;
  s2p_mc_t *c = sb->owner;

  r->cb = NULL;
  r->cb_arg = sb->own_arg;
  mc_note(c, r->err);
  if (--c->left == 0)
    mc_finish(c);
}

/* Lock NOT held (mmp_wait): the broadcasts' requests go as mmp_wait
 * frees a user's, each after its own destructor. */
static void mc_req_free(mmp_request_t *r) {
  s2p_mc_t *c = r->cb_arg;
  int i;

  MMP__ASSERT_UNLOCKED(c->e);
  assert(c->left == 0);
  for (i = 0; i < c->nsub; i++) {
    mmp__req_user_free(c->sub[i].req);
  }
  free(c->sub);
  free(c);
}

/* Starts source j's broadcast on its region of the output. */
static int start_one(const mmp__run_t *run, const mmp__alg_t *b, int j,
                     mmp_request_t **req) {
  const mmp__s2p_t *x = run->x;
  mmp__desc_t d;
  mmp__run_t br;

  memset(&d, 0, sizeof(d));
  d.coll = MMP_COLL_BCAST;
  d.alg = b;
  d.root = x->src[j];
  d.count = x->len[j];
  d.esize = 1;
  memset(&br, 0, sizeof(br));
  br.e = run->e;
  br.comm = run->comm;
  br.buf = run->buf + x->off[j];
  br.d = &d;
  br.mode = run->mode;
  br.fam = &mmp__bcast_family;
  br.timeout_ms = run->timeout_ms;
  br.pace_share = x->ns;
  br.part = 1;
  br.seq_given = run->seq_given;
  br.seq = run->seq + (uint32_t)j;
  return b->start(&br, req);
}

static int multicast_start(const mmp__run_t *run, mmp_request_t **out) {
  const mmp__alg_t *b = mmp__alg_find(&mmp__bcast_family, "multicast");
  const mmp__s2p_t *x = run->x;
  mmp__engine_t *e = run->e;
  mmp_request_t *creq;
  s2p_mc_t *c;
  int j, rc = 0;

  *out = NULL;
  MMP__ASSERT_UNLOCKED(e);
  assert(b != NULL && (b->flags & MMP__ALG_DYNAMIC));
  c = calloc(1, sizeof(*c));
  creq = calloc(1, sizeof(*creq));
  if (c == NULL || creq == NULL ||
      (x->ns > 0 &&
       (c->sub = calloc((size_t)x->ns, sizeof(*c->sub))) == NULL)) {
    free(c);
    free(creq);
    return MMP_ENOMEM;
  }
  c->e = e;
  c->creq = creq;
  /* In source order on every rank: the broadcasts' sequence numbers
   * agree. */
  for (j = 0; j < x->ns; j++) {
    rc = start_one(run, b, j, &c->sub[j].req);
    if (rc != 0)
      break;
    c->sub[j].owner = c;
    c->nsub++;
  }
  if (rc != 0 && c->nsub == 0) {
    free(c->sub);
    free(c);
    free(creq);
    return rc;
  }
  /* A later start failed (memory): the others run to their end (their
   * peers time out on the missing one) and the call fails with it. */
  c->err = rc;
  c->fini = run->fini;
  c->fini_arg = run->fini_arg;
  mmp__coll_req_init(creq, run->comm, x->total, MMP_ANY_SOURCE, c, mc_req_free);
  mmp__lock(e);
  for (j = 0; j < c->nsub; j++) {
    mmp_request_t *q = c->sub[j].req;
    /* A user-facing request has no callback: completing it only wakes
     * its waiters. We borrow that slot to hear of it at once. */
    assert(q->on_heap && q->cb == NULL);
    if (atomic_load_explicit(&q->done, memory_order_acquire)) {
      mc_note(c, q->err);
      continue;
    }
    c->sub[j].own_arg = q->cb_arg;
    q->cb_arg = &c->sub[j];
    q->cb = sub_done;
    c->left++;
  }
  if (c->left == 0)
    mc_finish(c);
  mmp__unlock(e);
  *out = creq;
  return 0;
}

/* The sources run at once, each at 1/s of the pace, so the longest
 * message takes s times its own wire time; the repairs are priced as
 * for one broadcast of all S bytes. */
static double multicast_cost(const mmp__cost_in_t *in) {
  const mmp__s2p_t *x = in->x;
  const mmp_netmodel_t *nm = in->nm;
  size_t lmax = 0;
  int j;

  if (x->ns == 0)
    return 0;
  for (j = 0; j < x->ns; j++)
    lmax = x->len[j] > lmax ? x->len[j] : lmax;
  return mmp__mcast_price(x->p, (double)lmax, x->ns, (double)x->total, nm,
                          in->mc);
}

const mmp__alg_t mmp__s2p_multicast_alg = {
    .name = "multicast",
    .summary = "each source multicasts its message, where multicast works",
    .flags = MMP__ALG_AUTO | MMP__ALG_DYNAMIC,
    .prefer = 11,
    .cost = multicast_cost,
    .start = multicast_start,
};
