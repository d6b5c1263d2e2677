/* SPDX-License-Identifier: MIT */
/*
 * The schedule executor: builds the dependency graph of a collective's
 * sends and receives, posts every operation whose predecessors are done,
 * and advances from the runtime's completion callbacks (engine.lock held),
 * so a segment is forwarded the moment it lands. No operation blocks and
 * the executor never re-enters itself: completions that happen while it
 * posts only queue their successors. It knows nothing of any collective:
 * a schedule is a list of ops, a buffer, and optionally a header for the
 * first message with a callback that rebuilds the plan from a sender's.
 *
 * The first message a non-root rank receives carries the header as its
 * sender sees it. Until it arrives nothing else is posted. A header that
 * differs from this rank's, or that says an upstream rank already
 * disagreed, switches the schedule to poison mode: the plan is rebuilt
 * from the sender's header, so it matches what will actually be sent
 * here, every receive discards its data and every send goes out empty,
 * and the collective ends with MMP_EMISMATCH on every rank downstream,
 * instead of a hang.
 *
 * Reductions add two local ops, REDUCE (combine one region into another
 * with the collective's callback) and COPY, which the executor runs
 * itself the moment they are ready, and a scratch area after the buffer,
 * one block per schedule. Algorithms whose ranks exchange at once have no
 * tree-like first message; their first exchanges carry the header in
 * order (MMP__SOP_CHECK) and a differing one ends in MMP_EMISMATCH.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/core/sched.h"

/* Larger first payloads travel after a header-only first message, so that
 * neither end copies a large region to prepend the header. */
#define FIRST_PIGGYBACK_MAX MMP__FIRST_PIGGYBACK_MAX
#define PHASE_FIRST_DATA 241

#define ENV_MAGIC 'C'
#define ENV_VERSION 3
#define ENV_POISON 0x1
/* The top byte of a poison note (mmp__sched_note). */
#define NOTE_MAGIC 0x50u

static void sop_done(mmp_request_t *r, void *arg);
static void sched_fail(mmp__sched_t *s, int err, int rank);
static void free_plan(mmp__sop_t *ops, mmp__sexec_t *x, int nops);

/* The job's ranks: what a poison note names. */
static int world_size(const mmp__engine_t *e) {
  mmp__rt_facts_t f;

  mmp__rt_facts(e, &f);
  return f.world_size;
}

/* ---- Building ----------------------------------------------------------- */

static mmp__sched_t *sched_alloc(int p, int me, void *buf, size_t len,
                                 unsigned mode) {
  mmp__sched_t *s = calloc(1, sizeof(*s));

  if (s == NULL)
    return NULL;
  s->p = p;
  s->me = me;
  s->buf = buf;
  s->len = len;
  s->mode = mode;
  s->first = -1;
  s->fail_rank = -1;
  return s;
}

int mmp__sched_sub_new(mmp__engine_t *e, mmp_comm_t *comm, uint32_t seq,
                       void *buf, size_t len, unsigned mode,
                       mmp__sched_t **out) {
  mmp__sched_t *s = sched_alloc(comm->size, comm->rank, buf, len, mode);

  *out = s;
  if (s == NULL)
    return MMP_ENOMEM;
  s->e = e;
  s->comm = comm;
  s->node_of = comm->node_of; /* lives as long as comm */
  s->ctx = comm->ctx + 1;
  s->seq = seq;
  return 0;
}

int mmp__sched_new_at(mmp__engine_t *e, mmp_comm_t *comm, uint32_t seq,
                      void *buf, size_t len, unsigned mode,
                      mmp__sched_t **out) {
  int rc;

  MMP__ASSERT_UNLOCKED(e);
  rc = mmp__sched_sub_new(e, comm, seq, buf, len, mode, out);
  if (rc == 0)
    (*out)->timeout_ms = mmp__rt_coll_timeout(e, comm);
  return rc;
}

int mmp__sched_new(mmp__engine_t *e, mmp_comm_t *comm, void *buf, size_t len,
                   unsigned mode, mmp__sched_t **out) {
  int rc = mmp__sched_new_at(e, comm, 0, buf, len, mode, out);

  if (rc != 0)
    return rc;
  /* The sequence number is taken only once nothing can fail. */
  mmp__lock(e);
  (*out)->seq = comm->coll_seq++;
  mmp__unlock(e);
  return 0;
}

void mmp__sched_set_timeout(mmp__sched_t *s, unsigned ms) {
  assert(!s->started); /* the timer is armed at the start */
  if (ms > 0)
    s->timeout_ms = ms;
}

int mmp__sched_offline(int p, int me, void *buf, size_t len,
                       mmp__sched_t **out) {
  assert(p >= 1 && me >= 0 && me < p);
  *out = sched_alloc(p, me, buf, len, MMP_SEND_AUTO);
  return *out == NULL ? MMP_ENOMEM : 0;
}

void mmp__sched_set_nodes(mmp__sched_t *s, const int *node_of) {
  assert(s->comm == NULL && !s->started);
  s->node_of = node_of;
}

void mmp__sched_set_header(mmp__sched_t *s, const void *hdr, size_t n,
                           mmp__sched_rebuild_fn rebuild) {
  assert(n <= MMP__HDR_MAX && !s->started);
  memcpy(s->hdr, hdr, n);
  s->hdr_len = n;
  s->rebuild = rebuild;
}

/* Ops live in one array that grows while the plan is built; nothing
 * points into it until the schedule starts. */
static int sched_add(mmp__sched_t *s, int kind, int peer, size_t off,
                     size_t len, int phase) {
  mmp__sop_t *op;

  assert(s->x == NULL); /* not while running */
  if (s->nops == s->cap) {
    int ncap = s->cap ? 2 * s->cap : 16;
    mmp__sop_t *n = realloc(s->ops, (size_t)ncap * sizeof(*n));
    if (n == NULL)
      return MMP_ENOMEM;
    s->ops = n;
    s->cap = ncap;
  }
  op = &s->ops[s->nops];
  memset(op, 0, sizeof(*op));
  op->kind = (uint8_t)kind;
  op->phase = (uint8_t)phase;
  op->peer = peer;
  op->off = off;
  op->len = len;
  op->cprev = op->cnext = -1;
  return s->nops++;
}

