/* SPDX-License-Identifier: MIT */
/*
 * The dissemination barrier's schedule:
 * in round k every member signals member + 2^k and waits for member -
 * 2^k; after ceil(log2 n) rounds every member has heard, directly or not,
 * from every other. The barrier runs it, and so does the network model's
 * measurement before it times anything.
 */
#include "collectives/patterns/tree.h"

/*
 * Round k's signal goes out once the signals of every earlier round
 * arrived. Waiting for round k - 1's alone would break the barrier from
 * p = 8 on: what a member passes on must include all it has heard, or a
 * member leaves before some member entered (mr_coll checks it).
 */
int mmp__dissemination(mmp__sched_t *s, const mmp__group_t *g) {
  int n = g->n, me = g->me, k, round = 0, heard = -1, rc;

  assert(me >= 0);
  for (k = 1; k < n; k <<= 1, round++) {
    int snd = mmp__sched_send(s, g->ranks[(me + k) % n], 0, 0, 1 + round);
    int rcv = mmp__sched_recv(s, g->ranks[(me - k + n) % n], 0, 0, 1 + round);
    int all = mmp__sched_nop(s); /* every signal so far is in */
    if (snd < 0 || rcv < 0 || all < 0)
      return MMP_ENOMEM;
    if ((rc = mmp__sched_dep(s, heard, snd)) != 0 ||
        (rc = mmp__sched_dep(s, heard, all)) != 0 ||
        (rc = mmp__sched_dep(s, rcv, all)) != 0)
      return rc;
    heard = all;
  }
  return heard >= 0 ? heard : mmp__bcast_done(s, -1);
}
