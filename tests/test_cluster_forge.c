/* SPDX-License-Identifier: MIT */
/*
 * Forgeries sent to a job's multicast group on the emulated cluster (8
 * hosts, 100 Mbit/s, one rank each; tests/forge_prog.c): the ranks of
 * hosts 0-6 broadcast by multicast, every byte checked, while the job's
 * last rank, alone on host 7 and outside their communicator, captures the
 * group's traffic and sends it malformed datagrams, another job's,
 * datagrams whose MAC does not verify, copies of the live broadcasts'
 * datagrams (again at once, and again out of order), replays of
 * broadcasts every rank finished, and datagrams made with the job key
 * for a finished collective, one beyond the window, a rank outside
 * the job and, for the live collective, the forger itself (a rank of the
 * job outside the broadcasters' communicator). Every broadcasting rank
 * counts each class under its own counter and no other (the copies under
 * `duplicate`, or `stale` once their collective finished; the forger's
 * own under `other_comm`), the data arrive intact throughout, and the
 * job exits 0.
 *
 * Run as: test_cluster_forge NETCLUSTER MINIMPRUN FORGE_PROG
 * Without root or network namespaces it exits 77 (meson: skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_util.h"

#define HOSTS CLUSTER_HOSTS
/* Rounds of each class the forger sends. */
#define ROUNDS "4"

static const char *minimprun, *prog;

static void test_mcast_forgeries_rejected_on_cluster(void **state) {
  spawn_result_t r;
  (void)state;

  cluster_job(minimprun, prog, HOSTS, 1, NULL, NULL, "forge", ROUNDS, 90, &r);
  /* What each rank counted, for the log. */
  printf("%s", r.out);
  assert_int_equal(r.status, 0);
  assert_int_equal(cluster_count(r.out, "FAILED"), 0);
  assert_int_equal(cluster_count(r.out, "forgeries rejected: malformed"),
                   HOSTS - 1);
  assert_int_equal(cluster_count(r.out, "forger sent"), 1);
  cluster_assert_empty(HOSTS, 3);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_mcast_forgeries_rejected_on_cluster,
                                      cluster_up, cluster_down),
  };
  int rc;

  if (argc != 4) {
    fprintf(stderr, "usage: %s NETCLUSTER MINIMPRUN FORGE_PROG\n", argv[0]);
    return 2;
  }
  minimprun = argv[2];
  prog = argv[3];
  if ((rc = cluster_check(argv[1])) != 0)
    return rc;
  cluster_down_on_signal();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