int mmp__sched_send(mmp__sched_t *s, int peer, size_t off, size_t len,
                    int phase) {
  assert(peer >= 0 && peer < s->p);
  return sched_add(s, MMP__SOP_SEND, peer, off, len, phase);
}

int mmp__sched_recv(mmp__sched_t *s, int peer, size_t off, size_t len,
                    int phase) {
  assert(peer >= 0 && peer < s->p);
  return sched_add(s, MMP__SOP_RECV, peer, off, len, phase);
}

int mmp__sched_nop(mmp__sched_t *s) {
  return sched_add(s, MMP__SOP_NOP, -1, 0, 0, 0);
}

static int sched_local(mmp__sched_t *s, int kind, size_t src, size_t dst,
                       size_t len, int right) {
  int op = sched_add(s, kind, -1, dst, len, 0);

  if (op >= 0) {
    s->ops[op].src = src;
    if (right)
      s->ops[op].flags |= MMP__SOP_RIGHT;
  }
  return op;
}

int mmp__sched_reduce(mmp__sched_t *s, size_t src, size_t dst, size_t len,
                      int right) {
  return sched_local(s, MMP__SOP_REDUCE, src, dst, len, right);
}

int mmp__sched_copy(mmp__sched_t *s, size_t src, size_t dst, size_t len) {
  return sched_local(s, MMP__SOP_COPY, src, dst, len, 0);
}

size_t mmp__sched_input(mmp__sched_t *s, const void *in, size_t n) {
  assert(s->scratch_len == 0 && s->scratch == NULL);
  s->in = in;
  s->in_len = n;
  return s->len;
}

size_t mmp__sched_scratch(mmp__sched_t *s, size_t n) {
  size_t at = s->len + s->in_len + s->scratch_len;

  assert(s->scratch == NULL);
  /* Every piece aligned for any element type. */
  s->scratch_len += (n + 15) & ~(size_t)15;
  return at;
}

uint8_t *mmp__sched_scratch_ptr(mmp__sched_t *s, size_t at) {
  if (s->scratch == NULL && s->scratch_len > 0 &&
      (s->scratch = malloc(s->scratch_len)) == NULL)
    return NULL;
  return mmp__sched_at(s, at);
}

