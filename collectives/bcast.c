/* SPDX-License-Identifier: MIT */
/*
 * Broadcast: the public calls, argument checks, option resolution and the
 * hierarchical composition (seed 001, section 3). Each algorithm proper
 * lives in its own bcast_<name>.c as a schedule builder; this file picks
 * one (mmp__bcast_choose_auto for MMP_BCAST_AUTO), describes the choice in the
 * header that travels with the first message, and runs the schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives.h"

static const char *const alg_names[MMP_BCAST_ALG_COUNT] = {
    "auto",         "flat",      "chain",        "pipeline",   "binary",
    "split_binary", "binomial",  "scatter_ring", "scatter_rd", "hierarchical",
    "symmetric",    "arrival_b", "arrival_nb",   "knomial"};

const char *mmp_bcast_alg_name(int alg) {
  return alg >= 0 && alg < MMP_BCAST_ALG_COUNT ? alg_names[alg] : NULL;
}

int mmp_bcast_alg_from_name(const char *name) {
  int i;

  if (name == NULL)
    return MMP_EINVAL;
  for (i = 0; i < MMP_BCAST_ALG_COUNT; i++)
    if (strcmp(name, alg_names[i]) == 0)
      return i;
  return MMP_EINVAL;
}

mmp__bcast_builder mmp__bcast_builder_of(int alg) {
  switch (alg) {
  case MMP_BCAST_FLAT:
    return mmp__bcast_flat;
  case MMP_BCAST_CHAIN:
    return mmp__bcast_chain;
  case MMP_BCAST_PIPELINE:
    return mmp__bcast_pipeline;
  case MMP_BCAST_BINARY:
    return mmp__bcast_binary;
  case MMP_BCAST_SPLIT_BINARY:
    return mmp__bcast_split_binary;
  case MMP_BCAST_BINOMIAL:
    return mmp__bcast_binomial;
  case MMP_BCAST_SCATTER_RING:
    return mmp__bcast_scatter_ring;
  case MMP_BCAST_SCATTER_RD:
    return mmp__bcast_scatter_rd;
  case MMP_BCAST_SYMMETRIC:
    return mmp__bcast_symmetric;
  case MMP_BCAST_KNOMIAL:
    return mmp__bcast_knomial;
  default:
    return NULL;
  }
}

/* ---- The hierarchical transformation ----------------------------------- */

/* Groups are runs of consecutive virtual ranks (relative to the root), the
 * first G' = p mod G of them one member larger; the first member of each
 * group leads it, so the root leads group 0. */
static int group_start(int p, int G, int g) {
  int base = p / G, extra = p % G;
  return g * base + (g < extra ? g : extra);
}

static int build_hier(mmp__sched_t *s, const mmp__coll_hdr_t *h, int root) {
  int p = s->comm->size, me = s->comm->rank, G = (int)h->groups, g, i;
  int v = mmp__vrank(me, root, p), mine = 0, done;
  int *leaders = malloc((size_t)G * sizeof(int));
  int *inner = malloc((size_t)p * sizeof(int));
  mmp__group_t outer_g, inner_g;
  mmp__bcast_arg_t a;
  int rc = MMP_ENOMEM;

  if (leaders == NULL || inner == NULL)
    goto out;
  for (g = 0; g < G; g++) {
    leaders[g] = mmp__rrank(group_start(p, G, g), root, p);
    if (v >= group_start(p, G, g))
      mine = g;
  }
  outer_g.n = G;
  outer_g.ranks = leaders;
  outer_g.me = v == group_start(p, G, mine) ? mine : -1;
  inner_g.n = group_start(p, G, mine + 1) - group_start(p, G, mine);
  for (i = 0; i < inner_g.n; i++)
    inner[i] = mmp__rrank(group_start(p, G, mine) + i, root, p);
  inner_g.ranks = inner;
  inner_g.me = v - group_start(p, G, mine);

  memset(&a, 0, sizeof(a));
  a.g = &outer_g;
  a.len = s->len;
  a.seg = h->seg;
  a.dep = -1;
  a.phase = 1;
  a.first = 1;
  done = mmp__bcast_builder_of(h->outer)(s, &a);
  if (done < 0) {
    rc = done;
    goto out;
  }
  /* A leader forwards inside its group once it holds the data. */
  a.g = &inner_g;
  a.dep = done;
  a.phase = 20;
  rc = mmp__bcast_builder_of(h->inner)(s, &a);
  rc = rc < 0 ? rc : 0;
out:
  free(leaders);
  free(inner);
  return rc;
}

