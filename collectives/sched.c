/* SPDX-License-Identifier: MIT */
/*
 * The schedule executor: builds the dependency graph of a collective's
 * sends and receives, posts every operation whose predecessors are done,
 * and advances from the runtime's completion callbacks (engine.lock held),
 * so a segment is forwarded the moment it lands. No operation blocks and
 * the executor never re-enters itself: completions that happen while it
 * posts only queue their successors.
 *
 * The first message a non-root rank receives carries a header describing
 * the collective as its sender sees it (collectives.h). Until it arrives
 * nothing else is posted. A header that disagrees with this rank's
 * arguments, or that says an upstream rank already disagreed, switches
 * the schedule to poison mode: it is rebuilt from the header, so it
 * matches what will actually be sent here, every receive discards its
 * data and every send goes out empty, and the collective ends with
 * MMP_EMISMATCH on every rank downstream, instead of a hang.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives.h"

/* Larger first payloads travel after a header-only first message, so that
 * neither end copies a large region to prepend 32 bytes. */
#define FIRST_PIGGYBACK_MAX (64 * 1024)
#define PHASE_FIRST_DATA 241

static void sop_done(mmp_request_t *r, void *arg);

/* ---- Header ------------------------------------------------------------- */

static void hdr_encode(const mmp__coll_hdr_t *h, uint8_t out[MMP__HDR_SIZE]) {
  memset(out, 0, MMP__HDR_SIZE);
  out[0] = 'C';
  out[1] = 1; /* version */
  out[2] = h->kind;
  out[3] = h->alg;
  out[4] = h->flags;
  out[5] = h->inner;
  out[6] = h->outer;
  mmp__put_u32(out + 8, (uint32_t)h->root);
  mmp__put_u64(out + 12, h->len);
  mmp__put_u32(out + 20, h->seg);
  mmp__put_u32(out + 24, h->groups);
}

static int hdr_decode(const uint8_t *in, size_t n, mmp__coll_hdr_t *h) {
  if (n < MMP__HDR_SIZE || in[0] != 'C' || in[1] != 1)
    return MMP_EPROTO;
  h->kind = in[2];
  h->alg = in[3];
  h->flags = in[4];
  h->inner = in[5];
  h->outer = in[6];
  h->root = (int32_t)mmp__get_u32(in + 8);
  h->len = mmp__get_u64(in + 12);
  h->seg = mmp__get_u32(in + 20);
  h->groups = mmp__get_u32(in + 24);
  return 0;
}

static int hdr_same(const mmp__coll_hdr_t *a, const mmp__coll_hdr_t *b) {
  return a->kind == b->kind && a->alg == b->alg && a->inner == b->inner &&
         a->outer == b->outer && a->root == b->root && a->len == b->len &&
         a->seg == b->seg && a->groups == b->groups;
}

/* ---- Building ----------------------------------------------------------- */

int mmp__sched_sub_new(mmp__engine_t *e, mmp_comm_t *comm, uint32_t seq,
                       void *buf, size_t len, unsigned mode,
                       mmp__sched_t **out) {
  mmp__sched_t *s = calloc(1, sizeof(*s));

  if (s == NULL)
    return MMP_ENOMEM;
  s->e = e;
  s->comm = comm;
  s->ctx = comm->ctx + 1;
  s->seq = seq;
  s->buf = buf;
  s->len = len;
  s->mode = mode;
  s->first = -1;
  *out = s;
  return 0;
}

int mmp__sched_new(mmp__engine_t *e, mmp_comm_t *comm, void *buf, size_t len,
                   unsigned mode, const mmp__coll_hdr_t *hdr,
                   mmp__sched_build_fn build, mmp__sched_t **out) {
  int rc = mmp__sched_sub_new(e, comm, 0, buf, len, mode, out);

  if (rc != 0)
    return rc;
  /* The sequence number is taken only once nothing can fail. */
  uv_mutex_lock(&e->lock);
  (*out)->seq = comm->coll_seq++;
  uv_mutex_unlock(&e->lock);
  (*out)->hdr = *hdr;
  (*out)->build = build;
  return 0;
}

