/* SPDX-License-Identifier: MIT */
/*
 * Automatic choice of a broadcast algorithm from the Hockney model: pure
 * functions of (p, m, model), which touch no network (measuring the model
 * is netmodel.c's job), so every rank that passes the same inputs gets
 * the same answer and unit tests can check the rules.
 *
 * The choice evaluates the cost of every algorithm whose row says AUTO may
 * choose it (bcast_algs.c; each formula lives in its algorithm's file)
 * for the given p and m and takes the smallest; of two within 3%, the one
 * listed first (the row's `prefer`) wins. The pipeline runs in the optimal
 * segment count X = sqrt((p - 2) m beta / alpha); the hierarchical
 * algorithm has G = ceil(sqrt(p)) groups with the best flat algorithm
 * inside and between them. Two adjustments that the formulas do not make
 * are rules here: a burst allowance (cost_burst) and ranks that share CPUs
 * (choose). The multicast row is priced only at the top and only with
 * the communicator's agreed multicast figures (mmp__mcast_net_t);
 * mmp__bcast_mcast_considered says where AUTO asks for them.
 * docs/algorithms.md lists the rules and the measurements behind them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/core/collectives.h"

enum choice { TOP, STATIC, FLAT };

static double choose(int p, size_t len, const mmp_netmodel_t *nm,
                     const mmp__mcast_net_t *mc, enum choice how, int *alg,
                     size_t *seg, int *groups);

/* What a part of a composite algorithm costs: the best flat algorithm for
 * q ranks, priced by its formula. */
static double part_cost(int q, double m, const mmp_netmodel_t *nm) {
  int alg, groups;
  size_t seg;

  choose(q, (size_t)m, nm, NULL, FLAT, &alg, &seg, &groups);
  return mmp__bcast_cost(alg, q, m, seg ? m / (double)seg : 1, 0, nm);
}

/* The same on links that are rested: the burst allowance counts. */
static double part_rested(int q, double m, const mmp_netmodel_t *nm) {
  int alg, groups;
  size_t seg;

  return choose(q, (size_t)m, nm, NULL, FLAT, &alg, &seg, &groups);
}

static double row_cost(const mmp__bcast_alg_t *a, int p, double m, double X,
                       int G, const mmp_netmodel_t *nm,
                       const mmp__mcast_net_t *mc) {
  mmp__bcast_cost_in_t in;

  if (p <= 1)
    return 0;
  if (a == NULL || a->cost == NULL)
    return INFINITY;
  mmp__bcast_cost_in_init(&in, p, m, nm);
  in.X = X;
  in.G = G;
  in.mc = mc;
  return a->cost(&in);
}

void mmp__bcast_cost_in_init(mmp__bcast_cost_in_t *in, int p, double m,
                             const mmp_netmodel_t *nm) {
  memset(in, 0, sizeof(*in));
  in->p = p;
  in->m = m;
  in->X = 1;
  in->nm = nm;
  in->part = part_cost;
  in->part_rested = part_rested;
}

double mmp__bcast_cost(int alg, int p, double m, double X, int G,
                       const mmp_netmodel_t *nm) {
  return row_cost(mmp__bcast_alg(alg), p, m, X, G, nm, NULL);
}

/*
 * The cost formula, except on a network with a burst allowance (a link
 * that was idle passes its first `burst` bytes at once, as through a
 * shaper's token bucket): an algorithm whose busiest link carries no more
 * than that pays its latency terms only. The choice is for a broadcast
 * that finds the links rested, as [de Supinski & Karonis 1999]'s method
 * measures each one (docs/algorithms.md, "Burst allowance").
 */
static double cost_burst(const mmp__bcast_alg_t *a, int p, double m, double X,
                         int G, const mmp_netmodel_t *nm,
                         const mmp__mcast_net_t *mc) {
  mmp_netmodel_t lat = *nm;

  if (nm->burst <= 0 || a->link_bytes == NULL ||
      a->link_bytes(p, m) > nm->burst)
    return row_cost(a, p, m, X, G, nm, mc);
  lat.beta = 0;
  /* The gap holds where a segment's bytes keep the link busy while the
   * next hop forwards the one before; through the allowance they pass at
   * once and each hop's store and forward shows, priced at alpha as
   * measured (docs/algorithms.md, "Burst allowance"). */
  lat.gap = 0;
  return row_cost(a, p, m, X, G, &lat, mc);
}

