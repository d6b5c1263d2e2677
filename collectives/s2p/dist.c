/* SPDX-License-Identifier: MIT */
/*
 * The source distributions of [Hambrusch et al. 1998], section 4, on the
 * logical r x c grid (row-major ranks), for tests and benchmarks: where the s
 * sources sit decides how fast the round-based algorithms spread them.
 * Following the paper, with i = ceil(s / c):
 *  - R(s): i evenly spaced rows, full except the last; C(s) the same with
 *    ceil(s / r) columns;
 *  - E(s): rank 0 and every floor(p/s)-th or ceil(p/s)-th rank after it;
 *  - Dr(s): evenly spaced right diagonals (x, d + x mod c), wrapping
 *    around, the one through (0, 0) included, the last not full; Dl(s)
 *    the left diagonals (x, d - x mod c), from the one through (0, c - 1).
 *    A diagonal has r cells, so ceil(s / r) of them are needed (the paper's
 *    i for its square meshes);
 *  - B(s): b = ceil(c / r) evenly spaced bands of ceil(s / (b r)) adjacent
 *    right diagonals each;
 *  - Cr(s): a row distribution of ceil(s/2) sources united with evenly
 *    spaced columns holding the rest;
 *  - Sq(s): a ceil(sqrt s) square block in the top-left corner, filled
 *    column by column (its height capped at r).
 * Wherever rounding makes a pattern short, the remaining sources take the
 * first free ranks in row-major order, so that there are always exactly s.
 */
#include <math.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

static const char *const dist_names[MMP_S2P_DIST_COUNT] = {
    "row", "col", "equal", "diag_r", "diag_l", "band", "cross", "square"};

const char *mmp_s2p_dist_name(int dist) {
  return dist >= 0 && dist < MMP_S2P_DIST_COUNT ? dist_names[dist] : NULL;
}

int mmp_s2p_dist_from_name(const char *name) {
  int i;

  for (i = 0; name != NULL && i < MMP_S2P_DIST_COUNT; i++)
    if (strcmp(name, dist_names[i]) == 0)
      return i;
  return MMP_EINVAL;
}

typedef struct dist_s {
  unsigned char *m;
  int r, c, s, n; /* grid, sources wanted, placed so far */
} dist_t;

static void put(dist_t *d, int x, int y) {
  int i = x * d->c + (y % d->c + d->c) % d->c;

  if (d->n < d->s && !d->m[i]) {
    d->m[i] = 1;
    d->n++;
  }
}

static int ceil_div(int a, int b) {
  return b > 0 ? (a + b - 1) / b : 0;
}

static void dist_rows(dist_t *d, int k) {
  int i = ceil_div(k, d->c), a, y, want = d->n + k;

  for (a = 0; a < i && a < d->r; a++)
    for (y = 0; y < d->c && d->n < want; y++)
      put(d, (int)((long long)a * d->r / i), y);
}

static void dist_cols(dist_t *d, int k, int centred) {
  int i = ceil_div(k, d->r), a, x, want = d->n + k;

  for (a = 0; a < i && a < d->c; a++) {
    long long y =
        centred ? (2LL * a + 1) * d->c / (2LL * i) : (long long)a * d->c / i;
    for (x = 0; x < d->r && d->n < want; x++)
      put(d, x, (int)y);
  }
}

/* Diagonals (x, base + dir * x), nd of them evenly spaced. */
static void dist_diag(dist_t *d, int dir) {
  int nd = ceil_div(d->s, d->r), k, x;

  nd = nd > d->c ? d->c : nd;
  for (k = 0; k < nd; k++) {
    int base = (int)((long long)k * d->c / nd);
    base = dir > 0 ? base : d->c - 1 - base;
    for (x = 0; x < d->r; x++)
      put(d, x, base + dir * x);
  }
}

static void dist_band(dist_t *d) {
  int b = ceil_div(d->c, d->r), w, k, j, x;

  b = b < 1 ? 1 : b;
  w = ceil_div(d->s, b * d->r);
  for (k = 0; k < b; k++)
    for (j = 0; j < w; j++)
      for (x = 0; x < d->r; x++)
        put(d, x, (int)((long long)k * d->c / b) + j + x);
}

static void dist_square(dist_t *d) {
  int q = (int)ceil(sqrt((double)d->s)), x, y;

  q = q > d->r ? d->r : q;
  for (y = 0; y < d->c && d->n < d->s; y++)
    for (x = 0; x < q; x++)
      put(d, x, y);
}

int mmp_s2p_dist(int dist, int s, int p, int rows, unsigned char *is_source) {
  dist_t d;
  int i;

  if (dist < 0 || dist >= MMP_S2P_DIST_COUNT || p < 1 || s < 0 || s > p ||
      is_source == NULL || rows < 0 || rows > p || (rows > 0 && p % rows))
    return MMP_EINVAL;
  memset(is_source, 0, (size_t)p);
  d.m = is_source;
  d.r = rows > 0 ? rows : mmp__s2p_default_rows(p);
  d.c = p / d.r;
  d.s = s;
  d.n = 0;
  switch (dist) {
  case MMP_S2P_DIST_ROW:
    dist_rows(&d, s);
    break;
  case MMP_S2P_DIST_COL:
    dist_cols(&d, s, 0);
    break;
  case MMP_S2P_DIST_EQUAL:
    for (i = 0; i < s; i++)
      put(&d, (int)((long long)i * p / s) / d.c, (int)((long long)i * p / s));
    break;
  case MMP_S2P_DIST_DIAG_R:
  case MMP_S2P_DIST_DIAG_L:
    dist_diag(&d, dist == MMP_S2P_DIST_DIAG_R ? 1 : -1);
    break;
  case MMP_S2P_DIST_BAND:
    dist_band(&d);
    break;
  case MMP_S2P_DIST_CROSS:
    dist_rows(&d, (s + 1) / 2);
    dist_cols(&d, s - d.n, 1);
    break;
  default:
    dist_square(&d);
    break;
  }
  for (i = 0; i < p && d.n < s; i++)
    put(&d, i / d.c, i % d.c);
  return 0;
}
