/* SPDX-License-Identifier: MIT */
/*
 * Schedules built offline: every rank's schedule of a broadcast or an
 * s-to-p, built in this one process with no engine and no sockets, for
 * every algorithm of the descriptor tables (and every inner/outer pair the
 * hierarchical and node broadcasts allow, the node broadcast on several
 * layouts of ranks on nodes), at every p from 1 to 64 and at p = 1000
 * and 6142, then run symbolically against each other (sched_sim.c): every
 * send must meet exactly one receive of the same length, nobody may
 * forward bytes it does not hold yet, and every rank must end with every
 * byte. Lengths at the large p are kept small where an algorithm's message
 * count grows with p times the length (the symmetric broadcast, the
 * scatter-ring's ring).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/s2p/s2p.h"

/* The broadcast and s-to-p rows of that name. */
#define B(name) mmp__alg_find(&mmp__bcast_family, #name)
#define S(name) mmp__alg_find(&mmp__s2p_family, #name)

static const mmp_netmodel_t net = {114e-6, 83.3e-9, 65536, 0};
static long messages_seen;
/* The last node broadcast's traffic (check_node_traffic): messages from
 * one node to another, the root's sends to other nodes, and the fewest
 * and most receives with data of any non-root rank. */
static long node_cross, node_root_cross;
static int node_recv_min, node_recv_max;

/* ---- Broadcast ----------------------------------------------------------- */

/* A node broadcast moves data between nodes only to each node's leader
 * (its first rank in virtual order): a rank that does not lead its node
 * receives nothing from another node. */
static void check_node_traffic(mmp__sched_t **s, int p, const mmp__desc_t *d,
                               const int *node_of) {
  int r, v, i, k;

  node_cross = node_root_cross = 0;
  node_recv_min = p;
  node_recv_max = 0;
  for (r = 0; r < p; r++) {
    int leads = 1, recvs = 0;
    for (v = 0; v < p; v++) {
      i = (d->root + v) % p;
      if (i == r)
        break;
      if (node_of[i] == node_of[r])
        leads = 0; /* an earlier rank of its node leads it */
    }
    for (k = 0; k < s[r]->nops; k++) {
      const mmp__sop_t *op = &s[r]->ops[k];
      int moves = (op->kind == MMP__SOP_RECV || op->kind == MMP__SOP_SEND) &&
                  op->len > 0;
      int cross = moves && node_of[op->peer] != node_of[r];
      if (!moves)
        continue;
      if (op->kind == MMP__SOP_RECV && op->len > 0) {
        recvs++;
        node_cross += cross;
      }
      if (op->kind == MMP__SOP_SEND && op->len > 0 && r == d->root)
        node_root_cross += cross;
      if (op->kind == MMP__SOP_RECV && op->len > 0 && !leads &&
          node_of[op->peer] != node_of[r])
        fail_msg("node broadcast (outer %s, inner %s) p %d root %d: rank %d, "
                 "not a leader, receives %zu bytes from rank %d of another "
                 "node",
                 d->outer->name, d->inner->name, p, d->root, r, op->len,
                 op->peer);
    }
    if (r != d->root && recvs < node_recv_min)
      node_recv_min = recvs;
    if (r != d->root && recvs > node_recv_max)
      node_recv_max = recvs;
  }
}

