/* SPDX-License-Identifier: MIT */
/*
 * A rank of test_kill_coll: runs every algorithm of a set of collectives
 * at once (non-blocking, one request each), then again while one rank
 * (the victim) dies or stops, and prints every survivor's result per
 * algorithm for the test to judge.
 *
 *   kill_coll SET SIGNAL   SET: bcast, s2p, coll, exchange, netmodel or
 *                          barrier;
 *                          SIGNAL: kill or stop
 *
 * Round 1 runs every item on every rank and must succeed (the items are
 * valid). After a barrier the victim, rank 1, raises SIGNAL at once and
 * the survivors start round 2, so they are inside every algorithm when it
 * goes; its part of round 2 never comes. Each survivor prints one line per
 * item, "kc ITEM rank R rc NAME s SECONDS" (seconds since round 2 began),
 * and rank 0 first prints "kc plan ITEM EXPECT" per item:
 *  - all: every survivor needs the victim's data, so every one must fail;
 *  - root: the item's root (rank 0) needs it and must fail;
 *  - any: survivors may also succeed (the victim is a leaf to them).
 * The sets `exchange` and `netmodel` each hold a collective step that
 * gives up on any loss in its communicator: s-to-p's length exchange
 * (mmp_bcast_s2p with lens NULL, the collective's first step), and the
 * network model's measurement (mmp_comm_netmodel_measure, on a
 * communicator of its own per round), which runs inside a blocking call.
 * The
 * set `barrier` holds the blocking mmp_barrier, whose rounds run outside
 * the schedule executor.
 * Survivors ignore SIGTERM: minimprun stops the job once the victim is
 * gone, and they must still report; its SIGKILL 1.5 s later ends them.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"

#define VICTIM 1
#define MAXI 64
#define COUNT 96 /* int32 elements per rank and block: several segments */

typedef struct item_s {
  char name[48];
  const char *expect;
  int kind; /* 0 bcast, 1 s2p, 2 coll, 3 barrier; blocking: 4 s2p with its
               length exchange, 5 the network model, 6 mmp_barrier */
  const char *alg;
  int coll, root;
  void *a, *b; /* buffers, sized for the largest collective */
} item_t;

static item_t items[MAXI];
static int nitems, me, p;
static size_t s2p_lens[64];
static mmp_comm_t *model_comm[2]; /* the network model's, per round */

static void add(int kind, int coll, const char *alg, int root, const char *name,
                const char *expect) {
  item_t *it = &items[nitems++];
  size_t big = (size_t)COUNT * 4 * (size_t)p * 2;

  if (nitems > MAXI) {
    fprintf(stderr, "kill_coll: too many items\n");
    exit(70);
  }
  snprintf(it->name, sizeof(it->name), "%s", name);
  it->expect = expect;
  it->kind = kind;
  it->coll = coll;
  it->alg = alg;
  it->root = root;
  it->a = calloc(1, big);
  it->b = calloc(1, big);
  if (it->a == NULL || it->b == NULL)
    exit(71);
  memset(it->a, me + 1, big);
}

