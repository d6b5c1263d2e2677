/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: Slurm's compressed host lists and task counts
 * (transport/hostlist.c), which minimprun reads from an allocation's
 * SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE and a rank started by srun
 * from SLURM_STEP_NODELIST: text from the environment, never trusted.
 *
 * Input: a flags byte (bit 0: a task count list, else a host list), a
 * byte (the number of nodes the task list must cover, 1..64; for a host
 * list, after how many hosts the callback stops the expansion, 0: never),
 * then the text (cut at its first NUL, as an environment value is).
 *
 * Invariants:
 *  - a host list gives 0, MMP_EINVAL with a message, or the callback's
 *    value exactly when it asked to stop; at most MMP__HOSTLIST_MAX_HOSTS
 *    names, each 1..MMP__HOSTLIST_MAX_NAME bytes without a NUL, comma or
 *    bracket; a list without brackets gives exactly its entries; the same
 *    list expands twice to the same names;
 *  - a task list gives 0 with every count in 1..1048576, or MMP_EINVAL
 *    with a message; one without "(x" gives 0 only with one entry per
 *    node;
 *  - an error message is one line unless the text quoted has a newline.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "minimp.h"
#include "transport/hostlist.h"

#define HLF_STOP_RC 7

typedef struct hlf_walk_s {
  int stop_after; /* 0: never */
  int n;
  uint64_t hash;
  const char *spec; /* for a list without brackets: the next entry */
} hlf_walk_t;

static int hlf_host(void *ctx, const char *name, size_t len) {
  hlf_walk_t *w = ctx;
  size_t i;

  FUZZ_CHECK(len >= 1 && len <= MMP__HOSTLIST_MAX_NAME);
  for (i = 0; i < len; i++)
    FUZZ_CHECK(name[i] != '\0' && name[i] != ',' && name[i] != '[' &&
               name[i] != ']');
  FUZZ_CHECK(++w->n <= MMP__HOSTLIST_MAX_HOSTS);
  for (i = 0; i < len; i++)
    w->hash = (w->hash ^ (uint8_t)name[i]) * 1099511628211ull;
  w->hash = (w->hash ^ 0xff) * 1099511628211ull;
  if (w->spec != NULL) {
    size_t n = strcspn(w->spec, ",");
    FUZZ_CHECK(n == len && memcmp(w->spec, name, len) == 0);
    w->spec += n + (w->spec[n] == ',');
  }
  return w->stop_after != 0 && w->n == w->stop_after ? HLF_STOP_RC : 0;
}

static void hlf_check_err(const char *text, const char *err) {
  FUZZ_CHECK(err[0] != '\0');
  FUZZ_CHECK(strchr(err, '\n') == NULL || strchr(text, '\n') != NULL);
}

static void hlf_expand(const char *text, int stop_after) {
  hlf_walk_t a = {stop_after, 0, 14695981039346656037ull, NULL}, b = a;
  char err[512] = "";
  int plain = strpbrk(text, "[]") == NULL, rc;

  if (plain)
    a.spec = text;
  rc = mmp__hostlist_expand(text, hlf_host, &a, err, sizeof(err));
  FUZZ_CHECK(rc == 0 || rc == MMP_EINVAL || rc == HLF_STOP_RC);
  FUZZ_CHECK((rc == HLF_STOP_RC) == (stop_after != 0 && a.n == stop_after));
  if (rc == MMP_EINVAL) {
    hlf_check_err(text, err);
    return;
  }
  if (rc == 0 && plain)
    FUZZ_CHECK(*a.spec == '\0');
  FUZZ_CHECK(mmp__hostlist_expand(text, hlf_host, &b, err, sizeof(err)) == rc);
  FUZZ_CHECK(a.n == b.n && a.hash == b.hash);
}

static void hlf_tasks(const char *text, int nnodes) {
  int counts[64], i, rc, entries = 1;
  char err[512] = "";

  for (i = 0; i < 64; i++)
    counts[i] = -1;
  rc = mmp__hostlist_tasks(text, counts, nnodes, err, sizeof(err));
  FUZZ_CHECK(rc == 0 || rc == MMP_EINVAL);
  if (rc != 0) {
    hlf_check_err(text, err);
    return;
  }
  for (i = 0; i < nnodes; i++)
    FUZZ_CHECK(counts[i] >= 1 && counts[i] <= 1048576);
  for (i = nnodes; i < 64; i++)
    FUZZ_CHECK(counts[i] == -1);
  if (strstr(text, "(x") == NULL) {
    for (i = 0; text[i] != '\0'; i++)
      entries += text[i] == ',';
    FUZZ_CHECK(entries == nnodes);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text;
  int flags, arg;

  if (size < 2 || size > 4098)
    return 0;
  flags = data[0];
  arg = data[1];
  text = malloc(size - 1);
  if (text == NULL)
    return 0;
  memcpy(text, data + 2, size - 2);
  text[size - 2] = '\0';
  if (flags & 1)
    hlf_tasks(text, 1 + arg % 64);
  else
    hlf_expand(text, arg);
  free(text);
  return 0;
}

static void hlf_emit(fuzz_emit_fn emit, const char *name, int flags, int arg,
                     const char *text) {
  fuzz_buf_t b = {0};

  fuzz_buf_u8(&b, (uint8_t)flags);
  fuzz_buf_u8(&b, (uint8_t)arg);
  fuzz_buf_put(&b, text, strlen(text));
  emit(name, b.p, b.len);
  fuzz_buf_free(&b);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  hlf_emit(emit, "plain", 0, 0, "a,b.example.com,c-1");
  hlf_emit(emit, "ranges", 0, 0, "node[01-04,07],gpu5,r[1-2]c[08-10]");
  hlf_emit(emit, "first-host", 0, 1, "n[100-199]");
  hlf_emit(emit, "bad-range", 0, 0, "node[4-1]");
  hlf_emit(emit, "nested", 0, 0, "a[1-[2]]");
  hlf_emit(emit, "huge", 0, 0, "n[0-999999999]");
  hlf_emit(emit, "tasks", 1, 3, "2(x3),1");
  hlf_emit(emit, "tasks-short", 1, 2, "1,1");
  hlf_emit(emit, "tasks-bad", 1, 1, "0(x1)");
}
