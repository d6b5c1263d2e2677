/* SPDX-License-Identifier: MIT */
/*
 * The libuv TCP transport: one full-duplex connection per pair of ranks.
 *
 * Connections. Either side may connect first. Every connection starts with
 * a HELLO carrying the job key, the rank and the job size, answered by a
 * HELLO_ACK carrying the same from the other side, so both ends
 * authenticate each other. When both ranks of a pair connect at once, the
 * connection opened by the lower rank wins: the higher rank accepts it and
 * the lower rank answers the other with HELLO_NACK. Anything unexpected
 * before the handshake completes (a wrong key, bad magic or version, a rank
 * out of range or already connected, an oversized frame, silence past the
 * handshake timeout) closes that connection with a logged reason and
 * touches nothing else.
 *
 * Reading. Bytes land in a per-connection staging buffer and are parsed
 * into frames; every header is validated (frame.c, plus the sequence
 * number) before the runtime is asked where its payload goes. Large
 * payloads are read straight into the runtime's buffer (zero copy) by
 * handing that buffer to libuv's alloc callback.
 *
 * Writing. Frames go through uv_write in loop context. write_direct() lets
 * any thread put a frame on the wire with one sendmsg() when nothing is in
 * flight, which saves a loop wake-up on the latency path; an atomic
 * in-flight count keeps the two paths from interleaving.
 */
#include "transport.h"

#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "minimp.h"
#include "util.h"

#define TCP_STAGE_SIZE (64 * 1024)
#define TCP_DIRECT_MIN (8 * 1024) /* read payloads this large in place */

enum tcp_state {
  TCP_CONNECTING, /* outgoing, TCP connect in progress */
  TCP_HANDSHAKE,  /* HELLO sent (outgoing) or awaited (incoming) */
  TCP_UP,         /* authenticated; frames flow */
  TCP_SHUTDOWN,   /* we half-closed; reading until the peer's EOF */
  TCP_AWAIT,      /* placeholder after NACK: the peer connects to us */
  TCP_CLOSED
};

struct mmp__tp_s {
  uv_loop_t *loop;
  mmp__tp_config_t cfg;
  mmp__tp_callbacks_t cb;
  uv_tcp_t listener;
  int listening;
  mmp__tp_conn_t **peers; /* the connection that stands for each rank */
  mmp__list_t conns;      /* every connection object still allocated */
  unsigned npending;      /* incoming, not yet authenticated */
  unsigned open;          /* open handles, for destroy */
  int destroying;
  void (*destroy_done)(void *);
  void *destroy_arg;
  _Atomic uint64_t rejected, dropped, frames_in, frames_out;
  mmp__ratelog_t rl; /* the log's budget for rejected connections */
};

struct mmp__tp_conn_s {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_connect_t creq;
  uv_shutdown_t sreq;
  mmp__tp_t *tp;
  mmp__list_t node;
  int peer; /* -1 until the HELLO identified it */
  int outgoing;
  int state;
  int up_reported; /* peer_up ran, so peer_down must run once */
  int superseded;  /* lost the simultaneous-connect race: close quietly */
  int handles;     /* open libuv handles of this object */
  int fd;
  _Atomic int inflight; /* uv_writes not yet completed */
  uint64_t tx_seq;
  uint64_t rx_seq;
  uint64_t rx_ms; /* uv_hrtime() / 10^6 when bytes last arrived */
  /* Read side. Unparsed bytes are stage[rd, wr). */
  uint8_t *stage;
  size_t rd, wr;
  int in_payload;
  int direct;   /* the last alloc handed out the sink itself */
  int hdr_only; /* a large payload just ended: read the next header alone */
  mmp__frame_hdr_t cur;
  uint64_t pay_left;
  uint64_t pay_off;
  mmp__sink_t sink;
  uint8_t hello_in[MMP__HELLO_LEN];
  uint8_t hello_out[MMP__HELLO_LEN];
  mmp__tp_write_t hs; /* the handshake frame we send */
  char name[64];      /* remote address, for logs */
};

static void tcp_fail(mmp__tp_conn_t *c, int err, const char *reason,
                     int bad_input);

static void tcp_log_left_out(uint64_t n) {
  if (n > 0)
    MMP__LOG(MMP__LOG_WARN,
             "%llu more connections rejected after the last %u logged",
             (unsigned long long)n, MMP__RATELOG_BURST);
}

