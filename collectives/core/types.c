/* SPDX-License-Identifier: MIT */
/*
 * Element types and reduction operations: the built-in types and
 * operations of the public API, contiguous types (n elements of a
 * built-in type as one, so that collectives never cut what a user
 * operation sees as a unit), user operations, and the arithmetic the
 * executor runs for a REDUCE op (mmp__reduce_apply).
 *
 * Built-in operations are applied element by element in one pass; which
 * operand is on the left only matters for user operations (and for MIN
 * and MAX on NaNs and signed zeros), and is kept for all. Handles of
 * contiguous types and user operations come from small tables, under a
 * mutex of their own: they are made before the collectives that use them,
 * by any thread, with or without the library initialised.
 */
#include <pthread.h>
#include <string.h>

#include "runtime/coll_api.h"
#include "collectives/core/types.h"

#define HANDLES 64
#define HANDLE_BASE 64 /* user operations and contiguous types */

typedef struct user_op_s {
  mmp_user_fn fn;
  void *ctx;
  int commutative;
  int used;
} user_op_t;

typedef struct ctype_s {
  int base;
  size_t n;
  int used;
} ctype_t;

static pthread_mutex_t types_mu = PTHREAD_MUTEX_INITIALIZER;
static user_op_t user_ops[HANDLES];
static ctype_t ctypes[HANDLES];

static const size_t builtin_size[MMP_TYPE_BUILTIN_COUNT] = {
    [MMP_BYTE] = 1,   [MMP_INT8] = 1,  [MMP_UINT8] = 1,  [MMP_INT16] = 2,
    [MMP_UINT16] = 2, [MMP_INT32] = 4, [MMP_UINT32] = 4, [MMP_INT64] = 8,
    [MMP_UINT64] = 8, [MMP_FLOAT] = 4, [MMP_DOUBLE] = 8,
};

int mmp__type_info(mmp_type_t type, mmp__type_info_t *ti) {
  int rc = 0;

  if (type >= 0 && type < MMP_TYPE_BUILTIN_COUNT) {
    ti->base = type;
    ti->n = 1;
  } else if (type >= HANDLE_BASE && type < HANDLE_BASE + HANDLES) {
    pthread_mutex_lock(&types_mu);
    if (ctypes[type - HANDLE_BASE].used) {
      ti->base = ctypes[type - HANDLE_BASE].base;
      ti->n = ctypes[type - HANDLE_BASE].n;
    } else {
      rc = MMP_EINVAL;
    }
    pthread_mutex_unlock(&types_mu);
  } else {
    rc = MMP_EINVAL;
  }
  if (rc == 0)
    ti->size = ti->n * builtin_size[ti->base];
  return rc;
}

size_t mmp_type_size(mmp_type_t type) {
  mmp__type_info_t ti;

  return mmp__type_info(type, &ti) == 0 ? ti.size : 0;
}

int mmp_type_contiguous(size_t n, mmp_type_t base, mmp_type_t *out) {
  int i, rc = MMP_ENOMEM;

  if (out == NULL || n == 0 || base < 0 || base >= MMP_TYPE_BUILTIN_COUNT ||
      n > ((size_t)1 << 30))
    return MMP_EINVAL;
  pthread_mutex_lock(&types_mu);
  for (i = 0; i < HANDLES; i++)
    if (!ctypes[i].used) {
      ctypes[i].used = 1;
      ctypes[i].base = base;
      ctypes[i].n = n;
      *out = HANDLE_BASE + i;
      rc = 0;
      break;
    }
  pthread_mutex_unlock(&types_mu);
  return rc;
}

int mmp_type_free(mmp_type_t *type) {
  int rc = MMP_EINVAL, i;

  if (type == NULL)
    return rc;
  i = *type - HANDLE_BASE;
  pthread_mutex_lock(&types_mu);
  if (i >= 0 && i < HANDLES && ctypes[i].used) {
    ctypes[i].used = 0;
    rc = 0;
  }
  pthread_mutex_unlock(&types_mu);
  if (rc == 0)
    *type = MMP_BYTE;
  return rc;
}

