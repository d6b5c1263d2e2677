/* SPDX-License-Identifier: MIT */
/*
 * Broadcast: the public calls, argument checks and the resolution of
 * options into a description every rank agrees on (mmp__bcast_desc_t).
 * The algorithms are rows of the descriptor table (bcast_algs.c), each in
 * its own file; this file picks one (mmp__bcast_choose_auto for
 * MMP_BCAST_AUTO), lets the row settle its open options, and either
 * builds and runs a schedule whose first message carries the description,
 * or starts a dynamic algorithm.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives.h"

/* The first message's header: which collective, then the description. */
#define HDR_KIND_BCAST 1
#define HDR_LEN 25

static void desc_encode(const mmp__bcast_desc_t *d, uint8_t out[HDR_LEN]) {
  memset(out, 0, HDR_LEN);
  out[0] = HDR_KIND_BCAST;
  out[1] = (uint8_t)d->alg;
  out[2] = (uint8_t)d->inner;
  out[3] = (uint8_t)d->outer;
  out[4] = (uint8_t)d->radix;
  mmp__put_u32(out + 5, (uint32_t)d->root);
  mmp__put_u64(out + 9, d->len);
  mmp__put_u32(out + 17, (uint32_t)d->seg);
  mmp__put_u32(out + 21, (uint32_t)d->groups);
}

static int desc_decode(const uint8_t *in, size_t n, mmp__bcast_desc_t *d) {
  if (n != HDR_LEN || in[0] != HDR_KIND_BCAST)
    return MMP_EPROTO;
  d->alg = in[1];
  d->inner = in[2];
  d->outer = in[3];
  d->radix = in[4];
  d->root = (int32_t)mmp__get_u32(in + 5);
  d->len = mmp__get_u64(in + 9);
  d->seg = mmp__get_u32(in + 17);
  d->groups = (int32_t)mmp__get_u32(in + 21);
  return 0;
}

/* The schedule's rebuild: the plan of the sender's description, for a
 * rank whose own differs (sched.c runs it in poison mode). */
static int bcast_rebuild(mmp__sched_t *s, const uint8_t *hdr, size_t n) {
  mmp__bcast_desc_t d;

  if (desc_decode(hdr, n, &d) != 0)
    return MMP_EMISMATCH;
  MMP__LOG(MMP__LOG_WARN,
           "broadcast %u: the sender runs %s from root %d, %llu bytes", s->seq,
           mmp_bcast_alg_name(d.alg) ? mmp_bcast_alg_name(d.alg) : "?", d.root,
           (unsigned long long)d.len);
  /* The plan must be the sender's, segment for segment, so it is built
   * from the sender's length: with this rank's own, lengths that cut into
   * different segment counts left one side waiting for a segment that
   * never came. The buffer is not touched in poison mode. A length no
   * sender could mean is a protocol error. */
  if (!mmp__poison_len_ok(d.len, d.seg))
    return MMP_EPROTO;
  s->len = (size_t)d.len;
  return mmp__bcast_build(s, &d);
}

/* ---- Choosing ----------------------------------------------------------- */

/*
 * AUTO's choice for `len` on `comm`, remembered: it depends only on p,
 * the length and the model, and evaluating every formula on every call
 * costs each rank microseconds that small broadcasts feel. Where an
 * arrival-aware broadcast pays, it takes arrival_nb when its pushes fit
 * the receivers' eager buffers (half, for whatever else is unexpected)
 * and one frame, else arrival_b.
 */
static int auto_choose(mmp_comm_t *comm, size_t len, mmp__bcast_desc_t *d) {
  mmp__coll_state_t *st = mmp__coll_state(comm);
  const mmp__config_t *cfg = &mmp__eng->cfg;
  size_t slot, seg;
  mmp_netmodel_t nm;
  int alg, groups, rc;
  double best;

  if (st == NULL)
    return MMP_ENOMEM;
  slot = (len ^ (len >> 12)) % MMP__ARRAY_SIZE(st->bcast_auto);
  if (st->bcast_auto[slot].valid && st->bcast_auto[slot].len == len) {
    *d = st->bcast_auto[slot].d;
    return 0;
  }
  if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
    return rc;
  best = mmp__bcast_choose_auto(comm->size, len, &nm, &alg, &seg, &groups);
  if (mmp__bcast_arrival_pays(comm->size, len, &nm, best)) {
    alg = len <= cfg->eager_buffer / 2 && len <= cfg->max_frame
              ? MMP_BCAST_ARRIVAL_NB
              : MMP_BCAST_ARRIVAL_B;
    seg = 0;
    groups = 0;
  }
  memset(d, 0, sizeof(*d));
  d->alg = alg;
  d->seg = seg;
  d->groups = groups;
  st->bcast_auto[slot].len = len;
  st->bcast_auto[slot].d = *d;
  st->bcast_auto[slot].valid = 1;
  return 0;
}

/* Fills `d` from `o` for a broadcast of `len` bytes from `root`. Every
 * rank computes the same. */
