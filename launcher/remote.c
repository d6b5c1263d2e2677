/* SPDX-License-Identifier: MIT */
/*
 * Starting ranks on other hosts, minimprun's side (see remote.h).
 *
 * Every host runs one agent at once, "AGENT... HOST LAUNCHER --daemon ADDR
 * INDEX"; the job key goes on the agent's standard input, never on a
 * command line, so `ps` does not show it, and never on the control
 * connection. The daemon connects back to the control server, both prove
 * they hold the key (HELLO, CHALLENGE, PROOF, WELCOME: ctrl.h) and the
 * daemon gets its LAUNCH; from then on its connection carries the ranks'
 * starts, output and exits.
 *
 * A host is STARTING until its daemon's proof, RUNNING until its BYE (DONE), or
 * GONE: the agent could not run or exited first, the daemon did not
 * connect back within MMP__REMOTE_START_MS, or the connection ended
 * before BYE. Each host is reported gone at most once.
 *
 * Reports that an interface call would cause (a failed spawn during
 * start, hosts given up by a kill) are deferred through the host's timer,
 * so callbacks never run inside those calls.
 */
#include "remote.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ctrl.h"
#include "input.h"
#include "minimp.h"
#include "transport/auth.h"
#include "transport/transport.h"
#include "transport/util.h"

#define RM_MAX_PENDING 64     /* connections that have not proved the key */
#define RM_AGENT_FLUSH_MS 300 /* a dead agent's last words may follow */
#define RM_AGENT_TERM_MS 2000 /* after stop: SIGTERM to agents left */
#define RM_AGENT_KILL_MS 2000 /* ...then SIGKILL */
#define RM_STDIN_CREDIT (256u << 10) /* unacknowledged STDIN bytes */
#define RM_MAX_HOSTNAME 255

enum { H_STARTING = 0, H_RUNNING, H_DONE, H_GONE };

typedef struct rm_host_s rm_host_t;

/* What a control connection belongs to: a host once its proof verified. */
typedef struct rm_peer_s {
  mmp__list_t node; /* in rm->pending until then */
  mmp__remote_t *rm;
  rm_host_t *host;
  mmp__ctrl_conn_t *conn;
  /* The handshake, while pending: our CHALLENGE body (nonce, flags), then
   * HELLO's claim. */
  uint8_t challenge[MMP__CTRL_CHALLENGE_LEN];
  int hello;
  uint32_t claim;
  char version[MMP__CTRL_MAX_VERSION + 1]; /* the daemon's minimprun */
  mmp__auth_t auth;
} rm_peer_t;

struct rm_host_s {
  mmp__remote_t *rm;
  int pos; /* index in rm->hosts, the daemon's INDEX */
  mmp__remote_host_t h;
  rm_peer_t peer;
  int state;
  uv_process_t agent;
  uv_pipe_t in; /* the agent's stdin: the key, then EOF */
  uv_pipe_t out[2];
  uv_write_t key_req;
  uv_timer_t timer;
  int agent_running;
  int agent_exited;
  int64_t status;
  int signo;
  int outs_open;
  int flushing; /* the agent died; waiting for its last output */
  char *report; /* a deferred host_lost message, or NULL */
};

struct mmp__remote_s {
  uv_loop_t *loop;
  mmp__remote_cb_t cb;
  uint8_t key[MMP__JOB_KEY_LEN];
  char keyline[2 * MMP__JOB_KEY_LEN + 2];
  char addr[64]; /* the control server, "ip:port" */
  char agent_str[256];
  char *const *agent;
  const char *launcher;
  rm_host_t *hosts;
  int nhosts;
  int *ranks; /* every host's ranks, one block */
  uv_tcp_t server;
  uv_timer_t reap; /* SIGTERM, then SIGKILL, to agents left after stop */
  int reap_stage;
  mmp__list_t pending;
  int npending;
  int killed;
  int stopping;
  int agents_running;
  unsigned live; /* handles not yet closed, plus one while not stopped */
  /* Standard input for a rank on a remote host. */
  int stdin_rank;
  int encrypt; /* seal each control connection after its handshake */
  rm_host_t *stdin_host;
  mmp__input_t *input;
  size_t unacked;
  int stdin_paused;
};

static void rm_host_gone(rm_host_t *hs);

