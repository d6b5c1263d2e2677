/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap ("rendezvous") server: one libuv TCP listener and one
 * connection per rank, serving the key-value store and fences of boot.h.
 *
 * A connection starts unauthenticated: the server sends CHALLENGE at once,
 * and the client must send HELLO and then a PROOF that verifies within the
 * handshake timeout (boot.h), counted from its arrival. Every connection is
 * accepted as soon as it arrives, because one left in the kernel's backlog
 * has no deadline running: under a flood it could stay open for as long as
 * the flood lasts. At most BS_MAX_PENDING unauthenticated connections plus
 * one per rank that has not joined yet are kept; past that the oldest is
 * closed, so a burst of all the job's ranks always fits, and a rank, which
 * answers CHALLENGE at once, outlives a flood of strangers that never do.
 * Every header is validated and every body length is checked against a
 * per-type cap before a byte is allocated, so garbage from one connection
 * only ever closes that connection. A connection the server rejects gets an
 * ERROR first and is closed once it was written (or after BS_LINGER_MS).
 *
 * Rejections before the handshake finished (a malformed HELLO, a PROOF
 * that does not verify, no handshake in time, too many unauthenticated
 * connections) are logged at every log level, since a run under attack
 * must show it, but within a budget (mmp__ratelog_t: 10 lines per 10 s,
 * then one line counting the rest), so that a flood cannot flood the log.
 *
 * State is O(p) per name and per pending fence epoch. The VALUES body of a
 * GETALL is encoded once per name and shared, reference-counted, by every
 * reply, so answering all p ranks costs O(p) memory, not O(p^2).
 *
 * A rank is "gone" once it sent BYE or its connection ended. A gone rank
 * never contributes again, so every pending request that still needs it
 * (a fence it did not enter, a name it did not PUT) is answered with ERROR
 * MMP_EPEERLOST, which closes the waiter's connection in turn. The
 * resulting cascade runs from a work queue, never by recursion.
 */
#include "boot.h"

#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "minimp.h"
#include "transport.h"
#include "util.h"

#define BS_MAX_PENDING 64  /* strangers' unauthenticated connections */
#define BS_MAX_HOST 255    /* host name in HELLO */
#define BS_MAX_MSG 4096    /* ABORT message */
#define BS_READ_BUF 65536  /* staging buffer shared by all connections */
#define BS_MAX_NAMES 65536 /* distinct names in the store */
#define BS_MAX_FENCES 1024 /* fence epochs pending at once */
#define BS_MAX_WAITS 4096  /* pending GET/GETALL of one rank */
#define BS_MAX_STORED (256u << 20)     /* bytes of values in the store */
#define BS_MAX_WRITE_QUEUE (64u << 20) /* unsent bytes to one connection */
#define BS_LINGER_MS 1000     /* time to flush an ERROR before closing */
#define BS_MAX_SIZE (1 << 24) /* ranks in a job */
/* Per-rank slots of all names and fences together (about 13 bytes each). */
#define BS_MAX_SLOTS ((size_t)16 << 20)

enum { RS_NONE = 0, RS_JOINED, RS_BYE, RS_LOST };

/* An encoded message shared by several writes. `buf` starts with a spare
 * header (the writes carry their own, with their request id). */
typedef struct bs_body_s {
  unsigned refs;
  uint8_t *buf;
  size_t len; /* body bytes after the spare header */
} bs_body_t;

typedef struct bs_conn_s bs_conn_t;

typedef struct bs_write_s {
  uv_write_t req;
  bs_conn_t *conn;
  bs_body_t *body;
  uint8_t *sealed; /* on a sealed connection: the message's records */
  uint8_t hdr[MMP__BOOT_HDR_SIZE];
} bs_write_t;

struct bs_conn_s {
  mmp__list_t node;  /* in s->conns */
  mmp__list_t pnode; /* in s->pending while `pending` */
  mmp__boot_server_t *s;
  uv_tcp_t tcp;
  uv_timer_t timer; /* handshake deadline, then the linger on close */
  int rank;         /* -1 until the handshake finished */
  int pending;      /* counted in s->npending */
  int closing;      /* no more reads; writes drain */
  int hclosing;     /* uv_close was called on both handles */
  int open;         /* handles not yet closed */
  int bye;
  unsigned writes;   /* in flight */
  unsigned nwaits;   /* GET/GETALL waiters of this connection */
  mmp__boot_rx_t rx; /* message reassembly */
  /* The handshake: our CHALLENGE, then what HELLO claims until PROOF. */
  int hello; /* HELLO arrived; `auth` holds the transcript */
  uint32_t claim_rank, claim_size, claim_pid;
  char claim_host[256];
  uint8_t challenge[MMP__BOOT_CHALLENGE_LEN]; /* the CHALLENGE body */
  mmp__auth_t auth;
  mmp__seal_t *tx; /* once sealed, after WELCOME */
};

typedef struct bs_waiter_s {
  mmp__list_t node;
  int rank;    /* who asked */
  int want;    /* -1: GETALL, else GET of that rank */
  uint32_t id; /* request id to answer */
} bs_waiter_t;

typedef struct bs_name_s {
  mmp__list_t node;
  char name[MMP__BOOT_MAX_NAME];
  size_t nlen;
  int count;      /* ranks that PUT it */
  uint8_t *has;   /* [size] */
  uint8_t **vals; /* [size] */
  uint32_t *lens; /* [size] */
  bs_body_t *all; /* cached VALUES body of a complete name, or NULL */
  mmp__list_t waiters;
} bs_name_t;

typedef struct bs_fence_s {
  mmp__list_t node;
  uint32_t epoch;
  int count;
  uint8_t *in;   /* [size] entered */
  uint32_t *ids; /* [size] request ids */
} bs_fence_t;

struct mmp__boot_server_s {
  uv_loop_t *loop;
  uv_tcp_t listener;
  int size;
  uint8_t key[MMP__JOB_KEY_LEN];
  unsigned hs_timeout_ms;
  int seal;         /* connections are sealed after their handshake */
  uint8_t *scratch; /* MMP__REC_MAX bytes for mmp__seal, when sealing */
  mmp__boot_server_cb_t cb;
  mmp__list_t conns;
  mmp__list_t pending; /* unauthenticated connections, oldest first */
  unsigned npending;
  int njoined;         /* ranks whose handshake ever finished */
  int paused;          /* out of memory: a connection waits in libuv */
  unsigned live;       /* the listener, the log timer and every connection */
  uv_timer_t logtimer; /* ends an interval of the rejection log's budget */
  mmp__ratelog_t rl;   /* that budget */
  bs_conn_t **conn_of; /* [size] the joined connection of each rank */
  uint8_t *rstate;     /* [size] RS_* */
  int nbye;
  int ngone;
  int *gone_q; /* [size] ranks whose departure is not yet swept */
  int gone_head, gone_tail;
  int sweeping;
  mmp__list_t names;
  size_t nnames;
  size_t stored;
  mmp__list_t fences;
  size_t nfences;
  int stopping;
  void (*done)(void *arg);
  void *done_arg;
  uint8_t rbuf[BS_READ_BUF];
};

