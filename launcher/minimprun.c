/* SPDX-License-Identifier: MIT */
/*
 * minimprun: the SPMD launcher of libminimp.
 *
 *   minimprun [options] [-n N] program [args...]
 *
 * It starts N copies of `program` as one job, serves the job's bootstrap
 * ("rendezvous") service on its own libuv loop, forwards the ranks' output
 * line by line, forwards SIGINT/SIGTERM, and turns the first failure of any
 * rank into the job's exit status after stopping every other rank. It links
 * only the bootstrap protocol (libmmpboot), never libminimp itself.
 *
 * Ranks are placed on a table of hosts, each with a number of slots
 * (--host, --hostfile; hosts.c), by run_place.c. Ranks of this machine are
 * started directly with uv_spawn (run_launch); every other host gets one
 * daemon, "AGENT HOST minimprun --daemon ADDR INDEX" (run_remote.c,
 * remote.c, daemon.c), which starts that host's ranks and reports their
 * output and exits over the control connection, so that a remote rank looks
 * like a local one from here on: the same messages, the same forwarding,
 * the same failure handling. "minimprun --daemon" is this same program in
 * that role.
 *
 * This file holds the job itself: starting the ranks of this machine,
 * judging how every rank ends (the daemons' reports included), timers,
 * signals and main(). The command line is read by run_opts.c, the ranks
 * are placed and the listen address chosen by run_place.c, the other
 * hosts' daemons are started by run_remote.c, the ranks' environment is
 * built by run_env.c, and their output is forwarded, whole lines at a
 * time, by run_output.c; run.h holds the job's state that they share. Rank 0
 * reads minimprun's stdin (inherited, or forwarded to its daemon); the others
 * read /dev/null. Each rank runs in its own session and process group, so that
 * signals reach everything it started.
 *
 * A rank whose bootstrap connection drops usually dies at that moment, and
 * its exit status says more than the lost connection, so the verdict waits
 * RUN_LOST_GRACE_MS for it; failures of other ranks in that window are
 * taken as consequences. A rank that exits with an error waits as long
 * for another rank's death or loss, which would be its cause. A host whose
 * daemon cannot be started or goes away is a failure of its ranks; once the job
 * is being stopped, a host that has not reported its ranks' ends
 * RUN_REMOTE_GRACE_MS after the SIGKILL is given up (its daemon stops them when
 * our connection drops).
 *
 * Exit status:
 *     0  every rank exited 0 (and those that called mmp_init finalized)
 *     c  the first failing rank exited with code c
 * 128+s  the first failing rank was killed by signal s
 *     c  the first failure was mmp_abort(c); 1 if c is not in 1..255
 *     1  a rank exited 0 without mmp_finalize (or without mmp_init while
 *        other ranks called it), or lost its bootstrap connection, or a
 *        host could not be started or was lost, or minimprun itself failed
 *     2  usage error (unknown option, bad value)
 *   110  --timeout expired
 *   126  the program could not be executed (permission, format)
 *   127  the program was not found
 * Only the first failure counts; deaths caused by stopping the job do not.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include "bind.h"
#include "common.h"
#include "daemon.h"
#include "hosts.h"
#include "minimp.h"
#include "remote.h"
#include "run.h"
#include "run_env.h"
#include "run_opts.h"
#include "run_output.h"
#include "run_place.h"
#include "run_remote.h"
#include "transport/boot.h"
#include "transport/util.h"

extern char **environ;

#define RUN_KILL_AFTER_MS 1500   /* SIGTERM, then SIGKILL */
#define RUN_LOST_GRACE_MS 500    /* wait for a lost rank's exit status */
#define RUN_UNJOINED_MS 300      /* let a HELLO in flight arrive */
#define RUN_DRAIN_MS 1000        /* wait for output after the last exit */
#define RUN_HANDSHAKE_MS 10000   /* bootstrap HELLO deadline */
#define RUN_REMOTE_GRACE_MS 1000 /* after SIGKILL: remote ends reported */
#define RUN_EXIT_TIMEOUT 110

static void run_maybe_finish(mmp__run_job_t *j);