/* Anyone who can reach the port can make us reject connections, so their
 * log lines come out of a budget. */
static void tcp_log_reject(mmp__tp_t *tp, const char *name,
                           const char *reason) {
  uint64_t ended;
  int take = mmp__ratelog_take(&tp->rl, uv_now(tp->loop), &ended);

  tcp_log_left_out(ended);
  if (take)
    MMP__LOG(MMP__LOG_WARN, "rejected connection from %s: %s", name, reason);
}

/* ---- Object lifetime ---------------------------------------------------- */

/* Frees the transport once destroy() was called and the last handle is
 * closed; returns 1 if it did. */
static int tcp_maybe_free(mmp__tp_t *tp) {
  void (*done)(void *) = tp->destroy_done;
  void *arg = tp->destroy_arg;

  if (!tp->destroying || tp->open != 0 || !mmp__list_empty(&tp->conns))
    return 0;
  free(tp->peers);
  free(tp);
  if (done)
    done(arg);
  return 1;
}

static void tcp_handle_closed(uv_handle_t *h) {
  mmp__tp_conn_t *c = h->data;
  mmp__tp_t *tp = c->tp;

  assert(tp->open > 0 && c->handles > 0);
  tp->open--;
  if (--c->handles == 0) {
    mmp__list_remove(&c->node);
    free(c->stage);
    free(c);
  }
  tcp_maybe_free(tp);
}

static void tcp_listener_closed(uv_handle_t *h) {
  mmp__tp_t *tp = h->data;

  assert(tp->open > 0);
  tp->open--;
  tcp_maybe_free(tp);
}

static mmp__tp_conn_t *tcp_conn_new(mmp__tp_t *tp, int outgoing) {
  mmp__tp_conn_t *c = calloc(1, sizeof(*c));

  if (c == NULL)
    return NULL;
  c->stage = malloc(TCP_STAGE_SIZE);
  if (c->stage == NULL || uv_tcp_init(tp->loop, &c->tcp) != 0) {
    free(c->stage);
    free(c);
    return NULL;
  }
  uv_timer_init(tp->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->handles = 2;
  tp->open += 2;
  c->tp = tp;
  c->peer = -1;
  c->outgoing = outgoing;
  c->fd = -1;
  atomic_init(&c->inflight, 0);
  snprintf(c->name, sizeof(c->name), "?");
  mmp__list_insert_tail(&tp->conns, &c->node);
  return c;
}

static void tcp_close_handles(mmp__tp_conn_t *c) {
  if (!uv_is_closing((uv_handle_t *)&c->timer))
    uv_close((uv_handle_t *)&c->timer, tcp_handle_closed);
  if (!uv_is_closing((uv_handle_t *)&c->tcp))
    uv_close((uv_handle_t *)&c->tcp, tcp_handle_closed);
}

static void tcp_set_name(mmp__tp_conn_t *c) {
  struct sockaddr_storage ss;
  int len = sizeof(ss);

  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0)
    mmp__addr_format((struct sockaddr *)&ss, c->name, sizeof(c->name));
}

