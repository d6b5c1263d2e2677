/* SPDX-License-Identifier: MIT */
/*
 * Communicators, groups and attributes through libminimp-mpi (MPI-3.1
 * chapter 6): dup, split, create, compare, names; every group call; and
 * attributes whose copy and delete callbacks run on dup, free, delete and
 * replacement as the standard says, with the predefined keys. Runs on
 * three or more ranks.
 */
#include "mpi_test.h"

static void test_dup_split_compare(void **state) {
  int me = mt_rank(), p = mt_size(), res, r, s, flag;
  MPI_Comm dup, half, rev, none;
  char name[MPI_MAX_OBJECT_NAME];
  (void)state;

  assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &dup), 0);
  assert_int_equal(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res), 0);
  assert_int_equal(res, MPI_IDENT);
  assert_int_equal(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res), 0);
  assert_int_equal(res, MPI_CONGRUENT);
  /* A dup's messages stay apart from the original's. */
  {
    int a = -1, b = -1, v;
    MPI_Request ra, rb;
    MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &ra);
    MPI_Irecv(&b, 1, MPI_INT, MPI_ANY_SOURCE, 1, dup, &rb);
    v = 1000 + me;
    MPI_Send(&v, 1, MPI_INT, (me + 1) % p, 1, dup);
    v = 2000 + me;
    MPI_Send(&v, 1, MPI_INT, (me + 1) % p, 1, MPI_COMM_WORLD);
    MPI_Wait(&ra, MPI_STATUS_IGNORE);
    MPI_Wait(&rb, MPI_STATUS_IGNORE);
    assert_int_equal(a, 2000 + (me + p - 1) % p);
    assert_int_equal(b, 1000 + (me + p - 1) % p);
  }
  /* Split by parity, keys descending. */
  assert_int_equal(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half), 0);
  MPI_Comm_size(half, &s);
  MPI_Comm_rank(half, &r);
  assert_int_equal(s, (p + 1 - me % 2) / 2);
  assert_int_equal(r, s - 1 - me / 2);
  assert_int_equal(MPI_Comm_compare(MPI_COMM_WORLD, half, &res), 0);
  assert_int_equal(res, MPI_UNEQUAL);
  /* The same members in reverse order: similar. */
  assert_int_equal(MPI_Comm_split(MPI_COMM_WORLD, 0, p - me, &rev), 0);
  assert_int_equal(MPI_Comm_compare(MPI_COMM_WORLD, rev, &res), 0);
  assert_int_equal(res, MPI_SIMILAR);
  assert_int_equal(
      MPI_Comm_split(MPI_COMM_WORLD, me == 0 ? MPI_UNDEFINED : 1, 0, &none), 0);
  if (me == 0)
    assert_ptr_equal(none, MPI_COMM_NULL);
  else
    assert_int_equal(MPI_Comm_free(&none), 0);
  /* Names. */
  assert_int_equal(MPI_Comm_get_name(MPI_COMM_WORLD, name, &r), 0);
  assert_string_equal(name, "MPI_COMM_WORLD");
  assert_int_equal(r, 14);
  assert_int_equal(MPI_Comm_set_name(dup, "the copy"), 0);
  assert_int_equal(MPI_Comm_get_name(dup, name, &r), 0);
  assert_string_equal(name, "the copy");
  assert_int_equal(MPI_Comm_test_inter(dup, &flag), 0);
  assert_int_equal(flag, 0);
  /* Collectives on the new communicators. */
  {
    int v = me, sum = -1;
    assert_int_equal(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half), 0);
    assert_int_equal(sum % 2, me % 2 ? s % 2 : 0);
  }
  assert_int_equal(MPI_Comm_free(&dup), 0);
  assert_ptr_equal(dup, MPI_COMM_NULL);
  assert_int_equal(MPI_Comm_free(&half), 0);
  assert_int_equal(MPI_Comm_free(&rev), 0);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  {
    MPI_Comm w = MPI_COMM_WORLD;
    assert_int_equal(mt_class(MPI_Comm_free(&w)), MPI_ERR_COMM);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void test_comm_self(void **state) {
  int r, s, v = 5;
  (void)state;

  MPI_Comm_rank(MPI_COMM_SELF, &r);
  MPI_Comm_size(MPI_COMM_SELF, &s);
  assert_int_equal(r, 0);
  assert_int_equal(s, 1);
  assert_int_equal(MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_SELF), 0);
  assert_int_equal(v, 5);
}