int mmp_op_create(mmp_user_fn fn, int commutative, void *ctx, mmp_op_t *op) {
  int i, rc = MMP_ENOMEM;

  if (fn == NULL || op == NULL)
    return MMP_EINVAL;
  pthread_mutex_lock(&types_mu);
  for (i = 0; i < HANDLES; i++)
    if (!user_ops[i].used) {
      user_ops[i].used = 1;
      user_ops[i].fn = fn;
      user_ops[i].ctx = ctx;
      user_ops[i].commutative = commutative != 0;
      *op = HANDLE_BASE + i;
      rc = 0;
      break;
    }
  pthread_mutex_unlock(&types_mu);
  return rc;
}

int mmp_op_free(mmp_op_t *op) {
  int rc = MMP_EINVAL, i;

  if (op == NULL)
    return rc;
  i = *op - HANDLE_BASE;
  pthread_mutex_lock(&types_mu);
  if (i >= 0 && i < HANDLES && user_ops[i].used) {
    user_ops[i].used = 0;
    rc = 0;
  }
  pthread_mutex_unlock(&types_mu);
  if (rc == 0)
    *op = 0;
  return rc;
}

int mmp__op_check(mmp_op_t op, mmp_type_t type, int *commutative) {
  mmp__type_info_t ti;
  int rc = mmp__type_info(type, &ti), floating, integer;

  if (rc != 0)
    return rc;
  *commutative = 1;
  if (op >= HANDLE_BASE && op < HANDLE_BASE + HANDLES) {
    pthread_mutex_lock(&types_mu);
    rc = user_ops[op - HANDLE_BASE].used ? 0 : MMP_EINVAL;
    *commutative = user_ops[op - HANDLE_BASE].commutative;
    pthread_mutex_unlock(&types_mu);
    return rc;
  }
  floating = ti.base == MMP_FLOAT || ti.base == MMP_DOUBLE;
  integer = ti.base != MMP_BYTE && !floating;
  switch (op) {
  case MMP_SUM:
  case MMP_PROD:
  case MMP_MIN:
  case MMP_MAX:
    return ti.base != MMP_BYTE ? 0 : MMP_EINVAL;
  case MMP_BAND:
  case MMP_BOR:
  case MMP_BXOR:
    return !floating ? 0 : MMP_EINVAL;
  case MMP_LAND:
  case MMP_LOR:
    return integer ? 0 : MMP_EINVAL;
  default:
    return MMP_EINVAL;
  }
}

/* ---- Arithmetic -----------------------------------------------------------
 */

/* One loop per (type, operation): io[i] = F(x[i], io[i]), or with the
 * operands swapped when `right`. */
#define LOOP(T, F)                                                             \
  do {                                                                         \
    const T *x = in;                                                           \
    T *io = inout;                                                             \
    size_t i;                                                                  \
    if (right)                                                                 \
      for (i = 0; i < n; i++)                                                  \
        io[i] = F(io[i], x[i]);                                                \
    else                                                                       \
      for (i = 0; i < n; i++)                                                  \
        io[i] = F(x[i], io[i]);                                                \
  } while (0)

#define F_SUM(a, b) ((a) + (b))
#define F_PROD(a, b) ((a) * (b))
#define F_MIN(a, b) ((b) < (a) ? (b) : (a))
#define F_MAX(a, b) ((b) > (a) ? (b) : (a))
#define F_BAND(a, b) ((a) & (b))
#define F_BOR(a, b) ((a) | (b))
#define F_BXOR(a, b) ((a) ^ (b))
#define F_LAND(a, b) ((a) && (b))
#define F_LOR(a, b) ((a) || (b))

/* Integer arithmetic wraps, as unsigned arithmetic does: a signed sum that
 * overflows is computed in the unsigned type of the same width. */
#define INT_OPS(T, U)                                                          \
  switch (op) {                                                                \
  case MMP_SUM:                                                                \
    LOOP(U, F_SUM);                                                            \
    return;                                                                    \
  case MMP_PROD:                                                               \
    LOOP(U, F_PROD);                                                           \
    return;                                                                    \
  case MMP_MIN:                                                                \
    LOOP(T, F_MIN);                                                            \
    return;                                                                    \
  case MMP_MAX:                                                                \
    LOOP(T, F_MAX);                                                            \
    return;                                                                    \
  case MMP_BAND:                                                               \
    LOOP(U, F_BAND);                                                           \
    return;                                                                    \
  case MMP_BOR:                                                                \
    LOOP(U, F_BOR);                                                            \
    return;                                                                    \
  case MMP_BXOR:                                                               \
    LOOP(U, F_BXOR);                                                           \
    return;                                                                    \
  case MMP_LAND:                                                               \
    LOOP(T, F_LAND);                                                           \
    return;                                                                    \
  case MMP_LOR:                                                                \
    LOOP(T, F_LOR);                                                            \
    return;                                                                    \
  }

