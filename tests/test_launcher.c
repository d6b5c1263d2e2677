/* SPDX-License-Identifier: MIT */
/*
 * minimprun on this machine: exit codes and messages when one rank fails
 * (by exit code, by signal, by mmp_abort, by leaving without
 * mmp_finalize), the timeout, usage errors, the exported environment
 * (and the launcher's own variables, which -x cannot set), output
 * forwarding, and that no rank is left running afterwards.
 *
 * Then hosts: --host and --hostfile with local names (placement, local
 * ranks, --map-by node, hostfile errors, oversubscription), and remote
 * start through the per-host daemons with scripted_job standing in for
 * ssh ("scripted_job agent HOST CMD..."), so that every daemon and rank
 * still runs here: placement per host, failures and timeouts across hosts,
 * a lost daemon, a failing agent, standard input to a remote rank 0, and
 * the job key kept off every command line.
 *
 * Run as: test_launcher MINIMPRUN LAUNCH_HELPER
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *minimprun;
static const char *helper;
static char piddir[] = "/tmp/mmp-launch-XXXXXX";

typedef struct run_s {
  int status;     /* exit code, or -1 */
  double seconds; /* wall time of minimprun */
  char out[16384];
  char err[16384];
} run_t;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n = 0;

  buf[0] = '\0';
  if (f == NULL)
    return;
  n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

static void clear_piddir(void) {
  DIR *d = opendir(piddir);
  struct dirent *de;
  char path[600];

  if (d == NULL)
    return;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "%s/%s", piddir, de->d_name);
    unlink(path);
  }
  closedir(d);
}

/* 1 if pid runs: exists and is not a zombie (an orphan whose parent died
 * waits for init to reap it, and init may take its time). */
static int is_running(pid_t pid) {
  char path[64], buf[256], *p;

  if (kill(pid, 0) != 0)
    return 0;
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  slurp(path, buf, sizeof(buf));
  p = strrchr(buf, ')');
  return p == NULL || p[1] != ' ' || p[2] != 'Z';
}

/* Every rank that recorded its pid must be gone, within 2 s: a rank the
 * kernel kills when its daemon dies (PR_SET_PDEATHSIG) may still be
 * exiting when minimprun, told by the closed connection, already has. */
static void assert_no_rank_left(void) {
  DIR *d = opendir(piddir);
  struct dirent *de;
  int checked = 0, left = 0;

  assert_non_null(d);
  while ((de = readdir(d)) != NULL) {
    char path[600], buf[32];
    pid_t pid;
    int waited;
    if (de->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "%s/%s", piddir, de->d_name);
    slurp(path, buf, sizeof(buf));
    pid = (pid_t)atoi(buf);
    assert_true(pid > 0);
    for (waited = 0; waited < 200 && is_running(pid); waited++)
      usleep(10000);
    if (is_running(pid)) {
      fprintf(stderr, "rank %s (pid %d) is still running\n", de->d_name,
              (int)pid);
      kill(pid, SIGKILL);
      left++;
    }
    checked++;
  }
  closedir(d);
  assert_int_equal(left, 0);
  assert_true(checked > 0);
}

/* Runs minimprun with `args` (NULL-terminated), stdin from `input`. */
static void launch(run_t *r, const char *input, const char *const *args) {
  char out[64], err[64], in[64];
  const char *argv[64];
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int n = 0, st;
  double t0;

  clear_piddir();
  snprintf(out, sizeof(out), "%s.out", piddir);
  snprintf(err, sizeof(err), "%s.err", piddir);
  snprintf(in, sizeof(in), "%s.in", piddir);
  {
    FILE *f = fopen(in, "w");
    assert_non_null(f);
    if (input != NULL)
      fputs(input, f);
    fclose(f);
  }
  argv[n++] = minimprun;
  while (*args != NULL)
    argv[n++] = *args++;
  argv[n] = NULL;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  t0 = now();
  assert_int_equal(
      posix_spawn(&pid, minimprun, &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  r->seconds = now() - t0;
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  slurp(out, r->out, sizeof(r->out));
  slurp(err, r->err, sizeof(r->err));
}

#define LAUNCH(r, input, ...)                                                  \
  do {                                                                         \
    const char *const a_[] = {__VA_ARGS__, NULL};                              \
    launch((r), (input), a_);                                                  \
  } while (0)

static int count_lines(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

static void test_launch_all_ok(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "-n", "4", helper, "ok");
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out, "hello from"), 4);
  assert_non_null(strstr(r.out, "hello from 3 of 4"));
  assert_no_rank_left();
}

