/* SPDX-License-Identifier: MIT */
/*
 * Flat tree broadcast: the root sends the message to every other rank in
 * turn ([Hasanov et al. 2015], section 2.1.1).
 *
 * Cost (Hockney): (p - 1)(alpha + m beta). The root's link carries all of
 * it, so it only pays for very small p. With segments the root sends
 * segment k to everyone before segment k+1, which changes nothing in the
 * model but lets receivers start earlier.
 *
 * Selected: hardly ever; AUTO picks it only for p = 2, where every
 * algorithm is one message.
 */
#include "collectives/bcast/bcast.h"

static int flat_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  size_t nseg = mmp__seg_count(a->len, a->seg), k, off, n;
  int i, op, rc;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  if (g->me != a->root) {
    /* Holds the data once every segment is in, in whatever order. */
    int all = mmp__bcast_done(s, -1);
    if (all < 0)
      return all;
    for (k = 0; k < nseg; k++) {
      mmp__seg_range(a->len, a->seg, k, &off, &n);
      op = mmp__bcast_recv(s, a, a->root, off, n, a->phase);
      if (op < 0)
        return op;
      if (k == 0 && a->first)
        mmp__sched_first(s, op);
      if ((rc = mmp__sched_dep(s, op, all)) != 0)
        return rc;
    }
    return all;
  }
  op = -1;
  for (k = 0; k < nseg; k++) {
    mmp__seg_range(a->len, a->seg, k, &off, &n);
    for (i = 1; i < g->n; i++) {
      int peer = mmp__rrank(i, a->root, g->n);
      op = mmp__bcast_send(s, a, peer, off, n, a->phase, a->dep);
      if (op < 0)
        return op;
      if (k == 0 && a->first)
        mmp__sched_first(s, op);
    }
  }
  return mmp__bcast_done(s, a->dep);
}

static double flat_cost(const mmp__cost_in_t *in) {
  return (in->p - 1) * (in->nm->alpha + in->m * in->nm->beta);
}

static double flat_link_bytes(int p, double m) {
  return (p - 1) * m;
}

const mmp__alg_t mmp__bcast_flat_alg = {
    .name = "flat",
    .summary = "the root sends the message to every other rank",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_PART,
    .prefer = 7,
    .build = flat_build,
    .cost = flat_cost,
    .link_bytes = flat_link_bytes,
};
