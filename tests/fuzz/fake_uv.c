/* SPDX-License-Identifier: MIT */
/*
 * The fake libuv of fake_uv.h: handles are records in a table, callbacks
 * wait in one FIFO queue, connections are "peers" with an inbox (what the
 * harness sends) and an outbox (what the code wrote). Every entry point
 * reads the handle or request it is given, as libuv would, so that a
 * handle used after it was freed is caught by AddressSanitizer.
 */
#include "fake_uv.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUV_MAX_RECORDS 2048 /* handles, closed ones included */
/* Slots of the index from a handle's address to its record: a power of
 * two, twice the records, so that probes stay short. */
#define FUV_INDEX_SIZE (2 * FUV_MAX_RECORDS)
#define FUV_MAX_PROCS 64
#define FUV_MAX_STEPS 1000000   /* callbacks in one fuv_run() */
#define FUV_READ_SIZE 65536     /* what libuv suggests to alloc_cb */
#define FUV_PID_BASE 0x7ff00000 /* above any pid_max: kill() finds nobody */

enum { EV_WRITE, EV_CLOSE, EV_CONNECT, EV_SHUTDOWN, EV_OFFER, EV_EXIT };

typedef struct fuv_rec_s {
  uv_handle_t *h; /* NULL: a free slot */
  int closing;    /* uv_close() was called */
  int closed;     /* ...and its callback ran: only uv_is_closing() asks */
  uv_close_cb close_cb;
  /* Streams. */
  int peer; /* connected to, or -1 */
  int reading;
  uv_alloc_cb alloc_cb;
  uv_read_cb read_cb;
  /* Listeners. */
  uv_connection_cb conn_cb;
  int held; /* offered to conn_cb and not accepted yet, or -1 */
  int offer_queued;
  int backlog[FUV_MAX_PEERS];
  int nbacklog;
  /* Timers. */
  int armed;
  uint64_t due, repeat, seq;
  uv_timer_cb timer_cb;
  /* Processes. */
  uv_exit_cb exit_cb;
} fuv_rec_t;

typedef struct fuv_ev_s {
  int kind;
  uv_handle_t *h;
  void *req;
  int status;
  int peer;
  int64_t exit_status;
  int signo;
} fuv_ev_t;

typedef struct fuv_peer_s {
  uv_stream_t *s; /* the code's end, while open */
  fuzz_buf_t in;
  size_t in_off;
  size_t chunk;
  int eof;
  int reset;
  fuzz_buf_t out;
  int closed;
  int shut;
} fuv_peer_t;

typedef struct fuv_proc_s {
  uv_process_t *p;
  int pipes[3]; /* peers of its stdin, stdout, stderr, or -1 */
  int killed;
  int exited;
} fuv_proc_t;

static struct fuv_s {
  uv_loop_t *loop;
  fuv_rec_t recs[FUV_MAX_RECORDS];
  /* Below here is cleared whole per input; recs only up to nrecs, since
   * the rest was never written. */
  size_t nrecs; /* records in use: one is never freed, only reused */
  uint16_t index[FUV_INDEX_SIZE]; /* record + 1 by address, 0: none */
  size_t nopen;
  fuv_ev_t *evs;
  size_t head, nev, evcap;
  fuv_peer_t peers[FUV_MAX_PEERS];
  int npeers;
  fuv_proc_t procs[FUV_MAX_PROCS];
  int nprocs;
  uint64_t now, seq;
  int connect_status, spawn_status;
  unsigned fail_writes;
  int last_connect;
  uv_handle_t *listener;
} fuv;

/* ---- Records, events, peers ------------------------------------------------
 */

static void fuv_touch(const void *p) {
  (void)*(const volatile char *)p;
}

/* The index slot of address `h`: its record's, or the empty one where it
 * would go. Records are found in constant time, since a harness input
 * looks handles up at every call into the loop. */
static size_t fuv_slot(const void *h) {
  uint64_t k = (uint64_t)(uintptr_t)h * 0x9e3779b97f4a7c15u;
  size_t i = (size_t)(k >> 32) & (FUV_INDEX_SIZE - 1);

  while (fuv.index[i] != 0 && fuv.recs[fuv.index[i] - 1].h != h)
    i = (i + 1) & (FUV_INDEX_SIZE - 1);
  return i;
}

