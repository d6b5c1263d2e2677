/* SPDX-License-Identifier: MIT */
/*
 * Datatypes. A type is kept as its flattened typemap: runs of bytes at
 * displacements from an element's start, merged where they touch, each
 * made of basic elements of one size (for MPI_Get_elements). Constructors
 * replicate their old types' runs; the bounds follow MPI-3.1 section 4.1
 * (a struct's extent is padded to its largest alignment unless a resized
 * type inside set its bounds). A type whose elements lie end to end in
 * one run is contiguous: communication hands libminimp the caller's
 * buffer; any other is packed into a contiguous buffer around the call.
 */
#include <complex.h>
#include <limits.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "mpii.h"

/* ---- Predefined types ----------------------------------------------------
 */

/* XX(object, id, C type, class, signed) */
#define SCALARS(XX)                                                            \
  XX(char, CHAR, char, INT, CHAR_MIN < 0)                                      \
  XX(signed_char, SIGNED_CHAR, signed char, INT, 1)                            \
  XX(unsigned_char, UNSIGNED_CHAR, unsigned char, INT, 0)                      \
  XX(byte, BYTE, unsigned char, BYTE, 0)                                       \
  XX(wchar, WCHAR, wchar_t, INT, WCHAR_MIN < 0)                                \
  XX(short, SHORT, short, INT, 1)                                              \
  XX(unsigned_short, UNSIGNED_SHORT, unsigned short, INT, 0)                   \
  XX(int, INT, int, INT, 1)                                                    \
  XX(unsigned, UNSIGNED, unsigned, INT, 0)                                     \
  XX(long, LONG, long, INT, 1)                                                 \
  XX(unsigned_long, UNSIGNED_LONG, unsigned long, INT, 0)                      \
  XX(long_long, LONG_LONG, long long, INT, 1)                                  \
  XX(unsigned_long_long, UNSIGNED_LONG_LONG, unsigned long long, INT, 0)       \
  XX(float, FLOAT, float, FLOAT, 1)                                            \
  XX(double, DOUBLE, double, FLOAT, 1)                                         \
  XX(long_double, LONG_DOUBLE, long double, LDOUBLE, 1)                        \
  XX(int8_t, INT8, int8_t, INT, 1)                                             \
  XX(int16_t, INT16, int16_t, INT, 1)                                          \
  XX(int32_t, INT32, int32_t, INT, 1)                                          \
  XX(int64_t, INT64, int64_t, INT, 1)                                          \
  XX(uint8_t, UINT8, uint8_t, INT, 0)                                          \
  XX(uint16_t, UINT16, uint16_t, INT, 0)                                       \
  XX(uint32_t, UINT32, uint32_t, INT, 0)                                       \
  XX(uint64_t, UINT64, uint64_t, INT, 0)                                       \
  XX(c_bool, BOOL, bool, BOOL, 0)                                              \
  XX(c_float_complex, FLOAT_COMPLEX, float _Complex, COMPLEX, 1)               \
  XX(c_double_complex, DOUBLE_COMPLEX, double _Complex, COMPLEX, 1)            \
  XX(c_long_double_complex, LONG_DOUBLE_COMPLEX, long double _Complex,         \
     COMPLEX, 1)                                                               \
  XX(aint, AINT, MPI_Aint, INT, 1)                                             \
  XX(offset, OFFSET, MPI_Offset, INT, 1)                                       \
  XX(count, COUNT, MPI_Count, INT, 1)                                          \
  XX(packed, PACKED, unsigned char, PACKED, 0)

/* XX(object, id, C struct) */
#define PAIRS(XX)                                                              \
  XX(float_int, FLOAT_INT, mmpi__float_int_t)                                  \
  XX(double_int, DOUBLE_INT, mmpi__double_int_t)                               \
  XX(long_int, LONG_INT, mmpi__long_int_t)                                     \
  XX(2int, 2INT, mmpi__2int_t)                                                 \
  XX(short_int, SHORT_INT, mmpi__short_int_t)                                  \
  XX(long_double_int, LONG_DOUBLE_INT, mmpi__long_double_int_t)

#define DEFINE(obj, ...) struct mmpi_type_s mmpi_##obj;
SCALARS(DEFINE)
PAIRS(DEFINE)
#undef DEFINE

