/* SPDX-License-Identifier: MIT */
/*
 * The launcher's control protocol (ctrl.h): its header, the LAUNCH codec,
 * and a connection object both ends use, built on the bootstrap codec's
 * writer, reader and reassembler.
 *
 * A connection ends in one of two ways. Its owner closes it
 * (mmp__ctrl_conn_close), after which no callback runs; or it ends on its
 * own (peer gone, bad input, deadline), which the owner learns through
 * `ended`, once. Either way queued writes get CTRL_LINGER_MS to drain, so
 * an ERROR or a BYE reaches the peer, and the object is freed once both of
 * its handles are closed.
 */
#include "ctrl.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "transport/transport.h"
#include "transport/util.h"

/* The bootstrap decoder checks our types too, so they must fit its range. */
_Static_assert((int)MMP__C_TYPE_MAX <= (int)MMP__B_TYPE_MAX,
               "control message types beyond the bootstrap header's range");

#define CTRL_LINGER_MS 2000 /* time for queued writes after a close */
#define CTRL_READ_BUF 65536
#define CTRL_MAX_ERROR 1024 /* ERROR message bytes */

/* ---- Header ------------------------------------------------------------- */

int mmp__ctrl_hdr_decode(const uint8_t in[MMP__BOOT_HDR_SIZE],
                         mmp__boot_hdr_t *h, const char **why) {
  uint8_t b[MMP__BOOT_HDR_SIZE];
  int rc;

  if (mmp__get_u32(in) != MMP__CTRL_MAGIC) {
    *why = "bad magic";
    return MMP_EPROTO;
  }
  if (in[4] == 1) {
    *why = "peer speaks control protocol version 1, which sent the job key "
           "in clear (an older minimprun)";
    return MMP_EPROTO;
  }
  if (in[4] != MMP__CTRL_VERSION) {
    /* Versions from 2 on differ in what the handshake carries. */
    *why = "unsupported control protocol version (another minimprun "
           "version on the other side: install the same one on every host)";
    return MMP_EPROTO;
  }
  /* Past magic and version the layout is the bootstrap header's, so its
   * decoder checks the rest; then this protocol's types and caps. */
  memcpy(b, in, sizeof(b));
  mmp__put_u32(b, MMP__BOOT_MAGIC);
  b[4] = MMP__BOOT_VERSION;
  rc = mmp__boot_hdr_decode(b, MMP__CTRL_MAX_LAUNCH, h, why);
  if (rc == 0 && h->type > MMP__C_TYPE_MAX) {
    *why = "unknown message type";
    rc = MMP_EPROTO;
  } else if (rc == 0 && h->type != MMP__C_LAUNCH &&
             h->len > MMP__CTRL_MAX_BODY) {
    *why = "body length exceeds the maximum";
    rc = MMP_ETOOBIG;
  }
  return rc;
}

int mmp__ctrl_finish(mmp__boot_wr_t *w, uint8_t type) {
  int rc = mmp__boot_wr_finish(w, type, 0);

  if (rc == 0) {
    /* The bootstrap header with this protocol's magic and version. */
    mmp__put_u32(w->buf, MMP__CTRL_MAGIC);
    w->buf[4] = MMP__CTRL_VERSION;
  }
  return rc;
}

/* ---- LAUNCH ------------------------------------------------------------- */

static void ctrl_wr_string(mmp__boot_wr_t *w, const char *s) {
  mmp__boot_wr_blob(w, s, strlen(s));
}

static void ctrl_wr_list(mmp__boot_wr_t *w, char *const *v, int n) {
  int i;

  mmp__boot_wr_u32(w, (uint32_t)n);
  for (i = 0; i < n; i++)
    ctrl_wr_string(w, v[i]);
}

void mmp__ctrl_launch_begin(mmp__boot_wr_t *w, unsigned flags, const char *cwd,
                            char *const *argv, char *const *env, int nranks) {
  int argc = 0, nenv = 0;

  while (argv[argc] != NULL)
    argc++;
  while (env[nenv] != NULL)
    nenv++;
  mmp__boot_wr_u32(w, flags);
  ctrl_wr_string(w, cwd);
  ctrl_wr_list(w, argv, argc);
  ctrl_wr_list(w, env, nenv);
  mmp__boot_wr_u32(w, (uint32_t)nranks);
}

void mmp__ctrl_launch_rank(mmp__boot_wr_t *w, int rank, unsigned flags,
                           char *const *vars, int nvars) {
  mmp__boot_wr_u32(w, (uint32_t)rank);
  mmp__boot_wr_u32(w, flags);
  ctrl_wr_list(w, vars, nvars);
}