/* The record of `h` (by address only: `h` may be freed memory). */
static fuv_rec_t *fuv_lookup(const void *h) {
  size_t i = fuv_slot(h);

  return fuv.index[i] != 0 ? &fuv.recs[fuv.index[i] - 1] : NULL;
}

/* The record of a handle the code hands us, which must be valid memory. */
static fuv_rec_t *fuv_find(const void *h) {
  fuv_touch(h);
  return fuv_lookup(h);
}

/* The open record of `h`; a handle never initialised, or closed, fails. */
static fuv_rec_t *fuv_open(const void *h) {
  fuv_rec_t *r = fuv_find(h);

  FUZZ_CHECK(r != NULL && !r->closed);
  return r;
}

static fuv_rec_t *fuv_add(uv_loop_t *loop, uv_handle_t *h,
                          uv_handle_type type) {
  fuv_rec_t *r = fuv_find(h);
  size_t i;

  FUZZ_CHECK(loop == fuv.loop);
  /* Initialising a handle that is still open corrupts libuv's loop. */
  FUZZ_CHECK(r == NULL || r->closed);
  if (r == NULL) {
    FUZZ_CHECK(fuv.nrecs < FUV_MAX_RECORDS);
    i = fuv.nrecs++;
    r = &fuv.recs[i];
    fuv.index[fuv_slot(h)] = (uint16_t)(i + 1);
  }
  memset(r, 0, sizeof(*r));
  r->h = h;
  r->peer = -1;
  r->held = -1;
  h->loop = loop;
  h->type = type;
  fuv.nopen++;
  FUZZ_CHECK(fuv.nopen <= FUV_MAX_HANDLES);
  return r;
}

static void fuv_queue(int kind, uv_handle_t *h, void *req, int status,
                      int peer) {
  fuv_ev_t *e;

  if (fuv.nev == fuv.evcap) {
    if (fuv.head > 0) {
      memmove(fuv.evs, fuv.evs + fuv.head,
              (fuv.nev - fuv.head) * sizeof(*fuv.evs));
      fuv.nev -= fuv.head;
      fuv.head = 0;
    }
    if (fuv.nev == fuv.evcap) {
      fuv.evcap = fuv.evcap != 0 ? 2 * fuv.evcap : 64;
      fuv.evs = realloc(fuv.evs, fuv.evcap * sizeof(*fuv.evs));
      FUZZ_CHECK(fuv.evs != NULL);
    }
  }
  e = &fuv.evs[fuv.nev++];
  memset(e, 0, sizeof(*e));
  e->kind = kind;
  e->h = h;
  e->req = req;
  e->status = status;
  e->peer = peer;
}

static int fuv_new_peer(void) {
  fuv_peer_t *p;

  if (fuv.npeers == FUV_MAX_PEERS)
    return -1;
  p = &fuv.peers[fuv.npeers];
  memset(p, 0, sizeof(*p));
  return fuv.npeers++;
}

static void fuv_bind(fuv_rec_t *r, int peer) {
  r->peer = peer;
  fuv.peers[peer].s = (uv_stream_t *)r->h;
}

static void fuv_offer(fuv_rec_t *l) {
  if (l->held < 0 && l->nbacklog > 0 && !l->offer_queued) {
    l->offer_queued = 1;
    fuv_queue(EV_OFFER, l->h, NULL, 0, -1);
  }
}

void fuv_reset(uv_loop_t *loop) {
  int i;

  for (i = 0; i < fuv.npeers; i++) {
    fuzz_buf_free(&fuv.peers[i].in);
    fuzz_buf_free(&fuv.peers[i].out);
  }
  free(fuv.evs);
  memset(fuv.recs, 0, fuv.nrecs * sizeof(fuv.recs[0]));
  memset(&fuv.nrecs, 0, sizeof(fuv) - offsetof(struct fuv_s, nrecs));
  memset(loop, 0, sizeof(*loop));
  fuv.loop = loop;
  fuv.last_connect = -1;
}

/* ---- Delivery -------------------------------------------------------------
 */