/* "rank 3 (pid 4711)", or "rank 3 (pid 4711 on node7)" on another host. */
static const char *run_who(const mmp__run_rank_t *r, char *buf, size_t len) {
  if (r->remote)
    snprintf(buf, len, "rank %d (pid %d on %s)", r->rank, r->pid,
             r->job->hl.hosts[r->host].name);
  else
    snprintf(buf, len, "rank %d (pid %d)", r->rank, r->pid);
  return buf;
}

/* ---- Stopping ranks ------------------------------------------------------ */

/* Signals a local rank's whole process group; remote ranks are signalled
 * by their daemons. */
static void run_kill(mmp__run_rank_t *r, int sig) {
  if (r->remote || !r->spawned || r->exited)
    return;
  mmp__kill_group(r->pid, sig);
}

static void run_kill_all(mmp__run_job_t *j, int sig) {
  int i;

  for (i = 0; i < j->n; i++)
    run_kill(&j->ranks[i], sig);
  mmp__remote_signal(j->remote, sig);
}

static void run_close_outs(mmp__run_rank_t *r) {
  mmp__run_out_close(&r->out[0], 1);
  mmp__run_out_close(&r->out[1], 1);
}

/* A remote rank whose end will never be reported: its host is gone, or
 * gave no sign in time. Its daemon (if any) stops it. */
static void run_rank_gone(mmp__run_rank_t *r) {
  if (r->exited)
    return;
  r->exited = 1;
  r->status = -1;
  r->job->nrunning--;
  run_close_outs(r);
}

static void run_on_remote_timer(uv_timer_t *t) {
  mmp__run_job_t *j = t->data;
  int i;

  for (i = 0; i < j->n; i++)
    if (j->ranks[i].remote && !j->ranks[i].exited) {
      if (j->verbose)
        mmp__say("no word on rank %d from host %s; giving it up", i,
                 j->hl.hosts[j->ranks[i].host].name);
      run_rank_gone(&j->ranks[i]);
    }
  run_maybe_finish(j);
}

/* SIGKILL to every rank; hosts that cannot report it are given up soon. */
static void run_kill_hard(mmp__run_job_t *j) {
  run_kill_all(j, SIGKILL);
  if (j->nremote > 0 && !uv_is_active((uv_handle_t *)&j->remote_timer))
    uv_timer_start(&j->remote_timer, run_on_remote_timer, RUN_REMOTE_GRACE_MS,
                   0);
}

static void run_on_kill_timer(uv_timer_t *t) {
  mmp__run_job_t *j = t->data;

  if (j->nrunning > 0 && j->verbose)
    mmp__say("%d rank(s) still running; sending SIGKILL", j->nrunning);
  run_kill_hard(j);
}

/* Records the job's failure (only the first), reports it in one line and
 * stops every rank: SIGTERM now, SIGKILL after RUN_KILL_AFTER_MS (daemons
 * do the same with theirs). `rank` is the rank that caused it, or -1. */
static void run_fail(mmp__run_job_t *j, int rank, int code, const char *msg) {
  int i;

  if (j->failed)
    return;
  j->failed = 1;
  j->exit_code = code;
  j->first_lost = NULL;
  uv_timer_stop(&j->grace_timer);
  mmp__say("%s", msg);
  if (j->boot != NULL)
    mmp__boot_server_broadcast(j->boot, MMP__BOOT_EV_ABORT, rank, code, msg,
                               -1);
  for (i = 0; i < j->n; i++)
    run_kill(&j->ranks[i], SIGTERM);
  mmp__remote_kill(j->remote);
  if (j->nrunning > 0)
    uv_timer_start(&j->kill_timer, run_on_kill_timer, RUN_KILL_AFTER_MS, 0);
}
/* A rank's failure. While we wait to learn how an earlier lost rank ended,
 * it is kept aside: that rank's loss likely caused this one. */
static void run_rank_fail(mmp__run_job_t *j, mmp__run_rank_t *r, int code,
                          const char *msg) {
  if (j->failed)
    return;
  if (j->first_lost != NULL && j->first_lost != r) {
    if (!j->deferred) {
      j->deferred = 1;
      j->deferred_code = code;
      j->deferred_rank = r->rank;
      snprintf(j->deferred_msg, sizeof(j->deferred_msg), "%s", msg);
    }
    return;
  }
  run_fail(j, r->rank, code, msg);
}