static void tcp_tune(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;

  uv_tcp_nodelay(&c->tcp, 1);
  if (uv_fileno((uv_handle_t *)&c->tcp, &c->fd) != 0)
    c->fd = -1;
  if (tp->cfg.user_timeout_ms > 0 && c->fd >= 0) {
    unsigned ut = tp->cfg.user_timeout_ms;
    int idle = (int)(ut / 3000) > 0 ? (int)(ut / 3000) : 1;
    int cnt = 3;
    /* Keepalive probes detect a silent peer; TCP_USER_TIMEOUT bounds how
     * long unacknowledged data may sit before the kernel gives up. */
    uv_tcp_keepalive(&c->tcp, 1, (unsigned)idle);
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    setsockopt(c->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
  }
}

/* ---- Writing ------------------------------------------------------------ */

/* Assigns the sequence number and encodes the header, once per frame. */
static void tcp_encode_once(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  if (w->encoded_)
    return;
  w->hdr.seq = c->tx_seq++;
  w->hdr.src = (uint32_t)c->tp->cfg.rank;
  mmp__frame_encode(&w->hdr, w->wire_);
  w->offset_ = 0;
  w->encoded_ = 1;
}

/* Builds the iovec of what remains of `w` after offset_. Returns count. */
static unsigned tcp_remaining(mmp__tp_write_t *w, uv_buf_t *out) {
  uint64_t skip = w->offset_;
  unsigned n = 0, i;

  if (skip < MMP__FRAME_HDR_SIZE) {
    out[n++] = uv_buf_init((char *)w->wire_ + skip,
                           (unsigned)(MMP__FRAME_HDR_SIZE - skip));
    skip = 0;
  } else {
    skip -= MMP__FRAME_HDR_SIZE;
  }
  for (i = 0; i < w->npayload; i++) {
    size_t len = w->payload[i].len;
    if (skip >= len) {
      skip -= len;
      continue;
    }
    out[n++] = uv_buf_init(w->payload[i].base + skip, (unsigned)(len - skip));
    skip = 0;
  }
  return n;
}

static void tcp_write_cb(uv_write_t *req, int status) {
  mmp__tp_write_t *w = mmp__container_of(req, mmp__tp_write_t, req_);
  mmp__tp_conn_t *c = req->handle->data;
  int was = atomic_fetch_sub_explicit(&c->inflight, 1, memory_order_release);

  assert(was > 0);
  (void)was;
  if (c->tp->cfg.activity != NULL)
    (*c->tp->cfg.activity)++;
  if (status == 0)
    atomic_fetch_add_explicit(&c->tp->frames_out, 1, memory_order_relaxed);
  if (w->cb)
    w->cb(w, status == 0 ? 0 : mmp__err_from_uv(status));
}

static int tcp_write(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  uv_buf_t bufs[3];
  unsigned n;
  int rc;

  MMP__ASSERT_LOOP_OF(c->tp->loop);
  assert(w->npayload <= MMP__ARRAY_SIZE(w->payload));
  if (c->state != TCP_UP && !(c->state == TCP_HANDSHAKE && w == &c->hs))
    return MMP_EPEERLOST;
  tcp_encode_once(c, w);
  n = tcp_remaining(w, bufs);
  atomic_fetch_add_explicit(&c->inflight, 1, memory_order_relaxed);
  rc = uv_write(&w->req_, (uv_stream_t *)&c->tcp, bufs, n, tcp_write_cb);
  if (rc != 0) {
    atomic_fetch_sub_explicit(&c->inflight, 1, memory_order_relaxed);
    return MMP_EPEERLOST;
  }
  return 0;
}

static int tcp_write_direct(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  struct iovec iov[3];
  uv_buf_t bufs[3];
  struct msghdr msg;
  uint64_t total;
  unsigned n, i;
  ssize_t done;

  assert(w->npayload <= MMP__ARRAY_SIZE(w->payload));
  if (atomic_load_explicit(&c->inflight, memory_order_acquire) != 0 ||
      c->fd < 0)
    return 0;
  tcp_encode_once(c, w);
  n = tcp_remaining(w, bufs);
  total = MMP__FRAME_HDR_SIZE;
  for (i = 0; i < w->npayload; i++)
    total += w->payload[i].len;
  for (i = 0; i < n; i++) {
    iov[i].iov_base = bufs[i].base;
    iov[i].iov_len = bufs[i].len;
  }
  memset(&msg, 0, sizeof(msg));
  msg.msg_iov = iov;
  msg.msg_iovlen = n;
  do
    done = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (done < 0 && errno == EINTR);
  if (done <= 0)
    return 0; /* EAGAIN, or an error that write() will report */
  w->offset_ += (uint64_t)done;
  if (w->offset_ < total)
    return 0;
  atomic_fetch_add_explicit(&c->tp->frames_out, 1, memory_order_relaxed);
  return 1;
}

/* ---- Handshake ---------------------------------------------------------- */

static void tcp_hs_written(mmp__tp_write_t *w, int status) {
  mmp__tp_conn_t *c = w->data;

  /* A NACK has done its job once written; the peer will use our
   * connection. */
  if (w->hdr.type == MMP__F_HELLO_NACK && c->state != TCP_CLOSED) {
    c->superseded = 1;
    tcp_fail(c, 0, "duplicate connection refused", 0);
  } else if (status != 0 && c->state != TCP_CLOSED) {
    tcp_fail(c, status, "handshake write failed", 0);
  }
}

static int tcp_send_hs(mmp__tp_conn_t *c, uint8_t type, uint64_t a0) {
  mmp__tp_t *tp = c->tp;

  memset(&c->hs, 0, sizeof(c->hs));
  c->hs.hdr.type = type;
  c->hs.hdr.a0 = a0;
  c->hs.hdr.len = MMP__HELLO_LEN;
  mmp__hello_encode(tp->cfg.key, (uint32_t)tp->cfg.rank, (uint32_t)tp->cfg.size,
                    c->hello_out);
  c->hs.payload[0] = uv_buf_init((char *)c->hello_out, MMP__HELLO_LEN);
  c->hs.npayload = 1;
  c->hs.cb = tcp_hs_written;
  c->hs.data = c;
  return tcp_write(c, &c->hs);
}

static void tcp_timeout(uv_timer_t *t) {
  mmp__tp_conn_t *c = t->data;

  if (c->state == TCP_AWAIT)
    tcp_fail(c, MMP_ETIMEDOUT,
             "peer refused our connection and never connected back", 0);
  else if (c->state == TCP_SHUTDOWN)
    tcp_fail(c, 0, "no EOF from peer after shutdown", 0);
  else
    tcp_fail(c, MMP_ETIMEDOUT, "handshake timed out", 1);
}

static void tcp_up(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;

  uv_timer_stop(&c->timer);
  c->state = TCP_UP;
  c->up_reported = 1;
  tp->cb.peer_up(tp->cb.ctx, c->peer, c);
}

/* An incoming connection introduced itself. Returns 0 or fails `c`. */
static void tcp_hello_in(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  uint8_t key[MMP__JOB_KEY_LEN];
  uint32_t rank, size;
  mmp__tp_conn_t *old;
  const char *refused;
  char why[96];

  if (c->cur.type != MMP__F_HELLO) {
    tcp_fail(c, MMP_EPROTO, "first frame is not HELLO", 1);
    return;
  }
  if (mmp__hello_decode(c->hello_in, key, &rank, &size) != 0) {
    tcp_fail(c, MMP_EPROTO, "malformed HELLO", 1);
    return;
  }
  if (!mmp__ct_equal(key, tp->cfg.key, MMP__JOB_KEY_LEN)) {
    tcp_fail(c, MMP_EAUTH, "wrong job key", 1);
    return;
  }
  if (size != (uint32_t)tp->cfg.size || rank >= size ||
      rank == (uint32_t)tp->cfg.rank || rank != c->cur.src) {
    snprintf(why, sizeof(why), "bad rank %u or size %u in HELLO", rank, size);
    tcp_fail(c, MMP_EPROTO, why, 1);
    return;
  }
  if (tp->cb.refuse != NULL &&
      (refused = tp->cb.refuse(tp->cb.ctx, (int)rank))) {
    snprintf(why, sizeof(why), "rank %u %s", rank, refused);
    tcp_fail(c, MMP_EPROTO, why, 1);
    return;
  }
  old = tp->peers[rank];
  if (old != NULL && (old->state == TCP_UP || old->state == TCP_SHUTDOWN) &&
      !(old->outgoing && tp->cfg.rank < (int)rank)) {
    /* Only our own winning connection may already be up; anything else
     * claiming this rank is an impostor or a broken peer. */
    snprintf(why, sizeof(why), "duplicate connection for rank %u", rank);
    tcp_fail(c, MMP_EPROTO, why, 1);
    return;
  }
  c->peer = (int)rank;
  assert(tp->npending > 0);
  tp->npending--;
  if (old != NULL && old->state != TCP_AWAIT && tp->cfg.rank < (int)rank) {
    /* Both sides connected at once; ours (the lower rank's) wins, even if
     * its handshake already finished. */
    c->superseded = 1;
    if (tcp_send_hs(c, MMP__F_HELLO_NACK, MMP__NACK_DUPLICATE) != 0)
      tcp_fail(c, 0, "duplicate connection refused", 0);
    return;
  }
  if (old != NULL) {
    /* The peer is lower and its connection wins over our attempt, or we
     * were waiting for it after a NACK. */
    old->superseded = 1;
    tp->peers[rank] = NULL;
    if (old->state == TCP_AWAIT)
      tcp_fail(old, 0, "replaced", 0);
  }
  tp->peers[rank] = c;
  if (tcp_send_hs(c, MMP__F_HELLO_ACK, 0) != 0) {
    tcp_fail(c, MMP_EPEERLOST, "cannot send HELLO_ACK", 0);
    return;
  }
  tcp_up(c);
}

/* Our outgoing connection got its answer. */
static void tcp_hello_reply(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  uint8_t key[MMP__JOB_KEY_LEN];
  uint32_t rank, size;

  if (c->cur.type == MMP__F_HELLO_NACK && c->superseded) {
    tcp_fail(c, 0, "superseded", 0);
    return;
  }
  if (c->cur.type == MMP__F_HELLO_NACK) {
    /* The lower-ranked peer keeps its own connection to us. Wait for it,
     * but not forever. */
    c->state = TCP_AWAIT;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_close((uv_handle_t *)&c->tcp, tcp_handle_closed);
    uv_timer_start(&c->timer, tcp_timeout, 2u * tp->cfg.handshake_timeout_ms,
                   0);
    return;
  }
  if (c->cur.type != MMP__F_HELLO_ACK ||
      mmp__hello_decode(c->hello_in, key, &rank, &size) != 0) {
    tcp_fail(c, MMP_EPROTO, "bad handshake reply", 1);
    return;
  }
  if (!mmp__ct_equal(key, tp->cfg.key, MMP__JOB_KEY_LEN)) {
    tcp_fail(c, MMP_EAUTH, "peer answered with a wrong job key", 1);
    return;
  }
  if (rank != (uint32_t)c->peer || size != (uint32_t)tp->cfg.size) {
    tcp_fail(c, MMP_EPROTO, "peer answered with the wrong rank or size", 1);
    return;
  }
  if (c->superseded) {
    tcp_fail(c, 0, "superseded", 0);
    return;
  }
  tcp_up(c);
}

/* ---- Reading ------------------------------------------------------------ */

static void tcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  mmp__tp_conn_t *c = h->data;
  (void)suggested;

  if (c->in_payload && c->rd == c->wr && c->pay_off < c->sink.len &&
      c->sink.len - c->pay_off >= TCP_DIRECT_MIN) {
    uint64_t n = c->sink.len - c->pay_off;
    if (n > c->pay_left)
      n = c->pay_left;
    if (n > (1u << 30))
      n = 1u << 30;
    c->direct = 1;
    *buf = uv_buf_init((char *)c->sink.buf + c->pay_off, (unsigned)n);
    return;
  }
  c->direct = 0;
  if (c->rd == c->wr && c->hdr_only && !c->in_payload) {
    /* Bulk frames tend to follow each other: read just the next header,
     * so that its payload goes straight to its sink instead of through
     * the staging buffer and a copy. */
    c->hdr_only = 0;
    c->rd = c->wr = 0;
    *buf = uv_buf_init((char *)c->stage, MMP__FRAME_HDR_SIZE);
    return;
  }
  c->hdr_only = 0;
  if (c->rd == c->wr) {
    c->rd = c->wr = 0;
  } else if (c->rd > 0) {
    /* Only a partial header can be left over here. */
    memmove(c->stage, c->stage + c->rd, c->wr - c->rd);
    c->wr -= c->rd;
    c->rd = 0;
  }
  *buf =
      uv_buf_init((char *)c->stage + c->wr, (unsigned)(TCP_STAGE_SIZE - c->wr));
}