/*
 * A walk over a LAUNCH body. The first walk (out == NULL) validates and
 * counts what the decoded form needs; the second fills one block of that
 * size, so nothing is allocated before every length was checked.
 */
typedef struct ctrl_walk_s {
  mmp__boot_rd_t rd;
  const char *why;
  mmp__ctrl_rank_t *ranks; /* NULL while counting */
  char **ptrs;
  char *strs;
  size_t nranks, nptrs, nstrs; /* used so far */
} ctrl_walk_t;

static int ctrl_walk_bad(ctrl_walk_t *w, const char *why) {
  if (w->why == NULL)
    w->why = why;
  w->rd.bad = 1;
  return 0;
}

/* A count that the rest of the body can hold, each item `min` bytes. */
static uint32_t ctrl_walk_count(ctrl_walk_t *w, size_t min, uint32_t lo,
                                uint32_t hi) {
  uint32_t n = mmp__boot_rd_u32(&w->rd);

  if (w->rd.bad || n < lo || n > hi || n > w->rd.left / min) {
    ctrl_walk_bad(w, "bad count");
    return 0;
  }
  return n;
}

static char *ctrl_walk_str(ctrl_walk_t *w, int is_var) {
  const uint8_t *b;
  size_t n = mmp__boot_rd_blob(&w->rd, &b, MMP__CTRL_MAX_STR);
  const uint8_t *eq = memchr(b, '=', n);
  char *s = NULL;

  if (w->rd.bad)
    return ctrl_walk_bad(w, "truncated string"), NULL;
  if (memchr(b, '\0', n) != NULL)
    return ctrl_walk_bad(w, "NUL byte in a string"), NULL;
  if (is_var && (eq == NULL || eq == b))
    return ctrl_walk_bad(w, "variable without NAME="), NULL;
  if (w->strs != NULL) {
    s = w->strs + w->nstrs;
    memcpy(s, b, n);
    s[n] = '\0';
  }
  w->nstrs += n + 1;
  return s;
}

/* `n` strings and a NULL after them. */
static char **ctrl_walk_list(ctrl_walk_t *w, uint32_t n, int is_var) {
  char **v = w->ptrs != NULL ? w->ptrs + w->nptrs : NULL;
  uint32_t i;

  w->nptrs += (size_t)n + 1;
  for (i = 0; i < n && !w->rd.bad; i++) {
    char *s = ctrl_walk_str(w, is_var);
    if (v != NULL)
      v[i] = s;
  }
  if (v != NULL)
    v[n] = NULL;
  return v;
}

static void ctrl_walk(ctrl_walk_t *w, mmp__ctrl_launch_t *l) {
  uint32_t i, n;

  l->flags = mmp__boot_rd_u32(&w->rd);
  l->cwd = ctrl_walk_str(w, 0);
  n = ctrl_walk_count(w, 4, 1, INT32_MAX);
  l->argc = (int)n;
  l->argv = ctrl_walk_list(w, n, 0);
  n = ctrl_walk_count(w, 4, 0, INT32_MAX);
  l->nenv = (int)n;
  l->env = ctrl_walk_list(w, n, 1);
  n = ctrl_walk_count(w, 12, 1, MMP__CTRL_MAX_RANK);
  l->nranks = (int)n;
  l->ranks = w->ranks;
  for (i = 0; i < n && !w->rd.bad; i++) {
    mmp__ctrl_rank_t rk;
    rk.rank = (int)mmp__boot_rd_u32(&w->rd);
    rk.flags = mmp__boot_rd_u32(&w->rd);
    if (!w->rd.bad && (rk.rank < 0 || rk.rank >= MMP__CTRL_MAX_RANK))
      ctrl_walk_bad(w, "bad rank");
    rk.nvars = (int)ctrl_walk_count(w, 4, 0, INT32_MAX);
    rk.vars = ctrl_walk_list(w, (uint32_t)rk.nvars, 1);
    if (w->ranks != NULL)
      w->ranks[i] = rk;
  }
  w->nranks += n;
  if (!w->rd.bad && w->rd.left != 0)
    ctrl_walk_bad(w, "trailing bytes");
}

