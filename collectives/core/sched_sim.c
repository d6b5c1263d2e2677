/* SPDX-License-Identifier: MIT */
/*
 * Symbolic runs: every rank's schedule of one collective, executed against
 * each other in one process, without a network or an engine. Messages are
 * matched as the runtime matches them (same sender, receiver and tag, in
 * posting order; a first receive from any sender), an op posts only once
 * its predecessors completed and the previous op of its chain posted, as
 * the executor does, and a send and its receive complete together
 * (rendezvous, the strictest order: a schedule that completes so also
 * completes when sends finish early). Each rank's buffer is tracked byte
 * by byte as held or not, so a run shows that every byte reaches every
 * rank and that nobody forwards bytes it does not hold yet.
 *
 * With memory for every rank (mmp__sched_simulate_ex), messages carry
 * real bytes and REDUCE and COPY ops compute, with the same code the
 * executor runs (mmp__sop_local): reductions, whose bytes are held by
 * every rank from the start, are checked by their results.
 *
 * This is the check that builders are right at any p, and the ground the
 * simulation of large jobs stands on.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/core/sched.h"

#define ANY_SRC (-1)

/* A channel: the pending ops (all sends or all receives) of one sender,
 * receiver and tag, oldest first. */
typedef struct chan_s {
  uint64_t key; /* 0: empty slot */
  long head, tail;
  int sends;
} chan_t;

typedef struct sim_s {
  mmp__sched_t *const *s;
  int p;
  size_t words; /* bitmap words per rank */
  long *base;   /* global number of rank r's op 0 */
  long nops;
  int *rank_of; /* the rank of each global op */
  int *npred;
  long *next; /* in a channel's queue */
  uint8_t *st;
  uint64_t *have;
  long *work;
  long nwork;
  chan_t *chan;
  size_t cap;
  uint8_t *const *mem; /* rank r's address space, or NULL */
  uint8_t *pack;       /* a packed message in transit */
  size_t pack_cap;
  mmp__sim_report_t *rep;
} sim_t;

enum { ST_POSTED = 1, ST_DONE = 2, ST_HELD = 4 };

static void fail(sim_t *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(sim_t *m, const char *fmt, ...) {
  va_list ap;

  if (!m->rep->ok)
    return;
  m->rep->ok = 0;
  va_start(ap, fmt);
  vsnprintf(m->rep->what, sizeof(m->rep->what), fmt, ap);
  va_end(ap);
}

static const mmp__sop_t *op_of(const sim_t *m, long g, int *rank) {
  int r = m->rank_of[g];

  if (rank != NULL)
    *rank = r;
  return &m->s[r]->ops[g - m->base[r]];
}

/* ---- Byte tracking --------------------------------------------------------
 */

static uint64_t *have_of(sim_t *m, int r) {
  return m->have + (size_t)r * m->words;
}

static int range_held(const uint64_t *h, size_t off, size_t len) {
  size_t i;

  for (i = off; i < off + len; i++) {
    if ((i & 63) == 0 && i + 64 <= off + len) {
      if (h[i >> 6] != ~0ull)
        return 0;
      i += 63;
    } else if (!(h[i >> 6] & (1ull << (i & 63)))) {
      return 0;
    }
  }
  return 1;
}

static void range_set(uint64_t *h, size_t off, size_t len) {
  size_t i;

  for (i = off; i < off + len; i++) {
    if ((i & 63) == 0 && i + 64 <= off + len) {
      h[i >> 6] = ~0ull;
      i += 63;
    } else {
      h[i >> 6] |= 1ull << (i & 63);
    }
  }
}

/* The regions an op reads or writes. */
static int op_regions(const mmp__sop_t *op, size_t k, size_t *off,
                      size_t *len) {
  if (op->regs == NULL) {
    *off = op->off;
    *len = op->len;
    return k == 0;
  }
  if (k >= (size_t)op->nregs)
    return 0;
  *off = op->regs[2 * k];
  *len = op->regs[2 * k + 1];
  return 1;
}

/* ---- Channels ----------------------------------------------------------- */

/* Never 0, which marks an empty slot. */
static uint64_t chan_key(int src, int dst, int tag) {
  return (1ull << 63) | ((uint64_t)(src + 1) << 40) | ((uint64_t)dst << 16) |
         (uint64_t)tag;
}

static chan_t *chan_find(sim_t *m, uint64_t key) {
  size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);

  while (m->chan[h].key != 0 && m->chan[h].key != key)
    h = (h + 1) & (m->cap - 1);
  if (m->chan[h].key == 0) {
    m->chan[h].key = key;
    m->chan[h].head = m->chan[h].tail = -1;
  }
  return &m->chan[h];
}