/* All payload of the current frame is in place. Returns 0 to go on. */
static int tcp_payload_done(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  int rc;

  c->in_payload = 0;
  c->direct = 0;
  if (c->state == TCP_HANDSHAKE) {
    if (c->outgoing)
      tcp_hello_reply(c);
    else
      tcp_hello_in(c);
    return c->state == TCP_UP ? 0 : -1;
  }
  rc = tp->cb.frame_done(tp->cb.ctx, c->peer, &c->cur);
  if (rc != 0) {
    tcp_fail(c, rc, "frame rejected by the runtime", 1);
    return -1;
  }
  return c->state == TCP_CLOSED ? -1 : 0;
}

/* A header was parsed and its sequence checked. Returns 0 to go on. */
static int tcp_header(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  int rc;

  atomic_fetch_add_explicit(&tp->frames_in, 1, memory_order_relaxed);
  if (c->state == TCP_HANDSHAKE) {
    if (c->cur.len != MMP__HELLO_LEN) {
      tcp_fail(c, MMP_EPROTO, "handshake frame has the wrong length", 1);
      return -1;
    }
    c->sink.buf = c->hello_in;
    c->sink.len = MMP__HELLO_LEN;
    return 0;
  }
  if (c->cur.type <= MMP__F_HELLO_NACK) {
    tcp_fail(c, MMP_EPROTO, "handshake frame after the handshake", 1);
    return -1;
  }
  if (c->cur.src != (uint32_t)c->peer) {
    tcp_fail(c, MMP_EPROTO, "frame with a forged source rank", 1);
    return -1;
  }
  c->sink.buf = NULL;
  c->sink.len = 0;
  rc = tp->cb.frame(tp->cb.ctx, c->peer, &c->cur, &c->sink);
  if (rc != 0) {
    tcp_fail(c, rc, "frame rejected by the runtime", 1);
    return -1;
  }
  return c->state == TCP_CLOSED ? -1 : 0;
}

