/* SPDX-License-Identifier: MIT */
/*
 * What minimprun adds to its ranks' environment (see run_env.h): the -x
 * variables, the job's own MINIMP_* variables and the three that differ
 * between ranks. The lists built here hold borrowed strings: entries of
 * the command line and of our environment, and the job's own buffers.
 */
#include "run_env.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "minimp.h"
#include "transport/util.h" /* MMP__ARRAY_SIZE */

extern char **environ;

/* Where the libminimp installed beside this minimprun is, relative to the
 * directory of the executable (meson sets it from bindir and libdir). */
#ifndef MMP_LIBDIR_FROM_BINDIR
#define MMP_LIBDIR_FROM_BINDIR "../lib"
#endif

/*
 * LD_LIBRARY_PATH for the ranks: the libminimp installed beside this
 * minimprun first, then what ours says, so that a program linked without
 * a run path finds the library minimprun belongs to, as mpirun's prefix
 * does. NULL when this minimprun is not in an installed tree (no
 * libminimp.so.0 there), when the path already leads there, or without
 * memory.
 */
static char *run_libpath(void) {
  char exe[PATH_MAX], dir[2 * PATH_MAX], real[PATH_MAX], lib[PATH_MAX + 32];
  const char *old = getenv("LD_LIBRARY_PATH"), *at;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  size_t len;
  char *e, *slash;

  if (n <= 0)
    return NULL;
  exe[n] = '\0';
  if ((slash = strrchr(exe, '/')) == NULL)
    return NULL;
  *slash = '\0';
  if (MMP_LIBDIR_FROM_BINDIR[0] == '/')
    snprintf(dir, sizeof(dir), "%s", MMP_LIBDIR_FROM_BINDIR);
  else
    snprintf(dir, sizeof(dir), "%s/%s", exe, MMP_LIBDIR_FROM_BINDIR);
  if (realpath(dir, real) == NULL)
    return NULL;
  snprintf(lib, sizeof(lib), "%s/libminimp.so.0", real);
  if (access(lib, F_OK) != 0)
    return NULL;
  len = strlen(real);
  for (at = old; at != NULL && *at != '\0';
       at += strcspn(at, ":"), at += *at == ':')
    if (strncmp(at, real, len) == 0 && (at[len] == ':' || at[len] == '\0'))
      return NULL;
  n = (ssize_t)(strlen("LD_LIBRARY_PATH=") + len + 2 + (old ? strlen(old) : 0));
  if ((e = malloc((size_t)n)) == NULL)
    return NULL;
  snprintf(e, (size_t)n, "LD_LIBRARY_PATH=%s%s%s", real,
           old != NULL && *old != '\0' ? ":" : "", old != NULL ? old : "");
  return e;
}

/* The entry of our environment that sets `name`, or NULL. */
static char *run_env_entry(const char *name) {
  size_t n = strlen(name);
  int i;

  for (i = 0; environ[i] != NULL; i++)
    if (strncmp(environ[i], name, n) == 0 && environ[i][n] == '=')
      return environ[i];
  return NULL;
}

int mmp__run_job_env(mmp__run_job_t *j) {
  int k;

  j->xenv = calloc((size_t)j->nexports + 1, sizeof(*j->xenv));
  if (j->xenv == NULL)
    return MMP_ENOMEM;
  for (k = 0; k < j->nexports; k++) {
    char *e = strchr(j->exports[k], '=') != NULL ? j->exports[k]
                                                 : run_env_entry(j->exports[k]);
    if (e == NULL)
      mmp__say("warning: -x %s: %s is not set", j->exports[k], j->exports[k]);
    else
      j->xenv[j->nxenv++] = e;
  }
  snprintf(j->jobvars[0], sizeof(j->jobvars[0]), "MINIMP_SIZE=%d", j->n);
  snprintf(j->jobvars[1], sizeof(j->jobvars[1]), "MINIMP_BOOT_ADDR=%s",
           j->boot_addr);
  snprintf(j->jobvars[2], sizeof(j->jobvars[2]), "MINIMP_JOB_KEY=%s",
           j->keyhex);
  j->njobvars = 3;
  if (j->iface != NULL)
    snprintf(j->jobvars[j->njobvars++], sizeof(j->jobvars[0]),
             "MINIMP_IFACE=%s", j->iface);
  if (j->encrypt)
    snprintf(j->jobvars[j->njobvars++], sizeof(j->jobvars[0]),
             "MINIMP_ENCRYPT=1");
  j->libpath = run_libpath();
  return 0;
}

