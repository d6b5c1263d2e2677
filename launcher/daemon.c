/* SPDX-License-Identifier: MIT */
/*
 * The per-host daemon of minimprun (Open MPI's orted, Hydra's proxy):
 * "minimprun --daemon CTRLADDR INDEX", started through the agent. One
 * daemon per host means one agent invocation per host however many ranks
 * run there, and a process on the host that can watch the ranks, forward
 * their output and signals, and clean up after them.
 *
 * The job key arrives as the first line of standard input, never on the
 * command line, and never travels further. The daemon connects to
 * minimprun's control server, sends HELLO with its index, proves the key
 * against minimprun's CHALLENGE, checks minimprun's own proof in WELCOME
 * (ctrl.h), and only then starts the ranks of the LAUNCH that follows,
 * each with the key added to its environment, with uv_spawn, each in its own
 * process group, exactly like minimprun starts local ranks, but through
 * "minimprun --exec-rank", which asks the kernel to kill the rank should the
 * daemon die (even by SIGKILL, which leaves it no chance to clean up) and then
 * executes the program. The daemon looks the program up first, so that a
 * missing one is still reported as a failed start. Their output goes back as
 * OUTPUT messages, their exits as EXIT; STDIN feeds the rank that reads the
 * job's input; KILL and SIGNAL stop or signal every rank.
 *
 * When every rank has exited and its output is drained (or DMN_DRAIN_MS
 * passed), the daemon sends BYE and exits 0. If the connection drops first,
 * or the daemon is told to stop by SIGTERM, SIGINT or SIGHUP, it stops
 * every rank (SIGTERM, then SIGKILL after DMN_KILL_AFTER_MS) and exits 1
 * once they are gone: nothing outlives minimprun.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "bind.h"
#include "common.h"
#include "ctrl.h"
#include "minimp.h"
#include "transport/auth.h"
#include "transport/transport.h"
#include "transport/util.h"

extern char **environ;

#define DMN_KILL_AFTER_MS 1500 /* SIGTERM, then SIGKILL */
#define DMN_DRAIN_MS 1000      /* output after the last exit */
#define DMN_LAUNCH_MS 30000    /* LAUNCH must follow HELLO */
#define DMN_HOLD_MS 300        /* a signalled rank's report, under srun */

typedef struct dmn_s dmn_t;

typedef struct dmn_rank_s {
  dmn_t *d;
  int rank;
  int pid;
  int spawned;
  int exited;
  int in_open; /* the stdin pipe is open */
  int held;    /* its EXIT report waits on hold_timer */
  uint32_t held_v[3];
  int out_open[2];
  uv_process_t proc;
  uv_pipe_t in;
  uv_pipe_t out[2];
} dmn_rank_t;

struct dmn_s {
  uv_loop_t loop;
  int index;
  char prefix[128];
  uint8_t key[MMP__JOB_KEY_LEN];
  char keyvar[32 + 2 * MMP__JOB_KEY_LEN]; /* "MINIMP_JOB_KEY=<hex>" */
  /* The handshake: our HELLO body, then the transcript; `trusted` once
   * minimprun's proof verified. */
  uint8_t hello[MMP__NONCE_LEN + 12 + 2 + 256];
  size_t hello_len;
  int challenged;
  int trusted;
  int seal; /* CHALLENGE said MMP__CTRL_SEAL */
  mmp__auth_t auth;
  struct sockaddr_storage ctrl;
  const char *ctrl_str;
  mmp__ctrl_conn_t *conn;
  mmp__ctrl_launch_t launch;
  int launched;
  char **shim; /* "minimprun --exec-rank PID program args..." */
  char exe[4096];
  char pid[16];
  dmn_rank_t *ranks;
  int nranks;
  dmn_rank_t *stdin_rank;
  int nrunning; /* spawned, not yet exited */
  int nopen;    /* output pipes not at EOF */
  int paused;   /* output reads stopped: the connection is backed up */
  int killed;   /* KILL arrived, or we stop on our own */
  int stopping; /* contact lost: stop the ranks, then exit */
  int closed;   /* every handle is being closed */
  int exit_code;
  uv_signal_t sig[3];
  uv_timer_t kill_timer;
  uv_timer_t drain_timer;
  uv_timer_t hold_timer;
  int nheld; /* ranks whose EXIT report is held */
  char rbuf[MMP__CTRL_CHUNK];
};

