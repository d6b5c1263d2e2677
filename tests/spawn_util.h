/* SPDX-License-Identifier: MIT */
/*
 * Running a command from a test: capture its output, bound its run time,
 * and read its exit status. Header-only; used by the tests that drive
 * minimprun and the emulated cluster from outside.
 */
#ifndef MMP_TESTS_SPAWN_UTIL_H
#define MMP_TESTS_SPAWN_UTIL_H

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

typedef struct spawn_result_s {
  int status;     /* exit code; 128+signal if killed; -1 if it timed out */
  double seconds; /* wall time */
  char out[65536];
  char err[65536];
} spawn_result_t;

static inline double spawn_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void spawn_slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n;

  buf[0] = '\0';
  if (f == NULL)
    return;
  n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/*
 * Runs argv[0] (a path) with argv, stdin from /dev/null, and waits at most
 * `timeout_s` seconds (then SIGKILL, status -1). Returns 0, or -1 if it
 * could not be started.
 */
static inline int spawn_run(char *const argv[], double timeout_s,
                            spawn_result_t *r) {
  char out[] = "/tmp/mmp-spawn-out-XXXXXX", err[] = "/tmp/mmp-spawn-err-XXXXXX";
  int fo = mkstemp(out), fe = mkstemp(err), st = 0;
  posix_spawn_file_actions_t fa;
  pid_t pid, w = 0;
  double t0;

  if (fo < 0 || fe < 0)
    return -1;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fo, 1);
  posix_spawn_file_actions_adddup2(&fa, fe, 2);
  t0 = spawn_now();
  if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    return -1;
  }
  posix_spawn_file_actions_destroy(&fa);
  while ((w = waitpid(pid, &st, WNOHANG)) == 0 && spawn_now() - t0 < timeout_s)
    usleep(10000);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    r->status = -1;
  } else {
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  r->seconds = spawn_now() - t0;
  close(fo);
  close(fe);
  spawn_slurp(out, r->out, sizeof(r->out));
  spawn_slurp(err, r->err, sizeof(r->err));
  unlink(out);
  unlink(err);
  return 0;
}

/* How many times `needle` occurs in `s`. */
static inline int spawn_count(const char *s, const char *needle) {
  int n = 0;

  for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/*
 * Writes DIR/srun, a stand-in for Slurm's srun: it runs the shell command
 * `note` (which sees srun's arguments as "$@"), skips srun's options up
 * to "--nodelist HOST", and execs `runner HOST COMMAND...` (runner being,
 * say, "ip netns exec"). Returns 0 or -1.
 */
static inline int spawn_srun_stub(const char *dir, const char *note,
                                  const char *runner) {
  char path[512];
  FILE *f;

  snprintf(path, sizeof(path), "%s/srun", dir);
  f = fopen(path, "w");
  if (f == NULL)
    return -1;
  fprintf(f,
          "#!/bin/sh\n"
          "%s\n"
          "while [ \"$1\" != --nodelist ]; do shift; done\n"
          "host=$2; shift 2\n"
          "exec %s \"$host\" \"$@\"\n",
          note, runner);
  return fclose(f) == 0 && chmod(path, 0755) == 0 ? 0 : -1;
}

/* Runs a shell command line; returns its exit status (or -1). */
static inline int spawn_sh(const char *cmd) {
  int st = system(cmd);
  return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif /* MMP_TESTS_SPAWN_UTIL_H */