/* The schedule builder for a broadcast described by `h`. */
static int bcast_build(mmp__sched_t *s, const mmp__coll_hdr_t *h) {
  int p = s->comm->size, i, rc;
  mmp__bcast_builder b;
  mmp__bcast_arg_t a;
  mmp__group_t all;
  int *ranks;

  if (h->root < 0 || h->root >= p)
    return MMP_EMISMATCH;
  if (h->alg == MMP_BCAST_HIERARCHICAL) {
    if (h->groups < 1 || h->groups > (uint32_t)p ||
        mmp__bcast_builder_of(h->inner) == NULL ||
        mmp__bcast_builder_of(h->outer) == NULL)
      return MMP_EMISMATCH;
    return build_hier(s, h, h->root);
  }
  b = mmp__bcast_builder_of(h->alg);
  if (b == NULL || (h->alg == MMP_BCAST_KNOMIAL &&
                    (h->groups < 2 || h->groups > MMP__KNOMIAL_RADIX_MAX)))
    return MMP_EMISMATCH;
  ranks = malloc((size_t)p * sizeof(int));
  if (ranks == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < p; i++)
    ranks[i] = i;
  all.n = p;
  all.me = s->comm->rank;
  all.ranks = ranks;
  memset(&a, 0, sizeof(a));
  a.g = &all;
  a.root = h->root;
  a.len = s->len;
  a.seg = h->seg;
  a.dep = -1;
  a.phase = 1;
  a.first = 1;
  a.radix = (int)h->groups; /* the header's groups field carries it */
  rc = b(s, &a);
  free(ranks);
  return rc < 0 ? rc : 0;
}

/* ---- Choosing ----------------------------------------------------------- */

/* A byte count from the environment ("65536", "64k", "1m"), or `def`
 * when unset. MMP_EENV when malformed. */
static int env_bytes(const char *name, size_t def, size_t *out) {
  const char *v = getenv(name);
  char *end;
  unsigned long long x;

  *out = def;
  if (v == NULL || *v == '\0')
    return 0;
  x = strtoull(v, &end, 10);
  if (end == v)
    goto bad;
  if (*end == 'k' || *end == 'K')
    x <<= 10, end++;
  else if (*end == 'm' || *end == 'M')
    x <<= 20, end++;
  if (*end != '\0' || v[0] == '-')
    goto bad;
  *out = (size_t)x;
  return 0;
bad:
  MMP__LOG(MMP__LOG_ERROR, "%s=%s: expected a byte count (64k, 1m)", name, v);
  return MMP_EENV;
}

/* The symmetric broadcast's sub-segment S: the root pays (n / S) alpha
 * in message overheads and the last sub-segment's forwarding adds
 * (q - 1)(alpha + S beta) after the root's n beta (q = p - 1 receivers),
 * so S = sqrt(n alpha / ((q - 1) beta)), at least 4 KiB, and pieces are
 * cut into equal parts of at least S (mmp__even_seg). Where the whole
 * message fits the burst allowance the bytes cost no time and each
 * sub-segment only adds messages: pieces go whole. Measured on the
 * emulated cluster, 64 KiB, max OL_i (performance.md): p = 8, links
 * rested, whole pieces 0.92-1.2 ms, 2 parts 1.26-1.48, 3 parts
 * 1.46-1.58; p = 16, whole 2.3-3.2 ms, 2 parts 3.7-5.5 ms. */
static size_t symmetric_seg(int p, size_t len, const mmp__netmodel_t *nm) {
  int q = p - 1;
  double S;

  if (q < 2 || (nm->burst > 0 && (double)len <= nm->burst))
    return 0;
  if (nm->alpha <= 0 || nm->beta <= 0)
    S = MMP__SYMMETRIC_SEG_DEFAULT;
  else
    S = sqrt((double)len * nm->alpha / ((double)(q - 1) * nm->beta));
  if (S < 4096)
    S = 4096;
  return mmp__even_seg((len + (size_t)q - 1) / (size_t)q, S);
}

/* Options of the symmetric and arrival-aware broadcasts: the symmetric one
 * sends short messages whole (the flat broadcast) and cuts pieces into
 * sub-segments sized by the model (symmetric_seg); the arrival-aware ones
 * run a pipelined chain with the model's segment unless told otherwise. */
