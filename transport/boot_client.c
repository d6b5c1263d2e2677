/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap client: one TCP connection from a rank to the job's
 * rendezvous server (boot.h). It sends HELLO once connected, answers the
 * server's CHALLENGE with PROOF, queues requests until WELCOME arrives with
 * the server's own proof, matches replies to requests by id and reports
 * EVENTs and the loss of the server.
 *
 * Lifetime. A client exists from a successful mmp__boot_client_start() until
 * the `done` of mmp__boot_client_close(), which the owner must always call,
 * also after a failed start or a lost connection: it is the only way the
 * object is freed. When the connection dies (connect failure, timeout,
 * ERROR, bad bytes, EOF) the start callback (if still due) and every
 * pending request complete with the error, then cb->lost runs once.
 *
 * A request lives in `queued` until it is written, then in `sent` until its
 * reply (or, for PUT and ABORT, its write) completes it. A completed request
 * whose write is still in flight is freed by the write callback.
 */
#include "boot.h"

#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "minimp.h"
#include "util.h"

#define BC_READ_BUF 65536
#define BC_MAX_HELLO (MMP__NONCE_LEN + 12 + 2 + 255)
#define BC_MAX_MSG 4096       /* EVENT and ERROR messages */
#define BC_BYE_LINGER_MS 1000 /* longest wait for BYE to be written */
#define BC_RETRY_FIRST_MS 20  /* first pause after a refused connect */
#define BC_RETRY_MAX_MS 500   /* the pause doubles up to this */

enum { BC_CONNECTING, BC_HELLO, BC_READY, BC_DEAD };

typedef struct bc_req_s {
  mmp__list_t node; /* in c->queued or c->sent while not completed */
  mmp__boot_client_t *c;
  uint8_t type;
  uint32_t id;
  mmp__boot_done_cb done;
  void *arg;
  uint8_t *buf; /* the encoded message until it is written */
  size_t len;
  uv_write_t wreq;
  int writing;
  int completed;
} bc_req_t;

struct mmp__boot_client_s {
  uv_loop_t *loop;
  uv_tcp_t tcp;
  uv_timer_t timer; /* start timeout, then the BYE linger */
  uv_timer_t retry; /* pause before dialling again */
  uv_connect_t creq;
  struct sockaddr_storage addr;
  unsigned retry_ms;
  int redialing;    /* tcp is being closed to dial again */
  int retry_closed; /* uv_close was called on retry */
  mmp__boot_client_cb_t cb;
  uint8_t key[MMP__JOB_KEY_LEN];
  int rank;
  int size;
  int state;
  int closing;       /* mmp__boot_client_close was called */
  int tcp_closed;    /* uv_close was called on tcp */
  int timer_closed;  /* uv_close was called on timer */
  int open;          /* handles whose close callback has not run */
  int lost_reported; /* cb.lost ran */
  mmp__boot_done_cb start_done;
  void *start_arg;
  struct sockaddr_storage *local;
  mmp__boot_done_cb close_done;
  void *close_arg;
  mmp__list_t queued;
  mmp__list_t sent;
  uint32_t next_id;
  uint32_t max_body; /* largest body accepted from the server */
  mmp__boot_rx_t rx; /* message reassembly */
  /* The handshake: our HELLO body, kept for the transcript. */
  uint8_t hello[BC_MAX_HELLO];
  size_t hello_len;
  int challenged; /* CHALLENGE arrived and PROOF is on its way */
  mmp__auth_t auth;
  int seal;        /* mmp__boot_client_seal: this rank seals */
  mmp__seal_t *tx; /* once sealed, after WELCOME */
  uint8_t rbuf[BC_READ_BUF];
};

static void bc_die(mmp__boot_client_t *c, int err, const char *reason);

/* ---- Requests ------------------------------------------------------------ */

static void bc_req_free(bc_req_t *r) {
  free(r->buf);
  free(r);
}

/* Runs the request's callback once; frees it unless a write is in flight. */
static void bc_complete(bc_req_t *r, int status, size_t count,
                        const uint8_t *const *values, const size_t *lens) {
  if (r->completed)
    return;
  r->completed = 1;
  mmp__list_remove(&r->node);
  if (r->done != NULL)
    r->done(r->arg, status, count, values, lens);
  if (!r->writing)
    bc_req_free(r);
}

/* Completes the first request of `l` whose reply is still due; 0 if none.
 * One at a time, so callbacks may close the client meanwhile. */
