/* SPDX-License-Identifier: MIT */
/*
 * Start-up and shut-down of the runtime.
 *
 * mmp_init reads the job identity from the environment (or takes it from
 * mmp_init_ex), connects to the job's rendezvous service, listens on the
 * chosen address, publishes it, and learns every peer's address with one
 * GETALL, which also serves as the init barrier. Connections then open
 * lazily on first use (MINIMP_CONNECT=lazy, the default) or all at once.
 *
 * mmp_finalize waits on a FENCE at the rendezvous so that no rank closes
 * while another may still talk to it, then closes every connection in
 * order (BYE after the last queued frame, half-close, wait for the peer's
 * EOF), stops the progress thread and frees everything.
 */
#include <assert.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "pmi.h"

mmp__engine_t *mmp__eng;

/* The longest address record a rank may publish. */
#define INIT_RECORD_MAX 512

static uv_mutex_t init_mutex;
static uv_once_t init_once = UV_ONCE_INIT;

static void init_mutex_once(void) {
  if (uv_mutex_init(&init_mutex) != 0)
    abort();
}

/* An asynchronous step sequence driven from an application thread. */
typedef struct op_s {
  mmp__engine_t *e;
  mmp__task_t task;
  int done;
  int rc;
  const char *why; /* abort: the reason the launcher reports */
  struct sockaddr_storage boot_sa;
  struct sockaddr_storage local;
  /* Bootstrap through the launcher (pmi.h): this rank's record, then
   * every rank's. */
  char rec[INIT_RECORD_MAX];
  uint8_t **values;
  size_t *lens;
} op_t;

/* Loop context, lock not held: the op's last step is done. */
static void op_finish(op_t *op, int rc) {
  mmp__engine_t *e = op->e;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  op->rc = rc;
  op->done = 1;
  mmp__engine_notify_locked(e);
  mmp__unlock(e);
}

static int op_done_pred(void *arg) {
  return ((op_t *)arg)->done;
}

/* Lock NOT held. Posts fn as a task and blocks until the op finishes. */
static int op_run(mmp__engine_t *e, op_t *op, mmp__task_fn fn) {
  MMP__ASSERT_UNLOCKED(e);
  op->e = e;
  op->done = 0;
  op->rc = 0;
  mmp__lock(e);
  mmp__engine_post_locked(e, &op->task, fn, op);
  mmp__unlock(e);
  mmp__progress_until(e, op_done_pred, op);
  return op->rc;
}

/* ---- Bootstrap client callbacks (loop context, lock not held) --------- */

/* Loop context, lock not held. The rendezvous says `rank` is gone: its
 * operations fail now with `err`, not when this rank notices by itself,
 * which can be after the launcher has killed it (docs/launcher.md, "When
 * something fails"). */
static void boot_rank_gone(mmp__engine_t *e, int rank, int err,
                           const char *why) {
  mmp__tp_conn_t *conn = NULL;

  if (rank < 0 || rank >= e->cfg.size || rank == e->cfg.rank)
    return;
  mmp__lock(e);
  if (e->peers[rank].state != MMP__P_DOWN &&
      e->peers[rank].state != MMP__P_CLOSED) {
    conn = e->peers[rank].conn;
    mmp__p2p_fail_peer_locked(e, rank, err);
  }
  mmp__unlock(e);
  if (conn != NULL)
    e->peers[rank].via->ops->abort(conn, err, why);
}

/* Loop context, lock not held. `rank` called mmp_abort(code): the job is
 * over for every rank, and with no launcher to stop it (an embedded job)
 * nobody else would end it. Every operation with another rank fails now
 * with MMP_EABORTED, and every later one, also with a rank already lost
 * (docs/guide/troubleshooting.md, MMP_EABORTED). */
static void job_aborted(mmp__engine_t *e, int rank, int code, const char *msg) {
  char text[640];
  int i;

  mmp__abort_text(text, sizeof(text), rank, code, msg);
  MMP__LOG(MMP__LOG_WARN, "%s", text);
  for (i = 0; i < e->cfg.size; i++) {
    if (i == e->cfg.rank)
      continue;
    boot_rank_gone(e, i, MMP_EABORTED, "the job was aborted");
    mmp__lock(e);
    if (e->peers[i].state == MMP__P_DOWN)
      e->peers[i].down_err = MMP_EABORTED;
    mmp__unlock(e);
  }
}

