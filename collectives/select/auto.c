/* SPDX-License-Identifier: MIT */
/*
 * AUTO's pick over any collective's table: pure functions of the query
 * and the model, which touch no network (measuring the model is
 * netmodel.c's job), so every rank that passes the same inputs gets the
 * same answer and unit tests can check the rules. select/auto.h states
 * how a row is priced; docs/design/auto.md lists the rules, docs/data/history/
 * the measurements behind them.
 */
#include <math.h>
#include <string.h>

#include "collectives/select/auto.h"

void mmp__auto_cost_in(mmp__cost_in_t *in, const mmp__family_t *f, int p,
                       double m, double X, int G, const mmp_netmodel_t *nm) {
  memset(in, 0, sizeof(*in));
  in->p = p;
  in->m = m;
  in->X = X < 1 ? 1 : X;
  in->G = G;
  in->nm = nm;
  in->fam = f;
}

double mmp__auto_price(const mmp__family_t *f, const mmp__alg_t *a,
                       const mmp__cost_in_t *in, int burst) {
  const mmp_netmodel_t *nm = in->nm;
  mmp__cost_in_t lat_in;
  mmp_netmodel_t lat;

  if (in->p <= 1)
    return 0;
  /*
   * A link that was idle passes its first `burst` bytes at once, as
   * through a shaper's token bucket: a row whose busiest link carries no
   * more than that pays its latency terms only. The gap holds where a
   * segment's bytes keep the link busy while the next hop forwards the
   * one before; through the allowance they pass at once and each hop's
   * store and forward shows, priced at alpha as measured. The choice is
   * for a call that finds the links rested, as [de Supinski & Karonis
   * 1999]'s method measures each one (docs/design/auto.md, "Burst
   * allowance").
   */
  if (burst && nm->burst > 0 && a->link_bytes != NULL &&
      a->link_bytes(in->p, in->m) <= nm->burst) {
    lat = *nm;
    lat.beta = 0;
    lat.gap = 0;
    lat_in = *in;
    lat_in.nm = &lat;
    in = &lat_in;
  }
  if (f->price != NULL)
    return f->price(a, in);
  return a->cost != NULL ? a->cost(in) : INFINITY;
}

/* 1 if row `a` is a candidate for `q`. */
static int candidate(const mmp__alg_t *a, const mmp__query_t *q) {
  return (a->flags & MMP__ALG_AUTO) && q->len >= a->auto_min &&
         !((a->flags & MMP__ALG_COMPOSITE) && q->level == MMP__PICK_FLAT) &&
         !((a->flags & MMP__ALG_TOP) && q->level != MMP__PICK_TOP) &&
         !(q->noncomm && !(a->flags & MMP__ALG_ORDERED));
}

double mmp__auto_pick(const mmp__family_t *f, const mmp__query_t *q,
                      mmp__desc_t *d) {
  const mmp__alg_t *order[128];
  double m = (double)q->len, best = INFINITY;
  mmp__cost_in_t in;
  int n = 0, i, k, G = (int)ceil(sqrt((double)q->p));

  /* The candidates in order of preference: of two within 3%, the one
   * listed first. */
  for (i = 0; i < f->nrows; i++) {
    const mmp__alg_t *a = f->rows[i];
    if (!candidate(a, q))
      continue;
    for (k = n++; k > 0 && order[k - 1]->prefer > a->prefer; k--)
      order[k] = order[k - 1];
    order[k] = a;
  }
  d->alg = n > 0 ? order[0] : NULL;
  d->seg = 0;
  d->groups = 0;
  for (i = 0; i < n; i++) {
    const mmp__alg_t *a = order[i];
    size_t seg = 0;
    double t;
    if (a->flags & MMP__ALG_SEGMENTED) {
      size_t (*hook)(int, size_t, size_t, const mmp_netmodel_t *) =
          a->segment != NULL ? a->segment : f->segment;
      seg = hook != NULL ? hook(q->p, q->len, q->esize, q->nm) : 0;
    }
    mmp__auto_cost_in(&in, f, q->p, m, seg ? ceil(m / (double)seg) : 1,
                      (a->flags & MMP__ALG_COMPOSITE) ? G : 0, q->nm);
    in.mc = q->level == MMP__PICK_TOP ? q->mc : NULL;
    in.x = q->x;
    in.node = q->node;
    /* Where the node segment may serve, every row pays its bytes: what a
     * measurement on one host takes for a burst is the rings' room, no
     * link's allowance, and the shm rows, which cross no link, would get
     * none of it (docs/design/auto.md, "Burst allowance"). */
    t = mmp__auto_price(f, a, &in, !q->node);
    /* Noise in the model must not flip the choice between near equals. */
    if (t < best * 0.97) {
      best = t;
      d->alg = a;
      d->seg = seg;
      d->groups = (a->flags & MMP__ALG_COMPOSITE) ? G : 0;
    }
  }
  return best;
}

double mmp__auto_choose_mc(const mmp__family_t *f, int level, int p, size_t len,
                           const mmp_netmodel_t *nm,
                           const mmp__mcast_verdict_t *mc, mmp__desc_t *d) {
  mmp__query_t q;

  memset(&q, 0, sizeof(q));
  q.p = p;
  q.len = len;
  q.esize = 1;
  q.level = level;
  q.nm = nm;
  q.mc = mc;
  return f->pick(f, &q, d);
}

double mmp__auto_choose(const mmp__family_t *f, int level, int p, size_t len,
                        const mmp_netmodel_t *nm, mmp__desc_t *d) {
  return mmp__auto_choose_mc(f, level, p, len, nm, NULL, d);
}

double mmp__auto_part(const mmp__cost_in_t *in, int q, double m,
                      const mmp_netmodel_t *nm, int rested) {
  mmp__cost_in_t pin;
  mmp__desc_t d;
  double t;

  memset(&d, 0, sizeof(d));
  t = mmp__auto_choose(in->fam, MMP__PICK_FLAT, q, (size_t)m, nm, &d);
  if (rested || d.alg == NULL)
    return t;
  mmp__auto_cost_in(&pin, in->fam, q, m, d.seg ? m / (double)d.seg : 1, 0, nm);
  return mmp__auto_price(in->fam, d.alg, &pin, 0);
}