static void tcp_parse(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;

  while (c->state == TCP_UP || c->state == TCP_HANDSHAKE ||
         c->state == TCP_SHUTDOWN) {
    size_t avail = c->wr - c->rd;
    if (!c->in_payload) {
      const char *why = NULL;
      int rc;
      if (avail < MMP__FRAME_HDR_SIZE)
        return;
      rc =
          mmp__frame_decode(c->stage + c->rd, tp->cfg.max_frame, &c->cur, &why);
      if (rc != 0) {
        tcp_fail(c, rc, why, 1);
        return;
      }
      if (c->cur.seq != c->rx_seq) {
        tcp_fail(c, MMP_EPROTO, "frame out of sequence", 1);
        return;
      }
      c->rx_seq++;
      c->rd += MMP__FRAME_HDR_SIZE;
      c->in_payload = 1;
      c->pay_left = c->cur.len;
      c->pay_off = 0;
      if (tcp_header(c) != 0)
        return;
      if (c->pay_left == 0 && tcp_payload_done(c) != 0)
        return;
    } else {
      uint64_t n = avail < c->pay_left ? avail : c->pay_left;
      if (n == 0)
        return;
      if (c->pay_off < c->sink.len) {
        uint64_t m = c->sink.len - c->pay_off;
        if (m > n)
          m = n;
        memcpy((uint8_t *)c->sink.buf + c->pay_off, c->stage + c->rd,
               (size_t)m);
      }
      c->rd += (size_t)n;
      c->pay_off += n;
      c->pay_left -= n;
      if (c->pay_left == 0 && tcp_payload_done(c) != 0)
        return;
    }
  }
}

