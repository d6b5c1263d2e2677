/* SPDX-License-Identifier: MIT */
/*
 * Protocol semantics across processes, run through minimprun with at least
 * two ranks: a rendezvous send does not complete before its receive is
 * posted, an eager send does; messages keep their order across protocols;
 * wildcards, probe, truncation and zero-length messages over the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* Busy computation that never calls the library. */
static void compute_for(double seconds) {
  struct timespec t0, t;
  volatile unsigned long x = 0;

  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    for (int i = 0; i < 10000; i++)
      x += (unsigned long)i;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) +
               (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 <
           seconds);
}

static void test_rndv_send_waits_for_receive(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  size_t n = 64 * 1024;
  uint8_t *buf = malloc(n), *want = malloc(n);
  (void)state;

  mr_fill(want, n, 5);
  if (mr_rank() == 0) {
    mmp_request_t *s;
    double t0 = mmp_wtime();
    int flag;
    memcpy(buf, want, n);
    assert_int_equal(mmp_isend_ex(buf, n, 1, 1, w, MMP_SEND_RNDV, &s), 0);
    /* Rank 1 posts nothing until told; the send must stay incomplete. */
    while (mmp_wtime() - t0 < 0.3) {
      assert_int_equal(mmp_test(&s, &flag, NULL), 0);
      assert_int_equal(flag, 0);
      usleep(10000);
    }
    assert_int_equal(mmp_send(NULL, 0, 1, 2, w), 0);
    assert_int_equal(mmp_wait(&s, NULL), 0);
  } else if (mr_rank() == 1) {
    assert_int_equal(mmp_recv(NULL, 0, 0, 2, w, NULL), 0);
    assert_int_equal(mmp_recv(buf, n, 0, 1, w, NULL), 0);
    assert_memory_equal(buf, want, n);
  }
  free(buf);
  free(want);
  assert_int_equal(mr_barrier(), 0);
}

/* A rendezvous send of zero bytes, and one to itself, are synchronous too
 * (MPI_Ssend's rule): neither completes before its receive is posted. */
static void test_rndv_zero_and_self_wait_for_receive(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *s = NULL;
  int flag, v = 7, got = 0;
  (void)state;

  /* To itself: nothing completes it but the receive below. */
  assert_int_equal(
      mmp_isend_ex(&v, sizeof(v), mr_rank(), 3, w, MMP_SEND_RNDV, &s), 0);
  assert_int_equal(mmp_test(&s, &flag, NULL), 0);
  assert_int_equal(flag, 0);
  assert_int_equal(mmp_recv(&got, sizeof(got), mr_rank(), 3, w, NULL), 0);
  assert_int_equal(mmp_wait(&s, NULL), 0);
  assert_int_equal(got, 7);
  if (mr_rank() == 0) {
    double t0 = mmp_wtime();
    assert_int_equal(mmp_isend_ex(NULL, 0, 1, 4, w, MMP_SEND_RNDV, &s), 0);
    while (mmp_wtime() - t0 < 0.2) {
      assert_int_equal(mmp_test(&s, &flag, NULL), 0);
      assert_int_equal(flag, 0);
      usleep(10000);
    }
    assert_int_equal(mmp_send(NULL, 0, 1, 5, w), 0);
    assert_int_equal(mmp_wait(&s, NULL), 0);
  } else if (mr_rank() == 1) {
    assert_int_equal(mmp_recv(NULL, 0, 0, 5, w, NULL), 0);
    assert_int_equal(mmp_recv(NULL, 0, 0, 4, w, NULL), 0);
  }
  assert_int_equal(mr_barrier(), 0);
}

/* mmp_cancel takes back a receive nothing matched; one that matched ends
 * as usual; sends are not cancelled. */