/* ---- Lifetime ------------------------------------------------------------ */

static void rm_unlive(mmp__remote_t *rm) {
  int i;

  if (--rm->live > 0)
    return;
  for (i = 0; i < rm->nhosts; i++) {
    free(rm->hosts[i].h.launch);
    free(rm->hosts[i].report);
  }
  free(rm->ranks);
  free(rm->hosts);
  free(rm);
}

static void rm_on_close(uv_handle_t *h) {
  rm_unlive(h->data);
}

static void rm_host_on_close(uv_handle_t *h) {
  rm_unlive(((rm_host_t *)h->data)->rm);
}

static void rm_close(uv_handle_t *h, uv_close_cb cb) {
  if (!uv_is_closing(h))
    uv_close(h, cb);
}

/* ---- Standard input --------------------------------------------------------
 */

static void rm_send_empty(mmp__ctrl_conn_t *c, uint8_t type) {
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__ctrl_send(c, type, &w);
}

static void rm_send_u32(mmp__ctrl_conn_t *c, uint8_t type, uint32_t v) {
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, v);
  mmp__ctrl_send(c, type, &w);
}

static void rm_on_input(void *ctx, const char *data, size_t n) {
  mmp__remote_t *rm = ctx;
  mmp__ctrl_conn_t *c = rm->stdin_host->peer.conn;
  mmp__boot_wr_t w;

  if (c == NULL)
    return;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_blob(&w, data, n);
  if (mmp__ctrl_send(c, MMP__C_STDIN, &w) != 0 || n == 0)
    return;
  rm->unacked += n;
  if (rm->unacked >= RM_STDIN_CREDIT && !rm->stdin_paused) {
    rm->stdin_paused = 1;
    mmp__input_pause(rm->input);
  }
}

static void rm_stdin_stop(mmp__remote_t *rm) {
  mmp__input_stop(rm->input);
  rm->input = NULL;
}

static void rm_on_stdin_ack(mmp__remote_t *rm, uint32_t n) {
  rm->unacked -= n <= rm->unacked ? n : rm->unacked;
  if (rm->stdin_paused && rm->unacked < RM_STDIN_CREDIT && rm->input != NULL) {
    rm->stdin_paused = 0;
    mmp__input_resume(rm->input);
  }
}

/* ---- Reports ------------------------------------------------------------- */

/* "3, 11, 19" or "3, 11, ... (64 in all)". */
static void rm_rank_list(const rm_host_t *hs, char *out, size_t len) {
  size_t n = 0;
  int i;

  out[0] = '\0';
  for (i = 0; i < hs->h.nranks && n + 32 < len; i++) {
    if (i == 8 && hs->h.nranks > 9) {
      snprintf(out + n, len - n, ", ... (%d in all)", hs->h.nranks);
      return;
    }
    n += (size_t)snprintf(out + n, len - n, "%s%d", i > 0 ? ", " : "",
                          hs->h.ranks[i]);
  }
}

static void rm_on_report(uv_timer_t *t) {
  rm_host_t *hs = t->data;
  mmp__remote_t *rm = hs->rm;
  char *msg = hs->report;

  hs->report = NULL;
  if (!rm->stopping)
    rm->cb.host_lost(rm->cb.ctx, hs->h.id, msg);
  free(msg);
}

/* The host is gone; it is reported later when `later`, else now. */
static void rm_host_lost(rm_host_t *hs, const char *msg, int later) {
  mmp__remote_t *rm = hs->rm;

  if (hs->state == H_GONE || hs->state == H_DONE)
    return;
  rm_host_gone(hs);
  if (!later) {
    rm->cb.host_lost(rm->cb.ctx, hs->h.id, msg);
    return;
  }
  free(hs->report);
  hs->report = msg != NULL ? strdup(msg) : NULL;
  uv_timer_stop(&hs->timer);
  uv_timer_start(&hs->timer, rm_on_report, 0, 0);
}

/* Marks the host gone and drops its connection. */
static void rm_host_gone(rm_host_t *hs) {
  mmp__remote_t *rm = hs->rm;

  hs->state = H_GONE;
  uv_timer_stop(&hs->timer);
  if (hs->peer.conn != NULL) {
    mmp__ctrl_conn_close(hs->peer.conn, NULL);
    hs->peer.conn = NULL;
  }
  if (rm->stdin_host == hs)
    rm_stdin_stop(rm);
}