/* node_of: the ranks' nodes (mmp__sched_set_nodes), or NULL. */
static void bcast_run_on(int p, const mmp__desc_t *d, const int *node_of) {
  mmp__sched_t **s = calloc((size_t)p, sizeof(*s));
  size_t hold[2] = {0, (size_t)d->count};
  mmp__sim_report_t rep;
  int r, rc;

  assert_non_null(s);
  for (r = 0; r < p; r++) {
    assert_int_equal(mmp__sched_offline(p, r, NULL, (size_t)d->count, &s[r]),
                     0);
    if (node_of != NULL)
      mmp__sched_set_nodes(s[r], node_of);
    rc = mmp__bcast_build(s[r], d);
    if (rc != 0)
      fail_msg("%s p %d root %d len %llu: rank %d builds %s", d->alg->name, p,
               d->root, (unsigned long long)d->count, r, mmp_err_name(rc));
  }
  assert_int_equal(
      mmp__sched_simulate(s, p, (size_t)d->count, &d->root, hold, 1, &rep), 0);
  if (!rep.ok)
    fail_msg("%s (inner %s, outer %s, G %d, radix %d) p %d root %d len %llu "
             "seg %zu: %s",
             d->alg->name, d->inner != NULL ? d->inner->name : "-",
             d->outer != NULL ? d->outer->name : "-", d->groups, d->radix, p,
             d->root, (unsigned long long)d->count, d->seg, rep.what);
  /* A broadcast reaches p - 1 ranks at least once each. */
  assert_true(d->count == 0 || rep.messages >= p - 1);
  messages_seen += rep.messages;
  if (node_of != NULL && d->alg == B(node))
    check_node_traffic(s, p, d, node_of);
  for (r = 0; r < p; r++)
    mmp__sched_free(s[r]);
  free(s);
}

static void bcast_run(int p, const mmp__desc_t *d) {
  bcast_run_on(p, d, NULL);
}

static mmp__desc_t desc(const mmp__alg_t *alg, int root, size_t len,
                        size_t seg) {
  mmp__desc_t d;

  memset(&d, 0, sizeof(d));
  d.coll = MMP_COLL_BCAST;
  d.alg = alg;
  d.root = root;
  d.count = len;
  d.esize = 1;
  d.seg = seg;
  if (alg->takes & MMP_OPT_RADIX)
    d.radix = MMP__RADIX_DEFAULT;
  return d;
}

/* The static algorithms that are not made of others. */
static int plain_static(const mmp__alg_t *a) {
  return a->build != NULL && !(a->flags & MMP__ALG_COMPOSITE);
}

/* A row that runs as a part of others. */
static int part(const mmp__alg_t *a) {
  return (a->flags & MMP__ALG_PART) != 0;
}

static void test_bcast_every_algorithm_small_p(void **state) {
  static const size_t lens[] = {0, 1, 1000, 20003};
  int p, i, k, r;
  (void)state;

  for (i = 0; i < mmp__bcast_family.nrows; i++) {
    const mmp__alg_t *alg = mmp__bcast_family.rows[i];
    if (!plain_static(alg))
      continue;
    for (p = 1; p <= 64; p++)
      for (k = 0; k < 4; k++)
        for (r = 0; r < 3; r++) {
          int root = r == 0 ? 0 : r == 1 ? p / 2 : p - 1;
          mmp__desc_t d = desc(alg, root, lens[k], 0);
          if (r > 0 && (k == 0 || p > 24))
            continue; /* other roots at some sizes and p */
          bcast_run(p, &d);
          if (lens[k] > 4096) { /* pipelined in segments */
            d.seg = 4096;
            bcast_run(p, &d);
          }
        }
  }
}

static void test_bcast_knomial_radices(void **state) {
  int p, k;
  (void)state;

  for (k = 2; k <= MMP__RADIX_MAX; k++)
    for (p = 1; p <= 64; p += (p < 20 ? 1 : 7)) {
      mmp__desc_t d = desc(B(knomial), p - 1, 5000, 2048);
      d.radix = k;
      bcast_run(p, &d);
    }
}

/* Every pair of algorithms the hierarchical broadcast allows inside and
 * between groups, at every p to 64, with G from 1 (one group) to p. */
static void test_bcast_hierarchical_every_pair(void **state) {
  int in, out, p;
  (void)state;

  for (in = 0; in < mmp__bcast_family.nrows; in++)
    for (out = 0; out < mmp__bcast_family.nrows; out++) {
      if (!part(mmp__bcast_family.rows[in]) ||
          !part(mmp__bcast_family.rows[out]))
        continue;
      for (p = 1; p <= 64; p++) {
        mmp__desc_t d = desc(B(hierarchical), (in + out + p) % p, 3001, 0);
        int G = 1 + (in * 7 + out * 3 + p) % p;
        d.inner = mmp__bcast_family.rows[in];
        d.outer = mmp__bcast_family.rows[out];
        d.groups = G;
        if (p % 4 == 0)
          d.seg = 1024;
        bcast_run(p, &d);
      }
    }
  /* Neither the k-nomial tree, whose radix is the top-level call's, nor
   * a composite runs as a part. */
  assert_false(part(B(knomial)));
  assert_false(part(B(hierarchical)));
}