static void bs_conn_end(bs_conn_t *c, const char *reason);
static void bs_sweep(mmp__boot_server_t *s);

/* ---- Shared bodies and writes ------------------------------------------ */

/* Takes over a finished writer's buffer. Returns NULL on OOM (and frees). */
static bs_body_t *bs_body_from(mmp__boot_wr_t *w) {
  bs_body_t *b;

  if (mmp__boot_wr_finish(w, MMP__B_ERROR, 0) != 0)
    return NULL;
  b = malloc(sizeof(*b));
  if (b == NULL) {
    free(w->buf);
    return NULL;
  }
  b->refs = 1;
  b->buf = w->buf;
  b->len = w->len - MMP__BOOT_HDR_SIZE;
  return b;
}

static void bs_body_unref(bs_body_t *b) {
  if (b != NULL && --b->refs == 0) {
    free(b->buf);
    free(b);
  }
}

static void bs_conn_close_handles(bs_conn_t *c);

static void bs_on_write(uv_write_t *req, int status) {
  bs_write_t *w = mmp__container_of(req, bs_write_t, req);
  bs_conn_t *c = w->conn;

  bs_body_unref(w->body);
  free(w->sealed);
  free(w);
  c->writes--;
  if (status < 0 && !c->closing)
    bs_conn_end(c, "write failed");
  else if (c->closing && c->writes == 0)
    bs_conn_close_handles(c);
  bs_sweep(c->s);
}

/* Queues one message. Failures end the connection (the caller checks
 * c->closing if it cares). */
static void bs_send(bs_conn_t *c, uint8_t type, uint32_t id, bs_body_t *b) {
  mmp__boot_hdr_t h;
  bs_write_t *w;
  uv_buf_t bufs[2];
  int n = 1, rc;

  if (c->hclosing)
    return;
  w = malloc(sizeof(*w));
  if (w == NULL) {
    bs_conn_end(c, "out of memory");
    return;
  }
  h.type = type;
  h.id = id;
  h.len = b != NULL ? (uint32_t)b->len : 0;
  mmp__boot_hdr_encode(&h, w->hdr);
  w->conn = c;
  w->body = b;
  w->sealed = NULL;
  bufs[0] = uv_buf_init((char *)w->hdr, MMP__BOOT_HDR_SIZE);
  if (b != NULL && b->len > 0)
    bufs[n++] =
        uv_buf_init((char *)b->buf + MMP__BOOT_HDR_SIZE, (unsigned)b->len);
  if (c->tx != NULL) {
    /* A body is shared among connections; its records are this one's. */
    struct iovec iov[2];
    uint64_t plain = MMP__BOOT_HDR_SIZE + (uint64_t)h.len;
    iov[0].iov_base = bufs[0].base;
    iov[0].iov_len = bufs[0].len;
    if (n == 2) {
      iov[1].iov_base = bufs[1].base;
      iov[1].iov_len = bufs[1].len;
    }
    w->sealed = malloc((size_t)mmp__seal_size(plain));
    if (w->sealed == NULL) {
      free(w->sealed);
      free(w);
      bs_conn_end(c, "out of memory");
      return;
    }
    mmp__seal(c->tx, iov, (unsigned)n, plain, w->sealed, c->s->scratch);
    bufs[0] = uv_buf_init((char *)w->sealed, (unsigned)mmp__seal_size(plain));
    n = 1;
  }
  rc =
      uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, (unsigned)n, bs_on_write);
  if (rc != 0) {
    free(w);
    bs_conn_end(c, "write failed");
    return;
  }
  if (b != NULL)
    b->refs++;
  c->writes++;
  /* A peer that stops reading must not make us buffer without bound. */
  if (!c->closing && uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) >
                         BS_MAX_WRITE_QUEUE)
    bs_conn_end(c, "peer does not read its replies");
}

static void bs_send_error(bs_conn_t *c, uint32_t id, int code,
                          const char *msg) {
  mmp__boot_wr_t w;
  bs_body_t *b;
  size_t n = strlen(msg);

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, (uint32_t)code);
  mmp__boot_wr_str(&w, msg, n > BS_MAX_MSG ? BS_MAX_MSG : n);
  b = bs_body_from(&w);
  if (b == NULL)
    return;
  bs_send(c, MMP__B_ERROR, id, b);
  bs_body_unref(b);
}

/* ---- Connection lifetime ----------------------------------------------- */

static void bs_peer(bs_conn_t *c, char *out, size_t len) {
  struct sockaddr_storage ss;
  int n = sizeof(ss);

  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &n) != 0 ||
      mmp__addr_format((struct sockaddr *)&ss, out, len) != 0)
    snprintf(out, len, "?");
}

static void bs_accept(mmp__boot_server_t *s);

/* Logs how many rejections an interval of the budget left out. */
static void bs_log_left_out(uint64_t n) {
  if (n > 0)
    mmp__log(MMP__LOG_WARN,
             "bootstrap: %llu more connections rejected after the last %u "
             "logged",
             (unsigned long long)n, MMP__RATELOG_BURST);
}

/* The interval is over: the count of what it left out appears even when
 * no rejection follows. */
static void bs_on_logtimer(uv_timer_t *t) {
  mmp__boot_server_t *s = t->data;

  bs_log_left_out(mmp__ratelog_end(&s->rl));
}

/*
 * Logs the rejection of a connection that never authenticated, whatever
 * the log level: minimprun runs at level error, and an attack must still
 * show. The budget keeps a flood from flooding the log.
 */
static void bs_log_reject(mmp__boot_server_t *s, const char *peer,
                          const char *why) {
  uint64_t ended;
  int take = mmp__ratelog_take(&s->rl, uv_now(s->loop), &ended);

  bs_log_left_out(ended);
  if (!take)
    return;
  if (s->rl.logged == 1 && !s->stopping)
    uv_timer_start(&s->logtimer, bs_on_logtimer, MMP__RATELOG_INTERVAL_MS, 0);
  mmp__log(MMP__LOG_WARN, "bootstrap: rejected connection from %s: %s", peer,
           why);
}

