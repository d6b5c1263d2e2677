/* SPDX-License-Identifier: MIT */
/*
 * What the collectives layer keeps about a communicator: the network
 * model once measured, AUTO's cached decisions, and what its broadcasts
 * saw and ran. The state belongs to this layer; the runtime carries the
 * pointer on the communicator, frees it with it, and asks for a child's
 * state when a communicator is made from another (mmp__comm_ext_ops_t):
 * the child inherits the model, which is the parent's network, and starts
 * with no decisions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "collectives/core/state.h"

static void *state_inherit(const void *parent) {
  const mmp__coll_state_t *ps = parent;
  mmp__coll_state_t *s = calloc(1, sizeof(*s));

  MMP__ASSERT_UNLOCKED(mmp__eng); /* the state is read without it */
  if (s != NULL && ps != NULL) {
    s->net_known = ps->net_known;
    s->net = ps->net;
  }
  return s;
}

static void state_free(void *state) {
  mmp__coll_state_t *s = state;
  size_t k;

  for (k = 0; s != NULL && k < MMP__ARRAY_SIZE(s->adapt); k++)
    free(s->adapt[k].off);
  for (k = 0; s != NULL && k < MMP__AUTO_SLOTS; k++)
    free((void *)(uintptr_t)s->autos[k].key.ext);
  free(state);
}

static const mmp__comm_ext_ops_t state_ops = {
    .inherit = state_inherit,
    .free = state_free,
};

mmp__coll_state_t *mmp__coll_state(mmp_comm_t *comm) {
  mmp__engine_t *e = mmp__eng;
  mmp__coll_state_t *s, *fresh = NULL;

  MMP__ASSERT_UNLOCKED(e);
  for (;;) {
    mmp__lock(e);
    s = comm->coll;
    if (s == NULL && fresh != NULL) {
      comm->coll = s = fresh;
      comm->coll_ops = &state_ops;
      fresh = NULL;
    }
    mmp__unlock(e);
    free(fresh); /* another thread was first */
    if (s != NULL)
      return s;
    /* Allocated outside the lock, which every rank's progress shares. */
    if ((fresh = calloc(1, sizeof(*fresh))) == NULL)
      return NULL;
  }
}

/* ---- AUTO's decisions ---------------------------------------------------- */

/* The slot of key `k`: a mix of its fixed fields (ext is compared, not
 * hashed: one call's lengths land in one slot whatever they are). */
static size_t auto_slot(const mmp__auto_key_t *k) {
  uint64_t h = (uint64_t)k->coll * 0x9e3779b97f4a7c15ull;

  h ^= k->len + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
  h ^= (uint64_t)k->esize * 31u + (uint64_t)k->noncomm + (h << 6) + (h >> 2);
  h ^= (uint64_t)k->node + (h << 6) + (h >> 2);
  return (size_t)(h % MMP__AUTO_SLOTS);
}

static int auto_same(const mmp__auto_key_t *a, const mmp__auto_key_t *b) {
  return a->coll == b->coll && a->len == b->len && a->esize == b->esize &&
         a->noncomm == b->noncomm && a->rows == b->rows && a->node == b->node &&
         a->ext_len == b->ext_len &&
         (a->ext_len == 0 || memcmp(a->ext, b->ext, a->ext_len) == 0);
}

int mmp__auto_get(mmp__coll_state_t *st, const mmp__auto_key_t *k,
                  mmp__desc_t *d, unsigned *flags) {
  const mmp__auto_t *c = &st->autos[auto_slot(k)];

  if (!c->valid || c->gen != st->net_gen || !auto_same(&c->key, k))
    return 0;
  d->alg = c->d.alg;
  d->seg = c->d.seg;
  d->radix = c->d.radix;
  d->groups = c->d.groups;
  d->inner = c->d.inner;
  d->outer = c->d.outer;
  d->rows = c->d.rows;
  d->window = c->d.window;
  *flags = c->flags;
  st->auto_hits++;
  return 1;
}

void mmp__auto_keep(mmp__coll_state_t *st, const mmp__auto_key_t *k,
                    const mmp__desc_t *d, unsigned flags) {
  mmp__auto_t *c = &st->autos[auto_slot(k)];
  void *ext = NULL;

  if (k->ext_len > 0 && (ext = malloc(k->ext_len)) == NULL)
    return;
  if (ext != NULL)
    memcpy(ext, k->ext, k->ext_len);
  free((void *)(uintptr_t)c->key.ext);
  c->key = *k;
  c->key.ext = ext;
  c->d = *d;
  c->flags = flags;
  c->gen = st->net_gen;
  c->valid = 1;
}

/* ---- AUTO under arrival patterns ---------------------------------------- */

/* The size class of `len`: floor(log2 len), at least 1. */
static int adapt_class(size_t len) {
  int lg = 1;

  while (lg < 63 && (len >> (lg + 1)) != 0)
    lg++;
  return lg;
}

/* Lock held. The slot of `len`'s class, emptied if it held another. */
static int adapt_slot_locked(mmp__coll_state_t *st, size_t len) {
  int lg = adapt_class(len), k = lg % (int)MMP__ARRAY_SIZE(st->adapt);

  if (st->adapt[k].lg != lg) {
    st->adapt[k].lg = lg;
    st->adapt[k].regime = st->hint;
    st->adapt[k].n = st->adapt[k].next = 0;
    st->adapt[k].stat_scale = st->adapt[k].arr_scale = 0;
  }
  return k;
}

