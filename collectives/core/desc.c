/* SPDX-License-Identifier: MIT */
/*
 * The wire descriptor: a call's description (mmp__desc_t) as the first
 * messages carry it, for every collective alike.
 *
 *   byte 0   'D', the form's version
 *   byte 1   the collective (MMP_COLL_*)
 *   byte 2   the row's number in its table
 *   then     one (tag, value) per parameter that is not 0, in the order
 *            of the tags below; each value an unsigned LEB128 number, of
 *            at most the bytes its tag allows (rows and small numbers in
 *            one byte, ints in five, sizes in ten).
 *
 * One order and no zeros make the encoding canonical: two ranks with the
 * same description send the same bytes, which the executor compares with
 * memcmp. A receiver decodes only the header of a first message that
 * differs from its own, to rebuild the sender's plan (core/sched.h), and
 * trusts nothing in it but its form.
 */
#include <string.h>

#include "collectives/core/alg.h"

#define DESC_VERSION 'D'

/* The parameters, in the order they are written. */
enum {
  T_ROOT = 1,
  T_COUNT,
  T_ESIZE,
  T_BASE,
  T_OP,
  T_SEG,
  T_RADIX,
  T_GROUPS,
  T_INNER,
  T_OUTER,
  T_ROWS,
  T_WINDOW,
  T_HINT,
  T_END
};

/* The largest value each tag may carry, and so its bytes at most. */
static const uint64_t tag_max[T_END] = {
    [T_ROOT] = INT32_MAX, [T_COUNT] = UINT64_MAX, [T_ESIZE] = SIZE_MAX,
    [T_BASE] = 127,       [T_OP] = INT32_MAX,     [T_SEG] = SIZE_MAX,
    [T_RADIX] = 127,      [T_GROUPS] = INT32_MAX, [T_INNER] = 127,
    [T_OUTER] = 127,      [T_ROWS] = INT32_MAX,   [T_WINDOW] = INT32_MAX,
    [T_HINT] = 127,
};

/* 3 + the tags' (1 + bytes): every tag present at its largest. */
_Static_assert(3 + 6 + 11 + 11 + 2 + 6 + 11 + 2 + 6 + 2 + 2 + 6 + 6 + 2 <=
                   MMP__DESC_MAX,
               "the largest descriptor fits MMP__DESC_MAX");

static size_t put(uint8_t *out, size_t at, int tag, uint64_t v) {
  if (v == 0)
    return at;
  assert(v <= tag_max[tag]);
  out[at++] = (uint8_t)tag;
  while (v >= 0x80) {
    out[at++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  out[at++] = (uint8_t)v;
  return at;
}

size_t mmp__desc_encode(const mmp__family_t *f, const mmp__desc_t *d,
                        uint8_t *out) {
  size_t at = 3;

  assert(f->coll == d->coll && d->root >= 0);
  out[0] = DESC_VERSION;
  out[1] = (uint8_t)d->coll;
  out[2] = (uint8_t)mmp__alg_index(f, d->alg);
  at = put(out, at, T_ROOT, (uint64_t)d->root);
  at = put(out, at, T_COUNT, d->count);
  at = put(out, at, T_ESIZE, d->esize);
  at = put(out, at, T_BASE, (uint64_t)d->base);
  at = put(out, at, T_OP, (uint64_t)d->op);
  at = put(out, at, T_SEG, d->seg);
  at = put(out, at, T_RADIX, (uint64_t)d->radix);
  at = put(out, at, T_GROUPS, (uint64_t)d->groups);
  at = put(out, at, T_INNER, (uint64_t)mmp__alg_index(f, d->inner));
  at = put(out, at, T_OUTER, (uint64_t)mmp__alg_index(f, d->outer));
  at = put(out, at, T_ROWS, (uint64_t)d->rows);
  at = put(out, at, T_WINDOW, (uint64_t)d->window);
  at = put(out, at, T_HINT, (uint64_t)d->hint);
  assert(at <= MMP__DESC_MAX);
  return at;
}

/* Reads one value at in[*at .. n): 0, or MMP_EPROTO for one that runs
 * past the end, past its tag's largest, or with more bytes than its
 * value needs (the encoding would not be canonical). */
static int get(const uint8_t *in, size_t n, size_t *at, int tag, uint64_t *v) {
  uint64_t x = 0;
  unsigned shift = 0;
  uint8_t b;

  do {
    if (*at >= n || shift > 63)
      return MMP_EPROTO;
    b = in[(*at)++];
    if (shift == 63 && (b & 0x7e) != 0)
      return MMP_EPROTO;
    x |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (x == 0 || (b == 0 && shift > 7) || x > tag_max[tag])
    return MMP_EPROTO;
  *v = x;
  return 0;
}

/* The row of number `i` (0: none, where `none_ok`). */
static int row_of(const mmp__family_t *f, uint64_t i, int none_ok,
                  const mmp__alg_t **out) {
  *out = mmp__alg_at(f, (int)i);
  return *out != NULL || (none_ok && i == 0) ? 0 : MMP_EPROTO;
}

int mmp__desc_decode(const mmp__family_t *f, const uint8_t *in, size_t n,
                     mmp__desc_t *d) {
  size_t at = 3;
  int last = 0, rc;

  memset(d, 0, sizeof(*d));
  if (n < 3 || n > MMP__DESC_MAX || in[0] != DESC_VERSION || in[1] != f->coll ||
      row_of(f, in[2], 0, &d->alg) != 0)
    return MMP_EPROTO;
  d->coll = f->coll;
  while (at < n) {
    int tag = in[at++];
    uint64_t v;
    if (tag <= last || tag >= T_END)
      return MMP_EPROTO;
    if ((rc = get(in, n, &at, tag, &v)) != 0)
      return rc;
    last = tag;
    switch (tag) {
    case T_ROOT:
      d->root = (int)v;
      break;
    case T_COUNT:
      d->count = v;
      break;
    case T_ESIZE:
      d->esize = (size_t)v;
      break;
    case T_BASE:
      d->base = (int)v;
      break;
    case T_OP:
      d->op = (int)v;
      break;
    case T_SEG:
      d->seg = (size_t)v;
      break;
    case T_RADIX:
      d->radix = (int)v;
      break;
    case T_GROUPS:
      d->groups = (int)v;
      break;
    case T_INNER:
      rc = row_of(f, v, 0, &d->inner);
      break;
    case T_OUTER:
      rc = row_of(f, v, 0, &d->outer);
      break;
    case T_ROWS:
      d->rows = (int)v;
      break;
    case T_WINDOW:
      d->window = (int)v;
      break;
    default: /* T_HINT */
      d->hint = (int)v;
      break;
    }
    if (rc != 0)
      return rc;
  }
  return 0;
}
_Static_assert(MMP__DESC_MAX <= MMP__HDR_MAX,
               "a description fits a first message");
