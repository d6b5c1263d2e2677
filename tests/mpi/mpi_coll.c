/* SPDX-License-Identifier: MIT */
/*
 * Collectives through libminimp-mpi (MPI-3.1 chapter 5): every
 * collective of the subset, blocking and as its I-form, with MPI_IN_PLACE
 * wherever the standard allows it, derived datatypes on either side,
 * every predefined operation on the types it applies to (MINLOC and
 * MAXLOC ties included), user operations, non-commutative ones in rank
 * order, MPI_Scan and MPI_Exscan, and MPI_Reduce_local. Runs on any number of
 * ranks.
 */
#include <complex.h>
#include <stdbool.h>

#include "mpi_test.h"

static const int blocking = 0, nonblocking = 1;

/* The result of a started non-blocking call, waited for. */
static int wait_rc(int rc, MPI_Request *r) {
  return rc != MPI_SUCCESS ? rc : MPI_Wait(r, MPI_STATUS_IGNORE);
}

#define NB(state) (*(const int *)*(state))

static void test_bcast(void **state) {
  int nb = NB(state), me = mt_rank(), p = mt_size(), root, i, v[5];
  double m[3][3];
  MPI_Datatype diag;
  MPI_Request r;

  for (root = 0; root < p; root++) {
    for (i = 0; i < 5; i++)
      v[i] = me == root ? 10 * root + i : -1;
    assert_int_equal(
        nb ? wait_rc(MPI_Ibcast(v, 5, MPI_INT, root, MPI_COMM_WORLD, &r), &r)
           : MPI_Bcast(v, 5, MPI_INT, root, MPI_COMM_WORLD),
        0);
    for (i = 0; i < 5; i++)
      assert_int_equal(v[i], 10 * root + i);
  }
  /* A derived type: the diagonal of a 3 x 3 matrix. */
  MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &diag);
  MPI_Type_commit(&diag);
  for (i = 0; i < 9; i++)
    m[i / 3][i % 3] = me == 0 ? i : -1;
  assert_int_equal(
      nb ? wait_rc(MPI_Ibcast(m, 1, diag, 0, MPI_COMM_WORLD, &r), &r)
         : MPI_Bcast(m, 1, diag, 0, MPI_COMM_WORLD),
      0);
  for (i = 0; i < 9; i++)
    assert_true(m[i / 3][i % 3] == (i % 4 == 0 || me == 0 ? i : -1));
  MPI_Type_free(&diag);
}