/* A handshake finished or was dropped. */
static void bs_unpend(bs_conn_t *c) {
  mmp__boot_server_t *s = c->s;

  if (!c->pending)
    return;
  c->pending = 0;
  s->npending--;
  mmp__list_remove(&c->pnode);
  if (s->paused && !s->stopping) {
    s->paused = 0;
    bs_accept(s);
  }
}

static void bs_free_store(mmp__boot_server_t *s) {
  mmp__list_t *it, *tmp;
  int i;

  mmp__list_foreach_safe(it, tmp, &s->names) {
    bs_name_t *n = mmp__container_of(it, bs_name_t, node);
    mmp__list_t *wi, *wt;
    mmp__list_foreach_safe(wi, wt, &n->waiters) {
      free(mmp__container_of(wi, bs_waiter_t, node));
    }
    for (i = 0; i < s->size; i++)
      free(n->vals[i]);
    bs_body_unref(n->all);
    free(n->has);
    free(n->vals);
    free(n->lens);
    free(n);
  }
  mmp__list_foreach_safe(it, tmp, &s->fences) {
    bs_fence_t *f = mmp__container_of(it, bs_fence_t, node);
    free(f->in);
    free(f->ids);
    free(f);
  }
}

static void bs_free(mmp__boot_server_t *s) {
  void (*done)(void *) = s->done;
  void *arg = s->done_arg;

  bs_free_store(s);
  free(s->conn_of);
  free(s->rstate);
  free(s->gone_q);
  free(s->scratch);
  free(s);
  if (done != NULL)
    done(arg);
}

static void bs_unlive(mmp__boot_server_t *s) {
  if (--s->live == 0 && s->stopping)
    bs_free(s);
}

static void bs_on_conn_close(uv_handle_t *h) {
  bs_conn_t *c = h->data;
  mmp__boot_server_t *s = c->s;

  if (--c->open > 0)
    return;
  mmp__list_remove(&c->node);
  mmp__boot_rx_fini(&c->rx);
  mmp__auth_end(&c->auth);
  if (c->tx != NULL)
    mmp__auth_wipe(c->tx, sizeof(*c->tx));
  free(c->tx);
  free(c);
  bs_unlive(s);
}

static void bs_conn_close_handles(bs_conn_t *c) {
  if (c->hclosing)
    return;
  c->hclosing = 1;
  c->closing = 1;
  bs_unpend(c);
  uv_close((uv_handle_t *)&c->tcp, bs_on_conn_close);
  uv_close((uv_handle_t *)&c->timer, bs_on_conn_close);
}

static void bs_on_linger(uv_timer_t *t) {
  bs_conn_close_handles(t->data);
}

/* Marks rank r as gone and queues the sweep of what waited on it. */
static void bs_rank_gone(mmp__boot_server_t *s, int r) {
  s->ngone++;
  s->gone_q[s->gone_tail++] = r;
}

/*
 * Ends a connection: stops reading, lets queued writes (an ERROR) drain for
 * at most BS_LINGER_MS, and accounts for its rank. A joined rank that did
 * not say BYE is reported through rank_lost.
 */
static void bs_conn_end(bs_conn_t *c, const char *reason) {
  mmp__boot_server_t *s = c->s;
  int r = c->rank;

  if (c->closing)
    return;
  c->closing = 1;
  bs_unpend(c);
  uv_read_stop((uv_stream_t *)&c->tcp);
  if (c->writes == 0) {
    bs_conn_close_handles(c);
  } else {
    uv_timer_stop(&c->timer);
    uv_timer_start(&c->timer, bs_on_linger, BS_LINGER_MS, 0);
  }
  if (r < 0 || s->stopping)
    return;
  s->conn_of[r] = NULL;
  if (s->rstate[r] != RS_JOINED)
    return;
  s->rstate[r] = RS_LOST;
  bs_rank_gone(s, r);
  MMP__LOG(MMP__LOG_INFO, "bootstrap: rank %d lost: %s", r, reason);
  /* The sweep runs when the libuv callback that got here returns, so no
   * list is changed under an iteration. */
  if (s->cb.rank_lost != NULL)
    s->cb.rank_lost(s->cb.ctx, r, reason);
}

/* Rejects what a connection sent: logs, sends ERROR, closes. */
static void bs_conn_fail(bs_conn_t *c, int code, const char *why) {
  char peer[64], reason[160];

  if (c->closing)
    return;
  bs_peer(c, peer, sizeof(peer));
  if (c->rank >= 0) {
    snprintf(reason, sizeof(reason), "protocol violation: %s", why);
    MMP__LOG(MMP__LOG_WARN, "bootstrap: closing rank %d (%s): %s", c->rank,
             peer, why);
  } else {
    snprintf(reason, sizeof(reason), "%s", why);
    bs_log_reject(c->s, peer, why);
  }
  bs_send_error(c, 0, code, why);
  bs_conn_end(c, reason);
}

/* Answers one waiting request with ERROR; the waiter's connection closes. */
static void bs_fail_rank(mmp__boot_server_t *s, int r, uint32_t id,
                         const char *why) {
  bs_conn_t *c = s->conn_of[r];

  if (c == NULL || c->closing)
    return;
  bs_send_error(c, id, MMP_EPEERLOST, why);
  bs_conn_end(c, why);
}

/* ---- The store ---------------------------------------------------------- */

static bs_name_t *bs_name_find(mmp__boot_server_t *s, const char *name,
                               size_t n) {
  mmp__list_t *it;

  mmp__list_foreach(it, &s->names) {
    bs_name_t *e = mmp__container_of(it, bs_name_t, node);
    if (e->nlen == n && memcmp(e->name, name, n) == 0)
      return e;
  }
  return NULL;
}

static bs_name_t *bs_name_get(mmp__boot_server_t *s, const char *name,
                              size_t n) {
  bs_name_t *e = bs_name_find(s, name, n);
  size_t p = (size_t)s->size;

  if (e != NULL || s->nnames >= BS_MAX_NAMES ||
      (s->nnames + s->nfences + 1) * p > BS_MAX_SLOTS)
    return e;
  e = calloc(1, sizeof(*e));
  if (e == NULL)
    return NULL;
  e->has = calloc(p, 1);
  e->vals = calloc(p, sizeof(*e->vals));
  e->lens = calloc(p, sizeof(*e->lens));
  if (e->has == NULL || e->vals == NULL || e->lens == NULL) {
    free(e->has);
    free(e->vals);
    free(e->lens);
    free(e);
    return NULL;
  }
  memcpy(e->name, name, n);
  e->nlen = n;
  mmp__list_init(&e->waiters);
  mmp__list_insert_tail(&s->names, &e->node);
  s->nnames++;
  return e;
}