static void test_cancel_receive(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *r = NULL, *s = NULL;
  mmp_status_t st;
  int v = 0, one = 1;
  (void)state;

  assert_int_equal(mmp_cancel(NULL), MMP_EINVAL);
  /* Nothing is sent on tag 9: the receive is cancelled. */
  assert_int_equal(mmp_irecv(&v, sizeof(v), MMP_ANY_SOURCE, 9, w, &r), 0);
  assert_int_equal(mmp_cancel(r), 1);
  assert_int_equal(mmp_wait(&r, &st), MMP_ECANCELED);
  assert_null(r);
  assert_int_equal(st.bytes, 0);
  /* A receive from itself that has matched: too late. */
  assert_int_equal(mmp_irecv(&v, sizeof(v), mr_rank(), 10, w, &r), 0);
  assert_int_equal(mmp_isend(&one, sizeof(one), mr_rank(), 10, w, &s), 0);
  assert_int_equal(mmp_wait(&s, NULL), 0);
  assert_int_equal(mmp_cancel(r), 0);
  assert_int_equal(mmp_wait(&r, &st), 0);
  assert_int_equal(v, 1);
  assert_int_equal(st.bytes, sizeof(v));
  /* A send is not a receive. */
  assert_int_equal(mmp_isend(&one, sizeof(one), mr_rank(), 11, w, &s), 0);
  assert_int_equal(mmp_cancel(s), MMP_ENOTSUP);
  assert_int_equal(mmp_recv(&v, sizeof(v), mr_rank(), 11, w, NULL), 0);
  assert_int_equal(mmp_wait(&s, NULL), 0);
  /* A cancelled receive leaves the message to the next one. */
  if (mr_size() > 1) {
    int peer = (mr_rank() + 1) % mr_size();
    int from = (mr_rank() + mr_size() - 1) % mr_size();
    assert_int_equal(mmp_irecv(&v, sizeof(v), from, 12, w, &r), 0);
    assert_int_equal(mmp_cancel(r), 1);
    assert_int_equal(mmp_wait(&r, NULL), MMP_ECANCELED);
    /* Nobody sends before every rank has cancelled. */
    assert_int_equal(mr_barrier(), 0);
    v = 100 + mr_rank();
    assert_int_equal(mmp_send(&v, sizeof(v), peer, 12, w), 0);
    assert_int_equal(mmp_recv(&v, sizeof(v), from, 12, w, NULL), 0);
    assert_int_equal(v, 100 + from);
  }
  assert_int_equal(mr_barrier(), 0);
}

static void test_eager_send_completes_without_receive(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  char buf[1024];
  (void)state;

  if (mr_rank() == 0) {
    memset(buf, 'e', sizeof(buf));
    /* If this did not complete by itself, rank 1 would never be told to
     * post its receive and the job would time out. */
    assert_int_equal(mmp_send_ex(buf, sizeof(buf), 1, 3, w, MMP_SEND_EAGER), 0);
    memset(buf, 'z', sizeof(buf));
    assert_int_equal(mmp_send(NULL, 0, 1, 4, w), 0);
  } else if (mr_rank() == 1) {
    assert_int_equal(mmp_recv(NULL, 0, 0, 4, w, NULL), 0);
    assert_int_equal(mmp_recv(buf, sizeof(buf), 0, 3, w, NULL), 0);
    assert_int_equal(buf[0], 'e');
    assert_int_equal(buf[sizeof(buf) - 1], 'e');
  }
  assert_int_equal(mr_barrier(), 0);
}

static void test_order_across_protocols(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  static const size_t sizes[] = {16, 2u << 20, 100, 8, 0, 300000, 1};
  static const unsigned modes[] = {MMP_SEND_AUTO, MMP_SEND_AUTO, MMP_SEND_EAGER,
                                   MMP_SEND_RNDV, MMP_SEND_AUTO, MMP_SEND_AUTO,
                                   MMP_SEND_RNDV};
  size_t n = sizeof(sizes) / sizeof(sizes[0]), i;
  uint8_t *buf = malloc(2u << 20);
  (void)state;

  if (mr_rank() == 0) {
    mmp_request_t *q[7];
    uint8_t *m[7];
    /* All sends are in flight at once; eager, rendezvous and zero-length
     * messages must still match in the order they were sent. */
    for (i = 0; i < n; i++) {
      m[i] = calloc(sizes[i] + 1, 1);
      m[i][0] = (uint8_t)(i + 1);
      assert_int_equal(mmp_isend_ex(m[i], sizes[i], 1, 5, w, modes[i], &q[i]),
                       0);
    }
    assert_int_equal(mmp_waitall(n, q, NULL), 0);
    for (i = 0; i < n; i++)
      free(m[i]);
  } else if (mr_rank() == 1) {
    usleep(100000); /* let them all arrive unexpected first */
    for (i = 0; i < n; i++) {
      mmp_status_t st;
      assert_int_equal(
          mmp_recv(buf, 2u << 20, MMP_ANY_SOURCE, MMP_ANY_TAG, w, &st), 0);
      assert_int_equal(st.bytes, sizes[i]);
      assert_int_equal(st.tag, 5);
      if (sizes[i] > 0)
        assert_int_equal(buf[0], (uint8_t)(i + 1));
    }
  }
  free(buf);
  assert_int_equal(mr_barrier(), 0);
}