static long chan_pop(sim_t *m, chan_t *c) {
  long g = c->head;

  c->head = m->next[g];
  if (c->head < 0)
    c->tail = -1;
  return g;
}

static void chan_push(sim_t *m, chan_t *c, long g, int send) {
  m->next[g] = -1;
  if (c->tail >= 0)
    m->next[c->tail] = g;
  else
    c->head = g;
  c->tail = g;
  c->sends = send;
}

/* ---- Running --------------------------------------------------------------
 */

static void sim_ready(sim_t *m, long g) {
  int r;
  const mmp__sop_t *op = op_of(m, g, &r);

  if (op->cprev >= 0 && !(m->st[m->base[r] + op->cprev] & ST_POSTED)) {
    m->st[g] |= ST_HELD;
    return;
  }
  m->work[m->nwork++] = g;
}

static void sim_complete(sim_t *m, long g) {
  int r, k;
  const mmp__sop_t *op = op_of(m, g, &r);
  const mmp__sched_t *s = m->s[r];

  m->st[g] |= ST_DONE;
  for (k = 0; k < op->nsucc; k++) {
    long j = m->base[r] + s->succ[op->succ + k];
    if (--m->npred[j] == 0)
      sim_ready(m, j);
  }
}

/* The bytes of a message, packed in region order, from rank rs's memory
 * to rank rr's. Returns 0, or -1 out of memory. */
static int sim_move(sim_t *m, const mmp__sop_t *snd, int rs,
                    const mmp__sop_t *rcv, int rr) {
  size_t k, off, len, at = 0;

  if (snd->len > m->pack_cap) {
    uint8_t *n = realloc(m->pack, snd->len);
    if (n == NULL)
      return -1;
    m->pack = n;
    m->pack_cap = snd->len;
  }
  for (k = 0; op_regions(snd, k, &off, &len); k++, at += len)
    if (len > 0)
      memcpy(m->pack + at, m->mem[rs] + off, len);
  for (k = 0, at = 0; op_regions(rcv, k, &off, &len); k++, at += len)
    if (len > 0)
      memcpy(m->mem[rr] + off, m->pack + at, len);
  return 0;
}

/* A send and its receive meet: the bytes move, both complete. */
static void sim_deliver(sim_t *m, long gs, long gr) {
  int rs, rr;
  const mmp__sop_t *snd = op_of(m, gs, &rs), *rcv = op_of(m, gr, &rr);
  size_t k, off, len;

  m->rep->messages++;
  if (snd->len != rcv->len)
    fail(m,
         "rank %d sends %zu bytes (phase %d) that rank %d receives into "
         "%zu",
         rs, snd->len, snd->phase, rr, rcv->len);
  for (k = 0; op_regions(rcv, k, &off, &len); k++)
    if (off + len <= m->words * 64)
      range_set(have_of(m, rr), off, len);
  if (m->mem != NULL && snd->len == rcv->len && sim_move(m, snd, rs, rcv, rr))
    fail(m, "out of memory for a %zu-byte message", snd->len);
  sim_complete(m, gs);
  sim_complete(m, gr);
}

static void sim_post(sim_t *m, long g) {
  int r, peer, tag, first;
  const mmp__sop_t *op = op_of(m, g, &r);
  size_t k, off, len;
  chan_t *c;

  m->st[g] |= ST_POSTED;
  if (op->cnext >= 0 && (m->st[m->base[r] + op->cnext] & ST_HELD)) {
    m->st[m->base[r] + op->cnext] &= (uint8_t)~ST_HELD;
    m->work[m->nwork++] = m->base[r] + op->cnext;
  }
  if (op->kind >= MMP__SOP_NOP) {
    if (m->mem != NULL)
      mmp__sop_local(m->s[r], op, m->mem[r] + op->src, m->mem[r] + op->off);
    /* A copy hands on what the source holds. */
    if (op->kind == MMP__SOP_COPY && op->src + op->len <= m->words * 64 &&
        op->off + op->len <= m->words * 64 &&
        range_held(have_of(m, r), op->src, op->len))
      range_set(have_of(m, r), op->off, op->len);
    sim_complete(m, g);
    return;
  }
  first = (op->flags & MMP__SOP_FIRST) != 0;
  tag = first ? MMP__PHASE_FIRST : op->phase;
  peer = op->peer;
  if (op->kind == MMP__SOP_SEND) {
    for (k = 0; op_regions(op, k, &off, &len); k++)
      if (off + len > m->words * 64 || !range_held(have_of(m, r), off, len))
        fail(m, "rank %d sends [%zu, %zu) to rank %d before it holds it", r,
             off, off + len, peer);
    /* A first message goes to whoever receives the first from anyone. */
    c = chan_find(m, chan_key(first ? ANY_SRC : r, peer, tag));
    if (c->head >= 0 && !c->sends)
      sim_deliver(m, g, chan_pop(m, c));
    else
      chan_push(m, c, g, 1);
    return;
  }
  c = chan_find(m, chan_key(first ? ANY_SRC : peer, r, tag));
  if (c->head >= 0 && c->sends)
    sim_deliver(m, chan_pop(m, c), g);
  else
    chan_push(m, c, g, 0);
}

