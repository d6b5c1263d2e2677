/* SPDX-License-Identifier: MIT */
/*
 * Running a call, for every collective alike (call.h): the first checks,
 * building a static row from a description, and a schedule on the
 * address space a front-end laid out, its first messages carrying the
 * description.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/core/call.h"

int mmp__desc_build(mmp__sched_t *s, const mmp__desc_t *d, mmp__arg_t *a) {
  const mmp__alg_t *alg = d->alg;
  mmp__group_t all;
  int rc;

  if (alg == NULL || alg->build == NULL || d->root < 0 || d->root >= s->p)
    return MMP_EMISMATCH;
  if ((alg->flags & MMP__ALG_COMPOSITE) &&
      (d->groups < 1 || d->groups > s->p || d->inner == NULL ||
       d->outer == NULL || !(d->inner->flags & MMP__ALG_PART) ||
       !(d->outer->flags & MMP__ALG_PART)))
    return MMP_EMISMATCH;
  a->root = d->root;
  a->esize = d->esize;
  a->seg = d->seg;
  a->radix = d->radix;
  a->groups = d->groups;
  a->inner = d->inner;
  a->outer = d->outer;
  a->window = d->window;
  a->dep = -1;
  a->phase = 1;
  a->first = 1;
  if ((rc = mmp__sched_group_all(s, &all)) != 0)
    return rc;
  a->g = &all;
  rc = alg->build(s, a);
  a->g = NULL;
  return rc < 0 ? rc : 0;
}

/* The row of `f` named `name` into *out, NULL for AUTO (NULL or
 * "auto"). 0, or MMP_EINVAL for a name no row has. */
static int named(const mmp__family_t *f, const char *name,
                 const mmp__alg_t **out) {
  *out = NULL;
  if (name == NULL || strcmp(name, "auto") == 0)
    return 0;
  return (*out = mmp__alg_find(f, name)) != NULL ? 0 : MMP_EINVAL;
}

/* MINIMP_<COLLECTIVE>_ALG of `f`, if set, in place of AUTO: its row and
 * options (the caller's mode and timeout stay). 0, or MMP_EINVAL for a
 * name the collectives' check at init did not see (it runs where the
 * registry is linked: always in the shared library). */
static int opts_env(const mmp__family_t *f, mmp__opts_t *io) {
  const mmp__coll_config_t *cc;
  const mmp__coll_env_t *a;
  int i;

  if (mmp__eng == NULL || (cc = mmp__rt_coll_config(mmp__eng))->nalgs == 0)
    return 0;
  for (i = 0; i < cc->nalgs; i++)
    if (strcmp(cc->algs[i].var, f->env) == 0)
      break;
  if (i == cc->nalgs)
    return 0;
  a = &cc->algs[i];
  if (named(f, a->alg, &io->alg) != 0 ||
      named(f, a->inner[0] ? a->inner : NULL, &io->inner) != 0 ||
      named(f, a->outer[0] ? a->outer : NULL, &io->outer) != 0)
    return MMP_EINVAL;
  io->segment = (size_t)a->segment;
  io->radix = a->radix;
  io->groups = a->groups;
  io->rows = a->rows;
  io->window = a->window;
  io->from_env = 1;
  return 0;
}

int mmp__opts_from(const mmp__family_t *f, const mmp_coll_opts_t *o,
                   mmp__opts_t *io) {
  int rc;

  memset(io, 0, sizeof(*io));
  if (o != NULL) {
    io->mode = o->mode;
    io->timeout_ms = o->timeout_ms;
    if ((rc = named(f, o->algorithm, &io->alg)) != 0)
      return rc;
  }
  /* AUTO's choice: the environment's, or AUTO's own without the
   * caller's options. */
  if (io->alg == NULL)
    return opts_env(f, io);
  io->segment = o->segment;
  io->radix = o->radix;
  io->groups = o->groups;
  io->rows = o->rows;
  io->window = o->window;
  if ((rc = named(f, o->inner, &io->inner)) != 0 ||
      (rc = named(f, o->outer, &io->outer)) != 0)
    return rc;
  return 0;
}

int mmp__opts_blocking(mmp__opts_t *io, int blocking) {
  mmp__opts_t keep = *io;

  if (blocking || io->alg == NULL || !(io->alg->flags & MMP__ALG_BLOCKING))
    return 0;
  if (!io->from_env)
    return MMP_ENOTSUP;
  /* The variable steers the blocking calls; these run AUTO's choice. */
  memset(io, 0, sizeof(*io));
  io->mode = keep.mode;
  io->timeout_ms = keep.timeout_ms;
  return 0;
}

