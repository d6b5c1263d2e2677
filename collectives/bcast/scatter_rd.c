/* SPDX-License-Identifier: MIT */
/*
 * Scatter-recursive-doubling-allgather broadcast ([Hasanov et al. 2015],
 * section 2.1.8; MPICH's choice for medium messages).
 *
 * The root scatters p chunks with a binomial tree. Then, for mask = 1, 2,
 * 4, ..., virtual rank v swaps everything it holds with v XOR mask, so the
 * aligned block it holds doubles each step. For a power of two p:
 *   2 log2 p alpha + 2 ((p - 1) / p) m beta.
 * For other p, with q the largest power of two below p, the p - q extra
 * ranks first hand their chunk to v - q, the q ranks double as above
 * (each step then carries two ranges: chunks t and t + q), and at the end
 * every extra rank gets the whole message from its partner: one more
 * alpha + m beta for them, a cost the model above does not show.
 *
 * Selected: for medium messages on power-of-two groups, where its log2 p
 * latency beats the ring's p.
 */
#include "collectives/bcast/bcast.h"

/* Appends a send and a receive of chunks [c0, c1) and [c0 + q, c1 + q),
 * the second only for extended groups. Sends wait for every op in `deps`. */
static int swap_ranges(mmp__sched_t *s, const mmp__arg_t *a, int peer,
                       size_t cs, int q, int extended, int send_c0, int recv_c0,
                       int width, const int *deps, int ndeps, int *recvs,
                       int *nrecv) {
  int part, d, rc;

  for (part = 0; part < 1 + extended; part++) {
    size_t off, len;
    int sop, rop, shift = part * q;
    mmp__chunks(a->len, cs, (size_t)(send_c0 + shift),
                (size_t)(send_c0 + shift + width), &off, &len);
    sop = mmp__bcast_send(s, a, peer, off, len, a->phase + 1, -1);
    if (sop < 0)
      return sop;
    for (d = 0; d < ndeps; d++)
      if ((rc = mmp__sched_dep(s, deps[d], sop)) != 0)
        return rc;
    mmp__chunks(a->len, cs, (size_t)(recv_c0 + shift),
                (size_t)(recv_c0 + shift + width), &off, &len);
    rop = mmp__bcast_recv(s, a, peer, off, len, a->phase + 1);
    if (rop < 0)
      return rop;
    recvs[(*nrecv)++] = rop;
  }
  return 0;
}

static int scatter_rd_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, v, q, mask, have, done, rc, nrecv = 0, i;
  int recvs[132];
  size_t cs, off, len;

  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  cs = (a->len + (size_t)n - 1) / (size_t)n;
  have = mmp__scatter_binomial(s, a, cs);
  if (have < 0 || n == 1)
    return have;
  v = mmp__vrank(g->me, a->root, n);
  for (q = 1; q * 2 <= n; q *= 2)
    ;
  if (v >= q) {
    /* Extra rank: fold its chunk into v - q, get everything back later. */
    int partner = mmp__rrank(v - q, a->root, n);
    mmp__chunks(a->len, cs, (size_t)v, (size_t)v + 1, &off, &len);
    rc = mmp__bcast_send(s, a, partner, off, len, a->phase + 2, have);
    if (rc < 0)
      return rc;
    return mmp__bcast_recv(s, a, partner, 0, a->len, a->phase + 3);
  }
  recvs[nrecv++] = have;
  if (v + q < n) {
    mmp__chunks(a->len, cs, (size_t)(v + q), (size_t)(v + q) + 1, &off, &len);
    rc = mmp__bcast_recv(s, a, mmp__rrank(v + q, a->root, n), off, len,
                         a->phase + 2);
    if (rc < 0)
      return rc;
    recvs[nrecv++] = rc;
  }
  for (mask = 1; mask < q; mask <<= 1) {
    int peer = v ^ mask, base = v & ~(mask - 1), pbase = peer & ~(mask - 1);
    /* Send only once everything received so far is in. */
    int ndeps = nrecv;
    int deps[132];
    for (i = 0; i < ndeps; i++)
      deps[i] = recvs[i];
    rc = swap_ranges(s, a, mmp__rrank(peer, a->root, n), cs, q, n > q, base,
                     pbase, mask, deps, ndeps, recvs, &nrecv);
    if (rc < 0)
      return rc;
  }
  done = mmp__bcast_done(s, -1);
  if (done < 0)
    return done;
  for (i = 0; i < nrecv; i++)
    if ((rc = mmp__sched_dep(s, recvs[i], done)) != 0)
      return rc;
  if (v + q < n) {
    rc = mmp__bcast_send(s, a, mmp__rrank(v + q, a->root, n), 0, a->len,
                         a->phase + 3, done);
    if (rc < 0)
      return rc;
  }
  return done;
}

static double scatter_rd_cost(const mmp__cost_in_t *in) {
  double a = in->nm->alpha, b = in->nm->beta, P = in->p, m = in->m;
  double t = 2 * mmp__lg2(P) * a + 2 * (P - 1) / P * m * b;

  /* Outside powers of two, the extra ranks get it all once more. */
  return (in->p & (in->p - 1)) ? t + a + m * b : t;
}

/* The scatter and the allgather each pass about m through a link. */
static double scatter_link_bytes(int p, double m) {
  (void)p;
  return 2 * m;
}

const mmp__alg_t mmp__bcast_scatter_rd_alg = {
    .name = "scatter_rd",
    .summary = "binomial scatter, then a recursive-doubling allgather",
    .flags = MMP__ALG_AUTO | MMP__ALG_PART,
    .prefer = 6,
    .build = scatter_rd_build,
    .cost = scatter_rd_cost,
    .link_bytes = scatter_link_bytes,
};