/* Layout `kind` of p ranks on nodes, numbered densely in order of their
 * lowest rank as the runtime numbers them: 0 blocks of `k` consecutive
 * ranks (placement by slot), 1 k nodes round robin (by node), 2 uneven
 * (a scrambled assignment to k nodes), 3 one node. */
static void layout(int kind, int p, int k, int *node_of) {
  int *renum = malloc((size_t)(p + k) * sizeof(int)), r, n = 0;

  assert_non_null(renum);
  for (r = 0; r < p + k; r++)
    renum[r] = -1;
  for (r = 0; r < p; r++) {
    node_of[r] = kind == 0   ? r / k
                 : kind == 1 ? r % k
                 : kind == 2 ? (int)((r * 2654435761u) >> 7) % k
                             : 0;
  }
  for (r = 0; r < p; r++) {
    if (renum[node_of[r]] < 0)
      renum[node_of[r]] = n++;
    node_of[r] = renum[node_of[r]];
  }
  free(renum);
}

/* The node broadcast: every inner/outer pair on a few layouts, p to 48
 * on each layout, and nodes of one rank and one node of all. Besides
 * the simulation's checks, data crosses between nodes only to leaders. */
static void test_bcast_node_layouts(void **state) {
  static const int ps[] = {7, 16, 33};
  int node_of[64], in, out, p, kind, k, i;
  (void)state;

  for (in = 0; in < mmp__bcast_family.nrows; in++)
    for (out = 0; out < mmp__bcast_family.nrows; out++) {
      if (!part(mmp__bcast_family.rows[in]) ||
          !part(mmp__bcast_family.rows[out]))
        continue;
      for (i = 0; i < 3; i++)
        for (kind = 0; kind < 3; kind++) {
          mmp__desc_t d = desc(B(node), (in * 5 + out + kind) % ps[i], 3001, 0);
          p = ps[i];
          layout(kind, p, 4, node_of);
          d.inner = mmp__bcast_family.rows[in];
          d.outer = mmp__bcast_family.rows[out];
          d.groups = 1;
          if (kind == 1)
            d.seg = 1024;
          bcast_run_on(p, &d, node_of);
        }
    }
  for (p = 1; p <= 48; p += p < 20 ? 1 : 7)
    for (kind = 0; kind < 4; kind++)
      for (k = 1; k <= 5; k += 2) {
        mmp__desc_t d = desc(B(node), (p * 3 + k) % p, 5000, 0);
        layout(kind, p, k, node_of);
        d.inner = kind == 2 ? B(binomial) : B(pipeline);
        d.outer = k == 3 ? B(scatter_ring) : B(pipeline);
        /* Leaders without groups, in two or three (or more groups than
         * leaders: none). */
        d.groups = 1 + p % 3 < p ? 1 + p % 3 : p;
        d.seg = 2048;
        bcast_run_on(p, &d, node_of);
      }
  /* Without a layout every rank is its node: the outer algorithm alone. */
  {
    mmp__desc_t d = desc(B(node), 3, 4000, 0);
    d.inner = B(binomial);
    d.outer = B(binary);
    d.groups = 1;
    bcast_run(20, &d);
  }
}

/*
 * Leaders in sqrt(N) groups (seed 001's grouping over the node leaders):
 * 64 nodes of 4 ranks, blocks and round robin, every root class. Every
 * rank receives the data exactly once, exactly N - 1 = 63 messages cross
 * between nodes, and with a flat leaders' algorithm the root sends to
 * G - 1 heads and its own run's 7 leaders, not to 63 leaders.
 */
