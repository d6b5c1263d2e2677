/* SPDX-License-Identifier: MIT */
/*
 * Br_Lin s-to-p broadcast ([Hambrusch et al. 1998], section 2).
 *
 * The p ranks form a logical line. Member i of the line and member
 * i + ceil(p/2) exchange what they hold (if only one of them holds
 * anything, it sends it to the other), combining it into one larger
 * message; then the algorithm recurses on both halves. For odd p the
 * middle member has no partner and sends to the last member of the other
 * half. ceil(log2 p) rounds; each rank sends at most one combined message
 * per round (two for the last member of an odd segment's right half).
 *
 * Cost (Hockney, s messages of L bytes): on an ideal distribution (no
 * round pairs two holders while there is room, e.g. the first s ranks)
 * holders double for log2(p/s) rounds carrying one message each, then the
 * messages double:
 *   ceil(log2 p) alpha + (log2(p/s) + s - 1) L beta.
 * On a poor one (sources that meet early, as E(s) for s a power of two)
 * messages merge before they spread and later rounds carry up to s L each.
 *
 * Selected: by the plan's priced rounds (s2p_choose.c); it usually wins
 * for short messages, where its log2 p latency matters most.
 */
#include "collectives/s2p/s2p.h"

int mmp__s2p_br_lin(mmp__s2p_plan_t *pl) {
  mmp__s2p_lines_t ln;
  int start = 0, n = pl->x->p;

  ln.nlines = 1;
  ln.ranks = pl->ident;
  ln.start = &start;
  ln.n = &n;
  return mmp__s2p_lin(pl, &ln);
}

const mmp__alg_t mmp__s2p_br_lin_alg = {
    .name = "br_lin",
    .summary = "recursive halving on a line, combining messages",
    .flags = MMP__ALG_AUTO,
    .prefer = 2,
    .plan = mmp__s2p_br_lin,
};