static void run_on_grace(uv_timer_t *t) {
  mmp__run_job_t *j = t->data;
  mmp__run_rank_t *r = j->first_lost;
  char msg[512], who[320];

  if (j->failed)
    return;
  if (r == NULL) {
    /* An error exit waited for a cause that did not come. */
    if (j->deferred)
      run_fail(j, j->deferred_rank, j->deferred_code, j->deferred_msg);
    return;
  }
  j->first_lost = NULL;
  snprintf(msg, sizeof(msg), "%s lost its bootstrap connection: %s",
           run_who(r, who, sizeof(who)), r->lost_reason);
  run_fail(j, r->rank, 1, msg);
}

/* ---- Bootstrap callbacks ------------------------------------------------- */

/*
 * A rank that exits 0 without joining the bootstrap is fine on its own (a
 * program that does not use libminimp), but once another rank joined, that
 * rank's mmp_init can never complete: fail now instead of hanging. The
 * check runs a little later, so that a HELLO sent just before the exit is
 * not mistaken for a missing one.
 */
static void run_on_unjoined(uv_timer_t *t) {
  mmp__run_job_t *j = t->data;
  char msg[512], who[320];
  int i;

  if (j->failed || j->njoined == 0)
    return;
  for (i = 0; i < j->n; i++) {
    mmp__run_rank_t *r = &j->ranks[i];
    if (r->exited && r->signo == 0 && r->status == 0 && !r->joined) {
      snprintf(msg, sizeof(msg),
               "%s exited with code 0 without calling mmp_init, while other "
               "ranks did",
               run_who(r, who, sizeof(who)));
      run_rank_fail(j, r, 1, msg);
      return;
    }
  }
}

static void run_check_unjoined(mmp__run_job_t *j) {
  if (j->njoined > 0 && j->unjoined_exits > 0 && !j->failed &&
      !uv_is_active((uv_handle_t *)&j->unjoined_timer))
    uv_timer_start(&j->unjoined_timer, run_on_unjoined, RUN_UNJOINED_MS, 0);
}

static void run_on_joined(void *ctx, int rank, const char *host, int pid) {
  mmp__run_job_t *j = ctx;
  mmp__run_rank_t *r = &j->ranks[rank];

  r->joined = 1;
  j->njoined++;
  if (r->exited && r->signo == 0 && r->status == 0)
    j->unjoined_exits--; /* its HELLO was still on the way */
  if (j->verbose)
    mmp__say("rank %d joined the bootstrap (host %s, pid %d)", rank, host, pid);
  run_check_unjoined(j);
}

static void run_on_lost(void *ctx, int rank, const char *reason) {
  mmp__run_job_t *j = ctx;
  mmp__run_rank_t *r = &j->ranks[rank];
  char msg[512], who[320];

  r->lost = 1;
  snprintf(r->lost_reason, sizeof(r->lost_reason), "%s", reason);
  if (j->verbose)
    mmp__say("rank %d left the bootstrap without finalizing: %s", rank, reason);
  /* The process usually exits at the same moment; its status says more
   * than "connection lost", so wait a little for it. Before the broadcast
   * below: it makes the others lost too, and they are not the cause. */
  if (j->first_lost == NULL && !j->failed && !r->exited) {
    j->first_lost = r;
    uv_timer_start(&j->grace_timer, run_on_grace, RUN_LOST_GRACE_MS, 0);
  }
  /* The others' operations with it fail now: the job is lost either way,
   * and a survivor that learns it only from the stop is killed before it
   * can say what it saw (docs/launcher.md, "When something fails"). */
  if (j->boot != NULL && !j->failed)
    mmp__boot_server_broadcast(j->boot, MMP__BOOT_EV_RANK_FAILED, rank,
                               MMP_EPEERLOST, reason, rank);
  if (j->failed) {
    run_maybe_finish(j);
    return;
  }
  if (r->exited) {
    /* A failed exit was reported already; a clean one was not clean. */
    if (r->signo == 0 && r->status == 0) {
      snprintf(msg, sizeof(msg),
               "%s exited with code 0 without calling mmp_finalize",
               run_who(r, who, sizeof(who)));
      run_rank_fail(j, r, 1, msg);
    }
    run_maybe_finish(j);
    return;
  }
}