/* Encodes VALUES for ranks [first, first+count) of e. */
static bs_body_t *bs_values(const mmp__boot_server_t *s, const bs_name_t *e,
                            int first, int count) {
  mmp__boot_wr_t w;
  int i;

  (void)s;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, (uint32_t)count);
  for (i = first; i < first + count; i++)
    mmp__boot_wr_blob(&w, e->vals[i], e->lens[i]);
  return bs_body_from(&w);
}

static void bs_reply_values(mmp__boot_server_t *s, bs_name_t *e,
                            bs_waiter_t *wt) {
  bs_conn_t *c = s->conn_of[wt->rank];
  bs_body_t *b;

  if (c == NULL || c->closing)
    return;
  if (wt->want < 0) {
    if (e->all == NULL)
      e->all = bs_values(s, e, 0, s->size);
    b = e->all;
    if (b == NULL) {
      bs_conn_end(c, "out of memory");
      return;
    }
    bs_send(c, MMP__B_VALUES, wt->id, b);
    return;
  }
  b = bs_values(s, e, wt->want, 1);
  if (b == NULL) {
    bs_conn_end(c, "out of memory");
    return;
  }
  bs_send(c, MMP__B_VALUES, wt->id, b);
  bs_body_unref(b);
}

/* Answers every waiter of e that can be answered now. */
static void bs_name_wake(mmp__boot_server_t *s, bs_name_t *e) {
  mmp__list_t *it, *tmp;

  mmp__list_foreach_safe(it, tmp, &e->waiters) {
    bs_waiter_t *wt = mmp__container_of(it, bs_waiter_t, node);
    int ready = wt->want < 0 ? e->count == s->size : e->has[wt->want];
    bs_conn_t *c = s->conn_of[wt->rank];
    if (!ready)
      continue;
    mmp__list_remove(&wt->node);
    if (c != NULL)
      c->nwaits--;
    bs_reply_values(s, e, wt);
    free(wt);
    if (s->stopping)
      return;
  }
}

/* Is there a gone rank that never PUT `e` (so GETALL can never finish)? */
static int bs_name_doomed(const mmp__boot_server_t *s, const bs_name_t *e) {
  int i;

  if (s->ngone == 0)
    return 0;
  for (i = 0; i < s->size; i++)
    if (s->rstate[i] >= RS_BYE && (e == NULL || !e->has[i]))
      return 1;
  return 0;
}

static void bs_fence_free(mmp__boot_server_t *s, bs_fence_t *f) {
  mmp__list_remove(&f->node);
  s->nfences--;
  free(f->in);
  free(f->ids);
  free(f);
}

/*
 * Processes the queue of departed ranks: drops their own waiters and fails
 * every request that can no longer complete. Failing a waiter ends its
 * connection, which may queue more ranks; the loop takes them in turn.
 */
static void bs_sweep(mmp__boot_server_t *s) {
  char why[96];
  mmp__list_t *it, *tmp;

  if (s->sweeping)
    return;
  s->sweeping = 1;
  while (s->gone_head < s->gone_tail && !s->stopping) {
    int r = s->gone_q[s->gone_head++];
    int i;

    snprintf(why, sizeof(why), "rank %d left the job", r);
    mmp__list_foreach_safe(it, tmp, &s->fences) {
      bs_fence_t *f = mmp__container_of(it, bs_fence_t, node);
      if (f->in[r])
        continue;
      /* Failing a waiter only queues its rank, so the list stays intact. */
      for (i = 0; i < s->size && !s->stopping; i++)
        if (f->in[i])
          bs_fail_rank(s, i, f->ids[i], why);
      bs_fence_free(s, f);
      if (s->stopping)
        break;
    }
    mmp__list_foreach(it, &s->names) {
      bs_name_t *e = mmp__container_of(it, bs_name_t, node);
      mmp__list_t *wi, *wn;
      mmp__list_foreach_safe(wi, wn, &e->waiters) {
        bs_waiter_t *wt = mmp__container_of(wi, bs_waiter_t, node);
        int doomed = !e->has[r] && (wt->want < 0 || wt->want == r);
        if (wt->rank != r && !doomed)
          continue;
        mmp__list_remove(&wt->node);
        if (s->conn_of[wt->rank] != NULL)
          s->conn_of[wt->rank]->nwaits--;
        if (wt->rank != r && !s->stopping)
          bs_fail_rank(s, wt->rank, wt->id, why);
        free(wt);
      }
      if (s->stopping)
        break;
    }
  }
  s->sweeping = 0;
}

/* ---- Messages ----------------------------------------------------------- */

/* The largest body a client may send with each message type; 0 where the
 * type must not come from a client at all. */
static uint32_t bs_max_body(uint8_t type) {
  switch (type) {
  case MMP__B_HELLO:
    return MMP__NONCE_LEN + 12 + 2 + BS_MAX_HOST;
  case MMP__B_PROOF:
    return MMP__MAC_LEN;
  case MMP__B_PUT:
    return 2 + MMP__BOOT_MAX_NAME + 4 + MMP__BOOT_MAX_VALUE;
  case MMP__B_GETALL:
    return 2 + MMP__BOOT_MAX_NAME;
  case MMP__B_GET:
    return 4 + 2 + MMP__BOOT_MAX_NAME;
  case MMP__B_FENCE:
    return 4;
  case MMP__B_ABORT:
  case MMP__B_SUSPECT:
    return 4 + 2 + BS_MAX_MSG;
  case MMP__B_BYE:
    return 0;
  default:
    return 0;
  }
}

static int bs_client_type(uint8_t type) {
  return type == MMP__B_HELLO || type == MMP__B_PROOF || type == MMP__B_PUT ||
         type == MMP__B_GETALL || type == MMP__B_GET || type == MMP__B_FENCE ||
         type == MMP__B_ABORT || type == MMP__B_SUSPECT || type == MMP__B_BYE;
}

