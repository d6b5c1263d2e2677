/* SPDX-License-Identifier: MIT */
/*
 * Broadcast, reduction and barrier through the node segment: the ranks
 * of one host copy data into and out of shared memory and signal each
 * other with flags, instead of sending each other messages (the shm rows,
 * docs/algorithms.md "Shared-memory collectives"; the segment is the
 * runtime's, runtime/coll_api.h "Node segments").
 *
 * Broadcast: the root writes the message once, chunk by chunk, into the
 * ring of slots and raises READY after each; every other rank copies
 * each chunk out as soon as READY says it is there, then raises DONE. The
 * root reuses a slot once every rank is DONE with it, so it runs up to
 * the whole ring ahead of the slowest reader:
 *   2 alpha_node + m beta_node (a byte copied in, then out, in parallel).
 *
 * Reduction: per chunk, every rank copies its contribution into its own
 * slot and raises POSTED. Small chunks are then combined whole by every
 * rank that needs the result (one signal); larger ones in n slices, rank
 * i combining slice i of all contributions into the chunk's result slot
 * in rank order and raising REDUCED, after which the ranks that need the
 * result copy it out. Chunks use n + 1 slots and MMP__NODE_DEPTH of them
 * are in flight:
 *   2 alpha_flag + m (beta_node + (p - 1) / p gamma).
 *
 * Barrier: every rank raises ARRIVE and waits for every other's:
 *   alpha_flag.
 *
 * alpha_flag, a flag's hand-over, is priced at alpha_node / 4 (below).
 *
 * The shapes are those of MPICH's release/gather collectives and Open
 * MPI's coll/sm (a flat fan-in and fan-out through flags that hold
 * sequence numbers), with the slices of the reduction spread over all
 * ranks as in UCC's tl/shm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/core/sched.h"
#include "collectives/core/types.h"
#include "collectives/patterns/node.h"

/* Below this many bytes per rank's slice, a chunk is combined whole by
 * each rank that needs it: one signal instead of two, and the sum of a
 * short vector costs less than the wait. */
#define NODE_SLICE_MIN 1024u

/* The index of communicator rank `r` among the node's ranks. */
static int node_index(const mmp__node_view_t *v, int r) {
  for (int i = 0; i < v->n; i++)
    if (v->rank[i] == r)
      return i;
  return -1;
}

/* A call's signature (mmp__node_begin): the collective and what every
 * rank must pass alike. */
static uint64_t node_sig(uint64_t kind, uint64_t root, uint64_t len,
                         uint64_t extra) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ kind;
  uint64_t v[3] = {root, len, extra};

  for (int i = 0; i < 3; i++) {
    h ^= v[i] + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
  }
  return h;
}

static uint64_t node_chunks(size_t len, size_t chunk) {
  return len == 0 ? 1 : (uint64_t)((len + chunk - 1) / chunk);
}

int mmp__node_bcast(mmp_comm_t *comm, void *buf, size_t len, int root,
                    unsigned timeout_ms) {
  uint8_t *b = buf;
  mmp__node_t *nd;
  mmp__node_view_t v;
  uint64_t k, nch = node_chunks(len, MMP__NODE_CHUNK);
  int rc, r;

  if ((rc = mmp__node_begin(comm, timeout_ms, nch,
                            node_sig(MMP_COLL_BCAST, (uint64_t)root, len, 0),
                            &nd, &v)) != 0)
    return rc;
  if ((r = node_index(&v, root)) < 0)
    return mmp__node_end(nd, MMP_ENOTSUP);
  for (k = 0; k < nch && rc == 0; k++) {
    uint64_t u = v.base + k;
    size_t off = (size_t)k * v.chunk;
    size_t n = len - off < v.chunk ? len - off : v.chunk;
    if (v.me == r) {
      /* Slot u held slot number u - S: every rank is done with it. */
      if (u + 1 > v.slots)
        rc = mmp__node_wait(nd, MMP__NODE_DONE, MMP__NODE_ALL, u + 1 - v.slots);
      if (rc == 0) {
        memcpy(mmp__node_slot(nd, u), b + off, n);
        mmp__node_post(nd, MMP__NODE_READY, u + 1);
      }
    } else if ((rc = mmp__node_wait(nd, MMP__NODE_READY, r, u + 1)) == 0)
      memcpy(b + off, mmp__node_slot(nd, u), n);
    if (rc == 0)
      mmp__node_post(nd, MMP__NODE_DONE, u + 1);
  }
  return mmp__node_end(nd, rc);
}

