/* SPDX-License-Identifier: MIT */
/*
 * Measuring the network model the automatic choices use: a message of m
 * bytes costs alpha + m beta, and an idle link passes its first `burst`
 * bytes at once.
 *
 * The world's model is measured in mmp_init, by every rank at once, and
 * every communicator made from it inherits it, so that no collective's
 * start waits for the others to measure (a non-blocking one may start on
 * each rank at a different point); mmp_comm_netmodel measures it where
 * none was (MMP_INIT_EXTERNAL_PROGRESS) and mmp_comm_netmodel_measure
 * anew, both collectively. Without a measurement the choices use fixed
 * figures. alpha is the time per round of a
 * 1-byte ring through all ranks (so it includes waiting for a CPU where
 * ranks share one), beta the slope between 64 KiB and 1 MiB ping-pongs
 * within pairs of ranks (which cancels a shaper's or switch's burst
 * allowance). Where some ranks share a node and others do not, the
 * same is measured twice: between nodes (a ring of one leader per node,
 * a ping-pong between two leaders) and within them (a ring in every node
 * at once, a ping-pong between two ranks of a node). Rank 0 broadcasts
 * its figures so that every rank decides alike; communicators made from
 * this one inherit them. A saved profile
 * (MINIMP_NET_ALPHA_US, MINIMP_NET_BETA_NS, e.g. from `minimp-bench
 * calibrate`) skips the measurement. docs/design/auto.md ("The network
 * model") says what is measured when, and why each choice was made.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/core/call.h"
#include "collectives/core/state.h"
#include "collectives/patterns/tree.h"
#include "collectives/select/netmodel.h"

#define RING_RUNS 5
#define RING_ROUNDS 10
#define BETA_SMALL 65536u
#define BETA_LARGE (1u << 20)
#define GAP_MSGS 16

/* Posts a transfer in the collective context (a send when `out`), its
 * request on the heap, so that mmp__wait_watch can leave it behind. */
static int post(mmp__engine_t *e, mmp_comm_t *c, int out, void *b, size_t n,
                int peer, int tag, unsigned mode, mmp_request_t **rp) {
  mmp_request_t *r = calloc(1, sizeof(*r));
  int rc;

  *rp = NULL;
  if (r == NULL)
    return MMP_ENOMEM;
  rc = out ? mmp__isend(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag,
                        mode, r)
           : mmp__irecv(e, c, c->ctx + 1, b, n, mmp__comm_world(c, peer), tag,
                        r);
  if (rc != 0)
    free(r);
  else
    *rp = r;
  return rc;
}

/* Waits for a posted transfer whose buffer is *own (malloc'd). Every wait
 * of the measurement gives up when a rank of `c` is lost: the others give
 * up on that loss too and stop sending, so a partner's message may never
 * come. A transfer left under way keeps *own (and sets it to NULL). */
static int finish(mmp__engine_t *e, mmp_comm_t *c, mmp_request_t **rp,
                  void **own) {
  int rc = mmp__wait_watch(e, c, rp, own);

  free(*rp); /* NULL if left under way */
  *rp = NULL;
  return rc;
}

/* One blocking transfer of `n` bytes at b: a send when `out`. With `own`
 * NULL it goes through a copy; else b is *own, which a transfer left
 * under way takes (finish). */
static int xfer(mmp__engine_t *e, mmp_comm_t *c, int out, void *b, size_t n,
                int peer, int tag, void **own) {
  void *tmp = NULL, **buf = own;
  mmp_request_t *r;
  int rc;

  if (own == NULL) {
    if ((tmp = calloc(n ? n : 1, 1)) == NULL)
      return MMP_ENOMEM;
    if (out)
      memcpy(tmp, b, n);
    buf = &tmp;
  }
  rc = post(e, c, out, *buf, n, peer, tag, MMP_SEND_AUTO, &r);
  if (rc == 0)
    rc = finish(e, c, &r, buf);
  if (rc == 0 && !out && own == NULL)
    memcpy(b, tmp, n);
  free(tmp);
  return rc;
}

/* A barrier over `c` that gives up, as the transfers do, when a rank of
 * `c` is lost. */