static void rm_lost_contact(rm_host_t *hs, const char *why) {
  char ranks[160], msg[512];

  rm_rank_list(hs, ranks, sizeof(ranks));
  snprintf(msg, sizeof(msg), "lost contact with host %s (rank%s %s): %s",
           hs->h.name, hs->h.nranks > 1 ? "s" : "", ranks, why);
  rm_host_lost(hs, msg, 0);
}

/* ---- Agents ---------------------------------------------------------------
 */

/* The agent died before its daemon said HELLO. */
static void rm_agent_failed(rm_host_t *hs) {
  mmp__remote_t *rm = hs->rm;
  char how[96], msg[640];

  if (hs->signo != 0)
    snprintf(how, sizeof(how), "was killed by signal %d (%s)", hs->signo,
             mmp__signame(hs->signo));
  else
    snprintf(how, sizeof(how), "exited with code %d", (int)hs->status);
  snprintf(msg, sizeof(msg), "cannot start on host %s: agent '%s' %s%s%s%s",
           hs->h.name, rm->agent_str, how,
           hs->status == 126 || hs->status == 127 ? " (is minimprun at '" : "",
           hs->status == 126 || hs->status == 127 ? rm->launcher : "",
           hs->status == 126 || hs->status == 127 ? "' there? see --launcher)"
                                                  : "");
  rm_host_lost(hs, msg, 0);
}

static void rm_on_agent_flushed(uv_timer_t *t) {
  rm_agent_failed(t->data);
}

static void rm_maybe_agent_failed(rm_host_t *hs) {
  if (hs->state != H_STARTING || !hs->agent_exited || hs->rm->stopping)
    return;
  if (hs->outs_open == 0) {
    rm_agent_failed(hs);
  } else if (!hs->flushing) {
    /* Its last words may still be in the pipes; let them out first. */
    hs->flushing = 1;
    uv_timer_stop(&hs->timer);
    uv_timer_start(&hs->timer, rm_on_agent_flushed, RM_AGENT_FLUSH_MS, 0);
  }
}

static void rm_on_agent_exit(uv_process_t *p, int64_t status, int signo) {
  rm_host_t *hs = p->data;
  mmp__remote_t *rm = hs->rm;

  hs->agent_running = 0;
  hs->agent_exited = 1;
  hs->status = status;
  hs->signo = signo;
  rm->agents_running--;
  uv_close((uv_handle_t *)p, rm_host_on_close);
  if (rm->stopping) {
    if (rm->agents_running == 0)
      rm_close((uv_handle_t *)&rm->reap, rm_on_close);
    return;
  }
  rm_maybe_agent_failed(hs);
}

static void rm_agent_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char rbuf[65536]; /* each read is consumed at once */

  (void)h;
  (void)hint;
  *buf = uv_buf_init(rbuf, sizeof(rbuf));
}

static void rm_on_agent_read(uv_stream_t *st, ssize_t nread,
                             const uv_buf_t *buf) {
  rm_host_t *hs = st->data;
  mmp__remote_t *rm = hs->rm;
  int fd = st == (uv_stream_t *)&hs->out[0] ? 1 : 2;

  if (nread > 0) {
    rm->cb.agent_output(rm->cb.ctx, hs->h.id, fd, buf->base, (size_t)nread);
  } else if (nread < 0) {
    rm_close((uv_handle_t *)st, rm_host_on_close);
    hs->outs_open--;
    rm->cb.agent_output(rm->cb.ctx, hs->h.id, fd, NULL, 0);
    rm_maybe_agent_failed(hs);
  }
}

static void rm_on_key_written(uv_write_t *req, int status) {
  rm_host_t *hs = req->data;

  (void)status;
  /* EOF after the key: the daemon reads nothing more from it. */
  rm_close((uv_handle_t *)&hs->in, rm_host_on_close);
}

static void rm_on_start_deadline(uv_timer_t *t) {
  rm_host_t *hs = t->data;
  char msg[512];

  snprintf(msg, sizeof(msg),
           "cannot start on host %s: its daemon did not connect back within "
           "%d s",
           hs->h.name, MMP__REMOTE_START_MS / 1000);
  rm_host_lost(hs, msg, 0);
}