static void dmn_maybe_done(dmn_t *d);

/* ---- Sending --------------------------------------------------------------
 */

static void dmn_send_u32s(dmn_t *d, uint8_t type, const uint32_t *v, int n) {
  mmp__boot_wr_t w;
  int i;

  if (d->conn == NULL)
    return;
  mmp__boot_wr_init(&w);
  for (i = 0; i < n; i++)
    mmp__boot_wr_u32(&w, v[i]);
  mmp__ctrl_send(d->conn, type, &w);
}

static void dmn_send_output(dmn_t *d, dmn_rank_t *r, int fd, const char *p,
                            size_t n) {
  mmp__boot_wr_t w;

  if (d->conn == NULL)
    return;
  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, (uint32_t)r->rank);
  mmp__boot_wr_u32(&w, (uint32_t)fd);
  mmp__boot_wr_blob(&w, p, n);
  mmp__ctrl_send(d->conn, MMP__C_OUTPUT, &w);
}

/* ---- Stopping ranks -------------------------------------------------------
 */

static void dmn_signal_all(dmn_t *d, int sig) {
  int i;

  for (i = 0; i < d->nranks; i++)
    if (d->ranks[i].spawned && !d->ranks[i].exited)
      mmp__kill_group(d->ranks[i].pid, sig);
}

static void dmn_on_kill_timer(uv_timer_t *t) {
  dmn_signal_all(t->data, SIGKILL);
}

/* SIGTERM to every rank now, SIGKILL to those left after 1.5 s. */
static void dmn_kill(dmn_t *d) {
  if (d->killed)
    return;
  d->killed = 1;
  dmn_signal_all(d, SIGTERM);
  if (d->nrunning > 0 && !d->closed)
    uv_timer_start(&d->kill_timer, dmn_on_kill_timer, DMN_KILL_AFTER_MS, 0);
}

/* Contact with minimprun is gone: stop everything and exit. */
static void dmn_lost(dmn_t *d, const char *why) {
  if (d->stopping)
    return;
  d->stopping = 1;
  d->exit_code = 1;
  if (!d->launched) {
    /* A clean close before LAUNCH is minimprun giving the host up. */
    if (strcmp(why, "connection closed") != 0)
      mmp__say("cannot work for minimprun at %s: %s", d->ctrl_str, why);
  } else if (d->nrunning > 0 && !d->killed) {
    mmp__say("lost contact with minimprun at %s (%s); stopping %d rank(s)",
             d->ctrl_str, why, d->nrunning);
  }
  dmn_kill(d);
  dmn_maybe_done(d);
}

static void dmn_on_signal(uv_signal_t *h, int signo) {
  dmn_t *d = h->data;
  char why[128];

  /* Under srun, Slurm sent it: the job was cancelled or ran out of time. */
  snprintf(why, sizeof(why), "its daemon received %s%s", mmp__signame(signo),
           getenv("SLURM_STEP_ID") != NULL
               ? " from Slurm (scancel, or the job's time limit)"
               : "");
  /* Closing it ourselves: no `ended` follows, so stop here. Held EXIT
   * reports are dropped: the reason below tells the whole story. */
  d->nheld = 0;
  uv_timer_stop(&d->hold_timer);
  mmp__ctrl_conn_close(d->conn, why);
  d->conn = NULL;
  dmn_kill(d); /* before dmn_lost: whoever signalled us needs no message */
  dmn_lost(d, why);
}

/* ---- The end --------------------------------------------------------------
 */