static int barrier(mmp_comm_t *c) {
  mmp_request_t *r;
  mmp__group_t all;
  mmp__sched_t *s;
  int rc = mmp__sched_new(mmp__eng, c, NULL, 0, MMP_SEND_EAGER, &s);

  if (rc != 0)
    return rc;
  if ((rc = mmp__sched_group_all(s, &all)) != 0 ||
      (rc = mmp__dissemination(s, &all)) < 0) {
    mmp__sched_free(s);
    return rc;
  }
  rc = mmp__sched_start(s, &r);
  return rc != 0 ? rc : mmp__sched_wait_watch(&r);
}

/* A dissemination barrier among the ring's members alone (`ring`, n
 * communicator ranks, this one at index me), by point-to-point messages
 * with `tag`, which no other barrier of the measurement uses between the
 * same two ranks: the ranks outside the ring have nothing to wait for,
 * and a barrier of all ranks across hosts cost more than the rounds it
 * framed (docs/algorithms.md, "The model"). Each member sends at most
 * one message to each other per barrier, in order, so consecutive
 * barriers cannot take each other's. */
static int ring_barrier(mmp__engine_t *e, mmp_comm_t *c, int tag,
                        const int *ring, int n, int me) {
  void *in = calloc(1, 1), *out = calloc(1, 1);
  int k, rc = in != NULL && out != NULL ? 0 : MMP_ENOMEM;

  for (k = 1; k < n && rc == 0; k <<= 1) {
    mmp_request_t *r = NULL;
    /* Eager, as the ring's own sends: every member sends before it
     * receives, which a rendezvous (MINIMP_EAGER_LIMIT=0) would block. */
    rc = post(e, c, 1, out, 1, ring[(me + k) % n], tag, MMP_SEND_EAGER, &r);
    if (rc == 0)
      rc = finish(e, c, &r, &out);
    if (rc == 0)
      rc = xfer(e, c, 0, in, 1, ring[(me - k + n) % n], tag, &in);
  }
  free(in);
  free(out);
  return rc;
}

/*
 * alpha: seconds per round of a ring in which every rank passes one byte
 * to the next and waits for one from the previous, all at once. Every
 * rank is busy in every round, as in a collective's steps, so on a
 * machine whose CPUs are shared by several ranks the figure includes
 * waiting for a CPU; elsewhere it is one message's latency.
 *
 * RING_RUNS short runs of RING_ROUNDS rounds, each after a barrier: every
 * rank keeps its fastest run, since whatever else the machine does only
 * adds time, in bursts that a short run can miss; the figure is the
 * slowest rank's (collected by the caller), since a rank can finish its
 * rounds early on messages its predecessor sent ahead (up to p - 1 rounds
 * ahead round the ring). The ring's waits sleep while it is timed, as the
 * waits of the broadcasts whose cost formulas were checked against it do
 * (docs/design/progress.md).
 *
 * The ring is `ring` (n communicator ranks, this one at index me; -1: not
 * in it, and *alpha is 0); only its members join its barriers
 * (ring_barrier, with `btag`).
 */
static int ring_alpha(mmp__engine_t *e, mmp_comm_t *c, int tag, int btag,
                      const int *ring, int n, int me, double *alpha) {
  int next, prev, i, rc, was;
  void *in, *out;
  double t0 = 0;

  *alpha = 0; /* not in a ring: nothing to report */
  if (me < 0 || n < 2)
    return 0;
  *alpha = INFINITY;
  next = ring[(me + 1) % n];
  prev = ring[(me + n - 1) % n];
  in = calloc(1, 1);
  out = calloc(1, 1);
  rc = in != NULL && out != NULL ? 0 : MMP_ENOMEM;
  for (i = 0; i < RING_RUNS * RING_ROUNDS && rc == 0; i++) {
    mmp_request_t *r[2] = {NULL, NULL};
    if (i % RING_ROUNDS == 0) {
      if ((rc = ring_barrier(e, c, btag, ring, n, me)) != 0)
        break;
      t0 = mmp_wtime();
    }
    was = mmp__progress_sleepy(1);
    rc = post(e, c, 0, in, 1, prev, tag, 0, &r[0]);
    if (rc == 0)
      rc = post(e, c, 1, out, 1, next, tag, MMP_SEND_EAGER, &r[1]);
    if (rc == 0)
      rc = finish(e, c, &r[1], &out);
    if (rc != 0 && r[0] != NULL) {
      /* Nothing more comes for it once this rank stops. */
      mmp__lock(e);
      mmp__cancel_locked(e, r[0]);
      mmp__unlock(e);
    }
    if (r[0] != NULL) {
      int r0 = finish(e, c, &r[0], &in);
      rc = rc != 0 ? rc : r0;
    }
    mmp__progress_sleepy(was);
    if (rc == 0 && i % RING_ROUNDS == RING_ROUNDS - 1)
      *alpha = fmin(*alpha, (mmp_wtime() - t0) / RING_ROUNDS);
  }
  free(in);
  free(out);
  return rc;
}

