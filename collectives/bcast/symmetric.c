/* SPDX-License-Identifier: MIT */
/*
 * Symmetric asynchronous broadcast ([Juhász], section 3).
 *
 * With q = p - 1 receivers, numbered 1..q by their rank relative to the
 * root, the root cuts the n-byte message into q pieces; piece j starts at
 * floor((j - 1) n / q) and ends at floor(j n / q), so the pieces tile the
 * message with no rounding holes (some are empty when n < q). Phase 1: the
 * root sends piece j to receiver j. Phase 2: receiver j forwards piece j to
 * every other receiver. Every transfer is posted at once and completes in
 * any order; a receiver holds the message when all q pieces are in.
 *
 * Cost (Hockney), as in the paper: the last piece leaves the root after
 * alpha + n beta, and its receiver forwards n/q bytes to q - 1 others:
 *   2 alpha + n beta (2 - 1/p')   (p' = q receivers).
 * Interleaving brings this towards n beta, the time any receiver needs to
 * take in n bytes: each piece travels in sub-segments of `seg` bytes, the
 * root sends sub-segment k of every piece before sub-segment k + 1 of any,
 * and a receiver forwards a sub-segment the moment it lands, so forwarding
 * starts after q * seg bytes instead of n:
 *   ~ alpha + n beta + (q - 1) (alpha + seg beta).
 * Every rank sends and receives about n bytes, over q connections at once:
 * the algorithm needs a switch that carries full duplex traffic on every
 * port (the paper limits it to a few tens of nodes).
 *
 * Short messages (below MMP__SYMMETRIC_MIN_DEFAULT, or MINIMP_BCAST_SYM_MIN)
 * go whole in phase 1: the flat broadcast runs instead (symmetric_resolve),
 * and the header says so. Selected: by AUTO's own top-level choice where
 * the whole message fits the network's burst allowance (priced at
 * (2q - 1) alpha + (2 - 1/q) m beta, the beta term dropped within the
 * allowance, whose 2 m beta keeps it out past it), and when asked for.
 * It needs every receiver of the whole machine, so it runs neither
 * inside hierarchical groups nor in arrival-aware rounds.
 */
#include "collectives/bcast/bcast.h"

/* Receiver j's piece (1 <= j <= q) of an n-byte message; exact for any n,
 * without overflow: floor(j n / q) = j (n / q) + floor(j (n mod q) / q). */
static size_t piece_start(size_t n, int q, int j) {
  size_t a = n / (size_t)q, b = n % (size_t)q;
  return (size_t)(j - 1) * a + ((size_t)(j - 1) * b) / (size_t)q;
}

static void piece(size_t n, int q, int j, size_t *off, size_t *len) {
  *off = piece_start(n, q, j);
  *len = piece_start(n, q, j + 1) - *off;
}

/* Sub-segment k of receiver j's piece, as a region of the message. */
static void sub(size_t n, int q, int j, size_t seg, size_t k, size_t *off,
                size_t *len) {
  size_t po, pl, so;

  piece(n, q, j, &po, &pl);
  mmp__seg_range(pl, seg, k, &so, len);
  *off = po + so;
}

/* Phase 1 at the root: sub-segment k of every piece before k + 1 of any. */
static int root_sends(mmp__sched_t *s, const mmp__arg_t *a, int q) {
  size_t kmax = mmp__seg_count(a->len / (size_t)q + 1, a->seg), k, off, len;
  int j, op;

  for (k = 0; k < kmax; k++)
    for (j = 1; j <= q; j++) {
      size_t po, pl;
      piece(a->len, q, j, &po, &pl);
      if (k >= mmp__seg_count(pl, a->seg) || (pl == 0 && !a->first))
        continue;
      sub(a->len, q, j, a->seg, k, &off, &len);
      op = mmp__bcast_send(s, a, mmp__rrank(j, a->root, a->g->n), off, len,
                           a->phase, a->dep);
      if (op < 0)
        return op;
      if (k == 0 && a->first)
        mmp__sched_first(s, op);
    }
  return mmp__bcast_done(s, a->dep);
}

/* Receiver v: its own piece from the root, forwarded to the others as each
 * sub-segment lands. */
static int own_piece(mmp__sched_t *s, const mmp__arg_t *a, int q, int v,
                     int all) {
  size_t po, pl, k, nk, off, len;
  int i, r, op, rc;

  piece(a->len, q, v, &po, &pl);
  if (pl == 0 && !a->first)
    return 0;
  nk = mmp__seg_count(pl, a->seg);
  for (k = 0; k < nk; k++) {
    sub(a->len, q, v, a->seg, k, &off, &len);
    r = mmp__bcast_recv(s, a, a->root, off, len, a->phase);
    if (r < 0)
      return r;
    if (k == 0 && a->first)
      mmp__sched_first(s, r);
    if ((rc = mmp__sched_dep(s, r, all)) != 0)
      return rc;
    for (i = 1; i < q && len > 0; i++) {
      int to = (v - 1 + i) % q + 1; /* v + 1, v + 2, ..., wrapping */
      op = mmp__bcast_send(s, a, mmp__rrank(to, a->root, a->g->n), off, len,
                           a->phase + 1, r);
      if (op < 0)
        return op;
    }
  }
  return 0;
}

