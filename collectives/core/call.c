/* SPDX-License-Identifier: MIT */
/*
 * What the front-ends of reduce, allreduce, reduce-scatter, gather,
 * scatter, allgather and alltoall share: settling a call's algorithm
 * (AUTO from the network model, over the tables of coll_algs.c), the
 * header that carries a call's description, and running a schedule on the
 * address space a front-end laid out (its own contribution copied in before the
 * start, its result copied out at the end).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/core/coll.h"

#define HDR_KIND_COLL 2
#define HDR_LEN 28

_Static_assert(MMP_DOUBLE < 16, "the header keeps the base type in 4 bits");
_Static_assert(MMP__KNOMIAL_RADIX_MAX <= 16, "and the radix in the other 4");

size_t mmp__coll_desc_encode(const mmp__coll_desc_t *d, uint8_t *out) {
  memset(out, 0, HDR_LEN);
  out[0] = HDR_KIND_COLL;
  out[1] = (uint8_t)d->coll;
  out[2] = (uint8_t)d->alg;
  /* The base type (below 16) and the radix share a byte: radix k (2 ..
   * 16) as k - 1 in the high nibble, 0 for none; the header is full. */
  out[3] =
      (uint8_t)((d->base & 0xf) | (d->radix > 1 ? (d->radix - 1) << 4 : 0));
  out[4] = (uint8_t)(d->op >> 8);
  out[5] = (uint8_t)d->op;
  out[6] = (uint8_t)(d->window >> 8);
  out[7] = (uint8_t)d->window;
  mmp__put_u32(out + 8, (uint32_t)d->root);
  mmp__put_u32(out + 12, (uint32_t)d->esize);
  mmp__put_u64(out + 16, d->count);
  mmp__put_u32(out + 24, (uint32_t)d->seg);
  return HDR_LEN;
}

int mmp__coll_desc_decode(const uint8_t *in, size_t n, mmp__coll_desc_t *d) {
  if (n != HDR_LEN || in[0] != HDR_KIND_COLL)
    return MMP_EMISMATCH;
  memset(d, 0, sizeof(*d));
  d->coll = in[1];
  d->alg = in[2];
  d->base = in[3] & 0xf;
  d->radix = in[3] >> 4 ? (in[3] >> 4) + 1 : 0;
  d->op = (in[4] << 8) | in[5];
  d->window = (in[6] << 8) | in[7];
  d->root = (int)(int32_t)mmp__get_u32(in + 8);
  d->esize = mmp__get_u32(in + 12);
  d->count = mmp__get_u64(in + 16);
  d->seg = mmp__get_u32(in + 24);
  return 0;
}

int mmp__coll_build(mmp__sched_t *s, const mmp__coll_desc_t *d,
                    mmp__coll_arg_t *a) {
  const mmp__coll_alg_t *alg = mmp__coll_alg(d->coll, d->alg);
  mmp__group_t all;
  int rc;

  if (alg == NULL || d->root < 0 || d->root >= s->p)
    return MMP_EINVAL;
  a->root = d->root;
  a->esize = d->esize;
  a->seg = d->seg;
  a->window = d->window;
  a->radix = d->radix;
  a->dep = -1;
  a->phase = 1;
  a->check = 1;
  if ((rc = mmp__sched_group_all(s, &all)) != 0)
    return rc;
  a->g = &all;
  rc = alg->build(s, a);
  a->g = NULL;
  return rc < 0 ? rc : 0;
}

/* The slot of AUTO's cached decision for `d`'s collective and the size
 * class of m (floor(log2 m)). */
static size_t auto_slot(const mmp__coll_state_t *st, int coll, double m) {
  int lg = 0;

  if (m >= 1)
    (void)frexp(m, &lg);
  return ((size_t)coll * 5 + (size_t)lg) % MMP__ARRAY_SIZE(st->coll_auto);
}

/* AUTO's decision for exactly these arguments under the current model,
 * if cached: sets d->alg and d->seg and returns 1. The decision is a
 * function of them and the model alone, so the cached one is the one
 * the model would give (mr_coll checks it). */
static int auto_cached(mmp__coll_state_t *st, mmp__coll_desc_t *d,
                       const mmp_coll_opts_t *o, double m, int noncomm) {
  const mmp__coll_auto_t *c;

  if (st == NULL)
    return 0;
  c = &st->coll_auto[auto_slot(st, d->coll, m)];
  if (!c->valid || c->gen != st->net_gen || c->coll != d->coll || c->m != m ||
      c->esize != d->esize || c->noncomm != noncomm ||
      c->req_alg != o->algorithm || c->req_seg != o->segment ||
      c->req_radix != o->radix)
    return 0;
  d->alg = c->alg;
  d->seg = c->seg;
  d->radix = c->radix;
  st->coll_auto_hits++;
  return 1;
}