static void test_reduce(void **state) {
  int nb = NB(state), me = mt_rank(), p = mt_size(), root, i, in[3], out[3];
  int sum = p * (p - 1) / 2;
  MPI_Request r;

  for (root = 0; root < p; root++) {
    for (i = 0; i < 3; i++) {
      in[i] = me + i;
      out[i] = -1;
    }
    assert_int_equal(
        nb ? wait_rc(MPI_Ireduce(in, out, 3, MPI_INT, MPI_SUM, root,
                                 MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Reduce(in, out, 3, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD),
        0);
    for (i = 0; i < 3; i++)
      assert_int_equal(out[i], me == root ? sum + p * i : -1);
    /* In place at the root. */
    for (i = 0; i < 3; i++)
      out[i] = in[i];
    assert_int_equal(
        nb ? wait_rc(MPI_Ireduce(me == root ? MPI_IN_PLACE : in, out, 3,
                                 MPI_INT, MPI_MAX, root, MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Reduce(me == root ? MPI_IN_PLACE : in, out, 3, MPI_INT,
                        MPI_MAX, root, MPI_COMM_WORLD),
        0);
    if (me == root)
      assert_int_equal(out[2], p - 1 + 2);
  }
  for (i = 0; i < 3; i++)
    in[i] = me * (i + 1);
  assert_int_equal(
      nb ? wait_rc(
               MPI_Iallreduce(in, out, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r),
               &r)
         : MPI_Allreduce(in, out, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
      0);
  assert_int_equal(out[2], 3 * sum);
  assert_int_equal(
      nb ? wait_rc(MPI_Iallreduce(MPI_IN_PLACE, in, 3, MPI_INT, MPI_MIN,
                                  MPI_COMM_WORLD, &r),
                   &r)
         : MPI_Allreduce(MPI_IN_PLACE, in, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD),
      0);
  assert_int_equal(in[1], 0);
}

static void test_reduce_scatter(void **state) {
  int nb = NB(state), me = mt_rank(), p = mt_size(), i, k, total = 0;
  int *counts = malloc((size_t)p * sizeof(int)), *in, *out, first = 0;
  MPI_Request r;

  for (i = 0; i < p; i++) {
    counts[i] = i + 1;
    if (i < me)
      first += counts[i];
    total += counts[i];
  }
  in = malloc((size_t)(total + 2 * p) * sizeof(int));
  out = malloc((size_t)(total + 2 * p) * sizeof(int));
  for (k = 0; k < 2; k++) { /* from sendbuf, then in place */
    for (i = 0; i < total; i++)
      (k ? out : in)[i] = i * (me + 1);
    assert_int_equal(
        nb ? wait_rc(MPI_Ireduce_scatter(k ? MPI_IN_PLACE : in, out, counts,
                                         MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Reduce_scatter(k ? MPI_IN_PLACE : in, out, counts, MPI_INT,
                                MPI_SUM, MPI_COMM_WORLD),
        0);
    for (i = 0; i < counts[me]; i++)
      assert_int_equal(out[i], (first + i) * p * (p + 1) / 2);
  }
  for (k = 0; k < 2; k++) {
    for (i = 0; i < 2 * p; i++)
      (k ? out : in)[i] = i + me;
    assert_int_equal(
        nb ? wait_rc(MPI_Ireduce_scatter_block(k ? MPI_IN_PLACE : in, out, 2,
                                               MPI_INT, MPI_MAX, MPI_COMM_WORLD,
                                               &r),
                     &r)
           : MPI_Reduce_scatter_block(k ? MPI_IN_PLACE : in, out, 2, MPI_INT,
                                      MPI_MAX, MPI_COMM_WORLD),
        0);
    assert_int_equal(out[0], 2 * me + p - 1);
    assert_int_equal(out[1], 2 * me + 1 + p - 1);
  }
  free(counts);
  free(in);
  free(out);
}

/* Gather and scatter, equal blocks and the v-forms, from every root, in
 * place at the root, and with a receive type of two ints as one. */
static void test_gather_scatter(void **state) {
  int nb = NB(state), me = mt_rank(), p = mt_size(), root, i;
  int *all = malloc((size_t)(2 * p + 2) * sizeof(int)), mine[2];
  int *counts = malloc((size_t)p * sizeof(int));
  int *displs = malloc((size_t)p * sizeof(int));
  MPI_Datatype two;
  MPI_Request r;

  MPI_Type_contiguous(2, MPI_INT, &two);
  MPI_Type_commit(&two);
  for (i = 0; i < p; i++) {
    counts[i] = 1;
    displs[i] = p - 1 - i; /* reversed */
  }
  for (root = 0; root < p; root++) {
    int in_place;
    for (in_place = 0; in_place < 2; in_place++) {
      int ip = in_place && me == root;
      mine[0] = me;
      mine[1] = -me;
      for (i = 0; i < 2 * p; i++)
        all[i] = -7;
      if (ip) {
        all[2 * me] = me;
        all[2 * me + 1] = -me;
      }
      assert_int_equal(
          nb ? wait_rc(MPI_Igather(ip ? MPI_IN_PLACE : mine, 2, MPI_INT, all, 1,
                                   two, root, MPI_COMM_WORLD, &r),
                       &r)
             : MPI_Gather(ip ? MPI_IN_PLACE : mine, 2, MPI_INT, all, 1, two,
                          root, MPI_COMM_WORLD),
          0);
      if (me == root)
        for (i = 0; i < p; i++) {
          assert_int_equal(all[2 * i], i);
          assert_int_equal(all[2 * i + 1], -i);
        }
      /* Scatter back, doubled. */
      for (i = 0; i < 2 * p; i++)
        all[i] *= 2;
      mine[0] = mine[1] = -7;
      if (ip) {
        mine[0] = 2 * me;
        mine[1] = -2 * me;
      }
      assert_int_equal(
          nb ? wait_rc(MPI_Iscatter(all, 1, two, ip ? MPI_IN_PLACE : mine, 2,
                                    MPI_INT, root, MPI_COMM_WORLD, &r),
                       &r)
             : MPI_Scatter(all, 1, two, ip ? MPI_IN_PLACE : mine, 2, MPI_INT,
                           root, MPI_COMM_WORLD),
          0);
      if (!ip) {
        assert_int_equal(mine[0], 2 * me);
        assert_int_equal(mine[1], -2 * me);
      }
      /* The v-forms: rank i's int at position p - 1 - i. */
      for (i = 0; i < p; i++)
        all[i] = -7;
      if (ip)
        all[p - 1 - me] = 100 + me;
      mine[0] = 100 + me;
      assert_int_equal(
          nb ? wait_rc(MPI_Igatherv(ip ? MPI_IN_PLACE : mine, 1, MPI_INT, all,
                                    counts, displs, MPI_INT, root,
                                    MPI_COMM_WORLD, &r),
                       &r)
             : MPI_Gatherv(ip ? MPI_IN_PLACE : mine, 1, MPI_INT, all, counts,
                           displs, MPI_INT, root, MPI_COMM_WORLD),
          0);
      if (me == root)
        for (i = 0; i < p; i++)
          assert_int_equal(all[p - 1 - i], 100 + i);
      mine[0] = -7;
      assert_int_equal(
          nb ? wait_rc(MPI_Iscatterv(all, counts, displs, MPI_INT,
                                     ip ? MPI_IN_PLACE : mine, 1, MPI_INT, root,
                                     MPI_COMM_WORLD, &r),
                       &r)
             : MPI_Scatterv(all, counts, displs, MPI_INT,
                            ip ? MPI_IN_PLACE : mine, 1, MPI_INT, root,
                            MPI_COMM_WORLD),
          0);
      if (!ip)
        assert_int_equal(mine[0], 100 + me);
    }
  }
  MPI_Type_free(&two);
  free(all);
  free(counts);
  free(displs);
}

static void test_allgather(void **state) {
  int nb = NB(state), me = mt_rank(), p = mt_size(), i, k, total = 0;
  int *all = malloc((size_t)(p * p + p) * sizeof(int)), mine[2];
  int *counts = malloc((size_t)p * sizeof(int));
  int *displs = malloc((size_t)p * sizeof(int));
  MPI_Request r;

  for (i = 0; i < p; i++) {
    counts[i] = i % 3; /* some ranks give nothing */
    displs[i] = total;
    total += counts[i];
  }
  for (k = 0; k < 2; k++) {
    mine[0] = me;
    mine[1] = me * me;
    for (i = 0; i < 2 * p; i++)
      all[i] = -1;
    if (k) {
      all[2 * me] = me;
      all[2 * me + 1] = me * me;
    }
    assert_int_equal(
        nb ? wait_rc(MPI_Iallgather(k ? MPI_IN_PLACE : mine, 2, MPI_INT, all, 2,
                                    MPI_INT, MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Allgather(k ? MPI_IN_PLACE : mine, 2, MPI_INT, all, 2, MPI_INT,
                           MPI_COMM_WORLD),
        0);
    for (i = 0; i < p; i++) {
      assert_int_equal(all[2 * i], i);
      assert_int_equal(all[2 * i + 1], i * i);
    }
    for (i = 0; i < total + 1; i++)
      all[i] = -1;
    if (k)
      for (i = 0; i < counts[me]; i++)
        all[displs[me] + i] = 10 * me + i;
    mine[0] = 10 * me;
    mine[1] = 10 * me + 1;
    assert_int_equal(
        nb ? wait_rc(MPI_Iallgatherv(k ? MPI_IN_PLACE : mine, counts[me],
                                     MPI_INT, all, counts, displs, MPI_INT,
                                     MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Allgatherv(k ? MPI_IN_PLACE : mine, counts[me], MPI_INT, all,
                            counts, displs, MPI_INT, MPI_COMM_WORLD),
        0);
    for (i = 0; i < p; i++)
      for (int j = 0; j < counts[i]; j++)
        assert_int_equal(all[displs[i] + j], 10 * i + j);
    assert_int_equal(all[total], -1);
  }
  free(all);
  free(counts);
  free(displs);
}

static void test_alltoall(void **state) {
  int nb = NB(state), me = mt_rank(), p = mt_size(), i, k;
  int *s = malloc((size_t)(2 * p) * sizeof(int));
  int *d = malloc((size_t)(2 * p) * sizeof(int));
  int *cnt = malloc((size_t)p * sizeof(int)),
      *dsp = malloc((size_t)p * sizeof(int));
  int *bd = malloc((size_t)p * sizeof(int));
  MPI_Datatype *types = malloc((size_t)p * sizeof(MPI_Datatype));
  MPI_Request r;

  for (k = 0; k < 2; k++) {
    for (i = 0; i < p; i++)
      (k ? d : s)[i] = 100 * me + i;
    assert_int_equal(
        nb ? wait_rc(MPI_Ialltoall(k ? MPI_IN_PLACE : s, 1, MPI_INT, d, 1,
                                   MPI_INT, MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Alltoall(k ? MPI_IN_PLACE : s, 1, MPI_INT, d, 1, MPI_INT,
                          MPI_COMM_WORLD),
        0);
    for (i = 0; i < p; i++)
      assert_int_equal(d[i], 100 * i + me);
    /* v: one int from each, stored backwards. */
    for (i = 0; i < p; i++) {
      cnt[i] = 1;
      dsp[i] = p - 1 - i;
      (k ? d : s)[p - 1 - i] = 100 * me + i;
    }
    assert_int_equal(
        nb ? wait_rc(MPI_Ialltoallv(k ? MPI_IN_PLACE : s, cnt, dsp, MPI_INT, d,
                                    cnt, dsp, MPI_INT, MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Alltoallv(k ? MPI_IN_PLACE : s, cnt, dsp, MPI_INT, d, cnt, dsp,
                           MPI_INT, MPI_COMM_WORLD),
        0);
    for (i = 0; i < p; i++)
      assert_int_equal(d[p - 1 - i], 100 * i + me);
    /* w: byte displacements, a type per peer (MPI_INT, or two shorts). */
    for (i = 0; i < p; i++) {
      types[i] = i % 2 ? MPI_INT : MPI_SHORT;
      cnt[i] = i % 2 ? 1 : 2;
      bd[i] = i * (int)sizeof(int);
      (k ? d : s)[i] = 100 * me + i;
    }
    assert_int_equal(
        nb ? wait_rc(MPI_Ialltoallw(k ? MPI_IN_PLACE : s, cnt, bd, types, d,
                                    cnt, bd, types, MPI_COMM_WORLD, &r),
                     &r)
           : MPI_Alltoallw(k ? MPI_IN_PLACE : s, cnt, bd, types, d, cnt, bd,
                           types, MPI_COMM_WORLD),
        0);
    for (i = 0; i < p; i++)
      assert_int_equal(d[i], 100 * i + me);
  }
  free(s);
  free(d);
  free(cnt);
  free(dsp);
  free(bd);
  free(types);
}

static void test_barrier(void **state) {
  int nb = NB(state), i;
  MPI_Request r;

  for (i = 0; i < 3; i++)
    assert_int_equal(nb ? wait_rc(MPI_Ibarrier(MPI_COMM_WORLD, &r), &r)
                        : MPI_Barrier(MPI_COMM_WORLD),
                     0);
}

/* ---- Operations --------------------------------------------------------- */

/* Allreduce of one value per rank: rank R contributes F, and COMBINE
 * folds x_ (rank R's value) into want_ in rank order. */
#define CHECK_OP(T, MT, OP, F, COMBINE)                                        \
  do {                                                                         \
    T in_, out_, want_ = 0;                                                    \
    {                                                                          \
      int R = mt_rank();                                                       \
      (void)R;                                                                 \
      in_ = (T)(F);                                                            \
    }                                                                          \
    assert_int_equal(MPI_Allreduce(&in_, &out_, 1, MT, OP, MPI_COMM_WORLD),    \
                     0);                                                       \
    for (int R = 0; R < p; R++) {                                              \
      T x_ = (T)(F);                                                           \
      want_ = R > 0 ? (T)(COMBINE) : x_;                                       \
    }                                                                          \
    assert_true(out_ == want_);                                                \
  } while (0)

static void test_predefined_ops(void **state) {
  int p = mt_size();
  (void)state;

  /* Arithmetic on every kind of number; x is this rank's value. */
  CHECK_OP(int, MPI_INT, MPI_SUM, R + 1, want_ + x_);
  CHECK_OP(int, MPI_INT, MPI_PROD, R % 3 + 1, want_ * x_);
  CHECK_OP(int, MPI_INT, MPI_MIN, 5 - R, x_ < want_ ? x_ : want_);
  CHECK_OP(unsigned, MPI_UNSIGNED, MPI_MAX, R * 7 % 5, x_ > want_ ? x_ : want_);
  CHECK_OP(short, MPI_SHORT, MPI_SUM, -R, want_ + x_);
  CHECK_OP(signed char, MPI_SIGNED_CHAR, MPI_MAX, -R, x_ > want_ ? x_ : want_);
  CHECK_OP(long long, MPI_LONG_LONG, MPI_PROD, R + 2, want_ * x_);
  CHECK_OP(unsigned long, MPI_UNSIGNED_LONG, MPI_SUM, R, want_ + x_);
  CHECK_OP(int8_t, MPI_INT8_T, MPI_MIN, R - 2, x_ < want_ ? x_ : want_);
  CHECK_OP(uint16_t, MPI_UINT16_T, MPI_SUM, 1000 * R, want_ + x_);
  CHECK_OP(int64_t, MPI_INT64_T, MPI_MAX, R * 1000000000000LL,
           x_ > want_ ? x_ : want_);
  CHECK_OP(MPI_Aint, MPI_AINT, MPI_SUM, R, want_ + x_);
  CHECK_OP(float, MPI_FLOAT, MPI_SUM, 0.5f * R, want_ + x_);
  CHECK_OP(double, MPI_DOUBLE, MPI_PROD, 1.5 + R, want_ * x_);
  CHECK_OP(long double, MPI_LONG_DOUBLE, MPI_SUM, 0.25L * R, want_ + x_);
  CHECK_OP(long double, MPI_LONG_DOUBLE, MPI_PROD, 1.0L + R, want_ * x_);
  CHECK_OP(long double, MPI_LONG_DOUBLE, MPI_MAX, (R * 3) % 4,
           x_ > want_ ? x_ : want_);
  CHECK_OP(long double, MPI_LONG_DOUBLE, MPI_MIN, (R * 3) % 4,
           x_ < want_ ? x_ : want_);
  CHECK_OP(double _Complex, MPI_C_DOUBLE_COMPLEX, MPI_SUM, R + 1.0 * I * R,
           want_ + x_);
  CHECK_OP(float _Complex, MPI_C_FLOAT_COMPLEX, MPI_PROD, 1.0f + 1.0f * I,
           want_ * x_);
  CHECK_OP(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, R *I,
           want_ + x_);
  /* Logical: true is anything nonzero, the result 1 or 0. */
  CHECK_OP(int, MPI_INT, MPI_LAND, R + 1, want_ && x_);
  CHECK_OP(int, MPI_INT, MPI_LOR, R == 1 ? 5 : 0, want_ || x_);
  CHECK_OP(int, MPI_INT, MPI_LXOR, R % 2 ? 3 : 0, !want_ != !x_);
  CHECK_OP(long, MPI_LONG, MPI_LXOR, 2, !want_ != !x_);
  CHECK_OP(bool, MPI_C_BOOL, MPI_LAND, R != 1, want_ && x_);
  CHECK_OP(bool, MPI_C_BOOL, MPI_LOR, R == 1, want_ || x_);
  CHECK_OP(bool, MPI_C_BOOL, MPI_LXOR, true, want_ != x_);
  /* Bitwise on integers and bytes. */
  CHECK_OP(unsigned, MPI_UNSIGNED, MPI_BAND, 0xff0u | (1u << R), want_ & x_);
  CHECK_OP(unsigned, MPI_UNSIGNED, MPI_BOR, 1u << R, want_ | x_);
  CHECK_OP(unsigned char, MPI_BYTE, MPI_BXOR, 0x11 * (R + 1), want_ ^ x_);
  CHECK_OP(unsigned char, MPI_BYTE, MPI_BOR, 1 << (R % 8), want_ | x_);
}

/* MINLOC and MAXLOC on every pair type: values tie on even and odd
 * ranks, and the lowest index wins the tie. */
#define CHECK_LOC(S, MT)                                                       \
  do {                                                                         \
    S in_ = {0}, lo_, hi_;                                                     \
    in_.v = me % 2 ? 3 : 5;                                                    \
    in_.i = 10 + me;                                                           \
    assert_int_equal(                                                          \
        MPI_Allreduce(&in_, &lo_, 1, MT, MPI_MINLOC, MPI_COMM_WORLD), 0);      \
    assert_int_equal(                                                          \
        MPI_Allreduce(&in_, &hi_, 1, MT, MPI_MAXLOC, MPI_COMM_WORLD), 0);      \
    assert_true(lo_.v == (p > 1 ? 3 : 5));                                     \
    assert_int_equal(lo_.i, p > 1 ? 11 : 10);                                  \
    assert_true(hi_.v == 5);                                                   \
    assert_int_equal(hi_.i, 10);                                               \
  } while (0)

static void test_minloc_maxloc(void **state) {
  int me = mt_rank(), p = mt_size();
  (void)state;

  CHECK_LOC(
      struct {
        float v;
        int i;
      },
      MPI_FLOAT_INT);
  CHECK_LOC(
      struct {
        double v;
        int i;
      },
      MPI_DOUBLE_INT);
  CHECK_LOC(
      struct {
        long v;
        int i;
      },
      MPI_LONG_INT);
  CHECK_LOC(
      struct {
        int v;
        int i;
      },
      MPI_2INT);
  CHECK_LOC(
      struct {
        short v;
        int i;
      },
      MPI_SHORT_INT);
  CHECK_LOC(
      struct {
        long double v;
        int i;
      },
      MPI_LONG_DOUBLE_INT);
  /* Several pairs as one element, and in a reduce. */
  {
    struct {
      double v;
      int i;
    } in[3], out[3];
    MPI_Datatype three;
    int k;
    MPI_Type_contiguous(3, MPI_DOUBLE_INT, &three);
    MPI_Type_commit(&three);
    for (k = 0; k < 3; k++) {
      in[k].v = (me + k) % p;
      in[k].i = me;
    }
    assert_int_equal(
        MPI_Reduce(in, out, 1, three, MPI_MAXLOC, 0, MPI_COMM_WORLD), 0);
    if (me == 0)
      for (k = 0; k < 3; k++) {
        assert_true(out[k].v == p - 1);
        assert_int_equal(out[k].i, (p - 1 - k + p) % p);
      }
    MPI_Type_free(&three);
  }
}

/* Operations the standard does not define on a type fail with
 * MPI_ERR_OP. */
static void test_ops_that_do_not_apply(void **state) {
  double d = 1, o;
  int i = 1, oi;
  unsigned char b = 1, ob;
  (void)state;

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  assert_int_equal(
      mt_class(MPI_Allreduce(&d, &o, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD)),
      MPI_ERR_OP);
  assert_int_equal(
      mt_class(MPI_Allreduce(&d, &o, 1, MPI_DOUBLE, MPI_LAND, MPI_COMM_WORLD)),
      MPI_ERR_OP);
  assert_int_equal(
      mt_class(MPI_Allreduce(&i, &oi, 1, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD)),
      MPI_ERR_OP);
  assert_int_equal(
      mt_class(MPI_Allreduce(&b, &ob, 1, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD)),
      MPI_ERR_OP);
  assert_int_equal(
      mt_class(MPI_Allreduce(&i, &oi, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD)),
      MPI_ERR_OP);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* 2 x 2 integer matrices: the product does not commute. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
  long long *a = in, *b = inout;
  int k;

  (void)dt;
  for (k = 0; k < *len; k++, a += 4, b += 4) {
    long long c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                      a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    memcpy(b, c, sizeof(c));
  }
}

static void matrix(int r, long long m[4]) {
  m[0] = r + 1;
  m[1] = r % 3;
  m[2] = (r * 5) % 4;
  m[3] = 1;
}

static MPI_Datatype seen_type;

/* Sums the int of {int, (hole), double} elements and multiplies the
 * double, recording the type it was given. */
static void pair_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
  struct {
    int i;
    double d;
  } *a = in, *b = inout;
  int k;

  seen_type = *dt;
  for (k = 0; k < *len; k++) {
    b[k].i += a[k].i;
    b[k].d *= a[k].d;
  }
}

static void test_user_ops(void **state) {
  int nb = NB(state), me = mt_rank(), p = mt_size(), r, k, commute = -1;
  long long in[8], out[8], want[4], m[4];
  MPI_Datatype mat, st;
  MPI_Op mul, pairop;
  MPI_Request rq;

  MPI_Type_contiguous(4, MPI_LONG_LONG, &mat);
  MPI_Type_commit(&mat);
  assert_int_equal(MPI_Op_create(matmul, 0, &mul), 0);
  assert_int_equal(MPI_Op_commutative(mul, &commute), 0);
  assert_int_equal(commute, 0);
  matrix(0, want);
  for (r = 1; r < p; r++) {
    matrix(r, m);
    matmul(want, m, &(int){1}, &mat); /* m = want x m */
    memcpy(want, m, sizeof(m));
  }
  matrix(me, in);
  matrix(me, in + 4);
  memset(out, 0, sizeof(out));
  assert_int_equal(
      nb ? wait_rc(MPI_Iallreduce(in, out, 2, mat, mul, MPI_COMM_WORLD, &rq),
                   &rq)
         : MPI_Allreduce(in, out, 2, mat, mul, MPI_COMM_WORLD),
      0);
  assert_memory_equal(out, want, sizeof(want));
  assert_memory_equal(out + 4, want, sizeof(want));
  memset(out, 0, sizeof(out));
  assert_int_equal(nb ? wait_rc(MPI_Ireduce(in, out, 1, mat, mul, p - 1,
                                            MPI_COMM_WORLD, &rq),
                                &rq)
                      : MPI_Reduce(in, out, 1, mat, mul, p - 1, MPI_COMM_WORLD),
                   0);
  if (me == p - 1)
    assert_memory_equal(out, want, sizeof(want));
  /* Reduce-scatter: every rank's block is the same product. */
  {
    long long *big = malloc((size_t)p * 32);
    for (k = 0; k < p; k++)
      matrix(me, big + 4 * k);
    assert_int_equal(
        MPI_Reduce_scatter_block(big, out, 1, mat, mul, MPI_COMM_WORLD), 0);
    assert_memory_equal(out, want, sizeof(want));
    free(big);
  }
  /* MPI_Reduce_local: inoutbuf = inbuf op inoutbuf. */
  matrix(1, in);
  matrix(2, out);
  memcpy(m, out, sizeof(m));
  matmul(in, m, &(int){1}, &mat);
  assert_int_equal(MPI_Reduce_local(in, out, 1, mat, mul), 0);
  assert_memory_equal(out, m, sizeof(m));
  {
    int a[2] = {1, 2}, b[2] = {10, 20};
    assert_int_equal(MPI_Reduce_local(a, b, 2, MPI_INT, MPI_SUM), 0);
    assert_int_equal(b[1], 22);
    assert_int_equal(MPI_Reduce_local(a, b, 2, MPI_INT, MPI_LXOR), 0);
    assert_int_equal(b[0], 0);
  }
  assert_int_equal(MPI_Op_free(&mul), 0);
  assert_ptr_equal(mul, MPI_OP_NULL);
  /* A user operation on a struct with a hole sees the type it was given. */
  {
    int lens[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    struct {
      int i;
      double d;
    } a = {me, 2.0}, b;
    MPI_Type_create_struct(2, lens, disp, types, &st);
    MPI_Type_commit(&st);
    assert_int_equal(MPI_Op_create(pair_op, 1, &pairop), 0);
    seen_type = MPI_DATATYPE_NULL;
    assert_int_equal(MPI_Allreduce(&a, &b, 1, st, pairop, MPI_COMM_WORLD), 0);
    assert_int_equal(b.i, p * (p - 1) / 2);
    assert_true(b.d == (double)(1 << p));
    /* Not every rank combines anything, but those that do see st. */
    if (seen_type != MPI_DATATYPE_NULL)
      assert_ptr_equal(seen_type, st);
    {
      int saw = seen_type != MPI_DATATYPE_NULL, any = 0;
      MPI_Allreduce(&saw, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
      assert_int_equal(any, p > 1);
    }
    MPI_Op_free(&pairop);
    MPI_Type_free(&st);
  }
  MPI_Type_free(&mat);
}

/* Predefined operations on derived types: a contiguous one goes as it
 * is, a strided one is packed around the call. */
static void test_ops_on_derived_types(void **state) {
  int me = mt_rank(), p = mt_size(), i;
  double v[6], o[6];
  int a[6], b[6];
  MPI_Datatype every2, three;
  (void)state;

  MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &every2);
  MPI_Type_commit(&every2);
  for (i = 0; i < 6; i++) {
    v[i] = me + i;
    o[i] = -1;
  }
  assert_int_equal(MPI_Allreduce(v, o, 1, every2, MPI_SUM, MPI_COMM_WORLD), 0);
  for (i = 0; i < 6; i++)
    assert_true(o[i] == (i % 2 ? -1 : p * (p - 1) / 2.0 + p * i));
  MPI_Type_contiguous(3, MPI_INT, &three);
  MPI_Type_commit(&three);
  for (i = 0; i < 6; i++)
    a[i] = me * i;
  assert_int_equal(MPI_Allreduce(a, b, 2, three, MPI_MAX, MPI_COMM_WORLD), 0);
  for (i = 0; i < 6; i++)
    assert_int_equal(b[i], (p - 1) * i);
  MPI_Type_free(&every2);
  MPI_Type_free(&three);
}

/* MPI_Scan, MPI_Exscan and their I-forms: rank i gets the prefix up to
 * i (exclusive: up to i - 1), in place too, in rank order for a
 * non-commutative operation, and on a derived type with holes (packed). */
static void test_scan(void **state) {
  int nb = NB(state), me = mt_rank(), r, i, in[3], out[3];
  long long mine[4], want[4], ex[4], got[4], m[4];
  double v[6], o[6];
  MPI_Datatype mat, every2;
  MPI_Op mul;
  MPI_Request rq;

/* ex: MPI_Exscan, else MPI_Scan; the I-form when nb. */
#define SCAN(ex, s, d, n, t, op)                                               \
  (nb ? wait_rc((ex ? MPI_Iexscan : MPI_Iscan)(s, d, n, t, op, MPI_COMM_WORLD, \
                                               &rq),                           \
                &rq)                                                           \
      : (ex ? MPI_Exscan : MPI_Scan)(s, d, n, t, op, MPI_COMM_WORLD))
  for (i = 0; i < 3; i++) {
    in[i] = me + i;
    out[i] = -7;
  }
  assert_int_equal(SCAN(0, in, out, 3, MPI_INT, MPI_SUM), 0);
  for (i = 0; i < 3; i++)
    assert_int_equal(out[i], me * (me + 1) / 2 + (me + 1) * i);
  for (i = 0; i < 3; i++)
    out[i] = -7;
  assert_int_equal(SCAN(1, in, out, 3, MPI_INT, MPI_SUM), 0);
  for (i = 0; i < 3; i++) /* rank 0's is undefined: left as it was */
    assert_int_equal(out[i], me == 0 ? -7 : (me - 1) * me / 2 + me * i);
  assert_int_equal(SCAN(0, MPI_IN_PLACE, in, 3, MPI_INT, MPI_MAX), 0);
  assert_int_equal(in[2], me + 2);
  assert_int_equal(SCAN(1, MPI_IN_PLACE, in, 3, MPI_INT, MPI_MAX), 0);
  assert_int_equal(in[0], me == 0 ? 0 : me - 1);
  /* A non-commutative operation: the product m_0 x ... x m_i. */
  MPI_Type_contiguous(4, MPI_LONG_LONG, &mat);
  MPI_Type_commit(&mat);
  assert_int_equal(MPI_Op_create(matmul, 0, &mul), 0);
  matrix(0, want);
  for (r = 1; r <= me; r++) {
    memcpy(ex, want, sizeof(ex));
    matrix(r, m);
    matmul(want, m, &(int){1}, &mat);
    memcpy(want, m, sizeof(m));
  }
  matrix(me, mine);
  assert_int_equal(SCAN(0, mine, got, 1, mat, mul), 0);
  assert_memory_equal(got, want, sizeof(want));
  assert_int_equal(SCAN(1, mine, got, 1, mat, mul), 0);
  if (me > 0)
    assert_memory_equal(got, ex, sizeof(ex));
  MPI_Op_free(&mul);
  MPI_Type_free(&mat);
  /* A derived type with holes: the holes keep what they had. */
  MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &every2);
  MPI_Type_commit(&every2);
  for (i = 0; i < 6; i++) {
    v[i] = me + i;
    o[i] = -1;
  }
  assert_int_equal(SCAN(0, v, o, 1, every2, MPI_SUM), 0);
  for (i = 0; i < 6; i++)
    assert_true(o[i] == (i % 2 ? -1 : me * (me + 1) / 2.0 + (me + 1) * i));
  for (i = 0; i < 6; i++)
    o[i] = -1;
  assert_int_equal(SCAN(1, v, o, 1, every2, MPI_SUM), 0);
  for (i = 0; i < 6; i++)
    assert_true(o[i] == (i % 2 || me == 0 ? -1 : (me - 1) * me / 2.0 + me * i));
  MPI_Type_free(&every2);
#undef SCAN
}

static void test_bad_arguments(void **state) {
  int v = 0, me = mt_rank(), p = mt_size();
  MPI_Datatype loose;
  (void)state;

  (void)me;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  assert_int_equal(mt_class(MPI_Bcast(&v, 1, MPI_INT, p, MPI_COMM_WORLD)),
                   MPI_ERR_ROOT);
  assert_int_equal(mt_class(MPI_Bcast(&v, -1, MPI_INT, 0, MPI_COMM_WORLD)),
                   MPI_ERR_COUNT);
  MPI_Type_contiguous(2, MPI_INT, &loose); /* not committed */
  assert_int_equal(mt_class(MPI_Bcast(&v, 1, loose, 0, MPI_COMM_WORLD)),
                   MPI_ERR_TYPE);
  MPI_Type_free(&loose);
  assert_int_equal(mt_class(MPI_Barrier(MPI_COMM_NULL)), MPI_ERR_COMM);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
#define BOTH(t)                                                                \
  cmocka_unit_test_prestate(t, (void *)&blocking),                             \
      cmocka_unit_test_prestate(t, (void *)&nonblocking)
      BOTH(test_bcast),
      BOTH(test_reduce),
      BOTH(test_reduce_scatter),
      BOTH(test_gather_scatter),
      BOTH(test_allgather),
      BOTH(test_alltoall),
      BOTH(test_barrier),
      cmocka_unit_test(test_predefined_ops),
      cmocka_unit_test(test_minloc_maxloc),
      cmocka_unit_test(test_ops_that_do_not_apply),
      BOTH(test_user_ops),
      cmocka_unit_test(test_ops_on_derived_types),
      BOTH(test_scan),
      cmocka_unit_test(test_bad_arguments),
#undef BOTH
  };
  int rc;

  MPI_Init(&argc, &argv);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  return MPI_Finalize() == MPI_SUCCESS ? rc : 1;
}