int mmp__ctrl_launch_decode(const uint8_t *body, size_t len,
                            mmp__ctrl_launch_t *l, const char **why) {
  ctrl_walk_t w;
  size_t rsize, psize;
  char *mem;

  memset(l, 0, sizeof(*l));
  memset(&w, 0, sizeof(w));
  mmp__boot_rd_init(&w.rd, body, len);
  ctrl_walk(&w, l);
  if (w.rd.bad) {
    *why = w.why != NULL ? w.why : "truncated body";
    memset(l, 0, sizeof(*l));
    return MMP_EPROTO;
  }
  /* Every count was bounded by the body's length, so these are too. */
  rsize = w.nranks * sizeof(mmp__ctrl_rank_t);
  psize = w.nptrs * sizeof(char *);
  mem = malloc(rsize + psize + w.nstrs);
  if (mem == NULL) {
    memset(l, 0, sizeof(*l));
    return MMP_ENOMEM;
  }
  memset(&w, 0, sizeof(w));
  w.ranks = (mmp__ctrl_rank_t *)(void *)mem;
  w.ptrs = (char **)(void *)(mem + rsize);
  w.strs = mem + rsize + psize;
  mmp__boot_rd_init(&w.rd, body, len);
  ctrl_walk(&w, l);
  l->mem = mem;
  return 0;
}

void mmp__ctrl_launch_free(mmp__ctrl_launch_t *l) {
  free(l->mem);
  memset(l, 0, sizeof(*l));
}

/* ---- Connection --------------------------------------------------------- */

enum { CTRL_OPEN = 0, CTRL_CLOSING };

struct mmp__ctrl_conn_s {
  uv_tcp_t tcp;
  uv_timer_t timer; /* the deadline, then the linger after a close */
  uv_connect_t creq;
  mmp__boot_rx_t rx;
  mmp__seal_t *tx; /* once sealed (mmp__ctrl_conn_seal) */
  const mmp__ctrl_cb_t *cb;
  void *data;
  void (*connected)(mmp__ctrl_conn_t *c);
  const char *deadline_why;
  size_t queued; /* bytes in writes not yet completed */
  unsigned writes;
  int state;
  int hclosing; /* uv_close ran on both handles */
  int open;     /* handles not yet closed */
  uint8_t rbuf[CTRL_READ_BUF];
};

typedef struct ctrl_write_s {
  uv_write_t req;
  mmp__ctrl_conn_t *conn;
  uint8_t *buf;
  size_t len;
} ctrl_write_t;

static void ctrl_end(mmp__ctrl_conn_t *c, const char *reason,
                     const char *error);

static void ctrl_on_handle_close(uv_handle_t *h) {
  mmp__ctrl_conn_t *c = h->data;

  if (--c->open > 0)
    return;
  mmp__boot_rx_fini(&c->rx);
  if (c->tx != NULL)
    mmp__auth_wipe(c->tx, sizeof(*c->tx));
  free(c->tx);
  free(c);
}

static void ctrl_close_handles(mmp__ctrl_conn_t *c) {
  if (c->hclosing)
    return;
  c->hclosing = 1;
  uv_close((uv_handle_t *)&c->tcp, ctrl_on_handle_close);
  uv_close((uv_handle_t *)&c->timer, ctrl_on_handle_close);
}

static void ctrl_on_linger(uv_timer_t *t) {
  ctrl_close_handles(t->data);
}

static void ctrl_on_deadline(uv_timer_t *t) {
  mmp__ctrl_conn_t *c = t->data;

  ctrl_end(c, c->deadline_why, c->deadline_why);
}

int mmp__ctrl_conn_alloc(uv_loop_t *loop, const mmp__ctrl_cb_t *cb, void *data,
                         mmp__ctrl_conn_t **out) {
  mmp__ctrl_conn_t *c = calloc(1, sizeof(*c));

  if (c == NULL)
    return MMP_ENOMEM;
  c->cb = cb;
  c->data = data;
  uv_tcp_init(loop, &c->tcp);
  uv_timer_init(loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->open = 2;
  *out = c;
  return 0;
}

void *mmp__ctrl_conn_data(const mmp__ctrl_conn_t *c) {
  return c->data;
}

void mmp__ctrl_conn_set_data(mmp__ctrl_conn_t *c, void *data) {
  c->data = data;
}

void mmp__ctrl_conn_peer(const mmp__ctrl_conn_t *c, char *out, size_t len) {
  struct sockaddr_storage ss;
  int n = sizeof(ss);

  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &n) != 0 ||
      mmp__addr_format((struct sockaddr *)&ss, out, len) != 0)
    snprintf(out, len, "?");
}

