/* SPDX-License-Identifier: MIT */
/*
 * Plans for the round-based s-to-p algorithms ([Hambrusch et al. 1998],
 * sections 2-3): Br_Lin, Br_xy_*, Repos_* and Part_* are all rounds of pairwise
 * transfers in which, as the paper puts it, messages from different
 * sources are combined wherever they meet. A plan keeps, for every rank,
 * the set of messages it holds and the set it forwards, and turns each
 * transfer of a round into one combined message: what the sender forwards
 * and the receiver lacks, packed in source order. Every rank simulates
 * the whole machine (O(p s / 64) words per round), so sender and receiver
 * agree on each message's contents without any header, and transfers that
 * would carry nothing are never sent.
 *
 * For this rank's transfers the plan appends ops to a schedule: a receive
 * depends on nothing (the regions it fills are its own), a send waits for
 * exactly the receives that brought the messages it carries. Without a
 * schedule, the plan prices itself: a round costs the busiest rank's
 * sum of alpha + bytes * beta over its sends, or over its receives.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

#define PLAN_PHASE0 1

/* ---- One s-to-p as every rank sees it --------------------------------- */

int mmp__s2p_default_rows(int p) {
  int r = (int)floor(sqrt((double)p));

  while (r > 1 && p % r != 0)
    r--;
  return r < 1 ? 1 : r;
}

int mmp__s2p_init(mmp__s2p_t *x, int p, int me, int rows, const size_t *lens) {
  int i, j = 0;
  size_t total = 0;

  memset(x, 0, sizeof(*x));
  x->p = p;
  x->me = me;
  x->rows = rows > 0 ? rows : mmp__s2p_default_rows(p);
  x->cols = p / x->rows;
  for (i = 0; i < p; i++)
    x->ns += lens[i] != MMP_S2P_NONE;
  x->src = malloc(((size_t)x->ns + 1) * sizeof(int));
  x->idx = malloc((size_t)p * sizeof(int));
  x->len = malloc(((size_t)x->ns + 1) * sizeof(size_t));
  x->off = malloc(((size_t)x->ns + 1) * sizeof(size_t));
  if (x->src == NULL || x->idx == NULL || x->len == NULL || x->off == NULL) {
    mmp__s2p_fini(x);
    return MMP_ENOMEM;
  }
  for (i = 0; i < p; i++) {
    x->idx[i] = -1;
    if (lens[i] == MMP_S2P_NONE)
      continue;
    if (lens[i] > SIZE_MAX / 2 - total) {
      mmp__s2p_fini(x);
      return MMP_ETOOBIG;
    }
    x->idx[i] = j;
    x->src[j] = i;
    x->len[j] = lens[i];
    x->off[j] = total;
    total += lens[i];
    j++;
  }
  x->total = total;
  return 0;
}

void mmp__s2p_fini(mmp__s2p_t *x) {
  free(x->src);
  free(x->idx);
  free(x->len);
  free(x->off);
  x->src = x->idx = NULL;
  x->len = x->off = NULL;
}

void mmp__s2p_lengths(const mmp__s2p_t *x, const mmp_netmodel_t *nm,
                      double *lmax, double *lmin, double *recv) {
  int j;

  *lmax = 0;
  *lmin = INFINITY;
  *recv = 0;
  for (j = 0; j < x->ns; j++) {
    *lmax = fmax(*lmax, (double)x->len[j]);
    *lmin = fmin(*lmin, (double)x->len[j]);
    *recv += nm->alpha + (double)x->len[j] * nm->beta;
  }
}

/* ---- Plans ----------------------------------------------------------- */

static uint64_t *set_at(uint64_t *sets, int words, int r) {
  return sets + (size_t)r * (size_t)words;
}