static int bc_fail_one(mmp__list_t *l, int err, int replies_only) {
  mmp__list_t *it;

  mmp__list_foreach(it, l) {
    bc_req_t *r = mmp__container_of(it, bc_req_t, node);
    if (replies_only && (r->type == MMP__B_PUT || r->type == MMP__B_ABORT ||
                         r->type == MMP__B_SUSPECT || r->type == MMP__B_BYE ||
                         r->type == MMP__B_HELLO || r->type == MMP__B_PROOF))
      continue;
    bc_complete(r, err, 0, NULL, NULL);
    return 1;
  }
  return 0;
}

static void bc_fail_all(mmp__boot_client_t *c, int err) {
  while (bc_fail_one(&c->queued, err, 0) || bc_fail_one(&c->sent, err, 0))
    ;
}

static void bc_start_done(mmp__boot_client_t *c, int status) {
  mmp__boot_done_cb done = c->start_done;

  c->start_done = NULL;
  if (done != NULL)
    done(c->start_arg, status, 0, NULL, NULL);
}

static void bc_on_bye_written(mmp__boot_client_t *c);

static void bc_on_write(uv_write_t *wreq, int status) {
  bc_req_t *r = mmp__container_of(wreq, bc_req_t, wreq);
  mmp__boot_client_t *c = r->c;
  int err;

  r->writing = 0;
  free(r->buf);
  r->buf = NULL;
  if (r->type == MMP__B_BYE) {
    bc_complete(r, 0, 0, NULL, NULL);
    bc_on_bye_written(c);
    return;
  }
  if (r->completed) {
    /* A reply or a failure completed it; only the write kept it alive. */
    bc_req_free(r);
    return;
  }
  if (status < 0) {
    err = c->closing ? MMP_ESHUTDOWN : mmp__err_from_uv(status);
    bc_complete(r, err, 0, NULL, NULL);
    bc_die(c, err, "write to the bootstrap server failed");
    return;
  }
  if (r->type == MMP__B_PUT || r->type == MMP__B_ABORT ||
      r->type == MMP__B_SUSPECT || r->type == MMP__B_HELLO ||
      r->type == MMP__B_PROOF)
    bc_complete(r, 0, 0, NULL, NULL);
}

/* Hands a request to libuv; it moves to `sent`. */
static int bc_write(mmp__boot_client_t *c, bc_req_t *r) {
  uv_buf_t b;
  int rc;

  /* Requests are written once each, in order: their records' numbers. */
  if (c->tx != NULL && mmp__boot_seal_msg(c->tx, &r->buf, &r->len) != 0)
    return MMP_ENOMEM;
  b = uv_buf_init((char *)r->buf, (unsigned)r->len);
  rc = uv_write(&r->wreq, (uv_stream_t *)&c->tcp, &b, 1, bc_on_write);
  if (rc != 0)
    return mmp__err_from_uv(rc);
  r->writing = 1;
  mmp__list_remove(&r->node);
  mmp__list_insert_tail(&c->sent, &r->node);
  return 0;
}

/* Loop context. Builds a request from a finished writer and queues or
 * writes it. */
static int bc_submit(mmp__boot_client_t *c, mmp__boot_wr_t *w, uint8_t type,
                     mmp__boot_done_cb done, void *arg) {
  bc_req_t *r;
  int rc;

  MMP__ASSERT_LOOP_OF(c->loop);
  if (c->closing) {
    free(w->buf);
    return MMP_ESHUTDOWN;
  }
  if (c->state == BC_DEAD) {
    free(w->buf);
    return MMP_EPEERLOST;
  }
  r = calloc(1, sizeof(*r));
  if (r == NULL) {
    free(w->buf);
    return MMP_ENOMEM;
  }
  if (++c->next_id == 0)
    c->next_id = 1;
  r->id = c->next_id;
  if (mmp__boot_wr_finish(w, type, r->id) != 0) {
    free(r);
    return MMP_ENOMEM;
  }
  r->c = c;
  r->type = type;
  r->done = done;
  r->arg = arg;
  r->buf = w->buf;
  r->len = w->len;
  mmp__list_init(&r->node);
  mmp__list_insert_tail(&c->queued, &r->node);
  /* The handshake goes out while connecting; the rest waits for WELCOME. */
  if (c->state == BC_READY || ((type == MMP__B_HELLO || type == MMP__B_PROOF) &&
                               c->state == BC_HELLO)) {
    rc = bc_write(c, r);
    if (rc != 0) {
      mmp__list_remove(&r->node);
      bc_req_free(r);
      return rc;
    }
  }
  return 0;
}