static void fuv_deliver(const fuv_ev_t *e) {
  fuv_rec_t *r = fuv_find(e->h);
  int status = e->status;

  switch (e->kind) {
  case EV_WRITE: {
    uv_write_t *req = e->req;
    fuv_touch(req);
    if (status == 0 && fuv.fail_writes > 0) {
      fuv.fail_writes--;
      status = UV_EPIPE;
    }
    if (req->cb != NULL)
      req->cb(req, status);
    break;
  }
  case EV_CLOSE:
    FUZZ_CHECK(r != NULL && r->closing && !r->closed);
    r->closed = 1;
    fuv.nopen--;
    if (r->close_cb != NULL)
      r->close_cb(e->h); /* may free the handle */
    break;
  case EV_CONNECT: {
    uv_connect_t *req = e->req;
    fuv_touch(req);
    if (r->closing)
      status = UV_ECANCELED;
    if (status == 0)
      fuv_bind(r, e->peer);
    else
      fuv.peers[e->peer].closed = 1;
    req->cb(req, status);
    break;
  }
  case EV_SHUTDOWN: {
    uv_shutdown_t *req = e->req;
    fuv_touch(req);
    if (req->cb != NULL)
      req->cb(req, r->closing ? UV_ECANCELED : status);
    break;
  }
  case EV_OFFER:
    r->offer_queued = 0;
    if (r->closing || r->held >= 0 || r->nbacklog == 0)
      break;
    r->held = r->backlog[0];
    memmove(r->backlog, r->backlog + 1,
            (size_t)--r->nbacklog * sizeof(r->backlog[0]));
    r->conn_cb((uv_stream_t *)e->h, 0);
    break;
  case EV_EXIT:
    if (!r->closing)
      r->exit_cb((uv_process_t *)e->h, e->exit_status, e->signo);
    break;
  default:
    abort();
  }
}

/* One read (data, or the end) for the first reading stream that has one. */
static int fuv_deliver_read(void) {
  int i;

  for (i = 0; i < fuv.npeers; i++) {
    fuv_peer_t *p = &fuv.peers[i];
    fuv_rec_t *r;
    uv_buf_t buf;
    size_t n;
    if (p->s == NULL)
      continue;
    r = fuv_find(p->s);
    if (!r->reading || r->closing ||
        (p->in_off == p->in.len && !p->eof && !p->reset))
      continue;
    buf = uv_buf_init(NULL, 0);
    r->alloc_cb(r->h, FUV_READ_SIZE, &buf);
    if (p->in_off < p->in.len) {
      if (buf.len == 0) {
        r->reading = 0;
        r->read_cb(p->s, UV_ENOBUFS, &buf);
        return 1;
      }
      n = p->in.len - p->in_off;
      if (p->chunk != 0 && n > p->chunk)
        n = p->chunk;
      if (n > buf.len)
        n = buf.len;
      memcpy(buf.base, p->in.p + p->in_off, n);
      p->in_off += n;
      r->read_cb(p->s, (ssize_t)n, &buf);
      return 1;
    }
    /* libuv stops reading before it reports the end. */
    r->reading = 0;
    if (p->reset) {
      p->reset = 0;
      p->eof = 1;
      r->read_cb(p->s, UV_ECONNRESET, &buf);
    } else {
      r->read_cb(p->s, UV_EOF, &buf);
    }
    return 1;
  }
  return 0;
}

/* The earliest armed timer due by `by`, or NULL. */
static fuv_rec_t *fuv_next_timer(uint64_t by) {
  fuv_rec_t *best = NULL;
  size_t i;

  for (i = 0; i < fuv.nrecs; i++) {
    fuv_rec_t *r = &fuv.recs[i];
    if (r->h == NULL || !r->armed || r->closing || r->due > by)
      continue;
    if (best == NULL || r->due < best->due ||
        (r->due == best->due && r->seq < best->seq))
      best = r;
  }
  return best;
}

static int fuv_fire_timer(void) {
  fuv_rec_t *r = fuv_next_timer(fuv.now);

  if (r == NULL)
    return 0;
  if (r->repeat != 0) {
    r->due = fuv.now + r->repeat;
    r->seq = ++fuv.seq;
  } else {
    r->armed = 0;
  }
  r->timer_cb((uv_timer_t *)r->h);
  return 1;
}