size_t mmp__ctrl_conn_queued(const mmp__ctrl_conn_t *c) {
  return c->queued;
}

void mmp__ctrl_conn_deadline(mmp__ctrl_conn_t *c, unsigned ms,
                             const char *why) {
  if (c->state != CTRL_OPEN)
    return;
  uv_timer_stop(&c->timer);
  c->deadline_why = why;
  if (ms > 0)
    uv_timer_start(&c->timer, ctrl_on_deadline, ms, 0);
}

static void ctrl_on_write(uv_write_t *req, int status) {
  ctrl_write_t *w = mmp__container_of(req, ctrl_write_t, req);
  mmp__ctrl_conn_t *c = w->conn;
  size_t before = c->queued;

  c->queued -= w->len;
  c->writes--;
  free(w->buf);
  free(w);
  if (c->state == CTRL_CLOSING) {
    if (c->writes == 0)
      ctrl_close_handles(c);
  } else if (status < 0) {
    ctrl_end(c, "write failed", NULL);
  } else if (before > MMP__CTRL_LOW_WATER && c->queued <= MMP__CTRL_LOW_WATER &&
             c->cb->drained != NULL) {
    c->cb->drained(c);
  }
}

int mmp__ctrl_send_buf(mmp__ctrl_conn_t *c, uint8_t *buf, size_t len) {
  ctrl_write_t *w;
  uv_buf_t b;
  int rc;

  if (c->hclosing) {
    free(buf);
    return UV_ECANCELED;
  }
  if (c->tx != NULL && mmp__boot_seal_msg(c->tx, &buf, &len) != 0) {
    ctrl_end(c, "out of memory", NULL);
    return MMP_ENOMEM;
  }
  w = malloc(sizeof(*w));
  if (w == NULL) {
    free(buf);
    ctrl_end(c, "out of memory", NULL);
    return MMP_ENOMEM;
  }
  w->conn = c;
  w->buf = buf;
  w->len = len;
  b = uv_buf_init((char *)buf, (unsigned)len);
  rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, ctrl_on_write);
  if (rc != 0) {
    free(buf);
    free(w);
    ctrl_end(c, "write failed", NULL);
    return rc;
  }
  c->writes++;
  c->queued += len;
  return 0;
}

int mmp__ctrl_send(mmp__ctrl_conn_t *c, uint8_t type, mmp__boot_wr_t *w) {
  if (mmp__ctrl_finish(w, type) != 0) {
    ctrl_end(c, "out of memory", NULL);
    return MMP_ENOMEM;
  }
  return mmp__ctrl_send_buf(c, w->buf, w->len);
}

int mmp__ctrl_conn_seal(mmp__ctrl_conn_t *c,
                        const uint8_t tx[MMP__SESSION_KEY_LEN],
                        const uint8_t rx[MMP__SESSION_KEY_LEN]) {
  assert(c->tx == NULL && c->rx.seal == NULL);
  c->tx = calloc(1, sizeof(*c->tx));
  if (c->tx == NULL || mmp__boot_rx_seal(&c->rx, rx) != 0) {
    ctrl_end(c, "out of memory", NULL);
    return MMP_ENOMEM;
  }
  memcpy(c->tx->key, tx, MMP__SESSION_KEY_LEN);
  return 0;
}

/* Stops reading; queues ERROR if `error`; closes once writes drained. */
static void ctrl_shut(mmp__ctrl_conn_t *c, const char *error) {
  if (c->state != CTRL_OPEN)
    return;
  if (error != NULL) {
    mmp__boot_wr_t w;
    size_t n = strlen(error);
    mmp__boot_wr_init(&w);
    mmp__boot_wr_u32(&w, (uint32_t)MMP_EPROTO);
    mmp__boot_wr_str(&w, error, n < CTRL_MAX_ERROR ? n : CTRL_MAX_ERROR);
    if (mmp__ctrl_finish(&w, MMP__C_ERROR) == 0)
      mmp__ctrl_send_buf(c, w.buf, w.len);
  }
  c->state = CTRL_CLOSING;
  uv_read_stop((uv_stream_t *)&c->tcp);
  uv_timer_stop(&c->timer);
  if (c->writes == 0) {
    ctrl_close_handles(c);
  } else {
    uv_timer_start(&c->timer, ctrl_on_linger, CTRL_LINGER_MS, 0);
  }
}