static void boot_event(void *ctx, uint32_t kind, int rank, int code,
                       const char *msg) {
  mmp__engine_t *e = ctx;
  char text[640];

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  if (kind == MMP__BOOT_EV_RANK_FAILED && rank >= 0 && rank < e->cfg.size &&
      rank != e->cfg.rank) {
    MMP__LOG(MMP__LOG_WARN, "rank %d failed: %s", rank, msg);
    boot_rank_gone(e, rank, MMP_EPEERLOST, "rank reported failed");
  } else if (kind == MMP__BOOT_EV_ABORT) {
    mmp__abort_text(text, sizeof(text), rank, code, msg);
    MMP__LOG(MMP__LOG_WARN, "%s", text);
    /* The rank that made the launcher stop the job is lost (dead, or
     * aborting), whatever this rank has seen of it. */
    boot_rank_gone(e, rank, MMP_EPEERLOST, "the launcher is stopping the job");
  } else if (kind == MMP__BOOT_EV_ABORTED) {
    job_aborted(e, rank, code, msg);
  }
}

static void boot_lost(void *ctx, int err, const char *reason) {
  mmp__engine_t *e = ctx;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  e->boot_lost = 1;
  if (err != 0 && !e->finalizing)
    MMP__LOG(MMP__LOG_WARN, "lost the rendezvous service: %s", reason);
  mmp__engine_notify_locked(e);
  mmp__unlock(e);
}

/* ---- Start-up ----------------------------------------------------------- */

/* A published record is "ADDRESS SEALING:MCAST IDENTITY": where the
 * rank listens, "sealed" or "plain" (its MINIMP_ENCRYPT), its
 * MINIMP_MCAST as a digit (MMP__MCAST_*), and its host identity
 * (mmp__local_identity). */
#define INIT_SEALED "sealed"
#define INIT_PLAIN "plain"

/* The MCAST part of rank i's mode token `mode` (cut off there): 0 with
 * *mcast its setting, or -1 if malformed. */
static int parse_mcast(char *mode, int *mcast) {
  char *colon = strchr(mode, ':');

  if (colon == NULL || colon[1] < '0' || colon[1] > '2' || colon[2] != '\0')
    return -1;
  *colon = '\0';
  *mcast = colon[1] - '0';
  return 0;
}

/* Parses rank i's record: its address, whether it seals (*sealed), its
 * multicast setting (*mcast), and *ident pointing at the rest. Returns 0,
 * or -1 if malformed. */
static int parse_record(mmp__engine_t *e, int i, const uint8_t *v, size_t len,
                        char *rec, size_t cap, int *sealed, int *mcast,
                        const char **ident) {
  char *sp, *mode;

  if (len == 0 || len >= cap)
    return -1;
  memcpy(rec, v, len);
  rec[len] = '\0';
  sp = strchr(rec, ' ');
  if (sp == NULL)
    return -1;
  *sp++ = '\0';
  mode = sp;
  sp = strchr(mode, ' ');
  if (sp != NULL)
    *sp++ = '\0';
  *ident = sp != NULL ? sp : "";
  if (parse_mcast(mode, mcast) != 0 ||
      (strcmp(mode, INIT_SEALED) != 0 && strcmp(mode, INIT_PLAIN) != 0))
    return -1;
  *sealed = strcmp(mode, INIT_SEALED) == 0;
  if (mmp__addr_parse(rec, &e->peers[i].addr) != 0)
    return -1;
  e->peers[i].have_addr = 1;
  return 0;
}

/* Every rank must seal its TCP frames, or none: a mixed job would fail
 * only at the first message between two that differ (or never, between
 * ranks that share memory), so init refuses it on every rank. Returns 0
 * or MMP_EENV (logged). */
static int check_sealing(const mmp__engine_t *e, const int *sealed) {
  for (int i = 0; i < e->cfg.size; i++) {
    if (sealed[i] == (e->cfg.encrypt != 0))
      continue;
    MMP__LOG(MMP__LOG_ERROR,
             "rank %d runs with MINIMP_ENCRYPT=%d and this rank with "
             "MINIMP_ENCRYPT=%d: every rank of a job must agree",
             i, sealed[i], e->cfg.encrypt != 0);
    return MMP_EENV;
  }
  return 0;
}

/* Every rank must have the same MINIMP_MCAST: it decides whether mmp_init
 * checks multicast with every rank (mmp__mcast_world_up) and whether AUTO
 * prices it, so ranks that differ would wait for each other there or run
 * different broadcasts. Returns 0 or MMP_EENV (logged). */
static int check_mcast(const mmp__engine_t *e, const int *mcast) {
  static const char *const name[] = {"off", "on", "auto"};

  for (int i = 0; i < e->cfg.size; i++) {
    if (mcast[i] == e->cfg.mcast)
      continue;
    MMP__LOG(MMP__LOG_ERROR,
             "rank %d runs with MINIMP_MCAST=%s and this rank with "
             "MINIMP_MCAST=%s: every rank of a job must agree",
             i, name[mcast[i]], name[e->cfg.mcast]);
    return MMP_EENV;
  }
  return 0;
}

static void local_done(void *arg, int rc) {
  op_finish(arg, rc);
}

