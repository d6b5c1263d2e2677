/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: minimprun's side of the control protocol (launcher/
 * remote.c over the connections of launcher/ctrl.c): the server its
 * per-host daemons connect back to, fed whatever a daemon, or anyone else
 * who reaches the port, may send, while the agents (ssh) that started the
 * daemons write, end or fail, and the job is killed, signalled or
 * stopped. On the fake libuv of fake_uv.h, so no process is started.
 *
 * Input: a flags byte (bits 0-1: 1 to 3 hosts, two ranks each; bit 2: the
 * agents cannot be started; bit 3: debug logging; bit 4: --encrypt, so
 * the harness seals what it sends after a PROOF that verifies, and opens
 * what minimprun sends after WELCOME), then actions until the
 * input ends: connect; send raw bytes, a well-formed HELLO (a fresh
 * nonce, any host index), a PROOF over it and minimprun's CHALLENGE (right,
 * under a wrong key, reflected, short; control version 3), STARTED,
 * OUTPUT, EXIT, BYE, STDIN_ACK or ERROR; EOF or reset; an agent writes, closes
 * its output or exits; time passes; kill or signal the job; make writes fail;
 * run the loop. Then the server is stopped, the agents exit and the loop runs
 * until nothing is left.
 *
 * Invariants:
 *  - each agent is given the job key on its standard input, one line,
 *    which is then closed;
 *  - a connection gets CHALLENGE first (a 32-byte nonce and flags that
 *    say MMP__CTRL_SEAL exactly when the job seals), then WELCOME
 *    only after a HELLO and a PROOF that verifies under the job key over
 *    that HELLO and the CHALLENGE, carrying minimprun's own proof, then
 *    exactly the LAUNCH of the host the HELLO named, at most one
 *    connection per host; before it only an ERROR, after an ERROR
 *    nothing; KILL and SIGNAL well formed;
 *  - started, output and exited name ranks of a host that said HELLO and
 *    was not reported lost; output on fd 1 or 2 in chunks of at most
 *    MMP__CTRL_CHUNK bytes; host_lost at most once per host; an agent's
 *    output ends at most once per stream and nothing follows its end;
 *  - no callback runs after stop; every handle is closed and no memory is
 *    left once the agents have exited.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_uv.h"
#include "fuzz.h"
#include "launcher/common.h"
#include "launcher/ctrl.h"
#include "launcher/remote.h"
#include "transport/auth.h"
#include "minimp.h"
#include "transport/transport.h"
#include "transport/util.h"

#define RMF_MAX_HOSTS 3

static const uint8_t rmf_key[MMP__JOB_KEY_LEN] = "fuzz-job-key-16b";

typedef struct rmf_host_s {
  int ranks[2];
  fuzz_buf_t launch; /* its LAUNCH message, header included */
  int launched;      /* a connection got it: its daemon said HELLO */
  int lost;
  int agent_eof[2];
} rmf_host_t;

typedef struct rmf_conn_s {
  int peer;
  int nsent; /* messages the harness sent, parsed as the server does */
  /* host index of a first HELLO of minimprun's own version proved by a
   * PROOF, or -1 */
  int hello_host;
  uint8_t *hello; /* the body of the first message sent, if a HELLO */
  uint32_t hello_len;
  uint8_t challenge[MMP__CTRL_CHALLENGE_LEN]; /* minimprun's CHALLENGE */
  int challenged;
  mmp__seal_t *tx; /* with --encrypt, after a PROOF that verifies */
  int welcomed;
  mmp__boot_rx_t sent;
  int sent_bad;
  mmp__boot_rx_t got; /* what the server wrote, parsed */
  size_t got_off;
  int launched;
  int errored;
} rmf_conn_t;

static struct {
  uv_loop_t loop;
  mmp__remote_t *rm;
  int nhosts;
  int spawn_failed;
  rmf_host_t hosts[RMF_MAX_HOSTS];
  rmf_conn_t conns[FUV_MAX_PEERS];
  int nconns;
  int stopped;
  int encrypt;
} rmf;

/* ---- minimprun's callbacks ----------------------------------------------- */

/* The host that runs `rank`, which must have said HELLO and not be lost. */
static void rmf_check_output(void);