/* ---- Connection end ------------------------------------------------------ */

static void bc_final(mmp__boot_client_t *c) {
  mmp__boot_done_cb done = c->close_done;
  void *arg = c->close_arg;

  if (!c->lost_reported && c->cb.lost != NULL) {
    c->lost_reported = 1;
    c->cb.lost(c->cb.ctx, 0, "closed");
  }
  /* Every request completed before the handles closed; these are only
   * requests whose completion raced with the close. */
  bc_fail_all(c, MMP_ESHUTDOWN);
  mmp__boot_rx_fini(&c->rx);
  mmp__auth_end(&c->auth);
  if (c->tx != NULL)
    mmp__auth_wipe(c->tx, sizeof(*c->tx));
  free(c->tx);
  free(c);
  if (done != NULL)
    done(arg, 0, 0, NULL, NULL);
}

static void bc_on_close(uv_handle_t *h) {
  mmp__boot_client_t *c = h->data;

  if (--c->open == 0)
    bc_final(c);
}

static void bc_close_tcp(mmp__boot_client_t *c) {
  if (!c->tcp_closed) {
    c->tcp_closed = 1;
    /* A socket already closing to be redialled finishes in
     * bc_on_redial_close, which sees tcp_closed and stops there. */
    if (!c->redialing)
      uv_close((uv_handle_t *)&c->tcp, bc_on_close);
  }
}

static void bc_close_all(mmp__boot_client_t *c) {
  bc_close_tcp(c);
  if (!c->timer_closed) {
    c->timer_closed = 1;
    uv_close((uv_handle_t *)&c->timer, bc_on_close);
  }
  if (!c->retry_closed) {
    c->retry_closed = 1;
    uv_close((uv_handle_t *)&c->retry, bc_on_close);
  }
}

/*
 * The connection is gone: closes the socket, fails the start and every
 * pending request with `err` and reports cb->lost. During close() only the
 * socket is closed; close() reports the rest.
 */
static void bc_die(mmp__boot_client_t *c, int err, const char *reason) {
  if (c->state == BC_DEAD)
    return;
  c->state = BC_DEAD;
  bc_close_tcp(c);
  if (c->closing) {
    bc_close_all(c);
    return;
  }
  uv_timer_stop(&c->timer);
  uv_timer_stop(&c->retry);
  MMP__LOG(MMP__LOG_DEBUG, "bootstrap client: connection lost: %s", reason);
  bc_start_done(c, err);
  bc_fail_all(c, err);
  if (!c->lost_reported && !c->closing) {
    c->lost_reported = 1;
    if (c->cb.lost != NULL)
      c->cb.lost(c->cb.ctx, err, reason);
  }
}

static void bc_protocol_error(mmp__boot_client_t *c, const char *why) {
  MMP__LOG(MMP__LOG_WARN, "bootstrap client: bad message from the server: %s",
           why);
  bc_die(c, MMP_EPROTO, why);
}

static void bc_on_bye_written(mmp__boot_client_t *c) {
  c->state = BC_DEAD;
  bc_close_all(c);
}

static void bc_on_linger(uv_timer_t *t) {
  mmp__boot_client_t *c = t->data;

  c->state = BC_DEAD;
  bc_close_all(c);
}

/* ---- Receiving ----------------------------------------------------------- */

static bc_req_t *bc_find(mmp__boot_client_t *c, uint32_t id) {
  mmp__list_t *it;

  mmp__list_foreach(it, &c->sent) {
    bc_req_t *r = mmp__container_of(it, bc_req_t, node);
    if (r->id == id)
      return r;
  }
  return NULL;
}

static void bc_on_values(mmp__boot_client_t *c, bc_req_t *r,
                         mmp__boot_rd_t *rd) {
  uint32_t count = mmp__boot_rd_u32(rd);
  uint32_t want = r->type == MMP__B_GETALL ? (uint32_t)c->size : 1;
  const uint8_t **vals;
  size_t *lens, i;

  if (rd->bad || count != want) {
    bc_protocol_error(c, "VALUES with a wrong count");
    return;
  }
  /* count is the job size or 1, never a number taken from the wire. */
  vals = malloc(count * sizeof(*vals));
  lens = malloc(count * sizeof(*lens));
  if (vals == NULL || lens == NULL) {
    free(vals);
    free(lens);
    bc_complete(r, MMP_ENOMEM, 0, NULL, NULL);
    return;
  }
  for (i = 0; i < count; i++)
    lens[i] = mmp__boot_rd_blob(rd, &vals[i], MMP__BOOT_MAX_VALUE);
  if (rd->bad || rd->left != 0)
    bc_protocol_error(c, "malformed VALUES");
  else
    bc_complete(r, 0, count, vals, lens);
  free(vals);
  free(lens);
}

