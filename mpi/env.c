/* SPDX-License-Identifier: MIT */
/*
 * The environment: MPI_Init and MPI_Finalize over mmp_init and
 * mmp_finalize, the thread level, clocks, names and versions, memory, and
 * info objects (kept as key/value lists; docs/mpi.md says which calls
 * read them).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpii.h"

/* Recursive: attribute callbacks run under it and may call MPI. */
pthread_mutex_t mmpi__mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
atomic_int mmpi__state;
int mmpi__thread_level = MPI_THREAD_SINGLE;
static pthread_t main_thread;

static int init_body(int *argc, char ***argv, int required, int *provided) {
  int rc;

  if (atomic_load(&mmpi__state) != 0)
    return MPI_ERR_OTHER; /* MPI_Init twice, or after MPI_Finalize */
  if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
    return MPI_ERR_ARG;
  if ((rc = mmp_init(argc, argv)) != 0)
    return mmpi__code(rc);
  /* Errors come back as codes; MPI's handlers decide what they do. */
  (void)mmp_set_errors_fatal(0);
  mmpi__types_init();
  if ((rc = mmpi__ops_init()) != 0 || (rc = mmpi__comm_init()) != 0) {
    mmpi__ops_fini();
    (void)mmp_finalize();
    return rc;
  }
  /* libminimp may be called from any thread, and this layer keeps what
   * handles share under mmpi__mu. */
  mmpi__thread_level = MPI_THREAD_MULTIPLE;
  main_thread = pthread_self();
  if (provided != NULL)
    *provided = mmpi__thread_level;
  atomic_store(&mmpi__state, 1);
  return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv) {
  return mmpi__raise(MPI_COMM_NULL,
                     init_body(argc, argv, MPI_THREAD_SINGLE, NULL), __func__);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  if (provided == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  return mmpi__raise(MPI_COMM_NULL, init_body(argc, argv, required, provided),
                     __func__);
}

int MPI_Finalize(void) {
  int rc;

  if (atomic_load(&mmpi__state) != 1)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_OTHER, __func__);
  mmpi__comm_fini();
  mmpi__p2p_fini();
  rc = mmp_finalize();
  mmpi__ops_fini();
  mmpi__types_fini();
  atomic_store(&mmpi__state, 2);
  /* Nothing may be called on a communicator now, so errors return. */
  return mmpi__code(rc);
}

