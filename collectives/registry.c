/* SPDX-License-Identifier: MIT */
/*
 * Every collective's table, by its public number (MMP_COLL_*): the public
 * calls that list the algorithms of any collective and ask what AUTO
 * would run, and the check of MINIMP_<COLLECTIVE>_ALG at init. The one
 * file that lists the collectives; each lists its own algorithms
 * (<collective>/table.c).
 */
#include <stdio.h>
#include <string.h>

#include "collectives/allgather/allgather.h"
#include "collectives/allreduce/allreduce.h"
#include "collectives/alltoall/alltoall.h"
#include "collectives/barrier/barrier.h"
#include "collectives/bcast/bcast.h"
#include "collectives/gather/gather.h"
#include "collectives/reduce/reduce.h"
#include "collectives/reduce_scatter/reduce_scatter.h"
#include "collectives/s2p/s2p.h"
#include "collectives/scan/scan.h"
#include "collectives/registry.h"
#include "collectives/scatter/scatter.h"

static const mmp__family_t *const families[] = {
    [MMP_COLL_ALLREDUCE] = &mmp__allreduce_family,
    [MMP_COLL_REDUCE] = &mmp__reduce_family,
    [MMP_COLL_REDUCE_SCATTER] = &mmp__reduce_scatter_family,
    [MMP_COLL_GATHER] = &mmp__gather_family,
    [MMP_COLL_SCATTER] = &mmp__scatter_family,
    [MMP_COLL_ALLGATHER] = &mmp__allgather_family,
    [MMP_COLL_ALLTOALL] = &mmp__alltoall_family,
    [MMP_COLL_BCAST] = &mmp__bcast_family,
    [MMP_COLL_S2P] = &mmp__s2p_family,
    [MMP_COLL_BARRIER] = &mmp__barrier_family,
    [MMP_COLL_SCAN] = &mmp__scan_family,
    [MMP_COLL_EXSCAN] = &mmp__exscan_family,
};

const mmp__family_t *mmp__family_of(int coll) {
  return coll > 0 && (size_t)coll < sizeof(families) / sizeof(families[0])
             ? families[coll]
             : NULL;
}

int mmp_coll_algs(int coll, int i, mmp_alg_info_t *info) {
  const mmp__family_t *f = mmp__family_of(coll);
  const mmp__alg_t *a;

  if (f == NULL || info == NULL || (a = mmp__alg_at(f, i + 1)) == NULL)
    return MMP_EINVAL;
  memset(info, 0, sizeof(*info));
  info->name = a->name;
  info->summary = a->summary;
  info->options = a->takes;
  info->flags = ((a->flags & MMP__ALG_AUTO) ? MMP_ALG_AUTO : 0) |
                ((a->flags & MMP__ALG_ORDERED) ? MMP_ALG_ORDERED : 0) |
                ((a->flags & MMP__ALG_PART) ? MMP_ALG_PART : 0);
  return 0;
}

const char *mmp_coll_name(int coll) {
  const mmp__family_t *f = mmp__family_of(coll);

  return f != NULL ? f->name : NULL;
}

int mmp_coll_select(mmp_comm_t *comm, int coll, size_t count, mmp_type_t type,
                    mmp_op_t op, mmp_coll_opts_t *out) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;
  const mmp__family_t *f = mmp__family_of(coll);
  int reducing =
      (coll >= MMP_COLL_ALLREDUCE && coll <= MMP_COLL_REDUCE_SCATTER) ||
      coll == MMP_COLL_SCAN || coll == MMP_COLL_EXSCAN;
  int rc, noncomm;
  mmp__type_info_t ti;
  mmp__opts_t o;
  mmp__call_t c;
  mmp__desc_t d;
  size_t len;

  if (out == NULL || f == NULL || coll == MMP_COLL_S2P || (reducing && op == 0))
    return MMP_EINVAL;
  if (coll == MMP_COLL_BCAST)
    return type == MMP_BYTE ? mmp_bcast_select(comm, count, out) : MMP_EINVAL;
  if ((rc = mmp__coll_check(comm, type, reducing ? op : 0, &ti, &noncomm)) !=
          0 ||
      (rc = mmp__coll_elems(count, ti.size, &len)) != 0 ||
      (rc = mmp__opts_from(f, NULL, &o)) != 0)
    return rc;
  mmp__call_init(&c, f, comm, 0, count, ti.size, ti.base, reducing ? op : 0,
                 noncomm, len);
  /* What the blocking call runs. */
  c.node = mmp__node_usable(comm);
  if ((rc = mmp__opts_check(&c, &o)) != 0 ||
      (rc = mmp__resolve(&c, &o, &d, NULL)) != 0)
    return rc;
  *out = defaults;
  mmp__opts_to(&d, out);
  return 0;
}

