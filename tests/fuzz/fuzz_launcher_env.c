/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: minimprun's command line and what it makes of the
 * environment (launcher/run_opts.c, run_env.c, and the environment
 * merging of common.c): the options, -x NAME and -x NAME=VALUE, the
 * variables minimprun owns, and the environments a local and a remote
 * rank get.
 *
 * Input: a byte counting environment variables to set first (at most 4),
 * each a byte choosing its name and a u16-counted value; a u16-counted
 * hostfile, which --hostfile and --machinefile get whatever path they
 * name (so that no other file is ever read); then the command line,
 * NUL-separated words after "minimprun".
 *
 * Invariants:
 *  - parsing returns -1 (go on), 0 (--help, --version), 1 (memory) or 2
 *    (usage); going on means 1..65536 ranks, a program that is a word of
 *    the command line after every option, a map policy, hosts if any were
 *    asked for, and only valid -x names that minimprun does not set;
 *  - the environment shared by the ranks sets no name twice, gives each
 *    -x name the value of its last -x, and has the job's own variables;
 *  - a remote rank's environment adds every MINIMP_* variable of ours
 *    that nothing else sets, sets no name twice and leaves the per-rank
 *    three to its daemon; a local rank's (environ merged with those) sets
 *    each of its names once, the per-rank three last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "launcher/common.h"
#include "launcher/run_env.h"
#include "launcher/run_opts.h"
#include "minimp.h"

#define LE_MAX_WORDS 64

extern char **environ;

static const char *const le_env_names[] = {
    "MINIMP_LOG", "MINIMP_RANK", "MINIMP_SIZE",     "MINIMP_IFACE",
    "MINIMP_X",   "FOO",         "LD_LIBRARY_PATH", "MINIMP_JOB_KEY"};
#define LE_NENV (sizeof(le_env_names) / sizeof(le_env_names[0]))

/* Every spelling of the option that names a hostfile. */
static const char *const le_hostfile_opts[4] = {
    "--hostfile", "-hostfile", "--machinefile", "-machinefile"};

static char le_hostfile[64];       /* "/proc/self/fd/N" */
static char le_hostfile_eq[4][96]; /* "--hostfile=PATH" and the like */
static int le_hostfile_fd = -1;

/* The hostfile of every input lives in memory (a memfd): rewriting a file
 * on disk costs each execution a writeback, since ext4 flushes a file
 * truncated to zero when it is closed. */
static void le_hostfile_init(void) {
  if (le_hostfile_fd >= 0)
    return;
  le_hostfile_fd = memfd_create("launcher_env-hostfile", MFD_CLOEXEC);
  FUZZ_CHECK(le_hostfile_fd >= 0);
  snprintf(le_hostfile, sizeof(le_hostfile), "/proc/self/fd/%d",
           le_hostfile_fd);
  for (size_t h = 0; h < 4; h++)
    snprintf(le_hostfile_eq[h], sizeof(le_hostfile_eq[h]), "%s=%s",
             le_hostfile_opts[h], le_hostfile);
}

static void le_hostfile_write(const uint8_t *p, size_t n) {
  FUZZ_CHECK(ftruncate(le_hostfile_fd, 0) == 0);
  FUZZ_CHECK(n == 0 || pwrite(le_hostfile_fd, p, n, 0) == (ssize_t)n);
}

static size_t le_name_len(const char *e) {
  return strcspn(e, "=");
}

static int le_same_name(const char *a, const char *b) {
  size_t n = le_name_len(a);
  return n == le_name_len(b) && strncmp(a, b, n) == 0;
}

static int le_valid_var(const char *s) {
  size_t n = le_name_len(s), i;

  if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
    return 0;
  for (i = 0; i < n; i++)
    if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
               "0123456789_",
               s[i]) == NULL)
      return 0;
  return 1;
}

/* The entry that sets `name` in a NULL-terminated list, or NULL; checks
 * that no other entry sets it. */
static const char *le_only(char *const *env, const char *name) {
  const char *hit = NULL;
  int i;

  for (i = 0; env[i] != NULL; i++) {
    if (!le_same_name(env[i], name))
      continue;
    FUZZ_CHECK(hit == NULL);
    hit = env[i];
  }
  return hit;
}

static void le_no_twice(char *const *env) {
  int i, k;

  for (i = 0; env[i] != NULL; i++) {
    FUZZ_CHECK(strchr(env[i], '=') != NULL);
    for (k = 0; k < i; k++)
      FUZZ_CHECK(!le_same_name(env[i], env[k]));
  }
}