static void bc_on_event(mmp__boot_client_t *c, mmp__boot_rd_t *rd) {
  uint32_t kind = mmp__boot_rd_u32(rd);
  int32_t rank = (int32_t)mmp__boot_rd_u32(rd);
  int32_t code = (int32_t)mmp__boot_rd_u32(rd);
  const char *msg;
  size_t n = mmp__boot_rd_str(rd, &msg, BC_MAX_MSG);
  char msgz[BC_MAX_MSG + 1];

  if (rd->bad || rd->left != 0) {
    bc_protocol_error(c, "malformed EVENT");
    return;
  }
  memcpy(msgz, msg, n);
  msgz[n] = '\0';
  if (!c->closing && c->cb.event != NULL)
    c->cb.event(c->cb.ctx, kind, (int)rank, (int)code, msgz);
}

static void bc_on_error(mmp__boot_client_t *c, uint32_t id,
                        mmp__boot_rd_t *rd) {
  int32_t code = (int32_t)mmp__boot_rd_u32(rd);
  const char *msg;
  size_t n = mmp__boot_rd_str(rd, &msg, BC_MAX_MSG);
  char msgz[BC_MAX_MSG + 32];
  bc_req_t *r;

  if (rd->bad || rd->left != 0) {
    bc_protocol_error(c, "malformed ERROR");
    return;
  }
  if (code >= 0)
    code = MMP_EPROTO;
  snprintf(msgz, sizeof(msgz), "server: %.*s", (int)n, msg);
  MMP__LOG(MMP__LOG_DEBUG, "bootstrap client: ERROR %d from the server: %s",
           (int)code, msgz);
  r = id != 0 ? bc_find(c, id) : NULL;
  if (r != NULL)
    bc_complete(r, code, 0, NULL, NULL);
  bc_die(c, code, msgz);
}

/* The server's nonce and flags: prove the key over both bodies. This
 * connection seals as the server says; a rank whose own setting differs
 * says so here, and its connections to the other ranks refuse the
 * mismatch (tcp.c), which fails the job on every rank. */
static void bc_on_challenge(mmp__boot_client_t *c, const uint8_t *body) {
  uint32_t flags = mmp__get_u32(body + MMP__NONCE_LEN);
  uint8_t mac[MMP__MAC_LEN];
  mmp__boot_wr_t w;
  int rc;

  if (flags & ~(uint32_t)MMP__BOOT_SEAL) {
    bc_protocol_error(c, "CHALLENGE with unknown flags");
    return;
  }
  if (((flags & MMP__BOOT_SEAL) != 0) != c->seal)
    MMP__LOG(MMP__LOG_ERROR,
             "the rendezvous server %s and this rank %s: set MINIMP_ENCRYPT "
             "(minimprun --encrypt) alike for the whole job",
             c->seal ? "does not seal" : "seals (MINIMP_ENCRYPT=1)",
             c->seal ? "does (MINIMP_ENCRYPT=1)" : "does not");
  c->seal = (flags & MMP__BOOT_SEAL) != 0;
  c->challenged = 1;
  mmp__auth_begin(&c->auth, c->key, MMP__AUTH_BOOT, c->hello, c->hello_len,
                  body, MMP__BOOT_CHALLENGE_LEN);
  mmp__auth_mac(&c->auth, MMP__AUTH_DIALER, MMP__AUTH_PROVE, mac);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, mac, sizeof(mac));
  rc = bc_submit(c, &w, MMP__B_PROOF, NULL, NULL);
  if (rc != 0)
    bc_die(c, rc, "cannot answer the bootstrap server's challenge");
}