static void dmn_close(uv_handle_t *h) {
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void dmn_close_all(dmn_t *d) {
  int i, k;

  d->closed = 1;
  for (i = 0; i < 3; i++)
    dmn_close((uv_handle_t *)&d->sig[i]);
  dmn_close((uv_handle_t *)&d->kill_timer);
  dmn_close((uv_handle_t *)&d->drain_timer);
  dmn_close((uv_handle_t *)&d->hold_timer);
  for (i = 0; i < d->nranks; i++) {
    dmn_rank_t *r = &d->ranks[i];
    if (r->in_open)
      dmn_close((uv_handle_t *)&r->in);
    r->in_open = 0;
    for (k = 0; k < 2; k++)
      if (r->out_open[k])
        dmn_close((uv_handle_t *)&r->out[k]);
  }
  mmp__ctrl_conn_close(d->conn, NULL);
  d->conn = NULL;
}

/* Ends an output stream: close the pipe, tell minimprun. */
static void dmn_out_end(dmn_t *d, dmn_rank_t *r, int k) {
  if (!r->out_open[k])
    return;
  r->out_open[k] = 0;
  d->nopen--;
  dmn_close((uv_handle_t *)&r->out[k]);
  dmn_send_output(d, r, k + 1, NULL, 0);
}

static void dmn_on_drain(uv_timer_t *t) {
  dmn_t *d = t->data;
  int i;

  /* Something the rank started keeps the pipe open; do not wait for it. */
  for (i = 0; i < d->nranks; i++) {
    dmn_out_end(d, &d->ranks[i], 0);
    dmn_out_end(d, &d->ranks[i], 1);
  }
  dmn_maybe_done(d);
}

/* Every rank is gone: say BYE (if minimprun is still there) and exit. */
static void dmn_maybe_done(dmn_t *d) {
  if (d->closed || d->nrunning > 0)
    return;
  if (d->nheld > 0 && !d->stopping)
    return; /* dmn_on_hold sends them, then comes back here */
  if (!d->stopping && !d->launched)
    return;
  if (!d->stopping && d->nopen > 0) {
    if (!uv_is_active((uv_handle_t *)&d->drain_timer))
      uv_timer_start(&d->drain_timer, dmn_on_drain, DMN_DRAIN_MS, 0);
    return;
  }
  if (d->conn != NULL)
    dmn_send_u32s(d, MMP__C_BYE, NULL, 0);
  dmn_close_all(d);
}

/* ---- Ranks ----------------------------------------------------------------
 */

static void dmn_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  dmn_rank_t *r = h->data;

  (void)hint;
  *buf = uv_buf_init(r->d->rbuf, sizeof(r->d->rbuf));
}

static void dmn_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  dmn_rank_t *r = st->data;
  dmn_t *d = r->d;
  int k = st == (uv_stream_t *)&r->out[0] ? 0 : 1;

  if (nread > 0) {
    dmn_send_output(d, r, k + 1, buf->base, (size_t)nread);
    if (d->conn != NULL && !d->paused &&
        mmp__ctrl_conn_queued(d->conn) > MMP__CTRL_HIGH_WATER) {
      int i, j;
      /* minimprun is behind (a slow terminal): let the pipes fill, so
       * the ranks wait instead of us buffering without bound. */
      d->paused = 1;
      for (i = 0; i < d->nranks; i++)
        for (j = 0; j < 2; j++)
          if (d->ranks[i].out_open[j])
            uv_read_stop((uv_stream_t *)&d->ranks[i].out[j]);
    }
  } else if (nread < 0) {
    dmn_out_end(d, r, k);
    dmn_maybe_done(d);
  }
}

static void dmn_on_drained(mmp__ctrl_conn_t *c) {
  dmn_t *d = mmp__ctrl_conn_data(c);
  int i, j;

  if (!d->paused)
    return;
  d->paused = 0;
  for (i = 0; i < d->nranks; i++)
    for (j = 0; j < 2; j++)
      if (d->ranks[i].out_open[j])
        uv_read_start((uv_stream_t *)&d->ranks[i].out[j], dmn_alloc,
                      dmn_on_read);
}

/* The held EXIT reports go out: no signal of our own came meanwhile. */
static void dmn_on_hold(uv_timer_t *t) {
  dmn_t *d = t->data;
  int i;

  for (i = 0; i < d->nranks; i++)
    if (d->ranks[i].held) {
      d->ranks[i].held = 0;
      dmn_send_u32s(d, MMP__C_EXIT, d->ranks[i].held_v, 3);
    }
  d->nheld = 0;
  dmn_maybe_done(d);
}

