/* SPDX-License-Identifier: MIT */
/*
 * Reduction operations. A predefined operation on a type libminimp knows
 * (the integers, float, double, bytes) is libminimp's own. The rest of
 * MPI's table (MPI_LXOR, long double, the complex types, MINLOC and
 * MAXLOC on the pair types) runs here, as libminimp user operations made
 * at MPI_Init in the same order on every rank, one per MPI operation; a
 * user's MPI_Op_create is one libminimp user operation. Those see whole
 * elements of a libminimp type of the MPI type's extent, which maps back
 * to the MPI type.
 */
#include <complex.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mpii.h"

struct mmpi_op_s mmpi_op_max = {MMPI__OP_MAX, 1, NULL, MMP_MAX, 0};
struct mmpi_op_s mmpi_op_min = {MMPI__OP_MIN, 1, NULL, MMP_MIN, 0};
struct mmpi_op_s mmpi_op_sum = {MMPI__OP_SUM, 1, NULL, MMP_SUM, 0};
struct mmpi_op_s mmpi_op_prod = {MMPI__OP_PROD, 1, NULL, MMP_PROD, 0};
struct mmpi_op_s mmpi_op_land = {MMPI__OP_LAND, 1, NULL, MMP_LAND, 0};
struct mmpi_op_s mmpi_op_band = {MMPI__OP_BAND, 1, NULL, MMP_BAND, 0};
struct mmpi_op_s mmpi_op_lor = {MMPI__OP_LOR, 1, NULL, MMP_LOR, 0};
struct mmpi_op_s mmpi_op_bor = {MMPI__OP_BOR, 1, NULL, MMP_BOR, 0};
struct mmpi_op_s mmpi_op_lxor = {MMPI__OP_LXOR, 1, NULL, 0, 0};
struct mmpi_op_s mmpi_op_bxor = {MMPI__OP_BXOR, 1, NULL, MMP_BXOR, 0};
struct mmpi_op_s mmpi_op_minloc = {MMPI__OP_MINLOC, 1, NULL, 0, 0};
struct mmpi_op_s mmpi_op_maxloc = {MMPI__OP_MAXLOC, 1, NULL, 0, 0};

/* libminimp's operation running each predefined one here, or 0. */
static mmp_op_t shim_op[MMPI__OP_COUNT];

/* 1 if MPI-3.1 (5.9.2) allows `op` on the predefined type `u`. */
static int op_applies(int op, MPI_Datatype u) {
  int c = u->cls;

  switch (op) {
  case MMPI__OP_MAX:
  case MMPI__OP_MIN:
    return c == MMPI__C_INT || c == MMPI__C_FLOAT || c == MMPI__C_LDOUBLE;
  case MMPI__OP_SUM:
  case MMPI__OP_PROD:
    return c == MMPI__C_INT || c == MMPI__C_FLOAT || c == MMPI__C_LDOUBLE ||
           c == MMPI__C_COMPLEX;
  case MMPI__OP_LAND:
  case MMPI__OP_LOR:
  case MMPI__OP_LXOR:
    return c == MMPI__C_INT || c == MMPI__C_BOOL;
  case MMPI__OP_BAND:
  case MMPI__OP_BOR:
  case MMPI__OP_BXOR:
    return c == MMPI__C_INT || c == MMPI__C_BYTE;
  case MMPI__OP_MINLOC:
  case MMPI__OP_MAXLOC:
    return c == MMPI__C_PAIR;
  default:
    return 0;
  }
}

/* 1 if libminimp runs `op` on `u` itself. */
static int op_native(MPI_Op op, MPI_Datatype u) {
  if (op->native == 0 || u->native < 0)
    return 0;
  switch (op->id) {
  case MMPI__OP_BAND:
  case MMPI__OP_BOR:
  case MMPI__OP_BXOR:
    return u->native != MMP_FLOAT && u->native != MMP_DOUBLE;
  case MMPI__OP_LAND:
  case MMPI__OP_LOR:
    return u->native != MMP_FLOAT && u->native != MMP_DOUBLE &&
           u->native != MMP_BYTE;
  default:
    return u->native != MMP_BYTE;
  }
}

/* ---- The arithmetic libminimp lacks ---------------------------------------
 */

#define LOOP(T, EXPR)                                                          \
  do {                                                                         \
    const T *a = in;                                                           \
    T *b = inout;                                                              \
    for (size_t k = 0; k < n; k++)                                             \
      b[k] = EXPR;                                                             \
  } while (0)

#define LXOR(T) LOOP(T, (T)(!a[k] != !b[k]))