/* The entry of our environment that sets `name`, or NULL. */
static const char *le_environ(const char *name) {
  size_t n = le_name_len(name);
  int i;

  for (i = 0; environ[i] != NULL; i++)
    if (strncmp(environ[i], name, n) == 0 && environ[i][n] == '=')
      return environ[i];
  return NULL;
}

/* What `name` gets from -x: the entry of its last -x that gives a value,
 * itself ("-x N=V") or ours ("-x N", when N is set here); or NULL. */
static const char *le_last_export(const mmp__run_job_t *j, const char *name) {
  const char *v = NULL, *e;
  int k;

  for (k = 0; k < j->nexports; k++) {
    if (!le_same_name(j->exports[k], name))
      continue;
    e = strchr(j->exports[k], '=') != NULL ? j->exports[k]
                                           : le_environ(j->exports[k]);
    if (e != NULL)
      v = e;
  }
  return v;
}

static void le_check_parsed(mmp__run_job_t *j, char **argv, int argc) {
  int k, start = (int)(j->argv - argv);

  FUZZ_CHECK(j->n >= 1 && j->n <= 65536);
  FUZZ_CHECK(start >= 1 && start < argc && j->argv[0] != NULL);
  FUZZ_CHECK(j->argv[0][0] != '-' || strcmp(j->argv[0], "-") == 0 ||
             strcmp(argv[start - 1], "--") == 0);
  FUZZ_CHECK(j->map_policy == MMP__MAP_SLOT || j->map_policy == MMP__MAP_NODE);
  FUZZ_CHECK(!j->have_hosts || j->hl.n >= 1);
  FUZZ_CHECK(j->have_hosts || j->hl.n == 0);
  FUZZ_CHECK(j->iface == NULL || j->iface[0] != '\0');
  FUZZ_CHECK(j->agent == NULL || j->agent[strspn(j->agent, " \t\n")] != '\0');
  for (k = 0; k < j->nexports; k++) {
    FUZZ_CHECK(le_valid_var(j->exports[k]));
    FUZZ_CHECK(mmp__run_env_owned(j, j->exports[k]) == NULL);
  }
}

