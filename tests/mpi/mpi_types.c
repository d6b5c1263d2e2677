/* SPDX-License-Identifier: MIT */
/*
 * Datatypes through libminimp-mpi (MPI-3.1 chapter 4): the predefined
 * types' sizes, every constructor's size, extent and true extent (holes,
 * negative displacements, a struct's padding, resized bounds), packing,
 * and such types sent and received between ranks. Runs on one rank or
 * more; the exchanges need two.
 */
#include <complex.h>
#include <stdbool.h>
#include <wchar.h>

#include "mpi_test.h"

static void check_type(MPI_Datatype t, int size, MPI_Aint lb, MPI_Aint extent,
                       MPI_Aint tlb, MPI_Aint textent) {
  int s;
  MPI_Aint a, b;

  assert_int_equal(MPI_Type_size(t, &s), 0);
  assert_int_equal(s, size);
  assert_int_equal(MPI_Type_get_extent(t, &a, &b), 0);
  assert_int_equal(a, lb);
  assert_int_equal(b, extent);
  assert_int_equal(MPI_Type_get_true_extent(t, &a, &b), 0);
  assert_int_equal(a, tlb);
  assert_int_equal(b, textent);
}

static void test_predefined(void **state) {
  (void)state;
#define SAME(T, M) check_type(M, sizeof(T), 0, sizeof(T), 0, sizeof(T))
  SAME(char, MPI_CHAR);
  SAME(signed char, MPI_SIGNED_CHAR);
  SAME(unsigned char, MPI_UNSIGNED_CHAR);
  SAME(unsigned char, MPI_BYTE);
  SAME(wchar_t, MPI_WCHAR);
  SAME(short, MPI_SHORT);
  SAME(unsigned short, MPI_UNSIGNED_SHORT);
  SAME(int, MPI_INT);
  SAME(unsigned, MPI_UNSIGNED);
  SAME(long, MPI_LONG);
  SAME(unsigned long, MPI_UNSIGNED_LONG);
  SAME(long long, MPI_LONG_LONG_INT);
  SAME(long long, MPI_LONG_LONG);
  SAME(unsigned long long, MPI_UNSIGNED_LONG_LONG);
  SAME(float, MPI_FLOAT);
  SAME(double, MPI_DOUBLE);
  SAME(long double, MPI_LONG_DOUBLE);
  SAME(int8_t, MPI_INT8_T);
  SAME(int16_t, MPI_INT16_T);
  SAME(int32_t, MPI_INT32_T);
  SAME(int64_t, MPI_INT64_T);
  SAME(uint8_t, MPI_UINT8_T);
  SAME(uint16_t, MPI_UINT16_T);
  SAME(uint32_t, MPI_UINT32_T);
  SAME(uint64_t, MPI_UINT64_T);
  SAME(bool, MPI_C_BOOL);
  SAME(float _Complex, MPI_C_COMPLEX);
  SAME(float _Complex, MPI_C_FLOAT_COMPLEX);
  SAME(double _Complex, MPI_C_DOUBLE_COMPLEX);
  SAME(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX);
  SAME(MPI_Aint, MPI_AINT);
  SAME(MPI_Offset, MPI_OFFSET);
  SAME(MPI_Count, MPI_COUNT);
  SAME(char, MPI_PACKED);
#undef SAME
  /* The pairs: size without padding, extent as C lays them out. */
#define PAIR(T, M)                                                             \
  do {                                                                         \
    struct {                                                                   \
      T v;                                                                     \
      int i;                                                                   \
    } s_;                                                                      \
    check_type(M, sizeof(T) + sizeof(int), 0, sizeof(s_), 0,                   \
               offsetof(__typeof__(s_), i) + sizeof(int));                     \
  } while (0)
  PAIR(float, MPI_FLOAT_INT);
  PAIR(double, MPI_DOUBLE_INT);
  PAIR(long, MPI_LONG_INT);
  PAIR(int, MPI_2INT);
  PAIR(short, MPI_SHORT_INT);
  PAIR(long double, MPI_LONG_DOUBLE_INT);
#undef PAIR
}

