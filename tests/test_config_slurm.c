/* SPDX-License-Identifier: MIT */
/*
 * The identity of a rank that srun started (runtime/config.c): the rank
 * and size from SLURM_PROCID and SLURM_NTASKS, and, without
 * MINIMP_BOOT_ADDR, the rendezvous derived from the step: its first node,
 * a port from SLURM_JOB_ID and SLURM_STEP_ID within MINIMP_BOOT_PORTS, and
 * rank 0 serving it; the ranks on the node from the step's tasks per node,
 * not the job's size, so that waits are chosen for the CPUs the node's
 * ranks really share. Malformed values are errors, never a guess.
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
    "MINIMP_RANK",         "MINIMP_SIZE",          "MINIMP_BOOT_ADDR",
    "MINIMP_BOOT_HOST",    "MINIMP_BOOT_PORTS",    "MINIMP_LOCAL_RANK",
    "MINIMP_LOCAL_SIZE",   "MINIMP_IFACE",         "SLURM_JOBID",
    "SLURM_STEPID",        "SLURM_JOB_NODELIST",   "SLURM_LOCALID",
    "SLURM_STEP_NODELIST", "SLURM_JOB_ID",         "SLURM_STEP_ID",
    "SLURM_NODEID",        "SLURM_TASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE"};

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

/* The local size identity() finds, which must succeed. */
static int local_size(void) {
  mmp__config_t cfg;

  assert_int_equal(identity(&cfg), 0);
  return cfg.local_size;
}

/* 4 tasks on node[07-09]: 2 on node07, 1 on each other. */
static void test_slurm_local_size_from_tasks_per_node(void **state) {
  mmp__config_t cfg;
  (void)state;

  setenv("SLURM_STEP_TASKS_PER_NODE", "2,1(x2)", 1);
  setenv("SLURM_NODEID", "0", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("SLURM_PROCID", "1", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_int_equal(cfg.local_rank, 1);
  assert_int_equal(cfg.local_size, 2);
  setenv("SLURM_NODEID", "2", 1);
  setenv("SLURM_LOCALID", "0", 1);
  setenv("SLURM_PROCID", "3", 1);
  assert_int_equal(local_size(), 1);
  /* The job's list where the step's is missing; the step's first. */
  unsetenv("SLURM_STEP_TASKS_PER_NODE");
  setenv("SLURM_TASKS_PER_NODE", "3,1", 1);
  setenv("SLURM_NODEID", "0", 1);
  assert_int_equal(local_size(), 3);
  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)", 1);
  assert_int_equal(local_size(), 2);
  /* Equal counts need no node number; unequal ones without it leave the
   * job's size, which is what is known. */
  unsetenv("SLURM_NODEID");
  assert_int_equal(local_size(), 2);
  setenv("SLURM_STEP_TASKS_PER_NODE", "3,1", 1);
  assert_int_equal(local_size(), 4);
  /* MINIMP_LOCAL_SIZE rules; without any list, the job's size. */
  setenv("MINIMP_LOCAL_SIZE", "3", 1);
  assert_int_equal(local_size(), 3);
  unsetenv("MINIMP_LOCAL_SIZE");
  unsetenv("SLURM_STEP_TASKS_PER_NODE");
  unsetenv("SLURM_TASKS_PER_NODE");
  assert_int_equal(local_size(), 4);
}

/* What the local size is for: with as many ranks on a node as it has
 * CPUs, waits spin without yielding, however large the job. */
static void test_slurm_local_size_chooses_the_waits(void **state) {
  char v[64];
  int ncpu = (int)uv_available_parallelism();
  mmp__config_t cfg;
  (void)state;

  snprintf(v, sizeof(v), "%d", 8 * ncpu);
  setenv("SLURM_NTASKS", v, 1);
  snprintf(v, sizeof(v), "%d(x8)", ncpu);
  setenv("SLURM_STEP_TASKS_PER_NODE", v, 1);
  setenv("SLURM_NODEID", "5", 1);
  setenv("SLURM_LOCALID", "0", 1);
  assert_int_equal(identity(&cfg), 0);
  assert_int_equal(cfg.local_size, ncpu);
  cfg.spin_yield = -1;
  mmp__config_resolve(&cfg);
  assert_int_equal(cfg.cpus_shared, 0);
  assert_int_equal(cfg.spin_yield, 0);
  /* Twice as many ranks as CPUs on the node: shared, and waits yield. */
  snprintf(v, sizeof(v), "%d(x4)", 2 * ncpu);
  setenv("SLURM_STEP_TASKS_PER_NODE", v, 1);
  setenv("SLURM_NODEID", "3", 1);
  assert_int_equal(identity(&cfg), 0);
  cfg.spin_yield = -1;
  mmp__config_resolve(&cfg);
  assert_int_equal(cfg.cpus_shared, 1);
  assert_int_equal(cfg.spin_yield, 1);
}

static void test_slurm_local_size_malformed(void **state) {
  static const char *const bad[] = {"x",
                                    "2(x",
                                    "2(x2",
                                    "2(x0)",
                                    "0",
                                    "2,,1",
                                    "2,",
                                    ",2",
                                    "2(y2)",
                                    "-1",
                                    "2 ",
                                    "5",
                                    "1(x2)" /* no node 2 */,
                                    "2(x2)1",
                                    "2)"};
  mmp__config_t cfg;
  (void)state;

  setenv("SLURM_NODEID", "2", 1);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("SLURM_STEP_TASKS_PER_NODE", bad[i], 1);
    if (identity(&cfg) != MMP_EENV)
      fail_msg("'%s' accepted", bad[i]);
  }
  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x3)", 1);
  setenv("SLURM_NODEID", "node2", 1);
  assert_int_equal(identity(&cfg), MMP_EENV);
  /* A local rank beyond its node's count. */
  setenv("SLURM_NODEID", "1", 1);
  setenv("SLURM_LOCALID", "2", 1);
  assert_int_equal(identity(&cfg), MMP_EENV);
  setenv("SLURM_LOCALID", "1", 1);
  assert_int_equal(local_size(), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_slurm_boot_derived_from_step, setup),
      cmocka_unit_test_setup(test_slurm_boot_port_range, setup),
      cmocka_unit_test_setup(test_slurm_boot_malformed_or_missing, setup),
      cmocka_unit_test_setup(test_slurm_boot_given_address_wins, setup),
      cmocka_unit_test_setup(test_slurm_local_size_from_tasks_per_node, setup),
      cmocka_unit_test_setup(test_slurm_local_size_chooses_the_waits, setup),
      cmocka_unit_test_setup(test_slurm_local_size_malformed, setup),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