static void bc_on_welcome(mmp__boot_client_t *c, const uint8_t *body) {
  uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
  mmp__list_t *it;
  int rc = 0;

  if (!mmp__auth_check(&c->auth, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, body)) {
    MMP__LOG(MMP__LOG_ERROR,
             "the rendezvous server does not hold the job key (its proof "
             "does not verify)");
    bc_die(c, MMP_EAUTH, "the bootstrap server's proof does not verify");
    return;
  }
  /* What follows WELCOME each way is sealed if CHALLENGE said so. */
  if (c->seal) {
    mmp__auth_session_keys(&c->auth, c->key, d2l, l2d);
    c->tx = calloc(1, sizeof(*c->tx));
    rc = c->tx == NULL ? MMP_ENOMEM : mmp__boot_rx_seal(&c->rx, l2d);
    if (c->tx != NULL)
      memcpy(c->tx->key, d2l, sizeof(d2l));
    mmp__auth_wipe(d2l, sizeof(d2l));
    mmp__auth_wipe(l2d, sizeof(l2d));
  }
  mmp__auth_end(&c->auth);
  if (rc != 0) {
    bc_die(c, rc, "out of memory");
    return;
  }
  c->state = BC_READY;
  uv_timer_stop(&c->timer);
  bc_start_done(c, 0);
  /* The callback may have closed the client or queued more. */
  while (c->state == BC_READY && !c->closing &&
         (it = mmp__list_head(&c->queued)) != NULL) {
    bc_req_t *r = mmp__container_of(it, bc_req_t, node);
    rc = bc_write(c, r);
    if (rc != 0) {
      bc_die(c, rc, "write to the bootstrap server failed");
      return;
    }
  }
}

static void bc_dispatch(mmp__boot_client_t *c, const mmp__boot_hdr_t *h,
                        const uint8_t *body) {
  mmp__boot_rd_t rd;
  bc_req_t *r;

  mmp__boot_rd_init(&rd, body, h->len);
  if (c->closing && h->type != MMP__B_ERROR)
    return; /* only draining until the socket closes */
  switch (h->type) {
  case MMP__B_CHALLENGE:
    bc_on_challenge(c, body);
    break;
  case MMP__B_WELCOME:
    bc_on_welcome(c, body);
    break;
  case MMP__B_VALUES:
    r = bc_find(c, h->id);
    if (r != NULL && !r->completed)
      bc_on_values(c, r, &rd);
    break;
  case MMP__B_FENCE_DONE:
    r = bc_find(c, h->id);
    if (r != NULL)
      bc_complete(r, 0, 0, NULL, NULL);
    break;
  case MMP__B_EVENT:
    bc_on_event(c, &rd);
    break;
  case MMP__B_ERROR:
    bc_on_error(c, h->id, &rd);
    break;
  default:
    break;
  }
}

/* Validates a header against the state and the pending requests. */
static int bc_check_hdr(mmp__boot_client_t *c, const char **why) {
  const mmp__boot_hdr_t *h = &c->rx.hdr;
  bc_req_t *r;
  uint32_t max;

  if (mmp__boot_hdr_decode(c->rx.hbuf, c->max_body, &c->rx.hdr, why) != 0)
    return MMP_EPROTO;
  if (c->state != BC_READY && h->type != MMP__B_WELCOME &&
      h->type != MMP__B_CHALLENGE && h->type != MMP__B_ERROR) {
    *why = "message before WELCOME";
    return MMP_EPROTO;
  }
  switch (h->type) {
  case MMP__B_CHALLENGE:
  case MMP__B_WELCOME:
    /* Each once, in this order, and exactly as long as it must be. */
    if (c->state != BC_HELLO || c->challenged != (h->type == MMP__B_WELCOME) ||
        h->len != (h->type == MMP__B_CHALLENGE ? MMP__BOOT_CHALLENGE_LEN
                                               : MMP__MAC_LEN)) {
      *why = h->type == MMP__B_CHALLENGE ? "unexpected CHALLENGE"
                                         : "unexpected WELCOME";
      return MMP_EPROTO;
    }
    max = h->len;
    break;
  case MMP__B_VALUES:
  case MMP__B_FENCE_DONE:
    r = bc_find(c, h->id);
    if (c->closing && r == NULL)
      return 0; /* replies to requests that close() already failed */
    if (r == NULL ||
        (h->type == MMP__B_FENCE_DONE) != (r->type == MMP__B_FENCE) ||
        (h->type == MMP__B_VALUES && r->type != MMP__B_GET &&
         r->type != MMP__B_GETALL)) {
      *why = "reply to no pending request";
      return MMP_EPROTO;
    }
    if (h->type == MMP__B_FENCE_DONE)
      max = 0;
    else if (r->type == MMP__B_GET)
      max = 4 + 4 + MMP__BOOT_MAX_VALUE;
    else
      max = c->max_body;
    break;
  case MMP__B_EVENT:
    max = 12 + 2 + BC_MAX_MSG;
    break;
  case MMP__B_ERROR:
    max = 4 + 2 + BC_MAX_MSG;
    break;
  default:
    *why = "message type not sent by servers";
    return MMP_EPROTO;
  }
  if (h->len > max) {
    *why = "body too long for its message type";
    return MMP_EPROTO;
  }
  return 0;
}

