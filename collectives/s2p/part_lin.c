/* SPDX-License-Identifier: MIT */
/*
 * Part_Lin s-to-p broadcast ([Hambrusch et al. 1998], section 3).
 *
 * The line is cut into G1, the first p1 = ceil(p/2) ranks, and G2, the
 * other p2. The cut does not depend on the sources. A partial permutation
 * puts s1 sources in G1 and s2 in G2, s1 / s2 = p1 / p2 (rounded), each
 * group's on its ideal positions for Br_Lin (its first ranks). Br_Lin then
 * runs inside both groups at once, and finally member i of G1 and member
 * i of G2 exchange everything (for odd p the last member of G1 receives
 * from G2's first).
 *
 * Cost (Hockney, s messages of L bytes): the permutation, alpha + L beta;
 * Br_Lin on p/2 ranks with s/2 sources,
 *   ceil(log2(p/2)) alpha + (log2(p/s) + s/2 - 1) L beta;
 * the final exchange, alpha + (s/2) L beta. The paper observed that this
 * last step of long messages usually eats the gain of the smaller
 * broadcasts.
 *
 * Selected: by the plan's priced rounds (s2p_choose.c).
 */
#include <stdlib.h>

#include "collectives/s2p/s2p.h"

static int part_lin(mmp__s2p_plan_t *pl) {
  const mmp__s2p_t *x = pl->x;
  int p1 = (x->p + 1) / 2, s1, rc;
  int start[2] = {0, p1}, n[2] = {p1, x->p - p1};
  unsigned char *mark = calloc((size_t)x->p, 1);
  mmp__s2p_lines_t ln;

  if (mark == NULL)
    return MMP_ENOMEM;
  mmp__s2p_part_split(x, p1, &s1);
  mmp__s2p_ideal_lin(p1, s1, mark);
  mmp__s2p_ideal_lin(x->p - p1, x->ns - s1, mark + p1);
  rc = mmp__s2p_reposition(pl, mark);
  free(mark);
  if (rc != 0)
    return rc;
  ln.nlines = 2;
  ln.ranks = pl->ident;
  ln.start = start;
  ln.n = n;
  rc = mmp__s2p_lin(pl, &ln);
  return rc != 0 ? rc : mmp__s2p_part_exchange(pl, p1);
}

const mmp__alg_t mmp__s2p_part_lin_alg = {
    .name = "part_lin",
    .summary = "two halves with Br_Lin, then they exchange",
    .flags = MMP__ALG_AUTO,
    .prefer = 6,
    .plan = part_lin,
};