static void test_bcast_node_grouped_leaders(void **state) {
  const mmp__alg_t *outers[4];
  enum { N = 64, L = 4, P = N * L, G = 8 };
  int node_of[P], kind, i, root;
  (void)state;

  outers[0] = B(flat);
  outers[1] = B(binomial);
  outers[2] = B(binary);
  outers[3] = B(chain);
  for (kind = 0; kind < 2; kind++) {
    layout(kind, P, kind == 0 ? L : N, node_of);
    for (i = 0; i < 4; i++)
      for (root = 0; root < P; root += 101) {
        mmp__desc_t d = desc(B(node), root, 3000, 0);
        d.inner = B(binomial);
        d.outer = outers[i];
        d.groups = G;
        bcast_run_on(P, &d, node_of);
        assert_int_equal(node_recv_min, 1);
        assert_int_equal(node_recv_max, 1);
        assert_int_equal(node_cross, N - 1);
        if (outers[i] == B(flat))
          assert_int_equal(node_root_cross, (G - 1) + (N / G - 1));
        /* Without groups the flat leaders' root sends to every leader. */
        d.groups = 1;
        bcast_run_on(P, &d, node_of);
        assert_int_equal(node_cross, N - 1);
        if (outers[i] == B(flat))
          assert_int_equal(node_root_cross, N - 1);
      }
  }
  /* Uneven runs (10 nodes in 4 groups: 3, 3, 2, 2), pipelined. */
  {
    mmp__desc_t d = desc(B(node), 5, 5000, 1024);
    layout(0, 30, 3, node_of);
    d.inner = B(pipeline);
    d.outer = B(pipeline);
    d.groups = 4;
    bcast_run_on(30, &d, node_of);
    assert_true(node_cross >= 9);
  }
}

/* The algorithms at 1000 and 6142 ranks. */
static void test_bcast_large_p(void **state) {
  static const int ps[] = {1000, 6142};
  int i, k, quadratic;
  (void)state;

  for (i = 0; i < 2; i++)
    for (k = 0; k < mmp__bcast_family.nrows; k++) {
      const mmp__alg_t *alg = mmp__bcast_family.rows[k];
      int p = ps[i];
      mmp__desc_t d;
      if (!plain_static(alg))
        continue;
      /* Messages grow as p times the bytes: short messages only. */
      quadratic = alg == B(symmetric) || alg == B(scatter_ring);
      d = desc(alg, p / 3, 1, 0);
      bcast_run(p, &d);
      d = desc(alg, 0, quadratic ? 64 : 4000, quadratic ? 0 : 1024);
      bcast_run(p, &d);
    }
  for (i = 0; i < 2; i++) {
    mmp__desc_t d = desc(B(hierarchical), 17, 4000, 0);
    d.groups = i == 0 ? 32 : 79;
    d.inner = B(binomial);
    d.outer = B(pipeline);
    bcast_run(ps[i], &d);
    d.inner = B(scatter_rd);
    d.outer = B(flat);
    bcast_run(ps[i], &d);
  }
  /* Nodes of 16 and of 37 ranks. */
  for (i = 0; i < 2; i++) {
    int *node_of = malloc((size_t)ps[i] * sizeof(int)), r;
    mmp__desc_t d = desc(B(node), 29, 4000, 1024);
    assert_non_null(node_of);
    for (r = 0; r < ps[i]; r++)
      node_of[r] = r / (i == 0 ? 16 : 37);
    d.inner = B(binomial);
    d.outer = B(pipeline);
    d.groups = 1;
    bcast_run_on(ps[i], &d, node_of);
    free(node_of);
  }
}