static void test_any_source_from_everyone(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size(), i;
  (void)state;

  if (r == 0) {
    char *seen = calloc((size_t)p, 1);
    for (i = 1; i < p; i++) {
      mmp_status_t st;
      int v = -1;
      assert_int_equal(mmp_recv(&v, sizeof(v), MMP_ANY_SOURCE, 6, w, &st), 0);
      assert_int_equal(v, st.source);
      assert_false(seen[v]);
      seen[v] = 1;
    }
    free(seen);
  } else {
    assert_int_equal(mmp_send(&r, sizeof(r), 0, 6, w), 0);
  }
  assert_int_equal(mr_barrier(), 0);
}

static void test_truncation_over_the_network(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  size_t big = 200 * 1024;
  uint8_t *buf = malloc(big), small[100];
  mmp_status_t st;
  (void)state;

  mr_fill(buf, big, 9);
  if (mr_rank() == 0) {
    assert_int_equal(mmp_send(buf, 1000, 1, 7, w), 0);
    /* The rendezvous sender is not told about the receiver's truncation. */
    assert_int_equal(mmp_send(buf, big, 1, 8, w), 0);
  } else if (mr_rank() == 1) {
    assert_int_equal(mmp_recv(small, sizeof(small), 0, 7, w, &st), MMP_ETRUNC);
    assert_int_equal(st.bytes, sizeof(small));
    assert_memory_equal(small, buf, sizeof(small));
    memset(small, 0, sizeof(small));
    assert_int_equal(mmp_recv(small, sizeof(small), 0, 8, w, &st), MMP_ETRUNC);
    assert_int_equal(st.bytes, sizeof(small));
    assert_int_equal(st.error, MMP_ETRUNC);
    assert_memory_equal(small, buf, sizeof(small));
  }
  free(buf);
  assert_int_equal(mr_barrier(), 0);
}

static void test_probe_then_receive(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  size_t n = 12345;
  uint8_t *buf = malloc(n);
  (void)state;

  if (mr_rank() == 0) {
    mr_fill(buf, n, 11);
    uint8_t *big = calloc(300000, 1);
    assert_int_equal(mmp_send(buf, n, 1, 9, w), 0);
    assert_int_equal(mmp_send(big, 300000, 1, 10, w), 0);
    free(big);
  } else if (mr_rank() == 1) {
    mmp_status_t st;
    uint8_t *want = malloc(n);
    mr_fill(want, n, 11);
    assert_int_equal(mmp_probe(MMP_ANY_SOURCE, 9, w, &st), 0);
    assert_int_equal(st.source, 0);
    assert_int_equal(st.tag, 9);
    assert_int_equal(st.bytes, n);
    assert_int_equal(mmp_recv(buf, st.bytes, st.source, st.tag, w, NULL), 0);
    assert_memory_equal(buf, want, n);
    /* A rendezvous message is visible to probe before its data moves. */
    assert_int_equal(mmp_probe(0, 10, w, &st), 0);
    assert_int_equal(st.bytes, 300000);
    free(buf);
    buf = malloc(st.bytes);
    assert_int_equal(mmp_recv(buf, st.bytes, 0, 10, w, NULL), 0);
    free(want);
  }
  free(buf);
  assert_int_equal(mr_barrier(), 0);
}

static void test_zero_length_both_protocols(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_status_t st;
  (void)state;

  if (mr_rank() == 0) {
    assert_int_equal(mmp_send_ex(NULL, 0, 1, 12, w, MMP_SEND_EAGER), 0);
    assert_int_equal(mmp_send_ex(NULL, 0, 1, 12, w, MMP_SEND_RNDV), 0);
  } else if (mr_rank() == 1) {
    st.bytes = 1;
    assert_int_equal(mmp_recv(NULL, 0, 0, 12, w, &st), 0);
    assert_int_equal(st.bytes, 0);
    st.bytes = 1;
    assert_int_equal(mmp_recv(NULL, 0, 0, 12, w, &st), 0);
    assert_int_equal(st.bytes, 0);
  }
  assert_int_equal(mr_barrier(), 0);
}

