/* SPDX-License-Identifier: MIT */
/*
 * What minimprun and its per-host daemon (minimprun --daemon) both need:
 * one-line messages on stderr and the texts of error codes, merging
 * environments, starting a rank with libuv in a process group of its own,
 * and signalling that group. Keeping them here makes a rank started on a
 * remote host behave like one started on this machine.
 */
#ifndef MMP_LAUNCHER_COMMON_H
#define MMP_LAUNCHER_COMMON_H

#include <sched.h>
#include <stddef.h>
#include <uv.h>

/* minimprun's version, "MAJOR.MINOR.PATCH", which a host's daemon must
 * share with minimprun (its HELLO carries it). A test build defines it to
 * play another version. */
#ifndef MMP__LAUNCHER_VERSION
#define MMP__LAUNCHER_STR_(x) #x
#define MMP__LAUNCHER_STR(x) MMP__LAUNCHER_STR_(x)
#define MMP__LAUNCHER_VERSION                                                  \
  MMP__LAUNCHER_STR(MMP_VERSION_MAJOR)                                         \
  "." MMP__LAUNCHER_STR(MMP_VERSION_MINOR) "." MMP__LAUNCHER_STR(              \
      MMP_VERSION_PATCH)
#endif

/* Sets what comes before ": " in every message (default "minimprun"). The
 * string is borrowed and must outlive every later message. */
void mmp__say_prefix(const char *prefix);

/* Writes "PREFIX: message\n" to stderr in one write, so that it never mixes
 * with other writers' lines. */
void mmp__say(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The text of an MMP_E* code (from the header's X-macro list: the launcher
 * does not link libminimp, which owns mmp_strerror()); "unknown error"
 * for any other value. */
const char *mmp__errstr(int err);

/* 1 if `entry` ("NAME=VALUE" or "NAME") names a variable that one of the
 * `n` entries of `set` ("NAME=VALUE") sets. */
int mmp__env_sets(char *const *set, size_t n, const char *entry);

/*
 * Builds a rank's environment: every entry of `base` that none of `add1`
 * (n1 entries) or `add2` (n2) sets, then add1, then add2. Returns a
 * NULL-terminated array of borrowed strings that the caller frees (only
 * the array), or NULL without memory.
 */
char **mmp__env_merge(char *const *base, char *const *add1, size_t n1,
                      char *const *add2, size_t n2);

/* How a rank's standard input is connected. */
typedef enum mmp__stdin_mode {
  MMP__STDIN_NULL = 0,    /* /dev/null */
  MMP__STDIN_INHERIT = 1, /* this process's fd 0 */
  MMP__STDIN_PIPE = 2     /* `in`, which the caller writes to */
} mmp__stdin_mode_t;

typedef struct mmp__spawn_s {
  char **argv;     /* argv[0] is the program, found on PATH like execvp */
  char **env;      /* NULL: this process's environment */
  const char *cwd; /* NULL: this process's directory */
  mmp__stdin_mode_t in_mode;
  uv_pipe_t *in;     /* MMP__STDIN_PIPE: an initialised pipe */
  uv_pipe_t *out[2]; /* initialised pipes for stdout and stderr */
  uv_exit_cb exit_cb;
  const cpu_set_t *cpus; /* bind to these CPUs (bind.h); NULL: do not */
} mmp__spawn_t;

/*
 * Loop context. Starts a process in a session and process group of its
 * own (so a terminal's ^C reaches only us, and a signal to the group
 * reaches all the process started), its stdout and stderr on the two
 * pipes. Returns 0 or a libuv error. The caller closes `proc` in either
 * case (libuv initialises it even when the start fails), and the pipes.
 */
int mmp__spawn(uv_loop_t *loop, uv_process_t *proc, const mmp__spawn_t *s);

/* Sends `sig` to the process group `pid` leads, or to `pid` alone if there
 * is no such group. */
void mmp__kill_group(int pid, int sig);

/* A shell-like exit code for a failed start: 127 not found, 126 not
 * executable, else 1. `err` is a libuv error. */
int mmp__spawn_exit_code(int err);

/* "SIGSEGV" for SIGSEGV; "?" for a signal it does not know. */
const char *mmp__signame(int sig);

#endif /* MMP_LAUNCHER_COMMON_H */
