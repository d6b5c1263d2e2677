/* SPDX-License-Identifier: MIT */
/*
 * minimprun's mpirun-style options and batch allocations, on this
 * machine: -N/--npernode, --wdir, --output-filename, --bind-to core with
 * --report-bindings, the hosts of a Slurm allocation (SLURM_JOB_NODELIST,
 * SLURM_TASKS_PER_NODE) and of PBS_NODEFILE, --ignore-allocation,
 * MINIMP_AGENT, and a clear error for every malformed value. Where the
 * daemons matter, "hosts" are started through scripted_job standing in for
 * ssh, and the default Slurm agent through a stub srun first in PATH that
 * hands the host it was given to scripted_job; every rank still runs here.
 *
 * Run as: test_launch_opts MINIMPRUN LAUNCH_HELPER
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <sys/stat.h>

#include "spawn_util.h"

static const char *minimprun, *helper;
static char agent[600]; /* "LAUNCH_HELPER agent" */
static char tmp[] = "/tmp/mmp-opts-XXXXXX";

/* Runs minimprun with `args` (NULL-terminated) for at most 30 s. */
static void run(spawn_result_t *r, const char *const *args) {
  char *argv[48];
  int n = 0;

  argv[n++] = (char *)minimprun;
  while (*args != NULL && n < 47)
    argv[n++] = (char *)*args++;
  argv[n] = NULL;
  assert_int_equal(spawn_run(argv, 30, r), 0);
}

#define RUN(r, ...)                                                            \
  do {                                                                         \
    const char *const a_[] = {__VA_ARGS__, NULL};                              \
    run((r), a_);                                                              \
  } while (0)

/* Through the daemons, scripted_job as the agent. */
#define REMOTE(r, ...) RUN((r), "--agent", agent, "--iface", "lo", __VA_ARGS__)

static void test_opts_npernode(void **state) {
  spawn_result_t r;
  (void)state;

  /* Every host gets N ranks whatever its slots; no -n: N per host. */
  RUN(&r, "-N", "2", "--host", "localhost:5,127.0.0.1", helper, "env",
      "MINIMP_LOCAL_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(spawn_count(r.out, "MINIMP_LOCAL_SIZE=2"), 4);
  assert_int_equal(spawn_count(r.out, "MINIMP_LOCAL_SIZE="), 4);
  RUN(&r, "--npernode", "3", helper, "env", "MINIMP_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(spawn_count(r.out, "MINIMP_SIZE=3"), 3);
  /* More ranks than N per host is refused, naming the counts. */
  RUN(&r, "-N", "1", "-n", "3", "--host", "localhost,127.0.0.1", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "not enough slots: 3 rank(s) requested, 2 "
                                "slot(s) on 2 host(s)"));
  RUN(&r, "-N", "two", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "bad ranks per node 'two' for -N"));
}

static void test_opts_wdir(void **state) {
  spawn_result_t r;
  char want[256];
  (void)state;

  snprintf(want, sizeof(want), "%s\n%s\n", tmp, tmp);
  RUN(&r, "--wdir", tmp, "-n", "2", "/bin/pwd");
  assert_int_equal(r.status, 0);
  assert_string_equal(r.out, want);
  /* On another host too (the daemon's own directory would be $HOME). */
  REMOTE(&r, "--wdir", tmp, "--host", "nodeA,nodeB", "/bin/pwd");
  assert_int_equal(r.status, 0);
  assert_string_equal(r.out, want);
  /* A directory that does not exist stops the job, here or there. */
  RUN(&r, "--wdir", "/nonexistent/dir", "-n", "2", "/bin/pwd");
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "--wdir '/nonexistent/dir': No such file or "
                                "directory"));
  assert_string_equal(r.out, "");
  REMOTE(&r, "--wdir", "/nonexistent/dir", "--host", "nodeA", "/bin/pwd");
  assert_int_equal(r.status, 127);
  assert_non_null(strstr(r.err, "cannot start '/bin/pwd' on host nodeA in "
                                "--wdir '/nonexistent/dir': No such file or "
                                "directory"));
  assert_string_equal(r.out, "");
}

