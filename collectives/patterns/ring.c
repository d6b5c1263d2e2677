/* SPDX-License-Identifier: MIT */
/*
 * The ring ([Patarasuk & Yuan 2009]; Gloo's allreduce_ring): a ring
 * reduce-scatter, and with it a ring allgather, over n blocks of a
 * vector. In step t of the reduce-scatter rank i sends block i - t to
 * i + 1 and combines block i - t - 1 from i - 1 into its own; after n - 1
 * steps rank i holds block i + 1 reduced over all ranks, and n - 1
 * allgather steps pass the reduced blocks round. Cut into segments (a->seg),
 * a rank combines segment j while segment j + 1 arrives and forwards j as
 * soon as it is combined, so the arithmetic overlaps the network.
 * Order: block b is combined along the ring starting at rank b,
 * x_b o x_{b+1} o ... o x_{b-1}, once, by one rank, then copied: every
 * rank gets the same bits. Commutative operations only.
 */
#include <stdlib.h>

#include "collectives/patterns/reduce.h"

#define PHASE_RS 0
#define PHASE_AG 1

typedef struct ring_s {
  int n, me, shift, nseg;
  const size_t *bnd; /* n + 1 block boundaries, relative to a->off */
  size_t seg;
  int *red;  /* per step and segment: the reduction done */
  int *snd;  /* per step and segment: the reduce-scatter send */
  int *step; /* per step: every reduction of it done */
} ring_t;

static int blk(const ring_t *r, int k) {
  return ((k % r->n) + r->n) % r->n;
}

/* Segment j of block b: [*o, *o + *len) relative to a->off; 0 if the
 * block has no segment j. */
static int seg_of(const ring_t *r, int b, int j, size_t *o, size_t *len) {
  size_t bl = r->bnd[b + 1] - r->bnd[b];

  if ((size_t)j >= mmp__seg_count(bl, r->seg))
    return 0;
  mmp__seg_range(bl, r->seg, (size_t)j, o, len);
  *o += r->bnd[b];
  return 1;
}

static int ring_rs(mmp__sched_t *s, const mmp__arg_t *a, ring_t *r, size_t t0,
                   size_t t1) {
  int n = r->n, me = r->me, t, j, right = (me + 1) % n, left = (me + n - 1) % n;

  for (t = 0; t + 1 < n; t++) {
    int sb = blk(r, me + r->shift - 1 - t), rb = blk(r, me + r->shift - 2 - t);
    size_t tmp = t % 2 ? t1 : t0, o, len;
    int all = mmp__sched_nop(s);
    if (all < 0)
      return all;
    for (j = 0; j < r->nseg; j++) {
      int *red = &r->red[t * r->nseg + j], *snd = &r->snd[t * r->nseg + j];
      *red = *snd = -1;
      if (seg_of(r, sb, j, &o, &len))
        *snd = mmp__coll_send(s, a, right, a->off + o, len, a->phase + PHASE_RS,
                              t > 0 ? r->red[(t - 1) * r->nseg + j] : -1,
                              t == 0 && j == 0);
      if (*snd < -1)
        return *snd;
      if (seg_of(r, rb, j, &o, &len)) {
        int rcv = mmp__coll_recv(s, a, left, tmp + (o - r->bnd[rb]), len,
                                 a->phase + PHASE_RS, t == 0 && j == 0);
        /* The scratch half is free once step t - 2 combined it. */
        if (rcv >= 0 && t >= 2 && mmp__sched_dep(s, r->step[t - 2], rcv))
          return MMP_ENOMEM;
        *red = mmp__coll_reduce(s, tmp + (o - r->bnd[rb]), a->off + o, len, 0,
                                rcv, a->dep);
        if (*red < 0 || mmp__sched_dep(s, *red, all) != 0)
          return *red < 0 ? *red : MMP_ENOMEM;
      }
    }
    r->step[t] = all;
  }
  return 0;
}

