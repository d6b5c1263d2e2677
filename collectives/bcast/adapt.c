/* SPDX-License-Identifier: MIT */
/*
 * AUTO under arrival patterns: what a broadcast costs when ranks arrive
 * apart, the static algorithm AUTO chose and an arrival-aware one each
 * predicted from the arrival offsets a root saw, the model corrected by
 * the root's own observed times, and the decision between the two. Pure
 * functions: the root keeps the patterns (core/state.h) and bcast.c
 * runs the decision (docs/design/auto.md, "AUTO under arrival patterns").
 */
#include <math.h>
#include <stdlib.h>

#include "collectives/bcast/bcast.h"

/* For a chain or pipeline `d` of m bytes: 1, with *t the first
 * segment's hop (alpha and its bytes) and *rest the later segments' time
 * behind it (a gap and their bytes each); 0 for any other shape. */
static int chain_times(const mmp__desc_t *d, double m, const mmp_netmodel_t *nm,
                       double *t, double *rest) {
  double X;

  if (d->alg != &mmp__bcast_pipeline_alg && d->alg != &mmp__bcast_chain_alg)
    return 0;
  X = d->alg == &mmp__bcast_pipeline_alg && d->seg ? ceil(m / (double)d->seg)
                                                   : 1;
  *t = nm->alpha + m / X * nm->beta;
  *rest = (X - 1) * (mmp__net_gap(nm) + m / X * nm->beta);
  return 1;
}

/*
 * The average per-node time, e_i = f_i - a_i averaged over ranks (seed
 * 000), that the static broadcast `d` is predicted to take when receiver v
 * (virtual rank, relative to the root) arrives off[v] seconds after the
 * root (off[0] = 0; negative: before it). A pipelined chain passes a
 * segment on once its holder has arrived: s_v = max(s_(v-1) + t, off[v])
 * when the first segment leaves v (t = alpha + its bytes' time), each
 * later one a gap plus its bytes' time behind (mmp__net_gap), so a late
 * rank delays every rank after it. Any other static shape is counted as if
 * every rank waited for the latest (a tree waits for the late ranks above
 * it; the symmetric and scatter-allgather broadcasts for all of them).
 */
double mmp__predict_static(const mmp__desc_t *d, int p, const double *off,
                           const mmp_netmodel_t *nm) {
  double m = (double)d->count, t_static, sum = 0, late = 0, t, rest;
  int v;

  if (p <= 1)
    return 0;
  if (chain_times(d, m, nm, &t, &rest)) {
    double s = 0, done;
    for (v = 1; v < p; v++) {
      s = fmax(s + t, off[v]);
      done = s + t + rest;
      sum += done - off[v];
    }
    /* The root's sends go once its successor is there. */
    return (sum + fmax(off[1], 0) + t + rest) / p;
  }
  t_static = mmp__bcast_cost(d->alg, p, m, 1, d->groups, nm);
  for (v = 1; v < p; v++)
    late = fmax(late, off[v]);
  for (v = 1; v < p; v++)
    sum += late + t_static - off[v];
  return (sum + late + t_static) / p;
}

