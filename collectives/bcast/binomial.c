/* SPDX-License-Identifier: MIT */
/*
 * Binomial tree broadcast ([Hasanov et al. 2015], section 2.1.6).
 *
 * In virtual ranks (relative to the root), v receives from v minus its
 * lowest set bit and sends to v + 2^j for every 2^j below that bit, the
 * largest subtree first. The number of ranks holding the message doubles
 * each round:
 *   ceil(log2 p) (alpha + m beta).
 * With segments each rank forwards segment k while receiving k + 1 (a
 * pipelined binomial tree, as in Open MPI).
 *
 * Selected: for small messages, where log2 p latencies beat every other
 * shape; and inside the groups of the hierarchical broadcast.
 */
#include "collectives/bcast/bcast.h"

/* The k-nomial tree of radix 2 is this tree, in this order. */
static int binomial_build(mmp__sched_t *s, const mmp__arg_t *a) {
  mmp__arg_t b = *a;

  b.radix = 2;
  return mmp__tree_knomial(s, &b);
}

static double binomial_cost(const mmp__cost_in_t *in) {
  return mmp__lg2(in->p) * (in->nm->alpha + in->m * in->nm->beta);
}

/* The root sends the message once per round. */
static double binomial_link_bytes(int p, double m) {
  return mmp__lg2(p) * m;
}

const mmp__alg_t mmp__bcast_binomial_alg = {
    .name = "binomial",
    .summary = "binomial tree, pipelined in segments",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_PART,
    .prefer = 1,
    .build = binomial_build,
    .cost = binomial_cost,
    .link_bytes = binomial_link_bytes,
};