/* MINLOC and MAXLOC: the better value, and on a tie the smaller index. */
#define LOC(S, BETTER)                                                         \
  do {                                                                         \
    const S *a = in;                                                           \
    S *b = inout;                                                              \
    for (size_t k = 0; k < n; k++)                                             \
      if (a[k].v BETTER b[k].v || (a[k].v == b[k].v && a[k].i < b[k].i))       \
        b[k] = a[k];                                                           \
  } while (0)

#define PAIR_CASE(ID, S)                                                       \
  case MMPI__T_##ID:                                                           \
    if (op == MMPI__OP_MINLOC)                                                 \
      LOC(S, <);                                                               \
    else                                                                       \
      LOC(S, >);                                                               \
    return

#define ARITH(T)                                                               \
  do {                                                                         \
    if (op == MMPI__OP_SUM)                                                    \
      LOOP(T, a[k] + b[k]);                                                    \
    else if (op == MMPI__OP_PROD)                                              \
      LOOP(T, a[k] * b[k]);                                                    \
  } while (0)

/* inout[k] = in[k] op inout[k] for n elements of the predefined type u,
 * for the pairs (op, u) that libminimp does not run itself. */
static void predef_apply(int op, MPI_Datatype u, const void *in, void *inout,
                         size_t n) {
  if (op == MMPI__OP_LXOR) {
    switch (u->size) {
    case 1:
      LXOR(uint8_t);
      return;
    case 2:
      LXOR(uint16_t);
      return;
    case 4:
      LXOR(uint32_t);
      return;
    case 8:
      LXOR(uint64_t);
      return;
    }
    return;
  }
  switch (u->id) {
  case MMPI__T_LONG_DOUBLE:
    if (op == MMPI__OP_MAX)
      LOOP(long double, a[k] > b[k] ? a[k] : b[k]);
    else if (op == MMPI__OP_MIN)
      LOOP(long double, a[k] < b[k] ? a[k] : b[k]);
    else
      ARITH(long double);
    return;
  case MMPI__T_FLOAT_COMPLEX:
    ARITH(float _Complex);
    return;
  case MMPI__T_DOUBLE_COMPLEX:
    ARITH(double _Complex);
    return;
  case MMPI__T_LONG_DOUBLE_COMPLEX:
    ARITH(long double _Complex);
    return;
    PAIR_CASE(FLOAT_INT, mmpi__float_int_t);
    PAIR_CASE(DOUBLE_INT, mmpi__double_int_t);
    PAIR_CASE(LONG_INT, mmpi__long_int_t);
    PAIR_CASE(2INT, mmpi__2int_t);
    PAIR_CASE(SHORT_INT, mmpi__short_int_t);
    PAIR_CASE(LONG_DOUBLE_INT, mmpi__long_double_int_t);
  }
}

/* libminimp's callback for a predefined operation run here: `type` is
 * the element type of a predefined MPI type. */
static void predef_fn(const void *in, void *inout, size_t count,
                      mmp_type_t type, void *ctx) {
  MPI_Datatype u = mmpi__type_of_elem(type);

  if (u != NULL)
    predef_apply((int)(intptr_t)ctx, u, in, inout, count);
}

/* libminimp's callback for a user operation: the MPI function sees the
 * elements of its type from their lower bound on, at most INT_MAX at a
 * time. */
static void user_fn(const void *in, void *inout, size_t count, mmp_type_t type,
                    void *ctx) {
  MPI_Op op = ctx;
  MPI_Datatype t = mmpi__type_of_elem(type);
  const char *a;
  char *b;

  if (t == NULL)
    return;
  a = (const char *)in - t->lb;
  b = (char *)inout - t->lb;
  while (count > 0) {
    int n = count > INT_MAX ? INT_MAX : (int)count;
    op->fn((void *)a, b, &n, &t);
    a += (size_t)n * (size_t)mmpi__extent(t);
    b += (size_t)n * (size_t)mmpi__extent(t);
    count -= (size_t)n;
  }
}

int mmpi__ops_init(void) {
  static const int here[] = {MMPI__OP_MAX,   MMPI__OP_MIN,  MMPI__OP_SUM,
                             MMPI__OP_PROD,  MMPI__OP_LXOR, MMPI__OP_MINLOC,
                             MMPI__OP_MAXLOC};
  size_t i;
  int rc;

  for (i = 0; i < sizeof(here) / sizeof(here[0]); i++)
    if ((rc = mmp_op_create(predef_fn, 1, (void *)(intptr_t)here[i],
                            &shim_op[here[i]])) != 0)
      return mmpi__code(rc);
  return MPI_SUCCESS;
}

void mmpi__ops_fini(void) {
  int i;

  for (i = 0; i < MMPI__OP_COUNT; i++)
    if (shim_op[i] != 0)
      (void)mmp_op_free(&shim_op[i]);
}