/* The element types made for reductions: who owns which (mmpi__mu). */
typedef struct elem_s {
  mmp_type_t mt;
  MPI_Datatype t;
} elem_t;
static elem_t elems[64];

/* libminimp's type for integers of `size` bytes. */
static mmp_type_t native_int(size_t size, int is_signed) {
  switch (size) {
  case 1:
    return is_signed ? MMP_INT8 : MMP_UINT8;
  case 2:
    return is_signed ? MMP_INT16 : MMP_UINT16;
  case 4:
    return is_signed ? MMP_INT32 : MMP_UINT32;
  case 8:
    return is_signed ? MMP_INT64 : MMP_UINT64;
  default:
    return -1;
  }
}

static void predef(MPI_Datatype t, int id, int cls, size_t size, size_t align,
                   mmp_type_t native) {
  t->predefined = 1;
  t->id = id;
  t->cls = cls;
  t->committed = 1;
  t->size = size;
  t->lb = t->tlb = 0;
  t->ub = t->tub = (MPI_Aint)size;
  t->align = align;
  t->contig = 1;
  t->nblocks = 1;
  t->blocks = t->one;
  t->one[0].disp = 0;
  t->one[0].len = size;
  t->one[0].esize = size;
  t->nelems = 1;
  t->unit = t;
  t->nunits = 1;
  t->unit_dense = 1;
  t->native = native;
  t->elem = -1;
}