/* Receiver v: every other receiver's piece, straight from it. */
static int other_pieces(mmp__sched_t *s, const mmp__arg_t *a, int q, int v,
                        int all) {
  size_t po, pl, k, nk, off, len;
  int j, r, rc;

  for (j = 1; j <= q; j++) {
    if (j == v)
      continue;
    piece(a->len, q, j, &po, &pl);
    if (pl == 0)
      continue;
    nk = mmp__seg_count(pl, a->seg);
    for (k = 0; k < nk; k++) {
      sub(a->len, q, j, a->seg, k, &off, &len);
      r = mmp__bcast_recv(s, a, mmp__rrank(j, a->root, a->g->n), off, len,
                          a->phase + 1);
      if (r < 0)
        return r;
      if ((rc = mmp__sched_dep(s, r, all)) != 0)
        return rc;
    }
  }
  return 0;
}

static int symmetric_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__group_t *g = a->g;
  int q = g->n - 1, v, all, rc;

  if (g->me < 0 || q == 0)
    return mmp__bcast_done(s, a->dep);
  if (g->me == a->root)
    return root_sends(s, a, q);
  v = mmp__vrank(g->me, a->root, g->n);
  all = mmp__bcast_done(s, -1);
  if (all < 0)
    return all;
  if ((rc = own_piece(s, a, q, v, all)) != 0)
    return rc;
  if ((rc = other_pieces(s, a, q, v, all)) != 0)
    return rc;
  return all;
}

/* [Juhász]'s 2 alpha + m beta (2 - 1/q), q = p - 1 receivers, with each
 * of the root's q sends and of a receiver's q - 1 forwards paying alpha,
 * as [Hasanov et al. 2015] counts the flat tree's: the root's pieces leave
 * after q alpha + m beta, and the last one's receiver forwards it to q - 1
 * others. */
static double symmetric_cost(const mmp__cost_in_t *in) {
  double q = in->p - 1;

  return (2 * q - 1) * in->nm->alpha + (2 - 1 / q) * in->m * in->nm->beta;
}

/* The root's link carries the message once; each receiver takes in m. */
static double symmetric_link_bytes(int p, double m) {
  (void)p;
  return m;
}

/* The sub-segment S: the root pays (n / S) alpha in message overheads
 * and the last sub-segment's forwarding adds (q - 1)(alpha + S beta)
 * after the root's n beta (q = p - 1 receivers), so
 * S = sqrt(n alpha / ((q - 1) beta)), at least 4 KiB, and pieces are cut
 * into equal parts of at least S (mmp__even_seg). Where the whole message
 * fits the burst allowance the bytes cost no time and each sub-segment
 * only adds messages: pieces go whole (docs/data/history/algorithms.md has the
 * measurements). */
static size_t symmetric_seg(int p, size_t len, const mmp_netmodel_t *nm) {
  int q = p - 1;
  double S;

  if (q < 2 || (nm->burst > 0 && (double)len <= nm->burst))
    return 0;
  if (nm->alpha <= 0 || nm->beta <= 0)
    S = MMP__SYMMETRIC_SEG_DEFAULT;
  else
    S = sqrt((double)len * nm->alpha / ((double)(q - 1) * nm->beta));
  if (S < 4096)
    S = 4096;
  return mmp__even_seg((len + (size_t)q - 1) / (size_t)q, S);
}

/* Short messages go whole (the flat broadcast); pieces are cut into
 * sub-segments sized by the model. AUTO's pick was priced with the
 * model's segment and the default threshold, so neither opts.segment nor
 * MINIMP_BCAST_SYM_MIN changes it (the latter would turn a 64 KiB
 * symmetric pick into the flat tree). */
static int symmetric_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  size_t min = MMP__SYMMETRIC_MIN_DEFAULT, seg = env->auto_pick ? 0 : d->seg;
  mmp__rt_facts_t f;
  mmp_netmodel_t nm;
  int rc;

  if (!env->auto_pick) {
    mmp__rt_facts(mmp__eng, &f);
    if (f.coll->bcast_sym_min >= 0)
      min = (size_t)f.coll->bcast_sym_min;
  }
  if (d->count < min) {
    d->alg = &mmp__bcast_flat_alg;
    seg = 0;
  } else if (seg == 0) {
    if ((rc = mmp__env_model(env, &nm)) != 0)
      return rc;
    seg = symmetric_seg(env->p, (size_t)d->count, &nm);
  }
  d->seg = seg;
  return 0;
}

const mmp__alg_t mmp__bcast_symmetric_alg = {
    .name = "symmetric",
    .summary =
        "the root scatters pieces, every receiver forwards its own to all",
    .takes = MMP_OPT_SEGMENT,
    .flags = MMP__ALG_AUTO | MMP__ALG_TOP,
    .prefer = 8,
    .auto_min = MMP__SYMMETRIC_MIN_DEFAULT,
    .build = symmetric_build,
    .cost = symmetric_cost,
    .link_bytes = symmetric_link_bytes,
    .resolve = symmetric_resolve,
};
