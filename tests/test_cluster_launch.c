/* SPDX-License-Identifier: MIT */
/*
 * minimprun across the emulated cluster: 8 hosts (network namespaces
 * h0..h7 on one bridge, 100 Mbit/s links, tests/netcluster), the launcher
 * run inside h0 with --agent "ip netns exec" and --iface eth0, as mpirun
 * would be run on a cluster's first node. Checks that 8 and 16 ranks land
 * on the right hosts (each rank names the namespace it runs in), that a
 * failure on one host, a rank killed from outside and --timeout stop the
 * whole job within seconds with the right status, and that afterwards no
 * process of ours is left in any namespace and no daemon survives; and a
 * faked Slurm allocation of the hosts, started through a stub srun.
 *
 * The cluster is brought up in the group setup and torn down at the end,
 * also after a failure; without root or network namespaces the
 * program exits 77, which meson reports as skipped.
 *
 * Run as: test_cluster_launch NETCLUSTER MINIMPRUN LAUNCH_HELPER
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_util.h"

#define HOSTS CLUSTER_HOSTS

static const char *minimprun, *helper;

/* "h0:S,h1:S,..." (cluster_host's names). */
static void host_list(char *out, size_t len, int slots) {
  size_t n = 0;
  int i;

  out[0] = '\0';
  for (i = 0; i < HOSTS; i++)
    n += (size_t)snprintf(out + n, len - n, "%s%s:%d", i ? "," : "",
                          cluster_host(i), slots);
}

/*
 * Runs minimprun in h0 across every host with `slots` slots each and the
 * extra arguments `args` (NULL-terminated; options, program, its
 * arguments), for at most `limit` seconds.
 */
static void run_job(int slots, const char *const *args, double limit,
                    spawn_result_t *r) {
  char hosts[256];
  char *argv[48];
  int n = 0;

  host_list(hosts, sizeof(hosts), slots);
  argv[n++] = "/usr/bin/env";
  argv[n++] = "ip";
  argv[n++] = "netns";
  argv[n++] = "exec";
  argv[n++] = (char *)cluster_host(0);
  argv[n++] = (char *)minimprun;
  argv[n++] = "--agent";
  argv[n++] = "ip netns exec";
  argv[n++] = "--host";
  argv[n++] = hosts;
  argv[n++] = "--iface";
  argv[n++] = "eth0";
  while (*args != NULL && n < 47)
    argv[n++] = (char *)*args++;
  argv[n] = NULL;
  assert_int_equal(spawn_run(argv, limit, r), 0);
  if (r->status != 0)
    fprintf(stderr,
            "--- status %d after %.2f s\n--- stdout\n%s--- stderr\n%s"
            "---\n",
            r->status, r->seconds, r->out, r->err);
}

#define RUN(slots, limit, r, ...)                                              \
  do {                                                                         \
    const char *const a_[] = {__VA_ARGS__, NULL};                              \
    run_job((slots), a_, (limit), (r));                                        \
  } while (0)

/* Each rank prints its rank, its local rank and the namespace it is in. */
static const char where[] =
    "echo rank $MINIMP_RANK local $MINIMP_LOCAL_RANK/$MINIMP_LOCAL_SIZE "
    "on $(ip netns identify $$) iface $MINIMP_IFACE";

static void test_cluster_launch_places_one_rank_per_host(void **state) {
  spawn_result_t r;
  char line[128];
  (void)state;

  RUN(1, 60, &r, "/bin/sh", "-c", where);
  assert_int_equal(r.status, 0);
  for (int i = 0; i < HOSTS; i++) {
    snprintf(line, sizeof(line), "rank %d local 0/1 on %s iface eth0\n", i,
             cluster_host(i));
    if (strstr(r.out, line) == NULL)
      fail_msg("missing '%s'", line);
  }
  cluster_assert_empty(HOSTS, 3);
  /* The same with a libminimp program that exchanges messages. */
  RUN(1, 60, &r, helper, "ok");
  assert_int_equal(r.status, 0);
  assert_int_equal(cluster_count(r.out, "hello from"), HOSTS);
  cluster_assert_empty(HOSTS, 3);
}

static void test_cluster_launch_16_ranks_two_per_host(void **state) {
  spawn_result_t r;
  char line[128];
  (void)state;

  RUN(2, 60, &r, "--map-by", "node", "/bin/sh", "-c", where);
  assert_int_equal(r.status, 0);
  for (int i = 0; i < 2 * HOSTS; i++) {
    snprintf(line, sizeof(line), "rank %d local %d/2 on %s iface eth0\n", i,
             i / HOSTS, cluster_host(i % HOSTS));
    if (strstr(r.out, line) == NULL)
      fail_msg("missing '%s'", line);
  }
  RUN(2, 60, &r, helper, "ok");
  assert_int_equal(r.status, 0);
  assert_int_equal(cluster_count(r.out, "hello from"), 2 * HOSTS);
  assert_int_equal(cluster_count(r.out, "of 16"), 2 * HOSTS);
  cluster_assert_empty(HOSTS, 3);
}

static void test_cluster_launch_failure_on_one_host(void **state) {
  spawn_result_t r;
  (void)state;

  /* Rank 5 runs on h5 and exits 3; the others wait forever. */
  char want[64];
  RUN(1, 60, &r, helper, "exit", "5", "3");
  assert_int_equal(r.status, 3);
  snprintf(want, sizeof(want), " on %s) exited with code 3", cluster_host(5));
  assert_non_null(strstr(r.err, want));
  assert_true(r.seconds < 5.0);
  cluster_assert_empty(HOSTS, 3);
}