void mmp__coll_adapt_record_locked(mmp_comm_t *comm, size_t len,
                                   const double *off, double took,
                                   int arrival) {
  mmp__coll_state_t *st = comm->coll;
  size_t p = (size_t)comm->size;
  int k;

  MMP__ASSERT_LOCKED(mmp__eng);
  if (st == NULL)
    return;
  k = adapt_slot_locked(st, len);
  if (st->adapt[k].off == NULL &&
      (st->adapt[k].off = malloc(MMP__ADAPT_HISTORY * p * sizeof(double))) ==
          NULL)
    return;
  memcpy(st->adapt[k].off + (size_t)st->adapt[k].next * p, off,
         p * sizeof(double));
  st->adapt[k].took[st->adapt[k].next] = arrival ? 0 : took;
  st->adapt[k].arr_took[st->adapt[k].next] = arrival ? took : 0;
  st->adapt[k].next = (st->adapt[k].next + 1) % MMP__ADAPT_HISTORY;
  if (st->adapt[k].n < MMP__ADAPT_HISTORY)
    st->adapt[k].n++;
}

int mmp__coll_adapt_read(mmp_comm_t *comm, size_t len, double *hist,
                         double *took, double *arr_took, int *regime,
                         double scale[2]) {
  mmp__coll_state_t *st = mmp__coll_state(comm);
  int k, n;

  *regime = 0;
  scale[0] = scale[1] = 0;
  if (st == NULL)
    return 0;
  mmp__lock(mmp__eng);
  k = adapt_slot_locked(st, len);
  n = st->adapt[k].n;
  *regime = st->adapt[k].regime;
  scale[0] = st->adapt[k].stat_scale;
  scale[1] = st->adapt[k].arr_scale;
  if (n > 0) {
    memcpy(hist, st->adapt[k].off,
           (size_t)n * (size_t)comm->size * sizeof(double));
    memcpy(took, st->adapt[k].took, (size_t)n * sizeof(double));
    memcpy(arr_took, st->adapt[k].arr_took, (size_t)n * sizeof(double));
  }
  mmp__unlock(mmp__eng);
  return n;
}

void mmp__coll_adapt_set_scales(mmp_comm_t *comm, size_t len,
                                const double scale[2]) {
  mmp__coll_state_t *st = mmp__coll_state(comm);
  int k;

  if (st == NULL)
    return;
  mmp__lock(mmp__eng);
  k = adapt_slot_locked(st, len);
  st->adapt[k].stat_scale = scale[0];
  st->adapt[k].arr_scale = scale[1];
  mmp__unlock(mmp__eng);
}

void mmp__coll_adapt_decided(mmp_comm_t *comm, size_t len, int regime) {
  mmp__coll_state_t *st = mmp__coll_state(comm);

  if (st == NULL)
    return;
  mmp__lock(mmp__eng);
  st->adapt[adapt_slot_locked(st, len)].regime = regime;
  st->hint = regime;
  mmp__unlock(mmp__eng);
}

void mmp__coll_bcast_done_locked(mmp_comm_t *comm) {
  mmp__coll_state_t *st = comm->coll;

  MMP__ASSERT_LOCKED(mmp__eng);
  if (st != NULL)
    st->bcast_done = uv_hrtime();
}

double mmp__coll_bcast_idle(mmp_comm_t *comm) {
  mmp__coll_state_t *st = mmp__coll_state(comm);
  uint64_t done;

  if (st == NULL)
    return INFINITY;
  mmp__lock(mmp__eng);
  done = st->bcast_done;
  mmp__unlock(mmp__eng);
  return done == 0 ? INFINITY : (double)(uv_hrtime() - done) * 1e-9;
}

void mmp__coll_adapt_hint_locked(mmp_comm_t *comm, int hint) {
  mmp__coll_state_t *st = comm->coll;

  MMP__ASSERT_LOCKED(mmp__eng);
  if (st != NULL)
    st->hint = hint;
}

/* ---- What ran ------------------------------------------------------------ */

void mmp__coll_log_locked(mmp_comm_t *comm, uint32_t seq,
                          const mmp__alg_t *alg) {
  mmp__coll_state_t *st = comm->coll;

  MMP__ASSERT_LOCKED(mmp__eng);
  if (st == NULL)
    return;
  st->log[st->nlog % MMP__COLL_LOG].seq = seq;
  st->log[st->nlog % MMP__COLL_LOG].alg = alg;
  st->nlog++;
}

int mmp__coll_log_get(mmp_comm_t *comm, uint32_t *seq, const mmp__alg_t **alg,
                      int max) {
  mmp__coll_state_t *st = mmp__coll_state(comm);
  unsigned first, i;
  int n = 0;

  if (st == NULL)
    return 0;
  mmp__lock(mmp__eng);
  first = st->nlog > MMP__COLL_LOG ? st->nlog - MMP__COLL_LOG : 0;
  for (i = first; i < st->nlog && n < max; i++, n++) {
    seq[n] = st->log[i % MMP__COLL_LOG].seq;
    alg[n] = st->log[i % MMP__COLL_LOG].alg;
  }
  mmp__unlock(mmp__eng);
  return n;
}
