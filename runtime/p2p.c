/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point messaging: matching, the eager and rendezvous protocols,
 * eager flow control, and what happens when a peer is lost.
 *
 * Matching. Receives are matched against messages in the order the
 * messages' first frames (EAGER or RTS) arrive on the connection, and the
 * posted and unexpected queues are both FIFO, so messages between two ranks
 * never overtake each other for the same communicator and tag.
 *
 * Eager. The whole message travels in one EAGER frame. The sender completes
 * as soon as the frame is on the wire or copied into the send queue. The
 * receiver buffers it if no receive is posted. To bound that buffer, each
 * sender holds credit for MINIMP_EAGER_BUFFER bytes per receiver; every
 * eager frame spends its length plus 64 bytes, and the receiver returns the
 * credit in CREDIT frames once the message is consumed. An AUTO send that
 * finds no credit switches to rendezvous; a forced EAGER send waits in the
 * queue and asks for credit (CREDIT with the REQ flag), so a slow receiver
 * pushes back on the sender instead of growing without limit.
 *
 * Rendezvous. The sender sends RTS (its cookie, the length). When a receive
 * matches, the receiver answers CTS (both cookies, the bytes it accepts)
 * and the sender streams DATA frames of MINIMP_RNDV_CHUNK bytes, at most
 * MINIMP_RNDV_WINDOW in flight per peer, which the transport reads straight
 * into the receive buffer. The send completes when the last DATA frame is
 * written, which is after the match. Cookies index a table with generation
 * numbers, so a forged or stale cookie is detected, never dereferenced.
 *
 * Control frames (CTS, CREDIT, PING) go in their own queue that never waits
 * for credit, so two ranks flooding each other cannot deadlock on credit.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Eager payloads up to this size are copied when they must queue, so the
 * send completes at once; larger ones complete when the kernel has them. */
#define EAGER_COPY_MAX (4u * 1024)
/* Frames kept for reuse have room for a copy of this many bytes (control
 * frames need none); at most OUT_CACHE_MAX of them are kept, and
 * UNEXP_CACHE_MAX unexpected entries (128 bytes each), enough for what
 * the eager credit of a peer that shares memory lets pile up
 * (local.c). */
#define OUT_CACHE_COPY 64u
#define OUT_CACHE_MAX 4096u
#define UNEXP_CACHE_MAX 32768u

static void pump_peer(mmp__engine_t *e, int peer);
static void out_written(mmp__tp_write_t *w, int status);
static void report_suspect(mmp__engine_t *e, int peer, const char *why);
static void unexp_free(mmp__engine_t *e, mmp__unexp_t *u);

/* ---- Small helpers ------------------------------------------------------ */

/* What an operation with a peer that is down or closed fails with: why it
 * went down (MMP_EABORTED once the job was aborted), else MMP_EPEERLOST. */
static int peer_err(const mmp__peer_t *p) {
  return p->state == MMP__P_DOWN && p->down_err != 0 ? p->down_err
                                                     : MMP_EPEERLOST;
}

static int comm_local(const mmp_comm_t *comm, int world) {
  if (comm == NULL || comm->local_of == NULL)
    return world;
  return comm->local_of[world];
}

static size_t min_size(uint64_t a, uint64_t b) {
  return (size_t)(a < b ? a : b);
}

static int matches(uint32_t ctx, int src, int tag, uint32_t mctx, int msrc,
                   int mtag) {
  return ctx == mctx && (src == MMP_ANY_SOURCE || src == msrc) &&
         (tag == MMP_ANY_TAG || tag == mtag);
}

/* ---- Cookies ------------------------------------------------------------ */

static uint64_t cookie_register(mmp__engine_t *e, mmp_request_t *r) {
  uint32_t idx, gen;

  assert(r->cookie == 0); /* one registration at a time */
  if (e->cookie_free == 0) {
    uint32_t ncap = e->cookie_cap ? e->cookie_cap * 2 : 64, i;
    mmp_request_t **nr = realloc(e->cookie_req, ncap * sizeof(*nr));
    uint32_t *ng, *nn;
    if (nr == NULL)
      return 0;
    e->cookie_req = nr;
    ng = realloc(e->cookie_gen, ncap * sizeof(*ng));
    if (ng == NULL)
      return 0;
    e->cookie_gen = ng;
    nn = realloc(e->cookie_next, ncap * sizeof(*nn));
    if (nn == NULL)
      return 0;
    e->cookie_next = nn;
    for (i = e->cookie_cap; i < ncap; i++) {
      e->cookie_req[i] = NULL;
      e->cookie_gen[i] = 0;
      e->cookie_next[i] = i + 1 < ncap ? i + 2 : 0;
    }
    e->cookie_free = e->cookie_cap + 1;
    e->cookie_cap = ncap;
  }
  idx = e->cookie_free - 1;
  e->cookie_free = e->cookie_next[idx];
  gen = ++e->cookie_gen[idx];
  if (gen == 0)
    gen = e->cookie_gen[idx] = 1;
  e->cookie_req[idx] = r;
  r->cookie = ((uint64_t)gen << 32) | (idx + 1);
  return r->cookie;
}

static mmp_request_t *cookie_lookup(mmp__engine_t *e, uint64_t cookie) {
  uint32_t idx = (uint32_t)cookie, gen = (uint32_t)(cookie >> 32);

  if (idx == 0 || idx > e->cookie_cap)
    return NULL;
  idx--;
  if (e->cookie_gen[idx] != gen)
    return NULL;
  return e->cookie_req[idx];
}

static void cookie_release(mmp__engine_t *e, mmp_request_t *r) {
  uint32_t idx = (uint32_t)r->cookie;

  if (r->cookie == 0)
    return;
  idx--;
  assert(idx < e->cookie_cap && e->cookie_req[idx] == r);
  e->cookie_req[idx] = NULL;
  e->cookie_next[idx] = e->cookie_free;
  e->cookie_free = idx + 1;
  r->cookie = 0;
}

/* ---- Requests ----------------------------------------------------------- */

/* Lock held. Marks `r` complete; the caller filled status fields before. */
static void req_complete(mmp__engine_t *e, mmp_request_t *r, int err) {
  /* Read before `done` is published: a waiter that sees it may free r at
   * once (user requests), and only requests with a callback stay ours. */
  mmp__req_cb cb = r->cb;
  void *cb_arg = r->cb_arg;

  MMP__ASSERT_LOCKED(e);
  if (r->state == MMP__RQ_DONE)
    return;
  /* The transport must be done with the buffer before its owner sees it
   * complete (and may free it). */
  assert(r->nwrites == 0);
  assert(r->kind == MMP__REQ_SEND || r->kind == MMP__REQ_RECV ||
         r->kind == MMP__REQ_COLL);
  /* A timed receive's deadline lives in r, which its waiter may free. */
  mmp__deadline_stop_locked(e, &r->tmo);
  cookie_release(e, r);
  if (r->err == 0)
    r->err = err;
  r->state = MMP__RQ_DONE;
  r->status.error = r->err;
  if (r->kind == MMP__REQ_SEND) {
    r->status.source = comm_local(r->comm, r->peer);
    r->status.tag = r->tag;
    r->status.bytes = r->err == 0 ? r->len : 0;
  }
  atomic_store_explicit(&r->done, 1, memory_order_release);
  /* An internal request hands its completion to its owner (a collective
   * schedule); nobody waits on it, and its owner may post more work. */
  if (cb != NULL)
    cb(r, cb_arg);
  else
    mmp__engine_notify_locked(e);
}

/* Completes a receive that got `bytes` of a `msg_len`-byte message. */
static void recv_complete(mmp__engine_t *e, mmp_request_t *r, int src, int tag,
                          uint64_t msg_len, size_t bytes) {
  assert(r->kind == MMP__REQ_RECV && bytes <= r->len);
  r->status.source = comm_local(r->comm, src);
  r->status.tag = tag;
  r->status.bytes = bytes;
  req_complete(e, r, msg_len > r->len ? MMP_ETRUNC : 0);
}

/* ---- Sending frames ----------------------------------------------------- */

/* Lock held. A zeroed frame with room for a `copy`-byte payload: from the
 * cache where the room it keeps is enough. */
static mmp__out_t *out_new(mmp__engine_t *e, int peer, size_t copy) {
  mmp__list_t *it =
      copy <= OUT_CACHE_COPY ? mmp__list_head(&e->out_cache) : NULL;
  size_t cap = copy <= OUT_CACHE_COPY ? OUT_CACHE_COPY : copy;
  mmp__out_t *o;

  MMP__ASSERT_LOCKED(e);
  if (it != NULL) {
    mmp__list_remove(it);
    e->out_cached--;
    o = mmp__container_of(it, mmp__out_t, node);
    memset(o, 0, sizeof(*o));
  } else if ((o = calloc(1, sizeof(*o) + cap)) == NULL) {
    return NULL;
  } else {
    e->allocs++;
  }
  o->peer = peer;
  o->copy_cap = cap;
  o->w.cb = out_written;
  o->w.data = e;
  mmp__list_init(&o->node);
  return o;
}