/* The rows AUTO may choose for `how`, in order of preference. */
static int candidates(enum choice how, size_t len,
                      const mmp__bcast_alg_t **out) {
  int n = 0, id, i;

  for (id = 1; id < MMP_BCAST_ALG_COUNT; id++) {
    const mmp__bcast_alg_t *a = mmp__bcast_alg(id);
    if (!(a->flags & MMP__BCAST_F_AUTO) || len < a->auto_min ||
        ((a->flags & MMP__BCAST_F_COMPOSITE) && how == FLAT) ||
        ((a->flags & MMP__BCAST_F_TOP) && how != TOP))
      continue;
    for (i = n++; i > 0 && out[i - 1]->prefer > a->prefer; i--)
      out[i] = out[i - 1];
    out[i] = a;
  }
  return n;
}

static double choose(int p, size_t len, const mmp_netmodel_t *nm,
                     const mmp__mcast_net_t *mc, enum choice how, int *alg,
                     size_t *seg, int *groups) {
  const mmp__bcast_alg_t *cands[MMP_BCAST_ALG_COUNT];
  double m = (double)len, best = INFINITY;
  size_t pseg = mmp__pipeline_seg(p, len, nm);
  int G = (int)ceil(sqrt((double)p)), n, i;

  *alg = MMP_BCAST_BINOMIAL;
  *seg = 0;
  *groups = 0;
  if (p <= 2) /* one message whatever the shape */
    return cost_burst(&mmp__bcast_binomial_alg, p, m, 1, G, nm, NULL);
  n = candidates(how, len, cands);
  for (i = 0; i < n; i++) {
    const mmp__bcast_alg_t *c = cands[i];
    int piped = (c->flags & MMP__BCAST_F_PIPELINED) != 0;
    double X = piped && pseg ? ceil(m / (double)pseg) : 1;
    double t = cost_burst(c, p, m, X, G, nm, mc);
    /* Prefer the earlier (simpler) candidate unless clearly better. */
    if (t < best * 0.97) {
      best = t;
      *alg = c->id;
      *seg = piped ? pseg : 0;
      *groups = (c->flags & MMP__BCAST_F_COMPOSITE) ? G : 0;
    }
  }
  /* Where ranks outnumber CPUs the hop, not the send, is what a small
   * broadcast pays most for: waiting for one of the shared CPUs. There
   * AUTO's own choice takes the k-nomial tree of radix 3, one level
   * shallower than the binary tree at p = 16, in place of the binomial
   * tree for a message of up to MMP__BULK_BYTES (whose waits poll and
   * yield; larger ones sleep and keep the binary tree). Inside and
   * between hierarchical groups, where the k-nomial tree cannot go, the
   * binary tree takes its place. Hockney's model prices all three as
   * binomial <= binary, k-nomial, so this is a rule, not a formula
   * (docs/algorithms.md, "Ranks that share CPUs"). */
  if (nm->shared_cpus && *alg == MMP_BCAST_BINOMIAL && p > 2)
    *alg = how == TOP && len <= MMP__BULK_BYTES ? MMP_BCAST_KNOMIAL
                                                : MMP_BCAST_BINARY;
  return best;
}

double mmp__bcast_choose_auto(int p, size_t len, const mmp_netmodel_t *nm,
                              int *alg, size_t *seg, int *groups) {
  return choose(p, len, nm, NULL, TOP, alg, seg, groups);
}

double mmp__bcast_choose_auto_mc(int p, size_t len, const mmp_netmodel_t *nm,
                                 const mmp__mcast_net_t *mc, int *alg,
                                 size_t *seg, int *groups) {
  return choose(p, len, nm, mc, TOP, alg, seg, groups);
}

int mmp__bcast_mcast_considered(int p, const mmp_netmodel_t *nm) {
  /* Ranks sharing a node each take every datagram through that node's
   * kernel, and ranks sharing CPUs wake all at once for each one: either
   * way the receivers' cost grows with p, which the flat price does not
   * say (docs/performance.md, "The multicast broadcast", p = 32). */
  return p >= 3 && nm->nodes == p && !nm->shared_cpus;
}