static void dmn_on_exit(uv_process_t *p, int64_t status, int signo) {
  dmn_rank_t *r = p->data;
  dmn_t *d = r->d;
  uint32_t v[3];

  r->exited = 1;
  d->nrunning--;
  uv_close((uv_handle_t *)p, NULL);
  /* What a rank killed while it set up shared memory left (minimprun's
   * run_on_exit does the same for its own host). */
  mmp__shm_remove(d->key, r->rank);
  if (r->in_open) {
    r->in_open = 0;
    dmn_close((uv_handle_t *)&r->in);
  }
  v[0] = (uint32_t)r->rank;
  v[1] = (uint32_t)(int32_t)status;
  v[2] = (uint32_t)signo;
  /* Under srun, slurmstepd signals the ranks and this daemon at once, and
   * the rank's death may be seen first: its report waits DMN_HOLD_MS so
   * that the job's end is told as Slurm's cancellation, not as one rank's
   * death. */
  if (signo != 0 && !d->killed && d->conn != NULL &&
      getenv("SLURM_STEP_ID") != NULL) {
    r->held = 1;
    memcpy(r->held_v, v, sizeof(v));
    d->nheld++;
    if (!uv_is_active((uv_handle_t *)&d->hold_timer))
      uv_timer_start(&d->hold_timer, dmn_on_hold, DMN_HOLD_MS, 0);
  } else {
    dmn_send_u32s(d, MMP__C_EXIT, v, 3);
  }
  dmn_maybe_done(d);
}

/* The working directory for the ranks: minimprun's if it exists here,
 * else $HOME, as Open MPI does; --wdir has no fallback (NULL: missing). */
static const char *dmn_cwd(dmn_t *d) {
  const char *home = getenv("HOME");
  char host[256] = "";

  if (access(d->launch.cwd, X_OK) == 0)
    return d->launch.cwd;
  if (d->launch.flags & MMP__CTRL_LAUNCH_WDIR) {
    gethostname(host, sizeof(host) - 1);
    mmp__say("--wdir '%s': %s on host %s", d->launch.cwd, strerror(errno),
             host);
    return NULL;
  }
  if (d->launch.flags & MMP__CTRL_LAUNCH_VERBOSE)
    mmp__say("directory %s does not exist here; using %s", d->launch.cwd,
             home != NULL ? home : "/");
  return home != NULL ? home : "/";
}

/* Finds `prog` as execvp will in the rank, with `env`'s PATH and `cwd`.
 * Returns 0 or a libuv error: UV_ENOENT, or UV_EACCES if only files that
 * cannot be executed were found. */
static int dmn_find_program(const char *prog, char *const *env,
                            const char *cwd) {
  const char *path = "/bin:/usr/bin", *p;
  char file[4096];
  struct stat st;
  int err = UV_ENOENT, i;

  for (i = 0; env[i] != NULL; i++)
    if (strncmp(env[i], "PATH=", 5) == 0)
      path = env[i] + 5;
  /* A name with a slash is not looked up: one round with it alone. */
  for (p = strchr(prog, '/') != NULL ? "" : path;; p++) {
    size_t n = strcspn(p, ":");
    if (strchr(prog, '/') != NULL)
      snprintf(file, sizeof(file), "%s%s%s", prog[0] == '/' ? "" : cwd,
               prog[0] == '/' ? "" : "/", prog);
    else if (n > 0 && p[0] == '/')
      snprintf(file, sizeof(file), "%.*s/%s", (int)n, p, prog);
    else /* a relative directory, "" being the current one */
      snprintf(file, sizeof(file), "%s/%.*s%s%s", cwd, (int)n, p,
               n > 0 ? "/" : "", prog);
    if (stat(file, &st) == 0 && !S_ISDIR(st.st_mode)) {
      if (access(file, X_OK) == 0)
        return 0;
      err = UV_EACCES;
    }
    p += n;
    if (*p == '\0')
      return err;
  }
}