static int plan_init(mmp__s2p_plan_t *pl, const mmp__s2p_t *x, mmp__sched_t *s,
                     mmp__sched_t *const *all, const mmp_netmodel_t *nm) {
  size_t p = (size_t)x->p, ns = (size_t)x->ns, ngot = all != NULL ? p : 1;
  size_t j;

  memset(pl, 0, sizeof(*pl));
  pl->x = x;
  pl->s = s;
  pl->all = all;
  pl->nm = nm;
  pl->phase = PLAN_PHASE0;
  pl->words = (x->ns + 63) / 64 > 0 ? (x->ns + 63) / 64 : 1;
  pl->have = calloc(p * (size_t)pl->words, sizeof(uint64_t));
  pl->active = calloc(p * (size_t)pl->words, sizeof(uint64_t));
  pl->got = malloc((ngot * ns + 1) * sizeof(int));
  pl->tsend = calloc(p, sizeof(double));
  pl->trecv = calloc(p, sizeof(double));
  pl->regs = malloc((2 * ns + 2) * sizeof(size_t));
  pl->deps = malloc((ns + 1) * sizeof(int));
  pl->d = malloc((size_t)pl->words * sizeof(uint64_t));
  pl->ident = malloc(p * sizeof(int));
  if (pl->have == NULL || pl->active == NULL || pl->got == NULL ||
      pl->tsend == NULL || pl->trecv == NULL || pl->regs == NULL ||
      pl->deps == NULL || pl->ident == NULL || pl->d == NULL) {
    mmp__s2p_plan_fini(pl);
    return MMP_ENOMEM;
  }
  for (j = 0; j < p; j++)
    pl->ident[j] = (int)j;
  for (j = 0; j < ns; j++) {
    uint64_t bit = 1ull << (j % 64);
    set_at(pl->have, pl->words, x->src[j])[j / 64] |= bit;
    set_at(pl->active, pl->words, x->src[j])[j / 64] |= bit;
  }
  for (j = 0; j < ngot * ns; j++)
    pl->got[j] = -1;
  return 0;
}

int mmp__s2p_plan_init(mmp__s2p_plan_t *pl, const mmp__s2p_t *x,
                       mmp__sched_t *s, const mmp_netmodel_t *nm) {
  return plan_init(pl, x, s, NULL, nm);
}

int mmp__s2p_plan_init_all(mmp__s2p_plan_t *pl, const mmp__s2p_t *x,
                           mmp__sched_t *const *all) {
  return plan_init(pl, x, NULL, all, NULL);
}

double mmp__s2p_plan_cost(int (*plan)(mmp__s2p_plan_t *), const mmp__s2p_t *x,
                          const mmp_netmodel_t *nm) {
  mmp__s2p_plan_t pl;
  double t;

  if (plan == NULL || plan_init(&pl, x, NULL, NULL, nm) != 0)
    return INFINITY;
  t = plan(&pl) == 0 ? pl.cost : INFINITY;
  mmp__s2p_plan_fini(&pl);
  return t;
}

/* Where the ops that brought each source to rank r are recorded. */
static int *got_of(const mmp__s2p_plan_t *pl, int r) {
  return pl->all != NULL ? pl->got + (size_t)r * (size_t)pl->x->ns : pl->got;
}

void mmp__s2p_plan_fini(mmp__s2p_plan_t *pl) {
  free(pl->have);
  free(pl->active);
  free(pl->tmp);
  free(pl->got);
  free(pl->xf);
  free(pl->tsend);
  free(pl->trecv);
  free(pl->regs);
  free(pl->deps);
  free(pl->ident);
  free(pl->d);
  memset(pl, 0, sizeof(*pl));
}

int mmp__s2p_xfer(mmp__s2p_plan_t *pl, int from, int to, int move) {
  if (from == to)
    return 0;
  if (pl->nxf == pl->cxf) {
    int ncap = pl->cxf ? 2 * pl->cxf : 64;
    int(*n)[3] = realloc(pl->xf, (size_t)ncap * sizeof(*n));
    uint64_t *t;
    if (n == NULL)
      return MMP_ENOMEM;
    pl->xf = n;
    t = realloc(pl->tmp, (size_t)ncap * (size_t)pl->words * sizeof(*t));
    if (t == NULL)
      return MMP_ENOMEM;
    pl->tmp = t;
    pl->cxf = ncap;
  }
  pl->xf[pl->nxf][0] = from;
  pl->xf[pl->nxf][1] = to;
  pl->xf[pl->nxf][2] = move;
  pl->nxf++;
  return 0;
}

/* The regions of the messages in set d, in source order, adjacent ones
 * merged; returns their bytes. */
static size_t plan_regions(mmp__s2p_plan_t *pl, const uint64_t *d, int *nregs) {
  const mmp__s2p_t *x = pl->x;
  size_t bytes = 0;
  int w, n = 0;

  for (w = 0; w < pl->words; w++) {
    uint64_t v = d[w];
    while (v != 0) {
      int j = w * 64 + __builtin_ctzll(v);
      v &= v - 1;
      if (x->len[j] == 0)
        continue;
      bytes += x->len[j];
      if (n > 0 && pl->regs[2 * n - 2] + pl->regs[2 * n - 1] == x->off[j]) {
        pl->regs[2 * n - 1] += x->len[j];
      } else {
        pl->regs[2 * n] = x->off[j];
        pl->regs[2 * n + 1] = x->len[j];
        n++;
      }
    }
  }
  *nregs = n;
  return bytes;
}