static void test_launch_rank_exit_code_stops_job(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "-n", "4", helper, "exit", "2", "7");
  assert_int_equal(r.status, 7);
  assert_non_null(strstr(r.err, "rank 2"));
  assert_non_null(strstr(r.err, "code 7"));
  /* The others were stopped promptly, not left to their wait. */
  assert_true(r.seconds < 5.0);
  assert_no_rank_left();
}

static void test_launch_rank_signal_stops_job(void **state) {
  run_t r;
  (void)state;

  /* SIGUSR1: sanitizers intercept SIGSEGV and exit instead. */
  LAUNCH(&r, NULL, "-n", "3", helper, "signal", "1", "10");
  assert_int_equal(r.status, 128 + 10);
  assert_non_null(strstr(r.err, "rank 1"));
  assert_non_null(strstr(r.err, "signal 10"));
  assert_true(r.seconds < 5.0);
  assert_no_rank_left();
}

/* Rank 1 stops; rank 0 notices (1 s peer timeout) and tells minimprun,
 * whose word reaches rank 2 (30 s timeout) at once: it reports the loss
 * itself and exits, instead of being killed 1.5 s after the stop began
 * with nothing said. */
static void test_launch_survivors_learn_loss_from_launcher(void **state) {
  run_t r;
  (void)state;

  setenv("MINIMP_PEER_TIMEOUT_MS", "30000", 1);
  LAUNCH(&r, NULL, "-n", "3", helper, "stopped", "1");
  unsetenv("MINIMP_PEER_TIMEOUT_MS");
  assert_true(r.status != 0);
  if (strstr(r.out, "rank 0 saw MMP_EPEERLOST") == NULL ||
      strstr(r.out, "rank 2 saw MMP_EPEERLOST") == NULL)
    fail_msg("a survivor did not report the loss:\nstdout:\n%s\nstderr:\n%s",
             r.out, r.err);
  assert_non_null(strstr(r.err, "rank 1"));
  assert_true(r.seconds < 20.0);
  assert_no_rank_left();
}

static void test_launch_abort_code(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "-n", "3", helper, "abort", "0", "5");
  assert_int_equal(r.status, 5);
  assert_non_null(strstr(r.err, "rank 0"));
  /* The call is named once, with its code, and nothing after it. */
  assert_non_null(strstr(r.err, "called mmp_abort(5)\n"));
  assert_null(strstr(r.err, "mmp_abort called"));
  assert_true(r.seconds < 5.0);
  assert_no_rank_left();
}

static void test_launch_exit_without_finalize(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "-n", "2", helper, "nofinalize", "1");
  assert_int_not_equal(r.status, 0);
  assert_non_null(strstr(r.err, "rank 1"));
  assert_non_null(strstr(r.err, "mmp_finalize"));
  assert_no_rank_left();
}

static void test_launch_timeout_is_110(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "--timeout", "1", "-n", "3", helper, "hang");
  assert_int_equal(r.status, 110);
  assert_non_null(strstr(r.err, "timed out"));
  assert_true(r.seconds >= 1.0 && r.seconds < 4.0);
  assert_no_rank_left();
}

static void test_launch_usage_errors(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, helper, "ok"); /* no -n */
  assert_int_equal(r.status, 2);
  LAUNCH(&r, NULL, "-n", "zero", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_true(strlen(r.err) > 0);
  LAUNCH(&r, NULL, "-n", "0", helper, "ok");
  assert_int_equal(r.status, 2);
  LAUNCH(&r, NULL, "--no-such-option", "-n", "1", helper, "ok");
  assert_int_equal(r.status, 2);
  LAUNCH(&r, NULL, "-n", "2", "/nonexistent/program");
  assert_int_not_equal(r.status, 0);
  assert_non_null(strstr(r.err, "/nonexistent/program"));
}