static void run_on_abort(void *ctx, int rank, int code, const char *message) {
  mmp__run_job_t *j = ctx;
  mmp__run_rank_t *r = &j->ranks[rank];
  char msg[512], who[320];

  snprintf(msg, sizeof(msg), "%s called mmp_abort(%d)%s%s",
           run_who(r, who, sizeof(who)), code, message[0] != '\0' ? ": " : "",
           message);
  /* Every rank's operations fail with MMP_EABORTED before the stop. */
  if (j->boot != NULL && !j->failed)
    mmp__boot_server_broadcast(j->boot, MMP__BOOT_EV_ABORTED, rank, code,
                               message, -1);
  run_rank_fail(j, r, code >= 1 && code <= 255 ? code : 1, msg);
}

static void run_on_all_done(void *ctx) {
  mmp__run_job_t *j = ctx;

  j->all_done = 1;
  if (j->verbose)
    mmp__say("every rank finalized");
  run_maybe_finish(j);
}

/* ---- Processes ----------------------------------------------------------- */

/* A rank ended, here or on another host: judge how. */
static void run_rank_ended(mmp__run_rank_t *r, int64_t status, int signo) {
  mmp__run_job_t *j = r->job;
  char msg[512], who[320];
  int code = 0;

  r->exited = 1;
  r->status = status;
  r->signo = signo;
  j->nrunning--;
  run_who(r, who, sizeof(who));
  if (signo != 0) {
    snprintf(msg, sizeof(msg), "%s killed by signal %d (%s)", who, signo,
             mmp__signame(signo));
    code = 128 + signo;
  } else if (status != 0) {
    snprintf(msg, sizeof(msg), "%s exited with code %d", who, (int)status);
    code = (int)(status & 0xff) != 0 ? (int)(status & 0xff) : 1;
  } else if (r->lost) {
    snprintf(msg, sizeof(msg),
             "%s exited with code 0 without calling "
             "mmp_finalize",
             who);
    code = 1;
  } else if (!r->joined) {
    j->unjoined_exits++;
    run_check_unjoined(j);
  }
  if (j->verbose)
    mmp__say("%s ended: %s", who,
             code != 0 ? msg + strlen(who) + 1 : "exit code 0");
  if (code != 0 && signo == 0 && j->first_lost == NULL && !j->failed &&
      !j->deferred) {
    /* A rank that exits with an error has often just seen another die
     * (through shared memory, before we learn of it): that one's signal
     * or lost connection, if it comes within the grace, names the cause. */
    j->deferred = 1;
    j->deferred_code = code;
    j->deferred_rank = r->rank;
    snprintf(j->deferred_msg, sizeof(j->deferred_msg), "%s", msg);
    uv_timer_start(&j->grace_timer, run_on_grace, RUN_LOST_GRACE_MS, 0);
    run_maybe_finish(j);
    return;
  }
  if (code != 0) {
    if (j->first_lost == r) {
      /* The lost rank's own status, which is what the user wants. */
      j->first_lost = NULL;
      uv_timer_stop(&j->grace_timer);
    }
    run_rank_fail(j, r, code, msg);
  }
  run_maybe_finish(j);
}

static void run_on_exit(uv_process_t *p, int64_t status, int signo) {
  mmp__run_rank_t *r = p->data;

  uv_close((uv_handle_t *)p, NULL);
  /* A rank killed while it set up shared memory leaves its names behind
   * (a finished set-up has removed them); only the key's holders know
   * them. */
  mmp__shm_remove(r->job->key, r->rank);
  run_rank_ended(r, status, signo);
}

/* A rank could not be started (err is a libuv error): like a shell, 127
 * when not found, 126 when not executable. */
static void run_start_failed(mmp__run_job_t *j, mmp__run_rank_t *r, int err) {
  int code = mmp__spawn_exit_code(err);
  char where[300] = "", msg[640];

  if (r->remote)
    snprintf(where, sizeof(where), " on host %s", j->hl.hosts[r->host].name);
  /* A missing --wdir fails the start as a missing program does: name both. */
  if (j->wdir != NULL)
    snprintf(where + strlen(where), sizeof(where) - strlen(where),
             " in --wdir '%s'", j->wdir);
  /* libuv's codes are negated errno values here; strerror reads best. */
  if (code != 1)
    snprintf(msg, sizeof(msg), "cannot start '%s'%s: %s", j->argv[0], where,
             strerror(-err));
  else
    snprintf(msg, sizeof(msg), "cannot start rank %d of '%s'%s: %s", r->rank,
             j->argv[0], where, strerror(-err));
  run_fail(j, r->rank, code, msg);
}