static void test_constructors(void **state) {
  MPI_Datatype c, v, hv, ix, hix, blk, hblk, st, rs, d, neg;
  int lens[3] = {2, 1, 3}, disps[3] = {5, 0, 10};
  MPI_Aint hd[3] = {40, 0, 80};
  (void)state;

  MPI_Type_contiguous(3, MPI_INT, &c);
  check_type(c, 12, 0, 12, 0, 12);
  /* 3 blocks of 2 doubles, 5 doubles apart. */
  MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &v);
  check_type(v, 48, 0, 96, 0, 96);
  MPI_Type_create_hvector(3, 2, 44, MPI_DOUBLE, &hv);
  check_type(hv, 48, 0, 104, 0, 104);
  MPI_Type_indexed(3, lens, disps, MPI_INT, &ix);
  check_type(ix, 24, 0, 52, 0, 52);
  MPI_Type_create_hindexed(3, lens, hd, MPI_DOUBLE, &hix);
  check_type(hix, 48, 0, 104, 0, 104);
  MPI_Type_create_indexed_block(3, 2, disps, MPI_INT, &blk);
  check_type(blk, 24, 0, 48, 0, 48);
  MPI_Type_create_hindexed_block(3, 1, hd, MPI_INT, &hblk);
  check_type(hblk, 12, 0, 84, 0, 84);
  /* A struct {char; double}: padded to the double's alignment. */
  {
    int l[2] = {1, 1};
    MPI_Aint dd[2] = {0, 8};
    MPI_Datatype ts[2] = {MPI_CHAR, MPI_DOUBLE};
    MPI_Type_create_struct(2, l, dd, ts, &st);
    check_type(st, 9, 0, 16, 0, 16);
    dd[1] = 1; /* packed: the extent still rounds up to 16 */
    MPI_Type_free(&st);
    MPI_Type_create_struct(2, l, dd, ts, &st);
    check_type(st, 9, 0, 16, 0, 9);
  }
  /* Resized: the bounds are set, nothing is padded. */
  MPI_Type_create_resized(MPI_INT, -4, 12, &rs);
  check_type(rs, 4, -4, 12, 0, 4);
  MPI_Type_dup(rs, &d);
  check_type(d, 4, -4, 12, 0, 4);
  /* A negative displacement. */
  {
    MPI_Aint nd[2] = {-8, 4};
    int l[2] = {1, 1};
    MPI_Type_create_hindexed(2, l, nd, MPI_INT, &neg);
    check_type(neg, 8, -8, 16, -8, 16);
  }
  MPI_Datatype all[] = {c, v, hv, ix, hix, blk, hblk, st, rs, d, neg};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
    assert_int_equal(MPI_Type_commit(&all[i]), 0);
    assert_int_equal(MPI_Type_free(&all[i]), 0);
    assert_ptr_equal(all[i], MPI_DATATYPE_NULL);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  {
    MPI_Datatype t = MPI_INT;
    assert_int_equal(mt_class(MPI_Type_free(&t)), MPI_ERR_TYPE);
    assert_int_equal(mt_class(MPI_Type_contiguous(-1, MPI_INT, &t)),
                     MPI_ERR_COUNT);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void test_pack_unpack(void **state) {
  int m[3][4], back[3][4], i, pos = 0, size;
  char buf[256];
  MPI_Datatype col;
  (void)state;

  for (i = 0; i < 12; i++)
    m[i / 4][i % 4] = i;
  MPI_Type_vector(3, 1, 4, MPI_INT, &col);
  MPI_Type_commit(&col);
  assert_int_equal(MPI_Pack_size(2, col, MPI_COMM_WORLD, &size), 0);
  assert_int_equal(size, 24);
  /* Columns 1 and 2, then one int. */
  assert_int_equal(
      MPI_Pack(&m[0][1], 2, MPI_INT, buf, sizeof(buf), &pos, MPI_COMM_WORLD),
      0);
  assert_int_equal(
      MPI_Pack(&m[0][2], 1, col, buf, sizeof(buf), &pos, MPI_COMM_WORLD), 0);
  assert_int_equal(pos, 20);
  {
    int *w = (int *)buf;
    assert_int_equal(w[0], 1);
    assert_int_equal(w[1], 2);
    assert_int_equal(w[2], 2);
    assert_int_equal(w[3], 6);
    assert_int_equal(w[4], 10);
  }
  memset(back, 0, sizeof(back));
  pos = 8;
  assert_int_equal(
      MPI_Unpack(buf, 20, &pos, &back[0][3], 1, col, MPI_COMM_WORLD), 0);
  assert_int_equal(pos, 20);
  assert_int_equal(back[2][3], 10);
  assert_int_equal(back[2][2], 0);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  pos = 0;
  assert_int_equal(
      mt_class(MPI_Pack(m, 12, MPI_INT, buf, 40, &pos, MPI_COMM_WORLD)),
      MPI_ERR_TRUNCATE);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Type_free(&col);
}

/* Types with holes and negative displacements on the wire: what
 * arrives is exactly the data, holes untouched; MPI_PACKED carries
 * packed bytes. */
static void test_exchange(void **state) {
  int me = mt_rank(), p = mt_size(), i, n;
  int a[8];
  MPI_Datatype neg, res;
  MPI_Status st;
  (void)state;

  if (p < 2)
    skip();
  {
    MPI_Aint nd[2] = {-8, 4}; /* a[1] and a[4], from &a[3] */
    int l[2] = {1, 1};
    MPI_Type_create_hindexed(2, l, nd, MPI_INT, &neg);
    MPI_Type_commit(&neg);
  }
  /* Every third int, through a resized type of extent 3 ints. */
  MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &res);
  MPI_Type_commit(&res);
  for (i = 0; i < 8; i++)
    a[i] = me == 0 ? i : -1;
  if (me == 0) {
    MPI_Send(&a[3], 1, neg, 1, 1, MPI_COMM_WORLD);
    MPI_Send(a, 3, res, 1, 2, MPI_COMM_WORLD);
    {
      char pk[64];
      int pos = 0;
      MPI_Pack(&a[3], 1, neg, pk, sizeof(pk), &pos, MPI_COMM_WORLD);
      MPI_Send(pk, pos, MPI_PACKED, 1, 3, MPI_COMM_WORLD);
    }
  } else if (me == 1) {
    MPI_Recv(&a[3], 1, neg, 0, 1, MPI_COMM_WORLD, &st);
    for (i = 0; i < 8; i++)
      assert_int_equal(a[i], i == 1 || i == 4 ? i : -1);
    MPI_Get_elements(&st, neg, &n);
    assert_int_equal(n, 2);
    MPI_Recv(a, 8, MPI_INT, 0, 2, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    assert_int_equal(n, 3);
    assert_int_equal(a[0], 0);
    assert_int_equal(a[1], 3);
    assert_int_equal(a[2], 6);
    {
      int two[2], pos = 0;
      char pk[64];
      MPI_Recv(pk, sizeof(pk), MPI_PACKED, 0, 3, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_PACKED, &n);
      assert_int_equal(n, 8);
      MPI_Unpack(pk, n, &pos, two, 2, MPI_INT, MPI_COMM_WORLD);
      assert_int_equal(two[0], 1);
      assert_int_equal(two[1], 4);
    }
  }
  MPI_Type_free(&neg);
  MPI_Type_free(&res);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A type built on a derived type that is freed keeps working. */
static void test_free_inner(void **state) {
  MPI_Datatype inner, outer;
  int v[6] = {1, 2, 3, 4, 5, 6}, w[6] = {0};
  (void)state;

  MPI_Type_contiguous(2, MPI_INT, &inner);
  MPI_Type_vector(2, 1, 2, inner, &outer);
  MPI_Type_free(&inner);
  MPI_Type_commit(&outer);
  check_type(outer, 16, 0, 24, 0, 24);
  assert_int_equal(MPI_Sendrecv(v, 1, outer, mt_rank(), 5, w, 1, outer,
                                mt_rank(), 5, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE),
                   0);
  assert_int_equal(w[0], 1);
  assert_int_equal(w[1], 2);
  assert_int_equal(w[2], 0);
  assert_int_equal(w[4], 5);
  MPI_Type_free(&outer);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_predefined),  cmocka_unit_test(test_constructors),
      cmocka_unit_test(test_pack_unpack), cmocka_unit_test(test_exchange),
      cmocka_unit_test(test_free_inner),
  };
  int rc;

  MPI_Init(&argc, &argv);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  return MPI_Finalize() == MPI_SUCCESS ? rc : 1;
}