static void test_launch_environment(void **state) {
  run_t r;
  (void)state;

  setenv("MMP_TEST_FWD", "forwarded", 1);
  LAUNCH(&r, NULL, "-x", "MMP_TEST_SET=given", "-x", "MMP_TEST_FWD", "-n", "3",
         helper, "env", "MINIMP_RANK", "MINIMP_SIZE", "MINIMP_LOCAL_RANK",
         "MMP_TEST_SET", "MMP_TEST_FWD");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "2 MINIMP_RANK=2"));
  assert_non_null(strstr(r.out, "0 MINIMP_SIZE=3"));
  assert_non_null(strstr(r.out, "1 MINIMP_LOCAL_RANK=1"));
  assert_int_equal(count_lines(r.out, "MMP_TEST_SET=given"), 3);
  assert_int_equal(count_lines(r.out, "MMP_TEST_FWD=forwarded"), 3);
}

static void test_launch_tag_output_and_stdin(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, "first\nsecond\n", "--tag-output", "-n", "2", helper, "stdin");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "[0] got: first\n"));
  assert_non_null(strstr(r.out, "[0] got: second\n"));
  assert_null(strstr(r.out, "[1] got"));
}

/* The line naming `addr` (after a prefix such as "garbage ") in out. */
static void addr_after(const char *out, const char *prefix, char *addr,
                       size_t cap) {
  const char *p = strstr(out, prefix);
  size_t n;

  assert_non_null(p);
  p += strlen(prefix);
  n = strcspn(p, "\n");
  assert_true(n > 0 && n < cap);
  memcpy(addr, p, n);
  addr[n] = '\0';
}

/* At the default verbosity, connections the rendezvous rejects (garbage
 * instead of HELLO, a PROOF under a wrong key) are logged with the peer's
 * address; a flood of 200 makes 10 lines and one
 * that counts the rest, and the job is unharmed. */
static void test_launch_rendezvous_rejections_are_logged(void **state) {
  char garbage[64], wrongkey[64], want[160];
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "-n", "2", helper, "attackboot", "200");
  assert_int_equal(r.status, 0);
  addr_after(r.out, "garbage ", garbage, sizeof(garbage));
  addr_after(r.out, "wrongkey ", wrongkey, sizeof(wrongkey));
  snprintf(want, sizeof(want), "rejected connection from %s: ", garbage);
  assert_non_null(strstr(r.err, want));
  snprintf(want, sizeof(want),
           "rejected connection from %s: wrong job key (the client's proof "
           "does not verify)",
           wrongkey);
  assert_non_null(strstr(r.err, want));
  assert_int_equal(count_lines(r.err, "rejected connection from"), 10);
  assert_non_null(
      strstr(r.err, "192 more connections rejected after the last 10 logged"));
  assert_int_equal(count_lines(r.err, "\n"), 11);
  assert_no_rank_left();
}

/* ---- Hosts ------------------------------------------------------------- */

static char agent[600]; /* "LAUNCH_HELPER agent" */

static void test_launch_host_list_places_ranks(void **state) {
  run_t r;
  (void)state;

  /* No -n: every slot gets a rank. Both names are this machine. */
  LAUNCH(&r, NULL, "--host", "localhost:2,127.0.0.1:2", helper, "env",
         "MINIMP_RANK", "MINIMP_LOCAL_RANK", "MINIMP_LOCAL_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out, "MINIMP_RANK="), 4);
  assert_non_null(strstr(r.out, "0 MINIMP_LOCAL_RANK=0"));
  assert_non_null(strstr(r.out, "1 MINIMP_LOCAL_RANK=1"));
  assert_non_null(strstr(r.out, "2 MINIMP_LOCAL_RANK=0"));
  assert_non_null(strstr(r.out, "3 MINIMP_LOCAL_RANK=1"));
  assert_int_equal(count_lines(r.out, "MINIMP_LOCAL_SIZE=2"), 4);
  assert_no_rank_left();
  /* Fewer ranks than slots: the first host only. */
  LAUNCH(&r, NULL, "-H", "localhost:2,127.0.0.1:2", "-n", "2", helper, "env",
         "MINIMP_LOCAL_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out, "MINIMP_LOCAL_SIZE=2"), 2);
}

static void test_launch_map_by_node(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "--host", "localhost:2,127.0.0.1:2", "--map-by", "node",
         "-n", "4", helper, "env", "MINIMP_LOCAL_RANK");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "0 MINIMP_LOCAL_RANK=0"));
  assert_non_null(strstr(r.out, "1 MINIMP_LOCAL_RANK=0"));
  assert_non_null(strstr(r.out, "2 MINIMP_LOCAL_RANK=1"));
  assert_non_null(strstr(r.out, "3 MINIMP_LOCAL_RANK=1"));
  LAUNCH(&r, NULL, "--map-by", "diagonal", "-n", "1", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "bad --map-by 'diagonal'"));
}