static int resolve_dynamic(mmp_comm_t *comm, size_t len,
                           const mmp_bcast_opts_t *o, mmp__coll_hdr_t *h) {
  /* AUTO's pick was priced with the model's segment and the default
   * threshold: neither opts.segment nor MINIMP_BCAST_SYM_MIN changes it
   * (the latter would turn a 64 KiB symmetric pick into the flat tree). */
  int auto_pick = o->algorithm == MMP_BCAST_AUTO;
  size_t min = MMP__SYMMETRIC_MIN_DEFAULT, seg = auto_pick ? 0 : o->segment;
  mmp__netmodel_t nm;
  int rc;

  if (h->alg == MMP_BCAST_SYMMETRIC) {
    if (!auto_pick && (rc = env_bytes("MINIMP_BCAST_SYM_MIN",
                                      MMP__SYMMETRIC_MIN_DEFAULT, &min)) != 0)
      return rc;
    if (len < min) {
      h->alg = MMP_BCAST_FLAT;
      seg = 0;
    } else if (seg == 0) {
      if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
        return rc;
      seg = symmetric_seg(comm->size, len, &nm);
    }
  } else {
    h->inner = (uint8_t)(o->inner != 0 ? o->inner : MMP_BCAST_PIPELINE);
    if (seg == 0 && h->inner == MMP_BCAST_PIPELINE) {
      if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
        return rc;
      seg = mmp__pipeline_seg(comm->size, len, &nm);
    }
  }
  h->seg = (uint32_t)(seg > UINT32_MAX ? UINT32_MAX : seg);
  return 0;
}

/* AUTO's choice for `len` on `comm`, remembered: it depends only on p,
 * the length and the model, and evaluating every formula on every call
 * costs each rank microseconds that small broadcasts feel, all the more
 * where ranks share CPUs. */
static void auto_choose(mmp_comm_t *comm, size_t len, const mmp__netmodel_t *nm,
                        int *alg, size_t *seg, int *groups) {
  size_t n = sizeof(comm->bcast_auto) / sizeof(comm->bcast_auto[0]);
  size_t slot = (len ^ (len >> 12)) % n;
  double best;

  if (comm->bcast_auto[slot].valid && comm->bcast_auto[slot].len == len) {
    *alg = comm->bcast_auto[slot].alg;
    *seg = comm->bcast_auto[slot].seg;
    *groups = comm->bcast_auto[slot].groups;
    return;
  }
  best = mmp__bcast_choose_auto(comm->size, len, nm, alg, seg, groups);
  if (mmp__bcast_arrival_pays(comm->size, len, nm, best)) {
    /* arrival_nb's pushes must go eager: fit the receivers' eager
     * buffers (half, for whatever else is unexpected) and one frame;
     * else the blocking model's. */
    *alg =
        len <= mmp__eng->cfg.eager_buffer / 2 && len <= mmp__eng->cfg.max_frame
            ? MMP_BCAST_ARRIVAL_NB
            : MMP_BCAST_ARRIVAL_B;
    *seg = 0;
    *groups = 0;
  }
  comm->bcast_auto[slot].len = len;
  comm->bcast_auto[slot].seg = *seg;
  comm->bcast_auto[slot].alg = *alg;
  comm->bcast_auto[slot].groups = *groups;
  comm->bcast_auto[slot].valid = 1;
}

/* Fills in what `opts` leaves open. Every rank computes the same. */
static int resolve(mmp_comm_t *comm, size_t len, const mmp_bcast_opts_t *o,
                   mmp__coll_hdr_t *h) {
  int p = comm->size, alg = o->algorithm, groups = o->groups;
  size_t seg = o->segment;
  mmp__netmodel_t nm;
  int rc;

  if (alg == MMP_BCAST_AUTO ||
      (alg == MMP_BCAST_HIERARCHICAL && (o->inner == 0 || o->outer == 0)) ||
      (seg == 0 && alg == MMP_BCAST_PIPELINE)) {
    rc = mmp__netmodel_get(comm, &nm);
    if (rc != 0)
      return rc;
  }
  if (alg == MMP_BCAST_AUTO) {
    auto_choose(comm, len, &nm, &alg, &seg, &groups);
  } else if (alg == MMP_BCAST_PIPELINE && seg == 0) {
    seg = mmp__pipeline_seg(p, len, &nm);
  }
  memset(h, 0, sizeof(*h));
  h->kind = MMP__COLL_BCAST;
  h->alg = (uint8_t)alg;
  h->root = 0;
  h->len = len;
  h->seg = (uint32_t)(seg > UINT32_MAX ? UINT32_MAX : seg);
  h->groups = 0;
  h->inner = h->outer = 0;
  if (alg == MMP_BCAST_HIERARCHICAL) {
    int G = groups > 0 ? groups : (int)ceil(sqrt((double)p));
    int in = o->inner, out = o->outer, ignored;
    size_t s2;
    if (G > p)
      G = p;
    if (in == 0)
      mmp__bcast_choose((p + G - 1) / G, len, &nm, &in, &s2, &ignored);
    if (out == 0)
      mmp__bcast_choose(G, len, &nm, &out, &s2, &ignored);
    /* Inside and between groups only flat algorithms compose. */
    if (in == MMP_BCAST_HIERARCHICAL)
      in = MMP_BCAST_BINOMIAL;
    if (out == MMP_BCAST_HIERARCHICAL)
      out = MMP_BCAST_BINOMIAL;
    h->groups = (uint32_t)G;
    h->inner = (uint8_t)in;
    h->outer = (uint8_t)out;
  }
  /* AUTO's k-nomial tree has the default radix, whatever opts.radix. */
  if (alg == MMP_BCAST_KNOMIAL)
    h->groups = (uint32_t)(o->algorithm == MMP_BCAST_KNOMIAL && o->radix > 0
                               ? o->radix
                               : MMP__KNOMIAL_RADIX_DEFAULT);
  if (alg == MMP_BCAST_SYMMETRIC || alg == MMP_BCAST_ARRIVAL_B ||
      alg == MMP_BCAST_ARRIVAL_NB)
    return resolve_dynamic(comm, len, o, h);
  return 0;
}