static void test_groups(void **state) {
  int me = mt_rank(), p = mt_size(), i, n, res;
  MPI_Group world, evens, odds, last2, u, x, d, g;
  int *ranks = malloc((size_t)p * sizeof(int)),
      *out = malloc((size_t)p * sizeof(int));
  int range[1][3];
  MPI_Comm c;
  (void)state;

  assert_int_equal(MPI_Comm_group(MPI_COMM_WORLD, &world), 0);
  MPI_Group_size(world, &n);
  assert_int_equal(n, p);
  MPI_Group_rank(world, &n);
  assert_int_equal(n, me);
  /* Evens by a range, odds by exclusion. */
  range[0][0] = 0;
  range[0][1] = p - 1;
  range[0][2] = 2;
  assert_int_equal(MPI_Group_range_incl(world, 1, range, &evens), 0);
  assert_int_equal(MPI_Group_range_excl(world, 1, range, &odds), 0);
  MPI_Group_size(evens, &n);
  assert_int_equal(n, (p + 1) / 2);
  MPI_Group_rank(odds, &n);
  assert_int_equal(n, me % 2 ? me / 2 : MPI_UNDEFINED);
  /* Translate: world ranks into evens. */
  for (i = 0; i < p; i++)
    ranks[i] = i;
  assert_int_equal(MPI_Group_translate_ranks(world, p, ranks, evens, out), 0);
  for (i = 0; i < p; i++)
    assert_int_equal(out[i], i % 2 ? MPI_UNDEFINED : i / 2);
  ranks[0] = MPI_PROC_NULL;
  assert_int_equal(MPI_Group_translate_ranks(world, 1, ranks, evens, out), 0);
  assert_int_equal(out[0], MPI_PROC_NULL);
  /* Set operations. */
  assert_int_equal(MPI_Group_union(odds, evens, &u), 0);
  assert_int_equal(MPI_Group_compare(u, world, &res), 0);
  assert_int_equal(res, p > 1 ? MPI_SIMILAR : MPI_IDENT);
  assert_int_equal(MPI_Group_intersection(world, evens, &x), 0);
  assert_int_equal(MPI_Group_compare(x, evens, &res), 0);
  assert_int_equal(res, MPI_IDENT);
  assert_int_equal(MPI_Group_difference(world, evens, &d), 0);
  assert_int_equal(MPI_Group_compare(d, odds, &res), 0);
  assert_int_equal(res, MPI_IDENT);
  assert_int_equal(MPI_Group_compare(d, evens, &res), 0);
  assert_int_equal(res, MPI_UNEQUAL);
  /* The last two ranks, reversed, by inclusion. */
  ranks[0] = p - 1;
  ranks[1] = p - 2;
  assert_int_equal(MPI_Group_incl(world, 2, ranks, &last2), 0);
  MPI_Group_rank(last2, &n);
  assert_int_equal(n, me == p - 1 ? 0 : me == p - 2 ? 1 : MPI_UNDEFINED);
  /* Empty results are MPI_GROUP_EMPTY. */
  assert_int_equal(MPI_Group_difference(evens, evens, &g), 0);
  assert_ptr_equal(g, MPI_GROUP_EMPTY);
  MPI_Group_size(g, &n);
  assert_int_equal(n, 0);
  /* Bad input. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ranks[0] = ranks[1] = 0;
  assert_int_equal(mt_class(MPI_Group_incl(world, 2, ranks, &g)), MPI_ERR_RANK);
  ranks[0] = p;
  assert_int_equal(mt_class(MPI_Group_excl(world, 1, ranks, &g)), MPI_ERR_RANK);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  /* A communicator of the group, in its order. */
  assert_int_equal(MPI_Comm_create(MPI_COMM_WORLD, last2, &c), 0);
  if (me >= p - 2) {
    int r;
    MPI_Comm_rank(c, &r);
    assert_int_equal(r, p - 1 - me);
    MPI_Comm_free(&c);
  } else {
    assert_ptr_equal(c, MPI_COMM_NULL);
  }
  assert_int_equal(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c), 0);
  assert_ptr_equal(c, MPI_COMM_NULL);
  MPI_Group_free(&world);
  MPI_Group_free(&evens);
  MPI_Group_free(&odds);
  MPI_Group_free(&last2);
  MPI_Group_free(&u);
  MPI_Group_free(&x);
  MPI_Group_free(&d);
  assert_ptr_equal(d, MPI_GROUP_NULL);
  free(ranks);
  free(out);
}

/* What the callbacks saw. */
static int copies, deletes, last_keyval;
static void *last_value;
static MPI_Comm last_comm;