/* The largest of every rank's `n` figures, each on its own, at rank 0
 * (point-to-point, `tag`): the slowest rank's alphas. */
static int slowest(mmp__engine_t *e, mmp_comm_t *c, int tag, double *v, int n) {
  double got[2];
  int i, k, rc = 0;

  assert(n <= 2);
  if (c->rank != 0)
    return xfer(e, c, 1, v, (size_t)n * sizeof(*v), 0, tag, NULL);
  for (i = 1; i < c->size && rc == 0; i++) {
    rc = xfer(e, c, 0, got, (size_t)n * sizeof(*v), i, tag, NULL);
    for (k = 0; k < n && rc == 0; k++)
      v[k] = fmax(v[k], got[k]);
  }
  return rc;
}

/* Best half round trip of `n`-byte ping-pongs with `peer` (the lower rank
 * leads). */
static int pingpong(mmp__engine_t *e, mmp_comm_t *c, int peer, int tag,
                    size_t n, int reps, double *best) {
  void *b = calloc(n, 1);
  int lead = c->rank < peer, i, rc = b == NULL ? MMP_ENOMEM : 0;

  *best = INFINITY;
  for (i = 0; i < reps && rc == 0; i++) {
    double t0 = mmp_wtime();
    rc = xfer(e, c, lead, b, n, peer, tag, &b);
    if (rc == 0)
      rc = xfer(e, c, !lead, b, n, peer, tag, &b);
    if ((mmp_wtime() - t0) / 2 < *best)
      *best = (mmp_wtime() - t0) / 2;
  }
  free(b);
  return rc;
}

/*
 * beta: the slope between ping-pongs of BETA_SMALL and BETA_LARGE bytes,
 * which cancels both the latency and any burst allowance (a shaper's
 * bucket, a switch's buffer) the two sizes enjoy alike; a ping-pong that
 * fits a 64 KB bucket alone would read many times the sustained rate.
 */
void mmp__net_beta_burst(double one, double small, double large, double *beta,
                         double *burst) {
  *beta = (large - small) / (double)(BETA_LARGE - BETA_SMALL);
  /* Where scheduling noise swamps the difference (ranks sharing CPUs on
   * loopback), fall back towards the plain rate of the large one. */
  if (*beta < 0.5 * large / BETA_LARGE)
    *beta = 0.5 * large / BETA_LARGE;
  /* What the large one did not pay for at that rate went through at once:
   * the burst allowance (about 0 on a plain link). */
  *burst = BETA_LARGE - (large - one) / *beta;
  /* Only if the small one really went through at once: in well under
   * half its time at that rate, which a plain link cannot beat (a quarter
   * was exceeded under CPU load; docs/design/auto.md). Then the burst is
   * at least its size, what headers cost the estimate notwithstanding. */
  if (small - one > 0.5 * BETA_SMALL * *beta)
    *burst = 0;
  else if (*burst < BETA_SMALL)
    *burst = BETA_SMALL;
}

/*
 * The gap: what one more message costs when it follows another on the
 * link at once, as a pipeline's segments do. The lower rank sends
 * GAP_MSGS one-byte messages back to back and the other answers the last
 * with one byte; less the round trip (2 `one`), the best of a few such
 * streams is GAP_MSGS - 1 gaps. Latency (alpha) is paid once per
 * stream, not per message, which is why a pipeline's segments are priced
 * by this and not by alpha (docs/design/auto.md, "The network model").
 */