/* Ops are allocated one by one: the runtime holds pointers to their
 * embedded requests, so they must never move. */
static int sched_add(mmp__sched_t *s, int kind, int peer, size_t off,
                     size_t len, int phase) {
  mmp__sop_t *op;

  if (s->nops == s->cap) {
    int ncap = s->cap ? 2 * s->cap : 16;
    mmp__sop_t **n = realloc(s->ops, (size_t)ncap * sizeof(*n));
    if (n == NULL)
      return MMP_ENOMEM;
    s->ops = n;
    s->cap = ncap;
  }
  op = calloc(1, sizeof(*op));
  if (op == NULL)
    return MMP_ENOMEM;
  s->ops[s->nops] = op;
  op->kind = (uint8_t)kind;
  op->phase = (uint8_t)phase;
  op->peer = peer;
  op->off = off;
  op->len = len;
  op->s = s;
  return s->nops++;
}

int mmp__sched_send(mmp__sched_t *s, int peer, size_t off, size_t len,
                    int phase) {
  return sched_add(s, MMP__SOP_SEND, peer, off, len, phase);
}

int mmp__sched_recv(mmp__sched_t *s, int peer, size_t off, size_t len,
                    int phase) {
  return sched_add(s, MMP__SOP_RECV, peer, off, len, phase);
}

int mmp__sched_nop(mmp__sched_t *s) {
  return sched_add(s, MMP__SOP_NOP, -1, 0, 0, 0);
}

/* A packed op owns a copy of its regions; one region needs no packing. */
static int sched_addv(mmp__sched_t *s, int kind, int peer, const size_t *regs,
                      int nregs, int phase) {
  size_t len = 0;
  int k, op;

  for (k = 0; k < nregs; k++)
    len += regs[2 * k + 1];
  if (nregs <= 1)
    return sched_add(s, kind, peer, nregs ? regs[0] : 0, len, phase);
  op = sched_add(s, kind, peer, 0, len, phase);
  if (op < 0)
    return op;
  s->ops[op]->regs = malloc((size_t)nregs * 2 * sizeof(size_t));
  if (s->ops[op]->regs == NULL)
    return MMP_ENOMEM;
  memcpy(s->ops[op]->regs, regs, (size_t)nregs * 2 * sizeof(size_t));
  s->ops[op]->nregs = nregs;
  return op;
}

int mmp__sched_sendv(mmp__sched_t *s, int peer, const size_t *regs, int nregs,
                     int phase) {
  return sched_addv(s, MMP__SOP_SEND, peer, regs, nregs, phase);
}

int mmp__sched_recvv(mmp__sched_t *s, int peer, const size_t *regs, int nregs,
                     int phase) {
  return sched_addv(s, MMP__SOP_RECV, peer, regs, nregs, phase);
}

int mmp__sched_dep(mmp__sched_t *s, int before, int after) {
  if (before < 0 || after < 0 || before == after)
    return 0;
  if (s->nedges == s->ecap) {
    int ncap = s->ecap ? 2 * s->ecap : 32;
    int(*n)[2] = realloc(s->edges, (size_t)ncap * sizeof(*n));
    if (n == NULL)
      return MMP_ENOMEM;
    s->edges = n;
    s->ecap = ncap;
  }
  s->edges[s->nedges][0] = before;
  s->edges[s->nedges][1] = after;
  s->nedges++;
  return 0;
}

void mmp__sched_first(mmp__sched_t *s, int op) {
  if (op < 0)
    return;
  s->ops[op]->flags |= MMP__SOP_FIRST;
  if (s->ops[op]->kind == MMP__SOP_RECV)
    s->first = op;
}

/* The tag an op is posted with. */
static int sop_phase(const mmp__sop_t *op) {
  return (op->flags & MMP__SOP_FIRST) ? MMP__PHASE_FIRST : op->phase;
}

typedef struct chain_key_s {
  int kind, peer, phase, index;
} chain_key_t;

static int cmp_chain(const void *a, const void *b) {
  const chain_key_t *x = a, *y = b;
  if (x->kind != y->kind)
    return x->kind - y->kind;
  if (x->peer != y->peer)
    return x->peer - y->peer;
  if (x->phase != y->phase)
    return x->phase - y->phase;
  return x->index - y->index;
}