static void test_cluster_launch_rank_killed_from_outside(void **state) {
  spawn_result_t r;
  char cmd[256];
  (void)state;

  /* Namespaces share the PID space, so pick h5's rank by its namespace. */
  snprintf(cmd, sizeof(cmd),
           "(sleep 1.5; for p in $(ip netns pids %s); do "
           "grep -qx scripted_job /proc/$p/comm && kill -9 $p; done) "
           ">/dev/null 2>&1 &",
           cluster_host(5));
  assert_int_equal(spawn_sh(cmd), 0);
  RUN(1, 60, &r, helper, "hang");
  assert_int_equal(r.status, 128 + 9);
  assert_non_null(strstr(r.err, "rank 5 (pid "));
  snprintf(cmd, sizeof(cmd), " on %s) killed by signal 9 (SIGKILL)",
           cluster_host(5));
  assert_non_null(strstr(r.err, cmd));
  assert_true(r.seconds < 6.0);
  cluster_assert_empty(HOSTS, 3);
}

static void test_cluster_launch_timeout(void **state) {
  spawn_result_t r;
  (void)state;

  RUN(1, 60, &r, "--timeout", "2", helper, "hang");
  assert_int_equal(r.status, 110);
  assert_non_null(strstr(r.err, "timed out"));
  assert_true(r.seconds >= 2.0 && r.seconds < 6.0);
  cluster_assert_empty(HOSTS, 3);
}

/*
 * A faked Slurm allocation of every host, 2 tasks each: the Slurm
 * variables, and a stub srun first in PATH that runs its command in the
 * namespace named after --nodelist, as srun would on that node. minimprun
 * gets no host option and no agent; it must take both from the allocation.
 */
static void test_cluster_launch_slurm_allocation(void **state) {
  char dir[] = "/tmp/mmp-slurm-XXXXXX", path[4200], nodes[64];
  char line[160], outdir[64], file[128], got[128], log[64], *argv[20];
  spawn_result_t r;
  int n = 0;
  (void)state;

  assert_non_null(mkdtemp(dir));
  snprintf(log, sizeof(log), "%s/srun.log", dir);
  snprintf(line, sizeof(line), "echo \"$*\" >>%s", log);
  assert_int_equal(spawn_srun_stub(dir, line, "ip netns exec"), 0);
  snprintf(path, sizeof(path), "PATH=%s:%s", dir, getenv("PATH"));
  snprintf(nodes, sizeof(nodes), "SLURM_JOB_NODELIST=%s[0-%d]",
           cluster_prefix(), HOSTS - 1);
  snprintf(outdir, sizeof(outdir), "%s/out", dir);
  argv[n++] = "/usr/bin/env";
  argv[n++] = path;
  argv[n++] = nodes;
  argv[n++] = "SLURM_TASKS_PER_NODE=2(x8)";
  argv[n++] = "SLURM_JOB_ID=4242";
  argv[n++] = "ip";
  argv[n++] = "netns";
  argv[n++] = "exec";
  argv[n++] = (char *)cluster_host(0);
  argv[n++] = (char *)minimprun;
  argv[n++] = "--iface";
  argv[n++] = "eth0";
  argv[n++] = "--output-filename";
  argv[n++] = outdir;
  argv[n++] = "/bin/sh";
  argv[n++] = "-c";
  argv[n++] = (char *)where;
  argv[n] = NULL;
  assert_int_equal(n, 17);
  assert_int_equal(spawn_run(argv, 60, &r), 0);
  assert_int_equal(r.status, 0);
  /* Every slot got a rank, filled host by host. */
  for (int i = 0; i < 2 * HOSTS; i++) {
    snprintf(file, sizeof(file), "%s/1/rank.%d/stdout", outdir, i);
    spawn_slurp(file, got, sizeof(got));
    snprintf(line, sizeof(line), "rank %d local %d/2 on %s iface eth0\n", i,
             i % 2, cluster_host(i / 2));
    assert_string_equal(got, line);
  }
  /* One srun step per host, each with one task on that node. */
  spawn_slurp(log, r.out, sizeof(r.out));
  assert_int_equal(cluster_count(r.out, "--nodes=1 --ntasks=1 "), HOSTS);
  snprintf(line, sizeof(line), "--nodelist %s ", cluster_host(7));
  assert_int_equal(cluster_count(r.out, line), 1);
  cluster_assert_empty(HOSTS, 3);
  /* A libminimp job on 12 of the 16 slots. */
  argv[12] = "-n";
  argv[13] = "12";
  argv[14] = (char *)helper;
  argv[15] = "ok";
  argv[16] = NULL;
  assert_int_equal(spawn_run(argv, 60, &r), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(cluster_count(r.out, "of 12"), 12);
  cluster_assert_empty(HOSTS, 3);
  snprintf(line, sizeof(line), "rm -rf '%s'", dir);
  spawn_sh(line);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cluster_launch_places_one_rank_per_host),
      cmocka_unit_test(test_cluster_launch_16_ranks_two_per_host),
      cmocka_unit_test(test_cluster_launch_failure_on_one_host),
      cmocka_unit_test(test_cluster_launch_rank_killed_from_outside),
      cmocka_unit_test(test_cluster_launch_timeout),
      cmocka_unit_test(test_cluster_launch_slurm_allocation),
  };
  int rc;

  if (argc != 4) {
    fprintf(stderr, "usage: %s NETCLUSTER MINIMPRUN LAUNCH_HELPER\n", argv[0]);
    return 2;
  }
  minimprun = argv[2];
  helper = argv[3];
  if ((rc = cluster_check(argv[1])) != 0)
    return rc;
  rc = cmocka_run_group_tests(tests, cluster_up, NULL);
  /* Down in every case, also when the setup failed half-way. */
  if (cluster_down(NULL) != 0)
    rc = rc != 0 ? rc : 1;
  return rc;
}