static int bc_rx_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)rx;
  return bc_check_hdr(ctx, why) == 0 ? 0 : MMP_EPROTO;
}

static void bc_rx_message(void *ctx, const mmp__boot_hdr_t *h,
                          const uint8_t *body) {
  bc_dispatch(ctx, h, body);
}

static void bc_rx_error(void *ctx, int err, const char *why) {
  if (err == MMP_EPROTO)
    bc_protocol_error(ctx, why);
  else
    bc_die(ctx, err, why);
}

static int bc_rx_closed(void *ctx) {
  return ((mmp__boot_client_t *)ctx)->state == BC_DEAD;
}

static const mmp__boot_rx_ops_t bc_rx_ops = {bc_rx_header, bc_rx_message,
                                             bc_rx_error, bc_rx_closed};

static void bc_consume(mmp__boot_client_t *c, const uint8_t *p, size_t n) {
  mmp__boot_rx_feed(&c->rx, p, n, &bc_rx_ops, c);
}

static void bc_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  mmp__boot_client_t *c = h->data;

  (void)hint;
  *buf = uv_buf_init((char *)c->rbuf, sizeof(c->rbuf));
}

static void bc_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  mmp__boot_client_t *c = st->data;
  char reason[96];

  if (nread > 0) {
    bc_consume(c, (const uint8_t *)buf->base, (size_t)nread);
    return;
  }
  if (nread == 0)
    return;
  if (nread == UV_EOF)
    snprintf(reason, sizeof(reason),
             "the bootstrap server closed the connection");
  else
    snprintf(reason, sizeof(reason), "bootstrap connection error: %s",
             uv_strerror((int)nread));
  bc_die(c,
         c->state == BC_READY || nread != UV_EOF ? mmp__err_from_uv((int)nread)
                                                 : MMP_EBOOT,
         reason);
}

/* ---- Connecting ---------------------------------------------------------- */

static void bc_on_timeout(uv_timer_t *t) {
  mmp__boot_client_t *c = t->data;

  MMP__LOG(MMP__LOG_WARN, "bootstrap client: no WELCOME from the server "
                          "in time");
  bc_die(c, MMP_ETIMEDOUT, "timed out connecting to the bootstrap server");
}

static int bc_send_hello(mmp__boot_client_t *c) {
  uint8_t nonce[MMP__NONCE_LEN];
  mmp__boot_wr_t w;
  char host[256];
  size_t hlen = sizeof(host);

  if (uv_os_gethostname(host, &hlen) != 0)
    hlen = 0;
  if (hlen > 255)
    hlen = 255;
  mmp__auth_nonce(nonce);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
  mmp__boot_wr_u32(&w, (uint32_t)c->rank);
  mmp__boot_wr_u32(&w, (uint32_t)c->size);
  mmp__boot_wr_u32(&w, (uint32_t)uv_os_getpid());
  mmp__boot_wr_str(&w, host, hlen);
  if (w.oom) {
    free(w.buf);
    return MMP_ENOMEM;
  }
  /* The transcript needs the body exactly as sent. */
  c->hello_len = w.len - MMP__BOOT_HDR_SIZE;
  assert(c->hello_len <= sizeof(c->hello));
  memcpy(c->hello, w.buf + MMP__BOOT_HDR_SIZE, c->hello_len);
  return bc_submit(c, &w, MMP__B_HELLO, NULL, NULL);
}

static void bc_on_connect(uv_connect_t *req, int status);

static void bc_redial(uv_timer_t *t) {
  mmp__boot_client_t *c = t->data;
  int rc;

  if (c->state != BC_CONNECTING || c->closing)
    return;
  rc = uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&c->addr,
                      bc_on_connect);
  if (rc != 0)
    bc_die(c, mmp__err_from_uv(rc), "cannot connect to the bootstrap server");
}

/* The refused socket is closed: make a fresh one and dial again later. */
static void bc_on_redial_close(uv_handle_t *h) {
  mmp__boot_client_t *c = h->data;

  c->redialing = 0;
  if (c->tcp_closed) {
    /* Closed or died meanwhile: this was the socket's final close. */
    bc_on_close(h);
    return;
  }
  uv_tcp_init(c->loop, &c->tcp);
  c->tcp.data = c;
  uv_timer_start(&c->retry, bc_redial, c->retry_ms, 0);
  c->retry_ms =
      c->retry_ms * 2 < BC_RETRY_MAX_MS ? c->retry_ms * 2 : BC_RETRY_MAX_MS;
}