/* Writes `text` to the hostfile at `path`. */
static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");

  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_launch_hostfile(void **state) {
  char path[80], want[160];
  run_t r;
  (void)state;

  snprintf(path, sizeof(path), "%s.hosts", piddir);
  write_file(path, "# two local names\nlocalhost slots=2\n"
                   "127.0.0.1 slots=1 # trailing\n\n");
  LAUNCH(&r, NULL, "--hostfile", path, helper, "env", "MINIMP_LOCAL_SIZE");
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out, "MINIMP_LOCAL_SIZE=2"), 2);
  assert_int_equal(count_lines(r.out, "MINIMP_LOCAL_SIZE=1"), 1);
  /* Errors name the file and the line, and exit 2. */
  write_file(path, "localhost\n# fine\nlocalhost slot=2\n");
  LAUNCH(&r, NULL, "--machinefile", path, helper, "ok");
  assert_int_equal(r.status, 2);
  snprintf(want, sizeof(want),
           "minimprun: %s:3: expected 'slots=N', got "
           "'slot=2'",
           path);
  assert_non_null(strstr(r.err, want));
  write_file(path, "localhost slots=0\n");
  LAUNCH(&r, NULL, "--hostfile", path, helper, "ok");
  assert_int_equal(r.status, 2);
  snprintf(want, sizeof(want), "%s:1: bad slot count '0'", path);
  assert_non_null(strstr(r.err, want));
  write_file(path, "# nobody\n");
  LAUNCH(&r, NULL, "--hostfile", path, helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "no hosts listed"));
  unlink(path);
  LAUNCH(&r, NULL, "--hostfile", path, helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "cannot read hostfile"));
  LAUNCH(&r, NULL, "--hostfile", path, "--host", "localhost", helper, "ok");
  assert_int_equal(r.status, 2);
}

static void test_launch_oversubscription(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "--host", "localhost", "-n", "2", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "not enough slots"));
  assert_non_null(strstr(r.err, "--oversubscribe"));
  LAUNCH(&r, NULL, "--host", "localhost", "-n", "2", "--oversubscribe", helper,
         "env", "MINIMP_LOCAL_RANK");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "1 MINIMP_LOCAL_RANK=1"));
  LAUNCH(&r, NULL, "--host", "localhost,,x", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "empty entry"));
}

/* ---- Remote hosts through daemons (scripted_job as the agent) ---------- */

#define REMOTE(r, input, ...)                                                  \
  LAUNCH((r), (input), "--agent", agent, "--iface", "lo", __VA_ARGS__)

/* -x cannot set what minimprun sets itself: a rank would get two entries
 * of the name (getenv sees -x's, so MINIMP_RANK=7 named every rank 7), or
 * a MINIMP_SIZE that is not the job's. The command line is refused before
 * anything starts, here or on another host. */
static void test_launch_x_refuses_launcher_variables(void **state) {
  static const char *const names[] = {"MINIMP_RANK",       "MINIMP_SIZE",
                                      "MINIMP_LOCAL_RANK", "MINIMP_LOCAL_SIZE",
                                      "MINIMP_BOOT_ADDR",  "MINIMP_JOB_KEY"};
  char set[64], msg[160];
  run_t r;
  (void)state;

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(set, sizeof(set), "%s=7", names[i]);
    snprintf(msg, sizeof(msg),
             "minimprun: cannot set %s with -x: minimprun sets it for every "
             "rank\n",
             names[i]);
    LAUNCH(&r, NULL, "-x", set, "-n", "2", helper, "ok");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, msg));
    assert_string_equal(r.out, "");
    /* "-x NAME", from minimprun's environment, alike. */
    LAUNCH(&r, NULL, "-n", "2", "-x", names[i], helper, "ok");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, msg));
    assert_string_equal(r.out, "");
  }
  REMOTE(&r, NULL, "-x", "MINIMP_RANK=7", "--host", "nodeA,nodeB", helper,
         "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "minimprun: cannot set MINIMP_RANK with -x"));
  assert_string_equal(r.out, "");
  /* MINIMP_IFACE is minimprun's only with --iface (REMOTE gives it). */
  REMOTE(&r, NULL, "-x", "MINIMP_IFACE=lo", "--host", "nodeA", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "minimprun: cannot set MINIMP_IFACE with -x: "
                                "minimprun sets it from --iface\n"));
  assert_string_equal(r.out, "");
}