#define FLOAT_OPS(T)                                                           \
  switch (op) {                                                                \
  case MMP_SUM:                                                                \
    LOOP(T, F_SUM);                                                            \
    return;                                                                    \
  case MMP_PROD:                                                               \
    LOOP(T, F_PROD);                                                           \
    return;                                                                    \
  case MMP_MIN:                                                                \
    LOOP(T, F_MIN);                                                            \
    return;                                                                    \
  case MMP_MAX:                                                                \
    LOOP(T, F_MAX);                                                            \
    return;                                                                    \
  }

/* Small products of 8-bit and 16-bit unsigned values promote to int; the
 * unsigned wrap is what is meant. */
typedef unsigned char u8_t;
typedef unsigned short u16_t;

static void builtin(int op, int base, const void *in, void *inout, size_t n,
                    int right) {
  switch (base) {
  case MMP_BYTE:
  case MMP_UINT8:
    INT_OPS(uint8_t, u8_t);
    break;
  case MMP_INT8:
    INT_OPS(int8_t, u8_t);
    break;
  case MMP_UINT16:
    INT_OPS(uint16_t, u16_t);
    break;
  case MMP_INT16:
    INT_OPS(int16_t, u16_t);
    break;
  case MMP_UINT32:
    INT_OPS(uint32_t, uint32_t);
    break;
  case MMP_INT32:
    INT_OPS(int32_t, uint32_t);
    break;
  case MMP_UINT64:
    INT_OPS(uint64_t, uint64_t);
    break;
  case MMP_INT64:
    INT_OPS(int64_t, uint64_t);
    break;
  case MMP_FLOAT:
    FLOAT_OPS(float);
    break;
  case MMP_DOUBLE:
    FLOAT_OPS(double);
    break;
  }
  assert(0 && "operation checked before the collective started");
}

void mmp__reduce_apply(const void *in, void *inout, size_t n, int right,
                       void *arg) {
  mmp_op_t op = (int)((uintptr_t)arg >> 16);
  mmp_type_t type = (int)((uintptr_t)arg & 0xffff);
  mmp__type_info_t ti;
  user_op_t u;

  if (mmp__type_info(type, &ti) != 0 || ti.size == 0)
    return;
  if (op < HANDLE_BASE) {
    builtin(op, ti.base, in, inout, n / builtin_size[ti.base], right);
    return;
  }
  pthread_mutex_lock(&types_mu);
  u = user_ops[op - HANDLE_BASE];
  pthread_mutex_unlock(&types_mu);
  if (!right) {
    u.fn(in, inout, n / ti.size, type, u.ctx);
    return;
  }
  /* inout = inout o in: the user's function writes its right operand, so
   * the result goes through `in`'s place, which is scratch a REDUCE
   * op consumes. */
  u.fn(inout, (void *)(uintptr_t)in, n / ti.size, type, u.ctx);
  memcpy(inout, in, n);
}

static int reduce_local_body(const void *in, void *inout, size_t count,
                             mmp_type_t type, mmp_op_t op) {
  mmp__type_info_t ti;
  int commutative, rc;

  if ((rc = mmp__op_check(op, type, &commutative)) != 0 ||
      (rc = mmp__type_info(type, &ti)) != 0)
    return rc;
  if (count == 0)
    return 0;
  if (in == NULL || inout == NULL || count > SIZE_MAX / ti.size)
    return MMP_EINVAL;
  mmp__reduce_apply(in, inout, count * ti.size, 0, mmp__reduce_arg(op, type));
  return 0;
}

int mmp_reduce_local(const void *in, void *inout, size_t count, mmp_type_t type,
                     mmp_op_t op) {
  mmp__api_enter();
  return mmp__api_leave(reduce_local_body(in, inout, count, type, op),
                        __func__);
}
