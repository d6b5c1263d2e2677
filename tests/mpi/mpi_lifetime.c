/* SPDX-License-Identifier: MIT */
/*
 * Objects freed while operations that use them are under way: MPI frees
 * a communicator, a datatype or an operation only once the operations
 * using it complete (MPI-3.1 6.4.3, 4.1.9, 5.9.5), and MPI_Buffer_detach
 * waits for the messages in the buffer. Each test frees the object, then
 * lets the operation finish: under ASan a use after free fails it, and
 * the results must be right. Needs at least 2 ranks.
 */
#include <unistd.h>

#include "mpi_test.h"

/* Rank 0's receive on a communicator it freed matches a message that
 * rank 1 sends only afterwards. */
static void test_comm_free_pending_p2p(void **state) {
  MPI_Comm c;
  MPI_Request rq;
  MPI_Status st;
  int v = -1, me = mt_rank();

  (void)state;
  assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
  if (me == 0) {
    assert_int_equal(MPI_Irecv(&v, 1, MPI_INT, 1, 7, c, &rq), MPI_SUCCESS);
    assert_int_equal(MPI_Comm_free(&c), MPI_SUCCESS);
    assert_ptr_equal(c, MPI_COMM_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    assert_int_equal(MPI_Wait(&rq, &st), MPI_SUCCESS);
    assert_int_equal(v, 42);
    assert_int_equal(st.MPI_SOURCE, 1);
    assert_int_equal(st.MPI_TAG, 7);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1) {
      v = 42;
      assert_int_equal(MPI_Isend(&v, 1, MPI_INT, 0, 7, c, &rq), MPI_SUCCESS);
      assert_int_equal(MPI_Comm_free(&c), MPI_SUCCESS);
      assert_int_equal(MPI_Wait(&rq, MPI_STATUS_IGNORE), MPI_SUCCESS);
    } else {
      assert_int_equal(MPI_Comm_free(&c), MPI_SUCCESS);
    }
  }
}

/* A pair of ints summed by a user operation. */
static void pair_sum(void *in, void *inout, int *len, MPI_Datatype *t) {
  const int *a = in;
  int *b = inout, i;

  (void)t;
  for (i = 0; i < 2 * *len; i++)
    b[i] += a[i];
}

/*
 * Non-blocking collectives on a communicator freed at once, with a
 * derived type and a user operation freed too: rank 0 starts only after
 * the others have freed everything, so that their collectives run on
 * freed objects. A gather into a type with holes (unpacked at completion)
 * and a broadcast of 1 MiB (many messages) go with them.
 */
static void test_coll_free_pending(void **state) {
  enum { N = 64, BIG = 1 << 20 };
  MPI_Comm c;
  MPI_Datatype pair, every_other;
  MPI_Op op;
  MPI_Request rq[3];
  int in[2 * N], out[2 * N], *g, i, me = mt_rank(), p = mt_size();
  char *big = malloc(BIG);

  (void)state;
  assert_non_null(big);
  g = calloc((size_t)2 * (size_t)p, sizeof(int));
  assert_non_null(g);
  for (i = 0; i < 2 * N; i++)
    in[i] = me + i;
  memset(big, me == 0 ? 'x' : 0, BIG);
  assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
  assert_int_equal(MPI_Type_contiguous(2, MPI_INT, &pair), MPI_SUCCESS);
  assert_int_equal(MPI_Type_commit(&pair), MPI_SUCCESS);
  assert_int_equal(
      MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &every_other),
      MPI_SUCCESS);
  assert_int_equal(MPI_Type_commit(&every_other), MPI_SUCCESS);
  assert_int_equal(MPI_Op_create(pair_sum, 1, &op), MPI_SUCCESS);
  if (me == 0)
    MPI_Barrier(MPI_COMM_WORLD);
  assert_int_equal(MPI_Iallreduce(in, out, N, pair, op, c, &rq[0]),
                   MPI_SUCCESS);
  assert_int_equal(
      MPI_Igather(&me, 1, MPI_INT, g, 1, every_other, 0, c, &rq[1]),
      MPI_SUCCESS);
  assert_int_equal(MPI_Ibcast(big, BIG, MPI_CHAR, 0, c, &rq[2]), MPI_SUCCESS);
  assert_int_equal(MPI_Op_free(&op), MPI_SUCCESS);
  assert_int_equal(MPI_Type_free(&pair), MPI_SUCCESS);
  assert_int_equal(MPI_Type_free(&every_other), MPI_SUCCESS);
  assert_int_equal(MPI_Comm_free(&c), MPI_SUCCESS);
  if (me != 0)
    MPI_Barrier(MPI_COMM_WORLD);
  assert_int_equal(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  for (i = 0; i < 2 * N; i++)
    assert_int_equal(out[i], p * (p - 1) / 2 + p * i);
  if (me == 0)
    for (i = 0; i < p; i++) {
      assert_int_equal(g[2 * i], i);
      assert_int_equal(g[2 * i + 1], 0); /* the holes stay */
    }
  for (i = 0; i < BIG; i += 4093)
    assert_int_equal(big[i], 'x');
  free(g);
  free(big);
}

