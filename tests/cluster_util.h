/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests on the emulated cluster (tests/netcluster):
 * bringing it up and down, and checking that a job left nothing behind.
 * Include after <cmocka.h>.
 */
#ifndef MMP_TESTS_CLUSTER_UTIL_H
#define MMP_TESTS_CLUSTER_UTIL_H

#include "spawn_util.h"

/* The cluster every test uses: tests/netcluster's path (cluster_check
 * sets it) and CLUSTER_HOSTS hosts h0..h7 at 100 Mbit/s. The hosts are
 * named NETCLUSTER_PREFIX0.. when that is set (and the switch
 * NETCLUSTER_SWITCH, as tests/netcluster reads them), so that two
 * clusters, say a benchmark's and a test run's, can share a machine. */
#define CLUSTER_HOSTS 8
static const char *cluster_script;
/* What cluster_job's ranks listen on (minimprun --iface): a test may
 * point it at an IPv6 prefix (tests/netcluster's NETCLUSTER_SUBNET6). */
static const char *cluster_iface = "eth0";

static inline const char *cluster_prefix(void) {
  const char *p = getenv("NETCLUSTER_PREFIX");

  return p != NULL && *p != '\0' ? p : "h";
}

/* Host i's name, in a static buffer per call site's use: copy it. */
static inline const char *cluster_host(int i) {
  static char name[4][32];
  static int next;
  char *b = name[next++ % 4];

  snprintf(b, sizeof(name[0]), "%s%d", cluster_prefix(), i);
  return b;
}

/* `NETCLUSTER VERB ...`: 0 or -1. */
static inline int cluster_run(const char *verb) {
  char cmd[512];

  if (strcmp(verb, "up") == 0)
    snprintf(cmd, sizeof(cmd), "%s up %d 100mbit", cluster_script,
             CLUSTER_HOSTS);
  else
    snprintf(cmd, sizeof(cmd), "%s %s", cluster_script, verb);
  return spawn_sh(cmd) == 0 ? 0 : -1;
}

/* cmocka fixtures. */
static inline int cluster_up(void **state) {
  (void)state;
  return cluster_run("up");
}

static inline int cluster_down(void **state) {
  (void)state;
  return cluster_run("down");
}

/* On SIGTERM (meson's timeout), SIGINT or SIGHUP: takes the cluster down
 * from a child in a session of its own, which outlives the SIGKILL meson
 * sends the test's process group half a second later, and exits 1. Only
 * async-signal-safe calls. */
static inline void cluster_on_signal(int sig) {
  (void)sig;
  if (fork() == 0) {
    int null = open("/dev/null", O_RDWR);
    setsid();
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    char *argv[] = {"sh", (char *)cluster_script, "down", NULL};
    execve("/bin/sh", argv, environ);
    _exit(127);
  }
  _exit(1);
}

/* Installs cluster_on_signal: a test killed for its time leaves no
 * namespaces behind. Call after cluster_check. */
static inline void cluster_down_on_signal(void) {
  struct sigaction sa;

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = cluster_on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* Whether the cluster can run here: 0 yes, 77 no (root and network
 * namespaces needed; says so, and meson counts the test skipped), 1 if
 * the check itself failed. */
static inline int cluster_check(const char *script) {
  char cmd[512];
  int rc;

  cluster_script = script;
  snprintf(cmd, sizeof(cmd), "%s check", script);
  rc = spawn_sh(cmd);
  if (rc == 77)
    printf("emulated cluster unavailable (needs root and network "
           "namespaces): skipped\n");
  return rc == 0 || rc == 77 ? rc : 1;
}

/*
 * Runs `prog MODE ARG` on `nhosts` hosts with `per` ranks each through
 * minimprun from host 0 (--agent "ip netns exec", --iface cluster_iface),
 * with up to two "VAR=value" exported to the ranks (NULL: none), and
 * returns the result; prints the job's output if it failed.
 */
static inline void cluster_job(const char *minimprun, const char *prog,
                               int nhosts, int per, const char *env1,
                               const char *env2, const char *mode,
                               const char *arg, double limit,
                               spawn_result_t *r) {
  char hosts[256] = "", tmo[32], np[16];
  char *argv[40];
  int n = 0, i;

  for (i = 0; i < nhosts; i++)
    snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), "%s%s:%d",
             i ? "," : "", cluster_host(i), per);
  snprintf(np, sizeof(np), "%d", nhosts * per);
  snprintf(tmo, sizeof(tmo), "%d", (int)limit);
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
  argv[n++] = (char *)cluster_iface;
  argv[n++] = "--timeout";
  argv[n++] = tmo;
  if (env1 != NULL) {
    argv[n++] = "-x";
    argv[n++] = (char *)env1;
  }
  if (env2 != NULL) {
    argv[n++] = "-x";
    argv[n++] = (char *)env2;
  }
  argv[n++] = "-n";
  argv[n++] = np;
  argv[n++] = (char *)prog;
  argv[n++] = (char *)mode;
  argv[n++] = (char *)arg;
  argv[n] = NULL;
  assert_int_equal(spawn_run(argv, limit + 30, r), 0);
  if (r->status != 0)
    fprintf(stderr, "--- stdout\n%s--- stderr\n%s---\n", r->out, r->err);
}

/* How many times `needle` occurs in `s`. */
static inline int cluster_count(const char *s, const char *needle) {
  return spawn_count(s, needle);
}

/* No process is left in h0 .. h(hosts-1) and no minimprun daemon in them
 * or outside every namespace; waits up to `s` seconds (a daemon may still
 * be exiting), then fails listing what is left. */
static inline void cluster_assert_empty(int hosts, double s) {
  double t0 = spawn_now();
  char cmd[160];

  for (;;) {
    /* The brackets keep the pattern from matching this shell itself. */
    int busy;
    /* Another cluster's daemons (another prefix) are not ours. */
    snprintf(cmd, sizeof(cmd),
             "for p in $(pgrep -f 'minimprun [-]-daemon'); do "
             "ns=$(ip netns identify $p 2>/dev/null); "
             "case $ns in ''|%s[0-9]*) exit 1;; esac; done; exit 0",
             cluster_prefix());
    busy = spawn_sh(cmd) != 0;
    for (int i = 0; i < hosts; i++) {
      snprintf(cmd, sizeof(cmd), "test -z \"$(ip netns pids %s)\"",
               cluster_host(i));
      busy += spawn_sh(cmd) != 0;
    }
    if (busy == 0)
      return;
    if (spawn_now() - t0 > s) {
      spawn_sh("for h in $(ip netns list | awk '{print $1}'); do "
               "for p in $(ip netns pids $h); do echo \"$h: $(tr '\\0' ' ' "
               "</proc/$p/cmdline)\"; done; done >&2");
      fail_msg("processes of the job are left on %d host(s)", busy);
    }
    usleep(50000);
  }
}

#endif /* MMP_TESTS_CLUSTER_UTIL_H */