/*
 * Messages between two ranks with the same tag match in the order they
 * are posted. Dependencies alone do not keep that order (a send may become
 * ready before an earlier one to the same peer), so ops with the same
 * kind, peer and tag form a chain in builder order, and each is posted
 * only after its predecessor in the chain was.
 */
static int sched_chains(mmp__sched_t *s, int from) {
  int n = s->nops - from, i;
  chain_key_t *k = malloc(((size_t)n + 1) * sizeof(*k));

  if (k == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < n; i++) {
    mmp__sop_t *op = s->ops[from + i];
    k[i].kind = op->kind;
    k[i].peer = (op->flags & MMP__SOP_FIRST) && op->kind == MMP__SOP_RECV
                    ? -1
                    : op->peer;
    k[i].phase = sop_phase(op);
    k[i].index = from + i;
    op->cprev = op->cnext = -1;
  }
  qsort(k, (size_t)n, sizeof(*k), cmp_chain);
  for (i = 1; i < n; i++) {
    if (k[i].kind == MMP__SOP_NOP || k[i].kind != k[i - 1].kind ||
        k[i].peer != k[i - 1].peer || k[i].phase != k[i - 1].phase)
      continue;
    s->ops[k[i].index]->cprev = k[i - 1].index;
    s->ops[k[i - 1].index]->cnext = k[i].index;
  }
  free(k);
  return 0;
}

/* An op's predecessors are done: queue it, unless the previous op of its
 * chain still waits to be posted. */
static void sched_ready(mmp__sched_t *s, int i) {
  mmp__sop_t *op = s->ops[i];

  if (op->cprev >= 0 && !s->ops[op->cprev]->posted) {
    op->held = 1;
    return;
  }
  s->ready[s->nready++] = i;
}

/* Builds successor lists for ops [from, nops) from the edges among them
 * and queues those with no predecessor. */
static int sched_graph(mmp__sched_t *s, int from) {
  int i, k, n = s->nops;
  int *count;

  free(s->succ);
  s->succ = calloc((size_t)s->nedges + 1, sizeof(*s->succ));
  count = calloc((size_t)n + 1, sizeof(*count));
  free(s->ready);
  s->ready = malloc(((size_t)n + 1) * sizeof(*s->ready));
  if (s->succ == NULL || count == NULL || s->ready == NULL) {
    free(count);
    return MMP_ENOMEM;
  }
  for (k = 0; k < s->nedges; k++)
    if (s->edges[k][0] >= from && s->edges[k][1] >= from) {
      count[s->edges[k][0]]++;
      s->ops[s->edges[k][1]]->npred++;
    }
  for (i = 0, k = 0; i < n; i++) {
    s->ops[i]->succ = k;
    k += count[i];
    s->ops[i]->nsucc = 0;
  }
  for (k = 0; k < s->nedges; k++) {
    int a = s->edges[k][0], b = s->edges[k][1];
    if (a >= from && b >= from)
      s->succ[s->ops[a]->succ + s->ops[a]->nsucc++] = b;
  }
  free(count);
  if (sched_chains(s, from) != 0)
    return MMP_ENOMEM;
  s->nready = s->rhead = 0;
  for (i = from; i < n; i++)
    if (s->ops[i]->npred == 0 && !s->ops[i]->done)
      sched_ready(s, i);
  return 0;
}

/* Splits large first messages into a header-only first message and a data
 * message, and makes every op wait for this rank's first receive. */