/* Starts one rank and reports STARTED. */
static void dmn_spawn(dmn_t *d, dmn_rank_t *r, const mmp__ctrl_rank_t *cr,
                      const char *cwd) {
  mmp__spawn_t s;
  uint32_t v[3];
  int rc, k;

  char **vars = malloc(((size_t)cr->nvars + 2) * sizeof(*vars));
  cpu_set_t cpus;
  int core;

  memset(&s, 0, sizeof(s));
  s.argv = d->shim;
  s.cpus = mmp__bind_for(d->launch.flags & MMP__CTRL_LAUNCH_BIND_CORE,
                         (int)(r - d->ranks), &cpus, &core);
  if (vars != NULL) {
    /* The key came to us through the agent, not over the network. */
    memcpy(vars, cr->vars, (size_t)cr->nvars * sizeof(*vars));
    vars[cr->nvars] = d->keyvar;
    vars[cr->nvars + 1] = NULL;
    s.env = mmp__env_merge(environ, d->launch.env, (size_t)d->launch.nenv, vars,
                           (size_t)cr->nvars + 1);
  }
  s.cwd = cwd;
  s.in_mode = MMP__STDIN_NULL;
  if (cr->flags & MMP__CTRL_RANK_STDIN) {
    s.in_mode = MMP__STDIN_PIPE;
    s.in = &r->in;
    uv_pipe_init(&d->loop, &r->in, 0);
    r->in.data = r;
    r->in_open = 1;
  }
  for (k = 0; k < 2; k++) {
    uv_pipe_init(&d->loop, &r->out[k], 0);
    r->out[k].data = r;
    s.out[k] = &r->out[k];
  }
  r->proc.data = r;
  s.exit_cb = dmn_on_exit;
  rc = s.env == NULL ? UV_ENOMEM
       : cwd == NULL ? UV_ENOENT
                     : dmn_find_program(d->launch.argv[0], s.env, cwd);
  if (rc == 0) {
    rc = mmp__spawn(&d->loop, &r->proc, &s);
    if (rc != 0)
      uv_close((uv_handle_t *)&r->proc, NULL); /* initialised even so */
  }
  free(s.env);
  free(vars);
  if (rc != 0) {
    for (k = 0; k < 2; k++)
      uv_close((uv_handle_t *)&r->out[k], NULL);
    if (r->in_open)
      uv_close((uv_handle_t *)&r->in, NULL);
    r->in_open = 0;
  } else {
    r->spawned = 1;
    r->pid = r->proc.pid;
    if (d->launch.flags & MMP__CTRL_LAUNCH_REPORT_BINDINGS)
      mmp__bind_report(r->pid, r->rank, core, s.cpus);
    d->nrunning++;
    if (r->in_open)
      d->stdin_rank = r;
    for (k = 0; k < 2; k++) {
      r->out_open[k] = 1;
      d->nopen++;
      if (uv_read_start((uv_stream_t *)&r->out[k], dmn_alloc, dmn_on_read))
        dmn_out_end(d, r, k);
    }
  }
  v[0] = (uint32_t)r->rank;
  v[1] = (uint32_t)r->pid;
  v[2] = (uint32_t)rc;
  dmn_send_u32s(d, MMP__C_STARTED, v, 3);
}

/* The command line of every rank: ours as the shim, then the program. */
static int dmn_make_shim(dmn_t *d) {
  size_t len = sizeof(d->exe);
  int i;

  d->shim = malloc(((size_t)d->launch.argc + 4) * sizeof(*d->shim));
  if (d->shim == NULL || uv_exepath(d->exe, &len) != 0)
    return -1;
  snprintf(d->pid, sizeof(d->pid), "%d", (int)getpid());
  d->shim[0] = d->exe;
  d->shim[1] = "--exec-rank";
  d->shim[2] = d->pid;
  for (i = 0; i <= d->launch.argc; i++)
    d->shim[3 + i] = d->launch.argv[i];
  return 0;
}

static void dmn_on_launch(dmn_t *d, const uint8_t *body, size_t len) {
  const char *why = "out of memory";
  const char *cwd;
  char reason[160];
  int i;

  if (d->launched)
    why = "a second LAUNCH";
  if (!d->trusted)
    why = "LAUNCH before minimprun proved the job key";
  if (d->launched || !d->trusted ||
      mmp__ctrl_launch_decode(body, len, &d->launch, &why) != 0 ||
      (d->ranks = calloc((size_t)d->launch.nranks, sizeof(*d->ranks))) ==
          NULL ||
      dmn_make_shim(d) != 0) {
    snprintf(reason, sizeof(reason), "bad LAUNCH: %s", why);
    mmp__ctrl_conn_close(d->conn, reason);
    d->conn = NULL;
    dmn_lost(d, reason);
    return;
  }
  d->launched = 1;
  d->nranks = d->launch.nranks;
  mmp__ctrl_conn_deadline(d->conn, 0, NULL);
  cwd = dmn_cwd(d);
  for (i = 0; i < d->nranks && !d->stopping; i++) {
    d->ranks[i].d = d;
    d->ranks[i].rank = d->launch.ranks[i].rank;
    dmn_spawn(d, &d->ranks[i], &d->launch.ranks[i], cwd);
  }
  dmn_maybe_done(d);
}