/* Runs "AGENT... HOST LAUNCHER --daemon ADDR INDEX". */
static int rm_agent_spawn(rm_host_t *hs) {
  mmp__remote_t *rm = hs->rm;
  char index[16], *argv[64];
  mmp__spawn_t s;
  int n = 0, k;

  for (k = 0; rm->agent[k] != NULL && n < 58; k++)
    argv[n++] = rm->agent[k];
  snprintf(index, sizeof(index), "%d", hs->pos);
  argv[n++] = (char *)hs->h.name;
  argv[n++] = (char *)rm->launcher;
  argv[n++] = "--daemon";
  argv[n++] = rm->addr;
  argv[n++] = index;
  argv[n] = NULL;
  memset(&s, 0, sizeof(s));
  s.argv = argv;
  s.in_mode = MMP__STDIN_PIPE;
  s.in = &hs->in;
  s.out[0] = &hs->out[0];
  s.out[1] = &hs->out[1];
  s.exit_cb = rm_on_agent_exit;
  return mmp__spawn(rm->loop, &hs->agent, &s);
}

static void rm_host_start(rm_host_t *hs) {
  mmp__remote_t *rm = hs->rm;
  uv_buf_t key = uv_buf_init(rm->keyline, (unsigned)strlen(rm->keyline));
  char msg[512];
  int rc, k;

  uv_timer_init(rm->loop, &hs->timer);
  uv_pipe_init(rm->loop, &hs->in, 0);
  uv_pipe_init(rm->loop, &hs->out[0], 0);
  uv_pipe_init(rm->loop, &hs->out[1], 0);
  hs->timer.data = hs->in.data = hs->out[0].data = hs->out[1].data = hs;
  hs->agent.data = hs->key_req.data = hs;
  rm->live += 4;
  rc = rm_agent_spawn(hs);
  rm->live++; /* the process handle, initialised even on failure */
  if (rc != 0) {
    uv_close((uv_handle_t *)&hs->agent, rm_host_on_close);
    for (k = 0; k < 2; k++)
      uv_close((uv_handle_t *)&hs->out[k], rm_host_on_close);
    uv_close((uv_handle_t *)&hs->in, rm_host_on_close);
    snprintf(msg, sizeof(msg),
             "cannot start on host %s: cannot run agent "
             "'%s': %s",
             hs->h.name, rm->agent_str, uv_strerror(rc));
    rm_host_lost(hs, msg, 1);
    return;
  }
  hs->agent_running = 1;
  rm->agents_running++;
  if (uv_write(&hs->key_req, (uv_stream_t *)&hs->in, &key, 1,
               rm_on_key_written) != 0)
    uv_close((uv_handle_t *)&hs->in, rm_host_on_close);
  for (k = 0; k < 2; k++) {
    if (uv_read_start((uv_stream_t *)&hs->out[k], rm_agent_alloc,
                      rm_on_agent_read) == 0)
      hs->outs_open++;
    else
      uv_close((uv_handle_t *)&hs->out[k], rm_host_on_close);
  }
  uv_timer_start(&hs->timer, rm_on_start_deadline, MMP__REMOTE_START_MS, 0);
}

/* ---- Control connections ------------------------------------------------- */

/* The rank `rank` runs on hs (ranks are ascending). */
static int rm_has_rank(const rm_host_t *hs, uint32_t rank) {
  int lo = 0, hi = hs->h.nranks - 1;

  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if ((uint32_t)hs->h.ranks[mid] == rank)
      return 1;
    if ((uint32_t)hs->h.ranks[mid] < rank)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return 0;
}

static void rm_violation(rm_host_t *hs, const char *why) {
  char reason[160];

  snprintf(reason, sizeof(reason), "protocol violation: %s", why);
  MMP__LOG(MMP__LOG_WARN, "control: host %s: %s", hs->h.name, reason);
  if (hs->peer.conn != NULL) {
    mmp__ctrl_conn_close(hs->peer.conn, why);
    hs->peer.conn = NULL;
  }
  rm_lost_contact(hs, reason);
}