/* Lock held. Frees a frame that is done with (written, failed or never
 * sent), forgetting it as its peer's queued PING answer. */
static void out_release(mmp__engine_t *e, mmp__out_t *o) {
  mmp__peer_t *p = &e->peers[o->peer];

  MMP__ASSERT_LOCKED(e);
  if (p->pong_out == o)
    p->pong_out = NULL;
  if (o->copy_cap == OUT_CACHE_COPY && e->out_cached < OUT_CACHE_MAX) {
    mmp__list_insert_head(&e->out_cache, &o->node);
    e->out_cached++;
    return;
  }
  free(o);
}

/* Lock held. A zeroed unexpected entry, from the cache if it has one. */
static mmp__unexp_t *unexp_new(mmp__engine_t *e) {
  mmp__list_t *it = mmp__list_head(&e->unexp_cache);
  mmp__unexp_t *u;

  MMP__ASSERT_LOCKED(e);
  if (it == NULL) {
    e->allocs++;
    return calloc(1, sizeof(mmp__unexp_t));
  }
  mmp__list_remove(it);
  e->unexp_cached--;
  u = mmp__container_of(it, mmp__unexp_t, node);
  memset(u, 0, sizeof(*u));
  return u;
}

/* A payload buffer of `len` bytes for `u`: its own room when that is
 * enough. NULL if out of memory. */
static uint8_t *unexp_room(mmp__engine_t *e, mmp__unexp_t *u, uint64_t len) {
  if (len <= MMP__UNEXP_SMALL)
    return u->data = u->small;
  e->allocs++;
  return u->data = malloc((size_t)len);
}

static void mark_dirty(mmp__engine_t *e, mmp__peer_t *p) {
  if (!p->dirty) {
    p->dirty = 1;
    mmp__list_insert_tail(&e->dirty, &p->dirty_node);
  }
}

static void connect_task(void *arg);

typedef struct connect_req_s {
  mmp__task_t task;
  mmp__engine_t *e;
  int peer;
} connect_req_t;

/* Lock held. Makes sure a connection to `peer` is on its way. */
static void ensure_connect(mmp__engine_t *e, int peer) {
  mmp__peer_t *p = &e->peers[peer];
  connect_req_t *c;

  MMP__ASSERT_LOCKED(e);
  if (p->state != MMP__P_IDLE)
    return;
  c = malloc(sizeof(*c));
  if (c == NULL) {
    mmp__p2p_fail_peer_locked(e, peer, MMP_ENOMEM);
    return;
  }
  p->state = MMP__P_CONNECTING;
  c->e = e;
  c->peer = peer;
  mmp__engine_post_locked(e, &c->task, connect_task, c);
}

/* Loop context (a task), lock not held. */
static void connect_task(void *arg) {
  connect_req_t *c = arg;
  mmp__engine_t *e = c->e;
  mmp__peer_t *p = &e->peers[c->peer];
  int rc = MMP_EADDR;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  if (p->state == MMP__P_CONNECTING && p->via->tp != NULL) {
    if (p->have_addr)
      rc = p->via->ops->connect(p->via->tp, c->peer,
                                (struct sockaddr *)&p->addr);
    if (rc != 0) {
      MMP__LOG(MMP__LOG_ERROR, "cannot connect to rank %d: %s", c->peer,
               mmp_strerror(rc));
      mmp__p2p_fail_peer_locked(e, c->peer, MMP_EPEERLOST);
    }
  }
  mmp__unlock(e);
  free(c);
}

/* Lock held. 1 if the frame at the head of the peer's send queue was
 * started by write_direct: it has its sequence number and perhaps some of
 * its bytes on the wire, so it must be the next frame written, control
 * frames included. */
static int started_head(const mmp__peer_t *p) {
  mmp__list_t *it = mmp__list_head(&p->sendq);
  return it != NULL && mmp__container_of(it, mmp__out_t, node)->w.encoded_;
}

/*
 * Lock held. Puts the frame described by the stack object `tmp` on its way
 * to `peer`: straight onto the socket when nothing is ahead of it, else into
 * a queue. `ctrl` frames may overtake queued EAGER/RTS frames. With `copy`,
 * the payload is copied when the frame must wait, so the caller's buffer is
 * free on return. Returns 1 if the frame is completely written or copied,
 * 0 if it waits referencing the caller's payload (`req` is then notified by
 * out_written), or a negative error.
 */
static int frame_submit(mmp__engine_t *e, int peer, mmp__out_t *tmp, int ctrl,
                        int copy, mmp_request_t *req) {
  mmp__peer_t *p = &e->peers[peer];
  mmp__list_t *q = ctrl ? &p->ctrlq : &p->sendq;
  size_t len = 0, i;
  mmp__out_t *o;

  MMP__ASSERT_LOCKED(e);
  assert(peer != e->cfg.rank); /* self-sends never make frames */
  if (p->state == MMP__P_DOWN || p->state == MMP__P_CLOSED)
    return peer_err(p);
  if (p->state == MMP__P_UP && mmp__list_empty(q) && !tmp->needs_credit &&
      !started_head(p) && p->via->ops->write_direct(p->conn, &tmp->w) == 1)
    return 1;
  for (i = 0; i < tmp->w.npayload; i++)
    len += tmp->w.payload[i].len;
  o = out_new(e, peer, copy ? len : 0);
  if (o == NULL)
    return MMP_ENOMEM;
  /* Carry over the header, the write progress and the credit state. */
  o->w.hdr = tmp->w.hdr;
  memcpy(o->w.wire_, tmp->w.wire_, sizeof(o->w.wire_));
  o->w.offset_ = tmp->w.offset_;
  o->w.encoded_ = tmp->w.encoded_;
  o->needs_credit = tmp->needs_credit;
  o->cost = tmp->cost;
  if (copy && len > 0) {
    size_t off = 0;
    for (i = 0; i < tmp->w.npayload; i++) {
      memcpy(o->copy + off, tmp->w.payload[i].base, tmp->w.payload[i].len);
      off += tmp->w.payload[i].len;
    }
    o->w.payload[0] = uv_buf_init((char *)o->copy, (unsigned)len);
    o->w.npayload = 1;
  } else {
    memcpy(o->w.payload, tmp->w.payload, sizeof(o->w.payload));
    o->w.npayload = tmp->w.npayload;
    o->req = req;
    if (req != NULL)
      req->nwrites++;
  }
  if (o->w.hdr.type == MMP__F_PING && !(o->w.hdr.flags & MMP__FF_REQ))
    p->pong_out = o;
  /* A partly written frame must be the very next thing on the wire. */
  if (o->w.encoded_)
    mmp__list_insert_head(q, &o->node);
  else
    mmp__list_insert_tail(q, &o->node);
  if (p->state == MMP__P_IDLE) {
    ensure_connect(e, peer);
  } else if (p->state == MMP__P_UP || p->state == MMP__P_CLOSING) {
    if (mmp__in_loop()) {
      pump_peer(e, peer);
    } else {
      mark_dirty(e, p);
      uv_async_send(&e->wakeup);
    }
  }
  return o->req == NULL ? 1 : 0;
}

/* Lock held. Sends a payload-less control frame. */
static int send_ctrl(mmp__engine_t *e, int peer, uint8_t type, uint16_t flags,
                     uint64_t a0, uint64_t a1, uint64_t a2) {
  mmp__out_t tmp;
  int rc;

  MMP__ASSERT_LOCKED(e);
  memset(&tmp, 0, sizeof(tmp));
  tmp.w.hdr.type = type;
  tmp.w.hdr.flags = flags;
  tmp.w.hdr.a0 = a0;
  tmp.w.hdr.a1 = a1;
  tmp.w.hdr.a2 = a2;
  rc = frame_submit(e, peer, &tmp, 1, 1, NULL);
  return rc < 0 ? rc : 0;
}

/* Lock held. Returns consumed eager credit when enough has piled up, or at
 * once when the peer asked for it. */
static void credit_consumed(mmp__engine_t *e, int peer, uint64_t cost) {
  mmp__peer_t *p = &e->peers[peer];

  MMP__ASSERT_LOCKED(e);
  if (peer == e->cfg.rank)
    return;
  assert(p->rx_used >= cost);
  p->rx_used -= cost;
  p->owed += cost;
  if (p->owed > 0 && (p->owed >= e->cfg.eager_buffer / 4 || p->starving) &&
      (p->state == MMP__P_UP || p->state == MMP__P_CLOSING)) {
    if (send_ctrl(e, peer, MMP__F_CREDIT, 0, p->owed, 0, 0) == 0) {
      p->owed = 0;
      p->starving = 0;
    }
  }
}