/* The file DIR/1/rank.R/NAME holds exactly `want`. */
static void assert_file(const char *dir, int rank, const char *name,
                        const char *want) {
  char path[512], got[256];

  snprintf(path, sizeof(path), "%s/1/rank.%d/%s", dir, rank, name);
  spawn_slurp(path, got, sizeof(got));
  assert_string_equal(got, want);
}

static void test_opts_output_filename(void **state) {
  static const char *const prog =
      "echo out $MINIMP_RANK; echo err $MINIMP_RANK >&2";
  spawn_result_t r;
  char dir[256], want[32];
  (void)state;

  snprintf(dir, sizeof(dir), "%s/out", tmp);
  RUN(&r, "--output-filename", dir, "-n", "3", "/bin/sh", "-c", prog);
  assert_int_equal(r.status, 0);
  assert_string_equal(r.out, ""); /* the files only, as Open MPI's */
  for (int i = 0; i < 3; i++) {
    snprintf(want, sizeof(want), "out %d\n", i);
    assert_file(dir, i, "stdout", want);
    snprintf(want, sizeof(want), "err %d\n", i);
    assert_file(dir, i, "stderr", want);
  }
  /* Ranks on other hosts: their output comes back into the same files,
   * which a new job truncates. */
  REMOTE(&r, "--output-filename", dir, "--host", "nodeA,nodeB", "/bin/sh", "-c",
         "echo again $MINIMP_RANK");
  assert_int_equal(r.status, 0);
  assert_file(dir, 1, "stdout", "again 1\n");
  assert_file(dir, 1, "stderr", "");
  /* A path that cannot be made is named. */
  RUN(&r, "--output-filename", "/proc/nope", "-n", "1", "/bin/true");
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "--output-filename: cannot create "
                                "'/proc/nope"));
}

/* The CPUs marked B in a report "... bound to core C: [./B/.]". */
static void report_cpus(const char *line, cpu_set_t *set) {
  const char *p = strstr(line, ": [");
  int c = 0;

  assert_non_null(p);
  CPU_ZERO(set);
  for (p += 3; *p != ']' && *p != '\0'; p++)
    if (*p == 'B')
      CPU_SET(c, set);
    else if (*p == '/')
      c++;
}

/* Parses "Cpus_allowed_list: 0-1,4" into `set`. */
static void allowed_cpus(const char *line, cpu_set_t *set) {
  const char *p = strchr(line, ':');
  int lo, hi, used;

  assert_non_null(p);
  CPU_ZERO(set);
  for (p++; sscanf(p, "%d%n", &lo, &used) == 1; p++) {
    p += used;
    hi = lo;
    if (*p == '-' && sscanf(p + 1, "%d%n", &hi, &used) == 1)
      p += 1 + used;
    for (; lo <= hi; lo++)
      CPU_SET(lo, set);
    if (*p != ',')
      break;
  }
}

/* Every rank's reported set is what the kernel says it may run on, and
 * local ranks 0 and 1 get cores 0 and 1, different CPUs (or, on a machine
 * of one core, both core 0). */
static void check_bindings(const spawn_result_t *r, int n) {
  cpu_set_t rep, got, first;
  int core[2] = {-1, -1};

  for (int i = 0; i < n; i++) {
    char key[64], line[256];
    const char *p;
    snprintf(key, sizeof(key), "MCW rank %d bound to core ", i);
    p = strstr(r->err, key);
    if (p == NULL)
      fail_msg("no report '%s' in\n%s", key, r->err);
    if (i < 2)
      core[i] = atoi(p + strlen(key));
    report_cpus(p, &rep);
    snprintf(key, sizeof(key), "%d Cpus_allowed_list:", i);
    p = strstr(r->out, key);
    assert_non_null(p);
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
    allowed_cpus(line, &got);
    assert_true(CPU_EQUAL(&rep, &got));
    if (i == 0)
      first = got;
    else if (i == 1)
      assert_true(core[1] == 1 ? !CPU_EQUAL(&first, &got)
                               : core[1] == 0 && CPU_EQUAL(&first, &got));
  }
  assert_int_equal(core[0], 0);
}