/* HELLO: what the client claims, kept until its PROOF verifies. */
static void bs_on_hello(bs_conn_t *c, const uint8_t *body, uint32_t len) {
  mmp__boot_server_t *s = c->s;
  mmp__boot_rd_t rd;
  const char *host;
  size_t hlen;

  mmp__boot_rd_init(&rd, body, len);
  (void)mmp__boot_rd_raw(&rd, MMP__NONCE_LEN);
  c->claim_rank = mmp__boot_rd_u32(&rd);
  c->claim_size = mmp__boot_rd_u32(&rd);
  c->claim_pid = mmp__boot_rd_u32(&rd);
  hlen = mmp__boot_rd_str(&rd, &host, BS_MAX_HOST);
  if (rd.bad || rd.left != 0) {
    bs_conn_fail(c, MMP_EPROTO, "malformed HELLO");
    return;
  }
  memcpy(c->claim_host, host, hlen);
  c->claim_host[hlen] = '\0';
  mmp__auth_begin(&c->auth, s->key, MMP__AUTH_BOOT, body, len, c->challenge,
                  sizeof(c->challenge));
  c->hello = 1;
}

/* PROOF: the key first, since nothing else is said to a peer that does
 * not hold it; then what HELLO claimed. */
static void bs_on_proof(bs_conn_t *c, const uint8_t *body, uint32_t len) {
  mmp__boot_server_t *s = c->s;
  uint8_t mac[MMP__MAC_LEN], d2l[MMP__SESSION_KEY_LEN],
      l2d[MMP__SESSION_KEY_LEN];
  mmp__boot_wr_t w;
  bs_body_t *b;
  uint32_t rank = c->claim_rank, size = c->claim_size;
  char why[96];
  int rc = 0;

  if (len != MMP__MAC_LEN) {
    bs_conn_fail(c, MMP_EPROTO, "malformed PROOF");
    return;
  }
  if (!mmp__auth_check(&c->auth, MMP__AUTH_DIALER, MMP__AUTH_PROVE, body)) {
    bs_conn_fail(c, MMP_EAUTH,
                 "wrong job key (the client's proof does not verify)");
    return;
  }
  if (size != (uint32_t)s->size) {
    snprintf(why, sizeof(why), "job size %u does not match the job's %d",
             (unsigned)size, s->size);
    bs_conn_fail(c, MMP_EMISMATCH, why);
    return;
  }
  if (rank >= (uint32_t)s->size) {
    snprintf(why, sizeof(why), "rank %u out of range", (unsigned)rank);
    bs_conn_fail(c, MMP_ERANK, why);
    return;
  }
  if (s->rstate[rank] != RS_NONE) {
    snprintf(why, sizeof(why), "rank %u already joined", (unsigned)rank);
    bs_conn_fail(c, MMP_ERANK, why);
    return;
  }
  mmp__auth_mac(&c->auth, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, mac);
  if (s->seal)
    mmp__auth_session_keys(&c->auth, s->key, d2l, l2d);
  mmp__auth_end(&c->auth);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, mac, sizeof(mac));
  b = bs_body_from(&w);
  if (b == NULL) {
    bs_conn_fail(c, MMP_ENOMEM, "out of memory");
    return;
  }
  bs_unpend(c);
  uv_timer_stop(&c->timer);
  c->rank = (int)rank;
  s->conn_of[rank] = c;
  s->rstate[rank] = RS_JOINED;
  s->njoined++;
  bs_send(c, MMP__B_WELCOME, 0, b);
  bs_body_unref(b);
  /* WELCOME is the last clear message each way: the client sends nothing
   * after PROOF until WELCOME verifies. */
  if (s->seal && !c->closing) {
    c->tx = calloc(1, sizeof(*c->tx));
    rc = c->tx == NULL ? MMP_ENOMEM : mmp__boot_rx_seal(&c->rx, d2l);
    if (c->tx != NULL)
      memcpy(c->tx->key, l2d, sizeof(l2d));
  }
  mmp__auth_wipe(d2l, sizeof(d2l));
  mmp__auth_wipe(l2d, sizeof(l2d));
  if (rc != 0)
    bs_conn_end(c, "out of memory");
  MMP__LOG(MMP__LOG_DEBUG, "bootstrap: rank %u joined from %s (pid %u)",
           (unsigned)rank, c->claim_host, (unsigned)c->claim_pid);
  if (s->cb.rank_joined != NULL)
    s->cb.rank_joined(s->cb.ctx, (int)rank, c->claim_host, (int)c->claim_pid);
}

static void bs_on_put(bs_conn_t *c, mmp__boot_rd_t *rd) {
  mmp__boot_server_t *s = c->s;
  const char *name;
  const uint8_t *val;
  size_t nlen = mmp__boot_rd_str(rd, &name, MMP__BOOT_MAX_NAME);
  size_t vlen = mmp__boot_rd_blob(rd, &val, MMP__BOOT_MAX_VALUE);
  bs_name_t *e;
  uint8_t *copy;
  int r = c->rank;

  if (rd->bad || rd->left != 0 || nlen == 0) {
    bs_conn_fail(c, MMP_EPROTO, "malformed PUT");
    return;
  }
  e = bs_name_get(s, name, nlen);
  if (e == NULL || s->stored + vlen > BS_MAX_STORED) {
    bs_conn_fail(c, MMP_ENOMEM, "the key-value store is full");
    return;
  }
  copy = malloc(vlen + 1); /* +1: a zero-length value is still present */
  if (copy == NULL) {
    bs_conn_fail(c, MMP_ENOMEM, "out of memory");
    return;
  }
  memcpy(copy, val, vlen);
  if (e->has[r]) {
    s->stored -= e->lens[r];
    free(e->vals[r]);
  } else {
    e->has[r] = 1;
    e->count++;
  }
  e->vals[r] = copy;
  e->lens[r] = (uint32_t)vlen;
  s->stored += vlen;
  /* A re-PUT changes the answer; drop the cached encoding. */
  bs_body_unref(e->all);
  e->all = NULL;
  bs_name_wake(s, e);
}

static void bs_wait(bs_conn_t *c, bs_name_t *e, int want, uint32_t id) {
  bs_waiter_t *wt;

  if (c->nwaits >= BS_MAX_WAITS) {
    bs_conn_fail(c, MMP_ETOOBIG, "too many pending requests");
    return;
  }
  wt = malloc(sizeof(*wt));
  if (wt == NULL) {
    bs_conn_fail(c, MMP_ENOMEM, "out of memory");
    return;
  }
  wt->rank = c->rank;
  wt->want = want;
  wt->id = id;
  c->nwaits++;
  mmp__list_insert_tail(&e->waiters, &wt->node);
  bs_name_wake(c->s, e);
}