static void test_many_rendezvous_out_of_order(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  enum { N = 40 };
  size_t n = 100 * 1024;
  uint8_t *bufs = malloc(N * n);
  mmp_request_t *q[N];
  int i;
  (void)state;

  if (mr_rank() == 0) {
    for (i = 0; i < N; i++) {
      mr_fill(bufs + (size_t)i * n, n, 100 + (uint64_t)i);
      assert_int_equal(mmp_isend(bufs + (size_t)i * n, n, 1, 100 + i, w, &q[i]),
                       0);
    }
    assert_int_equal(mmp_waitall(N, q, NULL), 0);
  } else if (mr_rank() == 1) {
    uint8_t *want = malloc(n);
    /* Receive in reverse tag order: every RTS waits unexpected. */
    for (i = N - 1; i >= 0; i--)
      assert_int_equal(
          mmp_irecv(bufs + (size_t)i * n, n, 0, 100 + i, w, &q[N - 1 - i]), 0);
    assert_int_equal(mmp_waitall(N, q, NULL), 0);
    for (i = 0; i < N; i++) {
      mr_fill(want, n, 100 + (uint64_t)i);
      assert_memory_equal(bufs + (size_t)i * n, want, n);
    }
    free(want);
  }
  free(bufs);
  assert_int_equal(mr_barrier(), 0);
}

static void test_blocking_wait_sleeps(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  (void)state;

  if (mr_rank() == 0) {
    usleep(500 * 1000);
    assert_int_equal(mmp_send("x", 1, 1, 40, w), 0);
  } else if (mr_rank() == 1) {
    double cpu0 = cpu_seconds(), t0 = mmp_wtime();
    char c;
    assert_int_equal(mmp_recv(&c, 1, 0, 40, w, NULL), 0);
    /* Half a second of waiting; a busy-polling wait would burn all of it. */
    assert_true(mmp_wtime() - t0 > 0.4);
    assert_true(cpu_seconds() - cpu0 < 0.1);
  }
  assert_int_equal(mr_barrier(), 0);
}

/* Both sends complete while their receiver computes, by the progress
 * thread alone. Judged against the end of the receiver's computation, on
 * the host's one monotonic clock, rather than against a fixed time: a
 * loaded machine slows the transfer but not that order. */
static void test_progress_while_computing(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  size_t n = 8u << 20;
  uint8_t *buf = malloc(n);
  double done[2], computed[2];
  (void)state;

  if (mr_rank() == 0) {
    mr_fill(buf, n, 41);
    assert_int_equal(mmp_recv(NULL, 0, 1, 41, w, NULL), 0);
    /* Rendezvous: needs rank 1's CTS and its reads while it computes. */
    assert_int_equal(mmp_send_ex(buf, n, 1, 42, w, MMP_SEND_RNDV), 0);
    done[0] = mmp_wtime();
    /* Eager, larger than the kernel's socket buffers: completes only if
     * rank 1's progress thread reads it into memory. */
    assert_int_equal(mmp_recv(NULL, 0, 1, 43, w, NULL), 0);
    assert_int_equal(mmp_send_ex(buf, n, 1, 44, w, MMP_SEND_EAGER), 0);
    done[1] = mmp_wtime();
    assert_int_equal(mmp_recv(computed, sizeof(computed), 1, 45, w, NULL), 0);
    assert_true(done[0] < computed[0]);
    assert_true(done[1] < computed[1]);
  } else if (mr_rank() == 1) {
    uint8_t *want = malloc(n);
    mmp_request_t *r;
    mr_fill(want, n, 41);
    assert_int_equal(mmp_irecv(buf, n, 0, 42, w, &r), 0);
    assert_int_equal(mmp_send(NULL, 0, 0, 41, w), 0);
    compute_for(1.0);
    computed[0] = mmp_wtime();
    assert_int_equal(mmp_wait(&r, NULL), 0);
    assert_memory_equal(buf, want, n);
    memset(buf, 0, n);
    assert_int_equal(mmp_send(NULL, 0, 0, 43, w), 0);
    compute_for(1.0);
    computed[1] = mmp_wtime();
    /* The eager data is already in this process, buffered unexpected. */
    assert_true(mmp__debug_unexp_peak() >= n);
    assert_int_equal(mmp_recv(buf, n, 0, 44, w, NULL), 0);
    assert_memory_equal(buf, want, n);
    assert_int_equal(mmp_send(computed, sizeof(computed), 0, 45, w), 0);
    free(want);
  }
  free(buf);
  assert_int_equal(mr_barrier(), 0);
}