/* ---- MINIMP_<COLLECTIVE>_ALG ----------------------------------------------
 */

/* The names of `f`'s rows (parts only if `parts`), for a message. */
static void row_names(const mmp__family_t *f, int parts, char *out,
                      size_t cap) {
  size_t at = 0;
  int i;

  out[0] = '\0';
  for (i = 0; i < f->nrows && at < cap; i++)
    if (!parts || (f->rows[i]->flags & MMP__ALG_PART))
      at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? ", " : "",
                             f->rows[i]->name);
}

/* The part `name` of `f` ("": none). 0, or -1 after logging. */
static int check_part(const mmp__family_t *f, const char *var, const char *key,
                      const char *name) {
  const mmp__alg_t *a = mmp__alg_find(f, name);
  char names[512];

  if (name[0] == '\0' || strcmp(name, "auto") == 0 ||
      (a != NULL && (a->flags & MMP__ALG_PART)))
    return 0;
  row_names(f, 1, names, sizeof(names));
  MMP__LOG(MMP__LOG_ERROR, "%s: %s=%s is not one of %s's parts (%s)", var, key,
           name, f->name, names);
  return -1;
}

/* One variable: a known collective, a row of it, options the row takes. */
static int check_env_one(const mmp__coll_env_t *e) {
  static const char *const opt_names[] = {"segment", "radix", "groups", "inner",
                                          "outer",   "rows",  "window"};
  const mmp__family_t *f = NULL;
  const mmp__alg_t *a;
  const char *var = e->var;
  char names[512];
  size_t i;
  int c;

  for (c = 1; (size_t)c < sizeof(families) / sizeof(families[0]); c++)
    if (families[c] != NULL && strcmp(families[c]->env, e->var) == 0)
      f = families[c];
  if (f == NULL) {
    size_t at = 0;
    for (c = 1; (size_t)c < sizeof(families) / sizeof(families[0]); c++)
      if (families[c] != NULL && at < sizeof(names))
        at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s",
                               at ? ", " : "", families[c]->env);
    MMP__LOG(MMP__LOG_ERROR, "%s: not a collective's variable (%s)", var,
             names);
    return -1;
  }
  if (strcmp(e->alg, "auto") == 0) {
    if (e->given == 0)
      return 0;
    MMP__LOG(MMP__LOG_ERROR, "%s: auto takes no options", var);
    return -1;
  }
  if ((a = mmp__alg_find(f, e->alg)) == NULL) {
    row_names(f, 0, names, sizeof(names));
    MMP__LOG(MMP__LOG_ERROR, "%s: %s has no algorithm \"%s\" (%s)", var,
             f->name, e->alg, names);
    return -1;
  }
  for (i = 0; i < sizeof(opt_names) / sizeof(opt_names[0]); i++)
    if ((e->given & (1u << i)) && !(a->takes & (1u << i))) {
      MMP__LOG(MMP__LOG_ERROR, "%s: %s takes no option %s", var, a->name,
               opt_names[i]);
      return -1;
    }
  if (e->radix == 1 || e->radix > MMP__RADIX_MAX) {
    MMP__LOG(MMP__LOG_ERROR, "%s: radix=%d is not between 2 and %d", var,
             e->radix, MMP__RADIX_MAX);
    return -1;
  }
  return check_part(f, var, "inner", e->inner) |
         check_part(f, var, "outer", e->outer);
}

int mmp__coll_check_env(const mmp__coll_config_t *cc) {
  int i, bad = 0;

  for (i = 0; i < cc->nalgs; i++)
    bad |= check_env_one(&cc->algs[i]);
  return bad ? MMP_EENV : 0;
}