/* Combines `len` bytes at `at` of the contributions in slots u0 .. u0 +
 * n - 1 into `dst`, in rank order: c0 o (c1 o (... o c(n-1))), each step
 * with the lower rank as the left operand, which leaves the slots as
 * they are (a right operand is where a user's function writes, and other
 * ranks read these slots too). */
static void node_combine(mmp__node_t *nd, const mmp__node_view_t *v,
                         uint64_t u0, size_t at, size_t len, uint8_t *dst,
                         const mmp__node_red_t *red) {
  memcpy(dst, mmp__node_slot(nd, u0 + (uint64_t)v->n - 1) + at, len);
  for (int j = v->n - 2; j >= 0; j--)
    red->fn(mmp__node_slot(nd, u0 + (uint64_t)j) + at, dst, len, 0, red->arg);
}

/* One chunk of a reduction: `m` bytes at `src` in, and out to `dst` on
 * the ranks that want the result (dst NULL elsewhere). */
static int node_reduce_chunk(mmp__node_t *nd, const mmp__node_view_t *v,
                             uint64_t u0, const uint8_t *src, uint8_t *dst,
                             size_t m, const mmp__node_red_t *red, int whole) {
  uint64_t end = u0 + (uint64_t)v->n + 1;
  size_t ne, lo, hi;
  uint8_t *res;
  int rc = 0;

  /* Its n + 1 slots held numbers end - 1 - S and below. */
  if (end > v->slots)
    rc = mmp__node_wait(nd, MMP__NODE_DONE, MMP__NODE_ALL, end - v->slots);
  if (rc != 0)
    return rc;
  memcpy(mmp__node_slot(nd, u0 + (uint64_t)v->me), src, m);
  mmp__node_post(nd, MMP__NODE_POSTED, end);
  if ((rc = mmp__node_wait(nd, MMP__NODE_POSTED, MMP__NODE_ALL, end)) != 0)
    return rc;
  if (whole) {
    if (dst != NULL)
      node_combine(nd, v, u0, 0, m, dst, red);
    mmp__node_post(nd, MMP__NODE_DONE, end);
    return 0;
  }
  ne = m / red->esize;
  lo = ne * (size_t)v->me / (size_t)v->n * red->esize;
  hi = ne * (size_t)(v->me + 1) / (size_t)v->n * red->esize;
  res = mmp__node_slot(nd, u0 + (uint64_t)v->n);
  if (hi > lo)
    node_combine(nd, v, u0, lo, hi - lo, res + lo, red);
  mmp__node_post(nd, MMP__NODE_REDUCED, end);
  if (dst != NULL) {
    if ((rc = mmp__node_wait(nd, MMP__NODE_REDUCED, MMP__NODE_ALL, end)) != 0)
      return rc;
    memcpy(dst, res, m);
  }
  mmp__node_post(nd, MMP__NODE_DONE, end);
  return 0;
}