/* While a rank waits inside the library, the progress thread only looks,
 * less and less often, whether the application has gone quiet: at most
 * every check_us (64 ms on a machine with more ranks than CPUs, where each
 * look preempts a rank; 4 ms otherwise). */
static void test_progress_thread_stays_away_while_waiting(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__debug_progress_t d0, d1;
  (void)state;

  assert_int_equal(mr_barrier(), 0);
  if (mr_rank() == 0) {
    compute_for(0.5);
    for (int i = 1; i < mr_size(); i++)
      assert_int_equal(mmp_send(NULL, 0, i, 45, w), 0);
  } else {
    assert_int_equal(mmp__debug_progress(&d0), 0);
    assert_int_equal(mmp_recv(NULL, 0, 0, 45, w, NULL), 0);
    assert_int_equal(mmp__debug_progress(&d1), 0);
    /* Doubling from the grace period up to check_us takes a handful of
     * looks; after that, one per check_us. */
    assert_true(d1.checks - d0.checks >= 1);
    assert_true(d1.checks - d0.checks <= 0.6e6 / d1.check_us + 12);
  }
  assert_int_equal(mr_barrier(), 0);
}

/* Where polling yields (ranks share CPUs), a wait after two waits in a row
 * that outlasted the spin sleeps at once, without a single polling pass;
 * a wait that ends within the spin brings the polling back. Not between
 * ranks that share memory: there every wait polls through its budget
 * (docs/design/progress.md, "Sharing a CPU with a peer"). */
static void test_spin_skipped_after_long_waits(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__debug_progress_t d0, d1;
  int i;
  char c = 1;
  (void)state;

  assert_int_equal(mmp__debug_progress(&d0), 0);
  assert_int_equal(mr_barrier(), 0);
  if (!d0.yield) {
    if (mr_rank() == 0)
      print_message("polling does not yield here: nothing to check\n");
    return;
  }
  /* Ping-pong until a wait of rank 1's ends within the spin (the streak
   * then reads 0), for at most 5 s; rank 1's byte says whether to go on. */
  if (mr_rank() == 0) {
    while (c != 0) {
      assert_int_equal(mmp_send(&c, 1, 1, 47, w), 0);
      assert_int_equal(mmp_recv(&c, 1, 1, 47, w, NULL), 0);
    }
  } else if (mr_rank() == 1) {
    double t0 = mmp_wtime();
    do {
      assert_int_equal(mmp_recv(&c, 1, 0, 47, w, NULL), 0);
      assert_int_equal(mmp__debug_progress(&d0), 0);
      c = d0.long_waits != 0 && mmp_wtime() - t0 < 5.0;
      assert_int_equal(mmp_send(&c, 1, 0, 47, w), 0);
    } while (c != 0);
    assert_int_equal(d0.long_waits, 0);
  }
  /* Three waits far beyond the spin (1 ms in this run): the first two
   * poll, the third does not. */
  for (i = 0; i < 3 && mr_rank() <= 1; i++) {
    if (mr_rank() == 0) {
      usleep(30 * 1000);
      c = (char)i;
      assert_int_equal(mmp_send(&c, 1, 1, 46, w), 0);
      continue;
    }
    assert_int_equal(mmp__debug_progress(&d0), 0);
    assert_int_equal(d0.long_waits, i);
    assert_int_equal(mmp_recv(&c, 1, 0, 46, w, NULL), 0);
    assert_int_equal(c, i);
    assert_int_equal(mmp__debug_progress(&d1), 0);
    assert_int_equal(d1.long_waits, i + 1);
    if (i < 2 || mmp__debug_peer_shm(0))
      assert_true(d1.polls > d0.polls);
    else
      assert_true(d1.polls == d0.polls); /* slept at once */
  }
  assert_int_equal(mr_barrier(), 0);
}

/*
 * Ranks 0 and 1 on one CPU, as a loaded machine's scheduler places them,
 * talking over TCP: a waiting rank's spin keeps the peer it waits for
 * from running, so the wait spins out and the sleep after it ends at once.
 * Within some round trips one of the two ranks notices, and its next waits
 * sleep without polling at all. (A rank that noticed before, in an earlier
 * test, sleeps through up to 256 waits first.)
 */
