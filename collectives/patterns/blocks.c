/* SPDX-License-Identifier: MIT */
/*
 * Blocks (blocks.h): what the builders of reduce, allreduce,
 * reduce-scatter, gather, scatter, allgather and alltoall share.
 */
#include <stdlib.h>

#include "collectives/patterns/blocks.h"

int mmp__coll_send(mmp__sched_t *s, const mmp__arg_t *a, int peer, size_t off,
                   size_t len, int phase, int after, int check) {
  int op, rc;

  assert(peer >= 0 && peer < a->g->n && peer != a->g->me);
  if (after < -1)
    return after;
  op = mmp__sched_send(s, a->g->ranks[peer], off, len, phase);
  if (op < 0)
    return op;
  if ((rc = mmp__sched_dep(s, after, op)) != 0 ||
      (rc = mmp__sched_dep(s, a->dep, op)) != 0)
    return rc;
  if (check && a->first)
    mmp__sched_check(s, op);
  return op;
}

int mmp__coll_first(mmp__sched_t *s, const mmp__arg_t *a, int op) {
  if (op >= 0 && a->first)
    mmp__sched_first(s, op);
  return op;
}

int mmp__coll_recv(mmp__sched_t *s, const mmp__arg_t *a, int peer, size_t off,
                   size_t len, int phase, int check) {
  int op;

  assert(peer >= 0 && peer < a->g->n && peer != a->g->me);
  op = mmp__sched_recv(s, a->g->ranks[peer], off, len, phase);
  if (op >= 0 && check && a->first)
    mmp__sched_check(s, op);
  return op;
}

/* `op` after a1 and a2 (either may be -1, none; below that an error of
 * the builder that made it, which is passed on). */
static int after2(mmp__sched_t *s, int op, int a1, int a2) {
  int rc;

  if (a1 < -1 || a2 < -1)
    return a1 < -1 ? a1 : a2;
  if (op < 0)
    return op;
  if ((rc = mmp__sched_dep(s, a1, op)) != 0 ||
      (rc = mmp__sched_dep(s, a2, op)) != 0)
    return rc;
  return op;
}

int mmp__coll_reduce(mmp__sched_t *s, size_t src, size_t dst, size_t len,
                     int right, int a1, int a2) {
  return after2(s, mmp__sched_reduce(s, src, dst, len, right), a1, a2);
}

int mmp__coll_join(mmp__sched_t *s, int a1, int a2) {
  return after2(s, mmp__sched_nop(s), a1, a2);
}

int mmp__coll_copy(mmp__sched_t *s, size_t src, size_t dst, size_t len,
                   int a1) {
  return after2(s, mmp__sched_copy(s, src, dst, len), a1, -1);
}

void mmp__coll_block(size_t len, size_t esize, int parts, int k, size_t *o,
                     size_t *n) {
  size_t elems = len / esize, q = elems / (size_t)parts,
         r = elems % (size_t)parts, kk = (size_t)k;

  /* The first r blocks have one element more. */
  *o = (kk * q + (kk < r ? kk : r)) * esize;
  *n = (q + (kk < r)) * esize;
}

int mmp__coll_layout(int p, size_t esize, size_t count, const size_t *counts,
                     const size_t *displs, size_t *cnt, size_t *dsp,
                     size_t *hi) {
  int i, rc = 0;

  *hi = 0;
  for (i = 0; i < p && rc == 0; i++) {
    rc = mmp__coll_elems(counts != NULL ? counts[i] : count, esize, &cnt[i]);
    if (rc == 0)
      rc = mmp__coll_elems(counts != NULL ? displs[i] : (size_t)i * count,
                           esize, &dsp[i]);
    if (rc == 0 && dsp[i] + cnt[i] < dsp[i])
      rc = MMP_ETOOBIG;
    if (rc == 0 && dsp[i] + cnt[i] > *hi)
      *hi = dsp[i] + cnt[i];
  }
  return rc;
}

int mmp__coll_after_all(mmp__sched_t *s, int from) {
  int op = mmp__sched_nop(s), i, rc;

  for (i = from; op >= 0 && i < op; i++)
    if ((rc = mmp__sched_dep(s, i, op)) != 0)
      return rc;
  return op;
}