static int stream_gap(mmp__engine_t *e, mmp_comm_t *c, int peer, int tag,
                      double one, double *gap) {
  uint8_t b = 0;
  int lead = c->rank < peer, i, k, rc = 0;
  double best = INFINITY;

  for (i = 0; i < 5 && rc == 0; i++) {
    double t0 = mmp_wtime();
    for (k = 0; k < GAP_MSGS && rc == 0; k++)
      rc = xfer(e, c, lead, &b, 1, peer, tag, NULL);
    if (rc == 0)
      rc = xfer(e, c, !lead, &b, 1, peer, tag, NULL);
    best = fmin(best, mmp_wtime() - t0);
  }
  *gap = fmax((best - 2 * one) / (GAP_MSGS - 1), 0);
  return rc;
}

/* The large ping-pong once between nodes, twice within one: between
 * nodes the link bounds it, so it reads alike every time and a second run
 * only costs (figures: docs/data/history/auto.md); within a node the CPUs
 * bound it and it varies. Both partners know where the other runs, so
 * they agree on the count. */
static int pair_beta(mmp__engine_t *e, mmp_comm_t *c, int peer, int tag,
                     double *beta, double *burst, double *gap) {
  int large_reps =
      mmp__comm_node_of(c, c->rank) != mmp__comm_node_of(c, peer) ? 1 : 2;
  double one, small, large;
  int rc = pingpong(e, c, peer, tag, 1, 5, &one);

  if (rc == 0)
    rc = pingpong(e, c, peer, tag, BETA_SMALL, 5, &small);
  if (rc == 0)
    rc = pingpong(e, c, peer, tag, BETA_LARGE, large_reps, &large);
  if (rc == 0)
    rc = stream_gap(e, c, peer, tag, one, gap);
  if (rc != 0)
    return rc;
  MMP__LOG(MMP__LOG_DEBUG,
           "pair_beta: half round trips 1 B %.1f us, %u B %.1f us, %u B %.1f "
           "us; gap %.1f us",
           one * 1e6, BETA_SMALL, small * 1e6, BETA_LARGE, large * 1e6,
           *gap * 1e6);
  mmp__net_beta_burst(one, small, large, beta, burst);
  return 0;
}

/* The figures rank 0 shares: alpha, beta, burst, shared CPUs, gamma,
 * alpha and beta within a node, and the gap. */
#define MODEL_FIGURES 8

/* Rank 0's figures to every rank, with the binomial tree. */
static int share(mmp__engine_t *e, mmp_comm_t *comm,
                 double model[MODEL_FIGURES]) {
  mmp__arg_t a;
  mmp_request_t *r;
  mmp__sched_t *s;
  int rc = mmp__sched_new(e, comm, model, MODEL_FIGURES * sizeof(double),
                          MMP_SEND_AUTO, &s);

  if (rc != 0)
    return rc;
  memset(&a, 0, sizeof(a));
  a.len = MODEL_FIGURES * sizeof(double);
  a.dep = -1;
  a.phase = 1;
  a.radix = 2;
  rc = mmp__bcast_over_all(s, mmp__tree_knomial, &a);
  if (rc < 0) {
    mmp__sched_free(s);
    return rc;
  }
  rc = mmp__sched_start(s, &r);
  return rc != 0 ? rc : mmp__sched_wait_watch(&r);
}

/* Where ranks sit: how many nodes, the most ranks on one, and this rank's
 * two rings (its node's members, and one leader per node: each node's
 * lowest rank) with its index in each, or -1. */
typedef struct layout_s {
  int nodes, node_size;
  int *node_ring, n_node, me_node;
  int *lead_ring, me_lead;
} layout_t;

static int layout_of(const mmp_comm_t *c, layout_t *l) {
  int p = c->size, r, *count;

  memset(l, 0, sizeof(*l));
  l->nodes = mmp__comm_node_count(c);
  count = calloc((size_t)l->nodes, sizeof(int));
  l->node_ring = malloc((size_t)p * sizeof(int));
  l->lead_ring = malloc((size_t)l->nodes * sizeof(int));
  if (count == NULL || l->node_ring == NULL || l->lead_ring == NULL) {
    free(count);
    free(l->node_ring);
    free(l->lead_ring);
    return MMP_ENOMEM;
  }
  l->me_node = l->me_lead = -1;
  for (r = 0; r < p; r++) {
    int k = mmp__comm_node_of(c, r);
    if (count[k]++ == 0) {
      if (r == c->rank)
        l->me_lead = k;
      l->lead_ring[k] = r; /* nodes are numbered by their lowest rank */
    }
    if (k == mmp__comm_node_of(c, c->rank)) {
      if (r == c->rank)
        l->me_node = l->n_node;
      l->node_ring[l->n_node++] = r;
    }
    l->node_size = count[k] > l->node_size ? count[k] : l->node_size;
  }
  free(count);
  return 0;
}