static void rmf_check_rank(int rank) {
  int h, k;

  FUZZ_CHECK(!rmf.stopped);
  rmf_check_output(); /* a LAUNCH written since the last look */
  for (h = 0; h < rmf.nhosts; h++)
    for (k = 0; k < 2; k++)
      if (rmf.hosts[h].ranks[k] == rank) {
        FUZZ_CHECK(rmf.hosts[h].launched && !rmf.hosts[h].lost);
        return;
      }
  FUZZ_CHECK(!"a rank that runs on no host");
}

static void rmf_started(void *ctx, int rank, int pid, int err) {
  (void)ctx;
  (void)pid;
  (void)err;
  rmf_check_rank(rank);
}

static void rmf_output(void *ctx, int rank, int fd, const char *data,
                       size_t n) {
  (void)ctx;
  rmf_check_rank(rank);
  FUZZ_CHECK((fd == 1 || fd == 2) && n <= MMP__CTRL_CHUNK);
  FUZZ_CHECK(n == 0 || data != NULL);
}

static void rmf_exited(void *ctx, int rank, int64_t status, int signo) {
  (void)ctx;
  (void)status;
  (void)signo;
  rmf_check_rank(rank);
}

static void rmf_host_lost(void *ctx, int id, const char *msg) {
  (void)ctx;
  (void)msg;
  FUZZ_CHECK(!rmf.stopped && id >= 0 && id < rmf.nhosts);
  FUZZ_CHECK(!rmf.hosts[id].lost);
  rmf.hosts[id].lost = 1;
}

static void rmf_agent_output(void *ctx, int id, int fd, const char *data,
                             size_t n) {
  rmf_host_t *h;

  (void)ctx;
  FUZZ_CHECK(!rmf.stopped && id >= 0 && id < rmf.nhosts);
  FUZZ_CHECK(fd == 1 || fd == 2);
  h = &rmf.hosts[id];
  FUZZ_CHECK(!h->agent_eof[fd - 1]);
  FUZZ_CHECK(n == 0 || data != NULL);
  if (n == 0)
    h->agent_eof[fd - 1] = 1;
}

/* ---- What the harness sent ----------------------------------------------- */

static int rmf_sent_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)ctx;
  return mmp__ctrl_hdr_decode(rx->hbuf, &rx->hdr, why);
}

/* 1 if `mac` is `role`'s proof over the HELLO sent and the CHALLENGE. */
static int rmf_verify(const rmf_conn_t *c, int role, const uint8_t *mac) {
  mmp__auth_t a;
  int ok;

  mmp__auth_begin(&a, rmf_key, MMP__AUTH_CTRL, c->hello, c->hello_len,
                  c->challenge, sizeof(c->challenge));
  ok = mmp__auth_check(
      &a, role, role == MMP__AUTH_DIALER ? MMP__AUTH_PROVE : MMP__AUTH_ACCEPT,
      mac);
  mmp__auth_end(&a);
  return ok;
}

/* The keys the transcript gives: daemon to minimprun, and back. */
static void rmf_keys(const rmf_conn_t *c, uint8_t d2l[MMP__SESSION_KEY_LEN],
                     uint8_t l2d[MMP__SESSION_KEY_LEN]) {
  mmp__auth_t a;

  mmp__auth_begin(&a, rmf_key, MMP__AUTH_CTRL, c->hello, c->hello_len,
                  c->challenge, sizeof(c->challenge));
  mmp__auth_session_keys(&a, rmf_key, d2l, l2d);
  mmp__auth_end(&a);
}

/* 1 if the HELLO sent is well formed and names minimprun's own version:
 * only such a daemon may get its host's LAUNCH. */
static int rmf_hello_ours(const rmf_conn_t *c) {
  const char *s;
  mmp__boot_rd_t rd;
  size_t n;

  mmp__boot_rd_init(&rd, c->hello, c->hello_len);
  (void)mmp__boot_rd_raw(&rd, MMP__NONCE_LEN);
  (void)mmp__boot_rd_u32(&rd);
  (void)mmp__boot_rd_u32(&rd);
  (void)mmp__boot_rd_str(&rd, &s, 255);
  n = mmp__boot_rd_str(&rd, &s, MMP__CTRL_MAX_VERSION);
  return !rd.bad && rd.left == 0 && n == strlen(MMP__LAUNCHER_VERSION) &&
         memcmp(s, MMP__LAUNCHER_VERSION, n) == 0;
}