/* The arrival-aware root's timing, in microseconds, from the model: the
 * gathering window (mmp__arrival_window, or
 * MINIMP_BCAST_ARRIVAL_WINDOW_US), and how long a round or push keeps the
 * root's link busy, T(m) = alpha + m beta (the burst allowance does not
 * help rounds that follow each other). */
static int arrival_times(mmp_comm_t *comm, size_t len, size_t *window,
                         size_t *pace) {
  mmp__netmodel_t nm;
  double t;
  int rc;

  if ((rc = mmp__netmodel_get(comm, &nm)) != 0)
    return rc;
  t = nm.alpha + (double)len * nm.beta;
  *pace = (size_t)(t * 1e6);
  if (getenv("MINIMP_BCAST_ARRIVAL_WINDOW_US") != NULL)
    return env_bytes("MINIMP_BCAST_ARRIVAL_WINDOW_US", 0, window);
  *window = (size_t)(mmp__arrival_window(comm->size, len, &nm) * 1e6);
  return 0;
}

/* ---- Public calls ------------------------------------------------------- */

static int check(const void *buf, size_t len, int root, const mmp_comm_t *comm,
                 const mmp_bcast_opts_t *o) {
  int rc = mmp__coll_ready(comm);

  if (rc != 0)
    return rc;
  if (buf == NULL && len > 0)
    return MMP_EINVAL;
  if (root < 0 || root >= comm->size)
    return MMP_ERANK;
  if (o->algorithm < 0 || o->algorithm >= MMP_BCAST_ALG_COUNT ||
      o->mode > MMP_SEND_RNDV || o->groups < 0 || (o->groups > comm->size) ||
      o->inner < 0 || o->inner >= MMP_BCAST_HIERARCHICAL || o->outer < 0 ||
      o->outer >= MMP_BCAST_HIERARCHICAL || o->radix < 0 || o->radix == 1 ||
      o->radix > MMP__KNOMIAL_RADIX_MAX)
    return MMP_EINVAL;
  return 0;
}

int mmp_ibcast(void *buf, size_t len, int root, mmp_comm_t *comm,
               const mmp_bcast_opts_t *opts, mmp_request_t **req) {
  static const mmp_bcast_opts_t defaults = MMP_BCAST_OPTS_INIT;
  mmp__engine_t *e = mmp__eng;
  const mmp_bcast_opts_t *o = opts != NULL ? opts : &defaults;
  mmp__coll_hdr_t h;
  mmp__sched_t *s;
  int rc;

  if (req == NULL)
    return MMP_EINVAL;
  *req = NULL;
  rc = check(buf, len, root, comm, o);
  if (rc == 0)
    rc = resolve(comm, len, o, &h);
  if (rc != 0)
    return rc;
  h.root = root;
  if (h.alg == MMP_BCAST_ARRIVAL_B || h.alg == MMP_BCAST_ARRIVAL_NB) {
    size_t window, pace;
    if ((rc = arrival_times(comm, len, &window, &pace)) != 0)
      return rc;
    return mmp__bcast_arrival_start(e, comm, buf, len, &h, o->mode, window,
                                    pace, req);
  }
  rc = mmp__sched_new(e, comm, buf, len, o->mode, &h, bcast_build, &s);
  if (rc != 0)
    return rc;
  return mmp__sched_start(s, req);
}

int mmp_bcast_select(mmp_comm_t *comm, size_t len, mmp_bcast_opts_t *out) {
  static const mmp_bcast_opts_t defaults = MMP_BCAST_OPTS_INIT;
  mmp__coll_hdr_t h;
  int rc;

  if (out == NULL)
    return MMP_EINVAL;
  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  rc = resolve(comm, len, &defaults, &h);
  if (rc != 0)
    return rc;
  *out = defaults;
  out->algorithm = h.alg;
  out->segment = h.seg;
  out->groups = h.alg == MMP_BCAST_KNOMIAL ? 0 : (int)h.groups;
  out->radix = h.alg == MMP_BCAST_KNOMIAL ? (int)h.groups : 0;
  out->inner = h.inner;
  out->outer = h.outer;
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
