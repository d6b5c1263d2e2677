/* SPDX-License-Identifier: MIT */
/*
 * Settling a call's description, for every collective alike: the row the
 * caller named, with its options, or AUTO's pick under the model; then
 * the row's own resolve for what was left open. AUTO's decisions are
 * kept in the communicator's cache (core/state.h), keyed by what they
 * depend on: pricing every row, the model's fit to the communicator's
 * nodes and, for s-to-p, every round of the plans, cost more than a
 * short collective.
 */
#include <math.h>
#include <string.h>

#include "collectives/select/auto.h"

int mmp__opts_check(const mmp__call_t *c, mmp__opts_t *o) {
  int p = c->comm->size;

  /* One variable serves every communicator of the job: its groups are at
   * most p, and rows that do not divide p are left to the algorithm. */
  if (o->from_env) {
    if (o->groups > p)
      o->groups = p;
    if (o->rows > 0 && p % o->rows != 0)
      o->rows = 0;
  }
  if (o->mode > MMP_SEND_RNDV || o->radix < 0 || o->radix == 1 ||
      o->radix > MMP__RADIX_MAX || o->groups < 0 || o->groups > p ||
      o->window < 0 || o->rows < 0 || o->rows > p ||
      (o->rows > 0 && p % o->rows != 0))
    return MMP_EINVAL;
  if ((o->inner != NULL && !(o->inner->flags & MMP__ALG_PART)) ||
      (o->outer != NULL && !(o->outer->flags & MMP__ALG_PART)))
    return MMP_EINVAL;
  /* An operation that is not commutative needs rank order. */
  if (o->alg != NULL && c->noncomm && !(o->alg->flags & MMP__ALG_ORDERED))
    return MMP_EINVAL;
  return 0;
}

/* The model, for hooks that need it. */
static int model(const mmp__call_t *c, mmp_netmodel_t *nm, int *have) {
  int rc;

  if (*have)
    return 0;
  if ((rc = mmp__netmodel_get(c->comm, nm)) != 0)
    return rc;
  *have = 1;
  return 0;
}

/* AUTO's pick for `c`, from the cache or priced now. */
static int auto_pick(const mmp__call_t *c, mmp__desc_t *d, unsigned *flags,
                     mmp_netmodel_t *nm, int *have) {
  mmp__mcast_verdict_t mc;
  mmp__query_t q;
  double best;
  int rc;

  if ((rc = model(c, nm, have)) != 0)
    return rc;
  memset(&mc, 0, sizeof(mc));
  if (c->mcast)
    mmp__mcast_auto(c->comm, nm, &mc);
  memset(&q, 0, sizeof(q));
  q.p = c->comm->size;
  q.len = c->len;
  q.esize = c->esize;
  q.noncomm = c->noncomm;
  q.level = MMP__PICK_TOP;
  q.nm = nm;
  q.mc = mc.state > 0 ? &mc : NULL;
  q.x = c->x;
  q.node = c->node;
  best = c->fam->pick(c->fam, &q, d);
  *flags = c->auto_flags != NULL ? c->auto_flags(c, &q, d, best) : 0;
  return 0;
}

int mmp__resolve(const mmp__call_t *c, const mmp__opts_t *o, mmp__desc_t *d,
                 unsigned *flags) {
  const mmp__family_t *f = c->fam;
  mmp__coll_state_t *st = NULL;
  mmp__auto_key_t k;
  mmp_netmodel_t nm;
  unsigned fl = 0;
  int rc = 0, have = 0, cached = 0;

  memset(d, 0, sizeof(*d));
  if (o->alg == NULL) {
    memset(&k, 0, sizeof(k));
    k.coll = f->coll;
    k.noncomm = c->noncomm;
    k.len = c->len;
    k.esize = c->esize;
    k.rows = c->rows;
    k.ext = c->key_ext;
    k.ext_len = c->key_ext_len;
    k.node = c->node; /* a call the node segment may serve: apart */
    if ((st = mmp__coll_state(c->comm)) == NULL)
      return MMP_ENOMEM;
    cached = mmp__auto_get(st, &k, d, &fl);
    if (!cached && (rc = auto_pick(c, d, &fl, &nm, &have)) != 0)
      return rc;
  } else {
    d->alg = o->alg;
    d->seg = o->segment;
    d->radix = o->radix;
    d->groups = o->groups;
    d->inner = o->inner;
    d->outer = o->outer;
    d->rows = o->rows;
    d->window = o->window;
  }
  d->coll = f->coll;
  d->root = c->root;
  d->count = c->count;
  d->esize = c->esize;
  d->base = c->base;
  d->op = c->op;
  if (flags != NULL)
    *flags = fl;
  if (cached)
    return 0;
  /* A row asked for without a segment runs in AUTO's. */
  if (o->alg != NULL && d->seg == 0 && (d->alg->flags & MMP__ALG_SEGMENTED)) {
    size_t (*hook)(int, size_t, size_t, const mmp_netmodel_t *) =
        d->alg->segment != NULL ? d->alg->segment : f->segment;
    if (hook != NULL && (rc = model(c, &nm, &have)) != 0)
      return rc;
    if (hook != NULL)
      d->seg = hook(c->comm->size, c->len, c->esize, &nm);
  }
  if ((rc = mmp__resolve_row(c, o, d, o->alg == NULL, have ? &nm : NULL)) != 0)
    return rc;
  if (o->alg == NULL)
    mmp__auto_keep(st, &k, d, fl);
  return 0;
}

int mmp__env_model(const mmp__env_t *env, mmp_netmodel_t *nm) {
  if (env->nm != NULL) {
    *nm = *env->nm;
    return 0;
  }
  return mmp__netmodel_get(env->comm, nm);
}

int mmp__resolve_row(const mmp__call_t *c, const mmp__opts_t *o, mmp__desc_t *d,
                     int auto_pick, const mmp_netmodel_t *nm) {
  static const mmp__opts_t none;
  mmp__env_t env;
  int rc;

  assert(d->alg != NULL);
  if (d->alg->resolve != NULL) {
    env.comm = c->comm;
    env.nm = nm;
    env.p = c->comm->size;
    env.m = (double)c->len;
    env.auto_pick = auto_pick;
    env.fam = c->fam;
    env.o = auto_pick ? &none : o;
    if ((rc = d->alg->resolve(d, &env)) != 0)
      return rc;
  }
  if (d->esize > 1)
    d->seg -= d->seg % d->esize;
  return 0;
}
