/* SPDX-License-Identifier: MIT */
/*
 * Repos_xy_source s-to-p broadcast ([Hambrusch et al. 1998], sections 3
 * and 5.2).
 *
 * A partial permutation moves the sources into a row distribution, then
 * Br_xy_source runs. As in the paper, the rows are placed so that the
 * number of new sources increases as fast as possible: with i rows of
 * sources, Br_Lin inside each column of r ranks must never pair two
 * source rows while it has room, which the first i rows achieve (each
 * half of a column again starts with its source rows). The rows are
 * filled in order, the last one partly. Sources already in place stay.
 *
 * Cost (Hockney, s messages of L bytes): one permutation round, alpha +
 * L beta, then Br_xy_source on its ideal distribution (columns first when
 * a row holds more sources than a column):
 *   (ceil(log2 r) + ceil(log2 c) + 1) alpha + (log2(p/s) + s) L beta.
 *
 * Selected: by the plan's priced rounds (s2p_choose.c). The paper found
 * it the most predictable on the Paragon for s < p/2 and 1-16 KiB.
 */
#include <stdlib.h>

#include "collectives/s2p/s2p.h"

static int repos_xy(mmp__s2p_plan_t *pl) {
  unsigned char *mark = calloc((size_t)pl->x->p, 1);
  int rc;

  if (mark == NULL)
    return MMP_ENOMEM;
  mmp__s2p_ideal_rows(pl->x->rows, pl->x->cols, pl->x->ns, mark);
  rc = mmp__s2p_reposition(pl, mark);
  free(mark);
  return rc != 0 ? rc : mmp__s2p_br_xy_source(pl);
}

const mmp__alg_t mmp__s2p_repos_xy_alg = {
    .name = "repos_xy_source",
    .summary = "sources moved to the first rows, then Br_xy_source",
    .takes = MMP_OPT_ROWS,
    .flags = MMP__ALG_AUTO,
    .prefer = 5,
    .plan = repos_xy,
};