/* A send of set d waits for the receives that brought its messages. */
static int plan_send_deps(mmp__sched_t *s, mmp__s2p_plan_t *pl,
                          const uint64_t *d, int op, const int *got) {
  int w, nd = 0, k, rc;

  for (w = 0; w < pl->words; w++) {
    uint64_t v = d[w];
    while (v != 0) {
      int j = w * 64 + __builtin_ctzll(v), g = got[j];
      v &= v - 1;
      if (g < 0)
        continue;
      for (k = 0; k < nd && pl->deps[k] != g; k++)
        ;
      if (k < nd)
        continue;
      pl->deps[nd++] = g;
      if ((rc = mmp__sched_dep(s, g, op)) != 0)
        return rc;
    }
  }
  return 0;
}

/* The sender's side of a transfer of set d to `to`. */
static int emit_send(mmp__s2p_plan_t *pl, mmp__sched_t *s, int from, int to,
                     const uint64_t *d, int nregs) {
  int op = mmp__sched_sendv(s, to, pl->regs, nregs, pl->phase);

  return op < 0 ? op : plan_send_deps(s, pl, d, op, got_of(pl, from));
}

/* The receiver's side: it then holds the messages of d through `op`. */
static int emit_recv(mmp__s2p_plan_t *pl, mmp__sched_t *s, int from, int to,
                     const uint64_t *d, int nregs) {
  int op = mmp__sched_recvv(s, from, pl->regs, nregs, pl->phase), w;
  int *got = got_of(pl, to);

  if (op < 0)
    return op;
  for (w = 0; w < pl->words; w++) {
    uint64_t v = d[w];
    while (v != 0) {
      got[w * 64 + __builtin_ctzll(v)] = op;
      v &= v - 1;
    }
  }
  return 0;
}

/* Prices, and for the scheduled ranks schedules, transfer k carrying set
 * d. */
static int plan_emit(mmp__s2p_plan_t *pl, int k, const uint64_t *d) {
  int from = pl->xf[k][0], to = pl->xf[k][1], me = pl->x->me, nregs, rc;
  size_t bytes = plan_regions(pl, d, &nregs);

  if (bytes == 0)
    return 0;
  if (pl->nm != NULL) {
    double c = pl->nm->alpha + (double)bytes * pl->nm->beta;
    pl->tsend[from] += c;
    pl->trecv[to] += c;
  }
  if (pl->all != NULL) {
    rc = emit_send(pl, pl->all[from], from, to, d, nregs);
    return rc != 0 ? rc : emit_recv(pl, pl->all[to], from, to, d, nregs);
  }
  if (pl->s == NULL || (from != me && to != me))
    return 0;
  if (from == me)
    return emit_send(pl, pl->s, from, to, d, nregs);
  return emit_recv(pl, pl->s, from, to, d, nregs);
}

/* The round's time: its busiest rank, then clears the counters. */
static void plan_price(mmp__s2p_plan_t *pl) {
  double worst = 0;
  int k;

  if (pl->nm == NULL)
    return;
  for (k = 0; k < pl->nxf; k++) {
    int a = pl->xf[k][0], b = pl->xf[k][1];
    worst = pl->tsend[a] > worst ? pl->tsend[a] : worst;
    worst = pl->trecv[b] > worst ? pl->trecv[b] : worst;
  }
  for (k = 0; k < pl->nxf; k++) {
    pl->tsend[pl->xf[k][0]] = 0;
    pl->trecv[pl->xf[k][1]] = 0;
  }
  pl->cost += worst;
}

int mmp__s2p_round(mmp__s2p_plan_t *pl) {
  int W = pl->words, k, w, rc;

  if (pl->nxf == 0)
    return 0;
  if (pl->phase > MMP__PHASE_MAX)
    return MMP_ENOTSUP;
  /* Senders forward what they held when the round began (kept in tmp);
   * a receiver takes each message once even if two senders offer it. */
  for (k = 0; k < pl->nxf; k++) {
    uint64_t *a = pl->tmp + (size_t)k * (size_t)W;
    uint64_t *h = set_at(pl->have, W, pl->xf[k][1]);
    memcpy(a, set_at(pl->active, W, pl->xf[k][0]), (size_t)W * sizeof(*a));
    for (w = 0; w < W; w++) {
      pl->d[w] = a[w] & ~h[w];
      h[w] |= pl->d[w];
    }
    if ((rc = plan_emit(pl, k, pl->d)) != 0)
      return rc;
  }
  plan_price(pl);
  /* The receiver forwards all the sender offered, including messages it
   * already had but no longer forwarded (a repositioned source). */
  for (k = 0; k < pl->nxf; k++) {
    const uint64_t *a = pl->tmp + (size_t)k * (size_t)W;
    uint64_t *ato = set_at(pl->active, W, pl->xf[k][1]);
    uint64_t *afrom = set_at(pl->active, W, pl->xf[k][0]);
    for (w = 0; w < W; w++) {
      ato[w] |= a[w];
      if (pl->xf[k][2])
        afrom[w] &= ~a[w];
    }
  }
  pl->nxf = 0;
  pl->phase++;
  return 0;
}