static void types_init_once(void) {
#define SCALAR(obj, ID, T, CLS, SIGNED)                                        \
  predef(&mmpi_##obj, MMPI__T_##ID, MMPI__C_##CLS, sizeof(T), alignof(T),      \
         MMPI__C_##CLS == MMPI__C_INT || MMPI__C_##CLS == MMPI__C_BOOL         \
             ? native_int(sizeof(T), SIGNED)                                   \
             : -1);
  SCALARS(SCALAR)
#undef SCALAR
  mmpi_float.native = MMP_FLOAT;
  mmpi_double.native = MMP_DOUBLE;
  mmpi_byte.native = MMP_BYTE;
  /* A pair: the value, then the int, with C's padding between and after. */
#define PAIR(obj, ID, S)                                                       \
  predef(&mmpi_##obj, MMPI__T_##ID, MMPI__C_PAIR, sizeof(S), alignof(S), -1);  \
  mmpi_##obj.size = sizeof(((S *)0)->v) + sizeof(int);                         \
  mmpi_##obj.tub = (MPI_Aint)(offsetof(S, i) + sizeof(int));                   \
  mmpi_##obj.one[0].len = mmpi_##obj.one[0].esize = sizeof(((S *)0)->v);       \
  mmpi_##obj.one[1].disp = (MPI_Aint)offsetof(S, i);                           \
  mmpi_##obj.one[1].len = mmpi_##obj.one[1].esize = sizeof(int);               \
  mmpi_##obj.nblocks =                                                         \
      offsetof(S, i) == sizeof(int) && sizeof(((S *)0)->v) == sizeof(int) ? 1  \
                                                                          : 2; \
  if (mmpi_##obj.nblocks == 1)                                                 \
    mmpi_##obj.one[0].len = mmpi_##obj.size;                                   \
  mmpi_##obj.nelems = 2;                                                       \
  mmpi_##obj.contig = mmpi_##obj.size == sizeof(S) && mmpi_##obj.nblocks == 1;
  PAIRS(PAIR)
#undef PAIR
}

void mmpi__types_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;

  pthread_once(&once, types_init_once);
}

void mmpi__types_fini(void) {
  size_t i;

  pthread_mutex_lock(&mmpi__mu);
  for (i = 0; i < sizeof(elems) / sizeof(elems[0]); i++)
    if (elems[i].t != NULL) {
      (void)mmp_type_free(&elems[i].mt);
      elems[i].t->elem = -1;
      elems[i].t = NULL;
    }
  pthread_mutex_unlock(&mmpi__mu);
}

int mmpi__type_elem(MPI_Datatype t, mmp_type_t *out) {
  MPI_Aint ext = mmpi__extent(t);
  int rc = MPI_SUCCESS;
  size_t i;

  pthread_mutex_lock(&mmpi__mu);
  if (t->elem < 0) {
    for (i = 0; i < sizeof(elems) / sizeof(elems[0]) && elems[i].t; i++)
      ;
    if (ext <= 0)
      rc = MPI_ERR_TYPE;
    else if (i == sizeof(elems) / sizeof(elems[0]))
      rc = MPI_ERR_NO_MEM; /* libminimp holds 64 such types at once */
    else if ((rc = mmpi__code(mmp_type_contiguous((size_t)ext, MMP_BYTE,
                                                  &t->elem))) == MPI_SUCCESS) {
      elems[i].mt = t->elem;
      elems[i].t = t;
    } else {
      t->elem = -1;
    }
  }
  *out = t->elem;
  pthread_mutex_unlock(&mmpi__mu);
  return rc;
}

MPI_Datatype mmpi__type_of_elem(mmp_type_t mt) {
  MPI_Datatype t = NULL;
  size_t i;

  pthread_mutex_lock(&mmpi__mu);
  for (i = 0; i < sizeof(elems) / sizeof(elems[0]) && t == NULL; i++)
    if (elems[i].t != NULL && elems[i].mt == mt)
      t = elems[i].t;
  pthread_mutex_unlock(&mmpi__mu);
  return t;
}

void mmpi__type_retain(MPI_Datatype t) {
  if (!t->predefined)
    atomic_fetch_add(&t->refs, 1);
}

void mmpi__type_release(MPI_Datatype t) {
  size_t i;

  if (t->predefined || atomic_fetch_sub(&t->refs, 1) != 1)
    return;
  pthread_mutex_lock(&mmpi__mu);
  for (i = 0; i < sizeof(elems) / sizeof(elems[0]); i++)
    if (elems[i].t == t) {
      (void)mmp_type_free(&elems[i].mt);
      elems[i].t = NULL;
    }
  pthread_mutex_unlock(&mmpi__mu);
  free(t->blocks);
  free(t);
}

/* ---- Packing -------------------------------------------------------------
 */

static inline const char *at(const void *base, MPI_Aint off) {
  return (const char *)((uintptr_t)base + (uintptr_t)off);
}

void mmpi__pack(const void *buf, size_t count, MPI_Datatype t, void *out) {
  MPI_Aint ext = mmpi__extent(t);
  char *o = out;
  size_t i, b;

  if (t->contig) {
    if (count * t->size > 0)
      memcpy(out, at(buf, t->tlb), count * t->size);
    return;
  }
  for (i = 0; i < count; i++) {
    const char *base = at(buf, (MPI_Aint)i * ext);
    for (b = 0; b < t->nblocks; b++) {
      memcpy(o, at(base, t->blocks[b].disp), t->blocks[b].len);
      o += t->blocks[b].len;
    }
  }
}

void mmpi__unpack(const void *in, size_t bytes, void *buf, size_t count,
                  MPI_Datatype t) {
  MPI_Aint ext = mmpi__extent(t);
  const char *p = in;
  size_t i, b;

  if (t->contig) {
    size_t n = count * t->size < bytes ? count * t->size : bytes;
    if (n > 0)
      memcpy((void *)at(buf, t->tlb), in, n);
    return;
  }
  for (i = 0; i < count && bytes > 0; i++) {
    char *base = (char *)at(buf, (MPI_Aint)i * ext);
    for (b = 0; b < t->nblocks && bytes > 0; b++) {
      size_t n = t->blocks[b].len < bytes ? t->blocks[b].len : bytes;
      memcpy((void *)at(base, t->blocks[b].disp), p, n);
      p += n;
      bytes -= n;
    }
  }
}

/* ---- Constructors ----------------------------------------------------------
 */

/* A type under construction. */
typedef struct build_s {
  mmpi__block_t *b;
  size_t n, cap;
  MPI_Aint lb, ub, tlb, tub;
  int any;  /* an element was placed (lb and ub are set) */
  int tany; /* a byte of data was placed (tlb and tub are set) */
  size_t size, nelems, align, nunits;
  int sticky;
  const struct mmpi_type_s *unit;
  int mixed;
  int err;
} build_t;

static void push(build_t *bd, MPI_Aint disp, size_t len, size_t esize) {
  mmpi__block_t *last = bd->n > 0 ? &bd->b[bd->n - 1] : NULL;

  if (len == 0)
    return;
  if (last != NULL && last->esize == esize &&
      last->disp + (MPI_Aint)last->len == disp) {
    last->len += len;
    return;
  }
  if (bd->n == bd->cap) {
    size_t cap = bd->cap ? 2 * bd->cap : 8;
    mmpi__block_t *nb = realloc(bd->b, cap * sizeof(*nb));
    if (nb == NULL) {
      bd->err = MPI_ERR_NO_MEM;
      return;
    }
    bd->b = nb;
    bd->cap = cap;
  }
  bd->b[bd->n].disp = disp;
  bd->b[bd->n].len = len;
  bd->b[bd->n].esize = esize;
  bd->n++;
}

/* Places `count` elements of `t`, the first at `disp`, each `stride`
 * bytes after the one before. */
static void place(build_t *bd, MPI_Datatype t, size_t count, MPI_Aint disp,
                  MPI_Aint stride) {
  size_t i, k;

  if (count == 0)
    return;
  for (i = 0; i < count && bd->err == 0; i++) {
    MPI_Aint base = disp + (MPI_Aint)i * stride;
    for (k = 0; k < t->nblocks; k++)
      push(bd, base + t->blocks[k].disp, t->blocks[k].len, t->blocks[k].esize);
  }
  {
    MPI_Aint last = disp + (MPI_Aint)(count - 1) * stride;
    MPI_Aint lo = (stride < 0 ? last : disp), hi = (stride < 0 ? disp : last);
    if (!bd->any || lo + t->lb < bd->lb)
      bd->lb = lo + t->lb;
    if (!bd->any || hi + t->ub > bd->ub)
      bd->ub = hi + t->ub;
    bd->any = 1;
    if (t->size > 0) {
      if (!bd->tany || lo + t->tlb < bd->tlb)
        bd->tlb = lo + t->tlb;
      if (!bd->tany || hi + t->tub > bd->tub)
        bd->tub = hi + t->tub;
      bd->tany = 1;
    }
  }
  bd->size += count * t->size;
  bd->nelems += count * t->nelems;
  bd->nunits += count * t->nunits;
  if (t->align > bd->align)
    bd->align = t->align;
  bd->sticky |= t->sticky;
  if (t->unit == NULL || (bd->unit != NULL && bd->unit != t->unit))
    bd->mixed = 1;
  else
    bd->unit = t->unit;
}

/* Makes the type of `bd` (which it frees) into *out. */
static int finish(build_t *bd, MPI_Datatype *out) {
  MPI_Datatype t;

  if (bd->err != 0) {
    free(bd->b);
    return bd->err;
  }
  if ((t = calloc(1, sizeof(*t))) == NULL) {
    free(bd->b);
    return MPI_ERR_NO_MEM;
  }
  t->id = -1;
  atomic_init(&t->refs, 1);
  t->size = bd->size;
  t->lb = bd->any ? bd->lb : 0;
  t->ub = bd->any ? bd->ub : 0;
  t->tlb = bd->tany ? bd->tlb : 0;
  t->tub = bd->tany ? bd->tub : 0;
  t->align = bd->align ? bd->align : 1;
  t->sticky = bd->sticky;
  t->nblocks = bd->n;
  t->blocks = bd->b;
  t->nelems = bd->nelems;
  t->unit = bd->mixed ? NULL : bd->unit;
  t->nunits = bd->nunits;
  t->contig = t->size == 0 || (t->nblocks == 1 && t->blocks[0].len == t->size &&
                               t->ub - t->lb == (MPI_Aint)t->size);
  t->native = -1;
  t->elem = -1;
  *out = t;
  return MPI_SUCCESS;
}

static void build_init(build_t *bd) {
  memset(bd, 0, sizeof(*bd));
}

/* Checks a constructor's old type and output. */
static int old_ok(MPI_Datatype old, MPI_Datatype *newtype) {
  if (newtype == NULL)
    return MPI_ERR_ARG;
  return old == MPI_DATATYPE_NULL ? MPI_ERR_TYPE : MPI_SUCCESS;
}

#define RETURN(rc) return mmpi__raise(MPI_COMM_NULL, (rc), __func__)

int MPI_Type_contiguous(int count, MPI_Datatype oldtype,
                        MPI_Datatype *newtype) {
  build_t bd;
  int rc;

  if ((rc = old_ok(oldtype, newtype)) != MPI_SUCCESS)
    RETURN(rc);
  if (count < 0)
    RETURN(MPI_ERR_COUNT);
  mmpi__types_init();
  build_init(&bd);
  place(&bd, oldtype, (size_t)count, 0, mmpi__extent(oldtype));
  rc = finish(&bd, newtype);
  if (rc == MPI_SUCCESS)
    (*newtype)->unit_dense =
        oldtype->unit_dense && oldtype->unit != NULL &&
        mmpi__extent(oldtype) ==
            (MPI_Aint)oldtype->nunits * mmpi__extent(oldtype->unit);
  RETURN(rc);
}

static int hvector(int count, int blocklength, MPI_Aint stride,
                   MPI_Datatype old, MPI_Datatype *newtype) {
  build_t bd;
  int i, rc;

  if ((rc = old_ok(old, newtype)) != MPI_SUCCESS)
    return rc;
  if (count < 0 || blocklength < 0)
    return MPI_ERR_COUNT;
  mmpi__types_init();
  build_init(&bd);
  for (i = 0; i < count; i++)
    place(&bd, old, (size_t)blocklength, (MPI_Aint)i * stride,
          mmpi__extent(old));
  return finish(&bd, newtype);
}

int MPI_Type_vector(int count, int blocklength, int stride,
                    MPI_Datatype oldtype, MPI_Datatype *newtype) {
  MPI_Aint ext = oldtype != MPI_DATATYPE_NULL ? mmpi__extent(oldtype) : 0;

  RETURN(hvector(count, blocklength, (MPI_Aint)stride * ext, oldtype, newtype));
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                            MPI_Datatype oldtype, MPI_Datatype *newtype) {
  RETURN(hvector(count, blocklength, stride, oldtype, newtype));
}

/* The indexed family: block i has lens[i] (or `len` when lens is NULL)
 * elements at disps[i] (int units of the old extent) or hdisps[i]
 * (bytes). */
static int indexed(int count, const int *lens, int len, const int *disps,
                   const MPI_Aint *hdisps, MPI_Datatype old,
                   MPI_Datatype *newtype) {
  build_t bd;
  int i, rc;

  if ((rc = old_ok(old, newtype)) != MPI_SUCCESS)
    return rc;
  if (count < 0 || (lens == NULL && len < 0))
    return MPI_ERR_COUNT;
  if (count > 0 && (disps == NULL && hdisps == NULL))
    return MPI_ERR_ARG;
  mmpi__types_init();
  build_init(&bd);
  for (i = 0; i < count; i++) {
    int n = lens != NULL ? lens[i] : len;
    MPI_Aint d =
        hdisps != NULL ? hdisps[i] : (MPI_Aint)disps[i] * mmpi__extent(old);
    if (n < 0) {
      free(bd.b);
      return MPI_ERR_COUNT;
    }
    place(&bd, old, (size_t)n, d, mmpi__extent(old));
  }
  return finish(&bd, newtype);
}

int MPI_Type_indexed(int count, const int blocklengths[],
                     const int displacements[], MPI_Datatype oldtype,
                     MPI_Datatype *newtype) {
  if (count > 0 && blocklengths == NULL)
    RETURN(MPI_ERR_ARG);
  RETURN(
      indexed(count, blocklengths, 0, displacements, NULL, oldtype, newtype));
}

int MPI_Type_create_hindexed(int count, const int blocklengths[],
                             const MPI_Aint displacements[],
                             MPI_Datatype oldtype, MPI_Datatype *newtype) {
  if (count > 0 && blocklengths == NULL)
    RETURN(MPI_ERR_ARG);
  RETURN(
      indexed(count, blocklengths, 0, NULL, displacements, oldtype, newtype));
}

int MPI_Type_create_indexed_block(int count, int blocklength,
                                  const int displacements[],
                                  MPI_Datatype oldtype, MPI_Datatype *newtype) {
  RETURN(
      indexed(count, NULL, blocklength, displacements, NULL, oldtype, newtype));
}

int MPI_Type_create_hindexed_block(int count, int blocklength,
                                   const MPI_Aint displacements[],
                                   MPI_Datatype oldtype,
                                   MPI_Datatype *newtype) {
  RETURN(
      indexed(count, NULL, blocklength, NULL, displacements, oldtype, newtype));
}

static int create_struct(int count, const int lens[], const MPI_Aint disps[],
                         const MPI_Datatype types[], MPI_Datatype *newtype) {
  build_t bd;
  int i;

  if (newtype == NULL ||
      (count > 0 && (lens == NULL || disps == NULL || types == NULL)))
    return MPI_ERR_ARG;
  if (count < 0)
    return MPI_ERR_COUNT;
  mmpi__types_init();
  build_init(&bd);
  for (i = 0; i < count; i++) {
    if (types[i] == MPI_DATATYPE_NULL || lens[i] < 0) {
      free(bd.b);
      return types[i] == MPI_DATATYPE_NULL ? MPI_ERR_TYPE : MPI_ERR_COUNT;
    }
    place(&bd, types[i], (size_t)lens[i], disps[i], mmpi__extent(types[i]));
  }
  /* C's padding: the extent rounds up to the strictest alignment inside,
   * unless a resized type set the bounds (MPI-3.1 4.1.6). */
  if (!bd.sticky && bd.any && bd.align > 1) {
    MPI_Aint ext = bd.ub - bd.lb, a = (MPI_Aint)bd.align;
    bd.ub += (a - ext % a) % a;
  }
  return finish(&bd, newtype);
}

int MPI_Type_create_struct(int count, const int blocklengths[],
                           const MPI_Aint displacements[],
                           const MPI_Datatype types[], MPI_Datatype *newtype) {
  RETURN(create_struct(count, blocklengths, displacements, types, newtype));
}

static int copy_type(MPI_Datatype old, MPI_Datatype *newtype) {
  build_t bd;
  int rc;

  build_init(&bd);
  place(&bd, old, 1, 0, 0);
  if ((rc = finish(&bd, newtype)) != MPI_SUCCESS)
    return rc;
  (*newtype)->unit_dense = old->unit_dense;
  return MPI_SUCCESS;
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                            MPI_Datatype *newtype) {
  MPI_Datatype t;
  int rc;

  if ((rc = old_ok(oldtype, newtype)) != MPI_SUCCESS)
    RETURN(rc);
  mmpi__types_init();
  if ((rc = copy_type(oldtype, &t)) != MPI_SUCCESS)
    RETURN(rc);
  t->lb = lb;
  t->ub = lb + extent;
  t->sticky = 1;
  t->contig = t->size == 0 || (t->nblocks == 1 && t->blocks[0].len == t->size &&
                               extent == (MPI_Aint)t->size);
  t->unit_dense =
      t->unit_dense && lb == oldtype->lb && extent == mmpi__extent(oldtype);
  *newtype = t;
  return MPI_SUCCESS;
}

int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype) {
  MPI_Datatype t;
  int rc;

  if ((rc = old_ok(oldtype, newtype)) != MPI_SUCCESS)
    RETURN(rc);
  mmpi__types_init();
  if ((rc = copy_type(oldtype, &t)) != MPI_SUCCESS)
    RETURN(rc);
  /* The same bounds exactly, and committed if the old one is. */
  t->lb = oldtype->lb;
  t->ub = oldtype->ub;
  t->sticky = oldtype->sticky;
  t->contig = oldtype->contig;
  t->committed = oldtype->predefined || oldtype->committed;
  *newtype = t;
  return MPI_SUCCESS;
}