static void run_out_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  mmp__run_out_t *o = h->data;

  (void)hint;
  /* One buffer serves every pipe: each read is consumed at once. */
  *buf = uv_buf_init(o->job->rbuf, sizeof(o->job->rbuf));
}

/* A local rank's pipe: its end is one of the things the job waits for. */
static void run_out_on_read(uv_stream_t *st, ssize_t nread,
                            const uv_buf_t *buf) {
  mmp__run_out_t *o = st->data;

  if (nread > 0) {
    mmp__run_feed(o, buf->base, (size_t)nread);
  } else if (nread < 0) {
    mmp__run_out_close(o, 1);
    run_maybe_finish(o->job);
  }
}

/* Starts one rank of this machine with uv_spawn. Returns 0 or a libuv
 * error. */
static int run_launch(mmp__run_job_t *j, mmp__run_rank_t *r, char **env) {
  mmp__spawn_t s;
  int rc, k;

  cpu_set_t cpus;
  int core;

  memset(&s, 0, sizeof(s));
  s.argv = j->argv;
  s.env = env;
  s.cwd = j->wdir;
  s.cpus = mmp__bind_for(j->bind_core, r->local_rank, &cpus, &core);
  s.in_mode = r->rank == 0 ? MMP__STDIN_INHERIT : MMP__STDIN_NULL;
  mmp__run_rank_outs_init(r);
  for (k = 0; k < 2; k++) {
    mmp__run_out_t *out = &r->out[k];
    uv_pipe_init(&j->loop, &out->pipe, 0);
    out->pipe.data = out;
    out->piped = 1;
    s.out[k] = &out->pipe;
  }
  s.exit_cb = run_on_exit;
  r->proc.data = r;
  rc = mmp__spawn(&j->loop, &r->proc, &s);
  if (rc != 0) {
    /* The handles exist even when spawning failed. */
    uv_close((uv_handle_t *)&r->proc, NULL);
    for (k = 0; k < 2; k++) {
      r->out[k].closed = 1;
      uv_close((uv_handle_t *)&r->out[k].pipe, mmp__run_out_on_close);
    }
    return rc;
  }
  r->spawned = 1;
  r->pid = r->proc.pid;
  if (j->report_bindings)
    mmp__bind_report(r->pid, r->rank, core, s.cpus);
  j->nrunning++;
  for (k = 0; k < 2; k++) {
    j->open_pipes++;
    if (uv_read_start((uv_stream_t *)&r->out[k].pipe, run_out_alloc,
                      run_out_on_read) != 0)
      mmp__run_out_close(&r->out[k], 1);
  }
  return 0;
}

/* Spawns every rank of this machine, in rank order. */
static void run_spawn_local(mmp__run_job_t *j) {
  char vars[3][48], *v[3], **shared, **env = NULL;
  size_t nshared = 0, nenv = 0;
  int r;

  if (j->nremote == j->n)
    return;
  /* Open MPI stops when --wdir does not exist, rather than run elsewhere. */
  if (j->wdir != NULL && access(j->wdir, X_OK) != 0) {
    char msg[600];
    snprintf(msg, sizeof(msg), "--wdir '%s': %s", j->wdir, strerror(errno));
    run_fail(j, -1, 1, msg);
    return;
  }
  mmp__run_rank_vars(&j->ranks[0], vars, v);
  shared = mmp__run_shared_env(j, &nshared);
  /* Every rank sets the same three names, so one environment serves all
   * with its last three entries replaced. */
  if (shared != NULL)
    env = mmp__env_merge(environ, shared, nshared, v, 3);
  free(shared);
  if (env == NULL) {
    run_fail(j, -1, 1, "out of memory");
    return;
  }
  while (env[nenv] != NULL)
    nenv++;
  for (r = 0; r < j->n && !j->failed; r++) {
    mmp__run_rank_t *rk = &j->ranks[r];
    int rc;
    if (rk->remote)
      continue;
    mmp__run_rank_vars(rk, vars, v);
    memcpy(env + nenv - 3, v, sizeof(v));
    rc = run_launch(j, rk, env);
    if (rc != 0)
      run_start_failed(j, rk, rc);
    else if (j->verbose)
      mmp__say("rank %d started (pid %d)", r, rk->pid);
  }
  free(env);
}
/* ---- Ranks on other hosts ----------------------------------------------- */

