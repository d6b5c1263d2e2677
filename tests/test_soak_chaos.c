/* SPDX-License-Identifier: MIT */
/*
 * The short soak and chaos runs CI makes on the emulated cluster
 * (tests/soak.sh and tests/chaos.sh drive them; docs/testing.md gives the
 * full runs' commands and results):
 *  - soak: 16 ranks on 8 hosts (2 each: shared memory and TCP) exchange
 *    4000 point-to-point messages of up to 1 MiB in every protocol, with
 *    broadcasts, s-to-p broadcasts and allreduces of random algorithms;
 *    every byte is checked and no rank's RSS may grow past the margin;
 *  - chaos: three rounds, a rank killed, one stopped and one cut off
 *    (seed 23 picks them: rank 7 stopped, rank 0 killed beside minimprun,
 *    host 2's link down); every survivor reports the loss within 10 s,
 *    minimprun names the rank and nothing is left in any namespace.
 *
 * Run as: test_soak_chaos NETCLUSTER MINIMPRUN SOAK_PROG SOAK_SH CHAOS_SH
 * Without root or network namespaces it exits 77 (meson: skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_util.h"

static const char *netcluster, *minimprun, *prog, *soak_sh, *chaos_sh;

/* Runs `SCRIPT NETCLUSTER MINIMPRUN SOAK_PROG A B C` and checks that it
 * neither timed out nor found the cluster missing. */
static void run_script(const char *script, const char *a, const char *b,
                       const char *c, double limit, spawn_result_t *r) {
  char *argv[] = {"/bin/sh",         (char *)script, (char *)netcluster,
                  (char *)minimprun, (char *)prog,   (char *)a,
                  (char *)b,         (char *)c,      NULL};

  assert_int_equal(spawn_run(argv, limit, r), 0);
  if (r->status != 0)
    fprintf(stderr, "--- stdout\n%s--- stderr\n%s---\n", r->out, r->err);
  assert_int_not_equal(r->status, -1);
}

static void test_soak_short_run_stays_flat(void **state) {
  spawn_result_t r;
  unsigned long long msgs = 0;
  const char *total;
  (void)state;

  setenv("SOAK_HOSTS", "8", 1);
  setenv("SOAK_PER", "2", 1);
  setenv("SOAK_TIMEOUT", "240", 1);
  run_script(soak_sh, "4000", "1048576", "17", 300, &r);
  assert_int_equal(r.status, 0);
  /* Every rank checked every byte and its RSS. */
  assert_int_equal(cluster_count(r.out, "soak ok"), 16);
  assert_int_equal(cluster_count(r.out, "FAILED"), 0);
  total = strstr(r.out, "soak total: ");
  assert_non_null(total);
  assert_int_equal(sscanf(total, "soak total: %llu messages", &msgs), 1);
  assert_true(msgs >= 4000);
}

static void test_chaos_three_rounds(void **state) {
  spawn_result_t r;
  (void)state;

  run_script(chaos_sh, "3", "23", NULL, 400, &r);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "chaos: 3 of 3 rounds passed"));
  /* Under the default rule: a loss reported as MMP_EMISMATCH fails. */
  assert_non_null(strstr(r.out, "strict 1);"));
  /* Seed 23 makes one round of each kind. */
  assert_non_null(strstr(r.out, "round 1: stop rank 7 "));
  assert_non_null(strstr(r.out, "round 2: kill rank 0 "));
  assert_non_null(strstr(r.out, "round 3: cut rank 2 "));
  assert_int_equal(cluster_count(r.out, ": ok survivors: "), 3);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_soak_short_run_stays_flat),
      cmocka_unit_test(test_chaos_three_rounds),
  };
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[512];
  int rc;

  if (argc != 6) {
    fprintf(stderr,
            "usage: %s NETCLUSTER MINIMPRUN SOAK_PROG SOAK_SH CHAOS_SH\n",
            argv[0]);
    return 2;
  }
  netcluster = argv[1];
  minimprun = argv[2];
  prog = argv[3];
  soak_sh = argv[4];
  chaos_sh = argv[5];
  if ((rc = cluster_check(netcluster)) != 0)
    return rc;
  /* ASan's default quarantine of freed blocks would make every rank's RSS
   * climb through the whole short run and hide a real leak (figures:
   * docs/testing.md, "Soak"). */
  snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=1",
           asan != NULL ? asan : "", asan != NULL && *asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
