/* SPDX-License-Identifier: MIT */
/*
 * Part_xy_source s-to-p broadcast ([Hambrusch et al. 1998], sections 3
 * and 5.2).
 *
 * The logical r x c grid is cut into two sub-grids: G1, the top
 * ceil(r/2) rows, and G2, the others (a 1 x c grid is cut into its left
 * ceil(c/2) and right columns instead). A partial permutation puts s1
 * sources in G1 and s2 in G2, s1 / s2 = |G1| / |G2|, each in the row
 * distribution that is ideal for Br_xy_source on its sub-grid (its first
 * rows, filled in order). Br_xy_source runs in both sub-grids at once,
 * each choosing its own first dimension; then rank i of G1 and rank i of
 * G2 exchange everything (the extra row of an odd r receives from G2).
 *
 * Cost (Hockney, s messages of L bytes): the permutation, alpha + L beta;
 * Br_xy_source on p/2 ranks with s/2 sources,
 *   (ceil(log2 r') + ceil(log2 c')) alpha + (log2(p/s) + s/2 - 1) L beta
 * with r' x c' the sub-grid; the exchange, alpha + (s/2) L beta.
 *
 * Selected: by the plan's priced rounds (s2p_choose.c).
 */
#include <stdlib.h>

#include "collectives/s2p/s2p.h"

static int part_xy(mmp__s2p_plan_t *pl) {
  const mmp__s2p_t *x = pl->x;
  mmp__s2p_grid_t g[2];
  int first[2], p1, s1, rc;
  unsigned char *mark = calloc((size_t)x->p, 1);

  if (mark == NULL)
    return MMP_ENOMEM;
  if (x->rows >= 2) {
    g[0].rows = (x->rows + 1) / 2;
    g[1].rows = x->rows - g[0].rows;
    g[0].cols = g[1].cols = x->cols;
  } else {
    g[0].rows = g[1].rows = 1;
    g[0].cols = (x->cols + 1) / 2;
    g[1].cols = x->cols - g[0].cols;
  }
  p1 = g[0].rows * g[0].cols;
  g[0].ranks = pl->ident;
  g[1].ranks = pl->ident + p1;
  mmp__s2p_part_split(x, p1, &s1);
  mmp__s2p_ideal_rows(g[0].rows, g[0].cols, s1, mark);
  mmp__s2p_ideal_rows(g[1].rows, g[1].cols, x->ns - s1, mark + p1);
  rc = mmp__s2p_reposition(pl, mark);
  free(mark);
  if (rc != 0)
    return rc;
  first[0] = mmp__s2p_xy_source_dim(pl, &g[0]);
  first[1] = mmp__s2p_xy_source_dim(pl, &g[1]);
  rc = mmp__s2p_xy(pl, g, 2, first);
  return rc != 0 ? rc : mmp__s2p_part_exchange(pl, p1);
}

const mmp__alg_t mmp__s2p_part_xy_alg = {
    .name = "part_xy_source",
    .summary = "two half grids with Br_xy_source, then they exchange",
    .takes = MMP_OPT_ROWS,
    .flags = MMP__ALG_AUTO,
    .prefer = 7,
    .plan = part_xy,
};