int mmpi__red_plan(MPI_Datatype t, int count, MPI_Op op, mmpi__red_t *out) {
  MPI_Datatype u = (MPI_Datatype)t->unit;
  int rc;

  if (op == MPI_OP_NULL)
    return MPI_ERR_OP;
  if (count < 0)
    return MPI_ERR_COUNT;
  if ((rc = mmpi__type_ok(t)) != MPI_SUCCESS)
    return rc;
  memset(out, 0, sizeof(*out));
  if (op->id == 0) {
    /* The user function sees elements as they lie in memory. */
    if (t->size > 0 && (t->tlb < t->lb || t->tub > t->ub))
      return MPI_ERR_TYPE;
    if (count > 0 && (rc = mmpi__type_elem(t, &out->type)) != MPI_SUCCESS)
      return rc;
    out->op = op->mop;
    out->count = (size_t)count;
    out->shift = t->lb;
    return MPI_SUCCESS;
  }
  if (u == NULL)
    return MPI_ERR_TYPE; /* mixed basic types: only user operations */
  if (!op_applies(op->id, u))
    return MPI_ERR_OP;
  out->count = (size_t)count * t->nunits;
  if (op_native(op, u)) {
    out->type = u->native;
    out->op = op->native;
  } else {
    out->op = shim_op[op->id];
    if (out->count > 0 && (rc = mmpi__type_elem(u, &out->type)) != MPI_SUCCESS)
      return rc;
  }
  if (t->predefined)
    return MPI_SUCCESS;
  if ((MPI_Aint)u->size == mmpi__extent(u)) {
    /* Basic elements with no holes: as they are, or packed. */
    out->shift = t->tlb;
    out->pack = !t->contig;
    return MPI_SUCCESS;
  }
  if (!t->unit_dense)
    return MPI_ERR_TYPE; /* pairs scattered with holes: docs/mpi.md */
  out->shift = t->lb;
  return MPI_SUCCESS;
}

int MPI_Op_create(MPI_User_function *user_fn_, int commute, MPI_Op *op) {
  MPI_Op o;
  int rc;

  if (user_fn_ == NULL || op == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  if ((o = calloc(1, sizeof(*o))) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  o->commute = commute != 0;
  o->fn = user_fn_;
  atomic_init(&o->refs, 1);
  if ((rc = mmp_op_create(user_fn, o->commute, o, &o->mop)) != 0) {
    free(o);
    return mmpi__raise(MPI_COMM_NULL, mmpi__code(rc), __func__);
  }
  *op = o;
  return MPI_SUCCESS;
}

void mmpi__op_retain(MPI_Op op) {
  if (op->id == 0)
    atomic_fetch_add(&op->refs, 1);
}

void mmpi__op_release(MPI_Op op) {
  if (op->id == 0 && atomic_fetch_sub(&op->refs, 1) == 1) {
    (void)mmp_op_free(&op->mop);
    free(op);
  }
}

int MPI_Op_free(MPI_Op *op) {
  if (op == NULL || *op == MPI_OP_NULL || (*op)->id != 0)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_OP, __func__);
  /* Reductions under way with it keep it until they complete. */
  mmpi__op_release(*op);
  *op = MPI_OP_NULL;
  return MPI_SUCCESS;
}

int MPI_Op_commutative(MPI_Op op, int *commute) {
  if (op == MPI_OP_NULL || commute == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_OP, __func__);
  *commute = op->commute;
  return MPI_SUCCESS;
}

static int reduce_local(const void *in, void *inout, int count, MPI_Datatype t,
                        MPI_Op op) {
  mmpi__red_t plan;
  size_t n;
  int rc;

  if ((rc = mmpi__red_plan(t, count, op, &plan)) != MPI_SUCCESS)
    return rc;
  if (count == 0)
    return MPI_SUCCESS;
  if (op->id == 0) {
    op->fn((void *)in, inout, &count, &t);
    return MPI_SUCCESS;
  }
  if (!plan.pack)
    return mmpi__code(mmp_reduce_local((const char *)in + plan.shift,
                                       (char *)inout + plan.shift, plan.count,
                                       plan.type, plan.op));
  n = (size_t)count * t->size;
  {
    char *a = malloc(2 * n);
    if (a == NULL)
      return MPI_ERR_NO_MEM;
    mmpi__pack(in, (size_t)count, t, a);
    mmpi__pack(inout, (size_t)count, t, a + n);
    rc = mmpi__code(mmp_reduce_local(a, a + n, plan.count, plan.type, plan.op));
    if (rc == MPI_SUCCESS)
      mmpi__unpack(a + n, n, inout, (size_t)count, t);
    free(a);
  }
  return rc;
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count,
                     MPI_Datatype datatype, MPI_Op op) {
  return mmpi__raise(MPI_COMM_NULL,
                     reduce_local(inbuf, inoutbuf, count, datatype, op),
                     __func__);
}