/* A message of a running host's daemon. */
static void rm_host_message(rm_host_t *hs, uint8_t type, const uint8_t *body,
                            size_t len) {
  mmp__remote_t *rm = hs->rm;
  mmp__boot_rd_t rd;
  const uint8_t *data = NULL;
  uint32_t rank = 0, a = 0, b = 0;
  size_t n = 0;

  mmp__boot_rd_init(&rd, body, len);
  if (type == MMP__C_STARTED || type == MMP__C_EXIT || type == MMP__C_OUTPUT)
    rank = mmp__boot_rd_u32(&rd);
  if (type == MMP__C_STARTED || type == MMP__C_EXIT || type == MMP__C_OUTPUT ||
      type == MMP__C_STDIN_ACK)
    a = mmp__boot_rd_u32(&rd);
  if (type == MMP__C_STARTED || type == MMP__C_EXIT)
    b = mmp__boot_rd_u32(&rd);
  if (type == MMP__C_OUTPUT)
    n = mmp__boot_rd_blob(&rd, &data, MMP__CTRL_CHUNK);
  if (rd.bad || rd.left != 0)
    return rm_violation(hs, "malformed message");
  if ((type == MMP__C_STARTED || type == MMP__C_EXIT ||
       type == MMP__C_OUTPUT) &&
      !rm_has_rank(hs, rank))
    return rm_violation(hs, "a rank that does not run there");
  switch (type) {
  case MMP__C_STARTED:
    rm->cb.started(rm->cb.ctx, (int)rank, (int)a, (int)(int32_t)b);
    break;
  case MMP__C_OUTPUT:
    if (a != 1 && a != 2)
      return rm_violation(hs, "bad output stream");
    rm->cb.output(rm->cb.ctx, (int)rank, (int)a, (const char *)data, n);
    break;
  case MMP__C_EXIT:
    if ((int)rank == rm->stdin_rank)
      rm_stdin_stop(rm);
    rm->cb.exited(rm->cb.ctx, (int)rank, (int32_t)a, (int)b);
    break;
  case MMP__C_STDIN_ACK:
    rm_on_stdin_ack(rm, a);
    break;
  case MMP__C_BYE:
    hs->state = H_DONE;
    mmp__ctrl_conn_close(hs->peer.conn, NULL);
    hs->peer.conn = NULL;
    break;
  default:
    rm_violation(hs, "unexpected message type");
  }
}

static void rm_reject(rm_peer_t *p, const char *why) {
  char who[64];

  mmp__ctrl_conn_peer(p->conn, who, sizeof(who));
  MMP__LOG(MMP__LOG_WARN, "control: rejecting a connection from %s: %s", who,
           why);
  mmp__list_remove(&p->node);
  p->rm->npending--;
  mmp__ctrl_conn_close(p->conn, why);
  mmp__auth_end(&p->auth);
  free(p);
}

/* HELLO: nonce[32], host u32, pid u32, hostname str, version str. What
 * it claims is kept for after the proof. */
static void rm_on_hello(rm_peer_t *p, const uint8_t *body, size_t len) {
  mmp__boot_rd_t rd;
  const char *name, *version;
  size_t vlen;

  mmp__boot_rd_init(&rd, body, len);
  (void)mmp__boot_rd_raw(&rd, MMP__NONCE_LEN);
  p->claim = mmp__boot_rd_u32(&rd);
  (void)mmp__boot_rd_u32(&rd);
  (void)mmp__boot_rd_str(&rd, &name, RM_MAX_HOSTNAME);
  vlen = mmp__boot_rd_str(&rd, &version, MMP__CTRL_MAX_VERSION);
  for (size_t i = 0; !rd.bad && i < vlen; i++)
    rd.bad = version[i] < 0x20 || version[i] > 0x7e;
  if (rd.bad || rd.left != 0)
    return rm_reject(p, "malformed HELLO");
  memcpy(p->version, version, vlen);
  p->version[vlen] = '\0';
  mmp__auth_begin(&p->auth, p->rm->key, MMP__AUTH_CTRL, body, len, p->challenge,
                  sizeof(p->challenge));
  p->hello = 1;
}

/* The daemon holds the key but is another minimprun: its host cannot run
 * this job, since the control protocol and the ranks' environment may
 * differ between versions. */
static void rm_version_differs(rm_peer_t *p, rm_host_t *hs) {
  char msg[640];

  snprintf(msg, sizeof(msg),
           "cannot start on host %s: minimprun there ('%s') is version %s, "
           "this one %s; install the same version on every host, or give "
           "--launcher",
           hs->h.name, hs->rm->launcher, p->version, MMP__LAUNCHER_VERSION);
  rm_reject(p, "minimprun's version differs from this daemon's");
  rm_host_lost(hs, msg, 0);
}