double mmp__predict_static_root(const mmp__desc_t *d, int p, const double *off,
                                const mmp_netmodel_t *nm) {
  double m = (double)d->count, late = 0, t, rest;
  int v;

  if (p <= 1)
    return 0;
  if (chain_times(d, m, nm, &t, &rest))
    return fmax(off[1], 0) + t + rest;
  for (v = 1; v < p; v++)
    late = fmax(late, off[v]);
  return late + mmp__bcast_cost(d->alg, p, m, 1, d->groups, nm);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of r[0..nr), within [1/MMP__ADAPT_SCALE, MMP__ADAPT_SCALE];
 * `prev` when nr is 0. */
static double median_scale(double *r, int nr, double prev) {
  double scale;

  if (nr == 0)
    return prev;
  qsort(r, (size_t)nr, sizeof(double), cmp_double);
  scale = nr % 2 ? r[nr / 2] : (r[nr / 2 - 1] + r[nr / 2]) / 2;
  return fmin(fmax(scale, 1 / MMP__ADAPT_SCALE), MMP__ADAPT_SCALE);
}

double mmp__adapt_model(const mmp__desc_t *stat, int p, const double *hist,
                        const double *took, int n, const mmp_netmodel_t *nm,
                        double prev, mmp_netmodel_t *out) {
  double r[MMP__ADAPT_HISTORY], scale;
  int k, nr = 0;

  *out = *nm;
  for (k = 0; k < n && k < MMP__ADAPT_HISTORY; k++) {
    double want = mmp__predict_static_root(stat, p, hist + (size_t)k * p, nm);
    if (took[k] > 0 && want > 0)
      r[nr++] = took[k] / want;
  }
  scale = median_scale(r, nr, prev);
  if (scale > 0) {
    out->alpha *= scale;
    out->beta *= scale;
    out->gap *= scale;
  }
  return scale;
}

/*
 * The same for an arrival-aware broadcast: the root serves whoever has
 * arrived in a round (a pipelined chain of X segments among them, after
 * its gathering window when it was idle), keeps busy at least T(m) a
 * round, and, with `nb`, pushes the message to the next receiver that has
 * not arrived when nobody waits (that receiver then finds it on arrival).
 * Every ARRIVED and GROUP message adds alpha.
 */
static double arrival_sim(int nb, int p, size_t len, size_t seg,
                          const double *off, const mmp_netmodel_t *nm,
                          double window, double *root_end) {
  double m = (double)len, X = seg ? ceil(m / (double)seg) : 1;
  double t = nm->alpha + m / X * nm->beta, T = nm->alpha + m * nm->beta;
  double rest = (X - 1) * (mmp__net_gap(nm) + m / X * nm->beta);
  double now = 0, sum = 0;
  int served = 0, v, idle = 1, push = 1;
  uint8_t *done = calloc((size_t)p, 1);

  if (p <= 1 || done == NULL) {
    free(done);
    return p <= 1 ? 0 : INFINITY;
  }
  while (served < p - 1) {
    int k = 0, next = -1;
    for (v = 1; v < p; v++)
      if (!done[v] && off[v] + nm->alpha <= now)
        k++;
    if (k > 0 && idle && window > 0) {
      now += window; /* ranks arriving together share the round */
      k = 0;
      for (v = 1; v < p; v++)
        if (!done[v] && off[v] + nm->alpha <= now)
          k++;
    }
    if (k > 0) {
      int pos = 0;
      for (v = 1; v < p; v++)
        if (!done[v] && off[v] + nm->alpha <= now) {
          done[v] = 1;
          served++;
          sum += now + nm->alpha + ++pos * t + rest - off[v];
        }
      now += nm->alpha + fmax(T, k * t + rest);
      idle = 0;
      continue;
    }
    for (v = 0; v < p - 1 && next < 0; v++) {
      int c = 1 + (push - 1 + v) % (p - 1);
      if (!done[c])
        next = c;
    }
    if (nb && next > 0) {
      done[next] = 1;
      served++;
      push = 1 + next % (p - 1);
      sum += fmax(off[next], now + nm->alpha + T) - off[next];
      now += nm->alpha + T;
      idle = 0;
      continue;
    }
    /* Nobody has arrived: wait for the next one. */
    for (v = 1; v < p; v++)
      if (!done[v] && (next < 0 || off[v] < off[next]))
        next = v;
    now = fmax(now, off[next] + nm->alpha);
    idle = 1;
  }
  free(done);
  *root_end = now;
  return (sum + now) / p;
}

double mmp__predict_arrival(int nb, int p, size_t len, size_t seg,
                            const double *off, const mmp_netmodel_t *nm,
                            double window) {
  double end;

  return arrival_sim(nb, p, len, seg, off, nm, window, &end);
}

double mmp__predict_arrival_root(int nb, int p, size_t len, size_t seg,
                                 const double *off, const mmp_netmodel_t *nm,
                                 double window) {
  double end = INFINITY;

  arrival_sim(nb, p, len, seg, off, nm, window, &end);
  return end;
}

double mmp__adapt_arr_scale(int nb, size_t seg, double window, int p,
                            size_t len, const double *hist,
                            const double *arr_took, int n,
                            const mmp_netmodel_t *nm, double prev) {
  double r[MMP__ADAPT_HISTORY];
  int k, nr = 0;

  for (k = 0; k < n && k < MMP__ADAPT_HISTORY; k++) {
    double want = mmp__predict_arrival_root(nb, p, len, seg,
                                            hist + (size_t)k * p, nm, window);
    if (arr_took[k] > 0 && want > 0 && isfinite(want))
      r[nr++] = arr_took[k] / want;
  }
  return median_scale(r, nr, prev);
}

int mmp__bcast_adapt_decide(const mmp__desc_t *stat, int arr_nb, size_t arr_seg,
                            int p, const double *hist, int n, int current,
                            const mmp_netmodel_t *nm,
                            const mmp_netmodel_t *nm_arr, double window) {
  double es = 0, ea = 0;
  int k;

  if (n == 0 || p < 3)
    return current;
  for (k = 0; k < n; k++) {
    const double *off = hist + (size_t)k * (size_t)p;
    es += mmp__predict_static(stat, p, off, nm);
    ea += mmp__predict_arrival(arr_nb, p, (size_t)stat->count, arr_seg, off,
                               nm_arr, window);
  }
  /* Leaving the regime in place takes a clear predicted gain. */
  if (current)
    return !(es * MMP__ADAPT_MARGIN < ea);
  return ea * MMP__ADAPT_MARGIN < es;
}