/* ---- Standard input --------------------------------------------------------
 */

typedef struct dmn_write_s {
  uv_write_t req;
  dmn_t *d;
  size_t n;
  char data[];
} dmn_write_t;

static void dmn_ack(dmn_t *d, size_t n) {
  uint32_t v = (uint32_t)n;

  dmn_send_u32s(d, MMP__C_STDIN_ACK, &v, 1);
}

static void dmn_on_stdin_written(uv_write_t *req, int status) {
  dmn_write_t *w = mmp__container_of(req, dmn_write_t, req);

  (void)status;
  if (!w->d->closed)
    dmn_ack(w->d, w->n);
  free(w);
}

static void dmn_on_stdin_shut(uv_shutdown_t *req, int status) {
  (void)status;
  free(req);
}

static void dmn_on_stdin(dmn_t *d, const uint8_t *data, size_t n) {
  dmn_rank_t *r = d->stdin_rank;
  dmn_write_t *w;
  uv_buf_t b;

  if (r == NULL || !r->in_open) {
    if (n > 0)
      dmn_ack(d, n); /* nobody reads it any more */
    return;
  }
  if (n == 0) {
    uv_shutdown_t *req = malloc(sizeof(*req));
    if (req == NULL ||
        uv_shutdown(req, (uv_stream_t *)&r->in, dmn_on_stdin_shut) != 0)
      free(req);
    return;
  }
  w = malloc(sizeof(*w) + n);
  if (w == NULL) {
    dmn_ack(d, n);
    return;
  }
  w->d = d;
  w->n = n;
  memcpy(w->data, data, n);
  b = uv_buf_init(w->data, (unsigned)n);
  if (uv_write(&w->req, (uv_stream_t *)&r->in, &b, 1, dmn_on_stdin_written)) {
    dmn_ack(d, n);
    free(w);
  }
}

/* ---- Control connection ---------------------------------------------------
 */

static void dmn_violation(dmn_t *d, const char *why) {
  mmp__ctrl_conn_close(d->conn, why);
  d->conn = NULL;
  dmn_lost(d, why);
}

/* CHALLENGE: minimprun's nonce and flags; we prove the key over both
 * bodies. */
static void dmn_on_challenge(dmn_t *d, const uint8_t *body, size_t len) {
  uint8_t mac[MMP__MAC_LEN];
  mmp__boot_wr_t w;
  uint32_t flags;

  if (len != MMP__CTRL_CHALLENGE_LEN)
    return dmn_violation(d, "malformed CHALLENGE");
  flags = mmp__get_u32(body + MMP__NONCE_LEN);
  if (flags & ~(uint32_t)MMP__CTRL_SEAL)
    return dmn_violation(d, "CHALLENGE with unknown flags");
  d->seal = (flags & MMP__CTRL_SEAL) != 0;
  d->challenged = 1;
  mmp__auth_begin(&d->auth, d->key, MMP__AUTH_CTRL, d->hello, d->hello_len,
                  body, len);
  mmp__auth_mac(&d->auth, MMP__AUTH_DIALER, MMP__AUTH_PROVE, mac);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, mac, sizeof(mac));
  mmp__ctrl_send(d->conn, MMP__C_PROOF, &w);
}

/* WELCOME: minimprun's proof. Nothing it says is obeyed before this. */
static void dmn_on_welcome(dmn_t *d, const uint8_t *body, size_t len) {
  uint8_t d2l[MMP__SESSION_KEY_LEN], l2d[MMP__SESSION_KEY_LEN];
  int rc = 0;

  if (len != MMP__MAC_LEN ||
      !mmp__auth_check(&d->auth, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, body))
    return dmn_violation(d, "the control server does not hold the job key "
                            "(its proof does not verify)");
  /* What follows WELCOME, LAUNCH first, is sealed if CHALLENGE said so. */
  if (d->seal) {
    mmp__auth_session_keys(&d->auth, d->key, d2l, l2d);
    rc = mmp__ctrl_conn_seal(d->conn, d2l, l2d);
    mmp__auth_wipe(d2l, sizeof(d2l));
    mmp__auth_wipe(l2d, sizeof(l2d));
  }
  mmp__auth_end(&d->auth);
  if (rc != 0)
    return; /* the connection ended; dmn_on_ended ran */
  d->trusted = 1;
}

