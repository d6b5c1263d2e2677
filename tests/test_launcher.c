/* SPDX-License-Identifier: MIT */
/*
 * minimprun on this machine: exit codes and messages when one rank fails
 * (by exit code, by signal, by mmp_abort, by leaving without
 * mmp_finalize), the timeout, usage errors, the exported environment,
 * output forwarding, and that no rank is left running afterwards.
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

/* Every rank that recorded its pid must be gone. */
static void assert_no_rank_left(void) {
  DIR *d = opendir(piddir);
  struct dirent *de;
  int checked = 0;

  assert_non_null(d);
  while ((de = readdir(d)) != NULL) {
    char path[600], buf[32];
    pid_t pid;
    if (de->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "%s/%s", piddir, de->d_name);
    slurp(path, buf, sizeof(buf));
    pid = (pid_t)atoi(buf);
    assert_true(pid > 0);
    errno = 0;
    if (kill(pid, 0) == 0) {
      fprintf(stderr, "rank %s (pid %d) is still running\n", de->d_name,
              (int)pid);
      kill(pid, SIGKILL);
      fail();
    }
    assert_int_equal(errno, ESRCH);
    checked++;
  }
  closedir(d);
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

static void test_launch_abort_code(void **state) {
  run_t r;
  (void)state;

  LAUNCH(&r, NULL, "-n", "3", helper, "abort", "0", "5");
  assert_int_equal(r.status, 5);
  assert_non_null(strstr(r.err, "rank 0"));
  assert_non_null(strstr(r.err, "mmp_abort"));
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

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_all_ok),
      cmocka_unit_test(test_launch_rank_exit_code_stops_job),
      cmocka_unit_test(test_launch_rank_signal_stops_job),
      cmocka_unit_test(test_launch_abort_code),
      cmocka_unit_test(test_launch_exit_without_finalize),
      cmocka_unit_test(test_launch_timeout_is_110),
      cmocka_unit_test(test_launch_usage_errors),
      cmocka_unit_test(test_launch_environment),
      cmocka_unit_test(test_launch_tag_output_and_stdin),
  };
  int rc;

  if (argc != 3) {
    fprintf(stderr, "usage: %s MINIMPRUN LAUNCH_HELPER\n", argv[0]);
    return 2;
  }
  minimprun = argv[1];
  helper = argv[2];
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
