/* SPDX-License-Identifier: MIT */
/*
 * Tree reductions: the receive-combine-forward step every tree reduction
 * shares (mmp__reduce_tree), and the binomial reduce that the reduce's
 * own rows and the allreduce's reduce + broadcast and hierarchical rows
 * are made of.
 *
 * In virtual ranks (relative to the tree's root) v receives from
 * v + 2^j for every 2^j below its lowest set bit, smallest subtree first,
 * combines each into its accumulator, and sends the result to v minus
 * its lowest set bit:
 *   ceil(log2 p)(alpha + m beta + m gamma),
 * and with X segments, each combined while the next arrives,
 *   (X + ceil(log2 p) - 1)(alpha + (m/X)(beta + gamma)).
 * Order: v's result is x_v o S(v + 1) o S(v + 2) o S(v + 4) ..., where
 * S(c) is the result of c's subtree: the virtual ranks in order, as a
 * binomial tree. For a commutative operation the tree is rooted at the
 * root; otherwise at rank 0, so that virtual order is rank order, and
 * rank 0 hands the result to the root (one more alpha + m beta).
 */
#include <stdlib.h>

#include "collectives/patterns/reduce.h"

#define PHASE_TREE 0
#define PHASE_HOP 2

int mmp__reduce_tree_ex(mmp__sched_t *s, const mmp__arg_t *a, int parent,
                        const int *kids, int nkids, int phase, unsigned how) {
  size_t nseg = mmp__seg_count(a->len, a->seg), k, o, len, slot = 0;
  size_t slen = a->seg > 0 && a->seg < a->len ? a->seg : a->len;
  int keep = (how & MMP__RT_KEEP) != 0, right = !(how & MMP__RT_LEFT);
  int from = s->nops, c, *red = malloc(2 * ((size_t)nkids + 1) * sizeof(int));
  int rc = 0;

  assert(!keep || nkids <= 1);
  if (red == NULL)
    return MMP_ENOMEM;
  /* Two slots of a segment per child: segment k + 1 arrives while k is
   * combined. */
  if (!keep)
    slot = mmp__sched_scratch(s, 2 * (size_t)nkids * slen);
  for (c = 0; c < 2 * nkids; c++)
    red[c] = -1;
  for (k = 0; k < nseg && rc >= 0; k++) {
    int prev = a->dep;
    mmp__seg_range(a->len, a->seg, k, &o, &len);
    for (c = 0; c < nkids && rc >= 0; c++) {
      size_t t = keep ? a->res + o : slot + (2 * (size_t)c + k % 2) * slen;
      int rcv = mmp__coll_recv(s, a, kids[c], t, len, phase, k == 0);
      if (rcv >= 0 && red[2 * c + k % 2] >= 0)
        rc = mmp__sched_dep(s, red[2 * c + k % 2], rcv);
      /* Kept with nothing to send on: received is all there is to do. */
      if (keep && parent < 0) {
        if (rcv < 0)
          rc = rcv;
        continue;
      }
      /* The kids' results on the side asked for, in the order given. */
      prev = mmp__coll_reduce(s, t, a->off + o, len, right, rcv, prev);
      red[2 * c + k % 2] = prev;
      if (prev < 0)
        rc = prev;
    }
    if (rc >= 0 && parent >= 0)
      rc = mmp__coll_send(s, a, parent, a->off + o, len, phase, prev, k == 0);
  }
  free(red);
  return rc < 0 ? rc : mmp__coll_after_all(s, from);
}

int mmp__reduce_tree(mmp__sched_t *s, const mmp__arg_t *a, int parent,
                     const int *kids, int nkids, int phase) {
  return mmp__reduce_tree_ex(s, a, parent, kids, nkids, phase, 0);
}

int mmp__reduce_binomial_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, troot = mmp__reduce_troot(a), from = s->nops;
  int v = mmp__vrank(a->g->me, troot, n), mask, nk = 0, parent = -1, done;
  int kids[32];

  for (mask = 1; mask < n; mask <<= 1) {
    if (v & mask) {
      parent = mmp__rrank(v - mask, troot, n);
      break;
    }
    if (v + mask < n)
      kids[nk++] = mmp__rrank(v + mask, troot, n);
  }
  done = mmp__reduce_tree(s, a, parent, kids, nk, a->phase + PHASE_TREE);
  return mmp__reduce_hop(s, a, troot, done, from, a->phase + PHASE_HOP);
}

double mmp__cost_reduce_binomial(int p, double m, const mmp_netmodel_t *nm) {
  return mmp__lg2(p) * (nm->alpha + m * (nm->beta + nm->gamma));
}
