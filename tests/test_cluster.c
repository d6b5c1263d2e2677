/* SPDX-License-Identifier: MIT */
/*
 * The runtime on the emulated cluster: 8 hosts (network namespaces on one
 * bridge, 100 Mbit/s links), one rank per host, started by minimprun from
 * h0 with --agent "ip netns exec". Checks that data between hosts goes over
 * eth0 only, also with 4 ranks on each of 4 hosts, where the ranks of a
 * host use shared memory and one node number, and that a stopped rank and
 * a cut link are detected by the heartbeat within the configured time,
 * after which minimprun stops the job and nothing is left running.
 *
 * Run as: test_cluster NETCLUSTER MINIMPRUN CLUSTER_PROG
 * Without root or network namespaces it exits 77 (meson: skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_util.h"

#define HOSTS CLUSTER_HOSTS
#define PEER_TIMEOUT_MS 2000

static const char *minimprun, *prog;

/* Runs `prog MODE ARG` on `nhosts` hosts with `per` ranks each; returns
 * the result. */
static void run_job_on(int nhosts, int per, const char *mode, const char *arg,
                       double limit, spawn_result_t *r) {
  char env[64];

  snprintf(env, sizeof(env), "MINIMP_PEER_TIMEOUT_MS=%d", PEER_TIMEOUT_MS);
  cluster_job(minimprun, prog, nhosts, per, env, NULL, mode, arg, limit, r);
}

/* One rank on each of the HOSTS hosts. */
static void run_job(const char *mode, const char *arg, double limit,
                    spawn_result_t *r) {
  run_job_on(HOSTS, 1, mode, arg, limit, r);
}

static void test_cluster_data_goes_over_eth0(void **state) {
  spawn_result_t r;
  (void)state;

  run_job("exchange", "1048576", 60, &r);
  assert_int_equal(r.status, 0);
  assert_int_equal(cluster_count(r.out, "exchange ok"), HOSTS);
  assert_int_equal(cluster_count(r.out, "FAILED"), 0);
  cluster_assert_empty(HOSTS, 3);
}

static void test_cluster_four_hosts_of_four_ranks(void **state) {
  spawn_result_t r;
  (void)state;

  /* The ranks of a host share memory; what goes between hosts still
   * crosses the emulated links (each rank checks its host's counters);
   * the model, AUTO and the node broadcast know the hosts. */
  run_job_on(4, 4, "nodes", "262144", 120, &r);
  assert_int_equal(r.status, 0);
  assert_int_equal(cluster_count(r.out, "nodes ok"), 16);
  /* The collectives see the hosts (cluster_prog.c, node_bcast). */
  assert_int_equal(cluster_count(r.out, "node broadcast ok"), 16);
  assert_int_equal(cluster_count(r.out, "FAILED"), 0);
  cluster_assert_empty(4, 3);
}

static void test_cluster_stopped_rank_is_detected(void **state) {
  spawn_result_t r;
  (void)state;

  /* Rank 5 stops itself (SIGSTOP): its kernel still answers TCP, only the
   * heartbeat can tell. */
  run_job("stop", "5", 60, &r);
  assert_int_not_equal(r.status, 0);
  assert_int_not_equal(r.status, -1);
  assert_int_not_equal(r.status, 110);
  assert_non_null(strstr(r.err, "rank 5"));
  assert_true(cluster_count(r.out, "MMP_EPEERLOST") >= 1);
  /* Detection within the timeout plus one check period, then the stop. */
  assert_true(r.seconds < PEER_TIMEOUT_MS / 1000.0 + 8);
  cluster_assert_empty(HOSTS, 5);
}

static void test_cluster_cut_link_is_detected(void **state) {
  spawn_result_t r;
  char cmd[256];
  (void)state;

  /* Two seconds in (the job is waiting on rank 5 by then), h5's cable is
   * pulled: its eth0 goes down, so the bridge drops every frame to it and
   * nothing it sends leaves the host. No FIN or RST reaches anyone. (netem
   * would be the natural tool, but not every kernel has it.) */
  snprintf(cmd, sizeof(cmd),
           "(sleep 2; ip netns exec %s ip link set eth0 down) "
           ">/dev/null 2>&1 &",
           cluster_host(5));
  assert_int_equal(spawn_sh(cmd), 0);
  run_job("wait", "5", 60, &r);
  assert_int_not_equal(r.status, 0);
  assert_int_not_equal(r.status, -1);
  assert_int_not_equal(r.status, 110);
  assert_non_null(strstr(r.err, "rank 5"));
  assert_true(cluster_count(r.out, "MMP_EPEERLOST") >= 1);
  assert_true(r.seconds < 2 + PEER_TIMEOUT_MS / 1000.0 + 8);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cluster_data_goes_over_eth0,
                                      cluster_up, cluster_down),
      cmocka_unit_test_setup_teardown(test_cluster_four_hosts_of_four_ranks,
                                      cluster_up, cluster_down),
      cmocka_unit_test_setup_teardown(test_cluster_stopped_rank_is_detected,
                                      cluster_up, cluster_down),
      cmocka_unit_test_setup_teardown(test_cluster_cut_link_is_detected,
                                      cluster_up, cluster_down),
  };
  int rc;

  if (argc != 4) {
    fprintf(stderr, "usage: %s NETCLUSTER MINIMPRUN CLUSTER_PROG\n", argv[0]);
    return 2;
  }
  minimprun = argv[2];
  prog = argv[3];
  if ((rc = cluster_check(argv[1])) != 0)
    return rc;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