static void tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  mmp__tp_conn_t *c = s->data;
  (void)buf;

  if (nread < 0) {
    if (nread == UV_EOF)
      tcp_fail(c, c->state == TCP_SHUTDOWN ? 0 : MMP_EPEERLOST,
               "connection closed by peer", 0);
    else
      tcp_fail(c, mmp__err_from_uv((int)nread), uv_strerror((int)nread), 0);
    return;
  }
  if (nread == 0)
    return;
  if (c->tp->cfg.activity != NULL)
    (*c->tp->cfg.activity)++;
  /* A fresh clock: a long loop iteration must not date these bytes back
   * to its start (the heartbeat would take a live peer for a silent one). */
  c->rx_ms = uv_hrtime() / 1000000;
  if (c->direct) {
    /* tcp_alloc offered at most the rest of the payload. */
    assert((uint64_t)nread <= c->pay_left);
    c->direct = 0;
    c->pay_off += (uint64_t)nread;
    c->pay_left -= (uint64_t)nread;
    if (c->pay_left == 0) {
      c->hdr_only = 1;
      tcp_payload_done(c);
    }
    return;
  }
  c->wr += (size_t)nread;
  tcp_parse(c);
}

/* ---- Failure ------------------------------------------------------------ */

static void tcp_fail(mmp__tp_conn_t *c, int err, const char *reason,
                     int bad_input) {
  mmp__tp_t *tp = c->tp;
  int was = c->state;
  int report;

  if (was == TCP_CLOSED)
    return;
  c->state = TCP_CLOSED;
  if (was == TCP_HANDSHAKE && !c->outgoing && c->peer < 0) {
    assert(tp->npending > 0);
    tp->npending--;
  }
  /* A connection that never authenticated is "rejected"; an established
   * one that sent garbage is "dropped". */
  if (bad_input && !c->up_reported) {
    atomic_fetch_add_explicit(&tp->rejected, 1, memory_order_relaxed);
    tcp_log_reject(tp, c->name, reason);
  } else if (bad_input) {
    atomic_fetch_add_explicit(&tp->dropped, 1, memory_order_relaxed);
    MMP__LOG(MMP__LOG_WARN, "dropping connection to rank %d (%s): %s", c->peer,
             c->name, reason);
  } else if (err != 0 && !c->superseded) {
    MMP__LOG(MMP__LOG_INFO, "connection to rank %d (%s) lost: %s", c->peer,
             c->name, reason);
  }
  report = !c->superseded && c->peer >= 0 && !tp->destroying &&
           (c->up_reported || c->outgoing);
  if (c->peer >= 0 && tp->peers[c->peer] == c)
    tp->peers[c->peer] = NULL;
  tcp_close_handles(c);
  if (report)
    tp->cb.peer_down(tp->cb.ctx, c->peer, err, reason);
}

