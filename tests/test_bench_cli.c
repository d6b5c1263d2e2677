/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench's command line, run from outside: --help lists every
 * option and the library's algorithm and distribution names, --version
 * names the release and commit, a bad value is named in the error with
 * exit status 2, and every CSV it writes starts with a provenance line.
 *   test_bench_cli MINIMPRUN MINIMP_BENCH
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "minimp.h"
#include "spawn_util.h"

static char *minimprun, *bench;
static spawn_result_t res;

/* Runs minimp-bench (alone, a job of one rank) with the arguments given,
 * NULL-terminated. */
static int run_bench(const char *first, ...) {
  char *argv[32];
  va_list ap;
  int n = 0;

  argv[n++] = bench;
  va_start(ap, first);
  for (const char *a = first; a != NULL && n < 31; a = va_arg(ap, const char *))
    argv[n++] = (char *)a;
  va_end(ap);
  argv[n] = NULL;
  assert_int_equal(spawn_run(argv, 60, &res), 0);
  return res.status;
}

static void test_bench_help_lists_options_and_names(void **state) {
  mmp_alg_info_t a;
  int i;

  (void)state;
  assert_int_equal(run_bench("--help", NULL), 0);
  assert_string_equal(res.err, "");
  for (i = 0; mmp_coll_algs(MMP_COLL_BCAST, i, &a) == 0; i++)
    assert_non_null(strstr(res.out, a.name));
  for (i = 0; mmp_coll_algs(MMP_COLL_S2P, i, &a) == 0; i++)
    assert_non_null(strstr(res.out, a.name));
  for (i = 0; i < MMP_S2P_DIST_COUNT; i++)
    assert_non_null(strstr(res.out, mmp_s2p_dist_name(i)));
  for (i = 0; mmp_coll_algs(MMP_COLL_ALLREDUCE, i, &a) == 0; i++)
    assert_non_null(strstr(res.out, a.name));
  /* Every reduce algorithm in the reduce section (the k-nomial tree's
   * name is also a broadcast's, listed before it). */
  {
    const char *sec = strstr(res.out, "reduce algorithms (reduce --algs)");
    const char *end;
    assert_non_null(sec);
    end = strstr(sec, "\n\n");
    assert_non_null(end);
    for (i = 0; mmp_coll_algs(MMP_COLL_REDUCE, i, &a) == 0; i++) {
      const char *at = strstr(sec, a.name);
      assert_true(at != NULL && at < end);
    }
  }
  assert_non_null(strstr(res.out, "--sources LIST"));
  assert_non_null(strstr(res.out, "--version"));
  /* The same text after a command. */
  assert_int_equal(run_bench("bcast", "--help", NULL), 0);
  assert_non_null(strstr(res.out, "--maxif LIST"));
}

static void test_bench_version_names_release_and_commit(void **state) {
  char want[64];

  (void)state;
  snprintf(want, sizeof(want), "minimp-bench %d.%d.%d (commit ",
           MMP_VERSION_MAJOR, MMP_VERSION_MINOR, MMP_VERSION_PATCH);
  assert_int_equal(run_bench("--version", NULL), 0);
  assert_memory_equal(res.out, want, strlen(want));
}

static void test_bench_unknown_algorithm_is_named(void **state) {
  (void)state;
  assert_int_equal(run_bench("bcast", "--algs", "binomial,bogus", NULL), 2);
  assert_non_null(strstr(res.err, "unknown algorithm 'bogus'"));
  /* The valid names follow, from the library's table. */
  assert_non_null(strstr(res.err, "knomial"));
  assert_string_equal(res.out, "");
  assert_int_equal(run_bench("s2p", "--dists", "equal,diagonal", NULL), 2);
  assert_non_null(strstr(res.err, "unknown distribution 'diagonal'"));
  assert_non_null(strstr(res.err, "diag_r"));
}

static void test_bench_bad_values_are_named(void **state) {
  (void)state;
  assert_int_equal(run_bench("bcast", "--iters", "3x", NULL), 2);
  assert_non_null(strstr(res.err, "--iters: '3x'"));
  assert_int_equal(run_bench("pingpong", "--sizes", "8,-1", NULL), 2);
  assert_non_null(strstr(res.err, "--sizes: '-1'"));
  assert_int_equal(run_bench("bcast", "--maxif", "2X", NULL), 2);
  assert_non_null(strstr(res.err, "--maxif: '2X'"));
  assert_int_equal(run_bench("bcast", "--dists", "equal", NULL), 2);
  assert_non_null(strstr(res.err, "--dists is not an option of 'bcast'"));
  assert_int_equal(run_bench("frob", NULL), 2);
  assert_non_null(strstr(res.err, "unknown command 'frob'"));
  assert_int_equal(run_bench("bcast", "--root", "5", "--sizes", "8", NULL), 2);
  assert_non_null(strstr(res.err, "--root: '5' is not a rank"));
}

