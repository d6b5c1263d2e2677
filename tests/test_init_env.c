/* SPDX-License-Identifier: MIT */
/*
 * mmp_init checks MINIMP_<COLLECTIVE>_ALG against the collectives and
 * their algorithms, in a program that calls no collective: built twice,
 * linked with the static library (which leaves out the objects nothing
 * references) and with the shared one. A bad name is MMP_EENV with a
 * message that names the variable and what exists; a good one starts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"

static char logged[4096];

static void log_cb(int level, const char *line, void *userdata) {
  size_t n = strlen(logged);
  (void)level;
  (void)userdata;

  snprintf(logged + n, sizeof(logged) - n, "%s\n", line);
}

/* mmp_init's result with `var`=`value`, its log in `logged`; a job that
 * starts is finalized. */
static int init_with(const char *var, const char *value) {
  int rc;

  logged[0] = '\0';
  setenv(var, value, 1);
  rc = mmp_init(NULL, NULL);
  unsetenv(var);
  if (rc == 0)
    assert_int_equal(mmp_finalize(), 0);
  return rc;
}

static int setup(void **state) {
  static const char *const job[] = {
      "MINIMP_RANK",    "MINIMP_SIZE",       "MINIMP_BOOT_ADDR",
      "MINIMP_JOB_KEY", "MINIMP_LOCAL_RANK", "MINIMP_LOCAL_SIZE",
      "SLURM_PROCID",   "SLURM_NTASKS",      "PMIX_RANK",
      "PMI_RANK",       "MINIMP_LOG",
  };
  size_t i;
  (void)state;

  /* A singleton job, whatever launched the test. */
  for (i = 0; i < sizeof(job) / sizeof(job[0]); i++)
    unsetenv(job[i]);
  return mmp_set_log_fn(log_cb, NULL);
}

static void test_unknown_algorithm_refused(void **state) {
  (void)state;
  assert_int_equal(init_with("MINIMP_BCAST_ALG", "bogus"), MMP_EENV);
  assert_non_null(strstr(logged, "MINIMP_BCAST_ALG"));
  assert_non_null(strstr(logged, "\"bogus\""));
  assert_non_null(strstr(logged, "binomial")); /* what exists */
  assert_int_equal(mmp_initialized(), 0);
}

static void test_option_the_algorithm_lacks_refused(void **state) {
  (void)state;
  assert_int_equal(init_with("MINIMP_ALLREDUCE_ALG", "ring,radix=3"), MMP_EENV);
  assert_non_null(strstr(logged, "MINIMP_ALLREDUCE_ALG"));
  assert_non_null(strstr(logged, "radix"));
}

static void test_unknown_collective_refused(void **state) {
  (void)state;
  assert_int_equal(init_with("MINIMP_BCST_ALG", "binary"), MMP_EENV);
  assert_non_null(strstr(logged, "MINIMP_BCST_ALG"));
  assert_non_null(strstr(logged, "MINIMP_BCAST_ALG")); /* what exists */
}

static void test_good_name_starts(void **state) {
  (void)state;
  assert_int_equal(init_with("MINIMP_BCAST_ALG", "binomial"), 0);
  assert_int_equal(init_with("MINIMP_REDUCE_ALG", "knomial,radix=4"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unknown_algorithm_refused),
      cmocka_unit_test(test_option_the_algorithm_lacks_refused),
      cmocka_unit_test(test_unknown_collective_refused),
      cmocka_unit_test(test_good_name_starts),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