int mmp__s2p_holds(const mmp__s2p_plan_t *pl, int r) {
  const uint64_t *a = set_at(pl->active, pl->words, r);
  int w;

  for (w = 0; w < pl->words; w++)
    if (a[w] != 0)
      return 1;
  return 0;
}

int mmp__s2p_plan_check(const mmp__s2p_plan_t *pl) {
  int r, w, ns = pl->x->ns;

  for (r = 0; r < pl->x->p; r++) {
    const uint64_t *h = set_at(pl->have, pl->words, r);
    for (w = 0; w < pl->words; w++) {
      int bits = ns - 64 * w >= 64 ? 64 : ns - 64 * w;
      uint64_t full = bits <= 0 ? 0 : bits == 64 ? ~0ull : (1ull << bits) - 1;
      if (h[w] != full)
        return MMP_EINTERNAL;
    }
  }
  return 0;
}

/* ---- Building blocks ----------------------------------------------------- */

/* One level of recursive halving over every segment in (lo, n); writes
 * the next level's segments and returns how many. */
static int lin_level(mmp__s2p_plan_t *pl, const int *r, const int *lo,
                     const int *n, int nseg, int *lo2, int *n2, int *rc) {
  int k, i, out = 0;

  for (k = 0; k < nseg && *rc == 0; k++) {
    int h = (n[k] + 1) / 2, b = lo[k];
    if (n[k] < 2)
      continue;
    for (i = 0; i < n[k] - h && *rc == 0; i++) {
      *rc = mmp__s2p_xfer(pl, r[b + i], r[b + h + i], 0);
      if (*rc == 0)
        *rc = mmp__s2p_xfer(pl, r[b + h + i], r[b + i], 0);
    }
    /* Odd segments: the middle member has no partner; the other half
     * still needs what it holds. */
    if (*rc == 0 && n[k] % 2)
      *rc = mmp__s2p_xfer(pl, r[b + h - 1], r[b + n[k] - 1], 0);
    lo2[out] = b;
    n2[out++] = h;
    lo2[out] = b + h;
    n2[out++] = n[k] - h;
  }
  return out;
}

int mmp__s2p_lin(mmp__s2p_plan_t *pl, const mmp__s2p_lines_t *ln) {
  int total = 0, k, nseg = ln->nlines, rc = 0;
  int *buf;

  for (k = 0; k < ln->nlines; k++)
    total += ln->n[k];
  buf = malloc(4 * ((size_t)total + (size_t)ln->nlines + 1) * sizeof(int));
  if (buf == NULL)
    return MMP_ENOMEM;
  {
    size_t cap = (size_t)total + (size_t)ln->nlines + 1;
    int *lo = buf, *n = buf + cap, *lo2 = buf + 2 * cap, *n2 = buf + 3 * cap;
    memcpy(lo, ln->start, (size_t)nseg * sizeof(int));
    memcpy(n, ln->n, (size_t)nseg * sizeof(int));
    while (nseg > 0 && rc == 0) {
      int *t;
      nseg = lin_level(pl, ln->ranks, lo, n, nseg, lo2, n2, &rc);
      if (rc == 0)
        rc = mmp__s2p_round(pl);
      t = lo, lo = lo2, lo2 = t;
      t = n, n = n2, n2 = t;
    }
  }
  free(buf);
  return rc;
}

/* Appends grid g's lines along one dimension to (ranks, start, n). */
static void xy_lines(const mmp__s2p_grid_t *g, int cols_dim, int *ranks,
                     int *start, int *n, int *nl, int *at) {
  int a, b, na = cols_dim ? g->cols : g->rows,
            nb = cols_dim ? g->rows : g->cols;

  for (a = 0; a < na; a++) {
    start[*nl] = *at;
    n[(*nl)++] = nb;
    for (b = 0; b < nb; b++)
      ranks[(*at)++] =
          cols_dim ? g->ranks[b * g->cols + a] : g->ranks[a * g->cols + b];
  }
}

