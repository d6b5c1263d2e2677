/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point through libminimp-mpi, as MPI-3.1 chapter 3 states it:
 * non-overtaking, status and MPI_Get_count, truncation, MPI_PROC_NULL,
 * the send modes (MPI_Ssend synchronous, MPI_Bsend local, MPI_Rsend),
 * every completion call, probe, cancel, persistent requests, and derived
 * datatypes on the wire (MPI_Get_elements of a partial element). Runs on
 * two or more ranks.
 */
#include <unistd.h>

#include "mpi_test.h"

static void test_send_recv_status(void **state) {
  int me = mt_rank(), p = mt_size(), buf[4] = {0}, n;
  MPI_Status st;
  (void)state;

  if (me == 0) {
    int v[3] = {7, 8, 9};
    assert_int_equal(MPI_Send(v, 3, MPI_INT, p - 1, 5, MPI_COMM_WORLD), 0);
  }
  if (me == p - 1) {
    st.MPI_ERROR = 12345; /* a single completion leaves it alone */
    assert_int_equal(MPI_Recv(buf, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                              MPI_COMM_WORLD, &st),
                     0);
    assert_int_equal(st.MPI_SOURCE, 0);
    assert_int_equal(st.MPI_TAG, 5);
    assert_int_equal(st.MPI_ERROR, 12345);
    assert_int_equal(MPI_Get_count(&st, MPI_INT, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(MPI_Get_count(&st, MPI_DOUBLE, &n), 0);
    assert_int_equal(n, MPI_UNDEFINED); /* 12 bytes are no whole doubles */
    assert_int_equal(MPI_Get_elements(&st, MPI_SHORT, &n), 0);
    assert_int_equal(n, 6);
    assert_int_equal(buf[2], 9);
    assert_int_equal(buf[3], 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Messages between two ranks on one communicator do not overtake each
 * other, across sizes that go eager and by rendezvous, and a receive
 * matching by tag takes the first of that tag. The sends are posted at
 * once (a blocking standard send may wait for its receive). */
static void test_non_overtaking(void **state) {
  enum { N = 24 };
  int me = mt_rank(), p = mt_size(), i;
  size_t big = 300 * 1024;
  char *buf = malloc(big), *out[N];
  MPI_Request r[N];
  (void)state;

  if (me == 0) {
    for (i = 0; i < N; i++) {
      size_t len = i % 3 == 2 ? big : (size_t)(i + 1);
      out[i] = malloc(len);
      memset(out[i], i, len);
      assert_int_equal(MPI_Isend(out[i], (int)len, MPI_CHAR, p - 1, i % 2,
                                 MPI_COMM_WORLD, &r[i]),
                       0);
    }
    assert_int_equal(MPI_Waitall(N, r, MPI_STATUSES_IGNORE), 0);
    for (i = 0; i < N; i++)
      free(out[i]);
  } else if (me == p - 1) {
    MPI_Status st;
    int n;
    /* Tag 1 first: the odd ones in order, then the even ones in order. */
    for (i = 1; i < N; i += 2) {
      assert_int_equal(
          MPI_Recv(buf, (int)big, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &st), 0);
      MPI_Get_count(&st, MPI_CHAR, &n);
      assert_int_equal(n, i % 3 == 2 ? (int)big : i + 1);
      assert_int_equal(buf[0], i);
      assert_int_equal(buf[n - 1], i);
    }
    for (i = 0; i < N; i += 2) {
      assert_int_equal(MPI_Recv(buf, (int)big, MPI_CHAR, MPI_ANY_SOURCE,
                                MPI_ANY_TAG, MPI_COMM_WORLD, &st),
                       0);
      assert_int_equal(st.MPI_TAG, 0);
      assert_int_equal(buf[0], i);
    }
  }
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_truncation(void **state) {
  int me = mt_rank(), p = mt_size(), v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[3];
  MPI_Status st;
  (void)state;

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (me == 0)
    assert_int_equal(MPI_Send(v, 8, MPI_INT, p - 1, 1, MPI_COMM_WORLD), 0);
  if (me == p - 1) {
    int rc = MPI_Recv(got, 3, MPI_INT, 0, 1, MPI_COMM_WORLD, &st), n;
    assert_int_equal(mt_class(rc), MPI_ERR_TRUNCATE);
    assert_int_equal(got[2], 3);
    MPI_Get_count(&st, MPI_INT, &n);
    assert_int_equal(n, 3);
  }
  /* The same through a request. */
  if (me == 0)
    assert_int_equal(MPI_Send(v, 8, MPI_INT, p - 1, 2, MPI_COMM_WORLD), 0);
  if (me == p - 1) {
    MPI_Request r;
    assert_int_equal(MPI_Irecv(got, 2, MPI_INT, 0, 2, MPI_COMM_WORLD, &r), 0);
    assert_int_equal(mt_class(MPI_Wait(&r, &st)), MPI_ERR_TRUNCATE);
    assert_ptr_equal(r, MPI_REQUEST_NULL);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void assert_null_status(const MPI_Status *st) {
  int n = -1;

  assert_int_equal(st->MPI_SOURCE, MPI_PROC_NULL);
  assert_int_equal(st->MPI_TAG, MPI_ANY_TAG);
  MPI_Get_count(st, MPI_INT, &n);
  assert_int_equal(n, 0);
}

static void test_proc_null(void **state) {
  int v = 3, flag = 0;
  MPI_Status st;
  MPI_Request r;
  (void)state;

  assert_int_equal(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD),
                   0);
  assert_int_equal(
      MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st), 0);
  assert_null_status(&st);
  assert_int_equal(v, 3);
  assert_int_equal(
      MPI_Irecv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r), 0);
  assert_int_equal(MPI_Test(&r, &flag, &st), 0);
  assert_int_equal(flag, 1);
  assert_null_status(&st);
  assert_int_equal(MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, &v, 1,
                                MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st),
                   0);
  assert_null_status(&st);
  assert_int_equal(MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st), 0);
  assert_null_status(&st);
  assert_int_equal(MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st), 0);
  assert_int_equal(flag, 1);
  assert_int_equal(MPI_Bsend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD),
                   0);
}

/* MPI_Issend completes only once the receive has matched; MPI_Isend of a
 * small message completes on its own. */
static void test_ssend_is_synchronous(void **state) {
  int me = mt_rank(), p = mt_size(), v = 1, flag = 1, i;
  MPI_Request r;
  (void)state;

  if (me == 0) {
    assert_int_equal(MPI_Issend(&v, 1, MPI_INT, p - 1, 7, MPI_COMM_WORLD, &r),
                     0);
    /* The peer says it has not posted its receive, and waits for us. */
    assert_int_equal(
        MPI_Recv(NULL, 0, MPI_INT, p - 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        0);
    for (i = 0; i < 20; i++) {
      assert_int_equal(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), 0);
      assert_int_equal(flag, 0);
      usleep(5000);
    }
    assert_int_equal(MPI_Send(NULL, 0, MPI_INT, p - 1, 9, MPI_COMM_WORLD), 0);
    assert_int_equal(MPI_Wait(&r, MPI_STATUS_IGNORE), 0);
    /* Blocking: returns once the peer has received. */
    assert_int_equal(MPI_Ssend(&v, 1, MPI_INT, p - 1, 10, MPI_COMM_WORLD), 0);
  } else if (me == p - 1) {
    assert_int_equal(MPI_Send(NULL, 0, MPI_INT, 0, 8, MPI_COMM_WORLD), 0);
    assert_int_equal(
        MPI_Recv(NULL, 0, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE), 0);
    assert_int_equal(
        MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), 0);
    assert_int_equal(
        MPI_Recv(&v, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* MPI_Bsend completes locally, whether or not a receive is posted, and
 * fails with MPI_ERR_BUFFER when the message does not fit the attached
 * buffer. */
static void test_bsend(void **state) {
  int me = mt_rank(), p = mt_size(), size, i, v[100];
  size_t cap = 3 * (100 * sizeof(int) + MPI_BSEND_OVERHEAD);
  char *buf = malloc(cap);
  void *back = NULL;
  MPI_Request r;
  (void)state;

  for (i = 0; i < 100; i++)
    v[i] = i;
  assert_int_equal(MPI_Buffer_attach(buf, (int)cap), 0);
  if (me == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (i = 0; i < 3; i++) {
      v[0] = i;
      assert_int_equal(MPI_Bsend(v, 100, MPI_INT, p - 1, 3, MPI_COMM_WORLD), 0);
    }
    /* A message larger than the whole buffer never fits. */
    {
      int *huge = calloc(cap, 1);
      assert_int_equal(mt_class(MPI_Bsend(huge, (int)(cap / sizeof(int)),
                                          MPI_INT, p - 1, 3, MPI_COMM_WORLD)),
                       MPI_ERR_BUFFER);
      free(huge);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    assert_int_equal(MPI_Send(NULL, 0, MPI_INT, p - 1, 4, MPI_COMM_WORLD), 0);
    /* An MPI_Ibsend request is complete at once. */
    assert_int_equal(
        MPI_Recv(NULL, 0, MPI_INT, p - 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        0);
    assert_int_equal(MPI_Ibsend(v, 10, MPI_INT, p - 1, 6, MPI_COMM_WORLD, &r),
                     0);
    {
      int flag = 0;
      assert_int_equal(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), 0);
      assert_int_equal(flag, 1);
    }
  } else if (me == p - 1) {
    assert_int_equal(
        MPI_Recv(NULL, 0, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE), 0);
    for (i = 0; i < 3; i++) {
      assert_int_equal(
          MPI_Recv(v, 100, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          0);
      assert_int_equal(v[0], i);
      assert_int_equal(v[99], 99);
    }
    assert_int_equal(MPI_Send(NULL, 0, MPI_INT, 0, 5, MPI_COMM_WORLD), 0);
    assert_int_equal(
        MPI_Recv(v, 10, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE), 0);
  }
  /* Detach waits for what is still in the buffer, and gives it back. */
  assert_int_equal(MPI_Buffer_detach(&back, &size), 0);
  assert_ptr_equal(back, buf);
  assert_int_equal(size, (int)cap);
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_rsend(void **state) {
  int me = mt_rank(), p = mt_size(), v = 0;
  MPI_Request r;
  (void)state;

  if (me == p - 1)
    assert_int_equal(MPI_Irecv(&v, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, &r), 0);
  MPI_Barrier(MPI_COMM_WORLD); /* the receive is posted: ready mode holds */
  if (me == 0) {
    v = 77;
    assert_int_equal(MPI_Rsend(&v, 1, MPI_INT, p - 1, 11, MPI_COMM_WORLD), 0);
  }
  if (me == p - 1) {
    assert_int_equal(MPI_Wait(&r, MPI_STATUS_IGNORE), 0);
    assert_int_equal(v, 77);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Every rank sends one message to every rank, itself included, and
 * completes the receives through each of the completion calls. */
static void test_completion_calls(void **state) {
  int me = mt_rank(), p = mt_size(), i, k, idx, flag, out;
  int *in = calloc((size_t)p, sizeof(int)),
      *idxs = malloc((size_t)p * sizeof(int));
  MPI_Request *rr = malloc((size_t)(p + 1) * sizeof(MPI_Request)), sr[2];
  MPI_Status *sts = malloc((size_t)(p + 1) * sizeof(MPI_Status)), st;
  (void)state;

  for (k = 0; k < 5; k++) {
    for (i = 0; i < p; i++)
      assert_int_equal(
          MPI_Irecv(&in[i], 1, MPI_INT, i, 20 + k, MPI_COMM_WORLD, &rr[i]), 0);
    rr[p] = MPI_REQUEST_NULL; /* null entries are skipped */
    for (i = 0; i < p; i++) {
      int v = 1000 * k + 10 * me + i;
      assert_int_equal(MPI_Send(&v, 1, MPI_INT, i, 20 + k, MPI_COMM_WORLD), 0);
    }
    switch (k) {
    case 0:
      assert_int_equal(MPI_Waitall(p + 1, rr, sts), 0);
      for (i = 0; i < p; i++) {
        assert_int_equal(sts[i].MPI_SOURCE, i);
        assert_int_equal(sts[i].MPI_ERROR, MPI_SUCCESS);
      }
      assert_int_equal(sts[p].MPI_SOURCE, MPI_ANY_SOURCE); /* empty */
      break;
    case 1:
      for (i = 0; i < p; i++) {
        assert_int_equal(MPI_Waitany(p + 1, rr, &idx, &st), 0);
        assert_int_equal(st.MPI_SOURCE, idx);
        assert_ptr_equal(rr[idx], MPI_REQUEST_NULL);
      }
      assert_int_equal(MPI_Waitany(p + 1, rr, &idx, &st), 0);
      assert_int_equal(idx, MPI_UNDEFINED);
      break;
    case 2:
      for (i = 0; i < p; i += out) {
        assert_int_equal(MPI_Waitsome(p + 1, rr, &out, idxs, sts), 0);
        assert_true(out >= 1);
        assert_int_equal(sts[0].MPI_SOURCE, idxs[0]);
      }
      assert_int_equal(MPI_Waitsome(p + 1, rr, &out, idxs, sts), 0);
      assert_int_equal(out, MPI_UNDEFINED);
      break;
    case 3:
      do
        assert_int_equal(MPI_Testall(p + 1, rr, &flag, sts), 0);
      while (!flag);
      for (i = 0; i < p; i++)
        assert_ptr_equal(rr[i], MPI_REQUEST_NULL);
      break;
    case 4:
      for (i = 0; i < p;) {
        assert_int_equal(MPI_Testany(p + 1, rr, &idx, &flag, &st), 0);
        if (flag && idx != MPI_UNDEFINED) {
          assert_int_equal(st.MPI_SOURCE, idx);
          i++;
        }
        /* MPI_UNDEFINED once no request is left. */
        assert_int_equal(MPI_Testsome(p + 1, rr, &out, idxs, sts), 0);
        if (out != MPI_UNDEFINED)
          i += out;
      }
      assert_int_equal(MPI_Testany(p + 1, rr, &idx, &flag, &st), 0);
      assert_int_equal(flag, 1);
      assert_int_equal(idx, MPI_UNDEFINED);
      break;
    }
    for (i = 0; i < p; i++)
      assert_int_equal(in[i], 1000 * k + 10 * i + me);
  }
  /* MPI_Testall returns nothing until all are done, and keeps what
   * finished for the call that returns it. */
  if (p >= 2 && me < 2) {
    int other = 1 - me, a = -1, b = -1, v = 5;
    assert_int_equal(
        MPI_Irecv(&a, 1, MPI_INT, other, 40, MPI_COMM_WORLD, &sr[0]), 0);
    assert_int_equal(
        MPI_Irecv(&b, 1, MPI_INT, other, 41, MPI_COMM_WORLD, &sr[1]), 0);
    assert_int_equal(MPI_Send(&v, 1, MPI_INT, other, 40, MPI_COMM_WORLD), 0);
    /* After this exchange tag 40 has arrived (it was sent first). */
    MPI_Sendrecv(NULL, 0, MPI_INT, other, 42, NULL, 0, MPI_INT, other, 42,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    assert_int_equal(MPI_Testall(2, sr, &flag, sts), 0);
    assert_int_equal(flag, 0);
    assert_non_null(sr[0]);
    /* Both have looked before either sends tag 41. */
    MPI_Sendrecv(NULL, 0, MPI_INT, other, 43, NULL, 0, MPI_INT, other, 43,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    assert_int_equal(MPI_Send(&v, 1, MPI_INT, other, 41, MPI_COMM_WORLD), 0);
    assert_int_equal(MPI_Waitall(2, sr, sts), 0);
    assert_int_equal(sts[0].MPI_TAG, 40);
    assert_int_equal(sts[1].MPI_TAG, 41);
    assert_int_equal(a + b, 10);
  }
  free(in);
  free(idxs);
  free(rr);
  free(sts);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_probe(void **state) {
  int me = mt_rank(), p = mt_size(), flag = 0, n;
  MPI_Status st;
  (void)state;

  if (me == 0) {
    double d[5] = {1, 2, 3, 4, 5};
    assert_int_equal(MPI_Send(d, 5, MPI_DOUBLE, p - 1, 13, MPI_COMM_WORLD), 0);
  } else if (me == p - 1) {
    double *d;
    assert_int_equal(
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st), 0);
    assert_int_equal(st.MPI_SOURCE, 0);
    assert_int_equal(st.MPI_TAG, 13);
    assert_int_equal(MPI_Get_count(&st, MPI_DOUBLE, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(MPI_Iprobe(0, 13, MPI_COMM_WORLD, &flag, &st), 0);
    assert_int_equal(flag, 1);
    assert_int_equal(MPI_Iprobe(0, 14, MPI_COMM_WORLD, &flag, &st), 0);
    assert_int_equal(flag, 0);
    d = malloc((size_t)n * sizeof(double));
    assert_int_equal(MPI_Recv(d, n, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG,
                              MPI_COMM_WORLD, &st),
                     0);
    assert_true(d[4] == 5.0);
    free(d);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_cancel(void **state) {
  int me = mt_rank(), p = mt_size(), v = -1, flag = 0;
  MPI_Request r;
  MPI_Status st;
  (void)state;

  /* Nothing is ever sent on tag 99. */
  assert_int_equal(
      MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &r), 0);
  assert_int_equal(MPI_Cancel(&r), 0);
  assert_int_equal(MPI_Wait(&r, &st), 0);
  assert_int_equal(MPI_Test_cancelled(&st, &flag), 0);
  assert_int_equal(flag, 1);
  assert_int_equal(v, -1);
  /* One that has matched is received, not cancelled. */
  if (me == p - 1) {
    assert_int_equal(MPI_Irecv(&v, 1, MPI_INT, 0, 98, MPI_COMM_WORLD, &r), 0);
    assert_int_equal(MPI_Probe(0, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE), 0);
    do
      MPI_Test(&r, &flag, &st);
    while (!flag);
    assert_int_equal(
        MPI_Recv(NULL, 0, MPI_INT, 0, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        0);
    assert_int_equal(MPI_Test_cancelled(&st, &flag), 0);
    assert_int_equal(flag, 0);
    assert_int_equal(v, 42);
  }
  if (me == 0) {
    v = 42;
    assert_int_equal(MPI_Send(&v, 1, MPI_INT, p - 1, 98, MPI_COMM_WORLD), 0);
    assert_int_equal(MPI_Send(NULL, 0, MPI_INT, p - 1, 97, MPI_COMM_WORLD), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_persistent(void **state) {
  int me = mt_rank(), p = mt_size(), k, out = 0, in = -1;
  int next = (me + 1) % p, prev = (me + p - 1) % p;
  MPI_Request r[2];
  MPI_Status st[2];
  (void)state;

  assert_int_equal(
      MPI_Recv_init(&in, 1, MPI_INT, prev, 30, MPI_COMM_WORLD, &r[0]), 0);
  assert_int_equal(
      MPI_Send_init(&out, 1, MPI_INT, next, 30, MPI_COMM_WORLD, &r[1]), 0);
  /* Inactive: completes at once with an empty status. */
  assert_int_equal(MPI_Wait(&r[0], &st[0]), 0);
  assert_non_null(r[0]);
  assert_int_equal(st[0].MPI_SOURCE, MPI_ANY_SOURCE);
  for (k = 0; k < 4; k++) {
    out = 100 * k + me;
    assert_int_equal(MPI_Startall(2, r), 0);
    assert_int_equal(MPI_Waitall(2, r, st), 0);
    assert_non_null(r[0]); /* persistent: kept, inactive */
    assert_int_equal(in, 100 * k + prev);
    assert_int_equal(st[0].MPI_SOURCE, prev);
  }
  /* A started request cannot start again until it completes. */
  assert_int_equal(MPI_Start(&r[0]), 0);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  assert_int_equal(mt_class(MPI_Start(&r[0])), MPI_ERR_REQUEST);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  assert_int_equal(MPI_Start(&r[1]), 0);
  assert_int_equal(MPI_Waitall(2, r, st), 0);
  assert_int_equal(MPI_Request_free(&r[0]), 0);
  assert_int_equal(MPI_Request_free(&r[1]), 0);
  assert_ptr_equal(r[0], MPI_REQUEST_NULL);
  /* The other send modes, persistent. */
  {
    MPI_Request s;
    assert_int_equal(
        MPI_Ssend_init(&out, 1, MPI_INT, next, 31, MPI_COMM_WORLD, &s), 0);
    assert_int_equal(MPI_Start(&s), 0);
    assert_int_equal(
        MPI_Recv(&in, 1, MPI_INT, prev, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        0);
    assert_int_equal(MPI_Wait(&s, MPI_STATUS_IGNORE), 0);
    assert_int_equal(MPI_Request_free(&s), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A send freed while active still arrives. */
static void test_request_free_active(void **state) {
  int me = mt_rank(), p = mt_size(), v = 5 + me, got = 0;
  MPI_Request r;
  (void)state;

  assert_int_equal(
      MPI_Isend(&v, 1, MPI_INT, (me + 1) % p, 33, MPI_COMM_WORLD, &r), 0);
  assert_int_equal(MPI_Request_free(&r), 0);
  assert_ptr_equal(r, MPI_REQUEST_NULL);
  assert_int_equal(MPI_Recv(&got, 1, MPI_INT, (me + p - 1) % p, 33,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                   0);
  assert_int_equal(got, 5 + (me + p - 1) % p);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_sendrecv(void **state) {
  int me = mt_rank(), p = mt_size(), next = (me + 1) % p,
      prev = (me + p - 1) % p, a[3] = {me, me, me}, b[3];
  MPI_Status st;
  (void)state;

  assert_int_equal(MPI_Sendrecv(a, 3, MPI_INT, next, 50, b, 3, MPI_INT, prev,
                                50, MPI_COMM_WORLD, &st),
                   0);
  assert_int_equal(b[2], prev);
  assert_int_equal(st.MPI_SOURCE, prev);
  assert_int_equal(MPI_Sendrecv_replace(a, 3, MPI_INT, next, 51, prev, 51,
                                        MPI_COMM_WORLD, &st),
                   0);
  assert_int_equal(a[0], prev);
  assert_int_equal(a[2], prev);
}

/* A strided column goes out and lands contiguous, and the other way;
 * a receive of part of an element counts its basic elements. */
static void test_derived_on_the_wire(void **state) {
  int me = mt_rank(), p = mt_size(), i, n;
  double m[4][4], col[4];
  MPI_Datatype column, pair;
  MPI_Status st;
  (void)state;

  MPI_Type_vector(4, 1, 4, MPI_DOUBLE, &column);
  MPI_Type_commit(&column);
  for (i = 0; i < 16; i++)
    m[i / 4][i % 4] = i;
  if (me == 0) {
    assert_int_equal(MPI_Send(&m[0][1], 1, column, p - 1, 60, MPI_COMM_WORLD),
                     0);
    assert_int_equal(
        MPI_Recv(&m[0][2], 1, column, p - 1, 61, MPI_COMM_WORLD, &st), 0);
    for (i = 0; i < 4; i++)
      assert_true(m[i][2] == 100 + i);
    assert_int_equal(MPI_Get_count(&st, column, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(MPI_Get_elements(&st, column, &n), 0);
    assert_int_equal(n, 4);
  } else if (me == p - 1) {
    assert_int_equal(MPI_Recv(col, 4, MPI_DOUBLE, 0, 60, MPI_COMM_WORLD, &st),
                     0);
    for (i = 0; i < 4; i++)
      assert_true(col[i] == 4 * i + 1);
    for (i = 0; i < 4; i++)
      col[i] = 100 + i;
    assert_int_equal(MPI_Send(col, 4, MPI_DOUBLE, 0, 61, MPI_COMM_WORLD), 0);
  }
  /* {int, double} elements; 1.5 of them arrive. */
  {
    int lens[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    struct {
      int i;
      double d;
    } s[2] = {{1, 1.5}, {2, 2.5}};
    MPI_Type_create_struct(2, lens, disp, types, &pair);
    MPI_Type_commit(&pair);
    if (me == 0) {
      char raw[16];
      memcpy(raw, &s[0].i, 4);
      memcpy(raw + 4, &s[0].d, 8);
      memcpy(raw + 12, &s[1].i, 4);
      assert_int_equal(MPI_Send(raw, 16, MPI_BYTE, p - 1, 62, MPI_COMM_WORLD),
                       0);
    } else if (me == p - 1) {
      memset(s, 0, sizeof(s));
      assert_int_equal(MPI_Recv(s, 2, pair, 0, 62, MPI_COMM_WORLD, &st), 0);
      assert_int_equal(MPI_Get_count(&st, pair, &n), 0);
      assert_int_equal(n, MPI_UNDEFINED);
      assert_int_equal(MPI_Get_elements(&st, pair, &n), 0);
      assert_int_equal(n, 3);
      assert_int_equal(s[0].i, 1);
      assert_true(s[0].d == 1.5);
      assert_int_equal(s[1].i, 2);
      assert_true(s[1].d == 0.0);
    }
    MPI_Type_free(&pair);
  }
  MPI_Type_free(&column);
  assert_ptr_equal(column, MPI_DATATYPE_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A non-blocking receive of a derived type completes into the caller's
 * buffer, even when the type was freed meanwhile. */
static void test_derived_nonblocking(void **state) {
  int me = mt_rank(), p = mt_size(), i, buf[12];
  MPI_Datatype every3;
  MPI_Request r;
  (void)state;

  MPI_Type_vector(4, 1, 3, MPI_INT, &every3);
  MPI_Type_commit(&every3);
  memset(buf, 0, sizeof(buf));
  if (me == p - 1) {
    assert_int_equal(MPI_Irecv(buf, 1, every3, 0, 70, MPI_COMM_WORLD, &r), 0);
    MPI_Type_free(&every3);
    assert_int_equal(MPI_Wait(&r, MPI_STATUS_IGNORE), 0);
    for (i = 0; i < 12; i++)
      assert_int_equal(buf[i], i % 3 == 0 ? 10 + i / 3 : 0);
  } else {
    MPI_Type_free(&every3);
  }
  if (me == 0) {
    int v[4] = {10, 11, 12, 13};
    assert_int_equal(MPI_Send(v, 4, MPI_INT, p - 1, 70, MPI_COMM_WORLD), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_self_and_zero(void **state) {
  int me = mt_rank(), v = me, got = -1;
  MPI_Status st;
  MPI_Request r;
  (void)state;

  assert_int_equal(MPI_Isend(&v, 1, MPI_INT, me, 80, MPI_COMM_WORLD, &r), 0);
  assert_int_equal(MPI_Recv(&got, 1, MPI_INT, me, 80, MPI_COMM_WORLD, &st), 0);
  assert_int_equal(MPI_Wait(&r, MPI_STATUS_IGNORE), 0);
  assert_int_equal(got, me);
  assert_int_equal(MPI_Send(NULL, 0, MPI_INT, 0, 81, MPI_COMM_SELF), 0);
  assert_int_equal(MPI_Recv(NULL, 0, MPI_INT, 0, 81, MPI_COMM_SELF, &st), 0);
  assert_int_equal(MPI_Get_count(&st, MPI_INT, &got), 0);
  assert_int_equal(got, 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_send_recv_status),
      cmocka_unit_test(test_non_overtaking),
      cmocka_unit_test(test_truncation),
      cmocka_unit_test(test_proc_null),
      cmocka_unit_test(test_ssend_is_synchronous),
      cmocka_unit_test(test_bsend),
      cmocka_unit_test(test_rsend),
      cmocka_unit_test(test_completion_calls),
      cmocka_unit_test(test_probe),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_persistent),
      cmocka_unit_test(test_request_free_active),
      cmocka_unit_test(test_sendrecv),
      cmocka_unit_test(test_derived_on_the_wire),
      cmocka_unit_test(test_derived_nonblocking),
      cmocka_unit_test(test_self_and_zero),
  };
  int rc;

  MPI_Init(&argc, &argv);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  return MPI_Finalize() == MPI_SUCCESS ? rc : 1;
}