static void rmf_sent_message(void *ctx, const mmp__boot_hdr_t *h,
                             const uint8_t *body) {
  rmf_conn_t *c = ctx;

  if (c->nsent == 0 && h->type == MMP__C_HELLO) {
    c->hello = malloc(h->len + 1);
    FUZZ_CHECK(c->hello != NULL);
    memcpy(c->hello, body, h->len);
    c->hello_len = h->len;
  }
  if (c->nsent++ == 1 && c->hello != NULL && c->challenged &&
      h->type == MMP__C_PROOF && h->len == MMP__MAC_LEN &&
      c->hello_len >= MMP__NONCE_LEN + 4 && rmf_hello_ours(c) &&
      rmf_verify(c, MMP__AUTH_DIALER, body)) {
    c->hello_host = (int)mmp__get_u32(c->hello + MMP__NONCE_LEN);
    /* minimprun opens what follows a PROOF that verifies. */
    if (rmf.encrypt) {
      uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
      rmf_keys(c, d2l, l2d);
      c->tx = calloc(1, sizeof(*c->tx));
      FUZZ_CHECK(c->tx != NULL);
      memcpy(c->tx->key, d2l, sizeof(d2l));
    }
  }
}

static void rmf_sent_error(void *ctx, int err, const char *why) {
  (void)err;
  (void)why;
  ((rmf_conn_t *)ctx)->sent_bad = 1;
}

static int rmf_sent_closed(void *ctx) {
  return ((rmf_conn_t *)ctx)->sent_bad;
}

static const mmp__boot_rx_ops_t rmf_sent_ops = {
    rmf_sent_header, rmf_sent_message, rmf_sent_error, rmf_sent_closed};

/* Raw bytes go as they are, even on a sealed connection. */
static void rmf_send(rmf_conn_t *c, const void *p, size_t n, size_t chunk) {
  if (fuv_closed(c->peer))
    return;
  if (c->tx == NULL)
    mmp__boot_rx_feed(&c->sent, p, n, &rmf_sent_ops, c);
  fuv_send(c->peer, p, n, chunk);
}

/* ---- What the server wrote ----------------------------------------------- */

static int rmf_got_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  (void)ctx;
  return mmp__ctrl_hdr_decode(rx->hbuf, &rx->hdr, why);
}