static int sched_prepare(mmp__sched_t *s, int from) {
  int i, n = s->nops, rc;

  for (i = from; i < n; i++) {
    mmp__sop_t *op = s->ops[i];
    if ((op->flags & MMP__SOP_FIRST) && op->len > FIRST_PIGGYBACK_MAX) {
      int d =
          sched_add(s, op->kind, op->peer, op->off, op->len, PHASE_FIRST_DATA);
      int k, ne = s->nedges;
      if (d < 0)
        return d;
      op->len = 0;
      op->off = 0;
      /* The data op inherits the dependencies and, for a receive, every
       * op that waited for the data. */
      for (k = 0; k < ne; k++) {
        if (s->edges[k][1] == i && (rc = mmp__sched_dep(s, s->edges[k][0], d)))
          return rc;
        if (op->kind == MMP__SOP_RECV && s->edges[k][0] == i)
          s->edges[k][0] = d;
      }
      if ((rc = mmp__sched_dep(s, i, d)) != 0)
        return rc;
    }
  }
  if (s->first >= from)
    for (i = from; i < s->nops; i++)
      if (i != s->first && (rc = mmp__sched_dep(s, s->first, i)) != 0)
        return rc;
  return sched_graph(s, from);
}

/* ---- Executing ---------------------------------------------------------- */

static int world_of(const mmp__sched_t *s, int peer) {
  return s->comm->world_of != NULL ? s->comm->world_of[peer] : peer;
}

/* Lock held. A packed op goes through op->tmp: the sender copies its
 * regions in, the receiver takes the message whole and sop_done unpacks. */
static int sop_post_packed(mmp__sched_t *s, mmp__sop_t *op, int tag) {
  size_t at = 0;
  int k;

  op->tmp_len = op->len;
  op->tmp = malloc(op->len ? op->len : 1);
  if (op->tmp == NULL)
    return MMP_ENOMEM;
  if (op->kind == MMP__SOP_RECV)
    return mmp__irecv_locked(s->e, s->comm, s->ctx, s->poison ? NULL : op->tmp,
                             s->poison ? 0 : op->len, world_of(s, op->peer),
                             tag, &op->req);
  for (k = 0; k < op->nregs; k++) {
    memcpy(op->tmp + at, s->buf + op->regs[2 * k], op->regs[2 * k + 1]);
    at += op->regs[2 * k + 1];
  }
  return mmp__isend_locked(s->e, s->comm, s->ctx, op->tmp,
                           s->poison ? 0 : op->len, world_of(s, op->peer), tag,
                           s->poison ? MMP_SEND_EAGER : s->mode, &op->req);
}

static void sop_unpack(mmp__sched_t *s, mmp__sop_t *op) {
  size_t at = 0;
  int k;

  for (k = 0; k < op->nregs; k++) {
    memcpy(s->buf + op->regs[2 * k], op->tmp + at, op->regs[2 * k + 1]);
    at += op->regs[2 * k + 1];
  }
}

/* Lock held. Posts op i; completion comes through sop_done. */
static void sop_post(mmp__sched_t *s, int i) {
  mmp__sop_t *op = s->ops[i];
  mmp__engine_t *e = s->e;
  int tag = MMP__COLL_TAG(s->seq, sop_phase(op));
  int rc = 0;

  op->posted = 1;
  /* The next op of the chain may go now (it is posted after this one). */
  if (op->cnext >= 0 && s->ops[op->cnext]->held) {
    s->ops[op->cnext]->held = 0;
    s->ready[s->nready++] = op->cnext;
  }
  op->req.on_heap = 0;
  op->req.cb = sop_done;
  op->req.cb_arg = op;
  if (op->kind == MMP__SOP_NOP) {
    op->req.err = 0;
    sop_done(&op->req, op);
    return;
  }
  if (op->flags & MMP__SOP_FIRST) {
    op->tmp_len = MMP__HDR_SIZE + op->len;
    op->tmp = malloc(op->tmp_len);
    if (op->tmp == NULL) {
      rc = MMP_ENOMEM;
    } else if (op->kind == MMP__SOP_SEND) {
      mmp__coll_hdr_t h = s->hdr;
      if (s->poison) {
        h.flags |= MMP__HDR_POISON;
        op->tmp_len = MMP__HDR_SIZE;
      } else if (op->len > 0) {
        memcpy(op->tmp + MMP__HDR_SIZE, s->buf + op->off, op->len);
      }
      hdr_encode(&h, op->tmp);
      rc = mmp__isend_locked(e, s->comm, s->ctx, op->tmp, op->tmp_len,
                             world_of(s, op->peer), tag, s->mode, &op->req);
    } else {
      /* From whoever sends it: a rank with the wrong root still finds out
       * what the others think, instead of waiting on the wrong parent. */
      rc = mmp__irecv_locked(e, s->comm, s->ctx, op->tmp, op->tmp_len,
                             MMP_ANY_SOURCE, tag, &op->req);
    }
  } else if (op->regs != NULL) {
    rc = sop_post_packed(s, op, tag);
  } else if (op->kind == MMP__SOP_SEND) {
    rc = mmp__isend_locked(e, s->comm, s->ctx, s->buf + op->off,
                           s->poison ? 0 : op->len, world_of(s, op->peer), tag,
                           s->poison ? MMP_SEND_EAGER : s->mode, &op->req);
  } else {
    /* In poison mode the data is not ours to keep: receive and drop it. */
    rc = mmp__irecv_locked(
        e, s->comm, s->ctx, s->poison ? NULL : s->buf + op->off,
        s->poison ? 0 : op->len, world_of(s, op->peer), tag, &op->req);
  }
  if (rc != 0) {
    op->req.err = rc;
    sop_done(&op->req, op);
  }
}