static void dmn_on_message(mmp__ctrl_conn_t *c, uint8_t type,
                           const uint8_t *body, size_t len) {
  dmn_t *d = mmp__ctrl_conn_data(c);
  mmp__boot_rd_t rd;
  const uint8_t *data;
  size_t n;
  uint32_t sig;

  mmp__boot_rd_init(&rd, body, len);
  if (type == MMP__C_CHALLENGE && !d->challenged)
    return dmn_on_challenge(d, body, len);
  if (type == MMP__C_WELCOME && d->challenged && !d->trusted)
    return dmn_on_welcome(d, body, len);
  if (type == MMP__C_LAUNCH)
    return dmn_on_launch(d, body, len);
  if (!d->launched)
    return dmn_violation(d, "expected LAUNCH");
  switch (type) {
  case MMP__C_STDIN:
    n = mmp__boot_rd_blob(&rd, &data, MMP__CTRL_CHUNK);
    if (rd.bad || rd.left != 0)
      return dmn_violation(d, "malformed STDIN");
    dmn_on_stdin(d, data, n);
    break;
  case MMP__C_KILL:
    dmn_kill(d);
    break;
  case MMP__C_SIGNAL:
    sig = mmp__boot_rd_u32(&rd);
    if (rd.bad || rd.left != 0 ||
        (sig != SIGINT && sig != SIGTERM && sig != SIGKILL))
      return dmn_violation(d, "bad SIGNAL");
    dmn_signal_all(d, (int)sig);
    break;
  default:
    dmn_violation(d, "unexpected message type");
  }
}

static void dmn_on_ended(mmp__ctrl_conn_t *c, const char *reason) {
  dmn_t *d = mmp__ctrl_conn_data(c);

  d->conn = NULL;
  dmn_lost(d, reason);
}

static const mmp__ctrl_cb_t dmn_ctrl_cb = {dmn_on_message, dmn_on_ended,
                                           dmn_on_drained};

/* HELLO: nonce[32], host u32, pid u32, hostname str, version str. */
static void dmn_on_connected(mmp__ctrl_conn_t *c) {
  dmn_t *d = mmp__ctrl_conn_data(c);
  uint8_t nonce[MMP__NONCE_LEN];
  char host[256] = "";
  mmp__boot_wr_t w;

  gethostname(host, sizeof(host) - 1);
  mmp__auth_nonce(nonce);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
  mmp__boot_wr_u32(&w, (uint32_t)d->index);
  mmp__boot_wr_u32(&w, (uint32_t)getpid());
  mmp__boot_wr_str(&w, host, strlen(host));
  mmp__boot_wr_str(&w, MMP__LAUNCHER_VERSION, strlen(MMP__LAUNCHER_VERSION));
  if (!w.oom) {
    /* The transcript needs the body exactly as sent. */
    d->hello_len = w.len - MMP__BOOT_HDR_SIZE;
    memcpy(d->hello, w.buf + MMP__BOOT_HDR_SIZE, d->hello_len);
  }
  if (mmp__ctrl_send(c, MMP__C_HELLO, &w) == 0)
    mmp__ctrl_conn_deadline(c, DMN_LAUNCH_MS, "no LAUNCH in time");
}

/* ---- Start-up ----------------------------------------------------------- */

/* Reads "32 hex digits\n" from fd 0 a byte at a time, so nothing after the
 * line is consumed, then points fd 0 at /dev/null. */
static int dmn_read_key(uint8_t key[MMP__JOB_KEY_LEN]) {
  char line[2 * MMP__JOB_KEY_LEN + 4];
  size_t n = 0;
  int fd;

  while (n < sizeof(line) - 1) {
    ssize_t got = read(0, line + n, 1);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0 || line[n] == '\n')
      break;
    n++;
  }
  if (n > 0 && line[n - 1] == '\r')
    n--;
  line[n] = '\0';
  fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    dup2(fd, 0);
    close(fd);
  }
  if (n != 2 * MMP__JOB_KEY_LEN ||
      mmp__hex_decode(line, key, MMP__JOB_KEY_LEN) != 0)
    return -1;
  return 0;
}