void fuv_run(void) {
  unsigned long steps;

  for (steps = 0;; steps++) {
    /* A loop that never goes idle is a busy loop in the code. */
    FUZZ_CHECK(steps < FUV_MAX_STEPS);
    if (fuv.head < fuv.nev) {
      fuv_ev_t e = fuv.evs[fuv.head++];
      fuv_deliver(&e);
    } else if (!fuv_deliver_read() && !fuv_fire_timer()) {
      break;
    }
  }
  fuv.head = fuv.nev = 0;
}

void fuv_advance(uint64_t ms) {
  uint64_t until = fuv.now + ms;
  fuv_rec_t *r;

  fuv_run();
  while ((r = fuv_next_timer(until)) != NULL) {
    if (r->due > fuv.now)
      fuv.now = r->due;
    fuv_run();
  }
  fuv.now = until;
  fuv_run();
}

size_t fuv_open_handles(void) {
  return fuv.nopen;
}

/* ---- The harness's side ----------------------------------------------------
 */

int fuv_incoming(void) {
  fuv_rec_t *l = fuv.listener != NULL ? fuv_find(fuv.listener) : NULL;
  int p;

  if (l == NULL || l->closing || l->nbacklog == FUV_MAX_PEERS)
    return -1;
  p = fuv_new_peer();
  if (p < 0)
    return -1;
  l->backlog[l->nbacklog++] = p;
  fuv_offer(l);
  return p;
}

int fuv_last_connect(void) {
  return fuv.last_connect;
}

int fuv_proc_pipe(int proc, int fd) {
  return proc >= 0 && proc < fuv.nprocs && fd >= 0 && fd < 3
             ? fuv.procs[proc].pipes[fd]
             : -1;
}

void fuv_set_connect_status(int status) {
  fuv.connect_status = status;
}

void fuv_set_spawn_status(int status) {
  fuv.spawn_status = status;
}

void fuv_fail_writes(unsigned n) {
  fuv.fail_writes = n;
}

void fuv_send(int peer, const void *data, size_t n, size_t chunk) {
  fuv_peer_t *p = &fuv.peers[peer];

  if (p->closed || p->eof)
    return;
  fuzz_buf_put(&p->in, data, n);
  p->chunk = chunk;
}

void fuv_eof(int peer) {
  fuv.peers[peer].eof = 1;
}

void fuv_reset_peer(int peer) {
  if (!fuv.peers[peer].eof)
    fuv.peers[peer].reset = 1;
}

const fuzz_buf_t *fuv_output(int peer) {
  return &fuv.peers[peer].out;
}

int fuv_closed(int peer) {
  return fuv.peers[peer].closed;
}

int fuv_shut(int peer) {
  return fuv.peers[peer].shut;
}

int fuv_npeers(void) {
  return fuv.npeers;
}

int fuv_nprocs(void) {
  return fuv.nprocs;
}

void fuv_exit(int proc, int64_t status, int signo) {
  fuv_proc_t *p = &fuv.procs[proc];
  fuv_rec_t *r = fuv_lookup(p->p);

  /* A process whose handle was closed is of no interest to the code. */
  if (p->exited || r == NULL || r->closing)
    return;
  p->exited = 1;
  fuv_queue(EV_EXIT, r->h, NULL, 0, -1);
  fuv.evs[fuv.nev - 1].exit_status = status;
  fuv.evs[fuv.nev - 1].signo = signo;
}

int fuv_killed(int proc) {
  return fuv.procs[proc].killed;
}

/* ---- libuv ------------------------------------------------------------------
 */

uint64_t uv_now(const uv_loop_t *loop) {
  (void)loop;
  return fuv.now;
}

void uv_update_time(uv_loop_t *loop) {
  (void)loop;
}

int uv_tcp_init(uv_loop_t *loop, uv_tcp_t *handle) {
  fuv_add(loop, (uv_handle_t *)handle, UV_TCP);
  return 0;
}

int uv_pipe_init(uv_loop_t *loop, uv_pipe_t *handle, int ipc) {
  (void)ipc;
  fuv_add(loop, (uv_handle_t *)handle, UV_NAMED_PIPE);
  return 0;
}