static void got_addrs(void *arg, int status, size_t count,
                      const uint8_t *const *values, const size_t *lens) {
  op_t *op = arg;
  mmp__engine_t *e = op->e;
  const char **ident;
  char *recs;
  int *sealed, *mcast;
  size_t i;
  int r = 0;

  MMP__ASSERT_LOOP(e);
  if (status < 0 || count != (size_t)e->cfg.size) {
    MMP__LOG(MMP__LOG_ERROR, "address exchange failed: %s",
             mmp_strerror(status < 0 ? status : MMP_EPROTO));
    op_finish(op, MMP_EBOOT);
    return;
  }
  ident = calloc(count, sizeof(*ident));
  recs = malloc(count * INIT_RECORD_MAX);
  sealed = calloc(count, sizeof(*sealed));
  mcast = calloc(count, sizeof(*mcast));
  if (ident == NULL || recs == NULL || sealed == NULL || mcast == NULL) {
    free(ident);
    free(recs);
    free(sealed);
    free(mcast);
    op_finish(op, MMP_ENOMEM);
    return;
  }
  mmp__lock(e);
  for (i = 0; i < count && r == 0; i++)
    r = parse_record(e, (int)i, values[i], lens[i], recs + i * INIT_RECORD_MAX,
                     INIT_RECORD_MAX, &sealed[i], &mcast[i], &ident[i]);
  mmp__unlock(e);
  if (r != 0) {
    MMP__LOG(MMP__LOG_ERROR, "rank %zu published a malformed address", i - 1);
    op_finish(op, MMP_EBOOT);
  } else if ((r = check_sealing(e, sealed)) != 0 ||
             (r = check_mcast(e, mcast)) != 0) {
    op_finish(op, r);
  } else {
    mmp__local_setup(e, ident, local_done, op);
  }
  free(ident);
  free(recs);
  free(sealed);
  free(mcast);
}

static void put_done(void *arg, int status, size_t count,
                     const uint8_t *const *values, const size_t *lens) {
  op_t *op = arg;
  int rc;
  (void)count;
  (void)values;
  (void)lens;

  if (status < 0) {
    op_finish(op, MMP_EBOOT);
    return;
  }
  rc = mmp__boot_getall(op->e->boot, "addr", got_addrs, op);
  if (rc != 0)
    op_finish(op, MMP_EBOOT);
}

static void heartbeat_tick(uv_timer_t *t) {
  mmp__p2p_heartbeat(t->data);
}

/* Where to listen: the address `iface` names, or the one that reaches the
 * rendezvous. Returns 0 or MMP_EADDR, logged with what named it. */
static int listen_addr(const mmp__engine_t *e,
                       const struct sockaddr_storage *boot,
                       struct sockaddr_storage *out) {
  if (mmp__addr_select(e->cfg.iface[0] ? e->cfg.iface : NULL,
                       (const struct sockaddr *)boot, out) == 0)
    return 0;
  if (e->cfg.from_args)
    MMP__LOG(MMP__LOG_ERROR,
             "no local address matches the iface argument '%s' of "
             "mmp_init_ex",
             e->cfg.iface);
  else
    MMP__LOG(MMP__LOG_ERROR, "no local address matches MINIMP_IFACE='%s'",
             e->cfg.iface);
  return MMP_EADDR;
}

/* Loop context: listens where MINIMP_IFACE or the route toward
 * op->boot_sa says, and writes this rank's address record into op->rec.
 * Returns 0 or an error code (logged). */
static int start_listening(op_t *op) {
  mmp__engine_t *e = op->e;
  struct sockaddr_storage la;
  mmp__tp_config_t tc;
  mmp__tp_callbacks_t cb;
  char ident[256];
  int rc;

  MMP__ASSERT_LOOP(e);
  rc = listen_addr(e, &op->boot_sa, &la);
  if (rc != 0)
    return rc;
  mmp__p2p_tp_init(e, &e->tcp, &tc, &cb);
  tc.handshake_timeout_ms = e->cfg.handshake_ms;
  /* The heartbeat decides; TCP's own timers are only the backstop. */
  tc.user_timeout_ms = 2 * e->cfg.peer_timeout_ms;
  rc = e->tcp.ops->create(&e->loop, &tc, &cb, &e->tcp.tp);
  if (rc == 0)
    rc = e->tcp.ops->listen(e->tcp.tp, (struct sockaddr *)&la, e->listen_name,
                            sizeof(e->listen_name));
  if (rc != 0) {
    char want[128] = "?";
    mmp__addr_format((struct sockaddr *)&la, want, sizeof(want));
    MMP__LOG(MMP__LOG_ERROR, "cannot listen on %s: %s", want, mmp_strerror(rc));
    return rc;
  }
  MMP__LOG(MMP__LOG_DEBUG, "listening on %s", e->listen_name);
  if (e->cfg.peer_timeout_ms > 0) {
    uint64_t every = e->cfg.peer_timeout_ms / 8;
    e->hb_at = mmp__clock_ms();
    uv_timer_start(&e->heartbeat, heartbeat_tick, every ? every : 1,
                   every ? every : 1);
  }
  mmp__local_identity(e, ident, sizeof(ident));
  snprintf(op->rec, sizeof(op->rec), "%s %s:%d %s", e->listen_name,
           e->cfg.encrypt ? INIT_SEALED : INIT_PLAIN, e->cfg.mcast, ident);
  return 0;
}