/* Loop context, lock held. Writes what the peer's queues allow: control
 * frames, then matching frames while credit lasts, then DATA within the
 * window, and finally BYE when everything has drained. */
static void pump_peer(mmp__engine_t *e, int peer) {
  mmp__peer_t *p = &e->peers[peer];
  uint64_t chunk = 0, window = 0;
  mmp__list_t *it;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_LOCKED(e);
  if (p->state != MMP__P_UP && p->state != MMP__P_CLOSING)
    return;
  if (started_head(p)) {
    /* Needs no credit: write_direct only starts frames that had it. */
    it = mmp__list_head(&p->sendq);
    mmp__list_remove(it);
    if (p->via->ops->write(p->conn,
                           &mmp__container_of(it, mmp__out_t, node)->w) != 0) {
      mmp__list_insert_head(&p->sendq, it);
      return;
    }
  }
  while ((it = mmp__list_head(&p->ctrlq)) != NULL) {
    mmp__out_t *o = mmp__container_of(it, mmp__out_t, node);
    mmp__list_remove(it);
    if (p->via->ops->write(p->conn, &o->w) != 0) {
      out_release(e, o);
      return;
    }
  }
  while ((it = mmp__list_head(&p->sendq)) != NULL) {
    mmp__out_t *o = mmp__container_of(it, mmp__out_t, node);
    if (o->needs_credit) {
      if (p->tx_credit < (int64_t)o->cost) {
        if (!p->credit_asked) {
          p->credit_asked = 1;
          send_ctrl(e, peer, MMP__F_CREDIT, MMP__FF_REQ, 0, 0, 0);
        }
        break;
      }
      p->tx_credit -= (int64_t)o->cost;
      o->needs_credit = 0;
      assert(p->credit_waiters > 0);
      p->credit_waiters--;
    }
    mmp__list_remove(it);
    if (p->via->ops->write(p->conn, &o->w) != 0) {
      mmp__list_insert_head(&p->sendq, it);
      return;
    }
  }
  if (!mmp__list_empty(&p->dataq)) {
    chunk = p->via->ops->data_chunk != NULL
                ? p->via->ops->data_chunk(p->conn, e->cfg.chunk)
                : e->cfg.chunk;
    window = e->cfg.window > chunk ? e->cfg.window : chunk;
  }
  while ((it = mmp__list_head(&p->dataq)) != NULL &&
         p->data_inflight < window) {
    mmp_request_t *r = mmp__container_of(it, mmp_request_t, node);
    uint64_t n = r->allowed - r->sent;
    mmp__out_t *o;

    assert(r->state == MMP__RQ_SENDING && r->sent < r->allowed);
    if (n > chunk)
      n = chunk;
    o = out_new(e, peer, 0);
    if (o == NULL)
      break;
    o->w.hdr.type = MMP__F_DATA;
    o->w.hdr.len = n;
    o->w.hdr.a0 = r->remote_cookie;
    o->w.hdr.a1 = r->sent;
    o->w.payload[0] = uv_buf_init((char *)r->buf + r->sent, (unsigned)n);
    o->w.npayload = 1;
    o->req = r;
    o->chunk = n;
    if (p->via->ops->write(p->conn, &o->w) != 0) {
      out_release(e, o);
      break;
    }
    r->nwrites++;
    r->sent += n;
    p->data_inflight += n;
    if (r->sent == r->allowed)
      mmp__list_remove(&r->node);
  }
  if (p->bye_pending && mmp__list_empty(&p->ctrlq) &&
      mmp__list_empty(&p->sendq) && mmp__list_empty(&p->dataq) &&
      p->data_inflight == 0) {
    mmp__out_t *o = out_new(e, peer, 0);
    if (o == NULL)
      return;
    p->bye_pending = 0;
    o->w.hdr.type = MMP__F_BYE;
    if (p->via->ops->write(p->conn, &o->w) != 0)
      out_release(e, o);
  }
}

void mmp__p2p_pump_dirty_locked(mmp__engine_t *e) {
  mmp__list_t *it;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_LOCKED(e);
  while ((it = mmp__list_head(&e->dirty)) != NULL) {
    mmp__peer_t *p = mmp__container_of(it, mmp__peer_t, dirty_node);
    assert(p->dirty);
    mmp__list_remove(it);
    p->dirty = 0;
    pump_peer(e, (int)(p - e->peers));
  }
}

/* Loop context. A frame left for the kernel (or failed). */
static void out_written(mmp__tp_write_t *w, int status) {
  mmp__out_t *o = mmp__container_of(w, mmp__out_t, w);
  mmp__engine_t *e = w->data;
  mmp__peer_t *p = &e->peers[o->peer];
  mmp_request_t *r = o->req;
  int peer = o->peer;
  uint8_t type = o->w.hdr.type;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  if (type == MMP__F_DATA) {
    assert(p->data_inflight >= o->chunk);
    p->data_inflight -= o->chunk;
  }
  if (r != NULL) {
    assert(r->nwrites > 0);
    r->nwrites--;
    if (status != 0 && r->err == 0)
      r->err = MMP_EPEERLOST;
    if (r->nwrites == 0 &&
        (type != MMP__F_DATA || r->sent == r->allowed || r->err != 0)) {
      if (r->err != 0 && type == MMP__F_DATA && r->sent != r->allowed)
        mmp__list_remove(&r->node);
      req_complete(e, r, r->err);
    }
  }
  if (type == MMP__F_BYE && status == 0 && p->state == MMP__P_CLOSING &&
      p->conn != NULL)
    p->via->ops->shutdown(p->conn, 5000);
  out_release(e, o);
  pump_peer(e, peer);
  mmp__unlock(e);
}

/* ---- Starting sends ----------------------------------------------------- */

static void req_init(mmp_request_t *r, int kind, const mmp_comm_t *comm,
                     uint32_t ctx, void *buf, size_t len, int peer, int tag) {
  int heap = r->on_heap;
  mmp__req_cb cb = r->cb;
  void *cb_arg = r->cb_arg;

  assert(kind == MMP__REQ_SEND || kind == MMP__REQ_RECV);
  memset(r, 0, sizeof(*r));
  r->on_heap = heap;
  r->cb = cb;
  r->cb_arg = cb_arg;
  mmp__list_init(&r->node);
  atomic_init(&r->done, 0);
  r->kind = kind;
  r->comm = comm;
  r->ctx = ctx;
  r->buf = buf;
  r->len = len;
  r->peer = peer;
  r->src = -1;
  r->tag = tag;
}

/* Its completion: a drain took its message, or never will (lock held). */
static void drain_done(mmp_request_t *r, void *arg) {
  (void)arg;
  free(r);
}

/* A receive of no room for (ctx, peer, tag) that frees itself once it
 * completes, not yet posted; NULL if out of memory. No communicator: the
 * caller's may be freed before the message comes, and a context is never
 * reused, so it matches nothing else. */
static mmp_request_t *drain_new(uint32_t ctx, int peer, int tag) {
  mmp_request_t *d = calloc(1, sizeof(*d));

  if (d == NULL)
    return NULL;
  d->cb = drain_done;
  req_init(d, MMP__REQ_RECV, NULL, ctx, NULL, 0, peer, tag);
  return d;
}

/* 1 if sink `k` (MMP__RECV_SINK) takes a message of context `ctx` and tag
 * `tag`: one whose tag agrees with the sink's under its mask. */
static int sink_takes(const mmp_request_t *k, uint32_t ctx, int tag) {
  return ctx == k->ctx && tag >= 0 &&
         ((uint32_t)tag & k->tag_mask) == ((uint32_t)k->tag & k->tag_mask);
}

/* Lock held. Finds and removes the first posted receive matching; a sink
 * stays posted and answers with a drain of its own for the message. */
static mmp_request_t *match_posted(mmp__engine_t *e, uint32_t ctx, int src,
                                   int tag) {
  mmp__list_t *it;

  MMP__ASSERT_LOCKED(e);
  mmp__list_foreach(it, &e->posted) {
    mmp_request_t *r = mmp__container_of(it, mmp_request_t, node);
    assert(r->kind == MMP__REQ_RECV && r->state == MMP__RQ_POSTED);
    if (r->rflags & MMP__RECV_SINK) {
      mmp_request_t *d;
      if (sink_takes(r, ctx, tag) && (d = drain_new(ctx, src, tag)) != NULL)
        return d;
      continue;
    }
    if (matches(r->ctx, r->peer, r->tag, ctx, src, tag)) {
      mmp__list_remove(it);
      return r;
    }
  }
  return NULL;
}