/* The n ranks printed `entry` ("NAME=VALUE") once each, and no other
 * entry of NAME. */
static void assert_once_per_rank(const char *out, const char *entry, int n) {
  char name[64];

  snprintf(name, sizeof(name), "%.*s", (int)strcspn(entry, "=") + 1, entry);
  assert_int_equal(count_lines(out, name), n);
  assert_int_equal(count_lines(out, entry), n);
}

/* Any other -x variable reaches every rank, local or remote, once (the last
 * -x of a name wins), and the launcher's own variables appear once each
 * even when minimprun's environment has them (minimprun run by a rank).
 * MINIMP_IFACE is an ordinary variable without --iface. */
static void test_launch_x_reaches_every_rank_once(void **state) {
  char size[32], last[32];
  run_t r;
  (void)state;

  setenv("MINIMP_RANK", "5", 1);
  setenv("MINIMP_SIZE", "9", 1);
  for (int n = 2; n <= 3; n++) {
    if (n == 2)
      LAUNCH(&r, NULL, "-x", "MMP_TEST_SET=first", "-x", "MMP_TEST_SET=given",
             "-x", "MINIMP_IFACE=lo", "-n", "2", helper, "env", "MMP_TEST_SET",
             "MINIMP_IFACE", "MINIMP_RANK", "MINIMP_SIZE");
    else /* through the daemons: one local rank, two remote ones */
      REMOTE(&r, NULL, "-x", "MMP_TEST_SET=first", "-x", "MMP_TEST_SET=given",
             "--host", "localhost,nodeA,nodeB", helper, "env", "MMP_TEST_SET",
             "MINIMP_IFACE", "MINIMP_RANK", "MINIMP_SIZE");
    assert_int_equal(r.status, 0);
    assert_once_per_rank(r.out, "MMP_TEST_SET=given", n);
    assert_once_per_rank(r.out, "MINIMP_IFACE=lo", n);
    snprintf(size, sizeof(size), "MINIMP_SIZE=%d", n);
    assert_once_per_rank(r.out, size, n);
    assert_int_equal(count_lines(r.out, "MINIMP_RANK="), n);
    snprintf(last, sizeof(last), "%d MINIMP_RANK=%d\n", n - 1, n - 1);
    assert_non_null(strstr(r.out, last));
  }
  unsetenv("MINIMP_RANK");
  unsetenv("MINIMP_SIZE");
}

/* --encrypt gives every rank MINIMP_ENCRYPT=1, here and through the
 * daemons, and the job runs sealed; a remote rank's key comes from its
 * daemon, once. -x cannot undo it. */
static void test_launch_encrypt_reaches_every_rank(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "--encrypt", "-n", "2", helper, "env", "MINIMP_ENCRYPT");
  assert_int_equal(r.status, 0);
  assert_once_per_rank(r.out, "MINIMP_ENCRYPT=1", 2);
  REMOTE(&r, NULL, "--encrypt", "--host", "localhost,nodeA,nodeB", helper,
         "env", "MINIMP_ENCRYPT", "MINIMP_JOB_KEY");
  assert_int_equal(r.status, 0);
  assert_once_per_rank(r.out, "MINIMP_ENCRYPT=1", 3);
  assert_int_equal(count_lines(r.out, "MINIMP_JOB_KEY="), 3);
  assert_null(strstr(r.out, "MINIMP_JOB_KEY=(unset)"));
  LAUNCH(&r, NULL, "--encrypt", "-n", "3", helper, "ok");
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out, "hello from"), 3);
  LAUNCH(&r, NULL, "--encrypt", "-x", "MINIMP_ENCRYPT=0", "-n", "2", helper,
         "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "minimprun: cannot set MINIMP_ENCRYPT with "
                                "-x: minimprun sets it from --encrypt\n"));
}

