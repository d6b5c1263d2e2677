/* SPDX-License-Identifier: MIT */
/*
 * Repos_Lin s-to-p broadcast ([Hambrusch et al. 1998], section 3).
 *
 * A partial permutation first turns the given distribution into an ideal
 * one for Br_Lin, then Br_Lin runs. Sources already on an ideal position
 * stay; each other source sends its message to a free ideal position and
 * stops being a source (it keeps its own copy). Like the paper's, this
 * implementation always repositions and does not judge the input.
 *
 * The ideal distribution: the paper names the left diagonal Dl(s) for the
 * Paragon's mesh, where link contention matters. On a switched network
 * every pair of ranks is equally close, and what makes a distribution
 * ideal is the paper's own criterion: the number of active ranks grows
 * as fast as possible and messages as slowly as possible. With holders on
 * the first s ranks of the line, no round of Br_Lin ever pairs two
 * holders while its segment has room (each half again holds a prefix),
 * so holders double every round until every rank holds one.
 *
 * Cost (Hockney, s messages of L bytes): one permutation round, alpha +
 * L beta (a rank may receive one message and send one), then Br_Lin on
 * an ideal distribution:
 *   (ceil(log2 p) + 1) alpha + (log2(p/s) + s) L beta.
 *
 * Selected: by the plan's priced rounds (s2p_choose.c), for distributions
 * on which Br_Lin combines early.
 */
#include <stdlib.h>

#include "collectives/s2p/s2p.h"

static int repos_lin(mmp__s2p_plan_t *pl) {
  unsigned char *mark = calloc((size_t)pl->x->p, 1);
  int rc;

  if (mark == NULL)
    return MMP_ENOMEM;
  mmp__s2p_ideal_lin(pl->x->p, pl->x->ns, mark);
  rc = mmp__s2p_reposition(pl, mark);
  free(mark);
  return rc != 0 ? rc : mmp__s2p_br_lin(pl);
}

const mmp__alg_t mmp__s2p_repos_lin_alg = {
    .name = "repos_lin",
    .summary = "sources moved to an ideal place, then Br_Lin",
    .flags = MMP__ALG_AUTO,
    .prefer = 4,
    .plan = repos_lin,
};