static void sched_finish(mmp__sched_t *s) {
  mmp_request_t *creq = s->creq;

  if (creq == NULL) {
    /* A sub-schedule: nothing may touch s after on_done, which may let
     * its owner free it. */
    if (s->on_done != NULL && !s->finished) {
      s->finished = 1;
      s->on_done(s, s->on_done_arg);
    }
    return;
  }
  if (s->fini != NULL) {
    void (*fini)(mmp__sched_t *, void *) = s->fini;
    s->fini = NULL;
    fini(s, s->fini_arg);
  }
  s->creq = NULL;
  creq->status.error = s->err;
  creq->status.bytes = s->err == 0 ? s->len : 0;
  mmp__req_complete_locked(s->e, creq, s->err);
}

/* Lock held. Posts everything that became ready, until nothing is. */
static void sched_run(mmp__sched_t *s) {
  if (s->running)
    return;
  s->running = 1;
  /* First in, first out: ops that become ready together are posted in
   * the order the builder added them, which is the order their peers send
   * (receives of one peer and tag match in posting order). */
  while (s->rhead < s->nready)
    sop_post(s, s->ready[s->rhead++]);
  s->running = 0;
  if (s->remaining == 0)
    sched_finish(s);
}

static void sched_mismatch(mmp__sched_t *s, int err) {
  if (s->err == 0)
    s->err = err;
  s->poison = 1;
}

/* The first receive completed: check the header, take the data. Returns
 * 1 if the schedule was rebuilt in poison mode from the header. */