static void layout_free(layout_t *l) {
  free(l->node_ring);
  free(l->lead_ring);
}

/* The first rank of the first node that holds two, and its second: the
 * pair that measures beta within a node. */
static void node_pair(const mmp_comm_t *c, int *a, int *b) {
  int r, q;

  *a = *b = -1;
  for (r = 0; r < c->size && *b < 0; r++)
    for (q = 0; q < r; q++)
      if (mmp__comm_node_of(c, q) == mmp__comm_node_of(c, r)) {
        *a = q;
        *b = r;
        break;
      }
}

/*
 * Where some ranks share a node and others do not: alpha by a ring of the
 * node leaders and within a node by a ring in every node at once; beta
 * and the burst between rank 0 and the second node's leader, and within a
 * node between the first two ranks of one (node_pair), which send their
 * figure to rank 0. Fills model[0..2] (between nodes) and model[5..6]
 * (within) at rank 0.
 */
static int measure_nodes(mmp__engine_t *e, mmp_comm_t *comm, uint32_t seq,
                         const layout_t *l, double model[MODEL_FIGURES]) {
  double al[2], beta = 0, burst = 0, gap = 0, nb[2] = {0, 0}, nb_gap;
  int rc, a, b;

  /* The nodes' rings run at once: one barrier of all ranks starts them
   * together, and then each synchronises its own members. */
  rc = barrier(comm);
  if (rc == 0)
    rc = ring_alpha(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 4),
                    MMP__COLL_TAG(seq, MMP__PHASE_SYS + 7), l->node_ring,
                    l->n_node, l->me_node, &al[1]);
  if (rc == 0)
    rc = ring_alpha(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 1),
                    MMP__COLL_TAG(seq, MMP__PHASE_SYS + 8), l->lead_ring,
                    l->nodes, l->me_lead, &al[0]);
  if (rc == 0 && (comm->rank == 0 || comm->rank == l->lead_ring[1]))
    rc = pair_beta(e, comm, comm->rank == 0 ? l->lead_ring[1] : 0,
                   MMP__COLL_TAG(seq, MMP__PHASE_SYS + 2), &beta, &burst, &gap);
  node_pair(comm, &a, &b);
  assert(a >= 0 && b > a);
  if (rc == 0 && (comm->rank == a || comm->rank == b))
    rc = pair_beta(e, comm, comm->rank == a ? b : a,
                   MMP__COLL_TAG(seq, MMP__PHASE_SYS + 5), &nb[0], &nb[1],
                   &nb_gap);
  /* The pair's lower rank tells rank 0, unless it is rank 0. */
  if (rc == 0 && a != 0 && (comm->rank == a || comm->rank == 0))
    rc = xfer(e, comm, comm->rank == a, nb, sizeof(nb), comm->rank == a ? 0 : a,
              MMP__COLL_TAG(seq, MMP__PHASE_SYS + 6), NULL);
  /* Last, so that no pair waits for rank 0 to hear from every rank. */
  if (rc == 0)
    rc = slowest(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 3), al, 2);
  if (rc == 0 && comm->rank == 0) {
    model[0] = al[0];
    model[1] = beta;
    model[2] = burst;
    model[5] = al[1];
    model[6] = nb[0];
    model[7] = gap;
  }
  return rc;
}

