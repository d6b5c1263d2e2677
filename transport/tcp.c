/* SPDX-License-Identifier: MIT */
/*
 * The libuv TCP transport: one full-duplex connection per pair of ranks.
 *
 * Connections. Either side may connect first. The job key never travels:
 * the dialer sends HELLO and the listener CHALLENGE at once, each with a
 * fresh nonce, its rank, the job size and whether it seals frames; the
 * dialer then sends PROOF, a MAC over both greetings, and the listener
 * answers HELLO_ACK (or HELLO_NACK) with its own MAC over them (auth.h,
 * docs/security.md). Nothing a peer claims changes any state before its
 * proof verifies. When both ranks of a pair connect at once, the
 * connection opened by the lower rank wins: the higher rank accepts it and
 * the lower rank answers the other with HELLO_NACK. Anything unexpected
 * before the handshake completes (a wrong key, bad magic or version, a rank
 * out of range or already connected, a peer that seals when we do not or
 * the reverse, an oversized frame, silence past the handshake timeout)
 * closes that connection with a logged reason and touches nothing else.
 *
 * Sealing. With cfg.encrypt, every byte after a direction's handshake
 * frames is a sealed record (auth.h) under keys of this connection alone.
 * A frame is sealed whole when it is committed to the wire, into a buffer
 * of its own (the plain path writes the caller's buffers directly); the
 * reader opens records into the staging buffer, or straight into a large
 * payload's sink, and parses the plaintext exactly as it parses a plain
 * stream. A record that fails to open drops the connection.
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

#include "auth.h"
#include "minimp.h"
#include "util.h"

#define TCP_STAGE_SIZE (64 * 1024)
#define TCP_DIRECT_MIN (8 * 1024) /* read payloads this large in place */
/* Sealed bytes received and not yet opened: room for two whole records, so
 * that after moving a partial record to the front a read always has room. */
#define TCP_SEALED_SIZE (2 * (MMP__REC_MAX + MMP__REC_OVERHEAD))
_Static_assert(MMP__REC_MAX + MMP__FRAME_HDR_SIZE <= TCP_STAGE_SIZE,
               "an opened record fits the staging buffer beside a partial "
               "header");

