/* SPDX-License-Identifier: MIT */
/*
 * The registry mechanism every collective's table uses: rows by name and
 * by number, and the check of a table's rows when the library loads
 * (debug builds). Which rows a collective has is its table file's
 * business (<collective>/table.c); nothing here lists them.
 */
#include <stdio.h>
#include <string.h>

#include "collectives/core/alg.h"

const mmp__alg_t *mmp__alg_find(const mmp__family_t *f, const char *name) {
  int i;

  if (name == NULL)
    return NULL;
  for (i = 0; i < f->nrows; i++)
    if (strcmp(f->rows[i]->name, name) == 0)
      return f->rows[i];
  return NULL;
}

int mmp__alg_index(const mmp__family_t *f, const mmp__alg_t *a) {
  int i;

  for (i = 0; a != NULL && i < f->nrows; i++)
    if (f->rows[i] == a)
      return i + 1;
  return 0;
}

/* A name users can type in an environment variable: [a-z0-9_]+, not
 * "auto". */
static int plain_name(const char *s) {
  const char *c;

  if (s == NULL || *s == '\0' || strcmp(s, "auto") == 0)
    return 0;
  for (c = s; *c != '\0'; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
      return 0;
  return 1;
}

/* One row's own consistency: its count of violations, each logged. */
static int row_check(const mmp__family_t *f, const mmp__alg_t *a) {
  int bad = 0, dyn = (a->flags & MMP__ALG_DYNAMIC) != 0;

#define ROW_RULE(ok, what)                                                     \
  do {                                                                         \
    if (!(ok)) {                                                               \
      MMP__LOG(MMP__LOG_ERROR, "%s row \"%s\": %s", f->name,                   \
               a->name != NULL ? a->name : "?", what);                         \
      bad++;                                                                   \
    }                                                                          \
  } while (0)
  ROW_RULE(plain_name(a->name), "its name is not [a-z0-9_]+");
  ROW_RULE(a->summary != NULL, "it has no summary");
  ROW_RULE((a->build != NULL) + (a->plan != NULL) + (a->start != NULL) == 1,
           "it needs exactly one of build, plan and start");
  ROW_RULE((a->start != NULL) == dyn, "start goes with MMP__ALG_DYNAMIC");
  ROW_RULE(!(a->flags & MMP__ALG_AUTO) ||
               ((a->cost != NULL || a->plan != NULL) && a->prefer > 0),
           "AUTO prices what it may choose, in an order (prefer)");
  ROW_RULE(!(a->flags & MMP__ALG_TOP) || (a->flags & MMP__ALG_AUTO),
           "MMP__ALG_TOP qualifies MMP__ALG_AUTO");
  ROW_RULE(!(a->flags & MMP__ALG_PART) ||
               (a->build != NULL && !(a->flags & MMP__ALG_COMPOSITE)),
           "a part is static and not composite");
  ROW_RULE(!(a->flags & MMP__ALG_COMPOSITE) ||
               (a->takes & (MMP_OPT_INNER | MMP_OPT_OUTER)) ==
                   (MMP_OPT_INNER | MMP_OPT_OUTER),
           "a composite takes its inner and outer parts");
  ROW_RULE(!(a->flags & MMP__ALG_SEGMENTED) || (a->takes & MMP_OPT_SEGMENT),
           "a row AUTO segments takes a segment");
  ROW_RULE(!(a->flags & MMP__ALG_BLOCKING) || dyn,
           "MMP__ALG_BLOCKING goes with MMP__ALG_DYNAMIC");
  ROW_RULE(a->segment == NULL || (a->flags & MMP__ALG_SEGMENTED),
           "a segment hook goes with MMP__ALG_SEGMENTED");
#undef ROW_RULE
  return bad;
}

int mmp__family_check(const mmp__family_t *f) {
  char env[64];
  int bad = 0, i, j;

  /* MINIMP_<NAME>_ALG: config.c finds the variables by that shape. */
  snprintf(env, sizeof(env), "MINIMP_%s_ALG", f->name);
  for (i = 7; env[i] != '\0'; i++)
    if (env[i] >= 'a' && env[i] <= 'z')
      env[i] = (char)(env[i] - 'a' + 'A');
  if (f->env == NULL || strcmp(f->env, env) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "%s table: .env is %s, should be %s", f->name,
             f->env != NULL ? f->env : "NULL", env);
    bad++;
  }

  for (i = 0; i < f->nrows; i++) {
    const mmp__alg_t *a = f->rows[i];
    if (a == NULL) {
      MMP__LOG(MMP__LOG_ERROR, "%s table: row %d is missing", f->name, i + 1);
      bad++;
      continue;
    }
    bad += row_check(f, a);
    for (j = 0; j < i; j++) {
      const mmp__alg_t *b = f->rows[j];
      if (b != NULL && strcmp(a->name, b->name) == 0) {
        MMP__LOG(MMP__LOG_ERROR, "%s table: two rows named \"%s\"", f->name,
                 a->name);
        bad++;
      }
      if (b != NULL && a->prefer != 0 && a->prefer == b->prefer) {
        MMP__LOG(MMP__LOG_ERROR, "%s table: \"%s\" and \"%s\" share prefer %d",
                 f->name, a->name, b->name, a->prefer);
        bad++;
      }
    }
  }
  /* The wire descriptor numbers rows in a byte, and inner and outer in
   * seven bits. */
  if (f->nrows > 127) {
    MMP__LOG(MMP__LOG_ERROR, "%s table: %d rows, at most 127", f->name,
             f->nrows);
    bad++;
  }
  return bad;
}