static void test_opts_bind_to_core(void **state) {
  static const char *const prog =
      "echo $MINIMP_RANK $(grep Cpus_allowed_list /proc/self/status)";
  spawn_result_t r;
  (void)state;

  RUN(&r, "--bind-to", "core", "--report-bindings", "-n", "2", "/bin/sh", "-c",
      prog);
  assert_int_equal(r.status, 0);
  check_bindings(&r, 2);
  /* The daemon binds its host's ranks (local ranks 0 and 1 on nodeB). */
  REMOTE(&r, "--bind-to", "core", "--report-bindings", "--host",
         "nodeA:2,nodeB:2", "/bin/sh", "-c", prog);
  assert_int_equal(r.status, 0);
  check_bindings(&r, 2);
  assert_int_equal(spawn_count(r.err, " bound to core "), 4);
  /* Not bound: said so, and the rank keeps every CPU. */
  RUN(&r, "--bind-to", "none", "--report-bindings", "-n", "2", "/bin/true");
  assert_int_equal(r.status, 0);
  assert_int_equal(spawn_count(r.err, "is not bound (or bound to all available "
                                      "processors)"),
                   2);
  RUN(&r, "--bind-to", "socket", "-n", "1", "/bin/true");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "bad --bind-to 'socket' (core or none)"));
}

/* The Slurm variables of an allocation; NULL unsets one. */
static void slurm_env(const char *nodes, const char *tasks) {
  if (nodes != NULL)
    setenv("SLURM_JOB_NODELIST", nodes, 1);
  else
    unsetenv("SLURM_JOB_NODELIST");
  if (tasks != NULL)
    setenv("SLURM_TASKS_PER_NODE", tasks, 1);
  else
    unsetenv("SLURM_TASKS_PER_NODE");
}

static void test_opts_slurm_allocation_local(void **state) {
  spawn_result_t r;
  (void)state;

  /* Both names are this machine: slots from the task counts, no -n. */
  slurm_env("localhost,127.0.0.1", "2,3");
  RUN(&r, helper, "env", "MINIMP_SIZE", "MINIMP_LOCAL_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(spawn_count(r.out, "MINIMP_SIZE=5"), 5);
  assert_int_equal(spawn_count(r.out, "MINIMP_LOCAL_SIZE=2"), 2);
  assert_int_equal(spawn_count(r.out, "MINIMP_LOCAL_SIZE=3"), 3);
  RUN(&r, "-n", "6", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "not enough slots: 6 rank(s) requested, 5 "
                                "slot(s) on 2 host(s)"));
  /* --host wins; --ignore-allocation falls back to this machine. */
  RUN(&r, "--host", "localhost", helper, "env", "MINIMP_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(spawn_count(r.out, "MINIMP_SIZE=1"), 1);
  RUN(&r, "--ignore-allocation", "-n", "7", helper, "env", "MINIMP_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(spawn_count(r.out, "MINIMP_SIZE=7"), 7);
  /* Malformed values are named, nothing starts. */
  slurm_env("node[1-3", "1");
  RUN(&r, helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "minimprun: SLURM_JOB_NODELIST: unbalanced "
                                "'[' at '[1-3' in host list 'node[1-3'"));
  slurm_env("node[1-3]", "2(x2)");
  RUN(&r, helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "SLURM_TASKS_PER_NODE: task counts '2(x2)' "
                                "do not match the 3 node(s)"));
  slurm_env("node[1-3]", NULL);
  RUN(&r, helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "SLURM_TASKS_PER_NODE is not"));
  assert_string_equal(r.out, "");
  slurm_env(NULL, NULL);
}