static int send_self(mmp__engine_t *e, mmp_request_t *r, unsigned mode) {
  int me = e->cfg.rank;
  mmp_request_t *rr = match_posted(e, r->ctx, me, r->tag);
  mmp__unexp_t *u;

  if (rr != NULL) {
    size_t n = min_size(r->len, rr->len);
    if (n > 0)
      memcpy(rr->buf, r->buf, n);
    rr->note = r->note;
    recv_complete(e, rr, me, r->tag, r->len, n);
    req_complete(e, r, 0);
    return 0;
  }
  u = unexp_new(e);
  if (u == NULL)
    return MMP_ENOMEM;
  u->kind = MMP__U_SELF;
  u->src = me;
  u->note = r->note;
  u->ctx = r->ctx;
  u->tag = r->tag;
  u->len = r->len;
  u->complete = 1;
  if (mode == MMP_SEND_EAGER ||
      (mode == MMP_SEND_AUTO && r->len <= e->cfg.eager_limit)) {
    if (r->len > 0) {
      if (unexp_room(e, u, r->len) == NULL) {
        unexp_free(e, u);
        return MMP_ENOMEM;
      }
      memcpy(u->data, r->buf, r->len);
    }
    req_complete(e, r, 0);
  } else {
    u->sreq = r;
    r->state = MMP__RQ_SELF;
  }
  mmp__list_insert_tail(&e->unexpected, &u->node);
  mmp__engine_notify_locked(e);
  return 0;
}

/* Lock held. A send that no one can wait for yet (its request is not
 * handed out) is complete: no one needs telling, except an internal
 * request's owner. */
static void send_done_now(mmp__engine_t *e, mmp_request_t *r) {
  if (r->cb != NULL) {
    req_complete(e, r, 0);
    return;
  }
  r->state = MMP__RQ_DONE;
  r->status.source = comm_local(r->comm, r->peer);
  r->status.tag = r->tag;
  r->status.bytes = r->len;
  r->status.error = 0;
  atomic_store_explicit(&r->done, 1, memory_order_release);
}

/* Lock held. Writes a small eager message straight into a transport that
 * takes whole frames at once (shared memory), when nothing waits before
 * it and credit allows. Returns 1 if the send is complete, 0 if it takes
 * the usual way. */
static int send_inline(mmp__engine_t *e, mmp_request_t *r, uint64_t cost,
                       int blocked) {
  mmp__peer_t *p = &e->peers[r->peer];
  mmp__frame_hdr_t h;

  MMP__ASSERT_LOCKED(e);
  if (p->via->ops->send_inline == NULL || r->len > EAGER_COPY_MAX || blocked ||
      p->tx_credit < (int64_t)cost || p->state != MMP__P_UP ||
      !mmp__list_empty(&p->sendq))
    return 0;
  memset(&h, 0, sizeof(h));
  h.type = MMP__F_EAGER;
  h.comm = r->ctx;
  h.tag = r->tag;
  h.a0 = r->len;
  h.a1 = r->note;
  if (p->via->ops->send_inline(p->conn, &h, r->buf, r->len) != 1)
    return 0;
  p->tx_credit -= (int64_t)cost;
  r->mode = MMP_SEND_EAGER;
  send_done_now(e, r);
  return 1;
}

static int send_remote(mmp__engine_t *e, mmp_request_t *r, unsigned mode) {
  mmp__peer_t *p = &e->peers[r->peer];
  uint64_t cost = (uint64_t)r->len + p->eager_over;
  int blocked = p->credit_waiters > 0; /* credit must go in queue order */
  int eager, rc;
  mmp__out_t tmp;

  if (mode == MMP_SEND_RNDV)
    eager = 0;
  else if (mode == MMP_SEND_EAGER)
    eager = cost <= e->cfg.eager_buffer && r->len <= e->cfg.max_frame;
  else
    eager =
        r->len <=
            (p->via == &e->shm ? e->cfg.shm_eager_limit : e->cfg.eager_limit) &&
        r->len <= e->cfg.max_frame && !blocked && p->tx_credit >= (int64_t)cost;

  if (eager && send_inline(e, r, cost, blocked) == 1)
    return 0;
  memset(&tmp, 0, sizeof(tmp));
  tmp.w.hdr.comm = r->ctx;
  tmp.w.hdr.tag = r->tag;
  if (eager) {
    r->mode = MMP_SEND_EAGER;
    tmp.w.hdr.type = MMP__F_EAGER;
    tmp.w.hdr.len = r->len;
    tmp.w.hdr.a0 = r->len;
    tmp.w.hdr.a1 = r->note;
    if (r->len > 0) {
      tmp.w.payload[0] = uv_buf_init((char *)r->buf, (unsigned)r->len);
      tmp.w.npayload = 1;
    }
    tmp.cost = cost;
    if (!blocked && p->tx_credit >= (int64_t)cost)
      p->tx_credit -= (int64_t)cost;
    else
      tmp.needs_credit = 1;
    /* Small frames are copied when they must wait, so the send completes
     * now; large ones, and those waiting for credit (backpressure), complete
     * once written. Through shared memory none is copied: a small frame
     * waits only for ring room, which the receiver frees as it reads
     * whatever it reads, and a sender that ran ahead of a slow receiver
     * would otherwise hold one copy per message (docs/design/transport.md,
     * "Memory"). */
    rc = frame_submit(
        e, r->peer, &tmp, 0,
        r->len <= EAGER_COPY_MAX && !tmp.needs_credit && p->via != &e->shm, r);
    if (rc < 0) {
      if (!tmp.needs_credit)
        p->tx_credit += (int64_t)cost;
      return rc;
    }
    if (tmp.needs_credit)
      p->credit_waiters++;
    if (rc == 1)
      req_complete(e, r, 0);
    else
      r->state = MMP__RQ_QUEUED;
    return 0;
  }
  r->mode = MMP_SEND_RNDV;
  if (cookie_register(e, r) == 0)
    return MMP_ENOMEM;
  r->state = MMP__RQ_WAIT_CTS;
  tmp.w.hdr.type = MMP__F_RTS;
  tmp.w.hdr.a0 = r->cookie;
  tmp.w.hdr.a1 = r->len;
  rc = frame_submit(e, r->peer, &tmp, 0, 1, NULL);
  if (rc < 0) {
    cookie_release(e, r);
    r->state = MMP__RQ_NEW;
    return rc;
  }
  return 0;
}

/* Lock held. A send with an optional note (0: none). */
static int isend_start(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
                       const void *buf, size_t len, int peer, int tag,
                       unsigned mode, uint64_t note, mmp_request_t *r) {
  MMP__ASSERT_LOCKED(e);
  assert(peer >= 0 && peer < e->cfg.size);
  assert(buf != NULL || len == 0);
  req_init(r, MMP__REQ_SEND, comm, ctx, (void *)buf, len, peer, tag);
  r->note = note;
  e->app_calls++;
  if (peer == e->cfg.rank)
    return send_self(e, r, mode);
  if (e->peers[peer].state == MMP__P_DOWN ||
      e->peers[peer].state == MMP__P_CLOSED)
    return peer_err(&e->peers[peer]);
  return send_remote(e, r, mode);
}

int mmp__isend_locked(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
                      const void *buf, size_t len, int peer, int tag,
                      unsigned mode, mmp_request_t *r) {
  return isend_start(e, comm, ctx, buf, len, peer, tag, mode, 0, r);
}

int mmp__isend_note_locked(mmp__engine_t *e, const mmp_comm_t *comm,
                           uint32_t ctx, const void *buf, size_t len, int peer,
                           int tag, uint64_t note, mmp_request_t *r) {
  /* Only an EAGER frame carries the note, and a forced eager send of a
   * few bytes never switches to rendezvous. */
  assert(len <= 4096);
  return isend_start(e, comm, ctx, buf, len, peer, tag, MMP_SEND_EAGER, note,
                     r);
}

int mmp__isend(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
               const void *buf, size_t len, int peer, int tag, unsigned mode,
               mmp_request_t *r) {
  int rc;

  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  rc = mmp__isend_locked(e, comm, ctx, buf, len, peer, tag, mode, r);
  mmp__unlock(e);
  return rc;
}

/* ---- Receives ----------------------------------------------------------- */

/* Lock held. A receive matched an RTS: accept the transfer. */
static void rndv_accept(mmp__engine_t *e, mmp_request_t *r, int src,
                        uint64_t scookie, uint64_t len) {
  int rc;

  MMP__ASSERT_LOCKED(e);
  assert(r->kind == MMP__REQ_RECV);
  r->src = src;
  r->msg_len = len;
  r->allowed = len < r->len ? len : r->len;
  r->remote_cookie = scookie;
  r->xfer = 0;
  if (r->allowed > 0) {
    if (cookie_register(e, r) == 0) {
      req_complete(e, r, MMP_ENOMEM);
      return;
    }
    r->state = MMP__RQ_WAIT_DATA;
  }
  rc = send_ctrl(e, src, MMP__F_CTS, 0, scookie, r->cookie, r->allowed);
  if (rc != 0) {
    req_complete(e, r, rc);
    return;
  }
  if (r->allowed == 0)
    recv_complete(e, r, src, r->tag, len, 0);
}