/* The whole measurement, collective over `comm`. */
static int measure(mmp_comm_t *comm, mmp_netmodel_t *out) {
  mmp__engine_t *e = mmp__eng;
  double model[MODEL_FIGURES] = {0}, large = 0, burst = 0, gap = 0;
  mmp__rt_facts_t facts;
  layout_t l;
  uint32_t seq;
  int rc, mixed;

  if ((rc = layout_of(comm, &l)) != 0)
    return rc;
  mmp__lock(e);
  seq = comm->coll_seq++;
  mmp__unlock(e);
  mixed = l.nodes > 1 && l.nodes < comm->size;
  if (mixed) {
    rc = measure_nodes(e, comm, seq, &l, model);
  } else {
    /* One kind of link: a ring through all ranks, then ranks pair up
     * (0-1, 2-3, ...) and all measure at once, so the links are as busy
     * as in a collective. */
    int me = comm->rank;
    int *all = malloc((size_t)comm->size * sizeof(int)), r;
    if (all == NULL)
      rc = MMP_ENOMEM;
    for (r = 0; r < comm->size && all != NULL; r++)
      all[r] = r;
    if (rc == 0)
      rc = ring_alpha(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 1),
                      MMP__COLL_TAG(seq, MMP__PHASE_SYS + 7), all, comm->size,
                      me, &model[0]);
    free(all);
    /* Every pair starts as soon as its ring is done, rank 0's too, and
     * only then does rank 0 hear from every rank. */
    if (rc == 0 && (me ^ 1) < comm->size)
      rc = pair_beta(e, comm, me ^ 1, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 2),
                     &large, &burst, &gap);
    if (rc == 0)
      rc = slowest(e, comm, MMP__COLL_TAG(seq, MMP__PHASE_SYS + 3), model, 1);
    model[1] = large;
    model[2] = burst;
    model[7] = gap;
    model[5] = model[0];
    model[6] = large;
  }
  layout_free(&l);
  if (rc == 0 && comm->rank == 0) {
    model[0] = model[0] > 1e-7 ? model[0] : 1e-7;
    model[1] = model[1] > 1e-12 ? model[1] : 1e-12;
    model[5] = model[5] > 1e-7 ? model[5] : 1e-7;
    model[6] = model[6] > 1e-12 ? model[6] : 1e-12;
    /* Measured, so never 0 (unknown); never above a whole message. */
    model[7] = fmin(fmax(model[7], 1e-7), model[0]);
    mmp__lock(e);
    mmp__rt_facts(e, &facts);
    model[3] = facts.cpus_shared;
    mmp__unlock(e);
    /* The reductions' arithmetic (coll_gamma.c). */
    model[4] = mmp__measure_gamma();
  }
  /* Every rank must decide alike: rank 0's numbers are the numbers. */
  if (rc == 0)
    rc = share(e, comm, model);
  if (rc != 0)
    return rc;
  out->alpha = model[0];
  out->beta = model[1];
  out->burst = model[2];
  out->shared_cpus = model[3] != 0;
  out->gamma = model[4];
  out->alpha_node = model[5];
  out->beta_node = model[6];
  out->gap = model[7];
  MMP__LOG(MMP__LOG_DEBUG,
           "network model: alpha %.1f us, beta %.3f ns/byte, burst %.0f bytes"
           ", gap %.1f us%s; within a node alpha %.1f us, beta %.3f ns/byte",
           model[0] * 1e6, model[1] * 1e9, model[2], model[7] * 1e6,
           out->shared_cpus ? ", CPUs shared" : "", model[5] * 1e6,
           model[6] * 1e9);
  return 0;
}

/* gamma where nothing is measured: the same on every rank. */
static double gamma_profile(const mmp__coll_config_t *cc) {
  return (cc->net_gamma_ns >= 0 ? cc->net_gamma_ns : MMP__GAMMA_DEFAULT_NS) *
         1e-9;
}

/*
 * The model as `comm` sees it: its own layout (nodes, node_size), and
 * where all its ranks share one node the links within a node as its only
 * links (a communicator made from a job that spans nodes inherits both
 * kinds of figures).
 */
static void fit_layout(const mmp_comm_t *comm, mmp_netmodel_t *nm) {
  int n = mmp__comm_node_count(comm), r, most = 1;

  if (n < comm->size) {
    int *count = calloc((size_t)n, sizeof(int));
    for (r = 0; r < comm->size && count != NULL; r++) {
      int k = mmp__comm_node_of(comm, r);
      most = ++count[k] > most ? count[k] : most;
    }
    if (count == NULL) /* priced as one rank per node: still correct */
      n = comm->size;
    free(count);
  }
  nm->nodes = n;
  nm->node_size = n < comm->size ? most : 1;
  if (n == 1 && comm->size > 1 &&
      (nm->alpha_node != nm->alpha || nm->beta_node != nm->beta)) {
    nm->alpha = nm->alpha_node;
    nm->beta = nm->beta_node;
    nm->burst = 0;
    nm->gap = 0; /* measured between nodes: unknown here */
  }
}

