/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the broadcast builders: sends and receives addressed
 * by group member, the no-op a builder returns when this rank receives
 * nothing, a whole-communicator group, and the arithmetic of segments.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/core/collectives.h"

/* The broadcast's part of a first message's header (sched.c wraps it in
 * its envelope): which collective, then the description. */
#define HDR_KIND_BCAST 1

void mmp__bcast_desc_encode(const mmp__bcast_desc_t *d,
                            uint8_t out[MMP__BCAST_HDR_LEN]) {
  memset(out, 0, MMP__BCAST_HDR_LEN);
  out[0] = HDR_KIND_BCAST;
  out[1] = (uint8_t)d->alg;
  out[2] = (uint8_t)d->inner;
  out[3] = (uint8_t)d->outer;
  out[4] = (uint8_t)d->radix;
  mmp__put_u32(out + 5, (uint32_t)d->root);
  mmp__put_u64(out + 9, d->len);
  mmp__put_u32(out + 17, (uint32_t)d->seg);
  mmp__put_u32(out + 21, (uint32_t)d->groups);
  out[25] = (uint8_t)d->hint;
}

int mmp__bcast_desc_decode(const uint8_t *in, size_t n, mmp__bcast_desc_t *d) {
  if (n != MMP__BCAST_HDR_LEN || in[0] != HDR_KIND_BCAST)
    return MMP_EPROTO;
  d->alg = in[1];
  d->inner = in[2];
  d->outer = in[3];
  d->radix = in[4];
  d->root = (int32_t)mmp__get_u32(in + 5);
  d->len = mmp__get_u64(in + 9);
  d->seg = mmp__get_u32(in + 17);
  d->groups = (int32_t)mmp__get_u32(in + 21);
  d->hint = in[25];
  return 0;
}

int mmp__poison_len_ok(uint64_t len, uint64_t seg) {
  return len <= SIZE_MAX && (seg == 0 || len / seg < MMP__POISON_MAX_SEGS);
}

size_t mmp__even_seg(size_t len, double target) {
  size_t k;

  if (!(target > 0) || target >= (double)len)
    return 0;
  k = (size_t)((double)len / target); /* >= 1: each part at least target */
  return k <= 1 ? 0 : len / k + (len % k != 0);
}

size_t mmp__seg_count(size_t len, size_t seg) {
  if (seg == 0 || len <= seg)
    return 1;
  return (len + seg - 1) / seg;
}

void mmp__seg_range(size_t len, size_t seg, size_t k, size_t *off, size_t *n) {
  if (seg == 0 || len <= seg) {
    *off = 0;
    *n = len;
    return;
  }
  *off = k * seg;
  *n = len - *off < seg ? len - *off : seg;
}

int mmp__bcast_done(mmp__sched_t *s, int dep) {
  int op = mmp__sched_nop(s), rc;

  if (op >= 0 && dep >= 0 && (rc = mmp__sched_dep(s, dep, op)) != 0)
    return rc;
  return op;
}

int mmp__bcast_recv(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase) {
  assert(peer_idx >= 0 && peer_idx < a->g->n);
  return mmp__sched_recv(s, a->g->ranks[peer_idx], a->off + off, len, phase);
}

int mmp__bcast_send(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase, int after) {
  int op, rc;

  assert(peer_idx >= 0 && peer_idx < a->g->n);
  op = mmp__sched_send(s, a->g->ranks[peer_idx], a->off + off, len, phase);
  if (op < 0)
    return op;
  if (after >= 0 && (rc = mmp__sched_dep(s, after, op)) != 0)
    return rc;
  return op;
}

int mmp__bcast_over_all(mmp__sched_t *s, mmp__bcast_builder b,
                        mmp__bcast_arg_t *a) {
  mmp__group_t all;
  int rc = mmp__sched_group_all(s, &all);

  if (rc != 0)
    return rc;
  a->g = &all;
  rc = b(s, a);
  a->g = NULL;
  return rc;
}

int mmp__group_start(int p, int G, int g) {
  int base = p / G, extra = p % G;

  assert(G >= 1 && g >= 0 && g <= G);
  return g * base + (g < extra ? g : extra);
}

int mmp__bcast_levels(mmp__sched_t *s, const mmp__bcast_arg_t *top,
                      const mmp__group_t *outer, const mmp__group_t *inner) {
  mmp__bcast_arg_t a = *top;
  int done;

  a.g = outer;
  a.root = 0;
  done = top->outer->build(s, &a);
  if (done < 0)
    return done;
  /* A leader forwards inside its group once it holds the data. */
  a.g = inner;
  a.dep = done;
  a.phase = top->phase + MMP__LEVEL_PHASES;
  return top->inner->build(s, &a);
}