static void unexp_free(mmp__engine_t *e, mmp__unexp_t *u) {
  if (u->data != NULL && u->kind == MMP__U_EAGER) {
    assert(e->unexp_bytes >= u->len);
    e->unexp_bytes -= u->len;
  }
  if (u->kind == MMP__U_RTS) {
    assert(e->peers[u->src].unexp_rts > 0);
    e->peers[u->src].unexp_rts--;
  }
  if (u->data != u->small)
    free(u->data);
  if (e->unexp_cached < UNEXP_CACHE_MAX) {
    mmp__list_insert_head(&e->unexp_cache, &u->node);
    e->unexp_cached++;
    return;
  }
  free(u);
}

/* Lock held. Hands the unexpected message `u` (already unlinked) to `r`. */
static void deliver_unexp(mmp__engine_t *e, mmp__unexp_t *u, mmp_request_t *r) {
  size_t n = min_size(u->len, r->len);

  MMP__ASSERT_LOCKED(e);
  assert(r->kind == MMP__REQ_RECV && r->state != MMP__RQ_POSTED);
  assert(mmp__list_empty(&u->node));
  r->src = u->src;
  r->note = u->note;
  switch (u->kind) {
  case MMP__U_EAGER:
    if (!u->complete) {
      /* The payload is still arriving; finish when it is in. */
      u->claimer = r;
      r->claimed = u;
      r->state = MMP__RQ_CLAIMED;
      return;
    }
    if (n > 0)
      memcpy(r->buf, u->data, n);
    recv_complete(e, r, u->src, u->tag, u->len, n);
    credit_consumed(e, u->src, u->cost);
    unexp_free(e, u);
    return;
  case MMP__U_RTS:
    r->tag = u->tag; /* the receive left the posted queue: now concrete */
    rndv_accept(e, r, u->src, u->cookie, u->len);
    unexp_free(e, u);
    return;
  case MMP__U_SELF:
    if (n > 0)
      memcpy(r->buf, u->sreq != NULL ? u->sreq->buf : u->data, n);
    recv_complete(e, r, u->src, u->tag, u->len, n);
    if (u->sreq != NULL)
      req_complete(e, u->sreq, 0);
    unexp_free(e, u);
    return;
  }
}

/* A posted receive that a loss anywhere in its communicator fails. */
static int watches_comm(const mmp_request_t *r) {
  return r->peer == MMP_ANY_SOURCE || (r->rflags & MMP__RECV_COMM_LOSS);
}

void mmp__recv_sink_locked(mmp__engine_t *e, uint32_t ctx, int tag,
                           uint32_t mask) {
  mmp_request_t *k;
  mmp__list_t *it, *tmp;

  MMP__ASSERT_LOCKED(e);
  if ((k = drain_new(ctx, MMP_ANY_SOURCE, tag)) == NULL)
    return; /* out of memory: late messages stay unexpected */
  k->rflags = MMP__RECV_SINK;
  k->tag_mask = mask;
  /* What came already goes first, in order. */
  mmp__list_foreach_safe(it, tmp, &e->unexpected) {
    mmp__unexp_t *u = mmp__container_of(it, mmp__unexp_t, node);
    mmp_request_t *d;
    if (sink_takes(k, u->ctx, u->tag) &&
        (d = drain_new(ctx, u->src, u->tag)) != NULL) {
      mmp__list_remove(it);
      deliver_unexp(e, u, d);
    }
  }
  k->state = MMP__RQ_POSTED;
  mmp__list_insert_tail(&e->posted, &k->node);
}

int mmp__comm_lost_locked(mmp__engine_t *e, const mmp_comm_t *comm) {
  int n = comm != NULL ? comm->size : e->cfg.size, i;

  MMP__ASSERT_LOCKED(e);
  if (e->nlost == 0) /* every broadcast's first receive comes here */
    return -1;
  for (i = 0; i < n; i++) {
    int w = comm != NULL ? mmp__comm_world(comm, i) : i;
    if (e->peers[w].state == MMP__P_DOWN)
      return w;
  }
  return -1;
}

int mmp__irecv_flags_locked(mmp__engine_t *e, const mmp_comm_t *comm,
                            uint32_t ctx, void *buf, size_t cap, int peer,
                            int tag, unsigned flags, mmp_request_t *r) {
  mmp__list_t *it;
  int lost;

  MMP__ASSERT_LOCKED(e);
  assert(peer == MMP_ANY_SOURCE || (peer >= 0 && peer < e->cfg.size));
  assert(buf != NULL || cap == 0);
  req_init(r, MMP__REQ_RECV, comm, ctx, buf, cap, peer, tag);
  r->rflags = flags;
  e->app_calls++;
  mmp__list_foreach(it, &e->unexpected) {
    mmp__unexp_t *u = mmp__container_of(it, mmp__unexp_t, node);
    if (matches(ctx, peer, tag, u->ctx, u->src, u->tag)) {
      mmp__list_remove(it);
      deliver_unexp(e, u, r);
      return 0;
    }
  }
  if (peer != MMP_ANY_SOURCE && peer != e->cfg.rank &&
      (e->peers[peer].state == MMP__P_DOWN ||
       e->peers[peer].state == MMP__P_CLOSED))
    return peer_err(&e->peers[peer]);
  if (watches_comm(r) && (lost = mmp__comm_lost_locked(e, comm)) >= 0)
    return peer_err(&e->peers[lost]);
  r->state = MMP__RQ_POSTED;
  mmp__list_insert_tail(&e->posted, &r->node);
  return 0;
}

int mmp__irecv_locked(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
                      void *buf, size_t cap, int peer, int tag,
                      mmp_request_t *r) {
  return mmp__irecv_flags_locked(e, comm, ctx, buf, cap, peer, tag, 0, r);
}

int mmp__irecv(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
               void *buf, size_t cap, int peer, int tag, mmp_request_t *r) {
  int rc;

  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  rc = mmp__irecv_locked(e, comm, ctx, buf, cap, peer, tag, r);
  mmp__unlock(e);
  return rc;
}

int mmp__cancel_err_locked(mmp__engine_t *e, mmp_request_t *r, int err) {
  MMP__ASSERT_LOCKED(e);
  assert(err < 0);
  if (r->kind != MMP__REQ_RECV || r->state != MMP__RQ_POSTED)
    return MMP_EAGAIN;
  mmp__list_remove(&r->node);
  r->status.source = MMP_ANY_SOURCE;
  r->status.tag = MMP_ANY_TAG;
  r->status.bytes = 0;
  req_complete(e, r, err);
  return 0;
}

int mmp__cancel_locked(mmp__engine_t *e, mmp_request_t *r) {
  return mmp__cancel_err_locked(e, r, MMP_ECANCELED);
}

void mmp__p2p_cancel_internal_locked(mmp__engine_t *e) {
  mmp__list_t *it;
  int again = 1;

  MMP__ASSERT_LOCKED(e);
  /* A callback may cancel or post others: look again after each. */
  while (again) {
    again = 0;
    mmp__list_foreach(it, &e->posted) {
      mmp_request_t *r = mmp__container_of(it, mmp_request_t, node);
      if (r->cb != NULL) {
        mmp__cancel_locked(e, r);
        again = 1;
        break;
      }
    }
  }
}

void mmp__req_complete_locked(mmp__engine_t *e, mmp_request_t *r, int err) {
  MMP__ASSERT_LOCKED(e);
  req_complete(e, r, err);
}

int mmp__iprobe_locked(mmp__engine_t *e, const mmp_comm_t *comm, uint32_t ctx,
                       int peer, int tag, mmp_status_t *st) {
  mmp__list_t *it;

  MMP__ASSERT_LOCKED(e);
  mmp__list_foreach(it, &e->unexpected) {
    mmp__unexp_t *u = mmp__container_of(it, mmp__unexp_t, node);
    if (matches(ctx, peer, tag, u->ctx, u->src, u->tag)) {
      if (st != NULL) {
        st->source = comm_local(comm, u->src);
        st->tag = u->tag;
        st->bytes = (size_t)u->len;
        st->error = 0;
      }
      return 1;
    }
  }
  return 0;
}

/* ---- Incoming frames (loop context) ------------------------------------- */