/* Loop context: the bootstrap connection is up; listen and publish. */
static void boot_connected(void *arg, int status, size_t count,
                           const uint8_t *const *values, const size_t *lens) {
  op_t *op = arg;
  mmp__engine_t *e = op->e;
  int rc;
  (void)count;
  (void)values;
  (void)lens;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  if (status < 0) {
    MMP__LOG(MMP__LOG_ERROR, "cannot join the rendezvous at %s: %s",
             e->cfg.boot_addr, mmp_strerror(status));
    op_finish(op, MMP_EBOOT);
    return;
  }
  rc = start_listening(op);
  if (rc != 0) {
    op_finish(op, rc);
    return;
  }
  if (mmp__boot_put(e->boot, "addr", op->rec, strlen(op->rec), put_done, op) !=
      0)
    op_finish(op, MMP_EBOOT);
}

static void boot_server_lost(void *ctx, int rank, const char *reason) {
  mmp__engine_t *e = ctx;
  mmp__boot_server_broadcast(e->bootsrv, MMP__BOOT_EV_RANK_FAILED, rank,
                             MMP_EPEERLOST, reason, rank);
}

static void boot_server_abort(void *ctx, int rank, int code, const char *msg) {
  mmp__engine_t *e = ctx;
  MMP__LOG(MMP__LOG_ERROR, "rank %d aborted the job (code %d): %s", rank, code,
           msg);
  /* This rank first: nobody else knows yet, so none of its operations has
   * failed for another rank closing on the news. */
  job_aborted(e, rank, code, msg);
  mmp__boot_server_broadcast(e->bootsrv, MMP__BOOT_EV_ABORTED, rank, code, msg,
                             -1);
}

/* Lock NOT held. Sets an engine flag that some thread may be waiting on. */
static void set_and_notify(mmp__engine_t *e, int *flag) {
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  *flag = 1;
  mmp__engine_notify_locked(e);
  mmp__unlock(e);
}

static void boot_server_all_done(void *ctx) {
  mmp__engine_t *e = ctx;
  set_and_notify(e, &e->boot_all_done);
}

/* Loop context (a task), lock not held. */
static void boot_start_task(void *arg) {
  op_t *op = arg;
  mmp__engine_t *e = op->e;
  mmp__boot_client_cb_t ccb;
  int rc;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  if (e->cfg.host_boot) {
    mmp__boot_server_cb_t scb;
    char name[128];
    memset(&scb, 0, sizeof(scb));
    scb.ctx = e;
    scb.rank_lost = boot_server_lost;
    scb.abort = boot_server_abort;
    scb.all_done = boot_server_all_done;
    rc = mmp__boot_server_start(&e->loop, (struct sockaddr *)&op->boot_sa,
                                e->cfg.size, e->cfg.key, e->cfg.handshake_ms,
                                &scb, &e->bootsrv, name, sizeof(name));
    if (rc == 0 && e->cfg.encrypt)
      rc = mmp__boot_server_seal(e->bootsrv);
    if (rc != 0) {
      MMP__LOG(MMP__LOG_ERROR, "cannot serve the rendezvous on %s: %s%s",
               e->cfg.boot_addr, mmp_strerror(rc),
               e->cfg.boot_derived
                   ? " (the port comes from SLURM_JOB_ID and SLURM_STEP_ID; "
                     "set MINIMP_BOOT_PORTS to another range, or "
                     "MINIMP_BOOT_ADDR)"
                   : "");
      op_finish(op, rc);
      return;
    }
  }
  ccb.ctx = e;
  ccb.event = boot_event;
  ccb.lost = boot_lost;
  rc = mmp__boot_client_start(&e->loop, (struct sockaddr *)&op->boot_sa,
                              e->cfg.key, e->cfg.rank, e->cfg.size,
                              e->cfg.boot_timeout_ms, &ccb, boot_connected, op,
                              &op->local, &e->boot);
  if (rc != 0) {
    op_finish(op, MMP_EBOOT);
    return;
  }
  if (e->cfg.encrypt)
    mmp__boot_client_seal(e->boot);
}

