/* SPDX-License-Identifier: MIT */
/*
 * A region forwarded from a root, as the broadcasts and every collective
 * with a broadcast in it shape it: sends and receives addressed by group
 * member, segmented receive-and-forward over a tree given a rank's parent
 * and children, the k-nomial tree, the binomial scatter, and two levels
 * of groups.
 */
#include "collectives/patterns/tree.h"

int mmp__bcast_done(mmp__sched_t *s, int dep) {
  int op = mmp__sched_nop(s), rc;

  if (op >= 0 && dep >= 0 && (rc = mmp__sched_dep(s, dep, op)) != 0)
    return rc;
  return op;
}

int mmp__bcast_recv(mmp__sched_t *s, const mmp__arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase) {
  assert(peer_idx >= 0 && peer_idx < a->g->n);
  return mmp__sched_recv(s, a->g->ranks[peer_idx], a->off + off, len, phase);
}

int mmp__bcast_send(mmp__sched_t *s, const mmp__arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase, int after) {
  int op, rc;

  assert(peer_idx >= 0 && peer_idx < a->g->n);
  op = mmp__sched_send(s, a->g->ranks[peer_idx], a->off + off, len, phase);
  if (op < 0)
    return op;
  if (after >= 0 && (rc = mmp__sched_dep(s, after, op)) != 0)
    return rc;
  return op;
}

int mmp__bcast_over_all(mmp__sched_t *s,
                        int (*b)(mmp__sched_t *, const mmp__arg_t *),
                        mmp__arg_t *a) {
  mmp__group_t all;
  int rc = mmp__sched_group_all(s, &all);

  if (rc != 0)
    return rc;
  a->g = &all;
  rc = b(s, a);
  a->g = NULL;
  return rc;
}

int mmp__bcast_levels(mmp__sched_t *s, const mmp__arg_t *top,
                      const mmp__group_t *outer, const mmp__group_t *inner) {
  mmp__arg_t a = *top;
  int done;

  a.g = outer;
  a.root = 0;
  done = top->outer->build(s, &a);
  if (done < 0)
    return done;
  /* A leader forwards inside its group once it holds the data. */
  a.g = inner;
  a.dep = done;
  a.phase = top->phase + MMP__LEVEL_PHASES;
  return top->inner->build(s, &a);
}

int mmp__tree_forward(mmp__sched_t *s, const mmp__arg_t *a, int parent,
                      const int *kids, int nkids, size_t off, size_t len,
                      int phase) {
  size_t nseg = mmp__seg_count(len, a->seg), k, o, n;
  int i, rc, all = mmp__bcast_done(s, parent >= 0 ? -1 : a->dep);

  if (all < 0)
    return all;
  for (k = 0; k < nseg; k++) {
    int have = a->dep;
    mmp__seg_range(len, a->seg, k, &o, &n);
    if (parent >= 0) {
      have = mmp__bcast_recv(s, a, parent, off + o, n, phase);
      if (have < 0)
        return have;
      if (k == 0 && a->first)
        mmp__sched_first(s, have);
      /* Segments need not complete in order (a short last one may go
       * eager and overtake rendezvous ones): wait for each. */
      if ((rc = mmp__sched_dep(s, have, all)) != 0)
        return rc;
    }
    /* Largest subtree first: the kids come in the order to serve them. */
    for (i = 0; i < nkids; i++) {
      int op = mmp__bcast_send(s, a, kids[i], off + o, n, phase, have);
      if (op < 0)
        return op;
      if (k == 0 && a->first)
        mmp__sched_first(s, op);
    }
  }
  return all;
}

int mmp__scatter_binomial(mmp__sched_t *s, const mmp__arg_t *a, size_t cs) {
  const mmp__group_t *g = a->g;
  int n = g->n, v = mmp__vrank(g->me, a->root, n), mask, have = a->dep;
  size_t off, len;

  /* The subtree of v spans virtual ranks [v, v + lowbit(v)); the root's
   * spans them all. */
  for (mask = 1; mask < n; mask <<= 1)
    if (v & mask)
      break;
  if (v > 0) {
    mmp__chunks(a->len, cs, (size_t)v, (size_t)(v + mask < n ? v + mask : n),
                &off, &len);
    have = mmp__bcast_recv(s, a, mmp__rrank(v - mask, a->root, n), off, len,
                           a->phase);
    if (have < 0)
      return have;
    if (a->first)
      mmp__sched_first(s, have);
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    int c = v + mask, op;
    if (c >= n)
      continue;
    mmp__chunks(a->len, cs, (size_t)c, (size_t)(c + mask < n ? c + mask : n),
                &off, &len);
    op = mmp__bcast_send(s, a, mmp__rrank(c, a->root, n), off, len, a->phase,
                         have);
    if (op < 0)
      return op;
    if (a->first)
      mmp__sched_first(s, op);
  }
  return have >= 0 ? have : mmp__bcast_done(s, a->dep);
}

int mmp__tree_knomial(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int n = g->n, k = a->radix, v, parent = -1, nk = 0, j;
  int kids[(MMP__RADIX_MAX - 1) * 32];
  long long d = 1;

  if (k < 2 || k > MMP__RADIX_MAX)
    return MMP_EMISMATCH; /* a radix no rank could have asked for */
  if (g->me < 0)
    return mmp__bcast_done(s, a->dep);
  v = mmp__vrank(g->me, a->root, n);
  /* d: the place value of v's lowest nonzero digit; at the root, the
   * first power of k not below n. */
  while (d < n && (v / d) % k == 0)
    d *= k;
  if (v != 0)
    parent = mmp__rrank(v - (int)((v / d) % k * d), a->root, n);
  for (d /= k; d >= 1; d /= k)
    for (j = 1; j < k; j++)
      if (v + j * d < n)
        kids[nk++] = mmp__rrank(v + (int)(j * d), a->root, n);
  return mmp__tree_forward(s, a, parent, kids, nk, 0, a->len, a->phase);
}