/* PROOF: the key first, then the host it claimed; then our own proof and
 * the host's LAUNCH. */
static void rm_on_proof(rm_peer_t *p, const uint8_t *body, size_t len) {
  mmp__remote_t *rm = p->rm;
  uint8_t mac[MMP__MAC_LEN], d2l[MMP__SESSION_KEY_LEN],
      l2d[MMP__SESSION_KEY_LEN];
  mmp__boot_wr_t w;
  rm_host_t *hs;
  uint8_t *launch;
  int rc;

  if (len != MMP__MAC_LEN)
    return rm_reject(p, "malformed PROOF");
  if (!mmp__auth_check(&p->auth, MMP__AUTH_DIALER, MMP__AUTH_PROVE, body))
    return rm_reject(p, "bad job key (the daemon's proof does not verify)");
  if (p->claim >= (uint32_t)rm->nhosts)
    return rm_reject(p, "unknown host index");
  hs = &rm->hosts[p->claim];
  if (hs->state != H_STARTING || hs->peer.conn != NULL)
    return rm_reject(p, "that host is not expected (any more)");
  if (strcmp(p->version, MMP__LAUNCHER_VERSION) != 0)
    return rm_version_differs(p, hs);
  mmp__auth_mac(&p->auth, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, mac);
  if (rm->encrypt)
    mmp__auth_session_keys(&p->auth, rm->key, d2l, l2d);
  mmp__list_remove(&p->node);
  rm->npending--;
  hs->peer.conn = p->conn;
  mmp__ctrl_conn_set_data(p->conn, &hs->peer);
  mmp__auth_end(&p->auth);
  free(p);
  uv_timer_stop(&hs->timer);
  hs->state = H_RUNNING;
  mmp__ctrl_conn_deadline(hs->peer.conn, 0, NULL);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, mac, sizeof(mac));
  rc = mmp__ctrl_send(hs->peer.conn, MMP__C_WELCOME, &w);
  /* WELCOME is the last clear message each way: the daemon sends nothing
   * after its PROOF until WELCOME verifies. */
  if (rc == 0 && rm->encrypt)
    rc = mmp__ctrl_conn_seal(hs->peer.conn, l2d, d2l);
  mmp__auth_wipe(d2l, sizeof(d2l));
  mmp__auth_wipe(l2d, sizeof(l2d));
  if (rc != 0) {
    free(hs->h.launch);
    hs->h.launch = NULL;
    return; /* `ended` reported it */
  }
  launch = hs->h.launch;
  hs->h.launch = NULL; /* taken over by the send, even when it fails */
  if (mmp__ctrl_send_buf(hs->peer.conn, launch, hs->h.launch_len) != 0)
    return; /* `ended` reported it */
  if (rm->stdin_host == hs &&
      mmp__input_start(rm->loop, 0, rm_on_input, rm, &rm->input) != 0)
    MMP__LOG(MMP__LOG_WARN, "cannot read the standard input");
}

static void rm_on_message(mmp__ctrl_conn_t *c, uint8_t type,
                          const uint8_t *body, size_t len) {
  rm_peer_t *p = mmp__ctrl_conn_data(c);

  if (p->host != NULL)
    rm_host_message(p->host, type, body, len);
  else if (!p->hello && type == MMP__C_HELLO)
    rm_on_hello(p, body, len);
  else if (p->hello && type == MMP__C_PROOF)
    rm_on_proof(p, body, len);
  else
    rm_reject(p, p->hello ? "expected PROOF" : "expected HELLO");
}

static void rm_on_ended(mmp__ctrl_conn_t *c, const char *reason) {
  rm_peer_t *p = mmp__ctrl_conn_data(c);
  rm_host_t *hs = p->host;

  if (hs == NULL) {
    MMP__LOG(MMP__LOG_WARN,
             "control: a connection ended before its handshake: %s", reason);
    mmp__list_remove(&p->node);
    p->rm->npending--;
    mmp__auth_end(&p->auth);
    free(p);
    return;
  }
  hs->peer.conn = NULL;
  if (hs->state == H_RUNNING)
    rm_lost_contact(hs, reason);
}

