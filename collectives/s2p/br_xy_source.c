/* SPDX-License-Identifier: MIT */
/*
 * Br_xy_source s-to-p broadcast ([Hambrusch et al. 1998], section 2).
 *
 * The p ranks form a logical r x c grid (r c = p, r the largest divisor
 * of p not above sqrt(p); a prime p gives a 1 x p grid, that is a line).
 * Br_Lin runs inside every row at once, then inside every column, or the
 * other way round: with max_r the largest number of sources in a row and
 * max_c the largest in a column, rows go first if max_r < max_c, else
 * columns. The dimension with fewer sources per line goes first, so that
 * the messages are still short when the second dimension starts.
 *
 * Cost (Hockney, s messages of L bytes): ceil(log2 c) + ceil(log2 r)
 * rounds; on an ideal distribution (a row distribution whose rows Br_Lin
 * spreads without collisions)
 *   (ceil(log2 r) + ceil(log2 c)) alpha + (log2(p/s) + s - 1) L beta,
 * on square blocks and crosses far more, since few lines carry sources.
 *
 * Selected: by the plan's priced rounds (s2p_choose.c).
 */
#include "collectives/s2p/s2p.h"

int mmp__s2p_br_xy_source(mmp__s2p_plan_t *pl) {
  mmp__s2p_grid_t g;
  int first;

  mmp__s2p_grid_all(pl, &g);
  first = mmp__s2p_xy_source_dim(pl, &g);
  return mmp__s2p_xy(pl, &g, 1, &first);
}

const mmp__alg_t mmp__s2p_br_xy_source_alg = {
    .name = "br_xy_source",
    .summary = "Br_Lin in the rows and columns of a grid, first dimension from "
               "the sources",
    .takes = MMP_OPT_ROWS,
    .flags = MMP__ALG_AUTO,
    .prefer = 3,
    .plan = mmp__s2p_br_xy_source,
};