/* The saved profile's figures (MINIMP_NET_*). */
static void profile(const mmp__coll_config_t *cc, mmp_netmodel_t *out) {
  out->alpha = cc->net_alpha_us * 1e-6;
  out->beta = cc->net_beta_ns * 1e-9;
  out->burst = cc->net_burst;
  out->shared_cpus = cc->net_shared;
  out->gamma = gamma_profile(cc);
  out->alpha_node =
      cc->net_node_alpha_us >= 0 ? cc->net_node_alpha_us * 1e-6 : out->alpha;
  out->beta_node =
      cc->net_node_beta_ns >= 0 ? cc->net_node_beta_ns * 1e-9 : out->beta;
  out->gap = cc->net_gap_us > 0 ? fmin(cc->net_gap_us * 1e-6, out->alpha) : 0;
}

/* The figures where nothing was measured: fixed, so that every rank
 * decides alike without asking the others. */
static void fallback(const mmp__coll_config_t *cc, int size,
                     mmp_netmodel_t *out) {
  out->alpha = (size < 2 ? 1 : MMP__NET_DEFAULT_ALPHA_US) * 1e-6;
  out->beta = (size < 2 ? 0.1 : MMP__NET_DEFAULT_BETA_NS) * 1e-9;
  out->alpha_node = (size < 2 ? 1 : MMP__NET_DEFAULT_NODE_ALPHA_US) * 1e-6;
  out->beta_node = (size < 2 ? 0.1 : MMP__NET_DEFAULT_NODE_BETA_NS) * 1e-9;
  out->burst = 0;
  out->shared_cpus = 0;
  out->gap = 0;
  out->gamma = gamma_profile(cc);
}

/* Measures `comm`'s model with all its ranks and keeps it: AUTO's cached
 * decisions of the previous figures are stale. Lock NOT held. */
static int measure_keep(mmp_comm_t *comm, mmp__coll_state_t *st,
                        mmp_netmodel_t *out) {
  int rc = measure(comm, out);

  if (rc != 0)
    return rc;
  mmp__lock(mmp__eng);
  st->net = *out;
  st->net_known = 1;
  st->net_gen++;
  mmp__unlock(mmp__eng);
  return 0;
}

/* How fetch finds the model where `comm` has none: */
enum {
  MODEL_LOCAL,   /* the fixed figures, asking nobody */
  MODEL_MEASURE, /* measured now, by every rank */
  MODEL_AGAIN,   /* measured now even if known, by every rank */
};

static int fetch(mmp_comm_t *comm, int how, mmp_netmodel_t *out) {
  mmp__rt_facts_t facts;
  mmp__coll_state_t *st;
  int rc = 0, known;

  MMP__ASSERT_UNLOCKED(mmp__eng); /* measuring waits on the network */
  mmp__rt_facts(mmp__eng, &facts);
  if (facts.coll->net_profile) {
    profile(facts.coll, out);
  } else if ((st = mmp__coll_state(comm)) == NULL) {
    return MMP_ENOMEM;
  } else {
    mmp__lock(mmp__eng);
    known = st->net_known;
    *out = st->net;
    mmp__unlock(mmp__eng);
    if (comm->size >= 2 &&
        (how == MODEL_AGAIN || (how == MODEL_MEASURE && !known)))
      rc = measure_keep(comm, st, out);
    else if (!known)
      fallback(facts.coll, comm->size, out);
  }
  if (rc == 0)
    fit_layout(comm, out);
  return rc;
}

int mmp__netmodel_get(mmp_comm_t *comm, mmp_netmodel_t *out) {
  return fetch(comm, MODEL_LOCAL, out);
}

void mmp__netmodel_world_up(mmp_comm_t *world) {
  mmp_netmodel_t nm;
  int rc;

  if ((rc = fetch(world, MODEL_MEASURE, &nm)) != 0)
    MMP__LOG(MMP__LOG_WARN,
             "the network model could not be measured at init (%s): "
             "automatic choices use fixed figures until mmp_comm_netmodel "
             "measures it",
             mmp_strerror(rc));
}

int mmp_comm_netmodel(mmp_comm_t *comm, mmp_netmodel_t *out) {
  int rc;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  return fetch(comm, MODEL_MEASURE, out);
}

int mmp_comm_netmodel_measure(mmp_comm_t *comm, mmp_netmodel_t *out) {
  int rc;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  return fetch(comm, MODEL_AGAIN, out);
}