int uv_timer_init(uv_loop_t *loop, uv_timer_t *handle) {
  fuv_add(loop, (uv_handle_t *)handle, UV_TIMER);
  return 0;
}

void uv_close(uv_handle_t *handle, uv_close_cb close_cb) {
  fuv_rec_t *r = fuv_open(handle);
  int i;

  /* libuv asserts that a handle is closed once. */
  FUZZ_CHECK(!r->closing);
  r->closing = 1;
  r->close_cb = close_cb;
  r->reading = 0;
  r->armed = 0;
  if (r->peer >= 0) {
    fuv.peers[r->peer].closed = 1;
    fuv.peers[r->peer].s = NULL;
    r->peer = -1;
  }
  for (i = 0; i < r->nbacklog; i++)
    fuv.peers[r->backlog[i]].closed = 1;
  if (r->held >= 0)
    fuv.peers[r->held].closed = 1;
  r->nbacklog = 0;
  r->held = -1;
  if (fuv.listener == handle)
    fuv.listener = NULL;
  fuv_queue(EV_CLOSE, handle, NULL, 0, -1);
}

int uv_is_closing(const uv_handle_t *handle) {
  fuv_rec_t *r = fuv_find(handle);

  FUZZ_CHECK(r != NULL);
  return r->closing;
}

int uv_tcp_bind(uv_tcp_t *handle, const struct sockaddr *addr,
                unsigned int flags) {
  (void)flags;
  fuv_touch(addr);
  fuv_open(handle);
  return 0;
}

int uv_listen(uv_stream_t *stream, int backlog, uv_connection_cb cb) {
  fuv_rec_t *r = fuv_open(stream);

  (void)backlog;
  r->conn_cb = cb;
  fuv.listener = (uv_handle_t *)stream;
  return 0;
}

int uv_accept(uv_stream_t *server, uv_stream_t *client) {
  fuv_rec_t *l = fuv_open(server), *c = fuv_open(client);

  if (l->held < 0)
    return UV_EAGAIN;
  FUZZ_CHECK(!c->closing && c->peer < 0);
  fuv_bind(c, l->held);
  l->held = -1;
  fuv_offer(l);
  return 0;
}