/* What the daemons report (run_remote.c starts them): the same events as
 * a local rank's, judged the same way. */

static void run_rm_started(void *ctx, int rank, int pid, int err) {
  mmp__run_job_t *j = ctx;
  mmp__run_rank_t *r = &j->ranks[rank];

  if (r->spawned || r->exited)
    return;
  if (err != 0) {
    run_start_failed(j, r, err);
    run_rank_gone(r);
    run_maybe_finish(j);
    return;
  }
  r->spawned = 1;
  r->pid = pid;
  if (j->verbose)
    mmp__say("rank %d started (pid %d on %s)", rank, pid,
             j->hl.hosts[r->host].name);
}

static void run_rm_output(void *ctx, int rank, int fd, const char *data,
                          size_t n) {
  mmp__run_job_t *j = ctx;
  mmp__run_out_t *o = &j->ranks[rank].out[fd - 1];

  if (o->closed)
    return;
  if (n > 0) {
    mmp__run_feed(o, data, n);
  } else {
    mmp__run_out_close(o, 1);
    run_maybe_finish(j);
  }
}

static void run_rm_exited(void *ctx, int rank, int64_t status, int signo) {
  mmp__run_job_t *j = ctx;

  if (!j->ranks[rank].exited)
    run_rank_ended(&j->ranks[rank], status, signo);
}

/* A host is gone. It is a failure if ranks there had not ended yet. */
static void run_rm_host_lost(void *ctx, int id, const char *msg) {
  mmp__run_job_t *j = ctx;
  int i, first = -1;

  for (i = 0; i < j->n; i++)
    if (j->ranks[i].host == id && !j->ranks[i].exited && first < 0)
      first = i;
  if (msg != NULL && first >= 0)
    run_fail(j, first, 1, msg);
  else if (msg != NULL && j->verbose)
    mmp__say("%s", msg);
  for (i = 0; i < j->n; i++)
    if (j->ranks[i].host == id)
      run_rank_gone(&j->ranks[i]);
  run_maybe_finish(j);
}

static void run_rm_agent_output(void *ctx, int id, int fd, const char *data,
                                size_t n) {
  mmp__run_job_t *j = ctx;
  mmp__run_out_t *o = &j->agent_out[2 * id + fd - 1];

  if (o->closed)
    return;
  if (n > 0)
    mmp__run_feed(o, data, n);
  else
    mmp__run_out_close(o, 0);
}

static const mmp__remote_cb_t run_rm_cb = {
    NULL,          run_rm_started,   run_rm_output,
    run_rm_exited, run_rm_host_lost, run_rm_agent_output};

/* ---- Signals, timeout, end ----------------------------------------------- */

static void run_on_signal(uv_signal_t *h, int signo) {
  mmp__run_job_t *j = h->data;

  if (++j->nsignals == 1) {
    if (j->verbose)
      mmp__say("received %s; forwarding it to every rank", mmp__signame(signo));
    run_kill_all(j, signo);
  } else {
    mmp__say("received %s again; killing every rank", mmp__signame(signo));
    run_kill_hard(j);
  }
}

static void run_on_timeout(uv_timer_t *t) {
  mmp__run_job_t *j = t->data;
  char msg[128];

  if (j->nrunning == 0 && j->first_lost == NULL) {
    /* Every rank is done; only output is still draining. */
    j->end_expired = 1;
    run_maybe_finish(j);
    return;
  }
  snprintf(msg, sizeof(msg), "job timed out after %ld s", j->timeout_s);
  run_fail(j, -1, RUN_EXIT_TIMEOUT, msg);
}

