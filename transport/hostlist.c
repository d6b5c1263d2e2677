/* SPDX-License-Identifier: MIT */
/*
 * Slurm's host-list and task-count syntax (see hostlist.h). The expansion
 * walks one entry at a time, left to right, recursing at each bracket
 * group, so it needs no memory beyond one name buffer and stops at the
 * first error or at the callback's request.
 */
#include "hostlist.h"

#include <stdio.h>
#include <string.h>

#include "minimp.h"

typedef struct hostlist_walk_s {
  const char *spec; /* the whole list, for messages */
  mmp__hostlist_cb cb;
  void *ctx;
  char *err;
  size_t errlen;
  long count;
  char name[MMP__HOSTLIST_MAX_NAME + 1];
} hostlist_walk_t;

static int hostlist_bad(hostlist_walk_t *w, const char *what, const char *p,
                        size_t n) {
  snprintf(w->err, w->errlen, "%s at '%.*s' in host list '%s'", what, (int)n, p,
           w->spec);
  return MMP_EINVAL;
}

/* Parses the digits p[0..n-1] (1 to 9 of them) into *v. */
static int hostlist_number(const char *p, size_t n, long *v) {
  size_t i;

  if (n == 0 || n > 9)
    return -1;
  *v = 0;
  for (i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return -1;
    *v = *v * 10 + (p[i] - '0');
  }
  return 0;
}

static int hostlist_entry(hostlist_walk_t *w, const char *p, const char *end,
                          size_t len);

/* Expands the bracket group [open+1, close) followed by close+1..end,
 * with the name so far of length `len`. */
static int hostlist_group(hostlist_walk_t *w, const char *open,
                          const char *close, const char *end, size_t len) {
  const char *item = open + 1;

  while (item <= close) {
    const char *stop = memchr(item, ',', (size_t)(close - item));
    const char *dash;
    long lo, hi, v;
    size_t nlo;
    int rc;

    if (stop == NULL)
      stop = close;
    dash = memchr(item, '-', (size_t)(stop - item));
    nlo = dash != NULL ? (size_t)(dash - item) : (size_t)(stop - item);
    if (hostlist_number(item, nlo, &lo) != 0 ||
        (dash != NULL &&
         hostlist_number(dash + 1, (size_t)(stop - dash - 1), &hi) != 0))
      return hostlist_bad(w, "bad range", item, (size_t)(stop - item));
    if (dash == NULL)
      hi = lo;
    if (hi < lo)
      return hostlist_bad(w, "bad range (end before start)", item,
                          (size_t)(stop - item));
    for (v = lo; v <= hi; v++) {
      /* The first number's width is the padding ("08-10" gives "09"). */
      int n =
          snprintf(w->name + len, sizeof(w->name) - len, "%0*ld", (int)nlo, v);
      if (n < 0 || len + (size_t)n >= sizeof(w->name))
        return hostlist_bad(w, "host name too long", open,
                            (size_t)(close - open + 1));
      rc = hostlist_entry(w, close + 1, end, len + (size_t)n);
      if (rc != 0)
        return rc;
    }
    item = stop + 1;
  }
  return 0;
}

/* Expands p..end after the first `len` bytes of the name. */
static int hostlist_entry(hostlist_walk_t *w, const char *p, const char *end,
                          size_t len) {
  const char *open = memchr(p, '[', (size_t)(end - p)), *close;
  size_t plen = (size_t)((open != NULL ? open : end) - p);

  if (memchr(p, ']', plen) != NULL)
    return hostlist_bad(w, "unbalanced ']'", p, (size_t)(end - p));
  if (len + plen > MMP__HOSTLIST_MAX_NAME)
    return hostlist_bad(w, "host name too long", p, (size_t)(end - p));
  memcpy(w->name + len, p, plen);
  len += plen;
  if (open == NULL) {
    if (++w->count > MMP__HOSTLIST_MAX_HOSTS) {
      snprintf(w->err, w->errlen, "host list '%s' has more than %d hosts",
               w->spec, MMP__HOSTLIST_MAX_HOSTS);
      return MMP_EINVAL;
    }
    return w->cb(w->ctx, w->name, len);
  }
  close = memchr(open + 1, ']', (size_t)(end - open - 1));
  if (close == NULL)
    return hostlist_bad(w, "unbalanced '['", open, (size_t)(end - open));
  if (memchr(open + 1, '[', (size_t)(close - open - 1)) != NULL)
    return hostlist_bad(w, "nested '['", open, (size_t)(close - open + 1));
  return hostlist_group(w, open, close, end, len);
}

int mmp__hostlist_expand(const char *spec, mmp__hostlist_cb cb, void *ctx,
                         char *err, size_t errlen) {
  hostlist_walk_t w;
  const char *p = spec, *q;
  int depth, rc;

  memset(&w, 0, sizeof(w));
  w.spec = spec;
  w.cb = cb;
  w.ctx = ctx;
  w.err = err;
  w.errlen = errlen;
  if (*spec == '\0') {
    snprintf(err, errlen, "empty host list");
    return MMP_EINVAL;
  }
  for (;;) {
    /* An entry ends at a comma outside brackets. */
    for (q = p, depth = 0; *q != '\0' && (*q != ',' || depth > 0); q++)
      depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
    if (q == p)
      return hostlist_bad(&w, "empty entry", p, 0);
    rc = hostlist_entry(&w, p, q, 0);
    if (rc != 0 || *q == '\0')
      return rc;
    p = q + 1;
  }
}

int mmp__hostlist_tasks(const char *spec, int *counts, int nnodes, char *err,
                        size_t errlen) {
  const char *p = spec;
  int done = 0;

  for (;;) {
    size_t n = strcspn(p, ",");
    const char *x = memchr(p, '(', n);
    long tasks, rep = 1, i;
    if (hostlist_number(p, x != NULL ? (size_t)(x - p) : n, &tasks) != 0 ||
        tasks < 1 || tasks > (1 << 20) ||
        (x != NULL &&
         (n < (size_t)(x - p) + 4 || x[1] != 'x' || p[n - 1] != ')' ||
          hostlist_number(x + 2, (size_t)(p + n - 1 - x - 2), &rep) != 0 ||
          rep < 1))) {
      snprintf(err, errlen, "bad task count '%.*s' in '%s' (N or N(xR))",
               (int)n, p, spec);
      return MMP_EINVAL;
    }
    for (i = 0; i < rep; i++) {
      if (done >= nnodes)
        break;
      counts[done++] = (int)tasks;
    }
    if (i < rep || p[n] == '\0') {
      if (i == rep && done == nnodes)
        return 0;
      snprintf(err, errlen,
               "task counts '%s' do not match the %d node(s) of the host list",
               spec, nnodes);
      return MMP_EINVAL;
    }
    p += n + 1;
  }
}