static void rmf_got_message(void *ctx, const mmp__boot_hdr_t *h,
                            const uint8_t *body) {
  rmf_conn_t *c = ctx;
  rmf_host_t *host;
  mmp__boot_rd_t rd;
  const char *s;
  uint32_t v;

  mmp__boot_rd_init(&rd, body, h->len);
  FUZZ_CHECK(!c->errored);
  FUZZ_CHECK(c->challenged || h->type == MMP__C_CHALLENGE ||
             h->type == MMP__C_ERROR);
  FUZZ_CHECK(c->launched || h->type == MMP__C_CHALLENGE ||
             h->type == MMP__C_WELCOME || h->type == MMP__C_LAUNCH ||
             h->type == MMP__C_ERROR);
  switch (h->type) {
  case MMP__C_CHALLENGE:
    FUZZ_CHECK(!c->challenged && h->len == MMP__CTRL_CHALLENGE_LEN);
    FUZZ_CHECK(mmp__get_u32(body + MMP__NONCE_LEN) ==
               (rmf.encrypt ? MMP__CTRL_SEAL : 0u));
    memcpy(c->challenge, body, MMP__CTRL_CHALLENGE_LEN);
    c->challenged = 1;
    break;
  case MMP__C_WELCOME:
    FUZZ_CHECK(!c->welcomed && h->len == MMP__MAC_LEN);
    FUZZ_CHECK(c->hello_host >= 0);
    FUZZ_CHECK(rmf_verify(c, MMP__AUTH_LISTENER, body));
    c->welcomed = 1;
    /* What minimprun writes after WELCOME is sealed. */
    if (rmf.encrypt) {
      uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
      rmf_keys(c, d2l, l2d);
      FUZZ_CHECK(mmp__boot_rx_seal(&c->got, l2d) == 0);
    }
    break;
  case MMP__C_LAUNCH:
    FUZZ_CHECK(!c->launched && c->welcomed);
    FUZZ_CHECK(c->hello_host >= 0 && c->hello_host < rmf.nhosts);
    host = &rmf.hosts[c->hello_host];
    FUZZ_CHECK(!host->launched);
    FUZZ_CHECK(host->launch.len == MMP__BOOT_HDR_SIZE + h->len);
    FUZZ_CHECK(memcmp(host->launch.p + MMP__BOOT_HDR_SIZE, body, h->len) == 0);
    host->launched = c->launched = 1;
    break;
  case MMP__C_KILL:
    FUZZ_CHECK(h->len == 0);
    break;
  case MMP__C_SIGNAL:
    v = mmp__boot_rd_u32(&rd);
    FUZZ_CHECK(!rd.bad && rd.left == 0);
    FUZZ_CHECK(v == SIGINT || v == SIGTERM || v == SIGKILL);
    break;
  case MMP__C_ERROR:
    mmp__boot_rd_u32(&rd);
    mmp__boot_rd_str(&rd, &s, 4096);
    FUZZ_CHECK(!rd.bad && rd.left == 0);
    c->errored = 1;
    break;
  default: /* STDIN too: no rank here reads minimprun's input */
    FUZZ_CHECK(!"a message minimprun does not send");
  }
}

static void rmf_got_error(void *ctx, int err, const char *why) {
  (void)ctx;
  (void)err;
  (void)why;
  FUZZ_CHECK(!"minimprun wrote a malformed header");
}

static int rmf_got_closed(void *ctx) {
  (void)ctx;
  return 0;
}

static const mmp__boot_rx_ops_t rmf_got_ops = {rmf_got_header, rmf_got_message,
                                               rmf_got_error, rmf_got_closed};

static void rmf_check_output(void) {
  int i;

  for (i = 0; i < rmf.nconns; i++) {
    rmf_conn_t *c = &rmf.conns[i];
    const fuzz_buf_t *out = fuv_output(c->peer);
    if (out->len > c->got_off) {
      mmp__boot_rx_feed(&c->got, out->p + c->got_off, out->len - c->got_off,
                        &rmf_got_ops, c);
      c->got_off = out->len;
    }
  }
}

/* ---- Actions ------------------------------------------------------------- */

/* A message; sealed once the harness's PROOF verified under --encrypt. */
static void rmf_msg(rmf_conn_t *c, mmp__boot_wr_t *w, uint8_t type,
                    size_t chunk) {
  if (mmp__ctrl_finish(w, type) != 0)
    return;
  if (c->tx != NULL && !fuv_closed(c->peer)) {
    mmp__boot_rx_feed(&c->sent, w->buf, w->len, &rmf_sent_ops, c);
    FUZZ_CHECK(mmp__boot_seal_msg(c->tx, &w->buf, &w->len) == 0);
  }
  rmf_send(c, w->buf, w->len, chunk);
  free(w->buf);
}

/* A rank: one of the job's (0 .. 2 * hosts - 1), or one past them. */
static uint32_t rmf_rank(fuzz_in_t *in) {
  return fuzz_below(in, (uint32_t)(2 * rmf.nhosts + 1));
}

enum {
  A_CONNECT,
  A_RAW,
  A_HELLO,
  A_PROOF,
  A_STARTED,
  A_OUTPUT,
  A_EXIT,
  A_BYE,
  A_ACK,
  A_ERROR,
  A_EOF,
  A_RESET,
  A_AGENT_OUT,
  A_AGENT_EOF,
  A_AGENT_EXIT,
  A_TIME,
  A_KILL,
  A_SIGNAL,
  A_FAIL_WRITES,
  A_RUN,
  A_COUNT
};