int MPI_Type_commit(MPI_Datatype *datatype) {
  if (datatype == NULL || *datatype == MPI_DATATYPE_NULL)
    RETURN(MPI_ERR_TYPE);
  if (!(*datatype)->predefined)
    (*datatype)->committed = 1;
  return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *datatype) {
  if (datatype == NULL || *datatype == MPI_DATATYPE_NULL ||
      (*datatype)->predefined)
    RETURN(MPI_ERR_TYPE);
  mmpi__type_release(*datatype);
  *datatype = MPI_DATATYPE_NULL;
  return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size) {
  if (datatype == MPI_DATATYPE_NULL || size == NULL)
    RETURN(MPI_ERR_TYPE);
  *size = datatype->size > INT_MAX ? MPI_UNDEFINED : (int)datatype->size;
  return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  if (datatype == MPI_DATATYPE_NULL || lb == NULL || extent == NULL)
    RETURN(MPI_ERR_TYPE);
  *lb = datatype->lb;
  *extent = mmpi__extent(datatype);
  return MPI_SUCCESS;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
                             MPI_Aint *true_extent) {
  if (datatype == MPI_DATATYPE_NULL || true_lb == NULL || true_extent == NULL)
    RETURN(MPI_ERR_TYPE);
  *true_lb = datatype->tlb;
  *true_extent = datatype->tub - datatype->tlb;
  return MPI_SUCCESS;
}

