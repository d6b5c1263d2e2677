/* SPDX-License-Identifier: MIT */
/*
 * AUTO's choice of a broadcast algorithm from the Hockney model: the
 * generic pick over the table (select/auto.c: every row AUTO may choose,
 * priced by its own formula with its segment and groups, a burst
 * allowance, the 3% rule), and the rules that are the broadcast's own.
 * Pure functions of (p, m, model), which touch no network, so every rank
 * that passes the same inputs gets the same answer and unit tests can
 * check the rules. The pipeline runs in the optimal segment count
 * X = sqrt((p - 2) m beta / alpha); the hierarchical algorithm has
 * G = ceil(sqrt(p)) groups with the best flat algorithm inside and between
 * them. The multicast row is priced only at the top and only with the
 * communicator's agreed multicast figures (select/mcast.c).
 * docs/design/auto.md lists the rules, docs/data/history/ the measurements
 * behind them.
 */
#include <math.h>
#include <string.h>

#include "collectives/bcast/bcast.h"

double mmp__bcast_pick(const mmp__family_t *f, const mmp__query_t *q,
                       mmp__desc_t *d) {
  mmp__cost_in_t in;
  double best;

  if (q->p <= 2) { /* one message whatever the shape */
    d->alg = &mmp__bcast_binomial_alg;
    d->seg = 0;
    d->groups = 0;
    mmp__auto_cost_in(&in, f, q->p, (double)q->len, 1, 0, q->nm);
    return mmp__auto_price(f, d->alg, &in, 1);
  }
  best = mmp__auto_pick(f, q, d);
  /* Where ranks outnumber CPUs the hop, not the send, is what a small
   * broadcast pays most for: waiting for one of the shared CPUs. There
   * AUTO's own choice takes the k-nomial tree of radix 3, one level
   * shallower than the binary tree at p = 16, in place of the binomial
   * tree for a message of up to MMP__BULK_BYTES (whose waits poll and
   * yield; larger ones sleep and keep the binary tree). Inside and
   * between hierarchical groups, where the k-nomial tree cannot go, the
   * binary tree takes its place. Hockney's model prices all three as
   * binomial <= binary, k-nomial, so this is a rule, not a formula
   * (docs/design/auto.md, "Ranks that share CPUs"). The k-nomial tree's
   * root sends 2 ceil(log3 p) messages to the binary tree's 2, so it
   * also needs a message whose time on the link is small beside a hop:
   * m beta at most 2 alpha (on 100 Mbit/s links 1-2 KiB, not 4 KiB). */
  if (q->nm->shared_cpus && d->alg == &mmp__bcast_binomial_alg)
    d->alg = q->level == MMP__PICK_TOP && q->len <= MMP__BULK_BYTES &&
                     (double)q->len * q->nm->beta <= 2 * q->nm->alpha
                 ? &mmp__bcast_knomial_alg
                 : &mmp__bcast_binary_alg;
  return best;
}

void mmp__bcast_drained_rule(int p, size_t len, const mmp_netmodel_t *nm,
                             mmp__desc_t *d) {
  const mmp__alg_t *a = d->alg;

  if (nm->burst <= 0 || a->link_bytes == NULL ||
      a->link_bytes(p, (double)len) > nm->burst)
    return;
  /* A measured rule, not a price: alpha per segment and hop overprices the
   * pipeline near the burst (figures: docs/design/auto.md, "Rested or
   * drained links"). */
  d->alg = &mmp__bcast_pipeline_alg;
  d->seg = mmp__pipeline_seg(p, len, nm);
  d->groups = 0;
}