static int first_arrived(mmp__sched_t *s, mmp__sop_t *op) {
  mmp__coll_hdr_t h;
  size_t got = op->req.status.bytes;
  int i, old, rc;

  if (op->req.err != 0 && op->req.err != MMP_ETRUNC) {
    sched_mismatch(s, op->req.err);
    return 0;
  }
  if (hdr_decode(op->tmp, got, &h) != 0) {
    sched_mismatch(s, MMP_EMISMATCH);
    return 0;
  }
  if (hdr_same(&h, &s->hdr) && !(h.flags & MMP__HDR_POISON) &&
      op->req.err == 0 && got == MMP__HDR_SIZE + op->len) {
    if (op->len > 0)
      memcpy(s->buf + op->off, op->tmp + MMP__HDR_SIZE, op->len);
    return 0;
  }
  /* Disagreement: do what the sender's view implies, with empty sends. */
  MMP__LOG(MMP__LOG_WARN,
           "collective %u: arguments differ from the sender's (root %d/%d, "
           "length %llu/%llu, algorithm %d/%d, got %zu of %zu, %s)%s",
           s->seq, s->hdr.root, h.root, (unsigned long long)s->hdr.len,
           (unsigned long long)h.len, s->hdr.alg, h.alg, got,
           MMP__HDR_SIZE + op->len, mmp_err_name(op->req.err),
           (h.flags & MMP__HDR_POISON) ? " upstream disagreed" : "");
  sched_mismatch(s, MMP_EMISMATCH);
  old = s->nops;
  s->first = -1;
  s->hdr = h;
  s->hdr.flags = 0;
  /* The plan must be the sender's, segment for segment, so it is built
   * from the sender's length: with this rank's own, lengths that cut into
   * different segment counts (32,768 and 32,775 bytes in 16 KiB
   * segments) left one side waiting for a segment that never came. The
   * buffer is not touched in poison mode. A length no sender could mean
   * (more than MMP__POISON_MAX_SEGS segments) is a protocol error. */
  if (!mmp__poison_len_ok(h.len, h.seg)) {
    sched_mismatch(s, MMP_EPROTO);
    return 0;
  }
  s->len = (size_t)h.len;
  rc = s->build(s, &h);
  if (rc == 0)
    rc = sched_prepare(s, old);
  /* Every op of the first plan is over; its first receive, now done, also
   * stands for the new plan's. */
  for (i = 0; i < old; i++)
    if (!s->ops[i]->done) {
      s->ops[i]->done = 1;
      s->remaining--;
    }
  s->remaining += s->nops - old;
  if (rc != 0 || s->first < 0) {
    s->remaining -= s->nops - old;
    return 1;
  }
  {
    /* Complete the new first receive without posting it: its message is
     * the one just received. */
    mmp__sop_t *nf = s->ops[s->first];
    nf->posted = 1;
    nf->req.err = 0;
    nf->req.cb = NULL;
    nf->done = 1;
    s->remaining--;
    for (int k = 0; k < nf->nsucc; k++) {
      mmp__sop_t *sc = s->ops[s->succ[nf->succ + k]];
      if (--sc->npred == 0)
        sched_ready(s, s->succ[nf->succ + k]);
    }
    /* The new first itself may have been queued as ready: skip it. */
    for (int k = s->rhead; k < s->nready; k++)
      if (s->ready[k] == s->first)
        s->ready[k] = s->ready[s->rhead++];
  }
  return 1;
}

/* Lock held: an op completed. */
static void sop_done(mmp_request_t *r, void *arg) {
  mmp__sop_t *op = arg;
  mmp__sched_t *s = op->s;
  int k;
  (void)r;

  if (op->done)
    return;
  if (op->kind == MMP__SOP_RECV && (op->flags & MMP__SOP_FIRST)) {
    int rebuilt;
    /* Done before a rebuild retires the rest of the plan, so that it is
     * counted once. */
    op->done = 1;
    s->remaining--;
    rebuilt = first_arrived(s, op);
    free(op->tmp);
    op->tmp = NULL;
    if (rebuilt) {
      sched_run(s);
      return;
    }
  } else {
    if (op->kind == MMP__SOP_RECV && !s->poison &&
        (op->req.err != 0 || op->req.status.bytes != op->len))
      sched_mismatch(s, op->req.err == MMP_EPEERLOST ? MMP_EPEERLOST
                                                     : MMP_EMISMATCH);
    else if (op->kind == MMP__SOP_SEND && op->req.err != 0)
      sched_mismatch(s, op->req.err);
    else if (op->kind == MMP__SOP_RECV && op->regs != NULL && !s->poison)
      sop_unpack(s, op);
    free(op->tmp);
    op->tmp = NULL;
    op->done = 1;
    s->remaining--;
  }
  for (k = 0; k < op->nsucc; k++) {
    int j = s->succ[op->succ + k];
    if (--s->ops[j]->npred == 0 && !s->ops[j]->done)
      sched_ready(s, j);
  }
  sched_run(s);
}

void mmp__sched_dump(const mmp__sched_t *s) {
  int i;

  MMP__LOG(MMP__LOG_ERROR, "schedule %u: %d ops, %d left, err %d, poison %d",
           s->seq, s->nops, s->remaining, s->err, s->poison);
  for (i = 0; i < s->nops; i++) {
    const mmp__sop_t *o = s->ops[i];
    if (!o->done)
      MMP__LOG(MMP__LOG_ERROR,
               "  op %d %s peer %d off %zu len %zu phase %d%s npred %d %s", i,
               o->kind == MMP__SOP_SEND   ? "send"
               : o->kind == MMP__SOP_RECV ? "recv"
                                          : "nop",
               o->peer, o->off, o->len, o->phase,
               (o->flags & MMP__SOP_FIRST) ? " FIRST" : "", o->npred,
               o->posted ? "posted" : "waiting");
  }
}