/* Loop context (a task), lock not held. */
static void connect_all_task(void *arg) {
  op_t *op = arg;
  mmp__engine_t *e = op->e;
  int i;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  /* Each pair connects once: the lower rank dials. */
  for (i = e->cfg.rank + 1; i < e->cfg.size; i++) {
    mmp__via_t *via = e->peers[i].via;
    if (e->peers[i].state == MMP__P_IDLE) {
      e->peers[i].state = MMP__P_CONNECTING;
      if (via->ops->connect(via->tp, i, (struct sockaddr *)&e->peers[i].addr) !=
          0)
        mmp__p2p_fail_peer_locked(e, i, MMP_EPEERLOST);
    }
  }
  mmp__unlock(e);
  op_finish(op, 0);
}

static int all_up_pred(void *arg) {
  mmp__engine_t *e = arg;
  int i;

  for (i = 0; i < e->cfg.size; i++) {
    int s = e->peers[i].state;
    if (s != MMP__P_UP && s != MMP__P_DOWN)
      return 0;
  }
  return 1;
}

/* Loop context (a task): listen, for the launcher's exchange. */
static void pmi_listen_task(void *arg) {
  op_t *op = arg;

  op_finish(op, start_listening(op));
}

/* Loop context (a task): every rank's record, from the launcher. */
static void pmi_addrs_task(void *arg) {
  op_t *op = arg;

  got_addrs(op, 0, (size_t)op->e->cfg.size, (const uint8_t *const *)op->values,
            op->lens);
}

/* Bootstrap through the launcher (pmi.h), blocking in this thread: the
 * key, a listening address, the exchange of records, then what follows
 * them as after a rendezvous. */
static int pmi_boot_phase(mmp__engine_t *e, op_t *op) {
  int rc = mmp__pmi_key(&e->cfg);

  if (rc != 0)
    return rc;
  mmp__pmi_toward(&op->boot_sa);
  rc = op_run(e, op, pmi_listen_task);
  if (rc == 0)
    rc = mmp__pmi_exchange(&e->cfg, op->rec, &op->values, &op->lens);
  if (rc == 0) {
    rc = op_run(e, op, pmi_addrs_task);
    mmp__pmi_free_records(op->values, op->lens);
  }
  return rc;
}

static int boot_phase(mmp__engine_t *e) {
  op_t op;
  int rc;

  memset(&op, 0, sizeof(op));
  if (e->cfg.pmi) {
    rc = pmi_boot_phase(e, &op);
    goto booted;
  }
  if (mmp__addr_parse(e->cfg.boot_addr, &op.boot_sa) != 0) {
    if (e->cfg.from_args) {
      MMP__LOG(MMP__LOG_ERROR,
               "the rendezvous argument '%s' of mmp_init_ex is not "
               "host:port",
               e->cfg.boot_addr);
      return MMP_EINVAL;
    }
    MMP__LOG(MMP__LOG_ERROR, "MINIMP_BOOT_ADDR='%s' is not host:port",
             e->cfg.boot_addr);
    return MMP_EENV;
  }
  /* A named address that does not exist fails now, not after waiting for
   * the rendezvous (which the other ranks may never bring up). */
  if (e->cfg.iface[0] != '\0') {
    struct sockaddr_storage la;
    rc = listen_addr(e, &op.boot_sa, &la);
    if (rc != 0)
      return rc;
  }
  op.e = e;
  rc = op_run(e, &op, boot_start_task);
booted:
  if (rc != 0 || !e->cfg.connect_eager)
    return rc;
  rc = op_run(e, &op, connect_all_task);
  if (rc == 0)
    mmp__progress_until(e, all_up_pred, e);
  return rc;
}

/* ---- Shut-down ---------------------------------------------------------- */

static void flag_set(void *arg) {
  *(int *)arg = 1;
}

static void boot_closed(void *arg, int status, size_t count,
                        const uint8_t *const *values, const size_t *lens) {
  (void)status;
  (void)count;
  (void)values;
  (void)lens;
  *(int *)arg = 1;
}

static void timer_flag(uv_timer_t *t) {
  *(int *)t->data = 1;
}

/* Loop context, the only thread left (mmp__engine_stop_thread): runs the
 * loop until *flag is set or `ms` pass. */
static void run_until(mmp__engine_t *e, int *flag, unsigned ms) {
  int fired = 0;

  MMP__ASSERT_LOOP(e);
  e->timer.data = &fired;
  uv_timer_start(&e->timer, timer_flag, ms, 0);
  while (!*flag && !fired)
    mmp__run_loop(e, UV_RUN_ONCE);
  uv_timer_stop(&e->timer);
}

