/* SPDX-License-Identifier: MIT */
/*
 * How blocking waits spend the CPU between ranks that share memory, and
 * between ranks on one host over TCP, run through minimprun (docs/
 * docs/design/progress.md, "Sharing a CPU with a peer"). Every check counts
 * what the progress engine did (its polls, sleeps and hand-overs, the doorbells
 * rung) or the CPU time a rank used; none times a message. Which checks apply
 * depends on how the job runs: with a spin budget of seconds (MINIMP_SPIN_US)
 * no wait may sleep, with the default one a wait of seconds must; polling that
 * yields at every pass (more ranks than CPUs) or that yields only to a peer on
 * its CPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

/* A spin budget this long never runs out in these tests: a wait that
 * sleeps anyway did so by rule, not because its peer was slow. */
#define LONG_SPIN_US 1000000u

static mmp__debug_progress_t progress(void) {
  mmp__debug_progress_t d;
  assert_int_equal(mmp__debug_progress(&d), 0);
  return d;
}

static mmp__shm_stats_t shm_stats(void) {
  mmp__shm_stats_t st;
  assert_int_equal(mmp__debug_shm_stats(&st), 0);
  return st;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* 1 if every other rank is reached through shared memory. */
static int all_shared(void) {
  for (int j = 0; j < mr_size(); j++)
    if (j != mr_rank() && !mmp__debug_peer_shm(j))
      return 0;
  return 1;
}

/* Pins the calling rank to the lowest CPU it may use (the same for every
 * rank of the job: one host, one mask); `was` keeps the old mask. */
static void pin_to_one_cpu(cpu_set_t *was) {
  cpu_set_t one;
  int cpu;

  assert_int_equal(sched_getaffinity(0, sizeof(*was), was), 0);
  for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, was); cpu++)
    ;
  assert_true(cpu < CPU_SETSIZE);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
}

/* `rounds` round trips of one byte between ranks 0 and 1. */
static void ping_pong(int other, int rounds) {
  mmp_comm_t *w = mmp_comm_world();
  char c = 0;

  for (int i = 0; i < rounds; i++) {
    if (mr_rank() == 0) {
      assert_int_equal(mmp_send(&c, 1, other, 22, w), 0);
      assert_int_equal(mmp_recv(&c, 1, other, 22, w, NULL), 0);
    } else {
      assert_int_equal(mmp_recv(&c, 1, other, 22, w, NULL), 0);
      assert_int_equal(mmp_send(&c, 1, other, 22, w), 0);
    }
  }
}

/*
 * A rank blocked in a receive for two seconds uses next to no CPU: its
 * wait polls for the spin budget, then sleeps until the message's
 * doorbell (or socket) wakes it. Only with a budget far below the wait.
 */
static void test_idle_receive_uses_no_cpu(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__debug_progress_t d0 = progress(), d1;
  (void)state;

  if (d0.spin_us > 100000) {
    if (mr_rank() == 0)
      print_message("spin budget %u us: nothing to check\n", d0.spin_us);
    return;
  }
  assert_int_equal(mr_barrier(), 0);
  if (mr_rank() == 0) {
    usleep(2000 * 1000);
    assert_int_equal(mmp_send("x", 1, 1, 21, w), 0);
  } else if (mr_rank() == 1) {
    double cpu0 = cpu_seconds(), t0 = mmp_wtime(), cpu;
    char c = 0;
    assert_int_equal(mmp_recv(&c, 1, 0, 21, w, NULL), 0);
    assert_int_equal(c, 'x');
    assert_true(mmp_wtime() - t0 > 1.5);
    cpu = cpu_seconds() - cpu0;
    d1 = progress();
    if (cpu >= 0.1)
      fail_msg("a 2 s receive used %.3f s of CPU", cpu);
    assert_true(d1.sleeps > d0.sleeps); /* it slept, and was woken */
  }
  assert_int_equal(mr_barrier(), 0);
}

/*
 * Two ranks on one CPU, as a busy machine's scheduler may place them:
 * a waiting rank that finds its peer runnable on its own CPU yields the
 * CPU to it instead of spinning it away, so a ping-pong goes on by
 * hand-overs and its waits do not fall asleep. Where polling yields at
 * every pass anyway (more ranks than CPUs) there is nothing to see.
 */
static void test_peer_on_the_same_cpu_gets_it(void **state) {
  mmp__debug_progress_t d0 = progress(), d1;
  cpu_set_t was;
  (void)state;

  if (d0.yield || !all_shared()) {
    if (mr_rank() == 0)
      print_message("polling yields, or no shared memory: nothing to "
                    "check\n");
    return;
  }
  assert_int_equal(mr_barrier(), 0);
  if (mr_rank() <= 1) {
    int other = 1 - mr_rank();
    pin_to_one_cpu(&was);
    /* Rounds until the pinning holds, then the counted ones. */
    ping_pong(other, 20);
    d0 = progress();
    ping_pong(other, 1000);
    d1 = progress();
    assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
    /* The peer could run only when this rank let it. */
    assert_true(d1.handoffs > d0.handoffs);
    if (d0.spin_us >= LONG_SPIN_US) {
      /* No wait slept, none gave up polling. */
      assert_int_equal(d1.sleeps, d0.sleeps);
      assert_int_equal(d1.spin_offs, d0.spin_offs);
    }
  }
  assert_int_equal(mr_barrier(), 0);
}

/* Ranks 0 and 1, pinned together for `pinned` round trips, then let go:
 * 2,000 round trips later they must be on two CPUs, or rank 0 fails the
 * test with `how`. Every rank calls it. */