static void bs_on_get(bs_conn_t *c, mmp__boot_rd_t *rd, int all, uint32_t id) {
  mmp__boot_server_t *s = c->s;
  uint32_t want = all ? 0 : mmp__boot_rd_u32(rd);
  const char *name;
  size_t nlen = mmp__boot_rd_str(rd, &name, MMP__BOOT_MAX_NAME);
  bs_name_t *e;
  char why[64];

  if (rd->bad || rd->left != 0 || nlen == 0) {
    bs_conn_fail(c, MMP_EPROTO, all ? "malformed GETALL" : "malformed GET");
    return;
  }
  if (want >= (uint32_t)s->size) {
    bs_conn_fail(c, MMP_ERANK, "GET of a rank out of range");
    return;
  }
  e = bs_name_get(s, name, nlen);
  if (e == NULL) {
    bs_conn_fail(c, MMP_ENOMEM, "the key-value store is full");
    return;
  }
  if (all ? bs_name_doomed(s, e) : s->rstate[want] >= RS_BYE && !e->has[want]) {
    snprintf(why, sizeof(why), "a rank left the job before it PUT the name");
    bs_send_error(c, id, MMP_EPEERLOST, why);
    bs_conn_end(c, why);
    return;
  }
  bs_wait(c, e, all ? -1 : (int)want, id);
}

static void bs_on_fence(bs_conn_t *c, mmp__boot_rd_t *rd, uint32_t id) {
  mmp__boot_server_t *s = c->s;
  uint32_t epoch = mmp__boot_rd_u32(rd);
  mmp__list_t *it;
  bs_fence_t *f = NULL;
  int i;

  if (rd->bad || rd->left != 0) {
    bs_conn_fail(c, MMP_EPROTO, "malformed FENCE");
    return;
  }
  mmp__list_foreach(it, &s->fences) {
    bs_fence_t *e = mmp__container_of(it, bs_fence_t, node);
    if (e->epoch == epoch) {
      f = e;
      break;
    }
  }
  if (f == NULL) {
    if (s->ngone > 0) {
      /* A departed rank can never enter a new epoch. */
      bs_send_error(c, id, MMP_EPEERLOST, "a rank left the job");
      bs_conn_end(c, "fence after a rank left the job");
      return;
    }
    if (s->nfences >= BS_MAX_FENCES ||
        (s->nnames + s->nfences + 1) * (size_t)s->size > BS_MAX_SLOTS) {
      bs_conn_fail(c, MMP_ETOOBIG, "too many pending fences");
      return;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL || (f->in = calloc((size_t)s->size, 1)) == NULL ||
        (f->ids = calloc((size_t)s->size, sizeof(*f->ids))) == NULL) {
      if (f != NULL)
        free(f->in);
      free(f);
      bs_conn_fail(c, MMP_ENOMEM, "out of memory");
      return;
    }
    f->epoch = epoch;
    mmp__list_insert_tail(&s->fences, &f->node);
    s->nfences++;
  }
  if (f->in[c->rank]) {
    bs_conn_fail(c, MMP_EPROTO, "entered the same fence twice");
    return;
  }
  f->in[c->rank] = 1;
  f->ids[c->rank] = id;
  if (++f->count < s->size)
    return;
  for (i = 0; i < s->size && !s->stopping; i++)
    if (s->conn_of[i] != NULL)
      bs_send(s->conn_of[i], MMP__B_FENCE_DONE, f->ids[i], NULL);
  bs_fence_free(s, f);
}

static void bs_on_abort(bs_conn_t *c, mmp__boot_rd_t *rd) {
  mmp__boot_server_t *s = c->s;
  int32_t code = (int32_t)mmp__boot_rd_u32(rd);
  const char *msg;
  size_t n = mmp__boot_rd_str(rd, &msg, BS_MAX_MSG);
  char msgz[BS_MAX_MSG + 1];

  if (rd->bad || rd->left != 0) {
    bs_conn_fail(c, MMP_EPROTO, "malformed ABORT");
    return;
  }
  memcpy(msgz, msg, n);
  msgz[n] = '\0';
  MMP__LOG(MMP__LOG_INFO, "bootstrap: rank %d aborts the job (%d): %s", c->rank,
           (int)code, msgz);
  if (s->cb.abort != NULL)
    s->cb.abort(s->cb.ctx, c->rank, (int)code, msgz);
}

/* A rank lost contact with another. The accused is treated as lost: its
 * bootstrap connection is closed (a stopped process may still hold it
 * open), waiters on it fail, and rank_lost names it. */
static void bs_on_suspect(bs_conn_t *c, mmp__boot_rd_t *rd) {
  mmp__boot_server_t *s = c->s;
  uint32_t r = mmp__boot_rd_u32(rd);
  const char *msg;
  size_t n = mmp__boot_rd_str(rd, &msg, BS_MAX_MSG);
  char why[BS_MAX_MSG + 64];

  if (rd->bad || rd->left != 0 || r >= (uint32_t)s->size || (int)r == c->rank) {
    bs_conn_fail(c, MMP_EPROTO, "malformed SUSPECT");
    return;
  }
  if (s->rstate[r] != RS_JOINED || s->conn_of[r] == NULL)
    return; /* already gone, or never came: nothing to add */
  snprintf(why, sizeof(why), "unresponsive, reported by rank %d: %.*s", c->rank,
           (int)n, msg);
  bs_conn_end(s->conn_of[r], why);
}

static void bs_on_bye(bs_conn_t *c, mmp__boot_rd_t *rd) {
  mmp__boot_server_t *s = c->s;

  if (rd->left != 0) {
    bs_conn_fail(c, MMP_EPROTO, "malformed BYE");
    return;
  }
  c->bye = 1;
  s->rstate[c->rank] = RS_BYE;
  s->nbye++;
  bs_rank_gone(s, c->rank);
  if (!s->stopping && s->nbye == s->size && s->cb.all_done != NULL)
    s->cb.all_done(s->cb.ctx);
}

static void bs_dispatch(bs_conn_t *c, const mmp__boot_hdr_t *h,
                        const uint8_t *body) {
  mmp__boot_rd_t rd;

  mmp__boot_rd_init(&rd, body, h->len);
  if (c->rank < 0) {
    /* bs_check_hdr let only HELLO, then only PROOF, through. */
    if (h->type == MMP__B_HELLO)
      bs_on_hello(c, body, h->len);
    else
      bs_on_proof(c, body, h->len);
    return;
  }
  if (c->bye) {
    bs_conn_fail(c, MMP_EPROTO, "message after BYE");
    return;
  }
  switch (h->type) {
  case MMP__B_PUT:
    bs_on_put(c, &rd);
    break;
  case MMP__B_GETALL:
    bs_on_get(c, &rd, 1, h->id);
    break;
  case MMP__B_GET:
    bs_on_get(c, &rd, 0, h->id);
    break;
  case MMP__B_FENCE:
    bs_on_fence(c, &rd, h->id);
    break;
  case MMP__B_ABORT:
    bs_on_abort(c, &rd);
    break;
  case MMP__B_SUSPECT:
    bs_on_suspect(c, &rd);
    break;
  case MMP__B_BYE:
    bs_on_bye(c, &rd);
    break;
  default:
    bs_conn_fail(c, MMP_EPROTO, "unexpected message type");
    break;
  }
}