static int rx_eager(mmp__engine_t *e, int peer, const mmp__frame_hdr_t *h,
                    mmp__sink_t *sink) {
  mmp__peer_t *p = &e->peers[peer];
  uint64_t cost = h->len + p->eager_over;
  mmp_request_t *r;
  mmp__unexp_t *u;

  if (h->a0 != h->len || h->tag < 0)
    return MMP_EPROTO;
  if (p->rx_used + cost > e->cfg.eager_buffer) {
    MMP__LOG(MMP__LOG_WARN, "rank %d exceeded its eager credit", peer);
    return MMP_EPROTO;
  }
  p->rx_used += cost;
  r = match_posted(e, h->comm, peer, h->tag);
  if (r != NULL) {
    r->state = MMP__RQ_RECEIVING;
    r->src = peer;
    r->msg_len = h->len;
    r->note = h->a1;
    sink->buf = r->buf;
    sink->len = min_size(h->len, r->len);
    p->rx_kind = MMP__RX_REQ;
    p->rx_target = r;
    return 0;
  }
  u = unexp_new(e);
  if (u == NULL)
    return MMP_ENOMEM;
  if (h->len > 0 && unexp_room(e, u, h->len) == NULL) {
    unexp_free(e, u);
    return MMP_ENOMEM;
  }
  u->kind = MMP__U_EAGER;
  u->src = peer;
  u->ctx = h->comm;
  u->tag = h->tag;
  u->len = h->len;
  u->cost = cost;
  u->note = h->a1;
  e->unexp_bytes += h->len;
  if (e->unexp_bytes > e->unexp_peak)
    e->unexp_peak = e->unexp_bytes;
  mmp__list_insert_tail(&e->unexpected, &u->node);
  sink->buf = u->data;
  sink->len = (size_t)h->len;
  p->rx_kind = MMP__RX_UNEXP;
  p->rx_target = u;
  mmp__engine_notify_locked(e); /* a blocked probe can see the envelope now */
  return 0;
}

static int rx_eager_done(mmp__engine_t *e, int peer,
                         const mmp__frame_hdr_t *h) {
  mmp__peer_t *p = &e->peers[peer];
  uint64_t cost = h->len + p->eager_over;

  if (p->rx_kind == MMP__RX_REQ) {
    mmp_request_t *r = p->rx_target;
    recv_complete(e, r, peer, h->tag, h->len, min_size(h->len, r->len));
    credit_consumed(e, peer, cost);
  } else if (p->rx_kind == MMP__RX_UNEXP) {
    mmp__unexp_t *u = p->rx_target;
    u->complete = 1;
    if (u->claimer != NULL) {
      mmp_request_t *r = u->claimer;
      r->claimed = NULL;
      deliver_unexp(e, u, r);
    }
  }
  p->rx_kind = MMP__RX_NONE;
  p->rx_target = NULL;
  return 0;
}

static int rx_rts(mmp__engine_t *e, int peer, const mmp__frame_hdr_t *h) {
  mmp_request_t *r;
  mmp__unexp_t *u;

  if (h->len != 0 || h->tag < 0 || h->a0 == 0)
    return MMP_EPROTO;
  r = match_posted(e, h->comm, peer, h->tag);
  if (r != NULL) {
    r->tag = h->tag;
    rndv_accept(e, r, peer, h->a0, h->a1);
    return 0;
  }
  if (e->peers[peer].unexp_rts >= e->cfg.max_unexp_rts) {
    /* Each entry costs memory the peer chooses: cut it off rather than
     * let it exhaust this rank's. */
    MMP__LOG(MMP__LOG_ERROR,
             "rank %d left more than %u rendezvous requests unmatched here "
             "(MINIMP_MAX_UNEXPECTED_RTS); closing its connection",
             peer, e->cfg.max_unexp_rts);
    return MMP_ENOMEM;
  }
  u = unexp_new(e);
  if (u == NULL)
    return MMP_ENOMEM;
  if (++e->peers[peer].unexp_rts > e->unexp_rts_peak)
    e->unexp_rts_peak = e->peers[peer].unexp_rts;
  u->kind = MMP__U_RTS;
  u->src = peer;
  u->ctx = h->comm;
  u->tag = h->tag;
  u->len = h->a1;
  u->cookie = h->a0;
  u->complete = 1;
  mmp__list_insert_tail(&e->unexpected, &u->node);
  mmp__engine_notify_locked(e);
  return 0;
}

static int rx_cts(mmp__engine_t *e, int peer, const mmp__frame_hdr_t *h) {
  mmp_request_t *r = cookie_lookup(e, h->a0);

  if (h->len != 0 || r == NULL || r->kind != MMP__REQ_SEND ||
      r->state != MMP__RQ_WAIT_CTS || r->peer != peer || h->a2 > r->len) {
    MMP__LOG(MMP__LOG_WARN, "rank %d sent CTS for no request of ours", peer);
    return MMP_EPROTO;
  }
  cookie_release(e, r);
  r->remote_cookie = h->a1;
  r->allowed = h->a2;
  r->sent = 0;
  if (r->allowed == 0) {
    req_complete(e, r, 0);
    return 0;
  }
  r->state = MMP__RQ_SENDING;
  mmp__list_insert_tail(&e->peers[peer].dataq, &r->node);
  pump_peer(e, peer);
  return 0;
}

static int rx_data(mmp__engine_t *e, int peer, const mmp__frame_hdr_t *h,
                   mmp__sink_t *sink) {
  mmp_request_t *r = cookie_lookup(e, h->a0);
  mmp__peer_t *p = &e->peers[peer];

  if (r == NULL || r->kind != MMP__REQ_RECV || r->state != MMP__RQ_WAIT_DATA ||
      r->src != peer || h->a1 != r->xfer || h->len > r->allowed - r->xfer) {
    MMP__LOG(MMP__LOG_WARN, "rank %d sent DATA that matches no transfer", peer);
    return MMP_EPROTO;
  }
  sink->buf = (uint8_t *)r->buf + r->xfer;
  sink->len = (size_t)h->len;
  p->rx_kind = MMP__RX_REQ;
  p->rx_target = r;
  return 0;
}

static int rx_data_done(mmp__engine_t *e, int peer, const mmp__frame_hdr_t *h) {
  mmp__peer_t *p = &e->peers[peer];
  mmp_request_t *r = p->rx_target;

  /* The transport reports a payload done only after rx_data accepted it. */
  assert(p->rx_kind == MMP__RX_REQ && r != NULL);
  assert(r->state == MMP__RQ_WAIT_DATA && h->len <= r->allowed - r->xfer);
  p->rx_kind = MMP__RX_NONE;
  p->rx_target = NULL;
  r->xfer += h->len;
  if (r->xfer == r->allowed)
    recv_complete(e, r, peer, r->tag, r->msg_len, (size_t)r->allowed);
  return 0;
}

static int rx_credit(mmp__engine_t *e, int peer, const mmp__frame_hdr_t *h) {
  mmp__peer_t *p = &e->peers[peer];

  if (h->len != 0 || h->a0 > e->cfg.eager_buffer ||
      p->tx_credit + (int64_t)h->a0 > (int64_t)e->cfg.eager_buffer)
    return MMP_EPROTO;
  p->tx_credit += (int64_t)h->a0;
  if (h->a0 > 0)
    p->credit_asked = 0;
  if (h->flags & MMP__FF_REQ) {
    p->starving = 1;
    credit_consumed(e, peer, 0);
  }
  pump_peer(e, peer);
  return 0;
}

/* Loop context, lock held. A header from `peer`: the body of
 * mmp__p2p_frame. */
static int frame_locked(mmp__engine_t *e, int peer, const mmp__frame_hdr_t *h,
                        mmp__sink_t *sink) {
  int rc = 0;

  MMP__ASSERT_LOCKED(e);
  /* Counted, not timed: a clock read per frame costs as much as the
   * rest of a small frame's handling; the heartbeat turns the count into
   * a time at its next tick. */
  e->peers[peer].rx_frames++;
  switch (h->type) {
  case MMP__F_EAGER:
    rc = rx_eager(e, peer, h, sink);
    break;
  case MMP__F_RTS:
    rc = rx_rts(e, peer, h);
    break;
  case MMP__F_CTS:
    rc = rx_cts(e, peer, h);
    break;
  case MMP__F_DATA:
    rc = rx_data(e, peer, h, sink);
    break;
  case MMP__F_CREDIT:
    rc = rx_credit(e, peer, h);
    break;
  case MMP__F_BYE:
    rc = h->len == 0 ? 0 : MMP_EPROTO;
    e->peers[peer].bye = 1;
    break;
  case MMP__F_PING:
    rc = h->len == 0 ? 0 : MMP_EPROTO;
    /* One answer queued at a time: a peer that floods PING|REQ and never
     * reads must not make us queue answers without bound, and the queued
     * one answers for all of them. */
    if (rc == 0 && (h->flags & MMP__FF_REQ) && e->peers[peer].pong_out == NULL)
      send_ctrl(e, peer, MMP__F_PING, 0, h->a0, 0, 0);
    break;
  default:
    rc = MMP_EPROTO;
  }
  return rc;
}

/* Loop context, lock held. The payload is in place: the body of
 * mmp__p2p_frame_done. */