/* ---- Connection set-up -------------------------------------------------- */

static void tcp_connected(uv_connect_t *req, int status) {
  mmp__tp_conn_t *c = req->data;

  if (c->state != TCP_CONNECTING)
    return;
  if (status != 0) {
    tcp_fail(c, mmp__err_from_uv(status), uv_strerror(status), 0);
    return;
  }
  tcp_set_name(c);
  tcp_tune(c);
  c->state = TCP_HANDSHAKE;
  if (uv_read_start((uv_stream_t *)&c->tcp, tcp_alloc, tcp_read) != 0 ||
      tcp_send_hs(c, MMP__F_HELLO, 0) != 0)
    tcp_fail(c, MMP_EPEERLOST, "cannot start the handshake", 0);
}

static int tcp_connect(mmp__tp_t *tp, int peer, const struct sockaddr *addr) {
  mmp__tp_conn_t *c;
  int rc;

  MMP__ASSERT_LOOP_OF(tp->loop);
  assert(!tp->destroying);
  if (peer < 0 || peer >= tp->cfg.size || peer == tp->cfg.rank)
    return MMP_EINVAL;
  if (tp->peers[peer] != NULL)
    return 0;
  c = tcp_conn_new(tp, 1);
  if (c == NULL)
    return MMP_ENOMEM;
  c->peer = peer;
  c->state = TCP_CONNECTING;
  c->creq.data = c;
  mmp__addr_format(addr, c->name, sizeof(c->name));
  tp->peers[peer] = c;
  uv_timer_start(&c->timer, tcp_timeout, tp->cfg.handshake_timeout_ms, 0);
  rc = uv_tcp_connect(&c->creq, &c->tcp, addr, tcp_connected);
  if (rc != 0) {
    tp->peers[peer] = NULL;
    c->state = TCP_CLOSED;
    tcp_close_handles(c);
    return mmp__err_from_uv(rc);
  }
  return 0;
}

static void tcp_accept(uv_stream_t *server, int status) {
  mmp__tp_t *tp = server->data;
  mmp__tp_conn_t *c;

  if (status != 0 || tp->destroying)
    return;
  c = tcp_conn_new(tp, 0);
  if (c == NULL)
    return;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    c->state = TCP_CLOSED;
    tcp_close_handles(c);
    return;
  }
  tcp_set_name(c);
  c->state = TCP_HANDSHAKE;
  if (tp->npending >= tp->cfg.max_pending) {
    c->state = TCP_CLOSED;
    atomic_fetch_add_explicit(&tp->rejected, 1, memory_order_relaxed);
    tcp_log_reject(tp, c->name, "too many unauthenticated connections");
    tcp_close_handles(c);
    return;
  }
  tp->npending++;
  tcp_tune(c);
  uv_timer_start(&c->timer, tcp_timeout, tp->cfg.handshake_timeout_ms, 0);
  if (uv_read_start((uv_stream_t *)&c->tcp, tcp_alloc, tcp_read) != 0)
    tcp_fail(c, MMP_EIO, "cannot read", 0);
}

static int tcp_listen(mmp__tp_t *tp, const struct sockaddr *addr, char *name,
                      size_t namelen) {
  struct sockaddr_storage bound;
  int len = sizeof(bound);
  unsigned flags = addr->sa_family == AF_INET6 ? UV_TCP_IPV6ONLY : 0;
  int rc;

  MMP__ASSERT_LOOP_OF(tp->loop);
  assert(!tp->destroying);
  if (tp->listening)
    return MMP_EINVAL;
  rc = uv_tcp_init(tp->loop, &tp->listener);
  if (rc != 0)
    return mmp__err_from_uv(rc);
  tp->listener.data = tp;
  tp->listening = 1;
  tp->open++;
  rc = uv_tcp_bind(&tp->listener, addr, flags);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&tp->listener, 1024, tcp_accept);
  if (rc == 0)
    rc = uv_tcp_getsockname(&tp->listener, (struct sockaddr *)&bound, &len);
  if (rc != 0)
    return mmp__err_from_uv(rc) == MMP_EIO ? MMP_EADDR : mmp__err_from_uv(rc);
  return mmp__addr_format((struct sockaddr *)&bound, name, namelen);
}

