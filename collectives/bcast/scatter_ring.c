/* SPDX-License-Identifier: MIT */
/*
 * Scatter-ring-allgather broadcast ([Hasanov et al. 2015], section 2.1.7;
 * MPICH's choice for long messages).
 *
 * The root scatters the message in p chunks with a binomial tree; then
 * p - 1 ring steps circulate them: at step s, virtual rank v passes chunk
 * v - s to v + 1 and takes chunk v - s - 1 from v - 1. Only neighbours
 * talk, and every link carries (p - 1)/p of the message in each phase:
 *   (log2 p + p - 1) alpha + 2 ((p - 1) / p) m beta.
 *
 * Selected: for large messages when the latency term (p alphas) is small
 * against m beta; on links with a large alpha the pipelined chain wins.
 */
#include "collectives/bcast/bcast.h"

static int scatter_ring_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, v, left, right, step, prev, rc, done;
  size_t cs, off, len;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  cs = (a->len + (size_t)n - 1) / (size_t)n;
  prev = mmp__scatter_binomial(s, a, cs);
  if (prev < 0 || n == 1)
    return prev;
  v = mmp__vrank(g->me, a->root, n);
  left = mmp__rrank((v + n - 1) % n, a->root, n);
  right = mmp__rrank((v + 1) % n, a->root, n);
  done = mmp__bcast_done(s, prev);
  if (done < 0)
    return done;
  /* Empty chunks (a message shorter than p bytes) are not sent: both
   * neighbours skip them alike, and a ring step's send waits only for
   * the receive of the chunk it forwards. */
  for (step = 0; step < n - 1; step++) {
    int out = (v - step + n) % n, in = (v - step - 1 + 2 * n) % n, r;
    mmp__chunks(a->len, cs, (size_t)out, (size_t)out + 1, &off, &len);
    if (len > 0 &&
        (rc = mmp__bcast_send(s, a, right, off, len, a->phase + 1, prev)) < 0)
      return rc;
    mmp__chunks(a->len, cs, (size_t)in, (size_t)in + 1, &off, &len);
    /* The chunk received now is the one sent at the next step. */
    prev = -1;
    if (len == 0)
      continue;
    r = mmp__bcast_recv(s, a, left, off, len, a->phase + 1);
    if (r < 0)
      return r;
    if ((rc = mmp__sched_dep(s, r, done)) != 0)
      return rc;
    prev = r;
  }
  return done;
}

static double scatter_ring_cost(const mmp__cost_in_t *in) {
  double P = in->p;

  return (mmp__lg2(P) + P - 1) * in->nm->alpha +
         2 * (P - 1) / P * in->m * in->nm->beta;
}

/* The scatter and the ring each pass about m through a link. */
static double scatter_ring_link_bytes(int p, double m) {
  (void)p;
  return 2 * m;
}

const mmp__alg_t mmp__bcast_scatter_ring_alg = {
    .name = "scatter_ring",
    .summary = "binomial scatter, then a ring allgather",
    .flags = MMP__ALG_AUTO | MMP__ALG_PART,
    .prefer = 5,
    .build = scatter_ring_build,
    .cost = scatter_ring_cost,
    .link_bytes = scatter_ring_link_bytes,
};