static void bc_on_connect(uv_connect_t *req, int status) {
  mmp__boot_client_t *c = req->data;
  char reason[96];
  int n, rc;

  if (c->state == BC_DEAD)
    return; /* timed out or closed meanwhile */
  if (status == UV_ECONNREFUSED && !c->closing) {
    /* The server may simply not be listening yet (an embedded job whose
     * hosting rank starts last): try again until the start timeout. */
    MMP__LOG(MMP__LOG_DEBUG, "bootstrap client: refused, retrying in %u ms",
             c->retry_ms);
    c->redialing = 1;
    uv_close((uv_handle_t *)&c->tcp, bc_on_redial_close);
    return;
  }
  if (status < 0) {
    snprintf(reason, sizeof(reason),
             "cannot connect to the bootstrap server: %s", uv_strerror(status));
    bc_die(c, mmp__err_from_uv(status), reason);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  if (c->local != NULL) {
    n = sizeof(*c->local);
    if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)c->local, &n) != 0)
      memset(c->local, 0, sizeof(*c->local));
  }
  c->state = BC_HELLO;
  rc = uv_read_start((uv_stream_t *)&c->tcp, bc_alloc, bc_on_read);
  if (rc == 0)
    rc = bc_send_hello(c);
  else
    rc = mmp__err_from_uv(rc);
  if (rc != 0)
    bc_die(c, rc, "cannot start the bootstrap handshake");
}

/* ---- Public -------------------------------------------------------------- */

/* A peer that resets its connection makes writev() raise SIGPIPE, whose
 * default action would kill the process: what arrives on a socket must
 * never do that. An application that installed its own disposition keeps
 * it. */
static void bc_ignore_sigpipe(void) {
  struct sigaction sa;

  if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
}

void mmp__boot_client_seal(mmp__boot_client_t *c) {
  MMP__ASSERT_LOOP_OF(c->loop);
  assert(!c->challenged);
  c->seal = 1;
}

int mmp__boot_client_start(uv_loop_t *loop, const struct sockaddr *addr,
                           const uint8_t key[MMP__JOB_KEY_LEN], int rank,
                           int size, unsigned timeout_ms,
                           const mmp__boot_client_cb_t *cb,
                           mmp__boot_done_cb done, void *arg,
                           struct sockaddr_storage *local,
                           mmp__boot_client_t **out) {
  mmp__boot_client_t *c;
  uint64_t all;
  int rc;

  MMP__ASSERT_LOOP_OF(loop);
  if (loop == NULL || addr == NULL || key == NULL || out == NULL || size < 1 ||
      rank < 0 || rank >= size ||
      (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
    return MMP_EINVAL;
  if (mmp__auth_init() != 0)
    return MMP_EIO;
  c = calloc(1, sizeof(*c));
  if (c == NULL)
    return MMP_ENOMEM;
  c->loop = loop;
  memcpy(c->key, key, MMP__JOB_KEY_LEN);
  c->rank = rank;
  c->size = size;
  if (cb != NULL)
    c->cb = *cb;
  c->start_done = done;
  c->start_arg = arg;
  c->local = local;
  mmp__list_init(&c->queued);
  mmp__list_init(&c->sent);
  /* A GETALL answer carries one value per rank; nothing else is larger. */
  all = 4 + (uint64_t)size * (4 + MMP__BOOT_MAX_VALUE);
  c->max_body = all < MMP__BOOT_MAX_BODY ? MMP__BOOT_MAX_BODY
                : all > UINT32_MAX       ? UINT32_MAX
                                         : (uint32_t)all;
  c->state = BC_CONNECTING;
  bc_ignore_sigpipe();
  uv_tcp_init(loop, &c->tcp);
  uv_timer_init(loop, &c->timer);
  uv_timer_init(loop, &c->retry);
  c->tcp.data = c;
  c->timer.data = c;
  c->retry.data = c;
  c->creq.data = c;
  c->open = 3;
  c->retry_ms = BC_RETRY_FIRST_MS;
  memcpy(&c->addr, addr,
         addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                    : sizeof(struct sockaddr_in6));
  rc = uv_tcp_connect(&c->creq, &c->tcp, addr, bc_on_connect);
  if (rc != 0) {
    /* Freed silently from the close callbacks; no callback runs. */
    c->start_done = NULL;
    c->closing = 1;
    c->lost_reported = 1;
    c->state = BC_DEAD;
    bc_close_all(c);
    return mmp__err_from_uv(rc);
  }
  if (timeout_ms > 0)
    uv_timer_start(&c->timer, bc_on_timeout, timeout_ms, 0);
  *out = c;
  return 0;
}

static int bc_check_name(const char *name, size_t *n) {
  if (name == NULL)
    return MMP_EINVAL;
  *n = strlen(name);
  return *n >= 1 && *n <= MMP__BOOT_MAX_NAME ? 0 : MMP_EINVAL;
}

int mmp__boot_put(mmp__boot_client_t *c, const char *name, const void *val,
                  size_t len, mmp__boot_done_cb done, void *arg) {
  mmp__boot_wr_t w;
  size_t n;

  if (bc_check_name(name, &n) != 0 || (val == NULL && len > 0))
    return MMP_EINVAL;
  if (len > MMP__BOOT_MAX_VALUE)
    return MMP_ETOOBIG;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_str(&w, name, n);
  mmp__boot_wr_blob(&w, val, len);
  return bc_submit(c, &w, MMP__B_PUT, done, arg);
}

int mmp__boot_getall(mmp__boot_client_t *c, const char *name,
                     mmp__boot_done_cb done, void *arg) {
  mmp__boot_wr_t w;
  size_t n;

  if (bc_check_name(name, &n) != 0)
    return MMP_EINVAL;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_str(&w, name, n);
  return bc_submit(c, &w, MMP__B_GETALL, done, arg);
}

int mmp__boot_get(mmp__boot_client_t *c, int rank, const char *name,
                  mmp__boot_done_cb done, void *arg) {
  mmp__boot_wr_t w;
  size_t n;

  if (bc_check_name(name, &n) != 0)
    return MMP_EINVAL;
  if (rank < 0 || rank >= c->size)
    return MMP_ERANK;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, (uint32_t)rank);
  mmp__boot_wr_str(&w, name, n);
  return bc_submit(c, &w, MMP__B_GET, done, arg);
}

int mmp__boot_fence(mmp__boot_client_t *c, uint32_t epoch,
                    mmp__boot_done_cb done, void *arg) {
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, epoch);
  return bc_submit(c, &w, MMP__B_FENCE, done, arg);
}