void mmp__run_rank_vars(const mmp__run_rank_t *r, char vars[3][48],
                        char *v[3]) {
  snprintf(vars[0], sizeof(vars[0]), "MINIMP_RANK=%d", r->rank);
  snprintf(vars[1], sizeof(vars[1]), "MINIMP_LOCAL_RANK=%d", r->local_rank);
  snprintf(vars[2], sizeof(vars[2]), "MINIMP_LOCAL_SIZE=%d", r->local_size);
  v[0] = vars[0];
  v[1] = vars[1];
  v[2] = vars[2];
}

const char *mmp__run_env_owned(const mmp__run_job_t *j, const char *entry) {
  /* What mmp__run_rank_vars and mmp__run_job_env write; MINIMP_IFACE only
   * with --iface, MINIMP_ENCRYPT only with --encrypt. */
  static const char *const names[] = {"MINIMP_RANK",       "MINIMP_LOCAL_RANK",
                                      "MINIMP_LOCAL_SIZE", "MINIMP_SIZE",
                                      "MINIMP_BOOT_ADDR",  "MINIMP_JOB_KEY",
                                      "MINIMP_IFACE",      "MINIMP_ENCRYPT"};
  size_t len = strcspn(entry, "="), k;

  for (k = 0; k < MMP__ARRAY_SIZE(names); k++) {
    if ((k == 6 && j->iface == NULL) || (k == 7 && !j->encrypt))
      continue;
    if (strlen(names[k]) == len && strncmp(entry, names[k], len) == 0)
      return names[k];
  }
  return NULL;
}

char **mmp__run_shared_env(mmp__run_job_t *j, size_t *count) {
  char **v = malloc(((size_t)j->nxenv + (size_t)j->njobvars + 2) * sizeof(*v));
  size_t n = 0;
  int k;

  if (v == NULL)
    return NULL;
  for (k = 0; k < j->nxenv; k++)
    if (!mmp__env_sets((char *const *)j->xenv + k + 1,
                       (size_t)(j->nxenv - k - 1), j->xenv[k]))
      v[n++] = j->xenv[k]; /* the last -x of a name wins */
  for (k = 0; k < j->njobvars; k++)
    if (!mmp__env_sets(v, n, j->jobvars[k]))
      v[n++] = j->jobvars[k];
  /* An -x LD_LIBRARY_PATH is the user's choice: it stands alone. */
  if (j->libpath != NULL && !mmp__env_sets(v, n, j->libpath))
    v[n++] = j->libpath;
  v[n] = NULL;
  *count = n;
  return v;
}

char **mmp__run_remote_env(mmp__run_job_t *j) {
  char vars[3][48], *v[3], **shared, **env;
  size_t nshared = 0, n = 0, i;
  int k;

  shared = mmp__run_shared_env(j, &nshared);
  for (k = 0; environ[k] != NULL; k++)
    n++;
  env = shared != NULL ? malloc((n + nshared + 1) * sizeof(*env)) : NULL;
  if (env == NULL) {
    free(shared);
    return NULL;
  }
  mmp__run_rank_vars(&j->ranks[0], vars, v);
  n = 0;
  for (k = 0; environ[k] != NULL; k++)
    if (strncmp(environ[k], "MINIMP_", 7) == 0 &&
        !mmp__env_sets(shared, nshared, environ[k]) &&
        !mmp__env_sets(v, 3, environ[k]))
      env[n++] = environ[k];
  /* The key reaches each daemon on its agent's standard input, and the
   * daemon adds it for its ranks: it never crosses the control
   * connection. */
  for (i = 0; i < nshared; i++)
    if (strncmp(shared[i], "MINIMP_JOB_KEY=", 15) != 0)
      env[n++] = shared[i];
  env[n] = NULL;
  free(shared);
  return env;
}