static void rmf_conn_action(int op, rmf_conn_t *c, size_t chunk,
                            fuzz_in_t *in) {
  mmp__boot_wr_t w;
  const uint8_t *p;
  size_t n;

  mmp__boot_wr_init(&w);
  switch (op) {
  case A_RAW:
    n = fuzz_bytes(in, &p, 4096);
    rmf_send(c, p, n, chunk);
    break;
  case A_HELLO: {
    /* A daemon's HELLO: a fresh nonce (0x40: one byte short), host,
     * pid, name, minimprun's version (0x20: another one). */
    uint8_t nonce[MMP__NONCE_LEN], how = fuzz_u8(in);
    mmp__auth_nonce(nonce);
    mmp__boot_wr_raw(&w, nonce, how & 0x40 ? 31 : sizeof(nonce));
    mmp__boot_wr_u32(&w, fuzz_below(in, (uint32_t)rmf.nhosts + 1));
    mmp__boot_wr_u32(&w, 4321);
    n = fuzz_bytes(in, &p, 300);
    mmp__boot_wr_str(&w, (const char *)p, n);
    const char *v = how & 0x20 ? "0.0.0-other" : MMP__LAUNCHER_VERSION;
    mmp__boot_wr_str(&w, v, strlen(v));
    rmf_msg(c, &w, MMP__C_HELLO, chunk);
    break;
  }
  case A_PROOF: {
    /* Over the first HELLO sent and the CHALLENGE seen; 0x80: under a
     * wrong key; 0x01: minimprun's role; 0x40: one byte short. */
    uint8_t how = fuzz_u8(in), key[MMP__JOB_KEY_LEN], mac[MMP__MAC_LEN];
    mmp__auth_t a;
    memcpy(key, rmf_key, sizeof(key));
    key[how % MMP__JOB_KEY_LEN] ^= how & 0x80 ? 1 : 0;
    mmp__auth_begin(&a, key, MMP__AUTH_CTRL, c->hello, c->hello_len,
                    c->challenge, sizeof(c->challenge));
    mmp__auth_mac(&a, how & 1 ? MMP__AUTH_LISTENER : MMP__AUTH_DIALER,
                  how & 1 ? MMP__AUTH_ACCEPT : MMP__AUTH_PROVE, mac);
    mmp__auth_end(&a);
    mmp__boot_wr_raw(&w, mac, how & 0x40 ? 31 : sizeof(mac));
    rmf_msg(c, &w, MMP__C_PROOF, chunk);
    break;
  }
  case A_STARTED:
  case A_EXIT:
    mmp__boot_wr_u32(&w, rmf_rank(in));
    mmp__boot_wr_u32(&w, fuzz_u32(in));
    mmp__boot_wr_u32(&w, fuzz_u32(in));
    rmf_msg(c, &w, op == A_STARTED ? MMP__C_STARTED : MMP__C_EXIT, chunk);
    break;
  case A_OUTPUT:
    mmp__boot_wr_u32(&w, rmf_rank(in));
    mmp__boot_wr_u32(&w, fuzz_below(in, 4));
    n = fuzz_bytes(in, &p, 4096);
    mmp__boot_wr_blob(&w, p, n);
    rmf_msg(c, &w, MMP__C_OUTPUT, chunk);
    break;
  case A_BYE:
    rmf_msg(c, &w, MMP__C_BYE, chunk);
    break;
  case A_ACK:
    mmp__boot_wr_u32(&w, fuzz_u32(in));
    rmf_msg(c, &w, MMP__C_STDIN_ACK, chunk);
    break;
  case A_ERROR:
    mmp__boot_wr_u32(&w, (uint32_t)MMP_EPROTO);
    n = fuzz_bytes(in, &p, 2000);
    mmp__boot_wr_str(&w, (const char *)p, n);
    rmf_msg(c, &w, MMP__C_ERROR, chunk);
    break;
  case A_EOF:
    fuv_eof(c->peer);
    break;
  default:
    fuv_reset_peer(c->peer);
    break;
  }
}