int mmp__boot_abort(mmp__boot_client_t *c, int code, const char *msg,
                    mmp__boot_done_cb done, void *arg) {
  mmp__boot_wr_t w;
  size_t n = msg != NULL ? strlen(msg) : 0;

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, (uint32_t)code);
  mmp__boot_wr_str(&w, msg != NULL ? msg : "", n > BC_MAX_MSG ? BC_MAX_MSG : n);
  return bc_submit(c, &w, MMP__B_ABORT, done, arg);
}

int mmp__boot_suspect(mmp__boot_client_t *c, int rank, const char *reason,
                      mmp__boot_done_cb done, void *arg) {
  mmp__boot_wr_t w;
  size_t n = reason != NULL ? strlen(reason) : 0;

  if (rank < 0 || rank >= c->size)
    return MMP_ERANK;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, (uint32_t)rank);
  mmp__boot_wr_str(&w, reason != NULL ? reason : "",
                   n > BC_MAX_MSG ? BC_MAX_MSG : n);
  return bc_submit(c, &w, MMP__B_SUSPECT, done, arg);
}

void mmp__boot_client_close(mmp__boot_client_t *c, mmp__boot_done_cb done,
                            void *arg) {
  mmp__boot_wr_t w;
  int ready = c->state == BC_READY;

  MMP__ASSERT_LOOP_OF(c->loop);
  assert(!c->closing);
  c->closing = 1;
  c->close_done = done;
  c->close_arg = arg;
  bc_start_done(c, MMP_ESHUTDOWN);
  /* Requests awaiting a reply, or never written, fail now; PUT and ABORT
   * already in flight finish with their write. */
  while (bc_fail_one(&c->queued, MMP_ESHUTDOWN, 0) ||
         bc_fail_one(&c->sent, MMP_ESHUTDOWN, 1))
    ;
  if (ready && c->state == BC_READY) {
    /* bc_submit refuses while closing, so the BYE is queued by hand. */
    c->closing = 0;
    mmp__boot_wr_init(&w);
    if (bc_submit(c, &w, MMP__B_BYE, NULL, NULL) == 0) {
      c->closing = 1;
      uv_timer_stop(&c->timer);
      uv_timer_start(&c->timer, bc_on_linger, BC_BYE_LINGER_MS, 0);
      return;
    }
    c->closing = 1;
  }
  c->state = BC_DEAD;
  bc_close_all(c);
}