int mmp__fold_in(mmp__sched_t *s, const mmp__arg_t *a, size_t t, int phase) {
  int n = a->g->n, me = a->g->me, v = mmp__fold_v(me, n), r;

  if (v < 0)
    return mmp__coll_join(
        s, mmp__coll_send(s, a, me + 1, a->off, a->len, phase, -1, 1), -1);
  if (me < 2 * (n - mmp__pow2_floor(n))) {
    r = mmp__coll_recv(s, a, me - 1, t, a->len, phase, 1);
    return mmp__coll_reduce(s, t, a->off, a->len, 0, r, a->dep);
  }
  return mmp__coll_join(s, a->dep, -1);
}

int mmp__fold_out(mmp__sched_t *s, const mmp__arg_t *a, int after, int phase,
                  int from) {
  int n = a->g->n, me = a->g->me, v = mmp__fold_v(me, n), r, rc;

  if (v < 0) {
    /* Into the accumulator this rank sent from. */
    int sent = mmp__coll_after_all(s, from);
    if (sent < 0)
      return sent;
    r = mmp__coll_recv(s, a, me + 1, a->off, a->len, phase, 1);
    if (r >= 0 && (rc = mmp__sched_dep(s, sent, r)) != 0)
      return rc;
    return r;
  }
  if (me < 2 * (n - mmp__pow2_floor(n)))
    return mmp__coll_join(
        s, mmp__coll_send(s, a, me - 1, a->off, a->len, phase, after, 1),
        after);
  return after;
}

int mmp__reduce_hop(mmp__sched_t *s, const mmp__arg_t *a, int troot, int done,
                    int from, int phase) {
  int me = a->g->me, sent, r, rc;

  if (troot == a->root || done < 0)
    return done;
  if (me == troot)
    return mmp__coll_join(
        s, mmp__coll_send(s, a, a->root, a->off, a->len, phase, done, 0), done);
  if (me != a->root)
    return done;
  if ((sent = mmp__coll_after_all(s, from)) < 0)
    return sent;
  r = mmp__coll_recv(s, a, troot, a->off, a->len, phase, 0);
  if (r >= 0 && (rc = mmp__sched_dep(s, sent, r)) != 0)
    return rc;
  return r;
}

int mmp__coll_regions(const mmp__arg_t *a, const size_t *dsp, const size_t *cnt,
                      int base, int lo, int hi, size_t *regs) {
  int n = a->g->n, v, k = 0;

  for (v = lo; v < hi; v++) {
    int i = (base + v) % n;
    if (cnt[i] == 0)
      continue;
    if (k > 0 && regs[2 * k - 2] + regs[2 * k - 1] == dsp[i]) {
      regs[2 * k - 1] += cnt[i];
      continue;
    }
    regs[2 * k] = dsp[i];
    regs[2 * k + 1] = cnt[i];
    k++;
  }
  return k;
}

int mmp__coll_sendv(mmp__sched_t *s, const mmp__arg_t *a, int peer,
                    const size_t *regs, int nregs, int phase, int after,
                    int check) {
  int op, rc;

  if (nregs <= 1)
    return mmp__coll_send(s, a, peer, nregs ? regs[0] : 0, nregs ? regs[1] : 0,
                          phase, after, check);
  if (after < -1)
    return after;
  op = mmp__sched_sendv(s, a->g->ranks[peer], regs, nregs, phase);
  if (op >= 0 && ((rc = mmp__sched_dep(s, after, op)) != 0 ||
                  (rc = mmp__sched_dep(s, a->dep, op)) != 0))
    return rc;
  return op;
}

int mmp__coll_recvv(mmp__sched_t *s, const mmp__arg_t *a, int peer,
                    const size_t *regs, int nregs, int phase, int check) {
  if (nregs <= 1)
    return mmp__coll_recv(s, a, peer, nregs ? regs[0] : 0, nregs ? regs[1] : 0,
                          phase, check);
  return mmp__sched_recvv(s, a->g->ranks[peer], regs, nregs, phase);
}
