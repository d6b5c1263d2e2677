/* SPDX-License-Identifier: MIT */
/*
 * Helpers of minimprun and its daemon (see common.h): messages, error
 * texts, environment merging, spawning a rank in its own process group, and
 * signalling it.
 */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"

static const char *say_prefix = "minimprun";

void mmp__say_prefix(const char *prefix) {
  say_prefix = prefix;
}

void mmp__say(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  size_t n;

  /* One byte stays free for the newline. */
  snprintf(line, sizeof(line) - 1, "%s: ", say_prefix);
  n = strlen(line);
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - 1 - n, fmt, ap);
  va_end(ap);
  n = strlen(line);
  line[n++] = '\n';
  /* One write, so the line stays whole among other writers' lines. */
  if (write(2, line, n) < 0)
    return;
}

const char *mmp__errstr(int err) {
  switch (err) {
#define COMMON_ERR_CASE(name, val, msg)                                        \
  case MMP_##name:                                                             \
    return msg;
    MMP_ERRNO_MAP(COMMON_ERR_CASE)
#undef COMMON_ERR_CASE
  default:
    return "unknown error";
  }
}

/* The length of the name part of "NAME=VALUE". */
static size_t env_name_len(const char *entry) {
  const char *eq = strchr(entry, '=');
  return eq != NULL ? (size_t)(eq - entry) : strlen(entry);
}

int mmp__env_sets(char *const *set, size_t n, const char *entry) {
  size_t len = env_name_len(entry), i;

  for (i = 0; i < n; i++)
    if (strncmp(set[i], entry, len) == 0 && set[i][len] == '=')
      return 1;
  return 0;
}

char **mmp__env_merge(char *const *base, char *const *add1, size_t n1,
                      char *const *add2, size_t n2) {
  size_t nbase = 0, i = 0, k;
  char **env;

  while (base != NULL && base[nbase] != NULL)
    nbase++;
  env = malloc((nbase + n1 + n2 + 1) * sizeof(*env));
  if (env == NULL)
    return NULL;
  for (k = 0; k < nbase; k++)
    if (!mmp__env_sets(add1, n1, base[k]) && !mmp__env_sets(add2, n2, base[k]))
      env[i++] = base[k];
  for (k = 0; k < n1; k++)
    env[i++] = add1[k];
  for (k = 0; k < n2; k++)
    env[i++] = add2[k];
  env[i] = NULL;
  return env;
}

int mmp__spawn(uv_loop_t *loop, uv_process_t *proc, const mmp__spawn_t *s) {
  uv_process_options_t o;
  uv_stdio_container_t stdio[3];
  int k;

  memset(&o, 0, sizeof(o));
  memset(stdio, 0, sizeof(stdio));
  if (s->in_mode == MMP__STDIN_INHERIT) {
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = 0;
  } else if (s->in_mode == MMP__STDIN_PIPE) {
    stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    stdio[0].data.stream = (uv_stream_t *)s->in;
  } else {
    stdio[0].flags = UV_IGNORE; /* /dev/null */
  }
  for (k = 0; k < 2; k++) {
    stdio[k + 1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[k + 1].data.stream = (uv_stream_t *)s->out[k];
  }
  o.file = s->argv[0];
  o.args = s->argv;
  o.env = s->env;
  o.cwd = s->cwd;
  o.stdio = stdio;
  o.stdio_count = 3;
  o.exit_cb = s->exit_cb;
  /* A session (and process group) of its own, so signals can reach all
   * that the process started, and a terminal's ^C reaches only us. */
  o.flags = UV_PROCESS_DETACHED;
  if (s->cpus != NULL) {
    /* The child inherits the spawning thread's CPU set, so binding this
     * thread around the fork binds the rank before it runs anything. */
    cpu_set_t saved;
    int rc, bound = pthread_getaffinity_np(pthread_self(), sizeof(saved),
                                           &saved) == 0 &&
                    pthread_setaffinity_np(pthread_self(), sizeof(*s->cpus),
                                           s->cpus) == 0;
    rc = uv_spawn(loop, proc, &o);
    if (bound)
      pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
    return rc;
  }
  return uv_spawn(loop, proc, &o);
}

void mmp__kill_group(int pid, int sig) {
  if (pid <= 0)
    return;
  if (kill(-pid, sig) != 0)
    kill(pid, sig);
}

int mmp__spawn_exit_code(int err) {
  if (err == UV_ENOENT)
    return 127;
  if (err == UV_EACCES || err == UV_EPERM || err == -ENOEXEC)
    return 126;
  return 1;
}

const char *mmp__signame(int sig) {
  switch (sig) {
  case SIGHUP:
    return "SIGHUP";
  case SIGINT:
    return "SIGINT";
  case SIGQUIT:
    return "SIGQUIT";
  case SIGILL:
    return "SIGILL";
  case SIGTRAP:
    return "SIGTRAP";
  case SIGABRT:
    return "SIGABRT";
  case SIGBUS:
    return "SIGBUS";
  case SIGFPE:
    return "SIGFPE";
  case SIGKILL:
    return "SIGKILL";
  case SIGUSR1:
    return "SIGUSR1";
  case SIGSEGV:
    return "SIGSEGV";
  case SIGUSR2:
    return "SIGUSR2";
  case SIGPIPE:
    return "SIGPIPE";
  case SIGALRM:
    return "SIGALRM";
  case SIGTERM:
    return "SIGTERM";
  case SIGXCPU:
    return "SIGXCPU";
  case SIGXFSZ:
    return "SIGXFSZ";
  case SIGSYS:
    return "SIGSYS";
  default:
    return "?";
  }
}
