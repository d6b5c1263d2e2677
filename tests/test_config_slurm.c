/* SPDX-License-Identifier: MIT */
/*
 * The identity of a rank that srun started (runtime/config.c): the rank
 * and size from SLURM_PROCID and SLURM_NTASKS, and, without
 * MINIMP_BOOT_ADDR, the rendezvous derived from the step: its first node,
 * a port from SLURM_JOB_ID and SLURM_STEP_ID within MINIMP_BOOT_PORTS, and
 * rank 0 serving it. Malformed values are errors, never a guess.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "runtime/internal.h"

static const char *const vars[] = {
    "MINIMP_RANK",         "MINIMP_SIZE",        "MINIMP_BOOT_ADDR",
    "MINIMP_BOOT_HOST",    "MINIMP_BOOT_PORTS",  "MINIMP_LOCAL_RANK",
    "MINIMP_LOCAL_SIZE",   "MINIMP_IFACE",       "SLURM_JOBID",
    "SLURM_STEPID",        "SLURM_JOB_NODELIST", "SLURM_LOCALID",
    "SLURM_STEP_NODELIST", "SLURM_JOB_ID",       "SLURM_STEP_ID"};

/* A step of 4 tasks on node[07-09], job 12345, step 3, this task `rank`. */
static int setup(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
    unsetenv(vars[i]);
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "4", 1);
  setenv("SLURM_JOB_ID", "12345", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  setenv("SLURM_STEP_NODELIST", "node[07-09]", 1);
  setenv("MINIMP_JOB_KEY", "000102030405060708090a0b0c0d0e0f", 1);
  return 0;
}

static int identity(mmp__config_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  return mmp__config_identity(cfg);
}

static void test_slurm_boot_derived_from_step(void **state) {
  mmp__config_t cfg;
  (void)state;

  assert_int_equal(identity(&cfg), 0);
  assert_int_equal(cfg.rank, 0);
  assert_int_equal(cfg.size, 4);
  /* 20000 + (12345 * 16 + 3) mod 10000 */
  assert_string_equal(cfg.boot_addr, "node07:27523");
  assert_int_equal(cfg.host_boot, 1);
  setenv("SLURM_PROCID", "2", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_string_equal(cfg.boot_addr, "node07:27523");
  assert_int_equal(cfg.host_boot, 0); /* only rank 0 serves */
  /* The next step and the next job get other ports. */
  setenv("SLURM_STEP_ID", "4", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_string_equal(cfg.boot_addr, "node07:27524");
  setenv("SLURM_JOB_ID", "12346", 1);
  setenv("SLURM_STEP_ID", "0", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_string_equal(cfg.boot_addr, "node07:27536");
  /* Slurm's older spellings, and the job's node list without a step's. */
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_STEP_ID");
  unsetenv("SLURM_STEP_NODELIST");
  setenv("SLURM_JOBID", "12345", 1);
  setenv("SLURM_STEPID", "3", 1);
  setenv("SLURM_JOB_NODELIST", "gpu[3-4],node1", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_string_equal(cfg.boot_addr, "gpu3:27523");
}

static void test_slurm_boot_port_range(void **state) {
  static const char *const bad[] = {"40000",       "5-10", "30000-20000", "a-b",
                                    "20000-70000", "-",    "20000-"};
  mmp__config_t cfg;
  (void)state;

  setenv("MINIMP_BOOT_PORTS", "40000-40000", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_string_equal(cfg.boot_addr, "node07:40000");
  setenv("MINIMP_BOOT_PORTS", "40000-40099", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_string_equal(cfg.boot_addr, "node07:40023");
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("MINIMP_BOOT_PORTS", bad[i], 1);
    assert_int_equal(identity(&cfg), MMP_EENV);
  }
}

static void test_slurm_boot_malformed_or_missing(void **state) {
  mmp__config_t cfg;
  (void)state;

  setenv("SLURM_STEP_NODELIST", "node[07-09", 1);
  assert_int_equal(identity(&cfg), MMP_EENV);
  setenv("SLURM_STEP_NODELIST", "node[07-09]", 1);
  setenv("SLURM_JOB_ID", "12x", 1);
  assert_int_equal(identity(&cfg), MMP_EENV);
  setenv("SLURM_JOB_ID", "12345", 1);
  unsetenv("SLURM_STEP_ID");
  assert_int_equal(identity(&cfg), MMP_EENV);
}

static void test_slurm_boot_given_address_wins(void **state) {
  mmp__config_t cfg;
  (void)state;

  setenv("MINIMP_BOOT_ADDR", "10.0.0.1:7777", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_string_equal(cfg.boot_addr, "10.0.0.1:7777");
  assert_int_equal(cfg.host_boot, 0); /* the user's service, unless told */
  unsetenv("MINIMP_BOOT_ADDR");
  setenv("MINIMP_BOOT_HOST", "0", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_int_equal(cfg.host_boot, 0);
  /* Without a key, a program under srun is a job of one. */
  unsetenv("MINIMP_BOOT_HOST");
  unsetenv("MINIMP_JOB_KEY");
  assert_int_equal(identity(&cfg), 0);
  assert_int_equal(cfg.singleton, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_slurm_boot_derived_from_step, setup),
      cmocka_unit_test_setup(test_slurm_boot_port_range, setup),
      cmocka_unit_test_setup(test_slurm_boot_malformed_or_missing, setup),
      cmocka_unit_test_setup(test_slurm_boot_given_address_wins, setup),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
