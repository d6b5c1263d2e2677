/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench's command-line helpers (see bench_cli.h). Every rank of a
 * job parses the same arguments, so a usage error is printed by the rank
 * that minimprun numbers 0 (or by the process, run alone) and all of them
 * exit with status 2.
 */
#include "bench_cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_version.h"
#include "minimp.h"

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

static int cli_argc;
static char **cli_argv;

void cli_set_args(int argc, char **argv) {
  cli_argc = argc;
  cli_argv = argv;
}

const char *cli_version(void) {
  return CLI_STR(MMP_VERSION_MAJOR) "." CLI_STR(MMP_VERSION_MINOR) "." CLI_STR(
      MMP_VERSION_PATCH);
}

const char *cli_commit(void) {
  return MMP_BENCH_COMMIT[0] != '\0' ? MMP_BENCH_COMMIT : "unknown";
}

/* Under minimprun every rank parses the same line: one of them speaks. */
static int cli_speaks(void) {
  const char *r = getenv("MINIMP_RANK");
  return r == NULL || strcmp(r, "0") == 0;
}

int cli_fail(const char *fmt, ...) {
  char line[1024];
  va_list ap;

  if (!cli_speaks())
    return 2;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fprintf(stderr, "minimp-bench: %s\nTry 'minimp-bench --help' for more.\n",
          line);
  return 2;
}

int cli_long(const char *opt, const char *v, long lo, long hi, long *out) {
  char *end;
  long x;

  errno = 0;
  x = strtol(v, &end, 10);
  if (end == v || *end != '\0' || errno != 0 || x < lo || x > hi)
    return cli_fail("%s: '%s' is not a whole number from %ld to %ld", opt, v,
                    lo, hi);
  *out = x;
  return 0;
}

int cli_double(const char *opt, const char *v, double lo, double hi,
               double *out) {
  char *end;
  double x;

  errno = 0;
  x = strtod(v, &end);
  if (end == v || *end != '\0' || errno != 0 || !isfinite(x) || x < lo ||
      x > hi)
    return cli_fail("%s: '%s' is not a number from %g to %g", opt, v, lo, hi);
  *out = x;
  return 0;
}

int cli_size(const char *opt, const char *v, size_t *out) {
  char *end = NULL;
  unsigned long long x;
  unsigned shift = 0;

  /* strtoull takes "-1" as a huge number: digits only. */
  if (v[0] < '0' || v[0] > '9')
    goto bad;
  errno = 0;
  x = strtoull(v, &end, 10);
  if (errno != 0)
    goto bad;
  switch (*end) {
  case 'k':
  case 'K':
    shift = 10;
    end++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    end++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    end++;
    break;
  default:
    break;
  }
  if (*end != '\0' || x > (SIZE_MAX >> shift))
    goto bad;
  *out = (size_t)x << shift;
  return 0;
bad:
  return cli_fail("%s: '%s' is not a size (bytes, or with a k, m or g "
                  "suffix: 64k, 4m)",
                  opt, v);
}

int cli_sizes(const char *opt, const char *list, size_t *out, int max, int *n) {
  char *copy = strdup(list), *tok, *save = NULL;
  int rc = 0;

  *n = 0;
  if (copy == NULL)
    return cli_fail("out of memory");
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == max)
      rc = cli_fail("%s: more than %d sizes", opt, max);
    else if ((rc = cli_size(opt, tok, &out[*n])) == 0)
      (*n)++;
  }
  free(copy);
  if (rc == 0 && *n == 0)
    rc = cli_fail("%s: '%s' names no size", opt, list);
  return rc;
}

/* The names of the table, comma-separated, into buf. */
static void cli_join(char *buf, size_t cap, cli_name_fn name, const void *ctx) {
  const char *s;
  size_t used = 0;
  int i;

  buf[0] = '\0';
  for (i = 0; (s = name(ctx, i)) != NULL && used < cap; i++) {
    int w = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", s);
    used += w > 0 ? (size_t)w : 0;
  }
}

static int cli_lookup(const char *s, cli_name_fn name, const void *ctx) {
  const char *t;
  int i;

  for (i = 0; (t = name(ctx, i)) != NULL; i++)
    if (strcmp(s, t) == 0)
      return i;
  return -1;
}

int cli_names(const char *opt, const char *list, const char *what,
              cli_name_fn name, const void *ctx, int allow_all, int *out,
              int max, int *n) {
  char *copy = strdup(list), *tok, *save = NULL, known[1024];
  int rc = 0, v;

  *n = 0;
  if (copy == NULL)
    return cli_fail("out of memory");
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    if (allow_all && strcmp(tok, "all") == 0) {
      for (v = 0; name(ctx, v) != NULL && *n < max; v++)
        out[(*n)++] = v;
      continue;
    }
    v = cli_lookup(tok, name, ctx);
    if (v < 0) {
      cli_join(known, sizeof(known), name, ctx);
      rc = cli_fail("%s: unknown %s '%s' (known: %s%s)", opt, what, tok,
                    allow_all ? "all, " : "", known);
    } else if (*n == max) {
      rc = cli_fail("%s: more than %d names", opt, max);
    } else {
      out[(*n)++] = v;
    }
  }
  free(copy);
  if (rc == 0 && *n == 0)
    rc = cli_fail("%s: '%s' names no %s", opt, list, what);
  return rc;
}

void cli_print_names(FILE *f, int indent, cli_name_fn name, const void *ctx) {
  const char *s;
  int i, col = 0;

  for (i = 0; (s = name(ctx, i)) != NULL; i++) {
    int w = (int)strlen(s) + (name(ctx, i + 1) != NULL ? 1 : 0);
    if (col > 0 && col + 1 + w > 78) {
      fputc('\n', f);
      col = 0;
    }
    if (col == 0)
      col = fprintf(f, "%*s", indent, "");
    else
      col += fprintf(f, " ");
    col += fprintf(f, "%s%s", s, name(ctx, i + 1) != NULL ? "," : "");
  }
  fputc('\n', f);
}

void cli_comment(FILE *f) {
  char host[256] = "unknown", date[64] = "unknown";
  time_t now = time(NULL);
  struct tm tm;
  int i;

  if (gethostname(host, sizeof(host)) != 0)
    strcpy(host, "unknown");
  host[sizeof(host) - 1] = '\0';
  if (gmtime_r(&now, &tm) != NULL)
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
  fprintf(f, "# minimp-bench %s commit %s date %s host %s ranks %d args",
          cli_version(), cli_commit(), date, host,
          mmp_comm_size(mmp_comm_world()));
  for (i = 1; i < cli_argc; i++)
    fprintf(f, " %s", cli_argv[i]);
  fputc('\n', f);
}

FILE *cli_open_csv(const char *path, const char *header) {
  FILE *f;

  if (path == NULL)
    return NULL;
  f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "minimp-bench: cannot write '%s': %s\n", path,
            strerror(errno));
    mmp_abort(1);
  }
  cli_comment(f);
  fprintf(f, "%s\n", header);
  return f;
}

const char *cli_alg(const void *coll, int i) {
  mmp_alg_info_t a;

  if (i == 0)
    return "auto";
  return i > 0 && mmp_coll_algs(*(const int *)coll, i - 1, &a) == 0 ? a.name
                                                                    : NULL;
}