void mmp__sched_free(mmp__sched_t *s) {
  int i;

  if (s == NULL)
    return;
  for (i = 0; i < s->nops; i++) {
    free(s->ops[i]->tmp);
    free(s->ops[i]->regs);
    free(s->ops[i]);
  }
  free(s->ops);
  free(s->edges);
  free(s->succ);
  free(s->ready);
  free(s);
}

static void sched_req_free(mmp_request_t *r) {
  mmp__sched_free(r->cb_arg);
}

int mmp__sched_start(mmp__sched_t *s, mmp_request_t **out) {
  mmp_request_t *creq;
  int rc;

  *out = NULL;
  rc = s->build(s, &s->hdr);
  if (rc == 0)
    rc = sched_prepare(s, 0);
  creq = rc == 0 ? calloc(1, sizeof(*creq)) : NULL;
  if (creq == NULL) {
    mmp__sched_free(s);
    return rc != 0 ? rc : MMP_ENOMEM;
  }
  creq->on_heap = 1;
  creq->kind = MMP__REQ_COLL;
  creq->state = MMP__RQ_NEW;
  creq->comm = s->comm;
  creq->len = (size_t)s->hdr.len; /* how waits for it poll */
  creq->cb_arg = s;               /* the schedule, freed with the request */
  creq->dtor = sched_req_free;
  mmp__list_init(&creq->node);
  atomic_init(&creq->done, 0);
  creq->status.source = s->hdr.root;
  creq->status.tag = MMP_ANY_TAG;
  s->creq = creq;
  s->remaining = s->nops;
  uv_mutex_lock(&s->e->lock);
  s->started = 1;
  sched_run(s);
  uv_mutex_unlock(&s->e->lock);
  *out = creq;
  return 0;
}

int mmp__sched_launch_locked(mmp__sched_t *s,
                             void (*on_done)(mmp__sched_t *, void *),
                             void *arg) {
  int rc = sched_prepare(s, 0);

  if (rc != 0)
    return rc;
  s->on_done = on_done;
  s->on_done_arg = arg;
  s->remaining = s->nops;
  s->started = 1;
  sched_run(s);
  return 0;
}

/* ---- Helpers for builders ----------------------------------------------- */

int mmp__poison_len_ok(uint64_t len, uint64_t seg) {
  return len <= SIZE_MAX && (seg == 0 || len / seg < MMP__POISON_MAX_SEGS);
}

size_t mmp__even_seg(size_t len, double target) {
  size_t k;

  if (!(target > 0) || target >= (double)len)
    return 0;
  k = (size_t)((double)len / target); /* >= 1: each part at least target */
  return k <= 1 ? 0 : len / k + (len % k != 0);
}

size_t mmp__seg_count(size_t len, size_t seg) {
  if (seg == 0 || len <= seg)
    return 1;
  return (len + seg - 1) / seg;
}

void mmp__seg_range(size_t len, size_t seg, size_t k, size_t *off, size_t *n) {
  if (seg == 0 || len <= seg) {
    *off = 0;
    *n = len;
    return;
  }
  *off = k * seg;
  *n = len - *off < seg ? len - *off : seg;
}

int mmp__bcast_done(mmp__sched_t *s, int dep) {
  int op = mmp__sched_nop(s), rc;

  if (op >= 0 && dep >= 0 && (rc = mmp__sched_dep(s, dep, op)) != 0)
    return rc;
  return op;
}

int mmp__bcast_recv(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase) {
  return mmp__sched_recv(s, a->g->ranks[peer_idx], a->off + off, len, phase);
}

int mmp__bcast_send(mmp__sched_t *s, const mmp__bcast_arg_t *a, int peer_idx,
                    size_t off, size_t len, int phase, int after) {
  int op = mmp__sched_send(s, a->g->ranks[peer_idx], a->off + off, len, phase);
  int rc;

  if (op < 0)
    return op;
  if (after >= 0 && (rc = mmp__sched_dep(s, after, op)) != 0)
    return rc;
  return op;
}