static void pair_parted(int pinned, const char *how) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__debug_progress_t d0 = progress(), d1;
  cpu_set_t was;
  int cpu[2];

  assert_int_equal(sched_getaffinity(0, sizeof(was), &was), 0);
  if (CPU_COUNT(&was) < 2) {
    if (mr_rank() == 0)
      print_message("one CPU: nothing to check\n");
    return;
  }
  assert_int_equal(mr_barrier(), 0);
  if (mr_rank() <= 1) {
    int other = 1 - mr_rank(), mine;
    mmp_request_t *q;
    pin_to_one_cpu(&was);
    ping_pong(other, pinned);
    assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
    ping_pong(other, 2000);
    d1 = progress();
    mine = sched_getcpu();
    cpu[mr_rank()] = mine;
    assert_int_equal(mmp_isend(&mine, sizeof(mine), other, 24, w, &q), 0);
    assert_int_equal(
        mmp_recv(&cpu[other], sizeof(cpu[other]), other, 24, w, NULL), 0);
    assert_int_equal(mmp_wait(&q, NULL), 0);
    if (mr_rank() == 0 && d1.moves == d0.moves && cpu[0] == cpu[1])
      fail_msg("%s2,000 round trips later both ranks are still on CPU %d", how,
               cpu[0]);
  }
  assert_int_equal(mr_barrier(), 0);
}

/*
 * Two ranks that the scheduler leaves on one CPU of several: handing the
 * CPU over keeps both warm in its cache, which keeps the load balancer
 * from parting them, so after some round trips the lower rank moves to
 * another CPU itself. Pinned together first, then let go; the pair must
 * end on two CPUs, by that move or by the balancer.
 */
static void test_pair_on_one_cpu_is_parted(void **state) {
  mmp__debug_progress_t d0 = progress();
  (void)state;

  if (d0.yield || !all_shared() || d0.spin_us < LONG_SPIN_US) {
    if (mr_rank() == 0)
      print_message("polling yields, no shared memory or a short budget: "
                    "nothing to check\n");
    return;
  }
  pair_parted(20, "");
}

/*
 * The same over TCP, where a rank does not see its peer's CPU: a wait
 * whose spin ran out and that was woken soon after was kept waiting by
 * its own polling, the peer most likely on its CPU, so with a CPU per
 * rank the rank moves itself instead of sleeping from then on. Pinned
 * together first (a rank that cannot move sleeps its next waits), then
 * let go; the pair must end on two CPUs, by that move or by the balancer.
 */
static void test_tcp_pair_on_one_cpu_is_parted(void **state) {
  mmp__debug_progress_t d0 = progress();
  (void)state;

  if (d0.yield || mr_size() < 2 || mmp__debug_peer_shm(1 - (mr_rank() & 1)) ||
      d0.spin_us == 0 || d0.spin_us >= LONG_SPIN_US) {
    if (mr_rank() == 0)
      print_message("polling yields, shared memory or no short budget: "
                    "nothing to check\n");
    return;
  }
  /* Pinned, a rank that cannot move sleeps its next waits. */
  pair_parted(50, "over TCP, ");
}

/*
 * Every rank on one CPU, more ranks than CPUs: a 64 KiB token goes
 * round the ring. A waiting rank polls and yields, so the CPU passes to
 * whoever has work and the token's next holder finds it on its next
 * turn: with a budget that never runs out no wait sleeps, not even these
 * bulk waits, so no hop rings a doorbell.
 */
static void test_oversubscribed_ring_hands_over(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__debug_progress_t d0 = progress(), d1;
  mmp__shm_stats_t s0, s1;
  int me = mr_rank(), p = mr_size(), laps = 100, i;
  size_t n = 64 * 1024;
  char *buf;
  cpu_set_t was;
  (void)state;

  /* With a budget that can run out, a busy machine's other work may hold
   * the CPU past it and make a wait sleep: nothing certain to check. */
  if (!d0.yield || p < 3 || !all_shared() || d0.spin_us < LONG_SPIN_US) {
    if (me == 0)
      print_message("polling does not yield, too few ranks, no shared "
                    "memory or a short budget: nothing to check\n");
    return;
  }
  buf = calloc(1, n);
  assert_non_null(buf);
  pin_to_one_cpu(&was);
  assert_int_equal(mr_barrier(), 0);
  d0 = progress();
  s0 = shm_stats();
  for (i = 0; i < laps; i++) {
    if (me == 0) {
      memset(buf, i & 0xff, n);
      assert_int_equal(mmp_send(buf, n, 1, 23, w), 0);
      assert_int_equal(mmp_recv(buf, n, p - 1, 23, w, NULL), 0);
      assert_int_equal((unsigned char)buf[n - 1], i & 0xff);
    } else {
      assert_int_equal(mmp_recv(buf, n, me - 1, 23, w, NULL), 0);
      assert_int_equal(mmp_send(buf, n, (me + 1) % p, 23, w), 0);
    }
  }
  d1 = progress();
  s1 = shm_stats();
  assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
  assert_int_equal(d1.sleeps, d0.sleeps);
  assert_int_equal(s1.bells, s0.bells);
  free(buf);
  assert_int_equal(mr_barrier(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_receive_uses_no_cpu),
      cmocka_unit_test(test_peer_on_the_same_cpu_gets_it),
      cmocka_unit_test(test_pair_on_one_cpu_is_parted),
      cmocka_unit_test(test_tcp_pair_on_one_cpu_is_parted),
      cmocka_unit_test(test_oversubscribed_ring_hands_over),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