/* A receive freed while active (MPI_Request_free) on a communicator then
 * freed: the message comes afterwards, the receive completes in the
 * background, and a later MPI_Request_free reaps it. */
static void test_request_free_orphan(void **state) {
  MPI_Comm c;
  MPI_Request rq;
  static volatile int v = -1;
  int w = 11, me = mt_rank();

  (void)state;
  assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
  if (me == 0) {
    assert_int_equal(MPI_Irecv((int *)&v, 1, MPI_INT, 1, 3, c, &rq),
                     MPI_SUCCESS);
    assert_int_equal(MPI_Request_free(&rq), MPI_SUCCESS);
    assert_ptr_equal(rq, MPI_REQUEST_NULL);
    assert_int_equal(MPI_Comm_free(&c), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    while (v != 11) { /* the progress thread writes it */
      int flag;
      MPI_Iprobe(0, 9, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
      usleep(1000);
    }
    /* Freeing another active request reaps the one that completed. */
    assert_int_equal(MPI_Irecv(&w, 1, MPI_INT, 0, 9, MPI_COMM_SELF, &rq),
                     MPI_SUCCESS);
    assert_int_equal(MPI_Cancel(&rq), MPI_SUCCESS);
    assert_int_equal(MPI_Request_free(&rq), MPI_SUCCESS);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1)
      assert_int_equal(MPI_Send(&w, 1, MPI_INT, 0, 3, c), MPI_SUCCESS);
    assert_int_equal(MPI_Comm_free(&c), MPI_SUCCESS);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * MPI_Buffer_detach waits for the buffered sends, and while it waits a
 * reduction with a user operation completes in the progress thread: the
 * detach must not hold what that operation needs. Rank 1 receives only
 * after rank 0 is inside the detach, and its reduction data arrives
 * first. Messages of 256 KiB go by rendezvous: they need the receive.
 */
static void test_buffer_detach_pending(void **state) {
  enum { LEN = 256 * 1024, K = 3 };
  MPI_Datatype pair;
  MPI_Op op;
  MPI_Request rq;
  int in[4], out[4], i, k, me = mt_rank(), p = mt_size(), size;
  char *msg = malloc(LEN), *buf, *got;
  int bsize = K * (LEN + MPI_BSEND_OVERHEAD + 16);

  (void)state;
  assert_non_null(msg);
  assert_int_equal(MPI_Type_contiguous(2, MPI_INT, &pair), MPI_SUCCESS);
  assert_int_equal(MPI_Type_commit(&pair), MPI_SUCCESS);
  assert_int_equal(MPI_Op_create(pair_sum, 1, &op), MPI_SUCCESS);
  for (i = 0; i < 4; i++)
    in[i] = me;
  assert_int_equal(MPI_Iallreduce(in, out, 2, pair, op, MPI_COMM_WORLD, &rq),
                   MPI_SUCCESS);
  if (me == 0) {
    buf = malloc((size_t)bsize);
    assert_non_null(buf);
    assert_int_equal(MPI_Buffer_attach(buf, bsize), MPI_SUCCESS);
    for (k = 0; k < K; k++) {
      memset(msg, 'a' + k, LEN);
      assert_int_equal(MPI_Bsend(msg, LEN, MPI_CHAR, 1, k, MPI_COMM_WORLD),
                       MPI_SUCCESS);
    }
    assert_int_equal(MPI_Buffer_detach(&got, &size), MPI_SUCCESS);
    assert_ptr_equal(got, buf);
    assert_int_equal(size, bsize);
    memset(buf, 0, (size_t)bsize); /* every message has left it */
    free(buf);
  } else if (me == 1) {
    usleep(300 * 1000);
    for (k = 0; k < K; k++) {
      assert_int_equal(
          MPI_Recv(msg, LEN, MPI_CHAR, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          MPI_SUCCESS);
      for (i = 0; i < LEN; i += 4099)
        assert_int_equal(msg[i], 'a' + k);
    }
  }
  assert_int_equal(MPI_Wait(&rq, MPI_STATUS_IGNORE), MPI_SUCCESS);
  for (i = 0; i < 4; i++)
    assert_int_equal(out[i], p * (p - 1) / 2);
  MPI_Op_free(&op);
  MPI_Type_free(&pair);
  free(msg);
}

/* Delete callbacks: run in the reverse order the attributes were set,
 * and free to delete other attributes of the same communicator or free
 * another communicator (MPI calls from a callback). */
static int order[4], norder, key_a, key_b, key_c;

static int del_a(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm;
  (void)keyval;
  (void)extra;
  order[norder++] = 'a';
  return MPI_Comm_free((MPI_Comm *)value) == MPI_SUCCESS ? MPI_SUCCESS
                                                         : MPI_ERR_OTHER;
}

static int del_b(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)keyval;
  (void)value;
  (void)extra;
  order[norder++] = 'b';
  return MPI_Comm_delete_attr(comm, key_c);
}

static int del_c(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm;
  (void)keyval;
  (void)value;
  (void)extra;
  order[norder++] = 'c';
  return MPI_SUCCESS;
}

static void test_attr_delete_order(void **state) {
  MPI_Comm c, inner;
  int flag;
  void *v;

  (void)state;
  assert_int_equal(
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_a, &key_a, NULL),
      MPI_SUCCESS);
  assert_int_equal(
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_b, &key_b, NULL),
      MPI_SUCCESS);
  assert_int_equal(
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_c, &key_c, NULL),
      MPI_SUCCESS);
  assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
  assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &inner), MPI_SUCCESS);
  /* Set a, c, b: freeing deletes b first, whose callback deletes c (set
   * before it), then a, whose callback frees `inner`. */
  assert_int_equal(MPI_Comm_set_attr(c, key_a, &inner), MPI_SUCCESS);
  assert_int_equal(MPI_Comm_set_attr(c, key_c, NULL), MPI_SUCCESS);
  assert_int_equal(MPI_Comm_set_attr(c, key_b, NULL), MPI_SUCCESS);
  assert_int_equal(MPI_Comm_get_attr(c, key_c, &v, &flag), MPI_SUCCESS);
  assert_true(flag);
  norder = 0;
  assert_int_equal(MPI_Comm_free(&c), MPI_SUCCESS);
  assert_int_equal(norder, 3);
  assert_int_equal(order[0], 'b');
  assert_int_equal(order[1], 'c');
  assert_int_equal(order[2], 'a');
  assert_ptr_equal(inner, MPI_COMM_NULL);
  MPI_Comm_free_keyval(&key_a);
  MPI_Comm_free_keyval(&key_b);
  MPI_Comm_free_keyval(&key_c);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_comm_free_pending_p2p),
      cmocka_unit_test(test_coll_free_pending),
      cmocka_unit_test(test_request_free_orphan),
      cmocka_unit_test(test_buffer_detach_pending),
      cmocka_unit_test(test_attr_delete_order),
  };
  int rc;

  MPI_Init(&argc, &argv);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