/* Stops the progress thread and frees everything, in dependency order. */
static void teardown(mmp__engine_t *e) {
  int done;

  mmp__engine_stop_thread(e);
  uv_timer_stop(&e->timer);
  uv_timer_stop(&e->heartbeat);
  if (e->boot != NULL) {
    done = 0;
    mmp__boot_client_close(e->boot, boot_closed, &done);
    run_until(e, &done, 5000);
    e->boot = NULL;
  }
  if (e->bootsrv != NULL) {
    /* Serve until every rank has said BYE, so none loses its fence. */
    run_until(e, &e->boot_all_done, 10000);
    done = 0;
    mmp__boot_server_stop(e->bootsrv, flag_set, &done);
    run_until(e, &done, 5000);
    e->bootsrv = NULL;
  }
  if (e->tcp.tp != NULL) {
    done = 0;
    e->tcp.ops->destroy(e->tcp.tp, flag_set, &done);
    run_until(e, &done, 5000);
    e->tcp.tp = NULL;
  }
  if (e->shm.tp != NULL) {
    done = 0;
    e->shm.ops->destroy(e->shm.tp, flag_set, &done);
    run_until(e, &done, 5000);
    e->shm.tp = NULL;
  }
  /* Frames the transports never wrote fail now, under the lock that
   * their requests' completion needs (mmp__engine_fini destroys it). */
  mmp__lock(e);
  mmp__p2p_drop_queues_locked(e);
  mmp__unlock(e);
  mmp__mcast_close(e, &done);
  run_until(e, &done, 5000);
  mmp__engine_fini(e);
  mmp__mcast_free(e);
  mmp__p2p_fini(e);
  mmp__comm_ext_free(&e->world);
  free(e->world.node_of);
  if (e->cfg.pmi)
    mmp__pmi_fini();
  free(e);
}

static void fence_done(void *arg, int status, size_t count,
                       const uint8_t *const *values, const size_t *lens) {
  (void)count;
  (void)values;
  (void)lens;
  op_finish(arg, status < 0 ? MMP_EBOOT : 0);
}

/* Loop context (a task), lock not held. */
static void fence_task(void *arg) {
  op_t *op = arg;
  mmp__engine_t *e = op->e;

  MMP__ASSERT_LOOP(e);
  if (e->boot == NULL || e->boot_lost ||
      mmp__boot_fence(e->boot, 1, fence_done, op) != 0)
    op_finish(op, MMP_EBOOT);
}

static void close_timeout(uv_timer_t *t) {
  mmp__engine_t *e = t->data;
  set_and_notify(e, &e->close_timed_out);
}

/* Loop context (a task), lock not held. */
static void close_task(void *arg) {
  op_t *op = arg;
  mmp__engine_t *e = op->e;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  e->closing = 1;
  mmp__p2p_close_all_locked(e);
  mmp__unlock(e);
  e->timer.data = e;
  uv_timer_start(&e->timer, close_timeout, 10000, 0);
  op_finish(op, 0);
}

static int closed_pred(void *arg) {
  mmp__engine_t *e = arg;
  return e->close_timed_out || mmp__p2p_all_closed_locked(e);
}

/* ---- Public entry points ------------------------------------------------ */

static int runtime_start(const mmp__config_t *cfg) {
  mmp__engine_t *e = calloc(1, sizeof(*e));
  char who[32];
  int rc;

  if (e == NULL)
    return MMP_ENOMEM;
  e->tcp.e = e->shm.e = e;
  e->tcp.ops = &mmp__tcp_ops;
  e->shm.ops = &mmp__shm_ops;
  e->cfg = *cfg;
  mmp__config_resolve(&e->cfg);
  if (e->cfg.eager_buffer == 0) {
    /* Bound the memory unexpected eager data may take: about 256 MiB in
     * all, between 256 KiB and 16 MiB per peer. */
    uint64_t per =
        (256ull << 20) / (uint64_t)(cfg->size > 1 ? cfg->size - 1 : 1);
    if (per < (256u << 10))
      per = 256u << 10;
    if (per > (16u << 20))
      per = 16u << 20;
    e->cfg.eager_buffer = per;
  }
  /* A write to a dead peer must become an error, not kill the process. An
   * application that chose its own disposition keeps it. */
  {
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
      signal(SIGPIPE, SIG_IGN);
  }
  snprintf(who, sizeof(who), "rank %d", cfg->rank);
  mmp__log_set_prefix(who);
  rc = mmp__engine_init(e);
  if (rc != 0) {
    free(e);
    return rc;
  }
  rc = mmp__p2p_init(e);
  e->world.ctx = 0;
  e->world.rank = cfg->rank;
  e->world.size = cfg->size;
  atomic_init(&e->world.refs, 1);
  e->next_ctx = 2;
  mmp__list_init(&e->comms);
  if (rc == 0 && !cfg->singleton)
    rc = boot_phase(e);
  if (rc == 0)
    rc = cfg->progress_external ? mmp__engine_external(e)
                                : mmp__engine_start_thread(e);
  if (rc != 0) {
    /* The other ranks would wait in the launcher's fence for ever. */
    if (e->cfg.pmi)
      mmp__pmi_abort(rc == MMP_EBOOT ? 1 : 2, "mmp_init failed");
    teardown(e);
    return rc;
  }
  mmp__eng = e;
  /* Every rank, whatever its progress mode (mmp_init drives the loop
   * itself under external progress, as a blocking call does): both steps
   * are collective, and ranks of one job may differ in that mode. */
  if (mmp__coll_hooks != NULL && mmp__coll_hooks->world_up != NULL)
    mmp__coll_hooks->world_up(&e->world);
  mmp__mcast_world_up(e);
  return 0;
}