static void test_launch_remote_places_ranks_per_host(void **state) {
  run_t r;
  (void)state;

  REMOTE(&r, NULL, "--host", "nodeA:2,nodeB:2", helper, "env", "MMP_TEST_HOST",
         "MINIMP_LOCAL_RANK", "MINIMP_LOCAL_SIZE", "MINIMP_IFACE");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "0 MMP_TEST_HOST=nodeA"));
  assert_non_null(strstr(r.out, "1 MMP_TEST_HOST=nodeA"));
  assert_non_null(strstr(r.out, "2 MMP_TEST_HOST=nodeB"));
  assert_non_null(strstr(r.out, "3 MMP_TEST_HOST=nodeB"));
  assert_non_null(strstr(r.out, "3 MINIMP_LOCAL_RANK=1"));
  assert_int_equal(count_lines(r.out, "MINIMP_LOCAL_SIZE=2"), 4);
  assert_int_equal(count_lines(r.out, "MINIMP_IFACE=lo"), 4);
  assert_no_rank_left();
  /* A local host and a remote one in one job, round-robin. */
  REMOTE(&r, NULL, "--host", "localhost:2,nodeB:2", "--map-by", "node", helper,
         "env", "MMP_TEST_HOST");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "0 MMP_TEST_HOST=(unset)"));
  assert_non_null(strstr(r.out, "1 MMP_TEST_HOST=nodeB"));
  assert_non_null(strstr(r.out, "2 MMP_TEST_HOST=(unset)"));
  assert_non_null(strstr(r.out, "3 MMP_TEST_HOST=nodeB"));
}

static void test_launch_remote_failure_stops_every_host(void **state) {
  run_t r;
  (void)state;

  REMOTE(&r, NULL, "--host", "nodeA:2,nodeB:2", helper, "exit", "2", "7");
  assert_int_equal(r.status, 7);
  assert_non_null(strstr(r.err, "rank 2 (pid "));
  assert_non_null(strstr(r.err, " on nodeB) exited with code 7"));
  assert_true(r.seconds < 5.0);
  assert_no_rank_left();
  REMOTE(&r, NULL, "--host", "nodeA,nodeB,nodeC", helper, "signal", "1", "10");
  assert_int_equal(r.status, 128 + 10);
  assert_non_null(strstr(r.err, "on nodeB) killed by signal 10"));
  assert_no_rank_left();
  REMOTE(&r, NULL, "--host", "nodeA,nodeB", helper, "abort", "1", "5");
  assert_int_equal(r.status, 5);
  assert_no_rank_left();
  REMOTE(&r, NULL, "--host", "nodeA,nodeB", "/nonexistent/program");
  assert_int_equal(r.status, 127);
  assert_non_null(strstr(r.err, "cannot start '/nonexistent/program' on host "
                                "node"));
}

static void test_launch_remote_timeout_is_110(void **state) {
  run_t r;
  (void)state;

  REMOTE(&r, NULL, "--timeout", "1", "--host", "nodeA:2,nodeB:2", helper,
         "hang");
  assert_int_equal(r.status, 110);
  assert_non_null(strstr(r.err, "timed out"));
  assert_true(r.seconds >= 1.0 && r.seconds < 4.0);
  assert_no_rank_left();
}

static void test_launch_remote_lost_daemon(void **state) {
  run_t r;
  (void)state;

  /* Rank 2 stops its daemon; the daemon stops its ranks first. */
  REMOTE(&r, NULL, "--host", "nodeA:2,nodeB:2", helper, "killparent", "2",
         "15");
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "minimprun: lost contact with host nodeB "
                                "(ranks 2, 3): its daemon received SIGTERM"));
  assert_true(r.seconds < 5.0);
  assert_no_rank_left();
  /* SIGKILL: the daemon cannot act, the kernel stops its ranks. */
  REMOTE(&r, NULL, "--host", "nodeA:2,nodeB:2", helper, "killparent", "3", "9");
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "minimprun: lost contact with host nodeB "
                                "(ranks 2, 3): connection closed"));
  assert_true(r.seconds < 5.0);
  assert_no_rank_left();
}