int mmp__node_reduce(mmp_comm_t *comm, const void *in, void *out, size_t len,
                     const mmp__node_red_t *red, int root,
                     unsigned timeout_ms) {
  size_t chunk = MMP__NODE_CHUNK - MMP__NODE_CHUNK % red->esize;
  uint64_t k, nch, per;
  mmp__node_t *nd;
  mmp__node_view_t v;
  int rc, want;

  /* An element larger than a slot: every rank finds the same. */
  if (red->esize > MMP__NODE_CHUNK || len % red->esize != 0)
    return MMP_ENOTSUP;
  nch = node_chunks(len, chunk);
  per = (uint64_t)(comm->size + 1);
  if ((rc = mmp__node_begin(
           comm, timeout_ms, nch * per,
           node_sig(root < 0 ? MMP_COLL_ALLREDUCE : MMP_COLL_REDUCE,
                    (uint64_t)(int64_t)root, len,
                    (uint64_t)(uintptr_t)red->arg ^ (red->esize << 40)),
           &nd, &v)) != 0)
    return rc;
  per = (uint64_t)v.n + 1;
  want = root < 0 || v.rank[v.me] == root;
  for (k = 0; k < nch && rc == 0; k++) {
    size_t off = (size_t)k * chunk;
    size_t m = len - off < chunk ? len - off : chunk;
    rc = node_reduce_chunk(nd, &v, v.base + k * per, (const uint8_t *)in + off,
                           want ? (uint8_t *)out + off : NULL, m, red,
                           m / (size_t)v.n < NODE_SLICE_MIN);
  }
  return mmp__node_end(nd, rc);
}

int mmp__node_barrier(mmp_comm_t *comm, unsigned timeout_ms) {
  mmp__node_t *nd;
  mmp__node_view_t v;
  int rc;

  if ((rc = mmp__node_begin(comm, timeout_ms, 1,
                            node_sig(MMP_COLL_BARRIER, 0, 0, 0), &nd, &v)) != 0)
    return rc;
  mmp__node_post(nd, MMP__NODE_ARRIVE, v.base + 1);
  rc = mmp__node_wait(nd, MMP__NODE_ARRIVE, MMP__NODE_ALL, v.base + 1);
  if (rc == 0)
    mmp__node_post(nd, MMP__NODE_DONE, v.base + 1);
  return mmp__node_end(nd, rc);
}

int mmp__node_done(mmp_comm_t *comm, int rc, int source, mmp_request_t **req) {
  mmp_request_t *r;

  if (rc == MMP_ENOTSUP || (r = calloc(1, sizeof(*r))) == NULL)
    return rc == MMP_ENOTSUP ? rc : MMP_ENOMEM;
  mmp__coll_req_init(r, comm, 0, source, NULL, NULL);
  mmp__lock(mmp__eng);
  mmp__req_complete_locked(mmp__eng, r, rc);
  mmp__unlock(mmp__eng);
  *req = r;
  return 0;
}

int mmp__node_reduce_run(const mmp__run_t *run, int root, mmp_request_t **req) {
  mmp__node_red_t red = {run->d->esize, mmp__reduce_apply, run->reduce_arg};
  int rc = mmp__node_reduce(run->comm, run->in, run->buf,
                            (size_t)run->d->count * run->d->esize, &red, root,
                            run->timeout_ms);

  return mmp__node_done(run->comm, rc, root < 0 ? MMP_ANY_SOURCE : root, req);
}

/* ---- Prices ----------------------------------------------------------- */

/* A flag's hand-over is a cache line's trip and a poll, where a
 * message's alpha adds its protocol (header, matching, the ring's
 * frame): priced at a quarter of alpha_node. A byte copied into or out
 * of the segment costs half a message's byte, which moves it twice; the
 * slices of a reduction are combined in parallel (docs/design/auto.md,
 * "The shm rows"). */
#define NODE_FLAG_ALPHA 0.25

static double node_flag(const mmp__cost_in_t *in) {
  return NODE_FLAG_ALPHA * in->nm->alpha_node;
}

double mmp__node_bcast_cost(const mmp__cost_in_t *in) {
  if (!in->node)
    return INFINITY;
  return 2 * node_flag(in) + in->m * in->nm->beta_node;
}

double mmp__node_reduce_cost(const mmp__cost_in_t *in) {
  return mmp__node_allreduce_cost(in);
}

double mmp__node_allreduce_cost(const mmp__cost_in_t *in) {
  if (!in->node)
    return INFINITY;
  return 2 * node_flag(in) +
         in->m *
             (in->nm->beta_node + (in->p - 1) / (double)in->p * in->nm->gamma);
}

double mmp__node_barrier_cost(const mmp__cost_in_t *in) {
  return in->node ? node_flag(in) : INFINITY;
}