/* Validates a complete header; 0 or a reason to drop the connection. */
static int bs_check_hdr(bs_conn_t *c, const char **why) {
  int rc =
      mmp__boot_hdr_decode(c->rx.hbuf, MMP__BOOT_MAX_BODY, &c->rx.hdr, why);

  if (rc != 0)
    return rc;
  if (!bs_client_type(c->rx.hdr.type)) {
    *why = "message type not sent by clients";
    return MMP_EPROTO;
  }
  if (c->rank < 0 && !c->hello && c->rx.hdr.type != MMP__B_HELLO) {
    *why = "first message is not HELLO";
    return MMP_EPROTO;
  }
  if (c->rank < 0 && c->hello && c->rx.hdr.type != MMP__B_PROOF) {
    *why = "second message is not PROOF";
    return MMP_EPROTO;
  }
  if (c->rank >= 0 &&
      (c->rx.hdr.type == MMP__B_HELLO || c->rx.hdr.type == MMP__B_PROOF)) {
    *why = "handshake message after the handshake";
    return MMP_EPROTO;
  }
  if (c->rx.hdr.len > bs_max_body(c->rx.hdr.type)) {
    *why = "body too long for its message type";
    return MMP_ETOOBIG;
  }
  return 0;
}

/* Feeds received bytes through the header/body state machine. */
static int bs_rx_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)rx;
  return bs_check_hdr(ctx, why);
}

static void bs_rx_message(void *ctx, const mmp__boot_hdr_t *h,
                          const uint8_t *body) {
  bs_dispatch(ctx, h, body);
}

static void bs_rx_error(void *ctx, int err, const char *why) {
  bs_conn_fail(ctx, err, why);
}

static int bs_rx_closed(void *ctx) {
  bs_conn_t *c = ctx;
  return c->closing || c->s->stopping;
}

static const mmp__boot_rx_ops_t bs_rx_ops = {bs_rx_header, bs_rx_message,
                                             bs_rx_error, bs_rx_closed};

static void bs_consume(bs_conn_t *c, const uint8_t *p, size_t n) {
  mmp__boot_rx_feed(&c->rx, p, n, &bs_rx_ops, c);
}

static void bs_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  bs_conn_t *c = h->data;

  (void)hint;
  /* One buffer serves every connection: each read is consumed at once. */
  *buf = uv_buf_init((char *)c->s->rbuf, sizeof(c->s->rbuf));
}

static void bs_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  bs_conn_t *c = st->data;
  char reason[96];

  if (nread > 0) {
    bs_consume(c, (const uint8_t *)buf->base, (size_t)nread);
  } else if (nread < 0) {
    if (nread == UV_EOF)
      snprintf(reason, sizeof(reason), "connection closed without BYE");
    else
      snprintf(reason, sizeof(reason), "connection error: %s",
               uv_strerror((int)nread));
    if (c->rank < 0)
      MMP__LOG(MMP__LOG_DEBUG,
               "bootstrap: connection ended before the handshake: %s", reason);
    bs_conn_end(c, reason);
  }
  bs_sweep(c->s);
}

static void bs_on_handshake_timeout(uv_timer_t *t) {
  bs_conn_t *c = t->data;
  char peer[64], why[64];

  if (c->closing) {
    bs_conn_close_handles(c);
    return;
  }
  bs_peer(c, peer, sizeof(peer));
  snprintf(why, sizeof(why), "no handshake within %u ms", c->s->hs_timeout_ms);
  bs_log_reject(c->s, peer, why);
  bs_conn_end(c, "handshake timeout");
  bs_sweep(c->s);
}

/* The server speaks first: a fresh nonce, the client's challenge. */
static void bs_send_challenge(bs_conn_t *c) {
  mmp__boot_wr_t w;
  bs_body_t *b;

  mmp__auth_nonce(c->challenge);
  mmp__put_u32(c->challenge + MMP__NONCE_LEN, c->s->seal ? MMP__BOOT_SEAL : 0);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, c->challenge, sizeof(c->challenge));
  b = bs_body_from(&w);
  if (b == NULL) {
    bs_conn_end(c, "out of memory");
    return;
  }
  bs_send(c, MMP__B_CHALLENGE, 0, b);
  bs_body_unref(b);
}

/* Unauthenticated connections kept at once: room for every rank still to
 * come, and BS_MAX_PENDING strangers. */
static unsigned bs_pending_cap(const mmp__boot_server_t *s) {
  return BS_MAX_PENDING + (unsigned)(s->size - s->njoined);
}

/* Keeps the unauthenticated connections within their cap by closing the
 * oldest: the one nearest its deadline, and a stranger unless ranks sit
 * silent behind the cap's worth of newer connections. */
static void bs_trim_pending(mmp__boot_server_t *s) {
  while (s->npending > bs_pending_cap(s)) {
    bs_conn_t *old =
        mmp__container_of(mmp__list_head(&s->pending), bs_conn_t, pnode);
    char peer[64];

    bs_peer(old, peer, sizeof(peer));
    bs_log_reject(s, peer, "too many unauthenticated connections");
    bs_conn_end(old, "too many unauthenticated connections");
  }
}

