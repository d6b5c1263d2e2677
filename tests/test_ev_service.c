/* SPDX-License-Identifier: MIT */
/*
 * examples/ev_service, a libev service that embeds libminimp with
 * external progress, run as its users run it: four processes started
 * without minimprun, rank 0 hosting the rendezvous. Each must finish its
 * rounds of non-blocking allgather and broadcast with the safety timer
 * off, so that the progress descriptor alone drove every round: on
 * loopback (shared memory, and TCP only), and across four hosts of the
 * emulated cluster (tests/netcluster) where that is available.
 *
 * Run as: test_ev_service loopback EV_SERVICE
 *         test_ev_service cluster EV_SERVICE NETCLUSTER
 * The cluster form exits 77 (meson: skipped) without root or namespaces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "cluster_util.h"

#define RANKS 4
#define ROUNDS "200"

static const char *service;

/* A TCP port on loopback that nothing listens on right now. */
static int free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;

  assert_true(fd >= 0);
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/*
 * Starts RANKS services at once, rank i through `prefix(i)` (a command
 * that runs the rest in host i, or nothing), all meeting at `addr`, and
 * checks that each one finished its rounds without the safety timer.
 */
static void run_service(const char *(*prefix)(int), const char *addr,
                        const char *iface) {
  char cmd[4096] = "fail=0; ";
  char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  /* Static, not allocated: a failed check leaves by longjmp. */
  static spawn_result_t result;
  spawn_result_t *r = &result;
  size_t n;
  int i;

  memset(r, 0, sizeof(*r));
  for (i = 0; i < RANKS; i++) {
    n = strlen(cmd);
    snprintf(cmd + n, sizeof(cmd) - n,
             "%s %s %d %d %s %s %s & pids=\"$pids $!\"; ", prefix(i), service,
             i, RANKS, addr, ROUNDS, iface);
  }
  n = strlen(cmd);
  snprintf(cmd + n, sizeof(cmd) - n,
           "for p in $pids; do wait $p || fail=1; done; exit $fail");
  setenv("MINIMP_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
  setenv("EV_SERVICE_SAFETY_MS", "0", 1);
  assert_int_equal(spawn_run(argv, 120, r), 0);
  if (r->status != 0 ||
      cluster_count(r->out, "safety timer fired 0 times") != RANKS)
    fprintf(stderr, "--- stdout\n%s--- stderr\n%s---\n", r->out, r->err);
  assert_int_equal(r->status, 0);
  assert_int_equal(cluster_count(r->out, ROUNDS " rounds ok"), RANKS);
  assert_int_equal(cluster_count(r->out, "safety timer fired 0 times"), RANKS);
}

static const char *here(int i) {
  (void)i;
  return "";
}

static void test_ev_service_loopback(void **state) {
  char addr[64];
  (void)state;

  unsetenv("MINIMP_SHM");
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  run_service(here, addr, "");
}

static void test_ev_service_loopback_tcp(void **state) {
  char addr[64];
  (void)state;

  setenv("MINIMP_SHM", "off", 1);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  run_service(here, addr, "");
  unsetenv("MINIMP_SHM");
}

static const char *in_host(int i) {
  static char cmd[RANKS][64];

  snprintf(cmd[i], sizeof(cmd[i]), "ip netns exec %s", cluster_host(i));
  return cmd[i];
}

static void test_ev_service_cluster(void **state) {
  const char *subnet = getenv("NETCLUSTER_SUBNET");
  char addr[64];
  (void)state;

  /* Host 0's eth0 (tests/netcluster numbers the hosts from .1). */
  snprintf(addr, sizeof(addr), "%s.1:7781",
           subnet != NULL ? subnet : "10.77.0");
  run_service(in_host, addr, "eth0");
  cluster_assert_empty(CLUSTER_HOSTS, 5);
}

int main(int argc, char **argv) {
  const struct CMUnitTest loopback[] = {
      cmocka_unit_test(test_ev_service_loopback),
      cmocka_unit_test(test_ev_service_loopback_tcp),
  };
  const struct CMUnitTest cluster[] = {
      cmocka_unit_test_setup_teardown(test_ev_service_cluster, cluster_up,
                                      cluster_down),
  };
  int rc;

  if (argc >= 3 && strcmp(argv[1], "loopback") == 0) {
    service = argv[2];
    return cmocka_run_group_tests(loopback, NULL, NULL);
  }
  if (argc == 4 && strcmp(argv[1], "cluster") == 0) {
    service = argv[2];
    if ((rc = cluster_check(argv[3])) != 0)
      return rc;
    return cmocka_run_group_tests(cluster, NULL, NULL);
  }
  fprintf(stderr,
          "usage: %s loopback EV_SERVICE | cluster EV_SERVICE NETCLUSTER\n",
          argv[0]);
  return 2;
}