static void run_on_end_timer(uv_timer_t *t) {
  mmp__run_job_t *j = t->data;

  j->end_expired = 1;
  run_maybe_finish(j);
}

/* Every rank that joined the bootstrap has either finalized (all_done) or
 * been reported lost, so no verdict is still on its way. */
static int run_settled(const mmp__run_job_t *j) {
  int i;

  if (j->failed || j->all_done)
    return 1;
  for (i = 0; i < j->n; i++)
    if (j->ranks[i].joined && !j->ranks[i].lost)
      return 0;
  return 1;
}

static void run_finish(mmp__run_job_t *j) {
  int i;

  j->finishing = 1;
  for (i = 0; i < j->n; i++) {
    mmp__run_rank_t *r = &j->ranks[i];
    run_close_outs(r);
    /* Nothing the rank started may outlive the job. */
    if (r->spawned && !r->remote)
      kill(-r->pid, SIGKILL);
  }
  for (i = 0; j->agent_out != NULL && i < 2 * j->hl.n; i++)
    mmp__run_out_close(&j->agent_out[i], 0);
  /* Daemons stop what is left of their ranks when this drops. */
  mmp__remote_stop(j->remote);
  j->remote = NULL;
  if (j->boot != NULL) {
    mmp__boot_server_stop(j->boot, NULL, NULL);
    j->boot = NULL;
  }
  uv_close((uv_handle_t *)&j->sigint, NULL);
  uv_close((uv_handle_t *)&j->sigterm, NULL);
  uv_close((uv_handle_t *)&j->timeout_timer, NULL);
  uv_close((uv_handle_t *)&j->kill_timer, NULL);
  uv_close((uv_handle_t *)&j->grace_timer, NULL);
  uv_close((uv_handle_t *)&j->unjoined_timer, NULL);
  uv_close((uv_handle_t *)&j->end_timer, NULL);
  uv_close((uv_handle_t *)&j->remote_timer, NULL);
}

/* Ends the job once every rank exited, its output drained (or
 * RUN_DRAIN_MS passed: something the rank started keeps the pipe) and the
 * bootstrap has nothing more to say. */
static void run_maybe_finish(mmp__run_job_t *j) {
  if (j->finishing || j->nrunning > 0 || j->first_lost != NULL)
    return;
  if (!j->end_started) {
    j->end_started = 1;
    uv_timer_start(&j->end_timer, run_on_end_timer, RUN_DRAIN_MS, 0);
  }
  if (!j->end_expired && (j->open_pipes > 0 || !run_settled(j)))
    return;
  if (!j->failed && j->deferred) {
    /* A failure was held back for a lost rank that then ended cleanly. */
    run_fail(j, j->deferred_rank, j->deferred_code, j->deferred_msg);
  }
  run_finish(j);
}

/* ---- Main ---------------------------------------------------------------- */