/* The allgather after the reduce-scatter: rank i holds block i + shift. */
static int ring_ag(mmp__sched_t *s, const mmp__arg_t *a, ring_t *r, int done) {
  int n = r->n, me = r->me, t, j, right = (me + 1) % n, left = (me + n - 1) % n,
      *prev = calloc((size_t)r->nseg, sizeof(int));

  if (prev == NULL)
    return MMP_ENOMEM;
  for (j = 0; j < r->nseg; j++)
    prev[j] = r->red[(n - 2) * r->nseg + j];
  for (t = 0; t + 1 < n; t++) {
    int sb = blk(r, me + r->shift - t), rb = blk(r, me + r->shift - 1 - t);
    size_t o, len;
    for (j = 0; j < r->nseg; j++) {
      int rcv = -1, snd = -1;
      if (seg_of(r, sb, j, &o, &len))
        snd = mmp__coll_send(s, a, right, a->off + o, len, a->phase + PHASE_AG,
                             prev[j], 0);
      if (seg_of(r, rb, j, &o, &len)) {
        rcv =
            mmp__coll_recv(s, a, left, a->off + o, len, a->phase + PHASE_AG, 0);
        /* Into the block this rank sent in reduce-scatter step t. */
        if (rcv >= 0 && mmp__sched_dep(s, r->snd[t * r->nseg + j], rcv))
          rcv = MMP_ENOMEM;
        if (rcv >= 0 && mmp__sched_dep(s, rcv, done))
          rcv = MMP_ENOMEM;
      }
      if (snd < -1 || rcv < -1) {
        free(prev);
        return snd < -1 ? snd : rcv;
      }
      if (snd >= 0 && mmp__sched_dep(s, snd, done) != 0) {
        free(prev);
        return MMP_ENOMEM;
      }
      prev[j] = rcv;
    }
  }
  free(prev);
  return 0;
}

/* The ring over blocks `bnd` (n + 1 boundaries relative to a->off):
 * rank i ends holding block i + shift reduced; with `allgather`, then
 * every block. Returns the op after which this rank's part is done. */
int mmp__ring_build(mmp__sched_t *s, const mmp__arg_t *a, const size_t *bnd,
                    int shift, int allgather) {
  ring_t r;
  size_t maxb = 0, t0, t1;
  int k, rc, done;

  r.n = a->g->n;
  r.me = a->g->me;
  if (r.n == 1)
    return mmp__coll_join(s, a->dep, -1);
  r.shift = shift;
  r.bnd = bnd;
  r.seg = a->seg;
  for (k = 0; k < r.n; k++)
    if (bnd[k + 1] - bnd[k] > maxb)
      maxb = bnd[k + 1] - bnd[k];
  r.nseg = (int)mmp__seg_count(maxb, r.seg);
  t0 = mmp__sched_scratch(s, maxb);
  t1 = mmp__sched_scratch(s, maxb);
  r.red = malloc((size_t)r.n * (size_t)r.nseg * sizeof(int));
  r.snd = malloc((size_t)r.n * (size_t)r.nseg * sizeof(int));
  r.step = malloc((size_t)r.n * sizeof(int));
  done = mmp__sched_nop(s);
  rc = r.red == NULL || r.snd == NULL || r.step == NULL ? MMP_ENOMEM : done;
  if (rc >= 0)
    rc = ring_rs(s, a, &r, t0, t1);
  if (rc >= 0 && !allgather) {
    for (k = 0; k < r.nseg && rc >= 0; k++)
      rc = mmp__sched_dep(s, r.red[(r.n - 2) * r.nseg + k], done);
    /* Sends must be complete too before the caller reuses the buffer. */
    for (k = 0; k < (r.n - 1) * r.nseg && rc >= 0; k++)
      rc = mmp__sched_dep(s, r.snd[k], done);
  }
  if (rc >= 0 && allgather)
    rc = ring_ag(s, a, &r, done);
  free(r.red);
  free(r.snd);
  free(r.step);
  return rc < 0 ? rc : done;
}

double mmp__cost_ring(int p, double m, const mmp_netmodel_t *nm) {
  double f = (p - 1.0) / p;

  return 2 * (p - 1) * nm->alpha + 2 * f * m * nm->beta + f * m * nm->gamma;
}