static const mmp__ctrl_cb_t rm_ctrl_cb = {rm_on_message, rm_on_ended, NULL};

static void rm_on_connection(uv_stream_t *server, int status) {
  mmp__remote_t *rm = server->data;
  mmp__boot_wr_t w;
  rm_peer_t *p;

  if (status < 0 || rm->stopping)
    return;
  p = calloc(1, sizeof(*p));
  if (p == NULL || mmp__ctrl_conn_alloc(rm->loop, &rm_ctrl_cb, p, &p->conn)) {
    free(p);
    return;
  }
  p->rm = rm;
  if (mmp__ctrl_conn_accept(p->conn, server) != 0 ||
      rm->npending >= RM_MAX_PENDING) {
    mmp__ctrl_conn_close(p->conn, NULL);
    free(p);
    return;
  }
  mmp__list_insert_tail(&rm->pending, &p->node);
  rm->npending++;
  mmp__ctrl_conn_deadline(p->conn, MMP__CTRL_HELLO_MS, "no handshake in time");
  /* We speak first: a fresh nonce the daemon's proof must cover, and
   * whether we seal, which the proofs cover too. */
  mmp__auth_nonce(p->challenge);
  mmp__put_u32(p->challenge + MMP__NONCE_LEN, rm->encrypt ? MMP__CTRL_SEAL : 0);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, p->challenge, sizeof(p->challenge));
  mmp__ctrl_send(p->conn, MMP__C_CHALLENGE, &w);
}

/* ---- Interface ---------------------------------------------------------- */

static int rm_listen(mmp__remote_t *rm, const struct sockaddr *addr) {
  struct sockaddr_storage ss;
  int n = sizeof(ss);

  uv_tcp_init(rm->loop, &rm->server);
  rm->server.data = rm;
  rm->live++;
  if (uv_tcp_bind(&rm->server, addr, 0) != 0 ||
      uv_listen((uv_stream_t *)&rm->server, 128, rm_on_connection) != 0 ||
      uv_tcp_getsockname(&rm->server, (struct sockaddr *)&ss, &n) != 0 ||
      mmp__addr_format((struct sockaddr *)&ss, rm->addr, sizeof(rm->addr)))
    return MMP_EADDR;
  return 0;
}

static void rm_agent_string(mmp__remote_t *rm) {
  size_t n = 0;
  int k;

  for (k = 0; rm->agent[k] != NULL && n < sizeof(rm->agent_str); k++)
    n += (size_t)snprintf(rm->agent_str + n, sizeof(rm->agent_str) - n, "%s%s",
                          k > 0 ? " " : "", rm->agent[k]);
}

int mmp__remote_start(uv_loop_t *loop, const mmp__remote_opts_t *o,
                      mmp__remote_host_t *hosts, int nhosts,
                      const mmp__remote_cb_t *cb, mmp__remote_t **out) {
  mmp__remote_t *rm = calloc(1, sizeof(*rm));
  size_t nranks = 0;
  size_t nh = nhosts > 0 ? (size_t)nhosts : 0;
  int i, rc;

  if (mmp__auth_init() != 0) {
    for (i = 0; i < nhosts; i++)
      free(hosts[i].launch);
    free(rm);
    return MMP_EIO;
  }
  for (i = 0; i < nhosts; i++)
    nranks += (size_t)hosts[i].nranks;
  if (rm == NULL || (rm->hosts = calloc(nh + 1, sizeof(rm_host_t))) == NULL ||
      (rm->ranks = malloc((nranks + 1) * sizeof(int))) == NULL) {
    for (i = 0; i < nhosts; i++)
      free(hosts[i].launch);
    if (rm != NULL)
      free(rm->hosts);
    free(rm);
    return MMP_ENOMEM;
  }
  rm->loop = loop;
  rm->cb = *cb;
  rm->nhosts = nhosts;
  rm->agent = o->agent;
  rm->launcher = o->launcher;
  rm->stdin_rank = o->stdin_rank;
  rm->encrypt = o->encrypt != 0;
  rm->live = 1;
  memcpy(rm->key, o->key, MMP__JOB_KEY_LEN);
  mmp__hex_encode(rm->key, MMP__JOB_KEY_LEN, rm->keyline);
  strcat(rm->keyline, "\n");
  mmp__list_init(&rm->pending);
  rm_agent_string(rm);
  nranks = 0;
  for (i = 0; i < nhosts; i++) {
    rm_host_t *hs = &rm->hosts[i];
    hs->rm = rm;
    hs->pos = i;
    hs->h = hosts[i];
    memcpy(rm->ranks + nranks, hosts[i].ranks,
           (size_t)hosts[i].nranks * sizeof(int));
    hs->h.ranks = rm->ranks + nranks;
    nranks += (size_t)hosts[i].nranks;
    hs->peer.rm = rm;
    hs->peer.host = hs;
    mmp__list_init(&hs->peer.node);
    if (o->stdin_rank >= 0 && rm_has_rank(hs, (uint32_t)o->stdin_rank))
      rm->stdin_host = hs;
  }
  rc = rm_listen(rm, o->addr);
  uv_timer_init(loop, &rm->reap);
  rm->reap.data = rm;
  rm->live++;
  if (rc != 0) {
    rm->stopping = 1;
    uv_close((uv_handle_t *)&rm->server, rm_on_close);
    uv_close((uv_handle_t *)&rm->reap, rm_on_close);
    rm_unlive(rm);
    return rc;
  }
  for (i = 0; i < nhosts; i++)
    rm_host_start(&rm->hosts[i]);
  *out = rm;
  return 0;
}