static void test_launch_remote_agent_failures(void **state) {
  char launcher[80];
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "--agent", "false", "--iface", "lo", "--host", "nodeA",
         helper, "ok");
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "minimprun: cannot start on host nodeA: agent "
                                "'false' exited with code 1"));
  LAUNCH(&r, NULL, "--agent", "/nonexistent/agent", "--iface", "lo", "--host",
         "nodeA", helper, "ok");
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "cannot run agent '/nonexistent/agent'"));
  snprintf(launcher, sizeof(launcher), "%s.none", piddir);
  REMOTE(&r, NULL, "--launcher", launcher, "--host", "nodeA", helper, "ok");
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "exited with code 127 (is minimprun at"));
  /* A name that resolves nowhere needs --iface to choose our address. */
  LAUNCH(&r, NULL, "--agent", agent, "--host", "nodeA.invalid", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "give --iface"));
  LAUNCH(&r, NULL, "--agent", agent, "--iface", "no-such-iface0", "--host",
         "nodeA", helper, "ok");
  assert_int_equal(r.status, 2);
  assert_non_null(strstr(r.err, "--iface no-such-iface0"));
}

static void test_launch_remote_stdin_tags_and_key(void **state) {
  run_t r;
  (void)state;

  REMOTE(&r, "first\nsecond\n", "--tag-output", "--host", "nodeA,nodeB", helper,
         "stdin");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "[0] got: first\n[0] got: second\n"));
  assert_null(strstr(r.out, "[1] got"));
  /* The key reaches the daemons on their stdin, not their command line. */
  REMOTE(&r, NULL, "--host", "nodeA:2,nodeB", helper, "keycheck");
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out, "key hidden"), 3);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_all_ok),
      cmocka_unit_test(test_launch_rank_exit_code_stops_job),
      cmocka_unit_test(test_launch_rank_signal_stops_job),
      cmocka_unit_test(test_launch_abort_code),
      cmocka_unit_test(test_launch_survivors_learn_loss_from_launcher),
      cmocka_unit_test(test_launch_exit_without_finalize),
      cmocka_unit_test(test_launch_timeout_is_110),
      cmocka_unit_test(test_launch_usage_errors),
      cmocka_unit_test(test_launch_environment),
      cmocka_unit_test(test_launch_tag_output_and_stdin),
      cmocka_unit_test(test_launch_rendezvous_rejections_are_logged),
      cmocka_unit_test(test_launch_host_list_places_ranks),
      cmocka_unit_test(test_launch_map_by_node),
      cmocka_unit_test(test_launch_hostfile),
      cmocka_unit_test(test_launch_oversubscription),
      cmocka_unit_test(test_launch_remote_places_ranks_per_host),
      cmocka_unit_test(test_launch_remote_failure_stops_every_host),
      cmocka_unit_test(test_launch_remote_timeout_is_110),
      cmocka_unit_test(test_launch_remote_lost_daemon),
      cmocka_unit_test(test_launch_remote_agent_failures),
      cmocka_unit_test(test_launch_remote_stdin_tags_and_key),
      cmocka_unit_test(test_launch_x_refuses_launcher_variables),
      cmocka_unit_test(test_launch_x_reaches_every_rank_once),
      cmocka_unit_test(test_launch_encrypt_reaches_every_rank),
  };
  int rc;

  if (argc != 3) {
    fprintf(stderr, "usage: %s MINIMPRUN LAUNCH_HELPER\n", argv[0]);
    return 2;
  }
  minimprun = argv[1];
  helper = argv[2];
  snprintf(agent, sizeof(agent), "%s agent", helper);
  if (mkdtemp(piddir) == NULL)
    return 1;
  setenv("TEST_PIDDIR", piddir, 1);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  clear_piddir();
  rmdir(piddir);
  for (const char *ext = ".out"; ext != NULL;
       ext = strcmp(ext, ".out") == 0   ? ".err"
             : strcmp(ext, ".err") == 0 ? ".in"
                                        : NULL) {
    char path[64];
    snprintf(path, sizeof(path), "%s%s", piddir, ext);
    unlink(path);
  }
  return rc;
}