static void plan(const char *set) {
  mmp_alg_info_t a;
  char name[48];
  int i, c;

  /* Every algorithm here runs at once, non-blocking: the shm rows serve
   * blocking calls only (the set 'barrier' runs the barrier's: mmp_barrier
   * on one host). */
  if (strcmp(set, "bcast") == 0) {
    for (i = 0; mmp_coll_algs(MMP_COLL_BCAST, i, &a) == 0; i++) {
      if (strcmp(a.name, "shm") == 0)
        continue;
      snprintf(name, sizeof(name), "bcast:%s:root1", a.name);
      add(0, 0, a.name, VICTIM, name, "all");
      snprintf(name, sizeof(name), "bcast:%s:root0", a.name);
      add(0, 0, a.name, 0, name, "any");
    }
  } else if (strcmp(set, "s2p") == 0) {
    for (i = 0; mmp_coll_algs(MMP_COLL_S2P, i, &a) == 0; i++) {
      snprintf(name, sizeof(name), "s2p:%s", a.name);
      add(1, 0, a.name, 0, name, "all");
    }
  } else if (strcmp(set, "coll") == 0) {
    for (c = MMP_COLL_ALLREDUCE; c <= MMP_COLL_ALLTOALL; c++)
      for (i = 0; mmp_coll_algs(c, i, &a) == 0; i++) {
        if (strcmp(a.name, "shm") == 0)
          continue;
        /* Reduce and gather need the victim only at their root (0);
         * scatter's root is the victim, whom every rank needs. */
        int rooted = c == MMP_COLL_REDUCE || c == MMP_COLL_GATHER;
        snprintf(name, sizeof(name), "%s:%s", mmp_coll_name(c), a.name);
        add(2, c, a.name, c == MMP_COLL_SCATTER ? VICTIM : 0, name,
            rooted ? "root" : "all");
      }
    add(3, 0, NULL, 0, "ibarrier", "all");
  } else if (strcmp(set, "exchange") == 0) {
    add(4, 0, NULL, 0, "s2p:exchange", "all");
  } else if (strcmp(set, "netmodel") == 0) {
    add(5, 0, NULL, 0, "netmodel", "all");
  } else if (strcmp(set, "barrier") == 0) {
    add(6, 0, NULL, 0, "barrier", "all");
  } else {
    fprintf(stderr, "kill_coll: unknown set '%s'\n", set);
    exit(64);
  }
}

static int start_coll(item_t *it, mmp_comm_t *w, mmp_request_t **req) {
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;
  size_t counts[64];
  int i;

  o.algorithm = it->alg;
  for (i = 0; i < p; i++)
    counts[i] = COUNT;
  switch (it->coll) {
  case MMP_COLL_ALLREDUCE:
    return mmp_iallreduce(it->a, it->b, COUNT, MMP_INT32, MMP_SUM, w, &o, req);
  case MMP_COLL_REDUCE:
    return mmp_ireduce(it->a, it->b, COUNT, MMP_INT32, MMP_SUM, it->root, w, &o,
                       req);
  case MMP_COLL_REDUCE_SCATTER:
    return mmp_ireduce_scatter(it->a, it->b, counts, MMP_INT32, MMP_SUM, w, &o,
                               req);
  case MMP_COLL_GATHER:
    return mmp_igather(it->a, COUNT, it->b, COUNT, MMP_INT32, it->root, w, &o,
                       req);
  case MMP_COLL_SCATTER:
    return mmp_iscatter(it->a, COUNT, it->b, COUNT, MMP_INT32, it->root, w, &o,
                        req);
  case MMP_COLL_ALLGATHER:
    return mmp_iallgather(it->a, COUNT, it->b, COUNT, MMP_INT32, w, &o, req);
  case MMP_COLL_ALLTOALL:
    return mmp_ialltoall(it->a, COUNT, it->b, COUNT, MMP_INT32, w, &o, req);
  default:
    return MMP_EINVAL;
  }
}

static int start(item_t *it, mmp_request_t **req) {
  mmp_comm_t *w = mmp_comm_world();

  if (it->kind == 0) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    o.algorithm = it->alg;
    return mmp_ibcast(it->a, (size_t)COUNT * 4 * 8, it->root, w, &o, req);
  }
  if (it->kind == 1) {
    mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
    o.algorithm = it->alg;
    /* Every rank a source, lengths known: no size exchange before the
     * call returns. */
    return mmp_ibcast_s2p(it->a, s2p_lens[me], 1, it->b,
                          s2p_lens[0] * (size_t)p, s2p_lens, NULL, w, &o, req);
  }
  if (it->kind == 3)
    return mmp_ibarrier(w, req);
  return start_coll(it, w, req);
}

/* Runs blocking item `it` of round `round` (0 or 1). */
static int run_blocking(item_t *it, int round) {
  if (it->kind == 4 && round == 1 && me != 0) {
    /* Only rank 0 calls it: the others fail a step before, with the
     * victim, as ranks a step behind rank 0 would, and never come. */
    int v;
    return mmp_recv(&v, sizeof(v), VICTIM, 77, mmp_comm_world(), NULL);
  } else if (it->kind == 4) {
    mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
    o.algorithm = "br_lin";
    return mmp_bcast_s2p(it->a, s2p_lens[me], 1, it->b, s2p_lens[0] * (size_t)p,
                         NULL, NULL, mmp_comm_world(), &o);
  } else if (it->kind == 6) {
    return mmp_barrier(mmp_comm_world());
  } else {
    mmp_netmodel_t nm;
    return mmp_comm_netmodel_measure(model_comm[round], &nm);
  }
}