static int copy_cb(MPI_Comm oldcomm, int keyval, void *extra, void *in,
                   void *out, int *flag) {
  copies++;
  last_comm = oldcomm;
  last_keyval = keyval;
  assert_ptr_equal(extra, &copies);
  /* The copy is the value plus one. */
  *(void **)out = (char *)in + 1;
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_cb(MPI_Comm comm, int keyval, void *value, void *extra) {
  deletes++;
  last_comm = comm;
  last_keyval = keyval;
  last_value = value;
  assert_ptr_equal(extra, &copies);
  return MPI_SUCCESS;
}

static int refuse_cb(MPI_Comm oldcomm, int keyval, void *extra, void *in,
                     void *out, int *flag) {
  (void)oldcomm, (void)keyval, (void)extra, (void)in, (void)out, (void)flag;
  return MPI_ERR_OTHER;
}

static void test_attributes(void **state) {
  static char base[16];
  int key, key_nocopy, key_dup, key_refuse, flag;
  void *v;
  MPI_Comm dup, dup2;
  (void)state;

  assert_int_equal(MPI_Comm_create_keyval(copy_cb, delete_cb, &key, &copies),
                   0);
  assert_int_equal(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                          MPI_COMM_NULL_DELETE_FN, &key_nocopy,
                                          NULL),
                   0);
  assert_int_equal(MPI_Comm_create_keyval(MPI_COMM_DUP_FN,
                                          MPI_COMM_NULL_DELETE_FN, &key_dup,
                                          NULL),
                   0);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  copies = deletes = 0;
  assert_int_equal(MPI_Comm_get_attr(dup, key, &v, &flag), 0);
  assert_int_equal(flag, 0);
  assert_int_equal(MPI_Comm_set_attr(dup, key, base), 0);
  assert_int_equal(MPI_Comm_set_attr(dup, key_nocopy, base + 5), 0);
  assert_int_equal(MPI_Comm_set_attr(dup, key_dup, base + 7), 0);
  assert_int_equal(MPI_Comm_get_attr(dup, key, &v, &flag), 0);
  assert_int_equal(flag, 1);
  assert_ptr_equal(v, base);
  /* Dup: our copy callback, NULL_COPY drops, DUP_FN copies. */
  assert_int_equal(MPI_Comm_dup(dup, &dup2), 0);
  assert_int_equal(copies, 1);
  assert_ptr_equal(last_comm, dup);
  assert_int_equal(last_keyval, key);
  MPI_Comm_get_attr(dup2, key, &v, &flag);
  assert_int_equal(flag, 1);
  assert_ptr_equal(v, base + 1);
  MPI_Comm_get_attr(dup2, key_nocopy, &v, &flag);
  assert_int_equal(flag, 0);
  MPI_Comm_get_attr(dup2, key_dup, &v, &flag);
  assert_int_equal(flag, 1);
  assert_ptr_equal(v, base + 7);
  /* Replacing a value deletes the old one. */
  assert_int_equal(MPI_Comm_set_attr(dup2, key, base + 2), 0);
  assert_int_equal(deletes, 1);
  assert_ptr_equal(last_value, base + 1);
  /* MPI_Comm_delete_attr runs the callback; the attribute is gone. */
  assert_int_equal(MPI_Comm_delete_attr(dup2, key), 0);
  assert_int_equal(deletes, 2);
  assert_ptr_equal(last_value, base + 2);
  MPI_Comm_get_attr(dup2, key, &v, &flag);
  assert_int_equal(flag, 0);
  /* A freed keyval still serves the attributes that use it: freeing the
   * communicator runs its delete callback. */
  assert_int_equal(MPI_Comm_free_keyval(&key), 0);
  assert_int_equal(key, MPI_KEYVAL_INVALID);
  assert_int_equal(MPI_Comm_free(&dup), 0);
  assert_int_equal(deletes, 3);
  assert_ptr_equal(last_value, base);
  assert_int_equal(MPI_Comm_free(&dup2), 0);
  assert_int_equal(deletes, 3);
  /* A copy callback's error fails the dup. */
  assert_int_equal(MPI_Comm_create_keyval(refuse_cb, MPI_COMM_NULL_DELETE_FN,
                                          &key_refuse, NULL),
                   0);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_attr(dup, key_refuse, base);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  assert_int_equal(MPI_Comm_dup(dup, &dup2), MPI_ERR_OTHER);
  assert_ptr_equal(dup2, MPI_COMM_NULL);
  MPI_Comm_free(&dup);
  MPI_Comm_free_keyval(&key_refuse);
  MPI_Comm_free_keyval(&key_nocopy);
  MPI_Comm_free_keyval(&key_dup);
}

static void test_predefined_attributes(void **state) {
  int flag, *v;
  MPI_Comm dup;
  (void)state;

  assert_int_equal(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag), 0);
  assert_int_equal(flag, 1);
  assert_true(*v >= 32767);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &v, &flag);
  assert_int_equal(flag, 1);
  assert_int_equal(*v, MPI_PROC_NULL);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &v, &flag);
  assert_int_equal(flag, 1);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &v, &flag);
  assert_int_equal(flag, 1);
  assert_true(*v == 0 || *v == 1);
  /* The largest tag works. */
  {
    int tag, x = 9, y = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
    tag = *v;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    assert_int_equal(MPI_Sendrecv(&x, 1, MPI_INT, mt_rank(), tag, &y, 1,
                                  MPI_INT, mt_rank(), tag, dup,
                                  MPI_STATUS_IGNORE),
                     0);
    assert_int_equal(y, 9);
    MPI_Comm_free(&dup);
  }
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dup_split_compare),
      cmocka_unit_test(test_comm_self),
      cmocka_unit_test(test_groups),
      cmocka_unit_test(test_attributes),
      cmocka_unit_test(test_predefined_attributes),
  };
  int rc;

  MPI_Init(&argc, &argv);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  return MPI_Finalize() == MPI_SUCCESS ? rc : 1;
}