static int resolve(mmp_comm_t *comm, size_t len, int root,
                   const mmp_bcast_opts_t *o, mmp__bcast_desc_t *d) {
  const mmp__bcast_alg_t *alg;
  mmp__bcast_env_t env;
  int rc;

  memset(d, 0, sizeof(*d));
  if (o->algorithm == MMP_BCAST_AUTO) {
    if ((rc = auto_choose(comm, len, d)) != 0)
      return rc;
  } else {
    d->alg = o->algorithm;
    d->seg = o->segment;
    d->groups = o->groups;
  }
  d->root = root;
  d->len = len;
  alg = mmp__bcast_alg(d->alg);
  if (!(alg->flags & MMP__BCAST_F_COMPOSITE))
    d->groups = 0;
  env.comm = comm;
  env.p = comm->size;
  env.auto_pick = o->algorithm == MMP_BCAST_AUTO;
  env.cfg = &mmp__eng->cfg;
  env.alg_of = mmp__bcast_alg;
  env.choose = mmp__bcast_choose;
  if (alg->resolve != NULL && (rc = alg->resolve(d, o, &env)) != 0)
    return rc;
  /* The header carries 32 bits of segment size. */
  if (d->seg > UINT32_MAX)
    d->seg = UINT32_MAX;
  return 0;
}

/* ---- Public calls ------------------------------------------------------- */

/* `part` is 0 or may be what `needs` says. */
static int part_ok(int part, unsigned needs) {
  return part == 0 || mmp__bcast_composes(part, needs);
}

static int check(const void *buf, size_t len, int root, const mmp_comm_t *comm,
                 const mmp_bcast_opts_t *o) {
  const mmp__bcast_alg_t *alg = mmp__bcast_alg(o->algorithm);
  const unsigned any_part = MMP__BCAST_F_GROUPS | MMP__BCAST_F_SUB;
  int rc = mmp__coll_ready(comm);

  if (rc != 0)
    return rc;
  if (buf == NULL && len > 0)
    return MMP_EINVAL;
  if (root < 0 || root >= comm->size)
    return MMP_ERANK;
  if ((alg == NULL && o->algorithm != MMP_BCAST_AUTO) ||
      o->mode > MMP_SEND_RNDV || o->groups < 0 || o->groups > comm->size ||
      !part_ok(o->inner, any_part) || !part_ok(o->outer, any_part) ||
      o->radix < 0 || o->radix == 1 || o->radix > MMP__KNOMIAL_RADIX_MAX)
    return MMP_EINVAL;
  if (alg != NULL &&
      ((alg->inner_needs && !part_ok(o->inner, alg->inner_needs)) ||
       (alg->outer_needs && !part_ok(o->outer, alg->outer_needs))))
    return MMP_EINVAL;
  return 0;
}

int mmp_ibcast(void *buf, size_t len, int root, mmp_comm_t *comm,
               const mmp_bcast_opts_t *opts, mmp_request_t **req) {
  static const mmp_bcast_opts_t defaults = MMP_BCAST_OPTS_INIT;
  const mmp_bcast_opts_t *o = opts != NULL ? opts : &defaults;
  const mmp__bcast_alg_t *alg;
  mmp__bcast_desc_t d;
  uint8_t hdr[HDR_LEN];
  mmp__sched_t *s;
  int rc;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  rc = check(buf, len, root, comm, o);
  if (rc == 0)
    rc = resolve(comm, len, root, o, &d);
  if (rc != 0)
    return rc;
  alg = mmp__bcast_alg(d.alg);
  if (alg->flags & MMP__BCAST_F_DYNAMIC) {
    mmp__bcast_run_t run;
    run.e = mmp__eng;
    run.comm = comm;
    run.buf = buf;
    run.d = &d;
    run.mode = o->mode;
    run.cfg = &mmp__eng->cfg;
    run.alg_of = mmp__bcast_alg;
    return alg->start(&run, req);
  }
  rc = mmp__sched_new(mmp__eng, comm, buf, len, o->mode, &s);
  if (rc != 0)
    return rc;
  desc_encode(&d, hdr);
  mmp__sched_set_header(s, hdr, HDR_LEN, bcast_rebuild);
  s->source = root;
  rc = mmp__bcast_build(s, &d);
  if (rc != 0) {
    mmp__sched_free(s);
    return rc;
  }
  return mmp__sched_start(s, req);
}

int mmp_bcast_select(mmp_comm_t *comm, size_t len, mmp_bcast_opts_t *out) {
  static const mmp_bcast_opts_t defaults = MMP_BCAST_OPTS_INIT;
  mmp__bcast_desc_t d;
  int rc;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  rc = resolve(comm, len, 0, &defaults, &d);
  if (rc != 0)
    return rc;
  *out = defaults;
  out->algorithm = d.alg;
  out->segment = d.seg;
  out->groups = d.groups;
  out->radix = d.radix;
  out->inner = d.inner;
  out->outer = d.outer;
  return 0;
}

int mmp_bcast_ex(void *buf, size_t len, int root, mmp_comm_t *comm,
                 const mmp_bcast_opts_t *opts) {
  mmp_request_t *r;
  int rc = mmp_ibcast(buf, len, root, comm, opts, &r);

  return rc != 0 ? rc : mmp_wait(&r, MMP_STATUS_IGNORE);
}

int mmp_bcast(void *buf, size_t len, int root, mmp_comm_t *comm) {
  return mmp_bcast_ex(buf, len, root, comm, NULL);
}