/* Round `round` of a blocking set: every item in turn, each reported as
 * soon as it returns. Returns the first error. */
static int block_round(int round, double t0) {
  int i, rc, first = 0;

  for (i = 0; i < nitems; i++) {
    rc = run_blocking(&items[i], round);
    if (round == 1) {
      printf("kc %s rank %d rc %s s %.3f\n", items[i].name, me,
             mmp_err_name(rc), mmp_wtime() - t0);
      fflush(stdout);
    }
    first = first != 0 ? first : rc;
  }
  return first;
}

/* Starts every item; returns the first error of a start. */
static int start_all(mmp_request_t **reqs) {
  int i, rc;

  for (i = 0; i < nitems; i++)
    if ((rc = start(&items[i], &reqs[i])) != 0) {
      fprintf(stderr, "kill_coll: rank %d: %s did not start: %s\n", me,
              items[i].name, mmp_err_name(rc));
      return rc;
    }
  return 0;
}

int main(int argc, char **argv) {
  mmp_request_t *reqs[MAXI];
  int i, rc, stop, block;
  double t0;

  if (argc != 3) {
    fprintf(stderr, "usage: kill_coll bcast|s2p|coll|exchange|netmodel|barrier "
                    "kill|stop\n");
    return 64;
  }
  stop = strcmp(argv[2], "stop") == 0;
  /* From the start: minimprun's SIGTERM may come as soon as the victim
   * is gone, before a survivor is back from the barrier. */
  signal(SIGTERM, SIG_IGN);
  if ((rc = mmp_init(&argc, &argv)) != 0) {
    fprintf(stderr, "kill_coll: mmp_init: %s\n", mmp_strerror(rc));
    return 65;
  }
  me = mmp_comm_rank(mmp_comm_world());
  p = mmp_comm_size(mmp_comm_world());
  if (p < 3 || p > 64)
    return 66;
  for (i = 0; i < p; i++)
    s2p_lens[i] = (size_t)COUNT * 4;
  plan(argv[1]);
  if (me == 0)
    for (i = 0; i < nitems; i++)
      printf("kc plan %s %s\n", items[i].name, items[i].expect);
  block = strcmp(argv[1], "exchange") == 0 ||
          strcmp(argv[1], "netmodel") == 0 || strcmp(argv[1], "barrier") == 0;
  if (block && (mmp_comm_dup(mmp_comm_world(), &model_comm[0]) != 0 ||
                mmp_comm_dup(mmp_comm_world(), &model_comm[1]) != 0))
    return 67;
  /* Round 1: every item must work, or round 2 proves nothing. */
  if (block)
    rc = block_round(0, 0);
  else if (start_all(reqs) != 0)
    return 67;
  else
    rc = mmp_waitall((size_t)nitems, reqs, NULL);
  if (rc != 0) {
    fprintf(stderr, "kill_coll: rank %d: round 1 failed: %s\n", me,
            mmp_err_name(rc));
    return 68;
  }
  if ((rc = mmp_barrier(mmp_comm_world())) != 0)
    return 69;
  fflush(stdout);
  if (me == VICTIM)
    raise(stop ? SIGSTOP : SIGKILL);
  t0 = mmp_wtime();
  if (block)
    (void)block_round(1, t0);
  else if (start_all(reqs) != 0)
    return 67;
  for (; !block;) {
    size_t at;
    mmp_status_t st;
    rc = mmp_waitany((size_t)nitems, reqs, &at, &st);
    if (at == (size_t)-1)
      break;
    printf("kc %s rank %d rc %s s %.3f\n", items[at].name, me, mmp_err_name(rc),
           mmp_wtime() - t0);
    fflush(stdout);
  }
  printf("kc done rank %d\n", me);
  fflush(stdout);
  /* The job is being stopped: wait for it rather than exit first and be
   * named as the rank that failed. */
  for (;;)
    pause();
}
