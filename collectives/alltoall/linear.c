/* SPDX-License-Identifier: MIT */
/*
 * Windowed linear alltoall (Open MPI's "linear_sync"): rank i's exchanges
 * with i + 1, i + 2, ... are all posted, at most W at a time (opts.window,
 * 8 by default), exchange t + W starting when t has completed. Priced
 *   ((p - 1)/2) alpha + (p - 1) m beta   (m bytes a block):
 * latencies overlap, each message's overhead does not; half is a guess
 * the benchmarks are to settle.
 * More in flight than the pairwise exchange, so latency overlaps, but
 * several ranks may send to one at once.
 *
 * Selected: by AUTO for medium blocks.
 */
#include <stdlib.h>

#include "collectives/alltoall/alltoall.h"

#define PHASE_LINEAR 0
#define WINDOW_DEFAULT 8

static int linear_build(mmp__sched_t *s, const mmp__arg_t *a) {
  int n = a->g->n, me = a->g->me, t, from = s->nops;
  int w = a->window > 0 ? a->window : WINDOW_DEFAULT;
  int *done = malloc((size_t)n * sizeof(int));

  if (done == NULL)
    return MMP_ENOMEM;
  for (t = 1; t < n; t++) {
    int to = (me + t) % n, fr = (me - t + n) % n, snd, rcv;
    int after = t > w ? done[t - w] : -1;
    snd = mmp__coll_send(s, a, to, a->sdsp[to], a->scnt[to],
                         a->phase + PHASE_LINEAR, after, t == 1);
    rcv = mmp__coll_recv(s, a, fr, a->dsp[fr], a->cnt[fr],
                         a->phase + PHASE_LINEAR, t == 1);
    if (rcv >= 0 && after >= 0 && mmp__sched_dep(s, after, rcv) != 0)
      rcv = MMP_ENOMEM;
    done[t] = snd < 0 ? snd : mmp__coll_join(s, snd, rcv);
    if (done[t] < 0) {
      int rc = done[t];
      free(done);
      return rc;
    }
  }
  free(done);
  return mmp__coll_after_all(s, from);
}

static double linear_cost(const mmp__cost_in_t *in) {
  return (in->p - 1) / 2.0 * in->nm->alpha + (in->p - 1) * in->m * in->nm->beta;
}

const mmp__alg_t mmp__alltoall_linear_alg = {
    .name = "linear",
    .summary = "everything posted, opts.window exchanges at a time",
    .takes = MMP_OPT_WINDOW,
    .flags = MMP__ALG_AUTO,
    .prefer = 2,
    .build = linear_build,
    .cost = linear_cost,
};