/* Takes one connection that libuv holds for us and starts its handshake. */
static void bs_accept(mmp__boot_server_t *s) {
  bs_conn_t *c = calloc(1, sizeof(*c));

  if (c == NULL) {
    /* Left waiting in libuv; the next departure retries. */
    MMP__LOG(MMP__LOG_ERROR, "bootstrap: out of memory accepting");
    s->paused = 1;
    return;
  }
  c->s = s;
  c->rank = -1;
  c->tcp.data = c;
  c->timer.data = c;
  uv_tcp_init(s->loop, &c->tcp);
  uv_timer_init(s->loop, &c->timer);
  c->open = 2;
  mmp__list_insert_tail(&s->conns, &c->node);
  s->live++;
  c->pending = 1;
  s->npending++;
  mmp__list_insert_tail(&s->pending, &c->pnode);
  if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp) != 0) {
    bs_conn_close_handles(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_timer_start(&c->timer, bs_on_handshake_timeout, s->hs_timeout_ms, 0);
  if (uv_read_start((uv_stream_t *)&c->tcp, bs_alloc, bs_on_read) != 0) {
    bs_conn_close_handles(c);
    return;
  }
  bs_send_challenge(c);
  bs_trim_pending(s);
}

static void bs_on_connection(uv_stream_t *server, int status) {
  mmp__boot_server_t *s = server->data;

  if (status < 0) {
    MMP__LOG(MMP__LOG_WARN, "bootstrap: accept failed: %s",
             uv_strerror(status));
    return;
  }
  if (s->stopping || s->paused)
    return;
  bs_accept(s);
}

/* ---- Public ------------------------------------------------------------- */

static void bs_on_listener_close(uv_handle_t *h) {
  bs_unlive(h->data);
}

static void bs_on_logtimer_close(uv_handle_t *h) {
  bs_unlive(h->data);
}

static int bs_map_listen_err(int uverr) {
  switch (uverr) {
  case UV_EADDRINUSE:
    return MMP_EADDRINUSE;
  case UV_ENOMEM:
  case UV_ENOBUFS:
    return MMP_ENOMEM;
  case UV_EINVAL:
  case UV_EAFNOSUPPORT:
    return MMP_EINVAL;
  default:
    return MMP_EADDR;
  }
}

/* A peer that resets its connection makes writev() raise SIGPIPE, whose
 * default action would kill the process: what arrives on a socket must
 * never do that. An application that installed its own disposition keeps
 * it. */
static void bs_ignore_sigpipe(void) {
  struct sigaction sa;

  if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
}

int mmp__boot_server_start(uv_loop_t *loop, const struct sockaddr *addr,
                           int size, const uint8_t key[MMP__JOB_KEY_LEN],
                           unsigned handshake_timeout_ms,
                           const mmp__boot_server_cb_t *cb,
                           mmp__boot_server_t **out, char *name,
                           size_t namelen) {
  mmp__boot_server_t *s;
  struct sockaddr_storage ss;
  int n = sizeof(ss), rc;

  MMP__ASSERT_LOOP_OF(loop);
  if (loop == NULL || addr == NULL || key == NULL || out == NULL || size < 1 ||
      size > BS_MAX_SIZE ||
      (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
    return MMP_EINVAL;
  if (mmp__auth_init() != 0)
    return MMP_EIO;
  s = calloc(1, sizeof(*s));
  if (s == NULL)
    return MMP_ENOMEM;
  s->conn_of = calloc((size_t)size, sizeof(*s->conn_of));
  s->rstate = calloc((size_t)size, 1);
  /* Each rank departs at most once, so `size` slots suffice. */
  s->gone_q = calloc((size_t)size, sizeof(*s->gone_q));
  if (s->conn_of == NULL || s->rstate == NULL || s->gone_q == NULL) {
    free(s->conn_of);
    free(s->rstate);
    free(s->gone_q);
    free(s);
    return MMP_ENOMEM;
  }
  s->loop = loop;
  s->size = size;
  memcpy(s->key, key, MMP__JOB_KEY_LEN);
  s->hs_timeout_ms = handshake_timeout_ms > 0 ? handshake_timeout_ms : 1;
  if (cb != NULL)
    s->cb = *cb;
  mmp__list_init(&s->conns);
  mmp__list_init(&s->pending);
  mmp__list_init(&s->names);
  mmp__list_init(&s->fences);
  bs_ignore_sigpipe();
  uv_tcp_init(loop, &s->listener);
  s->listener.data = s;
  uv_timer_init(loop, &s->logtimer);
  s->logtimer.data = s;
  s->live = 2;

  rc = uv_tcp_bind(&s->listener, addr, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&s->listener, 1024, bs_on_connection);
  if (rc == 0)
    rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &n);
  if (rc != 0) {
    rc = bs_map_listen_err(rc);
  } else if (name != NULL &&
             mmp__addr_format((struct sockaddr *)&ss, name, namelen) != 0) {
    rc = MMP_EINVAL;
  }
  if (rc != 0) {
    /* The handles exist, so it is freed from their close callbacks. */
    s->stopping = 1;
    uv_close((uv_handle_t *)&s->logtimer, bs_on_logtimer_close);
    uv_close((uv_handle_t *)&s->listener, bs_on_listener_close);
    return rc;
  }
  *out = s;
  return 0;
}

int mmp__boot_server_seal(mmp__boot_server_t *s) {
  MMP__ASSERT_LOOP_OF(s->loop);
  assert(s->njoined == 0 && s->npending == 0);
  s->scratch = malloc(MMP__REC_MAX);
  if (s->scratch == NULL)
    return MMP_ENOMEM;
  s->seal = 1;
  return 0;
}

void mmp__boot_server_broadcast(mmp__boot_server_t *s, uint32_t kind, int rank,
                                int code, const char *msg, int except) {
  mmp__boot_wr_t w;
  bs_body_t *b;
  size_t n = msg != NULL ? strlen(msg) : 0;
  int i;

  MMP__ASSERT_LOOP_OF(s->loop);
  if (s->stopping)
    return;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, kind);
  mmp__boot_wr_u32(&w, (uint32_t)rank);
  mmp__boot_wr_u32(&w, (uint32_t)code);
  mmp__boot_wr_str(&w, msg != NULL ? msg : "", n > BS_MAX_MSG ? BS_MAX_MSG : n);
  b = bs_body_from(&w);
  if (b == NULL)
    return;
  for (i = 0; i < s->size && !s->stopping; i++)
    if (i != except && s->conn_of[i] != NULL && !s->conn_of[i]->closing)
      bs_send(s->conn_of[i], MMP__B_EVENT, 0, b);
  bs_body_unref(b);
  bs_sweep(s);
}

void mmp__boot_server_stop(mmp__boot_server_t *s, void (*done)(void *arg),
                           void *arg) {
  mmp__list_t *it;

  MMP__ASSERT_LOOP_OF(s->loop);
  assert(!s->stopping);
  s->stopping = 1;
  s->done = done;
  s->done_arg = arg;
  mmp__list_foreach(it, &s->conns) {
    bs_conn_close_handles(mmp__container_of(it, bs_conn_t, node));
  }
  bs_log_left_out(mmp__ratelog_end(&s->rl));
  uv_close((uv_handle_t *)&s->logtimer, bs_on_logtimer_close);
  uv_close((uv_handle_t *)&s->listener, bs_on_listener_close);
}