void mmp__opts_to(const mmp__desc_t *d, mmp_coll_opts_t *out) {
  out->algorithm = d->alg != NULL ? d->alg->name : NULL;
  out->inner = d->inner != NULL ? d->inner->name : NULL;
  out->outer = d->outer != NULL ? d->outer->name : NULL;
  out->segment = d->seg;
  out->radix = d->radix;
  out->groups = d->groups;
  out->rows = d->rows;
  out->window = d->window;
}

int mmp__coll_check(mmp_comm_t *comm, mmp_type_t type, mmp_op_t op,
                    mmp__type_info_t *ti, int *noncomm) {
  int rc = mmp__coll_ready(comm), comm_op = 1;

  if (rc == 0)
    rc = mmp__type_info(type, ti);
  if (rc == 0 && op != 0)
    rc = mmp__op_check(op, type, &comm_op);
  if (noncomm != NULL)
    *noncomm = !comm_op;
  return rc;
}

/* What a schedule copies out when it ends. */
typedef struct coll_out_s {
  void *dst;
  size_t at, len;
} coll_out_t;

static void coll_fini(mmp__sched_t *s, void *arg) {
  coll_out_t *o = arg;

  if (s->err == 0 && o->len > 0)
    memcpy(o->dst, mmp__sched_at(s, o->at), o->len);
  free(o);
}

int mmp__coll_sched_new(mmp_comm_t *comm, const mmp__family_t *f,
                        const mmp__desc_t *d, mmp_type_t type, unsigned mode,
                        unsigned timeout_ms, void *buf, size_t len,
                        const void *in, size_t in_len,
                        mmp__sched_rebuild_fn rebuild, mmp__sched_t **out) {
  uint8_t hdr[MMP__DESC_MAX];
  int rc = mmp__sched_new(mmp__eng, comm, buf, len, mode, out);

  if (rc != 0)
    return rc;
  mmp__sched_set_timeout(*out, timeout_ms);
  mmp__sched_input(*out, in, in_len);
  mmp__sched_set_header(*out, hdr, mmp__desc_encode(f, d, hdr), rebuild);
  (*out)->reduce = mmp__reduce_apply;
  (*out)->reduce_arg = mmp__reduce_arg(d->op, type);
  (*out)->source = d->root;
  (*out)->wait_by_msg = 1;
  return 0;
}

int mmp__coll_start(mmp__sched_t *s, const void *fill, size_t fill_at,
                    size_t fill_len, void *out, size_t out_at, size_t out_len,
                    mmp_request_t **req) {
  coll_out_t *o = NULL;
  uint8_t *at;

  if (s->scratch_len > 0 && mmp__sched_scratch_ptr(s, s->len) == NULL) {
    mmp__sched_free(s);
    return MMP_ENOMEM;
  }
  if (fill_len > 0) {
    at = mmp__sched_at(s, fill_at);
    if (at != fill)
      memmove(at, fill, fill_len);
  }
  if (out_len > 0) {
    if ((o = malloc(sizeof(*o))) == NULL) {
      mmp__sched_free(s);
      return MMP_ENOMEM;
    }
    o->dst = out;
    o->at = out_at;
    o->len = out_len;
    s->fini = coll_fini;
    s->fini_arg = o;
  }
  /* mmp__sched_start frees the schedule on failure; fini never ran. */
  {
    int rc = mmp__sched_start(s, req);
    if (rc != 0)
      free(o);
    return rc;
  }
}

int mmp__coll_run_dynamic(mmp_comm_t *comm, const mmp__family_t *f,
                          const mmp__desc_t *d, const mmp__opts_t *o, void *buf,
                          const void *in, void *reduce_arg,
                          mmp_request_t **req) {
  mmp__run_t run;

  memset(&run, 0, sizeof(run));
  run.e = mmp__eng;
  run.comm = comm;
  run.buf = buf;
  run.d = d;
  run.fam = f;
  run.mode = o->mode;
  run.timeout_ms =
      o->timeout_ms > 0 ? o->timeout_ms : mmp__rt_coll_timeout(mmp__eng, comm);
  run.in = in;
  run.reduce_arg = reduce_arg;
  return d->alg->start(&run, req);
}
