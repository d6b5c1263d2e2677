/* SPDX-License-Identifier: MIT */
/*
 * The differential test (tests/diff_prog.c) on 4 emulated hosts with 2
 * ranks each (tests/netcluster, 100 Mbit/s): for a bounded time with the
 * ranks of a host on shared memory, then with MINIMP_SHM=off, so that
 * every message crosses TCP and every multicast datagram the switch.
 * Each run must end "diff: passed" with no rank's "FAILED"; a failure
 * prints the step's seed and how to replay it.
 *
 * Run as: test_diff_cluster NETCLUSTER MINIMPRUN DIFF_PROG SECONDS
 * Without root or network namespaces it exits 77 (meson: skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_util.h"

#define HOSTS 4
#define PER_HOST 2

static const char *minimprun, *prog, *seconds;

static int up4(void **state) {
  char cmd[512];
  (void)state;

  snprintf(cmd, sizeof(cmd), "%s up %d 100mbit", cluster_script, HOSTS);
  return spawn_sh(cmd) == 0 ? 0 : -1;
}

static void diff_run(const char *env) {
  spawn_result_t r;

  cluster_job(minimprun, prog, HOSTS, PER_HOST, env, NULL, "--time", seconds,
              strtod(seconds, NULL) + 150, &r);
  printf("%s", r.out);
  assert_int_equal(r.status, 0);
  assert_int_equal(cluster_count(r.out, "FAILED"), 0);
  assert_int_equal(cluster_count(r.out, "diff: passed"), 1);
  cluster_assert_empty(HOSTS, 3);
}

static void test_diff_on_cluster_shm(void **state) {
  (void)state;
  diff_run(NULL);
}

static void test_diff_on_cluster_tcp(void **state) {
  (void)state;
  diff_run("MINIMP_SHM=off");
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_diff_on_cluster_shm),
      cmocka_unit_test(test_diff_on_cluster_tcp),
  };
  int rc;

  if (argc != 5) {
    fprintf(stderr, "usage: %s NETCLUSTER MINIMPRUN DIFF_PROG SECONDS\n",
            argv[0]);
    return 2;
  }
  minimprun = argv[2];
  prog = argv[3];
  seconds = argv[4];
  if ((rc = cluster_check(argv[1])) != 0)
    return rc;
  cluster_down_on_signal();
  return cmocka_run_group_tests(tests, up4, cluster_down);
}