int MPI_Initialized(int *flag) {
  if (flag == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  *flag = atomic_load(&mmpi__state) >= 1;
  return MPI_SUCCESS;
}

int MPI_Finalized(int *flag) {
  if (flag == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  *flag = atomic_load(&mmpi__state) == 2;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
  (void)comm; /* every rank of the job ends, as most MPIs do */
  if (mmp_initialized())
    mmp_abort(errorcode);
  exit(errorcode);
}

double MPI_Wtime(void) {
  return mmp_wtime();
}

double MPI_Wtick(void) {
  return 1e-9; /* mmp_wtime reads a nanosecond clock */
}

int MPI_Get_processor_name(char *name, int *resultlen) {
  if (name == NULL || resultlen == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0)
    snprintf(name, MPI_MAX_PROCESSOR_NAME, "unknown");
  name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
  *resultlen = (int)strlen(name);
  return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion) {
  if (version == NULL || subversion == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  *version = MPI_VERSION;
  *subversion = MPI_SUBVERSION;
  return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen) {
  int n;

  if (version == NULL || resultlen == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
               "libminimp-mpi %d.%d.%d: a subset of MPI-%d.%d over libminimp",
               MMP_VERSION_MAJOR, MMP_VERSION_MINOR, MMP_VERSION_PATCH,
               MPI_VERSION, MPI_SUBVERSION);
  *resultlen = n;
  return MPI_SUCCESS;
}

int MPI_Query_thread(int *provided) {
  if (provided == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  *provided = mmpi__thread_level;
  return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag) {
  if (flag == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  *flag = pthread_equal(pthread_self(), main_thread) != 0;
  return MPI_SUCCESS;
}

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
  void *p;

  (void)info; /* no key means anything to plain memory */
  if (size < 0 || baseptr == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  if ((p = malloc(size > 0 ? (size_t)size : 1)) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  memcpy(baseptr, &p, sizeof(p));
  return MPI_SUCCESS;
}

int MPI_Free_mem(void *base) {
  free(base);
  return MPI_SUCCESS;
}

/* ---- Info objects --------------------------------------------------------
 */

struct mmpi_info_s {
  int n, cap;
  char **key, **val;
};

static int info_find(MPI_Info info, const char *key) {
  int i;

  for (i = 0; i < info->n; i++)
    if (strcmp(info->key[i], key) == 0)
      return i;
  return -1;
}

/* 0, or the class of what is wrong with `key`. */
static int key_check(MPI_Info info, const char *key) {
  if (info == MPI_INFO_NULL)
    return MPI_ERR_INFO;
  if (key == NULL || key[0] == '\0' || strlen(key) > MPI_MAX_INFO_KEY)
    return MPI_ERR_INFO_KEY;
  return MPI_SUCCESS;
}

int MPI_Info_create(MPI_Info *info) {
  if (info == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  if ((*info = calloc(1, sizeof(**info))) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  return MPI_SUCCESS;
}

static int info_set(MPI_Info info, const char *key, const char *value) {
  int i, rc = key_check(info, key);
  char *v;

  if (rc != 0)
    return rc;
  if (value == NULL || strlen(value) > MPI_MAX_INFO_VAL)
    return MPI_ERR_INFO_VALUE;
  if ((v = strdup(value)) == NULL)
    return MPI_ERR_NO_MEM;
  if ((i = info_find(info, key)) >= 0) {
    free(info->val[i]);
    info->val[i] = v;
    return MPI_SUCCESS;
  }
  if (info->n == info->cap) {
    int cap = info->cap ? 2 * info->cap : 8;
    char **k = realloc(info->key, (size_t)cap * sizeof(char *));
    char **vv =
        k != NULL ? realloc(info->val, (size_t)cap * sizeof(char *)) : NULL;
    if (k != NULL)
      info->key = k;
    if (vv == NULL) {
      free(v);
      return MPI_ERR_NO_MEM;
    }
    info->val = vv;
    info->cap = cap;
  }
  if ((info->key[info->n] = strdup(key)) == NULL) {
    free(v);
    return MPI_ERR_NO_MEM;
  }
  info->val[info->n++] = v;
  return MPI_SUCCESS;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value) {
  return mmpi__raise(MPI_COMM_NULL, info_set(info, key, value), __func__);
}

int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value,
                 int *flag) {
  int i, rc = key_check(info, key);

  if (rc == 0 && (valuelen < 0 || value == NULL || flag == NULL))
    rc = MPI_ERR_ARG;
  if (rc != 0)
    return mmpi__raise(MPI_COMM_NULL, rc, __func__);
  *flag = (i = info_find(info, key)) >= 0;
  if (*flag) {
    /* valuelen excludes the terminating NUL, which is always written. */
    size_t n = strlen(info->val[i]);
    if (n > (size_t)valuelen)
      n = (size_t)valuelen;
    memcpy(value, info->val[i], n);
    value[n] = '\0';
  }
  return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen,
                          int *flag) {
  int i, rc = key_check(info, key);

  if (rc == 0 && (valuelen == NULL || flag == NULL))
    rc = MPI_ERR_ARG;
  if (rc != 0)
    return mmpi__raise(MPI_COMM_NULL, rc, __func__);
  *flag = (i = info_find(info, key)) >= 0;
  if (*flag)
    *valuelen = (int)strlen(info->val[i]);
  return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key) {
  int i, rc = key_check(info, key);

  if (rc == 0 && (i = info_find(info, key)) < 0)
    rc = MPI_ERR_INFO_NOKEY;
  if (rc != 0)
    return mmpi__raise(MPI_COMM_NULL, rc, __func__);
  free(info->key[i]);
  free(info->val[i]);
  memmove(info->key + i, info->key + i + 1,
          (size_t)(info->n - i - 1) * sizeof(char *));
  memmove(info->val + i, info->val + i + 1,
          (size_t)(info->n - i - 1) * sizeof(char *));
  info->n--;
  return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys) {
  if (info == MPI_INFO_NULL || nkeys == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_INFO, __func__);
  *nkeys = info->n;
  return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key) {
  if (info == MPI_INFO_NULL || key == NULL || n < 0 || n >= info->n)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  snprintf(key, MPI_MAX_INFO_KEY + 1, "%s", info->key[n]);
  return MPI_SUCCESS;
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo) {
  MPI_Info d;
  int i, rc = MPI_SUCCESS;

  if (info == MPI_INFO_NULL || newinfo == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_INFO, __func__);
  if ((d = calloc(1, sizeof(*d))) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  for (i = 0; i < info->n && rc == MPI_SUCCESS; i++)
    rc = info_set(d, info->key[i], info->val[i]);
  if (rc != MPI_SUCCESS) {
    MPI_Info_free(&d);
    return mmpi__raise(MPI_COMM_NULL, rc, __func__);
  }
  *newinfo = d;
  return MPI_SUCCESS;
}

int MPI_Info_free(MPI_Info *info) {
  int i;

  if (info == NULL || *info == MPI_INFO_NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_INFO, __func__);
  for (i = 0; i < (*info)->n; i++) {
    free((*info)->key[i]);
    free((*info)->val[i]);
  }
  free((*info)->key);
  free((*info)->val);
  free(*info);
  *info = MPI_INFO_NULL;
  return MPI_SUCCESS;
}