/* A schedule that cannot work is caught: the check is no formality. */
static void test_sim_finds_broken_schedules(void **state) {
  mmp__sched_t *s[3];
  mmp__sim_report_t rep;
  size_t hold[2] = {0, 100};
  int root = 0, r;
  (void)state;

  /* Rank 2 waits for a message nobody sends. */
  for (r = 0; r < 3; r++)
    assert_int_equal(mmp__sched_offline(3, r, NULL, 100, &s[r]), 0);
  mmp__sched_send(s[0], 1, 0, 100, 1);
  mmp__sched_recv(s[1], 0, 0, 100, 1);
  mmp__sched_recv(s[2], 0, 0, 100, 1);
  assert_int_equal(mmp__sched_simulate(s, 3, 100, &root, hold, 1, &rep), 0);
  assert_false(rep.ok);
  assert_int_equal(rep.stuck_rank, 2);
  for (r = 0; r < 3; r++)
    mmp__sched_free(s[r]);

  /* Rank 1 forwards before it holds the data, and lengths differ. */
  for (r = 0; r < 3; r++)
    assert_int_equal(mmp__sched_offline(3, r, NULL, 100, &s[r]), 0);
  mmp__sched_send(s[0], 1, 0, 100, 1);
  mmp__sched_recv(s[1], 0, 0, 100, 1);
  mmp__sched_send(s[1], 2, 0, 100, 2); /* no dependency on the receive */
  mmp__sched_recv(s[2], 1, 0, 100, 2);
  assert_int_equal(mmp__sched_simulate(s, 3, 100, &root, hold, 1, &rep), 0);
  assert_false(rep.ok);
  assert_non_null(strstr(rep.what, "before it holds"));
  for (r = 0; r < 3; r++)
    mmp__sched_free(s[r]);

  for (r = 0; r < 2; r++)
    assert_int_equal(mmp__sched_offline(2, r, NULL, 100, &s[r]), 0);
  mmp__sched_send(s[0], 1, 0, 100, 1);
  mmp__sched_recv(s[1], 0, 0, 60, 1);
  assert_int_equal(mmp__sched_simulate(s, 2, 100, &root, hold, 1, &rep), 0);
  assert_false(rep.ok);
  for (r = 0; r < 2; r++)
    mmp__sched_free(s[r]);
}

/* ---- s-to-p ----------------------------------------------------------------
 */

static void s2p_make(mmp__s2p_t *x, int p, int dist, int ns, size_t len) {
  unsigned char *m = calloc((size_t)p, 1);
  size_t *lens = malloc((size_t)p * sizeof(size_t));
  int i;

  assert_non_null(m);
  assert_non_null(lens);
  assert_int_equal(mmp_s2p_dist(dist, ns, p, 0, m), 0);
  for (i = 0; i < p; i++)
    lens[i] = m[i] ? len + (size_t)(i % 3) : MMP_S2P_NONE;
  assert_int_equal(mmp__s2p_init(x, p, 0, 0, lens), 0);
  free(m);
  free(lens);
}

/* `nm`: the model 2-Step chooses its broadcast with (NULL: the binomial
 * tree). */
static void s2p_run(mmp__s2p_t *x, const mmp__alg_t *alg, int dist,
                    const mmp_netmodel_t *nm) {
  int p = x->p, j, r, rc;
  mmp__sched_t **s = calloc((size_t)p, sizeof(*s));
  size_t *hold = malloc(2 * ((size_t)x->ns + 1) * sizeof(size_t));
  mmp__sim_report_t rep;

  assert_non_null(s);
  assert_non_null(hold);
  for (r = 0; r < p; r++)
    assert_int_equal(mmp__sched_offline(p, r, NULL, x->total, &s[r]), 0);
  rc = mmp__s2p_build_all(s, x, alg, nm);
  if (rc != 0)
    fail_msg("%s p %d s %d: %s", alg->name, p, x->ns, mmp_err_name(rc));
  for (j = 0; j < x->ns; j++) {
    hold[2 * j] = x->off[j];
    hold[2 * j + 1] = x->len[j];
  }
  assert_int_equal(
      mmp__sched_simulate(s, p, x->total, x->src, hold, x->ns, &rep), 0);
  if (!rep.ok)
    fail_msg("%s on %s, p %d, s %d, %zu bytes: %s", alg->name,
             mmp_s2p_dist_name(dist), p, x->ns, x->total, rep.what);
  messages_seen += rep.messages;
  for (r = 0; r < p; r++)
    mmp__sched_free(s[r]);
  free(s);
  free(hold);
}