static void fuv_addr(struct sockaddr *name, int *namelen, int port) {
  struct sockaddr_in sin;

  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_port = htons((uint16_t)port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(*namelen >= (int)sizeof(sin));
  memcpy(name, &sin, sizeof(sin));
  *namelen = (int)sizeof(sin);
}

/* No descriptor: code that would use the socket itself (setsockopt,
 * sendmsg) must cope with not having one, as it does when libuv fails. */
int uv_fileno(const uv_handle_t *handle, uv_os_fd_t *fd) {
  fuv_open(handle);
  *fd = -1;
  return UV_EBADF;
}

int uv_tcp_getsockname(const uv_tcp_t *handle, struct sockaddr *name,
                       int *namelen) {
  fuv_open(handle);
  fuv_addr(name, namelen, 7000);
  return 0;
}

int uv_tcp_getpeername(const uv_tcp_t *handle, struct sockaddr *name,
                       int *namelen) {
  fuv_rec_t *r = fuv_open(handle);

  if (r->peer < 0)
    return UV_ENOTCONN;
  fuv_addr(name, namelen, 20000 + r->peer);
  return 0;
}

int uv_tcp_nodelay(uv_tcp_t *handle, int enable) {
  (void)enable;
  fuv_open(handle);
  return 0;
}

int uv_tcp_keepalive(uv_tcp_t *handle, int enable, unsigned int delay) {
  (void)enable;
  (void)delay;
  fuv_open(handle);
  return 0;
}

int uv_tcp_connect(uv_connect_t *req, uv_tcp_t *handle,
                   const struct sockaddr *addr, uv_connect_cb cb) {
  fuv_rec_t *r = fuv_open(handle);
  int p;

  fuv_touch(addr);
  if (r->closing)
    return UV_EINVAL;
  p = fuv_new_peer();
  if (p < 0)
    return UV_ENOMEM;
  fuv.last_connect = p;
  req->handle = (uv_stream_t *)handle;
  req->cb = cb;
  fuv_queue(EV_CONNECT, (uv_handle_t *)handle, req, fuv.connect_status, p);
  return 0;
}

int uv_read_start(uv_stream_t *stream, uv_alloc_cb alloc_cb,
                  uv_read_cb read_cb) {
  fuv_rec_t *r = fuv_open(stream);

  FUZZ_CHECK(alloc_cb != NULL && read_cb != NULL);
  if (r->closing)
    return UV_EINVAL;
  if (r->peer < 0)
    return UV_ENOTCONN;
  r->reading = 1;
  r->alloc_cb = alloc_cb;
  r->read_cb = read_cb;
  return 0;
}

int uv_read_stop(uv_stream_t *stream) {
  fuv_open(stream)->reading = 0;
  return 0;
}

int uv_write(uv_write_t *req, uv_stream_t *handle, const uv_buf_t bufs[],
             unsigned int nbufs, uv_write_cb cb) {
  fuv_rec_t *r = fuv_open(handle);
  unsigned i;

  fuv_touch(req);
  if (r->closing || r->peer < 0)
    return UV_EBADF;
  for (i = 0; i < nbufs; i++)
    fuzz_buf_put(&fuv.peers[r->peer].out, bufs[i].base, bufs[i].len);
  req->handle = handle;
  req->cb = cb;
  fuv_queue(EV_WRITE, (uv_handle_t *)handle, req, 0, r->peer);
  return 0;
}

size_t uv_stream_get_write_queue_size(const uv_stream_t *stream) {
  fuv_open(stream);
  return 0; /* every write is taken at once */
}

int uv_shutdown(uv_shutdown_t *req, uv_stream_t *handle, uv_shutdown_cb cb) {
  fuv_rec_t *r = fuv_open(handle);

  fuv_touch(req);
  if (r->closing || r->peer < 0)
    return UV_ENOTCONN;
  fuv.peers[r->peer].shut = 1;
  req->handle = handle;
  req->cb = cb;
  fuv_queue(EV_SHUTDOWN, (uv_handle_t *)handle, req, 0, r->peer);
  return 0;
}

int uv_timer_start(uv_timer_t *handle, uv_timer_cb cb, uint64_t timeout,
                   uint64_t repeat) {
  fuv_rec_t *r = fuv_open(handle);

  FUZZ_CHECK(cb != NULL);
  if (r->closing)
    return UV_EINVAL;
  r->armed = 1;
  r->due = fuv.now + timeout;
  r->repeat = repeat;
  r->seq = ++fuv.seq;
  r->timer_cb = cb;
  return 0;
}

int uv_timer_stop(uv_timer_t *handle) {
  fuv_open(handle)->armed = 0;
  return 0;
}

int uv_spawn(uv_loop_t *loop, uv_process_t *handle,
             const uv_process_options_t *options) {
  fuv_rec_t *r = fuv_add(loop, (uv_handle_t *)handle, UV_PROCESS);
  fuv_proc_t *proc;
  int i;

  fuv_touch(options->file);
  if (fuv.spawn_status != 0)
    return fuv.spawn_status;
  FUZZ_CHECK(fuv.nprocs < FUV_MAX_PROCS);
  handle->pid = FUV_PID_BASE + fuv.nprocs;
  r->exit_cb = options->exit_cb;
  proc = &fuv.procs[fuv.nprocs++];
  proc->p = handle;
  for (i = 0; i < 3; i++) {
    fuv_rec_t *s;
    proc->pipes[i] = -1;
    if (i >= options->stdio_count ||
        !(options->stdio[i].flags & UV_CREATE_PIPE))
      continue;
    s = fuv_open(options->stdio[i].data.stream);
    proc->pipes[i] = fuv_new_peer();
    FUZZ_CHECK(proc->pipes[i] >= 0);
    fuv_bind(s, proc->pipes[i]);
  }
  return 0;
}

int uv_process_kill(uv_process_t *handle, int signum) {
  int i;

  fuv_open(handle);
  for (i = 0; i < fuv.nprocs; i++)
    if (fuv.procs[i].p == handle)
      fuv.procs[i].killed = signum;
  return 0;
}