/* A job of one rank has no destination for max OL_i: a row of zeros, not
 * a division by zero in the warm-up (it died of SIGFPE). */
static void test_bench_ol_alone_runs(void **state) {
  (void)state;
  assert_int_equal(run_bench("bcast", "--method", "ol", "--algs", "flat",
                             "--sizes", "1k", "--iters", "2", NULL),
                   0);
  assert_non_null(strstr(res.out, "flat"));
}

/* Checks the first two lines of a CSV minimp-bench wrote. */
static void check_provenance(const char *path, int ranks, const char *cols) {
  char text[4096], host[256], want[300];
  char *nl;

  spawn_slurp(path, text, sizeof(text));
  unlink(path);
  assert_memory_equal(text, "# minimp-bench ", 15);
  nl = strchr(text, '\n');
  assert_non_null(nl);
  *nl = '\0';
  assert_non_null(strstr(text, " commit "));
  assert_non_null(strstr(text, " date 20"));
  assert_int_equal(gethostname(host, sizeof(host)), 0);
  snprintf(want, sizeof(want), " host %s ranks %d args ", host, ranks);
  assert_non_null(strstr(text, want));
  assert_memory_equal(nl + 1, cols, strlen(cols));
  assert_int_equal(nl[1 + strlen(cols)], '\n');
}

static void test_bench_csv_names_commit_date_host(void **state) {
  char path[] = "/tmp/mmp-bench-csv-XXXXXX";
  int fd = mkstemp(path);
  char *argv[] = {minimprun, "-n",      "2",  bench,   "pingpong", "--sizes",
                  "8",       "--iters", "20", "--csv", path,       NULL};

  (void)state;
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(spawn_run(argv, 120, &res), 0);
  assert_int_equal(res.status, 0);
  /* The console and the CSV name the streaming column alike. */
  assert_non_null(strstr(res.out, "stream_MBps"));
  check_provenance(path, 2, "size,half_rtt_us,stream_MBps");

  assert_int_equal(run_bench("bcast", "--algs", "flat", "--sizes", "8",
                             "--iters", "2", "--method", "barrier", "--csv",
                             path, NULL),
                   0);
  check_provenance(path, 1, "method,alg,chosen,p,size,avg_us,max_us");
}

/* A row the communicator cannot run is refused on every rank alike and
 * skipped, and the rows after it are measured: with MINIMP_SHM=off the
 * shm rows are MMP_ENOTSUP, as they are across hosts. */
static void test_bench_skips_rows_not_available(void **state) {
  char *bc[] = {minimprun, "-n",       "2",       bench, "bcast",
                "--algs",  "shm,flat", "--sizes", "8",   "--iters",
                "2",       "--method", "barrier", NULL};
  char *ar[] = {minimprun,  "-n",      "2",  bench,     "allreduce", "--algs",
                "shm,ring", "--sizes", "64", "--iters", "2",         NULL};

  (void)state;
  assert_int_equal(setenv("MINIMP_SHM", "off", 1), 0);
  assert_int_equal(spawn_run(bc, 120, &res), 0);
  assert_int_equal(res.status, 0);
  assert_non_null(strstr(res.err, "bcast shm 8: not available here"));
  assert_non_null(strstr(res.out, "barrier  flat"));
  assert_int_equal(spawn_run(ar, 120, &res), 0);
  assert_int_equal(res.status, 0);
  assert_non_null(strstr(res.err, "allreduce shm 64: not available here"));
  assert_non_null(strstr(res.out, "coll,allreduce,ring,"));
  unsetenv("MINIMP_SHM");
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bench_help_lists_options_and_names),
      cmocka_unit_test(test_bench_version_names_release_and_commit),
      cmocka_unit_test(test_bench_unknown_algorithm_is_named),
      cmocka_unit_test(test_bench_bad_values_are_named),
      cmocka_unit_test(test_bench_ol_alone_runs),
      cmocka_unit_test(test_bench_csv_names_commit_date_host),
      cmocka_unit_test(test_bench_skips_rows_not_available),
  };

  if (argc != 3) {
    fprintf(stderr, "usage: %s MINIMPRUN MINIMP_BENCH\n", argv[0]);
    return 2;
  }
  minimprun = argv[1];
  bench = argv[2];
  return cmocka_run_group_tests(tests, NULL, NULL);
}
