/* SPDX-License-Identifier: MIT */
/*
 * k-nomial tree reduce: the binomial reduce with radix k (opts.radix,
 * 2 .. 16; 2 is the binomial tree), pipelined in segments when asked, as
 * the binomial one (mmp__reduce_tree).
 *
 * Write virtual ranks (relative to the tree's root) in base k. Rank v
 * receives from v + j k^i for every digit position i below its lowest
 * nonzero digit and j = 1 .. k - 1, in increasing order, combines each
 * into its accumulator, and sends the result to v with that digit
 * cleared. The k - 1 children of a level send at once, so their messages
 * reach the parent back to back: one latency and a gap g per further
 * message (mmp__net_gap). With c_i the root's children at level i (k - 1,
 * fewer at the top level),
 *   sum_i (alpha + (c_i - 1) g + c_i m (beta + gamma)),
 * ceil(log_k p) levels: fewer latencies than the binomial tree where g is
 * below alpha and m is small. Where g is not measured it is alpha, and
 * the sum is never below the binomial tree's.
 * Order: v's result is x_v o S(v + 1) o S(v + 2) o ... o S(v + k) o
 * S(v + 2k) ..., where S(c) is the result of c's subtree, which holds
 * the virtual ranks from c up to the next child: the virtual ranks in
 * order, as a k-nomial tree of radix k. For a commutative operation the
 * tree is rooted at the root; otherwise at rank 0, so that virtual order
 * is rank order, and rank 0 hands the result to the root.
 *
 * Selected: by AUTO where its cost, at the radix that prices cheapest
 * (the radix when opts.radix is 0), is below the other rows' (short
 * vectors on links whose gap is well below their latency); otherwise
 * when asked for (MMP_REDUCE_KNOMIAL).
 */
#include "collectives/reduce/reduce.h"

#define PHASE_TREE 0
#define PHASE_HOP 2

static int knomial_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, troot = mmp__reduce_troot(a), from = s->nops;
  int k = a->radix != 0 ? a->radix : MMP__RADIX_DEFAULT;
  int v = mmp__vrank(a->g->me, troot, n), parent = -1, nk = 0, j, done;
  int kids[(MMP__RADIX_MAX - 1) * 32];
  long long d;

  if (k < 2 || k > MMP__RADIX_MAX)
    return MMP_EMISMATCH; /* a radix no rank could have asked for */
  /* The children, smallest place value first, so that their subtrees
   * follow v's own contribution in virtual order; then the parent: v
   * with its lowest nonzero digit (at place d) cleared. */
  for (d = 1; d < n && (v / d) % k == 0; d *= k)
    for (j = 1; j < k; j++)
      if (v + j * d < n)
        kids[nk++] = mmp__rrank(v + (int)(j * d), troot, n);
  if (v != 0)
    parent = mmp__rrank(v - (int)((v / d) % k * d), troot, n);
  done = mmp__reduce_tree(s, a, parent, kids, nk, a->phase + PHASE_TREE);
  return mmp__reduce_hop(s, a, troot, done, from, a->phase + PHASE_HOP);
}

/* The root's path at radix k: a level per digit, each taking its
 * children's messages back to back. */
static double knomial_cost_at(int p, double m, int k,
                              const mmp_netmodel_t *nm) {
  double c = 0, g = mmp__net_gap(nm);
  long long d;

  for (d = 1; d < p; d *= k) {
    long long kids = (p - 1) / d < k - 1 ? (p - 1) / d : k - 1;
    c += nm->alpha + (double)(kids - 1) * g +
         (double)kids * m * (nm->beta + nm->gamma);
  }
  return c;
}

/* The radix of the lowest price; of equal ones the smallest. */
static int knomial_radix(int p, double m, const mmp_netmodel_t *nm) {
  int k, best = 2;
  double c, low = knomial_cost_at(p, m, 2, nm);

  for (k = 3; k <= MMP__RADIX_MAX; k++)
    if ((c = knomial_cost_at(p, m, k, nm)) < low) {
      low = c;
      best = k;
    }
  return best;
}

static double knomial_cost(const mmp__cost_in_t *in) {
  return knomial_cost_at(in->p, in->m, knomial_radix(in->p, in->m, in->nm),
                         in->nm);
}

/* The radix asked for, else (and for AUTO's pick) the one the model
 * prices cheapest. */
static int knomial_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  mmp_netmodel_t nm;
  int rc;

  if (d->radix != 0)
    return 0;
  if ((rc = mmp__env_model(env, &nm)) != 0)
    return rc;
  d->radix = knomial_radix(env->p, env->m, &nm);
  return 0;
}

const mmp__alg_t mmp__reduce_knomial_alg = {
    .name = "knomial",
    .summary = "k-nomial tree of radix opts.radix",
    .takes = MMP_OPT_SEGMENT | MMP_OPT_RADIX,
    .flags = MMP__ALG_AUTO | MMP__ALG_ORDERED,
    .prefer = 5,
    .build = knomial_build,
    .cost = knomial_cost,
    .resolve = knomial_resolve,
};