static void auto_keep(mmp__coll_state_t *st, const mmp__coll_desc_t *d,
                      const mmp_coll_opts_t *o, double m, int noncomm) {
  mmp__coll_auto_t *c;

  if (st == NULL)
    return;
  c = &st->coll_auto[auto_slot(st, d->coll, m)];
  c->valid = 1;
  c->gen = st->net_gen;
  c->coll = d->coll;
  c->m = m;
  c->esize = d->esize;
  c->noncomm = noncomm;
  c->req_alg = o->algorithm;
  c->req_seg = o->segment;
  c->req_radix = o->radix;
  c->alg = d->alg;
  c->seg = d->seg;
  c->radix = d->radix;
}

int mmp__coll_resolve(mmp_comm_t *comm, mmp__coll_desc_t *d,
                      const mmp_coll_opts_t *o, double m, int noncomm) {
  const mmp__coll_alg_t *alg;
  mmp__coll_state_t *st = NULL;
  mmp_netmodel_t nm;
  int rc, need_nm;

  alg = mmp__coll_alg(d->coll, o->algorithm);
  if (o->mode > MMP_SEND_RNDV || o->window < 0 || o->segment > UINT32_MAX ||
      (o->algorithm != 0 && alg == NULL) || o->radix < 0 || o->radix == 1 ||
      o->radix > MMP__KNOMIAL_RADIX_MAX)
    return MMP_EINVAL;
  /* An operation that is not commutative needs rank order. */
  if (alg != NULL && noncomm && !(alg->flags & MMP__COLL_F_ORDERED))
    return MMP_EINVAL;
  need_nm = alg == NULL ||
            ((alg->flags & MMP__COLL_F_SEGMENTED) && o->segment == 0) ||
            (alg->radix != NULL && o->radix == 0);
  /* What the model decides is kept: pricing every row, and the model's
   * fit to the communicator's nodes, cost more than a short collective. */
  if (need_nm) {
    st = mmp__coll_state(comm);
    if (auto_cached(st, d, o, m, noncomm)) {
      d->window = o->window;
      return 0;
    }
  }
  memset(&nm, 0, sizeof(nm));
  if (need_nm && (rc = mmp__netmodel_get(comm, &nm)) != 0)
    return rc;
  if (alg == NULL)
    alg = mmp__coll_alg(d->coll,
                        mmp__coll_choose(d->coll, comm->size, m, noncomm, &nm));
  d->alg = alg->id;
  d->seg = o->segment;
  if (d->seg == 0 && (alg->flags & MMP__COLL_F_SEGMENTED))
    d->seg = alg->segment != NULL
                 ? alg->segment(comm->size, (size_t)m, d->esize, &nm)
                 : mmp__coll_seg(comm->size, (size_t)m, d->esize, &nm);
  d->seg -= d->esize ? d->seg % d->esize : 0;
  d->window = o->window;
  /* AUTO's pick runs at the radix its cost priced, whatever opts.radix. */
  d->radix = 0;
  if (alg->radix != NULL)
    d->radix = o->radix > 0 && o->algorithm != 0
                   ? o->radix
                   : alg->radix(comm->size, m, &nm);
  if (need_nm)
    auto_keep(st, d, o, m, noncomm);
  return 0;
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

int mmp__coll_sched_new(mmp_comm_t *comm, const mmp__coll_desc_t *d,
                        mmp_type_t type, const mmp_coll_opts_t *o, void *buf,
                        size_t len, const void *in, size_t in_len,
                        mmp__sched_t **out) {
  uint8_t hdr[MMP__HDR_MAX];
  int rc = mmp__sched_new(mmp__eng, comm, buf, len, o->mode, out);

  if (rc != 0)
    return rc;
  mmp__sched_set_timeout(*out, o->timeout_ms);
  mmp__sched_input(*out, in, in_len);
  mmp__sched_set_header(*out, hdr, mmp__coll_desc_encode(d, hdr), NULL);
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

int mmp_coll_select(mmp_comm_t *comm, int coll, size_t count, mmp_type_t type,
                    mmp_op_t op, mmp_coll_opts_t *out) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;
  int reducing = coll >= MMP_COLL_ALLREDUCE && coll <= MMP_COLL_REDUCE_SCATTER;
  int rc, noncomm;
  mmp__type_info_t ti;
  mmp__coll_desc_t d;
  size_t len;

  if (out == NULL || mmp__coll_table(coll) == NULL || (reducing && op == 0))
    return MMP_EINVAL;
  if ((rc = mmp__coll_check(comm, type, reducing ? op : 0, &ti, &noncomm)) !=
          0 ||
      (rc = mmp__coll_elems(count, ti.size, &len)) != 0)
    return rc;
  memset(&d, 0, sizeof(d));
  d.coll = coll;
  d.esize = ti.size;
  rc = mmp__coll_resolve(comm, &d, &defaults, (double)len, noncomm);
  if (rc != 0)
    return rc;
  *out = defaults;
  out->algorithm = d.alg;
  out->segment = d.seg;
  out->radix = d.radix;
  return 0;
}