static void le_check_env(mmp__run_job_t *j) {
  static const char *const owned[] = {"MINIMP_SIZE",       "MINIMP_BOOT_ADDR",
                                      "MINIMP_JOB_KEY",    "MINIMP_RANK",
                                      "MINIMP_LOCAL_RANK", "MINIMP_LOCAL_SIZE"};
  mmp__run_rank_t rank;
  char vars[3][48], *v[3], **shared, **remote, **local;
  size_t nshared = 0, i;
  int k;

  FUZZ_CHECK(mmp__run_job_env(j) == 0);
  FUZZ_CHECK(j->nxenv <= j->nexports);
  shared = mmp__run_shared_env(j, &nshared);
  FUZZ_CHECK(shared != NULL && shared[nshared] == NULL);
  le_no_twice(shared);
  for (k = 0; k < j->nexports; k++) {
    const char *want = le_last_export(j, j->exports[k]);
    const char *got = le_only(shared, j->exports[k]);
    FUZZ_CHECK(want == NULL ? got == NULL : got != NULL);
    FUZZ_CHECK(want == NULL || strcmp(want, got) == 0);
  }
  FUZZ_CHECK(strcmp(le_only(shared, "MINIMP_SIZE"), j->jobvars[0]) == 0);
  FUZZ_CHECK(le_only(shared, "MINIMP_BOOT_ADDR") != NULL);
  FUZZ_CHECK(le_only(shared, "MINIMP_JOB_KEY") != NULL);
  if (j->encrypt)
    FUZZ_CHECK(strcmp(le_only(shared, "MINIMP_ENCRYPT"), "MINIMP_ENCRYPT=1") ==
               0);
  if (j->iface != NULL)
    FUZZ_CHECK(strcmp(le_only(shared, "MINIMP_IFACE"), j->jobvars[3]) == 0);
  else
    FUZZ_CHECK(le_only(shared, "MINIMP_IFACE") ==
               le_last_export(j, "MINIMP_IFACE"));

  /* A remote rank: its daemon adds the per-rank three. */
  memset(&rank, 0, sizeof(rank));
  rank.local_size = 1;
  j->ranks = &rank;
  remote = mmp__run_remote_env(j);
  FUZZ_CHECK(remote != NULL);
  le_no_twice(remote);
  /* Everything shared but the key, which never crosses the control
   * connection (its daemon got it from the agent and adds it). */
  for (i = 0; i < nshared; i++)
    if (!le_same_name(shared[i], "MINIMP_JOB_KEY="))
      FUZZ_CHECK(le_only(remote, shared[i]) == shared[i]);
  FUZZ_CHECK(le_only(remote, "MINIMP_JOB_KEY") == NULL);
  for (k = 3; k < 6; k++)
    FUZZ_CHECK(le_only(remote, owned[k]) == NULL);
  for (k = 0; environ[k] != NULL; k++) {
    const char *e = environ[k];
    if (strncmp(e, "MINIMP_", 7) == 0 && le_only(shared, e) == NULL &&
        !le_same_name(e, "MINIMP_RANK=") &&
        !le_same_name(e, "MINIMP_LOCAL_RANK=") &&
        !le_same_name(e, "MINIMP_LOCAL_SIZE="))
      FUZZ_CHECK(le_only(remote, e) == e);
  }
  free(remote);

  /* A local rank: environ, the shared entries, its own three last. */
  mmp__run_rank_vars(&rank, vars, v);
  local = mmp__env_merge(environ, shared, nshared, v, 3);
  FUZZ_CHECK(local != NULL);
  le_no_twice(local);
  for (k = 0; local[k] != NULL; k++)
    ;
  FUZZ_CHECK(k >= 3 && strcmp(local[k - 3], "MINIMP_RANK=0") == 0 &&
             strcmp(local[k - 1], "MINIMP_LOCAL_SIZE=1") == 0);
  for (k = 0; k < 6; k++)
    FUZZ_CHECK(le_only(local, owned[k]) != NULL);
  free(local);
  free(shared);
  j->ranks = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *words, *argv[LE_MAX_WORDS + 2], value[512];
  const uint8_t *p;
  mmp__run_job_t *j;
  fuzz_in_t in;
  int argc = 0, nset, k, rc;
  size_t n, i;

  le_hostfile_init();
  fuzz_in_init(&in, data, size);
  for (i = 0; i < LE_NENV; i++)
    unsetenv(le_env_names[i]);
  nset = fuzz_u8(&in) % 5;
  for (k = 0; k < nset; k++) {
    const char *name = le_env_names[fuzz_below(&in, LE_NENV)];
    n = fuzz_bytes(&in, &p, sizeof(value) - 1);
    memcpy(value, p, n);
    value[n] = '\0';
    setenv(name, value, 1);
  }
  n = fuzz_bytes(&in, &p, 8192);
  le_hostfile_write(p, n);

  /* The command line: NUL-separated words. */
  words = malloc(in.left + 1);
  FUZZ_CHECK(words != NULL);
  memcpy(words, in.p, in.left);
  words[in.left] = '\0';
  argv[argc++] = "minimprun";
  for (i = 0; i <= in.left && argc <= LE_MAX_WORDS; i += strlen(words + i) + 1)
    argv[argc++] = words + i;
  argv[argc] = NULL;
  for (k = 1; k < argc; k++) {
    size_t h;
    for (h = 0; h < sizeof(le_hostfile_opts) / sizeof(*le_hostfile_opts); h++) {
      size_t len = strlen(le_hostfile_opts[h]);
      if (strcmp(argv[k], le_hostfile_opts[h]) == 0 && k + 1 < argc)
        argv[k + 1] = le_hostfile;
      else if (strncmp(argv[k], le_hostfile_opts[h], len) == 0 &&
               argv[k][len] == '=')
        argv[k] = le_hostfile_eq[h];
    }
  }

  j = calloc(1, sizeof(*j));
  FUZZ_CHECK(j != NULL);
  mmp__hosts_init(&j->hl);
  rc = mmp__run_parse(j, argc, argv);
  FUZZ_CHECK(rc == -1 || rc == 0 || rc == 1 || rc == 2);
  if (rc == -1) {
    le_check_parsed(j, argv, argc);
    snprintf(j->boot_addr, sizeof(j->boot_addr), "127.0.0.1:4000");
    snprintf(j->keyhex, sizeof(j->keyhex), "%032x", 7);
    le_check_env(j);
  }
  free(j->exports);
  free(j->xenv);
  free(j->libpath);
  free(j->wdir_abs); /* as minimprun frees what parsing made */
  mmp__hosts_fini(&j->hl);
  free(j);
  free(words);
  for (i = 0; i < LE_NENV; i++)
    unsetenv(le_env_names[i]);
  return 0;
}