enum tcp_state {
  TCP_CONNECTING, /* outgoing, TCP connect in progress */
  TCP_HANDSHAKE,  /* greetings and proofs under way */
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
  /* Handshake. The dialer sends HELLO then PROOF, the listener CHALLENGE
   * then HELLO_ACK or HELLO_NACK: two frames each, each with its own
   * write object, since the first may still be in flight. */
  int hs_got;   /* handshake frames received */
  int claim;    /* the rank the dialer claims, until its proof verifies */
  int hs_ready; /* both greetings are in and `auth` holds the transcript */
  uint8_t greet_out[MMP__GREET_LEN]; /* ours, as sent */
  uint8_t greet_in[MMP__GREET_LEN];  /* the peer's, as received */
  uint8_t hs_in[MMP__GREET_LEN];     /* sink of a handshake payload */
  uint8_t mac_out[MMP__MAC_LEN];
  mmp__auth_t auth;
  mmp__tp_write_t hs[2];
  /* Sealing (cfg.encrypt), once the handshake is done. */
  int sealed;
  int rx_switch; /* what follows in stage[] is sealed: stop parsing it */
  mmp__seal_t tx, rx;
  uint8_t *sealed_in; /* received records, [srd, swr) not yet opened */
  size_t srd, swr;
  uint8_t *scratch; /* MMP__REC_MAX: gathers a record that spans pieces */
  uint8_t *pend_ct; /* the records of the frame encoded last, until a
                       uv_write owns them or write_direct wrote them all */
  uint64_t pend_len;
  char name[64]; /* remote address, for logs */
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
    mmp__auth_end(&c->auth);
    mmp__auth_wipe(&c->tx, sizeof(c->tx));
    mmp__auth_wipe(&c->rx, sizeof(c->rx));
    free(c->pend_ct);
    free(c->sealed_in);
    free(c->scratch);
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
  if (tp->cfg.encrypt) {
    c->sealed_in = malloc(TCP_SEALED_SIZE);
    c->scratch = malloc(MMP__REC_MAX);
  }
  if (c->stage == NULL ||
      (tp->cfg.encrypt && (c->sealed_in == NULL || c->scratch == NULL)) ||
      uv_tcp_init(tp->loop, &c->tcp) != 0) {
    free(c->sealed_in);
    free(c->scratch);
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

/*
 * Assigns the sequence number and encodes the header, once per frame. On a
 * sealed connection it also seals the whole frame into c->pend_ct, which
 * the caller hands on. Returns 0, or MMP_ENOMEM with nothing assigned.
 */
static int tcp_encode_once(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  struct iovec iov[3];
  uint64_t total = MMP__FRAME_HDR_SIZE;
  uint8_t *ct = NULL;
  unsigned i;

  if (w->encoded_)
    return 0;
  if (c->sealed) {
    for (i = 0; i < w->npayload; i++)
      total += w->payload[i].len;
    /* A frame in progress is always written before another is encoded. */
    assert(c->pend_ct == NULL);
    ct = malloc(mmp__seal_size(total));
    if (ct == NULL)
      return MMP_ENOMEM;
  }
  w->hdr.seq = c->tx_seq++;
  w->hdr.src = (uint32_t)c->tp->cfg.rank;
  mmp__frame_encode(&w->hdr, w->wire_);
  w->offset_ = 0;
  w->encoded_ = 1;
  if (ct != NULL) {
    iov[0].iov_base = w->wire_;
    iov[0].iov_len = MMP__FRAME_HDR_SIZE;
    for (i = 0; i < w->npayload; i++) {
      iov[i + 1].iov_base = w->payload[i].base;
      iov[i + 1].iov_len = w->payload[i].len;
    }
    mmp__seal(&c->tx, iov, w->npayload + 1, total, ct, c->scratch);
    c->pend_ct = ct;
    c->pend_len = mmp__seal_size(total);
  }
  return 0;
}

/* Builds the iovec of what remains of `w` after offset_. Returns count. */
static unsigned tcp_remaining(mmp__tp_write_t *w, uv_buf_t *out) {
  uint64_t skip = w->offset_;
  unsigned n = 0, i;

  if (w->ct_ != NULL) {
    out[0] = uv_buf_init((char *)w->ct_ + skip, (unsigned)(w->ctlen_ - skip));
    return 1;
  }
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
  free(w->ct_);
  w->ct_ = NULL;
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
  if (c->state != TCP_UP &&
      !(c->state == TCP_HANDSHAKE && (w == &c->hs[0] || w == &c->hs[1])))
    return MMP_EPEERLOST;
  if (tcp_encode_once(c, w) != 0) {
    tcp_fail(c, MMP_ENOMEM, "out of memory sealing a frame", 0);
    return MMP_EPEERLOST;
  }
  w->ct_ = NULL;
  if (c->sealed) {
    /* The frame encoded last: this one, or the one write_direct began. */
    assert(c->pend_ct != NULL);
    w->ct_ = c->pend_ct;
    w->ctlen_ = c->pend_len;
    c->pend_ct = NULL;
  }
  n = tcp_remaining(w, bufs);
  atomic_fetch_add_explicit(&c->inflight, 1, memory_order_relaxed);
  rc = uv_write(&w->req_, (uv_stream_t *)&c->tcp, bufs, n, tcp_write_cb);
  if (rc != 0) {
    atomic_fetch_sub_explicit(&c->inflight, 1, memory_order_relaxed);
    free(w->ct_);
    w->ct_ = NULL;
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
  if (tcp_encode_once(c, w) != 0)
    return 0; /* write() will fail the connection */
  if (c->sealed) {
    iov[0].iov_base = c->pend_ct + w->offset_;
    iov[0].iov_len = (size_t)(c->pend_len - w->offset_);
    n = 1;
    total = c->pend_len;
  } else {
    w->ct_ = NULL;
    n = tcp_remaining(w, bufs);
    total = MMP__FRAME_HDR_SIZE;
    for (i = 0; i < w->npayload; i++)
      total += w->payload[i].len;
    for (i = 0; i < n; i++) {
      iov[i].iov_base = bufs[i].base;
      iov[i].iov_len = bufs[i].len;
    }
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
  if (c->sealed) {
    free(c->pend_ct);
    c->pend_ct = NULL;
  }
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

/* Queues handshake frame `i` (0: the greeting, 1: the proof) of `type`,
 * whose payload, `len` bytes, lives in the connection. */
static int tcp_send_hs(mmp__tp_conn_t *c, int i, uint8_t type, uint64_t a0,
                       const uint8_t *payload, size_t len) {
  mmp__tp_write_t *w = &c->hs[i];

  memset(w, 0, sizeof(*w));
  w->hdr.type = type;
  w->hdr.a0 = a0;
  w->hdr.len = len;
  w->payload[0] = uv_buf_init((char *)payload, (unsigned)len);
  w->npayload = 1;
  w->cb = tcp_hs_written;
  w->data = c;
  return tcp_write(c, w);
}

/* Our greeting, with a fresh nonce: HELLO from the dialer, CHALLENGE from
 * the listener. */
static int tcp_send_greeting(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  mmp__greet_t g;

  mmp__auth_nonce(g.nonce);
  g.rank = (uint32_t)tp->cfg.rank;
  g.size = (uint32_t)tp->cfg.size;
  g.peer = c->outgoing ? (uint32_t)c->peer : MMP__GREET_ANY;
  g.flags = tp->cfg.encrypt ? MMP__GREET_ENCRYPT : 0;
  mmp__greet_encode(&g, c->greet_out);
  return tcp_send_hs(c, 0, c->outgoing ? MMP__F_HELLO : MMP__F_CHALLENGE, 0,
                     c->greet_out, MMP__GREET_LEN);
}

/* Our proof over both greetings, saying `verdict`, in a frame of `type`. */
static int tcp_send_proof(mmp__tp_conn_t *c, uint8_t type, int verdict,
                          uint64_t a0) {
  mmp__auth_mac(&c->auth, c->outgoing ? MMP__AUTH_DIALER : MMP__AUTH_LISTENER,
                verdict, c->mac_out);
  return tcp_send_hs(c, 1, type, a0, c->mac_out, MMP__MAC_LEN);
}

/* The peer's greeting (in hs_in) passed its checks: the transcript is the
 * dialer's greeting, then the listener's. */
static void tcp_begin_auth(mmp__tp_conn_t *c) {
  const uint8_t *key = c->tp->cfg.key;

  memcpy(c->greet_in, c->hs_in, MMP__GREET_LEN);
  if (c->outgoing)
    mmp__auth_begin(&c->auth, key, MMP__AUTH_TCP, c->greet_out, MMP__GREET_LEN,
                    c->greet_in, MMP__GREET_LEN);
  else
    mmp__auth_begin(&c->auth, key, MMP__AUTH_TCP, c->greet_in, MMP__GREET_LEN,
                    c->greet_out, MMP__GREET_LEN);
  c->hs_ready = 1;
}

/* Both sides must seal, or neither. Returns 0, or fails `c`. */
static int tcp_check_flags(mmp__tp_conn_t *c, const mmp__greet_t *g) {
  int theirs = (g->flags & MMP__GREET_ENCRYPT) != 0;
  int ours = c->tp->cfg.encrypt != 0;
  char why[160];

  if (theirs == ours)
    return 0;
  snprintf(why, sizeof(why),
           "rank %u runs with MINIMP_ENCRYPT=%d and this rank with "
           "MINIMP_ENCRYPT=%d: every rank of a job must agree",
           g->rank, theirs, ours);
  tcp_fail(c, MMP_EPROTO, why, 1);
  return -1;
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

/* Both proofs verified (and ours is written): frames may flow. Everything
 * after this direction's handshake frames is sealed if we seal. */
static void tcp_up(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];

  uv_timer_stop(&c->timer);
  if (tp->cfg.encrypt) {
    mmp__auth_session_keys(&c->auth, tp->cfg.key, d2l, l2d);
    memcpy(c->tx.key, c->outgoing ? d2l : l2d, sizeof(c->tx.key));
    memcpy(c->rx.key, c->outgoing ? l2d : d2l, sizeof(c->rx.key));
    c->tx.next = c->rx.next = 0;
    mmp__auth_wipe(d2l, sizeof(d2l));
    mmp__auth_wipe(l2d, sizeof(l2d));
    c->sealed = 1;
    c->rx_switch = 1;
  }
  mmp__auth_end(&c->auth);
  c->state = TCP_UP;
  c->up_reported = 1;
  tp->cb.peer_up(tp->cb.ctx, c->peer, c);
}

/* The listener got the dialer's greeting. Nothing it claims is trusted
 * yet; only what makes the handshake pointless is refused now. */
static void tcp_hello_in(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  mmp__greet_t g;
  char why[96];

  if (c->cur.type != MMP__F_HELLO) {
    tcp_fail(c, MMP_EPROTO, "first frame is not HELLO", 1);
    return;
  }
  if (mmp__greet_decode(c->hs_in, &g) != 0) {
    tcp_fail(c, MMP_EPROTO, "malformed HELLO", 1);
    return;
  }
  if (g.size != (uint32_t)tp->cfg.size || g.rank >= g.size ||
      g.rank == (uint32_t)tp->cfg.rank || g.rank != c->cur.src) {
    snprintf(why, sizeof(why), "bad rank %u or size %u in HELLO", g.rank,
             g.size);
    tcp_fail(c, MMP_EPROTO, why, 1);
    return;
  }
  if (g.peer != (uint32_t)tp->cfg.rank) {
    snprintf(why, sizeof(why), "HELLO meant for rank %u", g.peer);
    tcp_fail(c, MMP_EPROTO, why, 1);
    return;
  }
  if (tcp_check_flags(c, &g) != 0)
    return;
  c->claim = (int)g.rank;
  tcp_begin_auth(c);
}

/* The listener got the dialer's proof: only now does its claim count. */
static void tcp_proof_in(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  uint32_t rank = (uint32_t)c->claim;
  mmp__tp_conn_t *old;
  const char *refused;
  char why[96];

  if (c->cur.type != MMP__F_PROOF) {
    tcp_fail(c, MMP_EPROTO, "second frame is not PROOF", 1);
    return;
  }
  if (!mmp__auth_check(&c->auth, MMP__AUTH_DIALER, MMP__AUTH_PROVE, c->hs_in)) {
    tcp_fail(c, MMP_EAUTH, "wrong job key (the peer's proof does not verify)",
             1);
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
    if (tcp_send_proof(c, MMP__F_HELLO_NACK, MMP__AUTH_REFUSE,
                       MMP__NACK_DUPLICATE) != 0)
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
  if (tcp_send_proof(c, MMP__F_HELLO_ACK, MMP__AUTH_ACCEPT, 0) != 0) {
    tcp_fail(c, MMP_EPEERLOST, "cannot send HELLO_ACK", 0);
    return;
  }
  tcp_up(c);
}

/* The dialer got the listener's greeting: it must be the rank we dialled,
 * in this job, sealing as we do. Then we prove the key. */
static void tcp_challenge_in(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  mmp__greet_t g;
  char why[96];

  if (c->cur.type != MMP__F_CHALLENGE || mmp__greet_decode(c->hs_in, &g) != 0 ||
      g.peer != MMP__GREET_ANY) {
    tcp_fail(c, MMP_EPROTO, "malformed CHALLENGE", 1);
    return;
  }
  if (g.rank != (uint32_t)c->peer || g.size != (uint32_t)tp->cfg.size) {
    snprintf(why, sizeof(why), "the peer is rank %u of %u, not rank %d of %d",
             g.rank, g.size, c->peer, tp->cfg.size);
    tcp_fail(c, MMP_EPROTO, why, 1);
    return;
  }
  if (tcp_check_flags(c, &g) != 0)
    return;
  tcp_begin_auth(c);
  if (tcp_send_proof(c, MMP__F_PROOF, MMP__AUTH_PROVE, 0) != 0)
    tcp_fail(c, MMP_EPEERLOST, "cannot send PROOF", 0);
}

/* The dialer got the listener's verdict and its proof. */
static void tcp_verdict_in(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  int nack = c->cur.type == MMP__F_HELLO_NACK;

  if (c->cur.type != MMP__F_HELLO_ACK && !nack) {
    tcp_fail(c, MMP_EPROTO, "bad handshake reply", 1);
    return;
  }
  if (!mmp__auth_check(&c->auth, MMP__AUTH_LISTENER,
                       nack ? MMP__AUTH_REFUSE : MMP__AUTH_ACCEPT, c->hs_in)) {
    tcp_fail(c, MMP_EAUTH,
             "peer does not hold the job key (its proof does not verify)", 1);
    return;
  }
  if (nack && c->superseded) {
    tcp_fail(c, 0, "superseded", 0);
    return;
  }
  if (nack) {
    /* The lower-ranked peer keeps its own connection to us. Wait for it,
     * but not forever. */
    mmp__auth_end(&c->auth);
    c->state = TCP_AWAIT;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_close((uv_handle_t *)&c->tcp, tcp_handle_closed);
    uv_timer_start(&c->timer, tcp_timeout, 2u * tp->cfg.handshake_timeout_ms,
                   0);
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

  if (c->sealed) {
    /* tcp_open_records left at most a partial record, at the front. */
    c->direct = 0;
    *buf = uv_buf_init((char *)c->sealed_in + c->swr,
                       (unsigned)(TCP_SEALED_SIZE - c->swr));
    return;
  }
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
    if (c->hs_got == 1 && c->outgoing)
      tcp_challenge_in(c);
    else if (c->hs_got == 1)
      tcp_hello_in(c);
    else if (c->outgoing)
      tcp_verdict_in(c);
    else
      tcp_proof_in(c);
    return c->state == TCP_UP || c->state == TCP_HANDSHAKE ? 0 : -1;
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
    if (!mmp__frame_is_handshake(c->cur.type)) {
      tcp_fail(c, MMP_EPROTO,
               c->hs_got == 0 && !c->outgoing ? "first frame is not HELLO"
                                              : "frame before the handshake "
                                                "finished",
               1);
      return -1;
    }
    if (c->cur.len != mmp__frame_hs_len(c->cur.type)) {
      tcp_fail(c, MMP_EPROTO, "handshake frame has the wrong length", 1);
      return -1;
    }
    /* Each side receives two: greeting and proof. A third can only come
     * while our HELLO_NACK is being written (the connection still
     * handshaking); answering it would reuse that NACK's write while it
     * is queued and count the connection out of npending twice. */
    if (c->hs_got == 2) {
      tcp_fail(c, MMP_EPROTO, "handshake frame after the handshake", 1);
      return -1;
    }
    c->hs_got++;
    c->sink.buf = c->hs_in;
    c->sink.len = (size_t)c->cur.len;
    return 0;
  }
  if (mmp__frame_is_handshake(c->cur.type)) {
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

/* Parses the plaintext in stage[rd, wr). Stops early when the handshake
 * ended and what follows is sealed (rx_switch). */
static void tcp_parse(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;

  while ((c->state == TCP_UP || c->state == TCP_HANDSHAKE ||
          c->state == TCP_SHUTDOWN) &&
         !c->rx_switch) {
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

/* Opens every whole record received and parses what it holds. A record
 * that lies wholly inside the payload being read is opened straight into
 * its sink, so large payloads are not copied twice. */
static void tcp_open_records(mmp__tp_conn_t *c) {
  while (c->state == TCP_UP || c->state == TCP_SHUTDOWN) {
    const uint8_t *rec = c->sealed_in + c->srd;
    size_t avail = c->swr - c->srd, plain = 0;
    const char *why = NULL;
    uint8_t *into;
    int direct;
    long n;

    if (avail < MMP__REC_HDR)
      break;
    direct = c->in_payload && c->rd == c->wr &&
             mmp__get_u32(rec) <= c->pay_left &&
             c->pay_off + mmp__get_u32(rec) <= c->sink.len;
    if (direct) {
      into = (uint8_t *)c->sink.buf + c->pay_off;
    } else {
      /* tcp_parse leaves at most a partial header behind. */
      if (c->rd > 0) {
        memmove(c->stage, c->stage + c->rd, c->wr - c->rd);
        c->wr -= c->rd;
        c->rd = 0;
      }
      assert(TCP_STAGE_SIZE - c->wr >= MMP__REC_MAX);
      into = c->stage + c->wr;
    }
    n = mmp__open(&c->rx, rec, avail, into, &plain, &why);
    if (n == 0)
      break;
    if (n < 0) {
      tcp_fail(c, MMP_EPROTO, why, 1);
      return;
    }
    c->srd += (size_t)n;
    if (direct) {
      c->pay_off += plain;
      c->pay_left -= plain;
      if (c->pay_left == 0 && tcp_payload_done(c) != 0)
        return;
    } else {
      c->wr += plain;
      tcp_parse(c);
    }
  }
  if (c->state != TCP_UP && c->state != TCP_SHUTDOWN)
    return;
  /* A partial record moves to the front, where the next read extends it. */
  if (c->srd == c->swr) {
    c->srd = c->swr = 0;
  } else if (c->srd > 0) {
    memmove(c->sealed_in, c->sealed_in + c->srd, c->swr - c->srd);
    c->swr -= c->srd;
    c->srd = 0;
  }
}

/* The handshake ended inside the plaintext just parsed: what is left of
 * it in stage[] is the start of the sealed stream. */
static void tcp_switch_sealed(mmp__tp_conn_t *c) {
  size_t n = c->wr - c->rd;

  c->rx_switch = 0;
  if (c->state != TCP_UP && c->state != TCP_SHUTDOWN)
    return;
  assert(!c->in_payload && n <= TCP_SEALED_SIZE);
  memcpy(c->sealed_in, c->stage + c->rd, n);
  c->srd = 0;
  c->swr = n;
  c->rd = c->wr = 0;
  tcp_open_records(c);
}

static void tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  mmp__tp_conn_t *c = s->data;
  (void)buf;

  if (nread < 0) {
    int partial = c->in_payload || c->wr > c->rd || c->swr > c->srd;
    if (nread == UV_EOF && partial)
      tcp_fail(c, MMP_EPEERLOST,
               "connection closed by peer in the middle of a frame", 0);
    else if (nread == UV_EOF)
      tcp_fail(c, c->state == TCP_SHUTDOWN ? 0 : MMP_EPEERLOST,
               c->state == TCP_HANDSHAKE
                   ? "connection closed by peer during the handshake"
                   : "connection closed by peer",
               0);
    else
      tcp_fail(c, mmp__err_from_uv((int)nread), uv_strerror((int)nread), 0);
    return;
  }
  if (nread == 0)
    return;
  if (c->tp->cfg.activity != NULL)
    (*c->tp->cfg.activity)++;
  /* A fresh clock: a long loop iteration must not date these bytes back
   * to its start (the heartbeat would take a live peer for a silent one).
   * Sealed records count too: they are bytes from the peer. */
  c->rx_ms = uv_hrtime() / 1000000;
  if (c->sealed) {
    c->swr += (size_t)nread;
    tcp_open_records(c);
    return;
  }
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
  if (c->rx_switch)
    tcp_switch_sealed(c);
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
      tcp_send_greeting(c) != 0)
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
  else if (tcp_send_greeting(c) != 0)
    tcp_fail(c, MMP_EIO, "cannot send CHALLENGE", 0);
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
  if (mmp__auth_init() != 0)
    return MMP_EIO;
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