static int init_body(const mmp__coll_hooks_t *h, int *argc, char ***argv) {
  mmp__config_t cfg;
  int rc;
  (void)argc;
  (void)argv;

  uv_once(&init_once, init_mutex_once);
  uv_mutex_lock(&init_mutex);
  if (mmp__eng != NULL) {
    uv_mutex_unlock(&init_mutex);
    return MMP_EALREADY;
  }
  mmp__coll_hooks = h;
  memset(&cfg, 0, sizeof(cfg));
  rc = mmp__config_tuning(&cfg);
  /* Started by a PMIx or PMI-2 launcher: it is the rendezvous. */
  if (rc == 0)
    rc = mmp__pmi_detect() != MMP__PMI_NONE ? mmp__pmi_identity(&cfg)
                                            : mmp__config_identity(&cfg);
  if (rc == 0)
    rc = runtime_start(&cfg);
  uv_mutex_unlock(&init_mutex);
  return rc;
}

int mmp__rt_init(const mmp__coll_hooks_t *h, int *argc, char ***argv) {
  mmp__api_enter();
  return mmp__api_leave(init_body(h, argc, argv), "mmp_init");
}

/* mmp_init_ex's arguments, each checked with a message that names it. The
 * key is decoded into cfg. Returns 0 or MMP_EINVAL. */
static int init_ex_args(mmp__config_t *cfg, int rank, int size,
                        const char *rendezvous, const char *job_key,
                        const char *iface, unsigned flags) {
  const char *why = NULL;

  if (size < 1 || rank < 0 || rank >= size) {
    MMP__LOG(MMP__LOG_ERROR,
             "mmp_init_ex: rank %d and size %d: need 0 <= rank < size", rank,
             size);
    return MMP_EINVAL;
  }
  if (rendezvous == NULL)
    why = "the rendezvous argument is NULL";
  else if (strlen(rendezvous) >= sizeof(cfg->boot_addr))
    why = "the rendezvous argument is too long";
  else if (job_key == NULL ||
           mmp__hex_decode(job_key, cfg->key, MMP__JOB_KEY_LEN) != 0)
    why = "the job_key argument must be 32 hex digits";
  else if (iface != NULL && strlen(iface) >= sizeof(cfg->iface))
    why = "the iface argument is too long";
  else if ((flags & ~(MMP_INIT_HOST_RENDEZVOUS | MMP_INIT_EXTERNAL_PROGRESS)) !=
           0)
    why = "unknown bits in the flags argument";
  if (why != NULL) {
    MMP__LOG(MMP__LOG_ERROR, "mmp_init_ex: %s", why);
    return MMP_EINVAL;
  }
  return 0;
}

static int init_ex_body(const mmp__coll_hooks_t *h, int rank, int size,
                        const char *rendezvous, const char *job_key,
                        const char *iface, unsigned flags) {
  mmp__config_t cfg;
  int rc;

  memset(&cfg, 0, sizeof(cfg));
  rc = init_ex_args(&cfg, rank, size, rendezvous, job_key, iface, flags);
  if (rc != 0)
    return rc;
  uv_once(&init_once, init_mutex_once);
  uv_mutex_lock(&init_mutex);
  if (mmp__eng != NULL) {
    uv_mutex_unlock(&init_mutex);
    return MMP_EALREADY;
  }
  mmp__coll_hooks = h;
  rc = mmp__config_tuning(&cfg);
  if (rc == 0) {
    cfg.from_args = 1;
    cfg.rank = rank;
    cfg.size = size;
    cfg.local_rank = rank;
    cfg.local_size = size;
    cfg.host_boot = (flags & MMP_INIT_HOST_RENDEZVOUS) != 0;
    if (flags & MMP_INIT_EXTERNAL_PROGRESS)
      cfg.progress_external = 1;
    strcpy(cfg.boot_addr, rendezvous);
    if (iface != NULL)
      strcpy(cfg.iface, iface);
    rc = runtime_start(&cfg);
  }
  uv_mutex_unlock(&init_mutex);
  return rc;
}

int mmp__rt_init_ex(const mmp__coll_hooks_t *h, int rank, int size,
                    const char *rendezvous, const char *job_key,
                    const char *iface, unsigned flags) {
  mmp__api_enter();
  return mmp__api_leave(
      init_ex_body(h, rank, size, rendezvous, job_key, iface, flags),
      "mmp_init_ex");
}