static int frame_done_locked(mmp__engine_t *e, int peer,
                             const mmp__frame_hdr_t *h) {
  MMP__ASSERT_LOCKED(e);
  if (h->type == MMP__F_EAGER)
    return rx_eager_done(e, peer, h);
  if (h->type == MMP__F_DATA)
    return rx_data_done(e, peer, h);
  return 0;
}

int mmp__p2p_frame(void *ctx, int peer, const mmp__frame_hdr_t *h,
                   mmp__sink_t *sink) {
  mmp__via_t *via = ctx;
  mmp__engine_t *e = via->e;
  int rc;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  assert(peer >= 0 && peer < e->cfg.size && peer != e->cfg.rank);
  /* peer_up let no other transport's connection up for this peer. */
  assert(e->peers[peer].via == via);
  mmp__lock(e);
  rc = frame_locked(e, peer, h, sink);
  mmp__unlock(e);
  return rc;
}

int mmp__p2p_frame_done(void *ctx, int peer, const mmp__frame_hdr_t *h) {
  mmp__engine_t *e = ((mmp__via_t *)ctx)->e;
  int rc;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  rc = frame_done_locked(e, peer, h);
  mmp__unlock(e);
  return rc;
}

int mmp__p2p_frame_whole(void *ctx, int peer, const mmp__frame_hdr_t *h,
                         const void *p0, size_t n0, const void *p1, size_t n1) {
  mmp__via_t *via = ctx;
  mmp__engine_t *e = via->e;
  mmp__sink_t sink = {NULL, 0};
  int rc;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  assert(peer >= 0 && peer < e->cfg.size && peer != e->cfg.rank);
  assert(e->peers[peer].via == via && n0 + n1 == h->len);
  /* One lock for the header, the copy and the completion: a small
   * frame's handling is mostly this bookkeeping. */
  mmp__lock(e);
  rc = frame_locked(e, peer, h, &sink);
  if (rc == 0 && sink.len > 0) {
    size_t a = sink.len < n0 ? sink.len : n0;
    memcpy(sink.buf, p0, a);
    if (sink.len > a)
      memcpy((uint8_t *)sink.buf + a, p1, sink.len - a);
  }
  if (rc == 0)
    rc = frame_done_locked(e, peer, h);
  mmp__unlock(e);
  return rc;
}

/* ---- Connections ------------------------------------------------------- */

void mmp__p2p_peer_up(void *ctx, int peer, mmp__tp_conn_t *conn) {
  mmp__via_t *via = ctx;
  mmp__engine_t *e = via->e;
  mmp__peer_t *p = &e->peers[peer];

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  if (p->via != via) {
    /* Both ranks chose shared memory for each other at init, so a TCP
     * connection from a local peer is a misconfigured or foreign process.
     * The abort's peer_down comes from the wrong transport too, and is
     * ignored. */
    mmp__unlock(e);
    MMP__LOG(MMP__LOG_WARN,
             "refusing a %s connection from rank %d, which uses %s",
             via->ops->name, peer, p->via->ops->name);
    via->ops->abort(conn, MMP_EPROTO, "peer uses another transport");
    return;
  }
  if (p->state == MMP__P_DOWN) {
    /* Lost once: operations with it already failed; do not resurrect. The
     * abort calls peer_down, which takes the lock. */
    mmp__unlock(e);
    via->ops->abort(conn, MMP_EPEERLOST, "peer was declared lost");
    return;
  }
  p->conn = conn;
  p->last_rx = mmp__clock_ms();
  if (e->closing) {
    p->state = MMP__P_CLOSING;
    p->bye_pending = 1;
  } else {
    p->state = MMP__P_UP;
  }
  MMP__LOG(MMP__LOG_DEBUG, "connected to rank %d", peer);
  pump_peer(e, peer);
  mmp__engine_notify_locked(e);
  mmp__unlock(e);
}

void mmp__p2p_tp_init(mmp__engine_t *e, mmp__via_t *via, mmp__tp_config_t *tc,
                      mmp__tp_callbacks_t *cb) {
  memset(tc, 0, sizeof(*tc));
  memset(cb, 0, sizeof(*cb));
  tc->rank = e->cfg.rank;
  tc->size = e->cfg.size;
  memcpy(tc->key, e->cfg.key, sizeof(tc->key));
  tc->max_frame = e->cfg.max_frame;
  tc->encrypt = e->cfg.encrypt;
  tc->activity = &e->activity;
  cb->ctx = via;
  cb->peer_up = mmp__p2p_peer_up;
  cb->frame = mmp__p2p_frame;
  cb->frame_done = mmp__p2p_frame_done;
  cb->frame_whole = mmp__p2p_frame_whole;
  cb->peer_down = mmp__p2p_peer_down;
  cb->refuse = mmp__p2p_refuse;
}

const char *mmp__p2p_refuse(void *ctx, int peer) {
  mmp__via_t *via = ctx;
  mmp__engine_t *e = via->e;

  MMP__ASSERT_LOOP(e);
  /* Chosen at init, in loop context, and never changed. */
  return e->peers[peer].via == via ? NULL
                                   : "is reached through another "
                                     "transport (shared memory)";
}

void mmp__p2p_peer_down(void *ctx, int peer, int err, const char *reason) {
  mmp__via_t *via = ctx;
  mmp__engine_t *e = via->e;
  mmp__peer_t *p = &e->peers[peer];

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  if (p->via != via)
    return; /* a connection peer_up refused */
  mmp__lock(e);
  /* A peer sends BYE only after the finalize fence, so a BYE means an
   * orderly close even if our own fence reply has not been seen yet. */
  if (p->state == MMP__P_CLOSING || p->bye) {
    p->state = MMP__P_CLOSED;
    p->conn = NULL;
    mmp__engine_notify_locked(e);
    mmp__unlock(e);
  } else if (p->state != MMP__P_DOWN) {
    MMP__LOG(MMP__LOG_WARN, "lost rank %d: %s", peer, reason);
    mmp__p2p_fail_peer_locked(e, peer, MMP_EPEERLOST);
    mmp__unlock(e);
    report_suspect(e, peer, reason);
  } else {
    mmp__unlock(e);
  }
}

/* Lock held. When `p` was last heard from: its last frame, or a byte of a
 * frame still arriving, whichever is later, never after `now`. */
static uint64_t peer_heard_at(const mmp__peer_t *p, uint64_t now) {
  uint64_t at = p->last_rx;

  if (p->conn != NULL && p->via->ops->rx_ms != NULL) {
    uint64_t b = p->via->ops->rx_ms(p->conn);
    at = b > at ? b : at;
  }
  return at < now ? at : now;
}

/* How long the heartbeat tick came after its due time, beyond a tick's
 * slack: time in which this rank's loop ran nothing, so it read nothing. */
static uint64_t heartbeat_lateness(mmp__engine_t *e, uint64_t now) {
  uint64_t every = e->cfg.peer_timeout_ms / 8, late = 0;

  every = every ? every : 1;
  if (e->hb_at != 0 && now > e->hb_at && now - e->hb_at > 2 * every)
    late = now - e->hb_at - every;
  e->hb_at = now;
  return late;
}

void mmp__p2p_heartbeat(mmp__engine_t *e) {
  uint64_t now = mmp__clock_ms(), timeout = e->cfg.peer_timeout_ms;
  uint64_t quiet = timeout / 4, late;
  int i;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  late = heartbeat_lateness(e, now);
  if (late > 0)
    MMP__LOG(MMP__LOG_DEBUG,
             "heartbeat %.1f s late: peers' silence in that time not counted",
             (double)late / 1000);
  for (i = 0; i < e->cfg.size; i++) {
    mmp__peer_t *p = &e->peers[i];
    mmp__tp_conn_t *conn = NULL;
    mmp__via_t *via = p->via;
    uint64_t heard;
    char why[96];

    if (i == e->cfg.rank)
      continue;
    mmp__lock(e);
    if (p->rx_frames != p->rx_frames_seen) {
      /* Heard since the last tick: at most a tick ago, never earlier than
       * it was, so a peer is never declared lost early. */
      p->rx_frames_seen = p->rx_frames;
      p->last_rx = now;
    }
    if (p->state == MMP__P_UP && late > 0) {
      /* Our loop was stalled (descheduled, or one long iteration), and
       * timers run before the poll that would read what arrived meanwhile:
       * only silence while we were listening counts against a peer. */
      p->last_rx = p->last_rx + late < now ? p->last_rx + late : now;
    }
    heard = peer_heard_at(p, now);
    if (p->state == MMP__P_UP && now - heard >= timeout) {
      snprintf(why, sizeof(why), "no sign of life for %.1f s",
               (double)(now - heard) / 1000);
      MMP__LOG(MMP__LOG_WARN, "lost rank %d: %s", i, why);
      conn = p->conn;
      mmp__p2p_fail_peer_locked(e, i, MMP_EPEERLOST);
    } else if (p->state == MMP__P_UP && now - heard >= quiet &&
               now - p->last_ping >= quiet) {
      /* Any frame answers for it; a quiet link gets asked. */
      p->last_ping = now;
      send_ctrl(e, i, MMP__F_PING, MMP__FF_REQ, 0, 0, 0);
    }
    mmp__unlock(e);
    if (conn != NULL) {
      /* peer_down will find the peer already lost and stay quiet. */
      via->ops->abort(conn, MMP_ETIMEDOUT, why);
      report_suspect(e, i, why);
    }
  }
}

