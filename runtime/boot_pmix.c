/* SPDX-License-Identifier: MIT */
/*
 * PMIx, client side (pmi.h): what a process started by `srun --mpi=pmix`,
 * Open MPI's mpirun or prterun uses to learn its rank and the job's shape
 * and to exchange key-value pairs, through libpmix (built only where
 * meson found it). Values are strings published with PMIX_GLOBAL scope;
 * the fence collects them (PMIX_COLLECT_DATA); a round among the ranks of
 * a node fences over those ranks alone. No get precedes a fence:
 * a direct modex answers with what the rank had committed by then, which
 * Slurm's server gives as "not found" for a key committed later.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "pmi.h"

static pmix_proc_t pmix_me;
static int pmix_up;

/* An integer attribute of `proc`, whatever unsigned width the server
 * gives it. Returns 0 or -1. */
static int pmix_get_int(const pmix_proc_t *proc, const char *key, long *out) {
  pmix_value_t *v = NULL;
  int rc = -1;

  if (PMIx_Get(proc, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL)
    return -1;
  switch (v->type) {
  case PMIX_UINT32:
    *out = (long)v->data.uint32, rc = 0;
    break;
  case PMIX_UINT16:
    *out = (long)v->data.uint16, rc = 0;
    break;
  case PMIX_INT:
    *out = (long)v->data.integer, rc = 0;
    break;
  case PMIX_PROC_RANK:
    *out = (long)v->data.rank, rc = 0;
    break;
  default:
    break;
  }
  PMIX_VALUE_RELEASE(v);
  return rc;
}

static int pmix_init(mmp__pmi_info_t *info) {
  pmix_proc_t wild;
  long size, lr, ls;
  pmix_status_t rc = PMIx_Init(&pmix_me, NULL, 0);

  if (rc != PMIX_SUCCESS) {
    MMP__LOG(MMP__LOG_ERROR, "PMIx_Init failed: %s", PMIx_Error_string(rc));
    return MMP_EBOOT;
  }
  pmix_up = 1;
  PMIX_LOAD_PROCID(&wild, pmix_me.nspace, PMIX_RANK_WILDCARD);
  if (pmix_get_int(&wild, PMIX_JOB_SIZE, &size) != 0 || size < 1 ||
      size > (1 << 24) || pmix_me.rank >= (pmix_rank_t)size) {
    MMP__LOG(MMP__LOG_ERROR, "PMIx: no usable job size for rank %u",
             (unsigned)pmix_me.rank);
    return MMP_EBOOT;
  }
  info->rank = (int)pmix_me.rank;
  info->size = (int)size;
  info->local_rank = info->local_size = -1;
  if (pmix_get_int(&pmix_me, PMIX_LOCAL_RANK, &lr) == 0 &&
      pmix_get_int(&wild, PMIX_LOCAL_SIZE, &ls) == 0 && ls >= 1 && ls <= size &&
      lr >= 0 && lr < ls) {
    info->local_rank = (int)lr;
    info->local_size = (int)ls;
  }
  return 0;
}

static int pmix_put(const char *key, const char *value) {
  pmix_value_t v;
  pmix_status_t rc;

  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_STRING;
  v.data.string = (char *)value;
  rc = PMIx_Put(PMIX_GLOBAL, key, &v);
  if (rc != PMIX_SUCCESS) {
    MMP__LOG(MMP__LOG_ERROR, "PMIx_Put of '%s' failed: %s", key,
             PMIx_Error_string(rc));
    return MMP_EBOOT;
  }
  return 0;
}

static int pmix_commit(void) {
  pmix_status_t rc = PMIx_Commit();

  if (rc != PMIX_SUCCESS) {
    MMP__LOG(MMP__LOG_ERROR, "PMIx_Commit failed: %s", PMIx_Error_string(rc));
    return MMP_EBOOT;
  }
  return 0;
}

/* A fence over `procs` (n of them). */
static int pmix_fence_over(const pmix_proc_t *procs, size_t n, int collect) {
  pmix_info_t info;
  bool yes = true;
  pmix_status_t rc;

  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  rc = PMIx_Fence(procs, n, collect ? &info : NULL, collect ? 1 : 0);
  PMIX_INFO_DESTRUCT(&info);
  if (rc != PMIX_SUCCESS) {
    MMP__LOG(MMP__LOG_ERROR, "PMIx_Fence over %zu %s failed: %s", n,
             n == 1 ? "set" : "ranks", PMIx_Error_string(rc));
    return MMP_EBOOT;
  }
  return 0;
}

static int pmix_fence(int collect) {
  pmix_proc_t wild;

  PMIX_LOAD_PROCID(&wild, pmix_me.nspace, PMIX_RANK_WILDCARD);
  return pmix_fence_over(&wild, 1, collect);
}

static int pmix_get(int rank, const char *key, char *out, size_t cap) {
  pmix_proc_t proc;
  pmix_value_t *v = NULL;
  pmix_status_t rc;
  int ok;

  PMIX_LOAD_PROCID(&proc, pmix_me.nspace, (pmix_rank_t)rank);
  rc = PMIx_Get(&proc, key, NULL, 0, &v);
  if (rc != PMIX_SUCCESS || v == NULL) {
    MMP__LOG(MMP__LOG_ERROR, "PMIx_Get of rank %d's '%s' failed: %s", rank, key,
             PMIx_Error_string(rc));
    return MMP_EBOOT;
  }
  ok = v->type == PMIX_STRING && v->data.string != NULL &&
       strlen(v->data.string) < cap;
  if (ok)
    strcpy(out, v->data.string);
  PMIX_VALUE_RELEASE(v);
  if (!ok) {
    MMP__LOG(MMP__LOG_ERROR,
             "PMIx: rank %d's '%s' is not a string of fewer "
             "than %zu bytes",
             rank, key, cap);
    return MMP_EBOOT;
  }
  return 0;
}

static int pmix_node_put(const char *key, const char *value) {
  int rc = pmix_put(key, value);

  return rc == 0 ? pmix_commit() : rc;
}

/* A fence over these ranks alone: Slurm's server runs it among the nodes
 * that host them, here one, and no other rank waits. */
static int pmix_node_fence(const int *ranks, int n) {
  pmix_proc_t *procs = malloc((size_t)n * sizeof(*procs));
  int rc;

  if (procs == NULL)
    return MMP_EBOOT;
  for (int i = 0; i < n; i++)
    PMIX_LOAD_PROCID(&procs[i], pmix_me.nspace, (pmix_rank_t)ranks[i]);
  rc = pmix_fence_over(procs, (size_t)n, 1);
  free(procs);
  return rc;
}

/* Any set of ranks: a fence may span nodes. */
static int pmix_node_ok(const int *ranks, int n) {
  (void)ranks;
  (void)n;
  return 1;
}

static void pmix_abort(int code, const char *msg) {
  if (pmix_up)
    (void)PMIx_Abort(code, msg != NULL && *msg ? msg : "aborted", NULL, 0);
}

static void pmix_fini(void) {
  if (pmix_up)
    (void)PMIx_Finalize(NULL, 0);
  pmix_up = 0;
}

const mmp__pmi_ops_t mmp__pmix_ops = {
    .name = "PMIx",
    .init = pmix_init,
    .put = pmix_put,
    .commit = pmix_commit,
    .fence = pmix_fence,
    .get = pmix_get,
    .node_put = pmix_node_put,
    .node_fence = pmix_node_fence,
    .node_get = pmix_get,
    .node_ok = pmix_node_ok,
    .abort = pmix_abort,
    .fini = pmix_fini,
};