static void rmf_action(fuzz_in_t *in) {
  static const uint64_t steps[] = {0, 1, 300, 1999, 2000, 10000, 60000};
  static const int sigs[] = {SIGINT, SIGTERM, SIGKILL};
  int op = (int)fuzz_below(in, A_COUNT);
  uint8_t pick = fuzz_u8(in);
  size_t chunk = fuzz_u8(in);
  const uint8_t *p;
  size_t n;
  int peer, proc;

  if (op == A_CONNECT) {
    peer = fuv_incoming();
    if (peer >= 0) {
      rmf_conn_t *c = &rmf.conns[rmf.nconns++];
      memset(c, 0, sizeof(*c));
      c->peer = peer;
      c->hello_host = -1;
    }
  } else if (op <= A_RESET) {
    if (rmf.nconns > 0)
      rmf_conn_action(op, &rmf.conns[pick % rmf.nconns], chunk, in);
  } else if (op <= A_AGENT_EXIT) {
    proc = pick % RMF_MAX_HOSTS;
    if (proc >= fuv_nprocs())
      return;
    if (op == A_AGENT_EXIT) {
      fuv_exit(proc, chunk & 0x80 ? 0 : chunk, chunk & 0x80 ? chunk & 15 : 0);
    } else {
      peer = fuv_proc_pipe(proc, 1 + (chunk & 1));
      if (op == A_AGENT_EOF) {
        fuv_eof(peer);
      } else {
        n = fuzz_bytes(in, &p, 2048);
        fuv_send(peer, p, n, chunk >> 1);
      }
    }
  } else if (op == A_TIME) {
    fuv_advance(steps[chunk % (sizeof(steps) / sizeof(steps[0]))]);
  } else if (op == A_KILL) {
    mmp__remote_kill(rmf.rm);
  } else if (op == A_SIGNAL) {
    mmp__remote_signal(rmf.rm, sigs[chunk % 3]);
  } else if (op == A_FAIL_WRITES) {
    fuv_fail_writes(chunk % 3);
  } else {
    fuv_run();
  }
  rmf_check_output();
}