static void test_spin_stops_when_peer_shares_cpu(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__debug_progress_t d0, d1;
  cpu_set_t was, one;
  int i, cpu;
  char go = 1, tripped = 0;
  uint64_t before; /* this rank's notices before the test */
  (void)state;

  assert_int_equal(mmp__debug_progress(&d0), 0);
  before = d0.spin_offs;
  assert_int_equal(mr_barrier(), 0);
  if (d0.yield) {
    if (mr_rank() == 0)
      print_message("polling yields here: nothing to check\n");
    return;
  }
  if (mmp__debug_peer_shm(1 - (mr_rank() & 1))) {
    /* A peer that shares memory shows its CPU: the rank hands it over
     * instead (mr_wait, test_peer_on_the_same_cpu_gets_it). */
    if (mr_rank() == 0)
      print_message("shared memory: the CPU is handed over instead\n");
    assert_int_equal(mr_barrier(), 0);
    return;
  }
  if (mr_rank() <= 1) {
    /* The lowest CPU both may use (the same mask: one job, one host). */
    assert_int_equal(sched_getaffinity(0, sizeof(was), &was), 0);
    for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &was); cpu++)
      ;
    assert_true(cpu < CPU_SETSIZE);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    /* Round trips until either rank has noticed (rank 1 says whether it
     * has in each reply), at most 3000. */
    for (i = 0; go; i++) {
      char peer = 0;
      if (mr_rank() == 0) {
        assert_int_equal(mmp_send(&go, 1, 1, 45, w), 0);
        assert_int_equal(mmp_recv(&peer, 1, 1, 45, w, NULL), 0);
        assert_int_equal(mmp__debug_progress(&d1), 0);
        tripped = d1.spin_offs > d0.spin_offs;
        go = !tripped && !peer && i < 3000;
        if (!go) {
          assert_int_equal(mmp_send(&go, 1, 1, 45, w), 0);
          tripped |= peer;
        }
      } else {
        assert_int_equal(mmp_recv(&go, 1, 0, 45, w, NULL), 0);
        assert_int_equal(mmp__debug_progress(&d1), 0);
        peer = d1.spin_offs > d0.spin_offs;
        if (go)
          assert_int_equal(mmp_send(&peer, 1, 0, 45, w), 0);
      }
    }
    if (mr_rank() == 0 && !tripped)
      fail_msg("%d round trips on one CPU, and no rank saw its spin keep "
               "the other off the CPU",
               i);
    /* Twenty more round trips: a rank that noticed sleeps at once through
     * the run of waits it was given (at least 8 at a first notice), at
     * most two waits per round trip. */
    assert_int_equal(mmp__debug_progress(&d0), 0);
    /* A first notice sleeps through a short run only (8 waits), so that a
     * lone stall on an idle machine costs a few wake-ups, not 256. Only a
     * notice in the loop above: one in an earlier test (a slow build's
     * stall) has had its run used up since, and here the other rank may
     * have been the one to notice. */
    if (before == 0 && d0.spin_offs == 1)
      assert_in_range(d0.spin_off, 1, 8);
    for (i = 0; i < 20; i++) {
      if (mr_rank() == 0) {
        assert_int_equal(mmp_send(&go, 1, 1, 45, w), 0);
        assert_int_equal(mmp_recv(&go, 1, 1, 45, w, NULL), 0);
      } else {
        assert_int_equal(mmp_recv(&go, 1, 0, 45, w, NULL), 0);
        assert_int_equal(mmp_send(&go, 1, 0, 45, w), 0);
      }
      assert_int_equal(mmp__debug_progress(&d1), 0);
      if (i < d0.spin_off / 2)
        assert_true(d1.polls == d0.polls);
    }
    assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
  }
  assert_int_equal(mr_barrier(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rndv_send_waits_for_receive),
      cmocka_unit_test(test_rndv_zero_and_self_wait_for_receive),
      cmocka_unit_test(test_cancel_receive),
      cmocka_unit_test(test_eager_send_completes_without_receive),
      cmocka_unit_test(test_order_across_protocols),
      cmocka_unit_test(test_any_source_from_everyone),
      cmocka_unit_test(test_truncation_over_the_network),
      cmocka_unit_test(test_probe_then_receive),
      cmocka_unit_test(test_zero_length_both_protocols),
      cmocka_unit_test(test_many_rendezvous_out_of_order),
      cmocka_unit_test(test_blocking_wait_sleeps),
      cmocka_unit_test(test_progress_while_computing),
      cmocka_unit_test(test_progress_thread_stays_away_while_waiting),
      cmocka_unit_test(test_spin_skipped_after_long_waits),
      cmocka_unit_test(test_spin_stops_when_peer_shares_cpu),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
