/* SPDX-License-Identifier: MIT */
/*
 * PersAlltoAll s-to-p broadcast ([Hambrusch et al. 1998], section 2): every
 * source views its message as p - 1 personalized messages, one per other rank,
 * and the exchange runs as p - 1 permutations. As in the paper's implementation
 * the permutations pair rank i with i XOR k (k = 1 .. p - 1) when p is a
 * power of two; otherwise rank i sends to i + k and receives from i - k
 * (mod p). Nothing is combined and nothing waits: every send and receive
 * is posted at once, in permutation order.
 *
 * Cost (Hockney): a source sends p - 1 copies, every rank receives the
 * s messages (less its own):
 *   max((p - 1)(alpha + L_max beta), s alpha + S beta).
 *
 * Selected: for small p (the paper: as good as any for 4 to 16 ranks) and
 * when s is close to p with short messages.
 */
#include "collectives/s2p/s2p.h"

#define PHASE_A2A 1

static int alltoall_build(mmp__sched_t *s, const mmp__arg_t *a) {
  const mmp__s2p_t *x = a->x;
  int p = x->p, me = x->me, pow2 = (p & (p - 1)) == 0, k, op;
  int mine = x->idx[me];

  for (k = 1; k < p; k++) {
    int to = pow2 ? me ^ k : (me + k) % p;
    int from = pow2 ? me ^ k : (me - k + p) % p, j = x->idx[from];
    if (mine >= 0 && x->len[mine] > 0) {
      op = mmp__sched_send(s, to, x->off[mine], x->len[mine], PHASE_A2A);
      if (op < 0)
        return op;
    }
    if (j >= 0 && x->len[j] > 0) {
      op = mmp__sched_recv(s, from, x->off[j], x->len[j], PHASE_A2A);
      if (op < 0)
        return op;
    }
  }
  return 0;
}

/* A non-source takes in every message; if all are sources, everyone
 * skips its own. */
static double alltoall_cost(const mmp__cost_in_t *in) {
  const mmp__s2p_t *x = in->x;
  const mmp_netmodel_t *nm = in->nm;
  double lmax, lmin, recv;

  if (x->ns == 0 || x->p == 1)
    return 0;
  mmp__s2p_lengths(x, nm, &lmax, &lmin, &recv);
  if (x->ns == x->p)
    recv -= nm->alpha + lmin * nm->beta;
  return fmax((x->p - 1) * (nm->alpha + lmax * nm->beta), recv);
}

const mmp__alg_t mmp__s2p_alltoall_alg = {
    .name = "alltoall",
    .summary = "PersAlltoAll: every source sends to every rank",
    .flags = MMP__ALG_AUTO,
    .prefer = 10,
    .build = alltoall_build,
    .cost = alltoall_cost,
};
