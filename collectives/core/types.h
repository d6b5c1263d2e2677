/* SPDX-License-Identifier: MIT */
/*
 * Element types and reduction operations (types.c): what a type is made
 * of, whether an operation applies to it, and the executor's reduce
 * callback that combines whole elements of (op, type).
 */
#ifndef MMP_COLLECTIVES_CORE_TYPES_H
#define MMP_COLLECTIVES_CORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "minimp.h"

/* What a type is made of: `n` base elements of a built-in type. */
typedef struct mmp__type_info_s {
  int base;    /* MMP_BYTE .. MMP_DOUBLE */
  size_t n;    /* base elements per element */
  size_t size; /* bytes per element */
} mmp__type_info_t;

/* Fills `ti` for a type handle: 0, or MMP_EINVAL for an unknown one. */
int mmp__type_info(mmp_type_t type, mmp__type_info_t *ti);

/* 0 if `op` is a known operation that applies to `type`, else
 * MMP_EINVAL; *commutative tells whether it is. */
int mmp__op_check(mmp_op_t op, mmp_type_t type, int *commutative);

/* The schedule's reduce callback for (op, type): arg packs both
 * (mmp__reduce_arg). */
void mmp__reduce_apply(const void *in, void *inout, size_t n, int right,
                       void *arg);
static inline void *mmp__reduce_arg(mmp_op_t op, mmp_type_t type) {
  return (void *)(uintptr_t)(((uintptr_t)(unsigned)op << 16) | (unsigned)type);
}

#endif /* MMP_COLLECTIVES_CORE_TYPES_H */