int mmp__s2p_xy(mmp__s2p_plan_t *pl, const mmp__s2p_grid_t *g, int ngrids,
                const int *first) {
  int k, phase, members = 0, lines = 0, rc = 0;
  int *ranks, *start, *n;

  for (k = 0; k < ngrids; k++) {
    members += g[k].rows * g[k].cols;
    lines += g[k].rows + g[k].cols;
  }
  ranks = malloc(((size_t)members + 2 * (size_t)lines + 1) * sizeof(int));
  if (ranks == NULL)
    return MMP_ENOMEM;
  start = ranks + members;
  n = start + lines;
  for (phase = 0; phase < 2 && rc == 0; phase++) {
    mmp__s2p_lines_t ln;
    int nl = 0, at = 0;
    for (k = 0; k < ngrids; k++) {
      int cols_dim = (first[k] == MMP__S2P_COLS_FIRST) == (phase == 0);
      xy_lines(&g[k], cols_dim, ranks, start, n, &nl, &at);
    }
    ln.nlines = nl;
    ln.ranks = ranks;
    ln.start = start;
    ln.n = n;
    rc = mmp__s2p_lin(pl, &ln);
  }
  free(ranks);
  return rc;
}

void mmp__s2p_grid_all(const mmp__s2p_plan_t *pl, mmp__s2p_grid_t *g) {
  g->rows = pl->x->rows;
  g->cols = pl->x->cols;
  g->ranks = pl->ident;
}

int mmp__s2p_xy_source_dim(const mmp__s2p_plan_t *pl,
                           const mmp__s2p_grid_t *g) {
  int a, b, max_r = 0, max_c = 0;

  for (a = 0; a < g->rows; a++) {
    int cnt = 0;
    for (b = 0; b < g->cols; b++)
      cnt += mmp__s2p_holds(pl, g->ranks[a * g->cols + b]);
    max_r = cnt > max_r ? cnt : max_r;
  }
  for (b = 0; b < g->cols; b++) {
    int cnt = 0;
    for (a = 0; a < g->rows; a++)
      cnt += mmp__s2p_holds(pl, g->ranks[a * g->cols + b]);
    max_c = cnt > max_c ? cnt : max_c;
  }
  return max_r < max_c ? MMP__S2P_ROWS_FIRST : MMP__S2P_COLS_FIRST;
}

void mmp__s2p_ideal_lin(int n, int k, unsigned char *mark) {
  int i;

  for (i = 0; i < k && i < n; i++)
    mark[i] = 1;
}

void mmp__s2p_ideal_rows(int rows, int cols, int k, unsigned char *mark) {
  /* Row-major, the first ceil(k / cols) rows are the first k ranks. */
  mmp__s2p_ideal_lin(rows * cols, k, mark);
}

int mmp__s2p_reposition(mmp__s2p_plan_t *pl, const unsigned char *mark) {
  int p = pl->x->p, a, b = 0, rc;

  for (a = 0; a < p; a++) {
    if (!mmp__s2p_holds(pl, a) || mark[a])
      continue;
    /* The next marked rank that holds nothing yet. */
    while (b < p && (!mark[b] || mmp__s2p_holds(pl, b)))
      b++;
    if (b == p)
      return MMP_EINTERNAL;
    if ((rc = mmp__s2p_xfer(pl, a, b++, 1)) != 0)
      return rc;
  }
  return mmp__s2p_round(pl);
}

int mmp__s2p_part_split(const mmp__s2p_t *x, int p1, int *s1) {
  int p2 = x->p - p1, v = (int)(((long long)x->ns * p1 + x->p / 2) / x->p);

  /* s1 / s2 = p1 / p2, rounded, with each half able to hold its share. */
  if (v > p1)
    v = p1;
  if (x->ns - v > p2)
    v = x->ns - p2;
  *s1 = v;
  return 0;
}

int mmp__s2p_part_exchange(mmp__s2p_plan_t *pl, int p1) {
  int p2 = pl->x->p - p1, i, rc;

  if (p2 == 0)
    return 0;
  for (i = 0; i < p1; i++) {
    int partner = p1 + i % p2;
    if ((rc = mmp__s2p_xfer(pl, partner, i, 0)) != 0)
      return rc;
    if (i < p2 && (rc = mmp__s2p_xfer(pl, i, partner, 0)) != 0)
      return rc;
  }
  return mmp__s2p_round(pl);
}