static int finalize_body(void) {
  mmp__engine_t *e;
  int rc = 0;
  op_t op;

  uv_once(&init_once, init_mutex_once);
  uv_mutex_lock(&init_mutex);
  e = mmp__eng;
  if (e == NULL) {
    uv_mutex_unlock(&init_mutex);
    return MMP_ENOTINIT;
  }
  mmp__lock(e);
  e->finalizing = 1;
  mmp__unlock(e);
  if (!e->cfg.singleton) {
    memset(&op, 0, sizeof(op));
    rc = e->cfg.pmi ? mmp__pmi_fence() : op_run(e, &op, fence_task);
    if (rc != 0)
      MMP__LOG(MMP__LOG_WARN, "finalize barrier failed; closing anyway");
    op_run(e, &op, close_task);
    mmp__progress_until(e, closed_pred, e);
  }
  /* A collective may still listen for what never came (an arrival-aware
   * root for a rank that took the broadcast for another). */
  mmp__lock(e);
  mmp__p2p_cancel_internal_locked(e);
  mmp__unlock(e);
  mmp__eng = NULL;
  teardown(e);
  uv_mutex_unlock(&init_mutex);
  return rc;
}

int mmp_finalize(void) {
  mmp__api_enter();
  return mmp__api_leave(finalize_body(), __func__);
}

int mmp_initialized(void) {
  return mmp__eng != NULL;
}

static void abort_sent(void *arg, int status, size_t count,
                       const uint8_t *const *values, const size_t *lens) {
  (void)status;
  (void)count;
  (void)values;
  (void)lens;
  op_finish(arg, 0);
}

/* Loop context (a task), lock not held. */
static void abort_task(void *arg) {
  op_t *op = arg;
  mmp__engine_t *e = op->e;

  MMP__ASSERT_LOOP(e);
  if (e->boot == NULL || e->boot_lost ||
      mmp__boot_abort(e->boot, op->rc, op->why, abort_sent, op) != 0)
    op_finish(op, 0);
}

void mmp_abort(int code) {
  /* No reason: minimprun says "rank N called mmp_abort(CODE)" alone. */
  mmp__abort_with(code, "");
}

void mmp__abort_with(int code, const char *why) {
  mmp__engine_t *e = mmp__eng;

  fflush(stdout);
  fflush(stderr);
  if (e != NULL && e->cfg.pmi) {
    /* The launcher stops every rank, this one included. */
    mmp__pmi_abort(code, why);
    _exit(code);
  }
  if (e != NULL && !e->cfg.singleton && !mmp__in_loop()) {
    op_t op;
    memset(&op, 0, sizeof(op));
    op.e = e;
    op.rc = code;
    op.why = why;
    mmp__lock(e);
    mmp__engine_post_locked(e, &op.task, abort_task, &op);
    mmp__unlock(e);
    mmp__progress_until(e, op_done_pred, &op);
    /* The launcher now stops every rank, this one included; give it the
     * chance so that it reports the abort rather than our exit. */
    usleep(2000 * 1000);
  }
  _exit(code);
}

double mmp_wtime(void) {
  return (double)uv_hrtime() * 1e-9;
}

mmp_comm_t *mmp_comm_world(void) {
  mmp__engine_t *e = mmp__eng;
  return e != NULL ? &e->world : NULL;
}

int mmp_comm_rank(const mmp_comm_t *comm) {
  if (comm == NULL)
    return mmp__eng == NULL ? mmp__not_init("mmp_comm_rank") : MMP_ECOMM;
  return comm->rank;
}

int mmp_comm_size(const mmp_comm_t *comm) {
  if (comm == NULL)
    return mmp__eng == NULL ? mmp__not_init("mmp_comm_size") : MMP_ECOMM;
  return comm->size;
}

int mmp__not_init(const char *fn) {
  static atomic_int said;

  /* Once: a program that ignored a failed mmp_init calls on in a loop. */
  if (atomic_exchange(&said, 1) == 0)
    MMP__LOG(MMP__LOG_ERROR,
             "%s called before a successful mmp_init (did mmp_init fail "
             "unchecked?); such calls return MMP_ENOTINIT",
             fn);
  return MMP_ENOTINIT;
}

void mmp__abort_text(char *buf, size_t cap, int rank, int code,
                     const char *msg) {
  int n;

  /* Rank -1: the launcher itself stopped the job (a timeout, a signal). */
  if (rank >= 0)
    n = snprintf(buf, cap, "job aborted by rank %d (code %d)", rank, code);
  else
    n = snprintf(buf, cap, "job stopped by the launcher (code %d)", code);
  if (n >= 0 && (size_t)n < cap && msg != NULL && msg[0] != '\0')
    snprintf(buf + n, cap - (size_t)n, ": %s", msg);
}
