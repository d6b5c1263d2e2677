/* SPDX-License-Identifier: MIT */
/*
 * Two complementary binary trees below a root, each carrying half of a
 * region (two_tree.c, after Sanders, Speck and Träff 2009): the shape the
 * two-tree broadcast and the two-tree allreduce run, their segment and
 * the broadcast's price.
 */
#ifndef MMP_COLLECTIVES_PATTERNS_TWO_TREE_H
#define MMP_COLLECTIVES_PATTERNS_TWO_TREE_H

#include "collectives/patterns/tree.h"

/* Virtual rank v's links in tree t (0: T1, 1: T2) over virtual ranks
 * 0 .. n, 0 the root above both trees: *parent (-1 for v = 0) and the
 * children in `kids`. Returns how many children. */
int mmp__two_tree_links(int t, int v, int n, int *parent, int kids[2]);

/* What a two-tree row does with one half: this rank's ops for
 * [off, off + len) of h's region in tree t, whose links are the group
 * members `parent` (-1 at the root) and `kids`. `h` is the row's
 * argument with its first messages marked on tree 0 only. Returns the op
 * after which this rank's part of the half is done, or a negative
 * error. */
typedef int (*mmp__two_tree_half_fn)(mmp__sched_t *s, const mmp__arg_t *h,
                                     int t, int parent, const int *kids,
                                     int nkids, size_t off, size_t len);

/* Runs `half` in both trees over group a->g below member a->root, the
 * region cut in two on an element (a->esize): the first half in tree 0,
 * the second in tree 1. A rank outside the group, or a group of one,
 * only waits for a->dep. Returns an op after both halves, or a negative
 * error. */
int mmp__two_tree_run(mmp__sched_t *s, const mmp__arg_t *a,
                      mmp__two_tree_half_fn half);

/* The two-tree broadcast's price for p ranks and m bytes in X segments,
 * (X + 2 ceil(log2 p))(alpha + (m / X) beta); 0 for p < 2. */
double mmp__two_tree_time(int p, double m, double X, const mmp_netmodel_t *nm);

/* The optimum of that price, X = sqrt(2 ceil(log2 p) m beta / alpha), as
 * a segment of at least 4 KiB on an element; 0: whole. */
size_t mmp__two_tree_segment(int p, size_t len, size_t esize,
                             const mmp_netmodel_t *nm);

#endif /* MMP_COLLECTIVES_PATTERNS_TWO_TREE_H */