static int sim_alloc(sim_t *m, size_t want_len) {
  long g = 0;
  int r, i;

  m->base = malloc(((size_t)m->p + 1) * sizeof(long));
  if (m->base == NULL)
    return MMP_ENOMEM;
  for (r = 0; r < m->p; r++) {
    m->base[r] = g;
    g += m->s[r]->nops;
  }
  m->base[m->p] = g;
  m->nops = g;
  m->rep->ops = g;
  for (m->cap = 16; m->cap < 2 * (size_t)g + 16; m->cap *= 2)
    ;
  m->words = (want_len + 63) / 64;
  m->rank_of = malloc(((size_t)g + 1) * sizeof(int));
  m->npred = malloc(((size_t)g + 1) * sizeof(int));
  m->next = malloc(((size_t)g + 1) * sizeof(long));
  m->work = malloc(((size_t)g + 1) * sizeof(long));
  m->st = calloc((size_t)g + 1, 1);
  m->chan = calloc(m->cap, sizeof(chan_t));
  m->have = calloc((size_t)m->p * m->words + 1, sizeof(uint64_t));
  if (m->rank_of == NULL || m->npred == NULL || m->next == NULL ||
      m->work == NULL || m->st == NULL || m->chan == NULL || m->have == NULL)
    return MMP_ENOMEM;
  for (r = 0; r < m->p; r++)
    for (i = 0; i < m->s[r]->nops; i++) {
      m->rank_of[m->base[r] + i] = r;
      m->npred[m->base[r] + i] = m->s[r]->ops[i].npred;
    }
  return 0;
}

static void sim_free(sim_t *m) {
  free(m->base);
  free(m->rank_of);
  free(m->npred);
  free(m->next);
  free(m->work);
  free(m->st);
  free(m->chan);
  free(m->have);
  free(m->pack);
}

/* After the run: every op done, every byte everywhere. */
static void sim_verdict(sim_t *m, size_t want_len) {
  long g;
  int r;

  for (g = 0; g < m->nops; g++)
    if (!(m->st[g] & ST_DONE)) {
      const mmp__sop_t *op = op_of(m, g, &r);
      m->rep->stuck_rank = r;
      fail(m, "rank %d: %s %s peer %d phase %d (%zu bytes) never completes", r,
           (m->st[g] & ST_POSTED) ? "posted" : "unposted",
           op->kind == MMP__SOP_SEND   ? "send"
           : op->kind == MMP__SOP_RECV ? "recv"
                                       : "local op",
           op->peer, op->phase, op->len);
      return;
    }
  for (r = 0; r < m->p; r++)
    if (!range_held(have_of(m, r), 0, want_len)) {
      fail(m, "rank %d ends without every byte of [0, %zu)", r, want_len);
      return;
    }
}

int mmp__sched_simulate(mmp__sched_t *const *s, int p, size_t want_len,
                        const int *init_rank, const size_t *init, int n_init,
                        mmp__sim_report_t *rep) {
  return mmp__sched_simulate_ex(s, p, want_len, init_rank, init, n_init, NULL,
                                rep);
}

int mmp__sched_simulate_ex(mmp__sched_t *const *s, int p, size_t want_len,
                           const int *init_rank, const size_t *init, int n_init,
                           uint8_t *const *mem, mmp__sim_report_t *rep) {
  sim_t m;
  long g;
  int r, k, rc;

  memset(rep, 0, sizeof(*rep));
  rep->ok = 1;
  rep->stuck_rank = -1;
  for (r = 0; r < p; r++)
    if ((rc = mmp__sched_prepare(s[r], 0)) != 0)
      return rc;
  memset(&m, 0, sizeof(m));
  m.s = s;
  m.p = p;
  m.rep = rep;
  m.mem = mem;
  if ((rc = sim_alloc(&m, want_len)) != 0) {
    sim_free(&m);
    return rc;
  }
  for (k = 0; k < n_init; k++)
    range_set(have_of(&m, init_rank[k]), init[2 * k], init[2 * k + 1]);
  for (g = 0; g < m.nops; g++)
    if (m.npred[g] == 0)
      sim_ready(&m, g);
  /* Any order gives the same matches: channels keep posting order, and
   * chains keep each rank's posting order per channel. */
  while (m.nwork > 0)
    sim_post(&m, m.work[--m.nwork]);
  sim_verdict(&m, want_len);
  sim_free(&m);
  return 0;
}