/* Rows with a schedule; a dynamic row (multicast) has none to check
 * offline: mr_s2p and mr_mcast run it. */
static int s2p_scheduled(const mmp__alg_t *alg) {
  return alg->start == NULL;
}

static void test_s2p_dynamic_rows_build_nothing(void **state) {
  mmp__s2p_t x;
  mmp__sched_t *one;
  (void)state;

  assert_false(s2p_scheduled(S(multicast)));
  s2p_make(&x, 4, MMP_S2P_DIST_EQUAL, 2, 10);
  assert_int_equal(mmp__sched_offline(4, 0, NULL, x.total, &one), 0);
  assert_int_equal(mmp__s2p_build(one, &x, S(multicast), &net), MMP_EINVAL);
  assert_int_equal(mmp__s2p_build_all(&one, &x, S(multicast), &net),
                   MMP_EINVAL);
  assert_true(isinf(mmp__s2p_cost(S(multicast), &x, &net, NULL)));
  assert_ptr_not_equal(mmp__s2p_choose(&x, &net, NULL), S(multicast));
  mmp__sched_free(one);
  mmp__s2p_fini(&x);
}

static void test_s2p_every_algorithm_small_p(void **state) {
  static const int dists[] = {MMP_S2P_DIST_ROW, MMP_S2P_DIST_EQUAL,
                              MMP_S2P_DIST_DIAG_R, MMP_S2P_DIST_SQUARE};
  int p, i, d, k;
  (void)state;

  for (i = 0; i < mmp__s2p_family.nrows; i++)
    for (p = 1; p <= 64 && s2p_scheduled(mmp__s2p_family.rows[i]); p++)
      for (d = 0; d < 4; d++)
        for (k = 0; k < 4; k++) {
          int ns = k == 0 ? 1 : k == 1 ? (p + 1) / 2 : k == 2 ? p : 0;
          mmp__s2p_t x;
          if (p > 24 && d > 0 && k != 1)
            continue;
          s2p_make(&x, p, dists[d], ns, k == 3 ? 0 : 37);
          s2p_run(&x, mmp__s2p_family.rows[i], dists[d], &net);
          mmp__s2p_fini(&x);
        }
}

static void test_s2p_large_p(void **state) {
  static const int ps[] = {1000, 6142};
  int i, j, k;
  (void)state;

  for (i = 0; i < 2; i++)
    for (j = 0; j < mmp__s2p_family.nrows; j++)
      for (k = 0; k < 3; k++) {
        const mmp__alg_t *alg = mmp__s2p_family.rows[j];
        int p = ps[i], ns = k == 0 ? 1 : k == 1 ? 64 : p;
        mmp__s2p_t x;
        /* Every source to every rank directly: p^2 messages. */
        if ((ns == p && alg->plan == NULL) || !s2p_scheduled(alg))
          continue;
        s2p_make(&x, p, k == 1 ? MMP_S2P_DIST_EQUAL : MMP_S2P_DIST_ROW, ns,
                 ns == p ? 1 : 10);
        /* 2-Step's broadcast: the binomial tree. */
        s2p_run(&x, alg, MMP_S2P_DIST_ROW, NULL);
        mmp__s2p_fini(&x);
      }
}

/* The plan for every rank at once equals each rank's own, op for op. */
/* The poison note: what a sender writes reads back as its cause and
 * rank; bytes no sender writes poison as a mismatch naming no rank. */