void mmp__bcast_choose_drained(int p, size_t len, const mmp_netmodel_t *nm,
                               int *alg, size_t *seg, int *groups) {
  const mmp__bcast_alg_t *a;

  choose(p, len, nm, NULL, TOP, alg, seg, groups);
  a = mmp__bcast_alg(*alg);
  if (nm->burst <= 0 || a->link_bytes == NULL ||
      a->link_bytes(p, (double)len) > nm->burst)
    return;
  /* A measured rule, not a price: alpha per segment and hop overprices the
   * pipeline near the burst (figures: docs/algorithms.md, "Rested or
   * drained links"). */
  *alg = MMP_BCAST_PIPELINE;
  *seg = mmp__pipeline_seg(p, len, nm);
  *groups = 0;
}

double mmp__bcast_choose(int p, size_t len, const mmp_netmodel_t *nm, int *alg,
                         size_t *seg, int *groups) {
  return choose(p, len, nm, NULL, STATIC, alg, seg, groups);
}

double mmp__bcast_choose_flat(int p, size_t len, const mmp_netmodel_t *nm,
                              int *alg, size_t *seg) {
  int groups;

  return choose(p, len, nm, NULL, FLAT, alg, seg, &groups);
}

double mmp__bcast_sub_cost(int p, size_t len, const mmp_netmodel_t *nm) {
  size_t seg = mmp__pipeline_seg(p, len, nm);
  double m = (double)len;

  return cost_burst(mmp__bcast_alg(MMP_BCAST_PIPELINE), p, m,
                    seg ? ceil(m / (double)seg) : 1, 0, nm, NULL);
}

/* ---- Arrival patterns: what a broadcast costs when ranks arrive apart ---- */

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
double mmp__predict_static(const mmp__bcast_desc_t *d, int p, const double *off,
                           const mmp_netmodel_t *nm) {
  double m = (double)d->len, t_static, sum = 0, late = 0;
  int v;

  if (p <= 1)
    return 0;
  if (d->alg == MMP_BCAST_PIPELINE || d->alg == MMP_BCAST_CHAIN) {
    double X =
        d->alg == MMP_BCAST_PIPELINE && d->seg ? ceil(m / (double)d->seg) : 1;
    double t = nm->alpha + m / X * nm->beta, s = 0, done;
    double rest = (X - 1) * (mmp__net_gap(nm) + m / X * nm->beta);
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

double mmp__predict_static_root(const mmp__bcast_desc_t *d, int p,
                                const double *off, const mmp_netmodel_t *nm) {
  double m = (double)d->len, late = 0;
  int v;

  if (p <= 1)
    return 0;
  if (d->alg == MMP_BCAST_PIPELINE || d->alg == MMP_BCAST_CHAIN) {
    double X =
        d->alg == MMP_BCAST_PIPELINE && d->seg ? ceil(m / (double)d->seg) : 1;
    return fmax(off[1], 0) + nm->alpha + m / X * nm->beta +
           (X - 1) * (mmp__net_gap(nm) + m / X * nm->beta);
  }
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

double mmp__adapt_model(const mmp__bcast_desc_t *stat, int p,
                        const double *hist, const double *took, int n,
                        const mmp_netmodel_t *nm, double prev,
                        mmp_netmodel_t *out) {
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

int mmp__bcast_adapt_decide(const mmp__bcast_desc_t *stat, int arr_nb,
                            size_t arr_seg, int p, const double *hist, int n,
                            int current, const mmp_netmodel_t *nm,
                            const mmp_netmodel_t *nm_arr, double window) {
  double es = 0, ea = 0;
  int k;

  if (n == 0 || p < 3)
    return current;
  for (k = 0; k < n; k++) {
    const double *off = hist + (size_t)k * (size_t)p;
    es += mmp__predict_static(stat, p, off, nm);
    ea += mmp__predict_arrival(arr_nb, p, (size_t)stat->len, arr_seg, off,
                               nm_arr, window);
  }
  /* Leaving the regime in place takes a clear predicted gain. */
  if (current)
    return !(es * MMP__ADAPT_MARGIN < ea);
  return ea * MMP__ADAPT_MARGIN < es;
}