/* Loop context, lock not held: tells the rendezvous that `peer` is gone,
 * so that the launcher can name it and stop the job. */
static void report_suspect(mmp__engine_t *e, int peer, const char *why) {
  int quiet;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  quiet = e->boot_lost || e->finalizing;
  mmp__unlock(e);
  if (e->boot != NULL && !quiet)
    mmp__boot_suspect(e->boot, peer, why, NULL, NULL);
}

/* Lock held. Fails the frames of one queue that never reached the wire. */
static void fail_queue(mmp__engine_t *e, mmp__list_t *q, int err) {
  mmp__list_t *it;

  while ((it = mmp__list_head(q)) != NULL) {
    mmp__out_t *o = mmp__container_of(it, mmp__out_t, node);
    mmp__list_remove(it);
    if (o->needs_credit) {
      assert(e->peers[o->peer].credit_waiters > 0);
      e->peers[o->peer].credit_waiters--;
    }
    assert(o->req == NULL || o->req->nwrites > 0);
    if (o->req != NULL && --o->req->nwrites == 0)
      req_complete(e, o->req, err);
    out_release(e, o);
  }
}

void mmp__p2p_fail_peer_locked(mmp__engine_t *e, int peer, int err) {
  mmp__peer_t *p = &e->peers[peer];
  mmp__list_t *it, *tmp, doomed;
  uint32_t i;

  MMP__ASSERT_LOCKED(e);
  assert(peer >= 0 && peer < e->cfg.size && peer != e->cfg.rank);
  e->nlost += p->state != MMP__P_DOWN;
  p->state = MMP__P_DOWN;
  p->conn = NULL;
  p->down_err = err;
  if (p->dirty) {
    mmp__list_remove(&p->dirty_node);
    p->dirty = 0;
  }
  fail_queue(e, &p->ctrlq, err);
  fail_queue(e, &p->sendq, err);
  while ((it = mmp__list_head(&p->dataq)) != NULL) {
    mmp_request_t *r = mmp__container_of(it, mmp_request_t, node);
    mmp__list_remove(it);
    r->err = err;
    if (r->nwrites == 0)
      req_complete(e, r, err);
  }
  /* A payload that was arriving dies with the connection. */
  if (p->rx_kind == MMP__RX_REQ) {
    req_complete(e, p->rx_target, err);
  } else if (p->rx_kind == MMP__RX_UNEXP) {
    mmp__unexp_t *u = p->rx_target;
    if (u->claimer != NULL)
      req_complete(e, u->claimer, err);
    else
      mmp__list_remove(&u->node);
    unexp_free(e, u);
  }
  p->rx_kind = MMP__RX_NONE;
  p->rx_target = NULL;
  /* A receive from any source of a communicator the peer belongs to may
   * have been waiting for it: it fails too (as ULFM's MPI does), or a
   * message that can no longer come would be awaited for ever; so does
   * one flagged MMP__RECV_COMM_LOSS. */
  /* Completion callbacks may cancel other posted receives (a collective
   * that fails stops listening): move the doomed ones aside first. */
  mmp__list_init(&doomed);
  mmp__list_foreach_safe(it, tmp, &e->posted) {
    mmp_request_t *r = mmp__container_of(it, mmp_request_t, node);
    if (r->rflags & MMP__RECV_SINK)
      continue; /* for ever, whoever is lost */
    if (r->peer == peer || (watches_comm(r) && mmp__comm_has(r->comm, peer))) {
      mmp__list_remove(it);
      mmp__list_insert_tail(&doomed, it);
    }
  }
  while ((it = mmp__list_head(&doomed)) != NULL) {
    mmp__list_remove(it);
    req_complete(e, mmp__container_of(it, mmp_request_t, node), err);
  }
  /* Messages whose data can no longer come. */
  mmp__list_foreach_safe(it, tmp, &e->unexpected) {
    mmp__unexp_t *u = mmp__container_of(it, mmp__unexp_t, node);
    if (u->src == peer && u->kind == MMP__U_RTS) {
      mmp__list_remove(it);
      unexp_free(e, u);
    }
  }
  for (i = 0; i < e->cookie_cap; i++) {
    mmp_request_t *r = e->cookie_req[i];
    if (r == NULL)
      continue;
    if ((r->kind == MMP__REQ_SEND && r->peer == peer) ||
        (r->kind == MMP__REQ_RECV && r->src == peer))
      req_complete(e, r, err);
  }
  mmp__engine_notify_locked(e);
}

/* ---- Set-up and shut-down ---------------------------------------------- */

int mmp__p2p_init(mmp__engine_t *e) {
  int i, n = e->cfg.size;

  mmp__list_init(&e->out_cache);
  mmp__list_init(&e->unexp_cache);
  e->peers = calloc((size_t)n, sizeof(*e->peers));
  if (e->peers == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < n; i++) {
    mmp__peer_t *p = &e->peers[i];
    mmp__list_init(&p->sendq);
    mmp__list_init(&p->ctrlq);
    mmp__list_init(&p->dataq);
    mmp__list_init(&p->dirty_node);
    p->via = &e->tcp;
    p->eager_over = MMP__EAGER_OVERHEAD;
    p->tx_credit = (int64_t)e->cfg.eager_buffer;
    p->state = i == e->cfg.rank ? MMP__P_UP : MMP__P_IDLE;
  }
  return 0;
}

void mmp__p2p_close_all_locked(mmp__engine_t *e) {
  int i;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_LOCKED(e);
  for (i = 0; i < e->cfg.size; i++) {
    mmp__peer_t *p = &e->peers[i];
    if (i == e->cfg.rank)
      continue;
    if (p->state == MMP__P_UP) {
      p->state = MMP__P_CLOSING;
      p->bye_pending = 1;
      pump_peer(e, i);
    } else if (p->state == MMP__P_IDLE) {
      p->state = MMP__P_CLOSED;
    }
  }
}

int mmp__p2p_all_closed_locked(mmp__engine_t *e) {
  int i;

  MMP__ASSERT_LOCKED(e);
  for (i = 0; i < e->cfg.size; i++) {
    int s = e->peers[i].state;
    if (i != e->cfg.rank &&
        (s == MMP__P_UP || s == MMP__P_CLOSING || s == MMP__P_CONNECTING))
      return 0;
  }
  return 1;
}

int mmp__p2p_quiet_locked(mmp__engine_t *e) {
  int i;

  MMP__ASSERT_LOCKED(e);
  for (i = 0; i < e->cfg.size; i++) {
    mmp__peer_t *p = &e->peers[i];
    if (!mmp__list_empty(&p->sendq) || !mmp__list_empty(&p->ctrlq) ||
        !mmp__list_empty(&p->dataq) || p->data_inflight > 0)
      return 0;
  }
  return 1;
}

void mmp__p2p_drop_queues_locked(mmp__engine_t *e) {
  int i;

  MMP__ASSERT_LOCKED(e);
  for (i = 0; e->peers != NULL && i < e->cfg.size; i++) {
    fail_queue(e, &e->peers[i].ctrlq, MMP_ESHUTDOWN);
    fail_queue(e, &e->peers[i].sendq, MMP_ESHUTDOWN);
  }
}

void mmp__p2p_fini(mmp__engine_t *e) {
  mmp__list_t *it;
  int i;

  for (i = 0; e->peers != NULL && i < e->cfg.size; i++)
    assert(mmp__list_empty(&e->peers[i].ctrlq) &&
           mmp__list_empty(&e->peers[i].sendq));
  while ((it = mmp__list_head(&e->unexpected)) != NULL) {
    mmp__unexp_t *u = mmp__container_of(it, mmp__unexp_t, node);
    mmp__list_remove(it);
    unexp_free(e, u);
  }
  while ((it = mmp__list_head(&e->unexp_cache)) != NULL) {
    mmp__list_remove(it);
    free(mmp__container_of(it, mmp__unexp_t, node));
  }
  while ((it = mmp__list_head(&e->out_cache)) != NULL) {
    mmp__list_remove(it);
    free(mmp__container_of(it, mmp__out_t, node));
  }
  free(e->peers);
  free(e->cookie_req);
  free(e->cookie_gen);
  free(e->cookie_next);
  e->peers = NULL;
}