static int dmn_setup(dmn_t *d) {
  static const int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
  int i, rc;

  if (uv_loop_init(&d->loop) != 0)
    return MMP_ENOMEM;
  for (i = 0; i < 3; i++) {
    uv_signal_init(&d->loop, &d->sig[i]);
    d->sig[i].data = d;
    uv_signal_start(&d->sig[i], dmn_on_signal, sigs[i]);
  }
  uv_timer_init(&d->loop, &d->kill_timer);
  uv_timer_init(&d->loop, &d->drain_timer);
  uv_timer_init(&d->loop, &d->hold_timer);
  d->kill_timer.data = d->drain_timer.data = d->hold_timer.data = d;
  rc = mmp__ctrl_conn_alloc(&d->loop, &dmn_ctrl_cb, d, &d->conn);
  if (rc == 0)
    rc = mmp__ctrl_conn_connect(d->conn, (struct sockaddr *)&d->ctrl,
                                dmn_on_connected);
  if (rc != 0) {
    mmp__say("cannot connect to minimprun at %s: %s", d->ctrl_str,
             rc == MMP_ENOMEM ? "out of memory" : uv_strerror(rc));
    d->exit_code = 1;
    d->stopping = 1;
    dmn_close_all(d);
  }
  return 0;
}

int mmp__daemon_main(int argc, char **argv) {
  dmn_t *d;
  char host[200] = "?";
  long index;
  int code;

  if (argc != 4 || mmp__parse_long(argv[3], 0, INT32_MAX, &index) != 0) {
    fprintf(stderr, "usage: minimprun --daemon CTRLADDR INDEX (started by "
                    "minimprun itself, with the job key on stdin)\n");
    return 2;
  }
  d = calloc(1, sizeof(*d));
  if (d == NULL)
    return 1;
  gethostname(host, sizeof(host) - 1);
  snprintf(d->prefix, sizeof(d->prefix), "minimprun daemon %ld on %s", index,
           host);
  mmp__say_prefix(d->prefix);
  mmp__log_set_prefix(d->prefix);
  d->index = (int)index;
  d->ctrl_str = argv[2];
  signal(SIGPIPE, SIG_IGN); /* children get default dispositions back */
  if (dmn_read_key(d->key) != 0) {
    mmp__say("no job key on standard input");
    free(d);
    return 2;
  }
  if (mmp__auth_init() != 0) {
    mmp__say("libsodium cannot start");
    free(d);
    return 1;
  }
  memcpy(d->keyvar, "MINIMP_JOB_KEY=", 15);
  mmp__hex_encode(d->key, MMP__JOB_KEY_LEN, d->keyvar + 15);
  if (mmp__addr_parse(argv[2], &d->ctrl) != 0) {
    mmp__say("bad control address '%s'", argv[2]);
    free(d);
    return 2;
  }
  if (dmn_setup(d) != 0) {
    free(d);
    return 1;
  }
  uv_run(&d->loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&d->loop) != 0)
    mmp__say("internal error: handles left open at exit");
  code = d->exit_code;
  mmp__auth_end(&d->auth);
  mmp__auth_wipe(d->key, sizeof(d->key));
  mmp__auth_wipe(d->keyvar, sizeof(d->keyvar));
  mmp__ctrl_launch_free(&d->launch);
  free(d->shim);
  free(d->ranks);
  free(d);
  return code;
}

int mmp__daemon_exec_rank(int argc, char **argv) {
  long ppid;

  if (argc < 4 || mmp__parse_long(argv[2], 1, INT32_MAX, &ppid) != 0) {
    fprintf(stderr, "usage: minimprun --exec-rank PID PROGRAM [ARGS...] "
                    "(used by minimprun's daemon)\n");
    return 2;
  }
#if defined(__linux__)
  /* Die with the daemon, whatever kills it; exec keeps this setting. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  if (getppid() != (pid_t)ppid)
    return 1; /* the daemon died before that took effect */
  execvp(argv[3], argv + 3);
  fprintf(stderr, "minimprun: cannot start '%s': %s\n", argv[3],
          strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