static void test_poison_note_round_trip_and_bad_bytes(void **state) {
  uint64_t n = mmp__sched_note(MMP_EPEERLOST, 7);
  int rank;
  (void)state;

  assert_int_equal(mmp__sched_note_decode(0, 8, &rank), 0);
  assert_int_equal(rank, -1);
  assert_int_equal(mmp__sched_note_decode(n, 8, &rank), MMP_EPEERLOST);
  assert_int_equal(rank, 7);
  /* A rank outside the job is not named. */
  assert_int_equal(mmp__sched_note_decode(n, 7, &rank), MMP_EPEERLOST);
  assert_int_equal(rank, -1);
  assert_int_equal(
      mmp__sched_note_decode(mmp__sched_note(MMP_ETIMEDOUT, -1), 8, &rank),
      MMP_ETIMEDOUT);
  assert_int_equal(rank, -1);
  /* Wrong magic, reserved bits, an unknown cause, no cause. */
  assert_int_equal(mmp__sched_note_decode(n ^ (1ull << 60), 8, &rank),
                   MMP_EMISMATCH);
  assert_int_equal(rank, -1);
  assert_int_equal(mmp__sched_note_decode(n | (1ull << 50), 8, &rank),
                   MMP_EMISMATCH);
  assert_int_equal(mmp__sched_note_decode((n & ~0xffffull) | 999, 8, &rank),
                   MMP_EMISMATCH);
  assert_int_equal(mmp__sched_note_decode(n & ~0xffffull, 8, &rank),
                   MMP_EMISMATCH);
  assert_int_equal(rank, -1);
}

static void test_s2p_all_ranks_plan_is_each_ranks_plan(void **state) {
  int p, j, r, i;
  (void)state;

  for (j = 0; j < mmp__s2p_family.nrows; j++)
    for (p = 1; p <= 20 && s2p_scheduled(mmp__s2p_family.rows[j]); p++) {
      const mmp__alg_t *alg = mmp__s2p_family.rows[j];
      mmp__s2p_t x;
      mmp__sched_t **all = calloc((size_t)p, sizeof(*all));
      s2p_make(&x, p, MMP_S2P_DIST_DIAG_R, (p + 2) / 3, 11);
      for (r = 0; r < p; r++)
        assert_int_equal(mmp__sched_offline(p, r, NULL, x.total, &all[r]), 0);
      assert_int_equal(mmp__s2p_build_all(all, &x, alg, &net), 0);
      for (r = 0; r < p; r++) {
        mmp__sched_t *one;
        assert_int_equal(mmp__sched_offline(p, r, NULL, x.total, &one), 0);
        x.me = r;
        assert_int_equal(mmp__s2p_build(one, &x, alg, &net), 0);
        assert_int_equal(one->nops, all[r]->nops);
        assert_int_equal(one->nedges, all[r]->nedges);
        for (i = 0; i < one->nops; i++) {
          const mmp__sop_t *a = &one->ops[i], *b = &all[r]->ops[i];
          assert_int_equal(a->kind, b->kind);
          assert_int_equal(a->peer, b->peer);
          assert_int_equal(a->phase, b->phase);
          assert_int_equal(a->len, b->len);
          assert_int_equal(a->nregs, b->nregs);
          if (a->nregs > 0)
            assert_memory_equal(a->regs, b->regs,
                                (size_t)a->nregs * 2 * sizeof(size_t));
        }
        assert_memory_equal(one->edges, all[r]->edges,
                            (size_t)one->nedges * sizeof(one->edges[0]));
        mmp__sched_free(one);
      }
      for (r = 0; r < p; r++)
        mmp__sched_free(all[r]);
      free(all);
      mmp__s2p_fini(&x);
    }
}

static int report(void **state) {
  (void)state;
  printf("symbolic runs matched %ld messages\n", messages_seen);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_poison_note_round_trip_and_bad_bytes),
      cmocka_unit_test(test_sim_finds_broken_schedules),
      cmocka_unit_test(test_bcast_every_algorithm_small_p),
      cmocka_unit_test(test_bcast_knomial_radices),
      cmocka_unit_test(test_bcast_hierarchical_every_pair),
      cmocka_unit_test(test_bcast_node_layouts),
      cmocka_unit_test(test_bcast_node_grouped_leaders),
      cmocka_unit_test(test_bcast_large_p),
      cmocka_unit_test(test_s2p_dynamic_rows_build_nothing),
      cmocka_unit_test(test_s2p_every_algorithm_small_p),
      cmocka_unit_test(test_s2p_all_ranks_plan_is_each_ranks_plan),
      cmocka_unit_test(test_s2p_large_p),
  };
  return cmocka_run_group_tests(tests, NULL, report);
}