static void test_opts_slurm_allocation_srun_agent(void **state) {
  char path[1024], stub[600];
  spawn_result_t r;
  (void)state;

  /* srun's stand-in: reports its options, then starts the command on the
   * host named after --nodelist through scripted_job. */
  snprintf(stub, sizeof(stub), "%s agent", helper);
  assert_int_equal(spawn_srun_stub(tmp,
                                   "echo \"srun-stub: $*\" | cut -d' ' "
                                   "-f1-8 >&2",
                                   stub),
                   0);
  snprintf(path, sizeof(path), "%s:%s", tmp, getenv("PATH"));
  setenv("PATH", path, 1);
  slurm_env("node[08-09]", "2(x2)");
  RUN(&r, "--iface", "lo", helper, "env", "MMP_TEST_HOST");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "0 MMP_TEST_HOST=node08"));
  assert_non_null(strstr(r.out, "1 MMP_TEST_HOST=node08"));
  assert_non_null(strstr(r.out, "2 MMP_TEST_HOST=node09"));
  assert_non_null(strstr(r.out, "3 MMP_TEST_HOST=node09"));
  assert_int_equal(spawn_count(r.err,
                               "srun-stub: --nodes=1 --ntasks=1 --overlap "
                               "--whole --cpu-bind=none --nodelist node0"),
                   2);
  /* MINIMP_AGENT replaces srun, --agent replaces both. */
  setenv("MINIMP_AGENT", agent, 1);
  RUN(&r, "--iface", "lo", "-n", "3", helper, "env", "MMP_TEST_HOST");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "2 MMP_TEST_HOST=node09"));
  assert_null(strstr(r.err, "srun-stub"));
  setenv("MINIMP_AGENT", "  ", 1);
  RUN(&r, "--iface", "lo", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "MINIMP_AGENT='  ' names no command"));
  unsetenv("MINIMP_AGENT");
  slurm_env(NULL, NULL);
}

static void test_opts_pbs_nodefile(void **state) {
  spawn_result_t r;
  char file[600];
  FILE *f;
  (void)state;

  /* One line per slot. */
  snprintf(file, sizeof(file), "%s/nodefile", tmp);
  f = fopen(file, "w");
  assert_non_null(f);
  fputs("localhost\nlocalhost\n127.0.0.1\n", f);
  fclose(f);
  setenv("PBS_NODEFILE", file, 1);
  RUN(&r, helper, "env", "MINIMP_LOCAL_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(spawn_count(r.out, "MINIMP_LOCAL_SIZE=2"), 2);
  assert_int_equal(spawn_count(r.out, "MINIMP_LOCAL_SIZE=1"), 1);
  setenv("PBS_NODEFILE", "/nonexistent/nodefile", 1);
  RUN(&r, helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "'/nonexistent/nodefile'"));
  unsetenv("PBS_NODEFILE");
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_opts_npernode),
      cmocka_unit_test(test_opts_wdir),
      cmocka_unit_test(test_opts_output_filename),
      cmocka_unit_test(test_opts_bind_to_core),
      cmocka_unit_test(test_opts_slurm_allocation_local),
      cmocka_unit_test(test_opts_slurm_allocation_srun_agent),
      cmocka_unit_test(test_opts_pbs_nodefile),
  };
  char cmd[700];
  int rc;

  if (argc != 3) {
    fprintf(stderr, "usage: %s MINIMPRUN LAUNCH_HELPER\n", argv[0]);
    return 2;
  }
  minimprun = argv[1];
  helper = argv[2];
  snprintf(agent, sizeof(agent), "%s agent", helper);
  /* The job must not see an allocation of the machine running the test. */
  unsetenv("SLURM_JOB_NODELIST");
  unsetenv("SLURM_NODELIST");
  unsetenv("PBS_NODEFILE");
  unsetenv("MINIMP_AGENT");
  if (mkdtemp(tmp) == NULL)
    return 1;
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
  spawn_sh(cmd);
  return rc;
}