/* ---- Seeds -----------------------------------------------------------------
 */

/* `env`: "NAME=VALUE" entries to set (names from le_env_names), NULL-ended;
 * `words`: the command line, NULL-ended. */
static void le_seed(fuzz_emit_fn emit, const char *name, const char *const *env,
                    const char *hostfile, const char *const *words) {
  fuzz_buf_t b = {0};
  int n = 0, k;

  while (env[n] != NULL)
    n++;
  fuzz_buf_u8(&b, (uint8_t)n);
  for (k = 0; k < n; k++) {
    size_t len = strcspn(env[k], "=");
    size_t i;
    for (i = 0; i < LE_NENV; i++)
      if (strlen(le_env_names[i]) == len &&
          strncmp(le_env_names[i], env[k], len) == 0)
        break;
    if (i == LE_NENV)
      abort();
    fuzz_buf_u8(&b, (uint8_t)i);
    fuzz_buf_bytes(&b, env[k] + len + 1, strlen(env[k] + len + 1));
  }
  fuzz_buf_bytes(&b, hostfile, strlen(hostfile));
  for (k = 0; words[k] != NULL; k++)
    fuzz_buf_put(&b, words[k], strlen(words[k]) + (words[k + 1] != NULL));
  emit(name, b.p, b.len);
  fuzz_buf_free(&b);
}

#define LE_LIST(...) ((const char *const[]){__VA_ARGS__, NULL})
#define LE_NONE ((const char *const[]){NULL})

void fuzz_seeds(fuzz_emit_fn emit) {
  le_seed(emit, "plain", LE_NONE, "", LE_LIST("-n", "4", "./prog", "a"));
  le_seed(emit, "exports",
          LE_LIST("FOO=from-here", "MINIMP_LOG=debug", "MINIMP_X=1"), "",
          LE_LIST("-np", "2", "-x", "FOO", "-x", "BAR=1", "-x", "BAR=2", "-x",
                  "MINIMP_EAGER_LIMIT=4k", "-x", "UNSET", "--", "-prog"));
  le_seed(emit, "owned-export", LE_NONE, "",
          LE_LIST("-n", "2", "-x", "MINIMP_SIZE=9", "prog"));
  le_seed(emit, "iface-export", LE_NONE, "",
          LE_LIST("--iface=eth0", "-n", "1", "-x", "MINIMP_IFACE=lo", "prog"));
  le_seed(emit, "encrypt", LE_NONE, "",
          LE_LIST("--encrypt", "-n", "2", "-x", "MINIMP_ENCRYPT=0", "prog"));
  le_seed(emit, "iface-export-alone", LE_LIST("MINIMP_IFACE=lo0"), "",
          LE_LIST("-n", "1", "-x", "MINIMP_IFACE", "prog"));
  le_seed(emit, "hosts", LE_NONE, "",
          LE_LIST("-H", "node1:2,node2", "--map-by", "node", "--oversubscribe",
                  "--agent", "ip netns exec", "--launcher=/opt/minimprun",
                  "--tag-output", "--timeout", "30", "--verbose", "prog"));
  le_seed(emit, "hostfile", LE_NONE, "node1 slots=2\nnode2 slots=3\n",
          LE_LIST("--hostfile", "hosts.txt", "prog"));
  le_seed(emit, "hostfile-eq", LE_NONE, "a\n",
          LE_LIST("--machinefile=x", "-n", "3", "prog"));
  le_seed(emit, "hostfile-and-host", LE_NONE, "a\n",
          LE_LIST("--hostfile", "x", "-H", "b", "prog"));
  le_seed(emit, "help", LE_NONE, "", LE_LIST("--help"));
  le_seed(emit, "bad-options", LE_NONE, "",
          LE_LIST("-n", "0", "--timeout", "-1", "--map-by", "core",
                  "--tag-output=1", "--bogus", "prog"));
  le_seed(emit, "missing-program", LE_NONE, "", LE_LIST("-n", "2"));
  le_seed(emit, "missing-value", LE_NONE, "", LE_LIST("-n"));
  le_seed(emit, "remote-minimp-vars",
          LE_LIST("MINIMP_RANK=5", "MINIMP_JOB_KEY=x", "MINIMP_X=y",
                  "LD_LIBRARY_PATH=/opt/lib"),
          "", LE_LIST("-n", "1", "-x", "LD_LIBRARY_PATH", "prog"));
}