/* A packed op owns a copy of its regions; one region needs no packing. */
static int sched_addv(mmp__sched_t *s, int kind, int peer, const size_t *regs,
                      int nregs, int phase) {
  size_t len = 0, *copy;
  int k, op;

  for (k = 0; k < nregs; k++)
    len += regs[2 * k + 1];
  if (nregs <= 1)
    return sched_add(s, kind, peer, nregs ? regs[0] : 0, len, phase);
  copy = malloc((size_t)nregs * 2 * sizeof(size_t));
  if (copy == NULL)
    return MMP_ENOMEM;
  memcpy(copy, regs, (size_t)nregs * 2 * sizeof(size_t));
  op = sched_add(s, kind, peer, 0, len, phase);
  if (op < 0) {
    free(copy);
    return op;
  }
  s->ops[op].regs = copy;
  s->ops[op].nregs = nregs;
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

int mmp__sched_group_all(mmp__sched_t *s, mmp__group_t *all) {
  int i;

  if (s->ident == NULL) {
    if ((s->ident = malloc((size_t)s->p * sizeof(int))) == NULL)
      return MMP_ENOMEM;
    for (i = 0; i < s->p; i++)
      s->ident[i] = i;
  }
  all->n = s->p;
  all->me = s->me;
  all->ranks = s->ident;
  return 0;
}

int mmp__sched_dep(mmp__sched_t *s, int before, int after) {
  if (before < 0 || after < 0 || before == after)
    return 0;
  assert(before < s->nops && after < s->nops);
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

void mmp__sched_check(mmp__sched_t *s, int op) {
  if (op < 0)
    return;
  assert(s->ops[op].regs == NULL && s->ops[op].kind <= MMP__SOP_RECV);
  s->ops[op].flags |= MMP__SOP_CHECK;
}

void mmp__sched_first(mmp__sched_t *s, int op) {
  if (op < 0)
    return;
  assert(s->ops[op].kind <= MMP__SOP_RECV);
  s->ops[op].flags |= MMP__SOP_FIRST;
  if (s->ops[op].kind == MMP__SOP_RECV)
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
    mmp__sop_t *op = &s->ops[from + i];
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
    if (k[i].kind >= MMP__SOP_NOP || k[i].kind != k[i - 1].kind ||
        k[i].peer != k[i - 1].peer || k[i].phase != k[i - 1].phase)
      continue;
    s->ops[k[i].index].cprev = k[i - 1].index;
    s->ops[k[i - 1].index].cnext = k[i].index;
  }
  free(k);
  return 0;
}

/* Builds successor lists for ops [from, nops) from the edges among them. */
static int sched_graph(mmp__sched_t *s, int from) {
  int i, k, n = s->nops;
  int *count;

  free(s->succ);
  s->succ = calloc((size_t)s->nedges + 1, sizeof(*s->succ));
  count = calloc((size_t)n + 1, sizeof(*count));
  if (s->succ == NULL || count == NULL) {
    free(count);
    return MMP_ENOMEM;
  }
  for (i = from; i < n; i++)
    s->ops[i].npred = 0;
  for (k = 0; k < s->nedges; k++)
    if (s->edges[k][0] >= from && s->edges[k][1] >= from) {
      count[s->edges[k][0]]++;
      s->ops[s->edges[k][1]].npred++;
    }
  for (i = 0, k = 0; i < n; i++) {
    s->ops[i].succ = k;
    k += count[i];
    s->ops[i].nsucc = 0;
  }
  for (k = 0; k < s->nedges; k++) {
    int a = s->edges[k][0], b = s->edges[k][1];
    if (a >= from && b >= from)
      s->succ[s->ops[a].succ + s->ops[a].nsucc++] = b;
  }
  free(count);
  return sched_chains(s, from);
}

int mmp__sched_prepare(mmp__sched_t *s, int from) {
  int i, n = s->nops, rc;

  for (i = from; i < n; i++) {
    if ((s->ops[i].flags & MMP__SOP_FIRST) && s->ops[i].len > 0 &&
        s->ops[i].len > FIRST_PIGGYBACK_MAX) {
      int d = sched_add(s, s->ops[i].kind, s->ops[i].peer, s->ops[i].off,
                        s->ops[i].len, PHASE_FIRST_DATA);
      int k, ne = s->nedges, recv = s->ops[i].kind == MMP__SOP_RECV;
      if (d < 0)
        return d;
      /* A packed first message's regions go with its data. */
      s->ops[d].regs = s->ops[i].regs;
      s->ops[d].nregs = s->ops[i].nregs;
      s->ops[i].regs = NULL;
      s->ops[i].nregs = 0;
      s->ops[i].len = 0;
      s->ops[i].off = 0;
      /* The data op inherits the dependencies and, for a receive, every
       * op that waited for the data. */
      for (k = 0; k < ne; k++) {
        if (s->edges[k][1] == i && (rc = mmp__sched_dep(s, s->edges[k][0], d)))
          return rc;
        if (recv && s->edges[k][0] == i)
          s->edges[k][0] = d;
      }
      if ((rc = mmp__sched_dep(s, i, d)) != 0)
        return rc;
    }
  }
  /* Nothing but the first receive is posted before the header is in. */
  if (s->first >= from)
    for (i = from; i < s->nops; i++)
      if (i != s->first && (rc = mmp__sched_dep(s, s->first, i)) != 0)
        return rc;
  return sched_graph(s, from);
}

/* ---- Executing ---------------------------------------------------------- */

void mmp__sop_local(const mmp__sched_t *s, const mmp__sop_t *op,
                    const uint8_t *src, uint8_t *dst) {
  if (op->len == 0)
    return;
  if (op->kind == MMP__SOP_COPY)
    memmove(dst, src, op->len);
  else if (op->kind == MMP__SOP_REDUCE)
    s->reduce(src, dst, op->len, (op->flags & MMP__SOP_RIGHT) != 0,
              s->reduce_arg);
}

/* An op's predecessors are done: queue it, unless the previous op of its
 * chain still waits to be posted. */
static void sched_ready(mmp__sched_t *s, int i) {
  const mmp__sop_t *op = &s->ops[i];

  if (op->cprev >= 0 && !s->x[op->cprev].posted) {
    s->x[i].held = 1;
    return;
  }
  s->ready[s->nready++] = i;
}

/* Allocates the running state of every op and queues those with no
 * predecessor. */
static int sched_exec(mmp__sched_t *s) {
  int i;

  assert(s->x == NULL);
  s->x = calloc((size_t)s->nops + 1, sizeof(*s->x));
  free(s->ready);
  s->ready = malloc(((size_t)s->nops + 1) * sizeof(*s->ready));
  if (s->x == NULL || s->ready == NULL)
    return MMP_ENOMEM;
  if (s->scratch_len > 0 && mmp__sched_scratch_ptr(s, s->len) == NULL)
    return MMP_ENOMEM;
  s->nready = s->rhead = 0;
  for (i = 0; i < s->nops; i++)
    s->x[i].npred = s->ops[i].npred;
  for (i = 0; i < s->nops; i++)
    if (s->x[i].npred == 0)
      sched_ready(s, i);
  s->remaining = s->nops;
  return 0;
}

static int world_of(const mmp__sched_t *s, int peer) {
  return mmp__comm_world(s->comm, peer);
}

uint64_t mmp__sched_note(int err, int rank) {
  assert(err < 0 && err >= -0xffff);
  return ((uint64_t)NOTE_MAGIC << 56) | ((uint64_t)(uint32_t)(rank + 1) << 16) |
         (uint64_t)(uint16_t)-err;
}

int mmp__sched_note_decode(uint64_t note, int p, int *rank) {
  int err = -(int)(note & 0xffff);
  int64_t r = (int64_t)((note >> 16) & 0xffffffffu) - 1;

  *rank = -1;
  if (note == 0)
    return 0;
  /* Bad bytes from the wire name no rank and no cause the code does not
   * know: the message still poisons, as a mismatch. */
  if ((note >> 56) != NOTE_MAGIC || (note >> 48 & 0xff) != 0 || err == 0 ||
      strcmp(mmp_err_name(err), "MMP_E?") == 0)
    return MMP_EMISMATCH;
  if (r >= 0 && r < p)
    *rank = (int)r;
  return err;
}

/* Lock held. A send in poison mode: `n` bytes of x->tmp (the envelope of
 * a first message, or nothing) and the note that says why. */
static int sched_send_poison(mmp__sched_t *s, const mmp__sop_t *op,
                             mmp__sexec_t *x, int tag, size_t n) {
  /* A schedule its collective started in poison mode on purpose (an
   * arrival-aware round for a mismatched receiver) has no error of its
   * own. */
  int err = s->err != 0 ? s->err : MMP_EMISMATCH;

  assert(s->poison && (n == 0 || x->tmp != NULL));
  return mmp__isend_note_locked(s->e, s->comm, s->ctx, x->tmp, n,
                                world_of(s, op->peer), tag,
                                mmp__sched_note(err, s->fail_rank), &x->req);
}

/* The data of op `op` into its message at `msg` (packed: region after
 * region), and back. An empty region may lie in no buffer at all (a
 * NULL one), which memcpy must not be given even for 0 bytes. */
static void sop_pack(const mmp__sched_t *s, const mmp__sop_t *op,
                     uint8_t *msg) {
  size_t at = 0;
  int k;

  if (op->regs == NULL && op->len > 0)
    memcpy(msg, mmp__sched_at(s, op->off), op->len);
  for (k = 0; op->regs != NULL && k < op->nregs; k++) {
    if (op->regs[2 * k + 1] > 0)
      memcpy(msg + at, mmp__sched_at(s, op->regs[2 * k]), op->regs[2 * k + 1]);
    at += op->regs[2 * k + 1];
  }
}

static void sop_unpack(const mmp__sched_t *s, const mmp__sop_t *op,
                       const uint8_t *msg) {
  size_t at = 0;
  int k;

  if (op->regs == NULL && op->len > 0)
    memcpy(mmp__sched_at(s, op->off), msg, op->len);
  for (k = 0; op->regs != NULL && k < op->nregs; k++) {
    if (op->regs[2 * k + 1] > 0)
      memcpy(mmp__sched_at(s, op->regs[2 * k]), msg + at, op->regs[2 * k + 1]);
    at += op->regs[2 * k + 1];
  }
}

/* Lock held. Posts a receive of the schedule from world rank `peer`. */
static int sched_irecv(mmp__sched_t *s, void *buf, size_t cap, int peer,
                       int tag, mmp_request_t *req) {
  return mmp__irecv_flags_locked(s->e, s->comm, s->ctx, buf, cap, peer, tag,
                                 s->comm_loss ? MMP__RECV_COMM_LOSS : 0, req);
}

/* Lock held. A packed op goes through its tmp buffer: the sender copies
 * its regions in, the receiver takes the message whole and sop_done
 * unpacks. */
static int sop_post_packed(mmp__sched_t *s, const mmp__sop_t *op,
                           mmp__sexec_t *x, int tag) {
  /* In poison mode nothing is kept or sent: no room for the data. */
  if (s->poison)
    return op->kind == MMP__SOP_RECV
               ? sched_irecv(s, NULL, 0, world_of(s, op->peer), tag, &x->req)
               : sched_send_poison(s, op, x, tag, 0);
  x->tmp_len = op->len;
  x->tmp = malloc(op->len ? op->len : 1);
  if (x->tmp == NULL)
    return MMP_ENOMEM;
  if (op->kind == MMP__SOP_RECV)
    return sched_irecv(s, x->tmp, op->len, world_of(s, op->peer), tag, &x->req);
  sop_pack(s, op, x->tmp);
  return mmp__isend_locked(s->e, s->comm, s->ctx, x->tmp, op->len,
                           world_of(s, op->peer), tag, s->mode, &x->req);
}

/* Lock held. The first message: the header in its envelope, then the
 * data that rides along. */
static int sop_post_first(mmp__sched_t *s, const mmp__sop_t *op,
                          mmp__sexec_t *x, int tag) {
  /* A send is as long as its header; a send in poison mode carries the
   * header alone; a receive has room for the longest header. */
  if (op->kind == MMP__SOP_RECV)
    x->tmp_len = MMP__HDR_SIZE + op->len;
  else
    x->tmp_len = 4 + s->hdr_len + (s->poison ? 0 : op->len);
  x->tmp = calloc(1, x->tmp_len);
  if (x->tmp == NULL)
    return MMP_ENOMEM;
  if (op->kind == MMP__SOP_RECV)
    /* From whoever sends it: a rank with the wrong root still finds out
     * what the others think, instead of waiting on the wrong parent. A
     * checked receive (not first) comes from its own peer. */
    return sched_irecv(s, x->tmp, x->tmp_len,
                       (op->flags & MMP__SOP_FIRST) ? MMP_ANY_SOURCE
                                                    : world_of(s, op->peer),
                       tag, &x->req);
  x->tmp[0] = ENV_MAGIC;
  x->tmp[1] = ENV_VERSION;
  x->tmp[2] = s->poison ? ENV_POISON : 0;
  x->tmp[3] = (uint8_t)s->hdr_len;
  memcpy(x->tmp + 4, s->hdr, s->hdr_len);
  if (s->poison)
    return sched_send_poison(s, op, x, tag, 4 + s->hdr_len);
  sop_pack(s, op, x->tmp + 4 + s->hdr_len);
  return mmp__isend_locked(s->e, s->comm, s->ctx, x->tmp, x->tmp_len,
                           world_of(s, op->peer), tag, s->mode, &x->req);
}

/* Lock held. Posts op i; completion comes through sop_done. */
static void sop_post(mmp__sched_t *s, int i) {
  const mmp__sop_t *op = &s->ops[i];
  mmp__sexec_t *x = &s->x[i];
  int tag = MMP__COLL_TAG(s->seq, sop_phase(op));
  int rc = 0;

  assert(!x->posted && x->npred == 0);
  x->posted = 1;
  /* The next op of the chain may go now (it is posted after this one). */
  if (op->cnext >= 0 && s->x[op->cnext].held) {
    s->x[op->cnext].held = 0;
    s->ready[s->nready++] = op->cnext;
  }
  x->req.on_heap = 0;
  x->req.cb = sop_done;
  x->req.cb_arg = s;
  if (op->kind >= MMP__SOP_NOP) {
    if (!s->poison)
      mmp__sop_local(s, op, mmp__sched_at(s, op->src),
                     mmp__sched_at(s, op->off));
    x->req.err = 0;
    sop_done(&x->req, s);
    return;
  }
  if (op->flags & (MMP__SOP_FIRST | MMP__SOP_CHECK))
    rc = sop_post_first(s, op, x, tag);
  else if (op->regs != NULL)
    rc = sop_post_packed(s, op, x, tag);
  else if (op->kind == MMP__SOP_SEND && s->poison)
    rc = sched_send_poison(s, op, x, tag, 0);
  else if (op->kind == MMP__SOP_SEND)
    rc = mmp__isend_locked(s->e, s->comm, s->ctx, mmp__sched_at(s, op->off),
                           op->len, world_of(s, op->peer), tag, s->mode,
                           &x->req);
  else
    /* In poison mode the data is not ours to keep: receive and drop it. */
    rc = sched_irecv(s, s->poison ? NULL : mmp__sched_at(s, op->off),
                     s->poison ? 0 : op->len, world_of(s, op->peer), tag,
                     &x->req);
  if (rc != 0) {
    x->req.err = rc;
    sop_done(&x->req, s);
  }
}

/* ---- Timeouts ---------------------------------------------------------- */

/* Lock held. The schedule is done with its timeout. */
static void sched_tmo_disarm(mmp__sched_t *s) {
  MMP__ASSERT_LOCKED(s->e);
  mmp__deadline_stop_locked(s->e, &s->tmo);
}

/* Lock held. Runs the fini hook once. It may own the schedule's buffer
 * (s-to-p's scratch), so a detached schedule runs it only at its end. */
static void sched_fini(mmp__sched_t *s) {
  if (s->fini != NULL) {
    void (*fini)(mmp__sched_t *, void *) = s->fini;
    s->fini = NULL;
    fini(s, s->fini_arg);
  }
}

/* Ops posted and not yet complete. */
static int sched_in_flight(const mmp__sched_t *s) {
  int i, n = 0;

  for (i = 0; i < s->nops; i++)
    n += s->x[i].posted && !s->x[i].done;
  return n;
}

/* Lock held. A detached schedule whose last op completed goes. */
static void sched_detached_check(mmp__sched_t *s) {
  if (s->detached && !s->running && sched_in_flight(s) == 0) {
    sched_fini(s);
    mmp__comm_release_locked(s->comm);
    mmp__sched_free(s);
  }
}

/* Lock held. Stops `s` for good with `err`: cancels the receives no
 * message matched yet and posts nothing more. */
static void sched_stop(mmp__sched_t *s, int err) {
  int i;

  MMP__ASSERT_LOCKED(s->e);
  s->err = err;
  s->poison = 1;
  s->aborted = 1;
  /* Cancelling completes ops through sop_done, which must neither post
   * nor finish while this loop walks them. */
  s->running = 1;
  for (i = 0; s->x != NULL && i < s->nops; i++)
    if (s->x[i].posted && !s->x[i].done && s->ops[i].kind == MMP__SOP_RECV)
      mmp__cancel_locked(s->e, &s->x[i].req);
  s->running = 0;
}

void mmp__sched_abandon_locked(mmp__sched_t *s, int err) {
  MMP__ASSERT_LOCKED(s->e);
  assert(s->creq == NULL && !s->detached); /* a sub-schedule, still owned */
  s->on_done = NULL;
  sched_stop(s, err);
  if (s->x != NULL && sched_in_flight(s) > 0) {
    s->detached = 1;
    mmp__comm_hold_locked(s->comm);
  } else {
    sched_fini(s);
    mmp__sched_free(s);
  }
}

/*
 * Lock held. Gives up with `err` (seen at world rank `rank`, -1: unknown):
 * stops `s` and completes the request. Sends and receives already under
 * way cannot be recalled; the schedule then lives on, detached from the
 * request, until they complete.
 */
/* Lock held. A collective that ends for a lost rank leaves a sink for
 * its messages still to come (mmp__recv_sink_locked): a receive it gave
 * up on, or never posted, would leave a live sender's message unexpected,
 * and a rendezvous sender waiting for this rank's CTS for ever. */
static void sched_sink_if_lost(const mmp__sched_t *s, int err) {
  if (err == MMP_EPEERLOST)
    mmp__recv_sink_locked(s->e, s->ctx, MMP__COLL_TAG(s->seq, 0),
                          MMP__COLL_SEQ_MASK);
}

/* Lock held. Completes the collective's request, then tells its
 * follower (mmp__sched_follow_locked), which the request's completion
 * alone does not: its callback is no one's to borrow. */
static void sched_complete(mmp__sched_t *s, mmp_request_t *creq, int err) {
  void (*follow)(mmp_request_t *, void *) = s->follow;

  s->follow = NULL;
  mmp__req_complete_locked(s->e, creq, err);
  if (follow != NULL)
    follow(creq, s->follow_arg);
}

static void sched_abort(mmp__sched_t *s, int err, int rank) {
  mmp_request_t *creq = s->creq;

  MMP__ASSERT_LOCKED(s->e);
  assert(creq != NULL && !s->running);
  s->fail_rank = rank;
  sched_tmo_disarm(s);
  sched_stop(s, err);
  s->creq = NULL;
  if (sched_in_flight(s) > 0) {
    creq->cb_arg = NULL; /* the request no longer frees the schedule */
    s->detached = 1;
    mmp__comm_hold_locked(s->comm);
  } else {
    sched_fini(s);
  }
  sched_sink_if_lost(s, err);
  creq->status.error = err;
  creq->status.bytes = 0;
  sched_complete(s, creq, err);
}

/* Lock held, loop context (the timer): the communicator fails every
 * later collective too, since ranks may now disagree on where they are. */
static void sched_timed_out(mmp__sched_t *s) {
  MMP__ASSERT_LOCKED(s->e);
  MMP__LOG(MMP__LOG_WARN, "collective %u timed out after %u ms", s->seq,
           s->timeout_ms);
  atomic_store_explicit(&s->comm->coll_err, MMP_ETIMEDOUT,
                        memory_order_relaxed);
  sched_abort(s, MMP_ETIMEDOUT, -1);
}

typedef struct watch_s {
  mmp__engine_t *e;
  mmp_request_t *creq;
  const mmp_comm_t *comm;
} watch_t;

/* Lock held. */
static int watch_pred(void *arg) {
  watch_t *w = arg;

  return atomic_load_explicit(&w->creq->done, memory_order_acquire) ||
         mmp__comm_lost_locked(w->e, w->comm) >= 0;
}

int mmp__sched_wait_watch(mmp_request_t **req) {
  watch_t w;

  w.creq = *req;
  w.comm = w.creq->comm;
  w.e = mmp__eng; /* not the schedule's: a timeout may detach it */
  mmp__progress_wait(w.e, w.creq->len, watch_pred, &w);
  mmp__lock(w.e);
  if (!atomic_load_explicit(&w.creq->done, memory_order_acquire)) {
    mmp__sched_t *s = w.creq->cb_arg;
    int lost = mmp__comm_lost_locked(w.e, w.comm);
    MMP__LOG(MMP__LOG_WARN, "collective %u failed: rank %d was lost", s->seq,
             lost);
    sched_abort(s, MMP_EPEERLOST, lost);
  }
  mmp__unlock(w.e);
  return mmp_wait(req, MMP_STATUS_IGNORE);
}

/* Loop context, lock held (the engine's deadline). */
static void sched_tmo_fired(void *arg) {
  sched_timed_out(arg);
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
  sched_fini(s);
  sched_tmo_disarm(s);
  s->creq = NULL;
  /* A failure names the rank where it arose (a mismatch is the caller's
   * own error, which its code reports). */
  if (s->err != 0 && s->err != MMP_EMISMATCH && s->fail_rank >= 0)
    MMP__LOG(MMP__LOG_WARN, "collective %u failed: %s (rank %d)", s->seq,
             mmp_err_name(s->err), s->fail_rank);
  else if (s->err != 0 && s->err != MMP_EMISMATCH)
    MMP__LOG(MMP__LOG_WARN, "collective %u failed: %s", s->seq,
             mmp_err_name(s->err));
  sched_sink_if_lost(s, s->err);
  creq->status.error = s->err;
  creq->status.bytes = s->err == 0 ? s->len : 0;
  sched_complete(s, creq, s->err);
}

/* Lock held. Posts everything that became ready, until nothing is. */
static void sched_run(mmp__sched_t *s) {
  MMP__ASSERT_LOCKED(s->e);
  if (s->running || s->aborted)
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

static int is_failure(int err) {
  return err == MMP_EPEERLOST || err == MMP_ETIMEDOUT;
}

/* Lock held. Switches to poison mode for `err`, seen at world rank
 * `rank` (-1: unknown). The first cause is kept, except that a lost or
 * silent rank replaces a mismatch: a failure makes ranks look as if they
 * disagreed (they send empty messages), never the other way round. */
static void sched_fail(mmp__sched_t *s, int err, int rank) {
  assert(err != 0);
  if (s->err == 0 || (s->err == MMP_EMISMATCH && is_failure(err))) {
    s->err = err;
    s->fail_rank = rank;
  }
  s->poison = 1;
}

/* The world rank of a peer of the collective, for the log. */
static int fail_world(const mmp__sched_t *s, int peer) {
  return peer >= 0 ? world_of(s, peer) : -1;
}

/* Lock held. A receive of op `op` completed with a note: the sender is in
 * poison mode and says why. Returns 1 if there was one. */
static int note_arrived(mmp__sched_t *s, const mmp__sop_t *op,
                        const mmp__sexec_t *x) {
  int rank, err = mmp__sched_note_decode(x->req.note, world_size(s->e), &rank);

  if (err == 0)
    return 0;
  if (s->err == 0 || (s->err == MMP_EMISMATCH && is_failure(err)))
    MMP__LOG(MMP__LOG_INFO, "collective %u: rank %d passes on %s from rank %d",
             s->seq,
             fail_world(s, x->req.status.source >= 0 ? x->req.status.source
                                                     : op->peer),
             mmp_err_name(err), rank);
  sched_fail(s, err, rank);
  return 1;
}

/* Completes the first receive without posting it: its message is already
 * here (taken by a replan, or by the collective before building). */
static void first_taken(mmp__sched_t *s) {
  int nf = s->first, k;

  s->x[nf].posted = 1;
  s->x[nf].done = 1;
  s->remaining--;
  for (k = s->rhead; k < s->nready; k++)
    if (s->ready[k] == nf)
      s->ready[k] = s->ready[s->rhead++];
  for (k = 0; k < s->ops[nf].nsucc; k++) {
    int j = s->succ[s->ops[nf].succ + k];
    if (--s->x[j].npred == 0)
      sched_ready(s, j);
  }
}

/* Lock held. Replaces the plan with the one the sender's header `hdr`
 * implies: the old ops are over (nothing but the first receive was
 * posted), the new plan's first receive stands for the message just
 * received. Returns 1, or 0 when no plan could be made from the header
 * (then the old one runs on in poison mode, its sends empty). */
static int sched_replan(mmp__sched_t *s, const uint8_t *hdr, size_t n) {
  mmp__sched_t keep = *s;
  int rc;

  MMP__ASSERT_LOCKED(s->e);
  assert(s->old.ops == NULL); /* once per schedule */
  s->ops = NULL;
  s->x = NULL;
  s->nops = s->cap = 0;
  s->edges = NULL;
  s->nedges = s->ecap = 0;
  s->succ = NULL;
  s->ready = NULL;
  s->nready = s->rhead = 0;
  s->first = -1;
  /* What this rank sends on is the sender's plan: its header too. */
  memmove(s->hdr, hdr, n);
  s->hdr_len = n;
  rc = s->rebuild(s, s->hdr, n);
  if (rc == 0)
    rc = mmp__sched_prepare(s, 0);
  if (rc == 0 && s->first >= 0)
    rc = sched_exec(s);
  if (rc != 0 || s->first < 0) {
    int err = rc != 0 ? rc : MMP_EPROTO;
    free_plan(s->ops, s->x, s->nops);
    free(s->edges);
    free(s->succ);
    free(s->ready);
    *s = keep;
    sched_fail(s, err, s->fail_rank);
    return 0;
  }
  s->old.ops = keep.ops;
  s->old.x = keep.x;
  s->old.nops = keep.nops;
  free(keep.edges);
  free(keep.succ);
  free(keep.ready);
  first_taken(s);
  return 1;
}

int mmp__sched_take_first(mmp__sched_t *s, const uint8_t *msg, size_t got) {
  const mmp__sop_t *op;
  size_t want;

  assert(s->x == NULL);
  if (s->first < 0)
    return MMP_EPROTO;
  op = &s->ops[s->first];
  assert(op->regs == NULL); /* its callers' plans pack nothing */
  want = op->len > FIRST_PIGGYBACK_MAX ? 0 : op->len;
  s->first_here = 1;
  if (s->poison)
    return 0;
  if (got < 4 || got != 4 + (size_t)msg[3] + want)
    return MMP_EMISMATCH;
  if (want > 0)
    memcpy(s->buf + op->off, msg + 4 + msg[3], want);
  return 0;
}

int mmp__sched_envelope(const uint8_t *msg, size_t n, const uint8_t **hdr,
                        size_t *hlen, int *poison) {
  if (n < 4 || msg[0] != ENV_MAGIC || msg[1] != ENV_VERSION ||
      msg[3] > MMP__HDR_MAX || n < 4 + (size_t)msg[3])
    return MMP_EPROTO;
  *hdr = msg + 4;
  *hlen = msg[3];
  *poison = (msg[2] & ENV_POISON) != 0;
  return 0;
}

/* The first receive completed: check the header, take the data. Returns
 * 1 if the schedule was replanned from the header. */
static int first_arrived(mmp__sched_t *s, const mmp__sop_t *op,
                         const mmp__sexec_t *x) {
  size_t got = x->req.status.bytes, n;
  const uint8_t *env = x->tmp;
  int noted = note_arrived(s, op, x);

  if (!noted && x->req.err != 0 && x->req.err != MMP_ETRUNC) {
    /* From any source: the rank lost is not necessarily op->peer. */
    sched_fail(s, x->req.err, -1);
    return 0;
  }
  if (got < 4 || env[0] != ENV_MAGIC || env[1] != ENV_VERSION ||
      env[3] > MMP__HDR_MAX || got < 4 + (size_t)env[3]) {
    /* Not a schedule's first message at all (an arrival-aware root's
     * GROUP header, to a rank that took the broadcast for another): no
     * plan here matches what the others run, so none is kept waiting for
     * their messages. Only the first receive was posted. */
    int i;
    sched_fail(s, MMP_EMISMATCH, -1);
    for (i = 0; i < s->nops; i++)
      if (!s->x[i].done) {
        s->x[i].done = 1;
        s->remaining--;
      }
    s->nready = s->rhead = 0;
    return 1;
  }
  n = env[3];
  if (!noted && n == s->hdr_len && memcmp(env + 4, s->hdr, n) == 0 &&
      !(env[2] & ENV_POISON) && x->req.err == 0 && got == 4 + n + op->len) {
    sop_unpack(s, op, x->tmp + 4 + n);
    return 0;
  }
  /* Disagreement, or an upstream failure: do what the sender's view
   * implies, with empty sends. */
  if (!noted) {
    MMP__LOG(MMP__LOG_WARN,
             "collective %u: arguments differ from rank %d's (got %zu of %zu "
             "bytes, %s)%s",
             s->seq, fail_world(s, x->req.status.source), got,
             4 + s->hdr_len + op->len, mmp_err_name(x->req.err),
             (env[2] & ENV_POISON) ? ", upstream disagreed" : "");
    sched_fail(s, MMP_EMISMATCH, fail_world(s, x->req.status.source));
  }
  return s->rebuild != NULL ? sched_replan(s, env + 4, n) : 0;
}

/* Lock held. A receive other than the first completed: a note or an
 * error other than truncation switches to poison mode, even in poison
 * mode (where a failure still replaces a mismatch). Returns 1 then. */
static int recv_failed(mmp__sched_t *s, const mmp__sop_t *op,
                       const mmp__sexec_t *x) {
  int err = x->req.err, rank;

  if (note_arrived(s, op, x))
    return 1;
  if (err == 0 || err == MMP_ETRUNC)
    return 0;
  rank = is_failure(err) ? fail_world(s, op->peer) : -1;
  /* Failed by a loss elsewhere in the communicator: name a rank lost. */
  if (err == MMP_EPEERLOST && s->comm_loss) {
    int lost = mmp__comm_lost_locked(s->e, s->comm);
    rank = lost >= 0 ? lost : rank;
  }
  sched_fail(s, err, rank);
  return 1;
}

/* A checked receive completed: the header must be this rank's, and the
 * data follows it. No rebuild: the plans of ranks that exchange at once
 * do not depend on who sent first. */
static void check_arrived(mmp__sched_t *s, const mmp__sop_t *op,
                          const mmp__sexec_t *x) {
  size_t got = x->req.status.bytes;
  const uint8_t *env = x->tmp;

  if (recv_failed(s, op, x) || s->poison)
    return;
  if (got != 4 + s->hdr_len + op->len || env[0] != ENV_MAGIC ||
      env[1] != ENV_VERSION || (env[2] & ENV_POISON) || env[3] != s->hdr_len ||
      memcmp(env + 4, s->hdr, s->hdr_len) != 0) {
    MMP__LOG(MMP__LOG_WARN,
             "collective %u: rank %d's arguments differ from this rank's "
             "(got %zu of %zu bytes%s)",
             s->seq, op->peer, got, 4 + s->hdr_len + op->len,
             got >= 4 && (env[2] & ENV_POISON) ? ", it already disagreed" : "");
    sched_fail(s, MMP_EMISMATCH, fail_world(s, op->peer));
    return;
  }
  sop_unpack(s, op, x->tmp + 4 + s->hdr_len);
}

/* Lock held: an op completed. */
static void sop_done(mmp_request_t *r, void *arg) {
  mmp__sched_t *s = arg;
  mmp__sexec_t *x = mmp__container_of(r, mmp__sexec_t, req);
  const mmp__sop_t *op;
  int i, k, detached;

  MMP__ASSERT_LOCKED(s->e);
  /* Only the current plan's ops run; a replan retires the old one. */
  if (x < s->x || x >= s->x + s->nops) {
    assert(s->old.x != NULL);
    return;
  }
  i = (int)(x - s->x);
  op = &s->ops[i];
  if (x->done)
    return;
  /* Read now: once sched_run completes the request, its waiter may free
   * s; only a detached schedule (no request) is still ours after it. */
  detached = s->detached;
  if (op->kind == MMP__SOP_RECV && (op->flags & MMP__SOP_FIRST)) {
    int replanned;
    /* Done before a replan retires the rest of the plan, so that it is
     * counted once. */
    x->done = 1;
    s->remaining--;
    replanned = first_arrived(s, op, x);
    free(x->tmp);
    x->tmp = NULL;
    if (replanned) {
      sched_run(s);
      if (detached)
        sched_detached_check(s); /* may free s */
      return;
    }
  } else if (op->kind == MMP__SOP_RECV && (op->flags & MMP__SOP_CHECK)) {
    check_arrived(s, op, x);
    free(x->tmp);
    x->tmp = NULL;
    x->done = 1;
    s->remaining--;
  } else {
    if (op->kind == MMP__SOP_RECV && recv_failed(s, op, x))
      ;
    else if (op->kind == MMP__SOP_RECV && !s->poison &&
             (x->req.err != 0 || x->req.status.bytes != op->len))
      sched_fail(s, MMP_EMISMATCH, fail_world(s, op->peer));
    else if (op->kind == MMP__SOP_SEND && x->req.err != 0)
      sched_fail(s, x->req.err,
                 is_failure(x->req.err) ? fail_world(s, op->peer) : -1);
    else if (op->kind == MMP__SOP_RECV && op->regs != NULL && !s->poison)
      sop_unpack(s, op, x->tmp);
    free(x->tmp);
    x->tmp = NULL;
    x->done = 1;
    s->remaining--;
  }
  for (k = 0; k < op->nsucc; k++) {
    int j = s->succ[op->succ + k];
    if (--s->x[j].npred == 0 && !s->x[j].done)
      sched_ready(s, j);
  }
  sched_run(s);
  if (detached)
    sched_detached_check(s); /* may free s */
}

void mmp__sched_dump(const mmp__sched_t *s) {
  int i;

  MMP__LOG(MMP__LOG_ERROR, "schedule %u: %d ops, %d left, err %d, poison %d",
           s->seq, s->nops, s->remaining, s->err, s->poison);
  for (i = 0; i < s->nops; i++) {
    const mmp__sop_t *o = &s->ops[i];
    const mmp__sexec_t *x = s->x != NULL ? &s->x[i] : NULL;
    if (x == NULL || !x->done)
      MMP__LOG(MMP__LOG_ERROR,
               "  op %d %s peer %d off %zu len %zu phase %d%s npred %d %s", i,
               o->kind == MMP__SOP_SEND     ? "send"
               : o->kind == MMP__SOP_RECV   ? "recv"
               : o->kind == MMP__SOP_REDUCE ? "reduce"
               : o->kind == MMP__SOP_COPY   ? "copy"
                                            : "nop",
               o->peer, o->off, o->len, o->phase,
               (o->flags & MMP__SOP_FIRST) ? " FIRST" : "",
               x != NULL ? x->npred : o->npred,
               x != NULL && x->posted ? "posted" : "waiting");
  }
}

static void free_plan(mmp__sop_t *ops, mmp__sexec_t *x, int nops) {
  int i;

  for (i = 0; i < nops; i++) {
    if (x != NULL)
      free(x[i].tmp);
    free(ops[i].regs);
  }
  free(ops);
  free(x);
}

void mmp__sched_free(mmp__sched_t *s) {
  if (s == NULL)
    return;
  assert(!s->tmo.armed); /* disarmed when its request completed */
  free_plan(s->ops, s->x, s->nops);
  if (s->old.ops != NULL)
    free_plan(s->old.ops, s->old.x, s->old.nops);
  free(s->edges);
  free(s->succ);
  free(s->ready);
  free(s->scratch);
  free(s->ident);
  free(s);
}

/* The largest message `s` sends or receives, in bytes. */
static size_t sched_max_msg(const mmp__sched_t *s) {
  size_t m = 0;
  int i;

  for (i = 0; i < s->nops; i++)
    if ((s->ops[i].kind == MMP__SOP_SEND || s->ops[i].kind == MMP__SOP_RECV) &&
        s->ops[i].len > m)
      m = s->ops[i].len;
  return m;
}

static void sched_req_free(mmp_request_t *r) {
  mmp__sched_free(r->cb_arg);
}

int mmp__sched_follow_locked(mmp_request_t *req,
                             void (*fn)(mmp_request_t *, void *), void *arg) {
  mmp__sched_t *s;

  if (req->dtor != sched_req_free)
    return MMP_EINVAL;
  if (atomic_load_explicit(&req->done, memory_order_acquire)) {
    fn(req, arg);
    return 0;
  }
  /* Not complete: cb_arg is still the schedule (an abort completes the
   * request as it clears it). */
  s = req->cb_arg;
  MMP__ASSERT_LOCKED(s->e);
  s->follow = fn;
  s->follow_arg = arg;
  return 0;
}

int mmp__sched_start(mmp__sched_t *s, mmp_request_t **out) {
  mmp_request_t *creq;
  int rc;

  assert(s->e != NULL && !s->started);
  MMP__ASSERT_UNLOCKED(s->e);
  *out = NULL;
  rc = mmp__sched_prepare(s, 0);
  if (rc == 0)
    rc = sched_exec(s);
  creq = rc == 0 ? calloc(1, sizeof(*creq)) : NULL;
  if (creq == NULL) {
    mmp__sched_free(s);
    return rc != 0 ? rc : MMP_ENOMEM;
  }
  mmp__coll_req_init(creq, s->comm, s->wait_by_msg ? sched_max_msg(s) : s->len,
                     s->source, s, sched_req_free);
  s->creq = creq;
  mmp__lock(s->e);
  if (s->timeout_ms > 0)
    mmp__deadline_start_locked(s->e, &s->tmo, s->timeout_ms, sched_tmo_fired,
                               s);
  s->started = 1;
  sched_run(s);
  mmp__unlock(s->e);
  *out = creq;
  return 0;
}

int mmp__sched_launch_locked(mmp__sched_t *s,
                             void (*on_done)(mmp__sched_t *, void *),
                             void *arg) {
  int rc;

  assert(s->e != NULL && !s->started);
  MMP__ASSERT_LOCKED(s->e);
  rc = mmp__sched_prepare(s, 0);
  if (rc == 0)
    rc = sched_exec(s);
  if (rc != 0)
    return rc;
  s->on_done = on_done;
  s->on_done_arg = arg;
  s->started = 1;
  if (s->first_here) {
    if (s->first < 0)
      return MMP_EPROTO;
    first_taken(s);
  }
  sched_run(s);
  return 0;
}