/* Each rank costs three descriptors here; lift the soft limit. */
static void run_raise_fd_limit(void) {
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

static int run_start_boot(mmp__run_job_t *j) {
  static const mmp__boot_server_cb_t cbs = {NULL, run_on_joined, run_on_lost,
                                            run_on_abort, run_on_all_done};
  mmp__boot_server_cb_t cb = cbs;
  int rc;

  rc = uv_random(NULL, NULL, j->key, sizeof(j->key), 0, NULL);
  if (rc != 0) {
    mmp__say("cannot make a job key: %s", uv_strerror(rc));
    return 1;
  }
  mmp__hex_encode(j->key, sizeof(j->key), j->keyhex);
  cb.ctx = j;
  rc = mmp__boot_server_start(
      &j->loop, (const struct sockaddr *)&j->listen_addr, j->n, j->key,
      RUN_HANDSHAKE_MS, &cb, &j->boot, j->boot_addr, sizeof(j->boot_addr));
  if (rc == 0 && j->encrypt)
    rc = mmp__boot_server_seal(j->boot);
  if (rc != 0) {
    mmp__say("cannot start the bootstrap service: %s", mmp__errstr(rc));
    return 1;
  }
  return 0;
}

static void run_init_handles(mmp__run_job_t *j) {
  uv_signal_init(&j->loop, &j->sigint);
  uv_signal_init(&j->loop, &j->sigterm);
  uv_timer_init(&j->loop, &j->timeout_timer);
  uv_timer_init(&j->loop, &j->kill_timer);
  uv_timer_init(&j->loop, &j->grace_timer);
  uv_timer_init(&j->loop, &j->unjoined_timer);
  uv_timer_init(&j->loop, &j->end_timer);
  uv_timer_init(&j->loop, &j->remote_timer);
  j->sigint.data = j->sigterm.data = j;
  j->timeout_timer.data = j->kill_timer.data = j;
  j->grace_timer.data = j->end_timer.data = j;
  j->unjoined_timer.data = j->remote_timer.data = j;
  uv_signal_start(&j->sigint, run_on_signal, SIGINT);
  uv_signal_start(&j->sigterm, run_on_signal, SIGTERM);
  if (j->timeout_s > 0)
    uv_timer_start(&j->timeout_timer, run_on_timeout,
                   (uint64_t)j->timeout_s * 1000, 0);
}

/* Sets everything up and starts every rank; returns 0 or an exit status
 * when nothing could be started. */
static int run_start(mmp__run_job_t *j, char ***agentv) {
  int rc = mmp__run_place(j);

  if (rc == 0)
    rc = mmp__run_listen_addr(j);
  if (rc == 0 && j->outdir != NULL)
    rc = mmp__run_out_files(j);
  if (rc == 0 && uv_loop_init(&j->loop) != 0)
    rc = 1;
  if (rc != 0)
    return rc;
  run_init_handles(j);
  if (run_start_boot(j) != 0 || mmp__run_job_env(j) != 0) {
    j->failed = 1;
    j->exit_code = 1;
    return 0;
  }
  if (j->verbose)
    mmp__say("starting %d rank(s) of '%s'; bootstrap at %s", j->n, j->argv[0],
             j->boot_addr);
  /* The remote hosts first: they take longest to come up. */
  if (j->nremote > 0) {
    mmp__remote_cb_t cb = run_rm_cb;
    cb.ctx = j;
    if (mmp__run_begin_remote(j, &cb, agentv) != 0) {
      run_fail(j, -1, 1, "cannot start the ranks on other hosts");
      return 0;
    }
  }
  run_spawn_local(j);
  return 0;
}

static void run_free(mmp__run_job_t *j) {
  int r, k;

  for (r = 0; j->ranks != NULL && r < j->n; r++)
    for (k = 0; k < 2; k++)
      if (j->ranks[r].outfd[k] > 0)
        close(j->ranks[r].outfd[k]);
  free(j->wdir_abs);
  free(j->scratch);
  free(j->ranks);
  free(j->agent_out);
  free(j->xenv);
  free(j->libpath);
  free(j->exports);
  mmp__hosts_fini(&j->hl);
  free(j);
}

int main(int argc, char **argv) {
  mmp__run_job_t *j;
  char **agentv = NULL;
  int rc, code;

  if (argc > 1 && strcmp(argv[1], "--daemon") == 0)
    return mmp__daemon_main(argc, argv);
  if (argc > 1 && strcmp(argv[1], "--exec-rank") == 0)
    return mmp__daemon_exec_rank(argc, argv);
  j = calloc(1, sizeof(*j));
  if (j == NULL) {
    mmp__say("out of memory");
    return 1;
  }
  mmp__hosts_init(&j->hl);
  rc = mmp__run_parse(j, argc, argv);
  if (rc >= 0) {
    run_free(j);
    return rc;
  }
  /* Our own diagnostics are the one-line verdict; the bootstrap server's
   * warnings only with --verbose. */
  mmp__log_set_prefix("minimprun");
  mmp__log_level = j->verbose ? MMP__LOG_INFO : MMP__LOG_ERROR;
  signal(SIGPIPE, SIG_IGN); /* children get default dispositions back */
  run_raise_fd_limit();
  rc = run_start(j, &agentv);
  if (rc != 0) {
    if (rc == 1)
      mmp__say("out of memory");
    run_free(j);
    return rc;
  }
  run_maybe_finish(j);
  uv_run(&j->loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&j->loop);
  if (rc != 0)
    mmp__say("internal error: handles left open at exit");
  code = j->failed ? j->exit_code : 0;
  free(agentv);
  run_free(j);
  return code;
}
