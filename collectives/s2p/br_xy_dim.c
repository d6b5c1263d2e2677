/* SPDX-License-Identifier: MIT */
/*
 * Br_xy_dim s-to-p broadcast ([Hambrusch et al. 1998], section 2).
 *
 * As Br_xy_source on the logical r x c grid, but the order of the
 * dimensions ignores where the sources are: rows first if r >= c, columns
 * first if r < c. The paper keeps it for comparison with Br_xy_source;
 * on a row distribution it picks the wrong dimension and pays for it.
 *
 * Cost (Hockney, s messages of L bytes): (ceil(log2 r) + ceil(log2 c))
 * alpha plus, on a favourable distribution, (log2(p/s) + s - 1) L beta;
 * when the first dimension's lines hold many sources each, its rounds
 * already combine them and the second dimension moves up to s L per round.
 *
 * Selected: by the plan's priced rounds (s2p_choose.c), rarely.
 */
#include "collectives/s2p/s2p.h"

static int br_xy_dim(mmp__s2p_plan_t *pl) {
  mmp__s2p_grid_t g;
  int first;

  mmp__s2p_grid_all(pl, &g);
  first = g.rows >= g.cols ? MMP__S2P_ROWS_FIRST : MMP__S2P_COLS_FIRST;
  return mmp__s2p_xy(pl, &g, 1, &first);
}

const mmp__alg_t mmp__s2p_br_xy_dim_alg = {
    .name = "br_xy_dim",
    .summary = "Br_Lin in the rows and columns of a grid, first dimension from "
               "the grid",
    .takes = MMP_OPT_ROWS,
    .flags = MMP__ALG_AUTO,
    .prefer = 8,
    .plan = br_xy_dim,
};