int MPI_Get_address(const void *location, MPI_Aint *address) {
  if (address == NULL)
    RETURN(MPI_ERR_ARG);
  *address = (MPI_Aint)(uintptr_t)location;
  return MPI_SUCCESS;
}

/* ---- Counting ------------------------------------------------------------
 */

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  size_t n;

  if (status == NULL || count == NULL)
    RETURN(MPI_ERR_ARG);
  if (mmpi__type_ok(datatype) != MPI_SUCCESS)
    RETURN(MPI_ERR_TYPE);
  if (datatype->size == 0) {
    *count = 0;
    return MPI_SUCCESS;
  }
  n = status->mmpi_bytes / datatype->size;
  *count = status->mmpi_bytes % datatype->size != 0 || n > INT_MAX
               ? MPI_UNDEFINED
               : (int)n;
  return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype,
                     int *count) {
  size_t bytes, n, b;

  if (status == NULL || count == NULL)
    RETURN(MPI_ERR_ARG);
  if (mmpi__type_ok(datatype) != MPI_SUCCESS)
    RETURN(MPI_ERR_TYPE);
  if (datatype->size == 0) {
    *count = 0;
    return MPI_SUCCESS;
  }
  bytes = status->mmpi_bytes;
  n = bytes / datatype->size * datatype->nelems;
  bytes %= datatype->size;
  /* The last element, partly received: its whole basic elements. */
  for (b = 0; b < datatype->nblocks && bytes > 0; b++) {
    const mmpi__block_t *k = &datatype->blocks[b];
    size_t take = bytes < k->len ? bytes : k->len;
    if (take % k->esize != 0) {
      *count = MPI_UNDEFINED;
      return MPI_SUCCESS;
    }
    n += take / k->esize;
    bytes -= take;
  }
  *count = n > INT_MAX ? MPI_UNDEFINED : (int)n;
  return MPI_SUCCESS;
}

