/* SPDX-License-Identifier: MIT */
/*
 * Reference values of the reducing collectives' tests: every rank's
 * input element for a type and an operation, the operation on 64-bit
 * integers, and the element stored in a buffer of the type. Values are
 * small, so that every built-in operation is exact in every type
 * (integers wrap alike in the library and here) whatever the order of
 * combination: the result of any algorithm compares bit for bit.
 */
#ifndef MMP_TESTS_COLL_REF_H
#define MMP_TESTS_COLL_REF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "minimp.h"
#include "mr_common.h"

/* Rank r's element e for (type, op): -4 .. 4; for a product -2 .. 2
 * without 0 (no wrap at p 16 in 64 bits); non-negative for unsigned
 * types and bytes. */
static inline int64_t ref_val(int type, int op, int r, size_t e) {
  uint64_t s = (uint64_t)type * 131 + (uint64_t)op * 17 + (uint64_t)r * 7 + e;
  int64_t v = (int64_t)(mr_next(&s) % 9) - 4;

  if (op == MMP_PROD)
    v = v % 2 + (v < 0 ? -1 : 1);
  if (type == MMP_BYTE || type == MMP_UINT8 || type == MMP_UINT16 ||
      type == MMP_UINT32 || type == MMP_UINT64)
    v = v < 0 ? -v : v;
  return v;
}

/* a op b for a built-in operation. */
static inline int64_t ref_op(int op, int64_t a, int64_t b) {
  switch (op) {
  case MMP_SUM:
    return a + b;
  case MMP_PROD:
    return a * b;
  case MMP_MIN:
    return a < b ? a : b;
  case MMP_MAX:
    return a > b ? a : b;
  case MMP_BAND:
    return a & b;
  case MMP_BOR:
    return a | b;
  case MMP_BXOR:
    return a ^ b;
  case MMP_LAND:
    return a && b;
  default:
    return a || b;
  }
}

/* Stores v as element e of a buffer of built-in `type` (integers wrap). */
static inline void ref_put(void *buf, int type, size_t e, int64_t v) {
  switch (type) {
  case MMP_BYTE:
  case MMP_UINT8:
  case MMP_INT8:
    ((uint8_t *)buf)[e] = (uint8_t)v;
    break;
  case MMP_INT16:
  case MMP_UINT16:
    ((uint16_t *)buf)[e] = (uint16_t)v;
    break;
  case MMP_INT32:
  case MMP_UINT32:
    ((uint32_t *)buf)[e] = (uint32_t)v;
    break;
  case MMP_INT64:
  case MMP_UINT64:
    ((uint64_t *)buf)[e] = (uint64_t)v;
    break;
  case MMP_FLOAT:
    ((float *)buf)[e] = (float)v;
    break;
  default:
    ((double *)buf)[e] = (double)v;
  }
}

/* 1 if built-in `op` applies to built-in `type`: the numeric operations
 * to every type but bytes, the bitwise ones to integers and bytes, the
 * logical ones to integers. */
static inline int ref_supported(int type, int op) {
  int integer = type >= MMP_INT8 && type <= MMP_UINT64;

  if (op <= MMP_MAX)
    return type != MMP_BYTE;
  if (op <= MMP_BXOR)
    return integer || type == MMP_BYTE;
  return integer;
}

/* A non-commutative user operation: products of 2x2 matrices of
 * uint64_t (a type of 4 MMP_UINT64), inout = in x inout. */
static inline void ref_matmul(const void *in, void *inout, size_t count,
                              mmp_type_t type, void *ctx) {
  const uint64_t *a = in;
  uint64_t *b = inout;
  size_t i;
  (void)type;
  (void)ctx;

  for (i = 0; i < count; i++, a += 4, b += 4) {
    uint64_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                     a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    memcpy(b, c, sizeof(c));
  }
}

static inline void ref_matrix(int r, size_t e, uint64_t m[4]) {
  uint64_t s = (uint64_t)r * 31 + e * 1009;
  int k;

  for (k = 0; k < 4; k++)
    m[k] = mr_next(&s) % 7;
}

#endif /* MMP_TESTS_COLL_REF_H */