/* ---- Shut-down ---------------------------------------------------------- */

static void tcp_shutdown_cb(uv_shutdown_t *req, int status) {
  (void)req;
  (void)status; /* EOF or the timer finishes the job */
}

static void tcp_shutdown(mmp__tp_conn_t *c, unsigned timeout_ms) {
  MMP__ASSERT_LOOP_OF(c->tp->loop);
  if (c->state != TCP_UP)
    return;
  c->state = TCP_SHUTDOWN;
  if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, tcp_shutdown_cb) != 0) {
    tcp_fail(c, 0, "shutdown failed", 0);
    return;
  }
  uv_timer_start(&c->timer, tcp_timeout, timeout_ms, 0);
}

static void tcp_abort(mmp__tp_conn_t *c, int err, const char *reason) {
  MMP__ASSERT_LOOP_OF(c->tp->loop);
  tcp_fail(c, err, reason, 0);
}

static void tcp_stats(mmp__tp_t *tp, mmp__tp_stats_t *out) {
  out->rejected = atomic_load(&tp->rejected);
  out->dropped = atomic_load(&tp->dropped);
  out->frames_in = atomic_load(&tp->frames_in);
  out->frames_out = atomic_load(&tp->frames_out);
}

static int tcp_create(uv_loop_t *loop, const mmp__tp_config_t *cfg,
                      const mmp__tp_callbacks_t *cb, mmp__tp_t **out) {
  mmp__tp_t *tp;

  MMP__ASSERT_LOOP_OF(loop);
  if (cfg->size <= 0 || cfg->rank < 0 || cfg->rank >= cfg->size)
    return MMP_EINVAL;
  tp = calloc(1, sizeof(*tp));
  if (tp == NULL)
    return MMP_ENOMEM;
  tp->peers = calloc((size_t)cfg->size, sizeof(*tp->peers));
  if (tp->peers == NULL) {
    free(tp);
    return MMP_ENOMEM;
  }
  tp->loop = loop;
  tp->cfg = *cfg;
  tp->cb = *cb;
  if (tp->cfg.handshake_timeout_ms == 0)
    tp->cfg.handshake_timeout_ms = 10000;
  if (tp->cfg.max_pending == 0)
    tp->cfg.max_pending = 64;
  mmp__list_init(&tp->conns);
  atomic_init(&tp->rejected, 0);
  atomic_init(&tp->dropped, 0);
  atomic_init(&tp->frames_in, 0);
  atomic_init(&tp->frames_out, 0);
  *out = tp;
  return 0;
}

static void tcp_destroy(mmp__tp_t *tp, void (*done)(void *arg), void *arg) {
  mmp__list_t *it;

  MMP__ASSERT_LOOP_OF(tp->loop);
  assert(!tp->destroying);
  tp->destroying = 1;
  tp->destroy_done = done;
  tp->destroy_arg = arg;
  tcp_log_left_out(mmp__ratelog_end(&tp->rl));
  mmp__list_foreach(it, &tp->conns) {
    mmp__tp_conn_t *c = mmp__container_of(it, mmp__tp_conn_t, node);
    c->state = TCP_CLOSED;
    tcp_close_handles(c);
  }
  if (tp->listening && !uv_is_closing((uv_handle_t *)&tp->listener))
    uv_close((uv_handle_t *)&tp->listener, tcp_listener_closed);
  tcp_maybe_free(tp);
}

static uint64_t tcp_rx_ms(const mmp__tp_conn_t *c) {
  return c->rx_ms;
}

const mmp__tp_ops_t mmp__tcp_ops = {
    .name = "tcp",
    .create = tcp_create,
    .listen = tcp_listen,
    .connect = tcp_connect,
    .write = tcp_write,
    .write_direct = tcp_write_direct,
    .shutdown = tcp_shutdown,
    .abort = tcp_abort,
    .stats = tcp_stats,
    .rx_ms = tcp_rx_ms,
    .destroy = tcp_destroy,
};

int mmp__tcp_conn_fd(const mmp__tp_conn_t *conn) {
  return conn->fd;
}