/* Builds host h's LAUNCH, as run_remote.c does. */
static void rmf_launch(int h, mmp__remote_host_t *rh) {
  char *argv[] = {"prog", "arg", NULL}, *env[] = {"MINIMP_SIZE=6", NULL};
  char vars[2][32], *v[2][2];
  mmp__boot_wr_t w;
  int k;

  mmp__boot_wr_init(&w);
  mmp__ctrl_launch_begin(&w, 0, "/", argv, env, 2);
  for (k = 0; k < 2; k++) {
    snprintf(vars[k], sizeof(vars[k]), "MINIMP_RANK=%d", rmf.hosts[h].ranks[k]);
    v[k][0] = vars[k];
    v[k][1] = NULL;
    mmp__ctrl_launch_rank(&w, rmf.hosts[h].ranks[k], 0, v[k], 1);
  }
  FUZZ_CHECK(mmp__ctrl_finish(&w, MMP__C_LAUNCH) == 0);
  fuzz_buf_put(&rmf.hosts[h].launch, w.buf, w.len);
  rh->launch = w.buf; /* taken over by mmp__remote_start */
  rh->launch_len = w.len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mmp__remote_cb_t cb = {NULL,          rmf_started,
                                      rmf_output,    rmf_exited,
                                      rmf_host_lost, rmf_agent_output};
  static char *agent[] = {"ssh", "-x", NULL};
  static const char *names[] = {"node1", "node2", "node3"};
  mmp__remote_host_t hosts[RMF_MAX_HOSTS];
  mmp__remote_opts_t o;
  struct sockaddr_storage addr;
  char keyline[2 * MMP__JOB_KEY_LEN + 2];
  fuzz_in_t in;
  int flags, h, i;

  memset(&rmf, 0, sizeof(rmf));
  fuv_reset(&rmf.loop);
  fuzz_in_init(&in, data, size);
  fuzz_random_reset();
  flags = fuzz_u8(&in);
  rmf.nhosts = 1 + (flags & 3) % RMF_MAX_HOSTS;
  rmf.spawn_failed = (flags & 4) != 0;
  rmf.encrypt = (flags & 16) != 0;
  mmp__log_level = flags & 8 ? MMP__LOG_DEBUG : -1;
  for (h = 0; h < rmf.nhosts; h++) {
    rmf.hosts[h].ranks[0] = h;
    rmf.hosts[h].ranks[1] = h + rmf.nhosts;
    hosts[h].name = names[h];
    hosts[h].id = h;
    hosts[h].ranks = rmf.hosts[h].ranks;
    hosts[h].nranks = 2;
    rmf_launch(h, &hosts[h]);
  }
  FUZZ_CHECK(mmp__addr_parse("127.0.0.1:0", &addr) == 0);
  memset(&o, 0, sizeof(o));
  o.addr = (struct sockaddr *)&addr;
  o.key = rmf_key;
  o.agent = agent;
  o.launcher = "minimprun";
  o.stdin_rank = -1;
  o.encrypt = rmf.encrypt;
  fuv_set_spawn_status(rmf.spawn_failed ? UV_ENOENT : 0);
  FUZZ_CHECK(
      mmp__remote_start(&rmf.loop, &o, hosts, rmf.nhosts, &cb, &rmf.rm) == 0);
  FUZZ_CHECK(fuv_nprocs() == (rmf.spawn_failed ? 0 : rmf.nhosts));
  while (in.left > 0)
    rmf_action(&in);

  fuv_run();
  rmf_check_output();
  rmf.stopped = 1;
  mmp__remote_stop(rmf.rm);
  fuv_run();
  for (i = 0; i < fuv_nprocs(); i++)
    fuv_exit(i, 0, SIGTERM);
  fuv_advance(10000);
  rmf_check_output();
  FUZZ_CHECK(fuv_open_handles() == 0);
  /* The key, one line, on every agent's standard input, then its end. */
  mmp__hex_encode(rmf_key, MMP__JOB_KEY_LEN, keyline);
  strcat(keyline, "\n");
  for (i = 0; i < fuv_nprocs(); i++) {
    const fuzz_buf_t *k = fuv_output(fuv_proc_pipe(i, 0));
    FUZZ_CHECK(k->len == strlen(keyline) && memcmp(k->p, keyline, k->len) == 0);
    FUZZ_CHECK(fuv_closed(fuv_proc_pipe(i, 0)));
  }
  if (getenv("FUZZ_TRACE") != NULL)
    for (h = 0; h < rmf.nhosts; h++)
      fprintf(stderr, "host %d: launched %d, lost %d, agent eof %d %d\n", h,
              rmf.hosts[h].launched, rmf.hosts[h].lost,
              rmf.hosts[h].agent_eof[0], rmf.hosts[h].agent_eof[1]);
  for (i = 0; i < rmf.nconns; i++) {
    mmp__boot_rx_fini(&rmf.conns[i].sent);
    mmp__boot_rx_fini(&rmf.conns[i].got);
    free(rmf.conns[i].hello);
    free(rmf.conns[i].tx);
  }
  for (h = 0; h < rmf.nhosts; h++)
    fuzz_buf_free(&rmf.hosts[h].launch);
  fuv_reset(&rmf.loop);
  mmp__log_level = -1;
  return 0;
}

/* ---- Seeds --------------------------------------------------------------- */

/* HELLO, the loop, PROOF (`how` as A_PROOF reads it; 0: right). */
static void rmf_seed_hello(fuzz_buf_t *b, int conn, int host, int how) {
  fuzz_buf_op(b, A_HELLO, conn, 0);
  fuzz_buf_u8(b, 0);
  fuzz_buf_u8(b, (uint8_t)host);
  fuzz_buf_bytes(b, "node", 4);
  fuzz_buf_op(b, A_RUN, 0, 0);
  fuzz_buf_op(b, A_PROOF, conn, 0);
  fuzz_buf_u8(b, (uint8_t)how);
}