int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype,
             void *outbuf, int outsize, int *position, MPI_Comm comm) {
  size_t need;

  (void)comm; /* every rank has the same representation */
  if (mmpi__type_ok(datatype) != MPI_SUCCESS)
    RETURN(MPI_ERR_TYPE);
  if (incount < 0 || outsize < 0 || position == NULL || *position < 0)
    RETURN(MPI_ERR_ARG);
  need = (size_t)incount * datatype->size;
  if ((size_t)*position + need > (size_t)outsize)
    RETURN(MPI_ERR_TRUNCATE);
  if (need > 0)
    mmpi__pack(inbuf, (size_t)incount, datatype, (char *)outbuf + *position);
  *position += (int)need;
  return MPI_SUCCESS;
}

int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf,
               int outcount, MPI_Datatype datatype, MPI_Comm comm) {
  size_t need;

  (void)comm;
  if (mmpi__type_ok(datatype) != MPI_SUCCESS)
    RETURN(MPI_ERR_TYPE);
  if (outcount < 0 || insize < 0 || position == NULL || *position < 0)
    RETURN(MPI_ERR_ARG);
  need = (size_t)outcount * datatype->size;
  if ((size_t)*position + need > (size_t)insize)
    RETURN(MPI_ERR_TRUNCATE);
  if (need > 0)
    mmpi__unpack((const char *)inbuf + *position, need, outbuf,
                 (size_t)outcount, datatype);
  *position += (int)need;
  return MPI_SUCCESS;
}

int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm,
                  int *size) {
  size_t n;

  (void)comm;
  if (mmpi__type_ok(datatype) != MPI_SUCCESS)
    RETURN(MPI_ERR_TYPE);
  if (incount < 0 || size == NULL)
    RETURN(MPI_ERR_ARG);
  n = (size_t)incount * datatype->size;
  if (n > INT_MAX)
    RETURN(MPI_ERR_COUNT);
  *size = (int)n;
  return MPI_SUCCESS;
}