/* The connection ends on its own: tell the owner, then close. */
static void ctrl_end(mmp__ctrl_conn_t *c, const char *reason,
                     const char *error) {
  if (c->state != CTRL_OPEN)
    return;
  ctrl_shut(c, error);
  c->cb->ended(c, reason);
}

void mmp__ctrl_conn_close(mmp__ctrl_conn_t *c, const char *error) {
  if (c != NULL)
    ctrl_shut(c, error);
}

/* ---- Reading ------------------------------------------------------------ */

static int ctrl_rx_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)ctx;
  return mmp__ctrl_hdr_decode(rx->hbuf, &rx->hdr, why);
}

/* The peer's ERROR ends the connection with its message as the reason. */
static void ctrl_peer_error(mmp__ctrl_conn_t *c, const uint8_t *body,
                            size_t len) {
  mmp__boot_rd_t rd;
  const char *msg;
  char reason[CTRL_MAX_ERROR + 32];
  size_t n;

  mmp__boot_rd_init(&rd, body, len);
  (void)mmp__boot_rd_u32(&rd);
  n = mmp__boot_rd_str(&rd, &msg, CTRL_MAX_ERROR);
  if (rd.bad)
    snprintf(reason, sizeof(reason), "the peer sent a malformed ERROR");
  else
    snprintf(reason, sizeof(reason), "%.*s", (int)n, msg);
  ctrl_end(c, reason, NULL);
}

static void ctrl_rx_message(void *ctx, const mmp__boot_hdr_t *hdr,
                            const uint8_t *body) {
  mmp__ctrl_conn_t *c = ctx;

  if (hdr->type == MMP__C_ERROR)
    ctrl_peer_error(c, body, hdr->len);
  else
    c->cb->message(c, hdr->type, body, hdr->len);
}

static void ctrl_rx_error(void *ctx, int err, const char *why) {
  mmp__ctrl_conn_t *c = ctx;
  char reason[160];

  snprintf(reason, sizeof(reason), "protocol violation: %s", why);
  ctrl_end(c, reason, err == MMP_ENOMEM ? NULL : why);
}

static int ctrl_rx_closed(void *ctx) {
  return ((mmp__ctrl_conn_t *)ctx)->state != CTRL_OPEN;
}

static const mmp__boot_rx_ops_t ctrl_rx_ops = {ctrl_rx_header, ctrl_rx_message,
                                               ctrl_rx_error, ctrl_rx_closed};

static void ctrl_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  mmp__ctrl_conn_t *c = h->data;

  (void)hint;
  *buf = uv_buf_init((char *)c->rbuf, sizeof(c->rbuf));
}

static void ctrl_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  mmp__ctrl_conn_t *c = st->data;

  if (nread > 0)
    mmp__boot_rx_feed(&c->rx, (const uint8_t *)buf->base, (size_t)nread,
                      &ctrl_rx_ops, c);
  else if (nread == UV_EOF)
    ctrl_end(c, "connection closed", NULL);
  else if (nread < 0)
    ctrl_end(c, uv_strerror((int)nread), NULL);
}

static int ctrl_start_reading(mmp__ctrl_conn_t *c) {
  uv_tcp_nodelay(&c->tcp, 1);
  /* A host that vanishes without a FIN is noticed eventually. */
  uv_tcp_keepalive(&c->tcp, 1, 10);
  return uv_read_start((uv_stream_t *)&c->tcp, ctrl_alloc, ctrl_on_read);
}

int mmp__ctrl_conn_accept(mmp__ctrl_conn_t *c, uv_stream_t *server) {
  int rc = uv_accept(server, (uv_stream_t *)&c->tcp);

  return rc != 0 ? rc : ctrl_start_reading(c);
}

static void ctrl_on_connect(uv_connect_t *req, int status) {
  mmp__ctrl_conn_t *c = req->data;
  char reason[160];

  if (c->state != CTRL_OPEN)
    return;
  if (status < 0) {
    snprintf(reason, sizeof(reason), "cannot connect: %s", uv_strerror(status));
    ctrl_end(c, reason, NULL);
    return;
  }
  if (ctrl_start_reading(c) != 0) {
    ctrl_end(c, "cannot read from the connection", NULL);
    return;
  }
  c->connected(c);
}

int mmp__ctrl_conn_connect(mmp__ctrl_conn_t *c, const struct sockaddr *addr,
                           void (*connected)(mmp__ctrl_conn_t *c)) {
  c->connected = connected;
  c->creq.data = c;
  return uv_tcp_connect(&c->creq, &c->tcp, addr, ctrl_on_connect);
}