static void rmf_seed_rank(fuzz_buf_t *b, int op, int conn, int rank, int a,
                          int c) {
  fuzz_buf_op(b, op, conn, 0);
  fuzz_buf_u8(b, (uint8_t)rank);
  if (op == A_OUTPUT) {
    fuzz_buf_u8(b, (uint8_t)a);
    fuzz_buf_bytes(b, "hello\n", 6);
    return;
  }
  fuzz_buf_u32(b, (uint32_t)a);
  fuzz_buf_u32(b, (uint32_t)c);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  fuzz_buf_t b = {0};
  int h;

  /* Two hosts: both daemons connect, start their ranks, print, exit, BYE;
   * in clear, then sealed (--encrypt). */
  for (int sealed = 0; sealed < 2; sealed++) {
    fuzz_buf_u8(&b, sealed ? 1 | 16 : 1);
    fuzz_buf_op(&b, A_AGENT_OUT, 0, 2);
    fuzz_buf_bytes(&b, "Warning: added host key\n", 24);
    for (h = 0; h < 2; h++) {
      fuzz_buf_op(&b, A_CONNECT, 0, 0);
      rmf_seed_hello(&b, h, h, 0);
    }
    fuzz_buf_op(&b, A_RUN, 0, 0);
    for (h = 0; h < 2; h++) {
      rmf_seed_rank(&b, A_STARTED, h, h, 1000 + h, 0);
      rmf_seed_rank(&b, A_STARTED, h, h + 2, 2000 + h, 0);
      rmf_seed_rank(&b, A_OUTPUT, h, h, 1, 0);
      rmf_seed_rank(&b, A_OUTPUT, h, h + 2, 2, 0);
      rmf_seed_rank(&b, A_EXIT, h, h, 0, 0);
      rmf_seed_rank(&b, A_EXIT, h, h + 2, 0, 9);
      fuzz_buf_op(&b, A_ACK, h, 0);
      fuzz_buf_u32(&b, 100);
      fuzz_buf_op(&b, A_BYE, h, 0);
    }
    fuzz_buf_op(&b, A_RUN, 0, 0);
    fuzz_buf_op(&b, A_AGENT_EOF, 0, 0);
    fuzz_buf_op(&b, A_AGENT_EXIT, 0, 0);
    fuzz_buf_op(&b, A_AGENT_EXIT, 1, 0);
    fuzz_buf_op(&b, A_RUN, 0, 0);
    emit(sealed ? "two-hosts-sealed" : "two-hosts", b.p, b.len);
    b.len = 0;
  }

  /* Strangers: a wrong key, a short proof, a bad index, a host twice, a
   * rank that runs elsewhere, a reflected proof, no HELLO at all; then a
   * kill and a signal. */
  fuzz_buf_u8(&b, 2 | 8);
  for (h = 0; h < 7; h++)
    fuzz_buf_op(&b, A_CONNECT, 0, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  rmf_seed_hello(&b, 0, 0, 0x80 | 3);
  rmf_seed_hello(&b, 1, 0, 0x40);
  rmf_seed_hello(&b, 2, 3, 0);
  rmf_seed_hello(&b, 3, 1, 0);
  rmf_seed_hello(&b, 4, 1, 0);
  rmf_seed_hello(&b, 6, 2, 1);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  rmf_seed_rank(&b, A_STARTED, 3, 0, 1, 0);
  fuzz_buf_op(&b, A_SIGNAL, 0, 1);
  fuzz_buf_op(&b, A_KILL, 0, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_TIME, 0, 5);
  emit("strangers-and-kill", b.p, b.len);
  b.len = 0;

  /* The agent dies with last words; a daemon's connection drops; no
   * daemon for the third host within the start deadline. */
  fuzz_buf_u8(&b, 2);
  fuzz_buf_op(&b, A_AGENT_OUT, 0, 3);
  fuzz_buf_bytes(&b, "ssh: connect to host node1: Connection refused\n", 47);
  fuzz_buf_op(&b, A_AGENT_EXIT, 0, 255);
  fuzz_buf_op(&b, A_CONNECT, 0, 0);
  rmf_seed_hello(&b, 0, 1, 0);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_RESET, 0, 0);
  fuzz_buf_op(&b, A_TIME, 0, 2);
  fuzz_buf_op(&b, A_TIME, 0, 6);
  emit("agent-dies-daemon-lost", b.p, b.len);
  b.len = 0;

  /* No agent can be started at all. */
  fuzz_buf_u8(&b, 1 | 4);
  fuzz_buf_op(&b, A_RUN, 0, 0);
  fuzz_buf_op(&b, A_KILL, 0, 0);
  emit("no-agent", b.p, b.len);
  fuzz_buf_free(&b);
}