void mmp__remote_kill(mmp__remote_t *rm) {
  int i;

  if (rm == NULL || rm->stopping)
    return;
  rm->killed = 1;
  for (i = 0; i < rm->nhosts; i++) {
    rm_host_t *hs = &rm->hosts[i];
    if (hs->state == H_RUNNING)
      rm_send_empty(hs->peer.conn, MMP__C_KILL);
    else if (hs->state == H_STARTING)
      rm_host_lost(hs, NULL, 1);
  }
}

void mmp__remote_signal(mmp__remote_t *rm, int signo) {
  int i;

  if (rm == NULL || rm->stopping)
    return;
  for (i = 0; i < rm->nhosts; i++)
    if (rm->hosts[i].state == H_RUNNING && rm->hosts[i].peer.conn != NULL)
      rm_send_u32(rm->hosts[i].peer.conn, MMP__C_SIGNAL, (uint32_t)signo);
}

static void rm_on_reap(uv_timer_t *t) {
  mmp__remote_t *rm = t->data;
  int i, sig = rm->reap_stage++ == 0 ? SIGTERM : SIGKILL;

  for (i = 0; i < rm->nhosts; i++)
    if (rm->hosts[i].agent_running)
      mmp__kill_group(rm->hosts[i].agent.pid, sig);
  if (sig == SIGTERM)
    uv_timer_start(&rm->reap, rm_on_reap, RM_AGENT_KILL_MS, 0);
}

void mmp__remote_stop(mmp__remote_t *rm) {
  mmp__list_t *it, *tmp;
  int i, k;

  if (rm == NULL || rm->stopping)
    return;
  rm->stopping = 1;
  rm_stdin_stop(rm);
  uv_close((uv_handle_t *)&rm->server, rm_on_close);
  mmp__list_foreach_safe(it, tmp, &rm->pending) {
    rm_peer_t *p = mmp__container_of(it, rm_peer_t, node);
    mmp__ctrl_conn_close(p->conn, NULL);
    free(p);
  }
  for (i = 0; i < rm->nhosts; i++) {
    rm_host_t *hs = &rm->hosts[i];
    mmp__ctrl_conn_close(hs->peer.conn, NULL);
    hs->peer.conn = NULL;
    rm_close((uv_handle_t *)&hs->timer, rm_host_on_close);
    rm_close((uv_handle_t *)&hs->in, rm_host_on_close);
    for (k = 0; k < 2; k++)
      rm_close((uv_handle_t *)&hs->out[k], rm_host_on_close);
  }
  /* A daemon whose connection drops stops its ranks and exits; an agent
   * that outlives that (a hung ssh) is stopped here. */
  if (rm->agents_running > 0)
    uv_timer_start(&rm->reap, rm_on_reap, RM_AGENT_TERM_MS, 0);
  else
    uv_close((uv_handle_t *)&rm->reap, rm_on_close);
  rm_unlive(rm);
}
