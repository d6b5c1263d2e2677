/* SPDX-License-Identifier: MIT */
/*
 * minimprun: the SPMD launcher of libminimp.
 *
 *   minimprun [options] -n N program [args...]
 *
 * It starts N copies of `program` as one job, serves the job's bootstrap
 * ("rendezvous") service on its own libuv loop, forwards the ranks' output
 * line by line, forwards SIGINT/SIGTERM, and turns the first failure of any
 * rank into the job's exit status after stopping every other rank. It links
 * only the bootstrap protocol (libmmpboot), never libminimp itself.
 *
 * Ranks are placed on a table of hosts, each with a number of slots, by
 * run_place(), and started by run_launch(). Today the table holds only this
 * machine and run_launch() only calls uv_spawn; remote hosts (--host,
 * --hostfile, an rsh-like agent such as "ssh HOST CMD...") plug into those
 * two places.
 *
 * Every rank gets the parent's environment plus MINIMP_RANK, MINIMP_SIZE,
 * MINIMP_LOCAL_RANK, MINIMP_LOCAL_SIZE, MINIMP_BOOT_ADDR, MINIMP_JOB_KEY and
 * the -x variables. Rank 0 inherits minimprun's stdin; the others read
 * /dev/null. Each rank runs in its own session and process group, so that
 * signals reach everything it started.
 *
 * Output is forwarded whole lines at a time, so lines of different ranks
 * never mix. Untagged output is passed through byte for byte; a line longer
 * than RUN_LINE_CAP goes out in pieces (each ending in a newline only with
 * --tag-output), and an unfinished last line is flushed at EOF.
 *
 * A rank whose bootstrap connection drops usually dies at that moment, and
 * its exit status says more than the lost connection, so the verdict waits
 * RUN_LOST_GRACE_MS for it; failures of other ranks in that window are
 * taken as consequences.
 *
 * Exit status:
 *     0  every rank exited 0 (and those that called mmp_init finalized)
 *     c  the first failing rank exited with code c
 * 128+s  the first failing rank was killed by signal s
 *     c  the first failure was mmp_abort(c); 1 if c is not in 1..255
 *     1  a rank exited 0 without mmp_finalize (or without mmp_init while
 *        other ranks called it), or lost its bootstrap connection, or
 *        minimprun itself failed
 *     2  usage error (unknown option, bad value)
 *   110  --timeout expired
 *   126  the program could not be executed (permission, format)
 *   127  the program was not found
 * Only the first failure counts; deaths caused by stopping the job do not.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include "minimp.h"
#include "transport/boot.h"
#include "transport/util.h"

extern char **environ;

#define RUN_MAX_RANKS 65536
#define RUN_LINE_CAP 65536     /* a longer line is forwarded in chunks */
#define RUN_KILL_AFTER_MS 1500 /* SIGTERM, then SIGKILL */
#define RUN_LOST_GRACE_MS 500  /* wait for a lost rank's exit status */
#define RUN_UNJOINED_MS 300    /* let a HELLO in flight arrive */
#define RUN_DRAIN_MS 1000      /* wait for output after the last exit */
#define RUN_HANDSHAKE_MS 10000 /* bootstrap HELLO deadline */
#define RUN_EXIT_USAGE 2
#define RUN_EXIT_TIMEOUT 110

typedef struct run_job_s run_job_t;
typedef struct run_rank_s run_rank_t;

/* A machine ranks run on. Only this machine exists for now. */
typedef struct run_host_s {
  const char *name;
  int slots;
  int local; /* 1: started here with uv_spawn */
} run_host_t;

/* One forwarded output stream of a rank. */
typedef struct run_out_s {
  uv_pipe_t pipe;
  run_rank_t *rank;
  int fd;     /* 1 or 2: where the lines go */
  int inited; /* uv_pipe_init ran */
  int closed; /* uv_close ran */
  char *buf;  /* the unfinished line */
  size_t len;
  size_t cap;
} run_out_t;

struct run_rank_s {
  run_job_t *job;
  int rank;
  run_host_t *host;
  int local_rank;
  int local_size;
  uv_process_t proc;
  int spawned;
  int exited;
  int pid;
  int64_t status;
  int signo;
  int joined; /* completed the bootstrap HELLO */
  int lost;   /* its bootstrap connection ended without BYE */
  char lost_reason[128];
  char tag[24]; /* "[3] " with --tag-output, else "" */
  run_out_t out[2];
};

struct run_job_s {
  uv_loop_t loop;
  /* Options. */
  int n;
  int tag_output;
  long timeout_s;
  int verbose;
  char **exports; /* -x arguments */
  int nexports;
  char **argv; /* program and its arguments */
  /* Placement. */
  run_host_t *hosts;
  int nhosts;
  run_rank_t *ranks;
  /* Bootstrap. */
  uint8_t key[MMP__JOB_KEY_LEN];
  char keyhex[2 * MMP__JOB_KEY_LEN + 1];
  char boot_addr[64];
  mmp__boot_server_t *boot;
  int all_done;
  int njoined;        /* ranks that completed HELLO */
  int unjoined_exits; /* ranks that exited 0 without HELLO */
  /* Handles of the job itself. */
  uv_signal_t sigint;
  uv_signal_t sigterm;
  uv_timer_t timeout_timer;
  uv_timer_t kill_timer;
  uv_timer_t grace_timer;
  uv_timer_t unjoined_timer;
  uv_timer_t end_timer;
  int nsignals;
  int nrunning;    /* spawned and not yet exited */
  int open_pipes;  /* output pipes not yet at EOF */
  int end_started; /* the drain timer runs */
  int end_expired;
  int finishing;
  /* Failure. */
  int failed;
  int exit_code;
  run_rank_t *first_lost; /* waiting RUN_LOST_GRACE_MS for its exit */
  int deferred;           /* a failure seen during that wait */
  int deferred_code;
  int deferred_rank;
  char deferred_msg[512];
  /* Output. */
  char *scratch;
  size_t scratch_len;
  size_t scratch_cap;
  char rbuf[65536];
};

static void run_maybe_finish(run_job_t *j);

/* ---- Messages ------------------------------------------------------------ */

static void run_say(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static void run_say(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  int n;

  n = snprintf(line, sizeof(line), "minimprun: ");
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
}

static const char *run_signame(int sig) {
  switch (sig) {
  case SIGHUP:
    return "SIGHUP";
  case SIGINT:
    return "SIGINT";
  case SIGQUIT:
    return "SIGQUIT";
  case SIGILL:
    return "SIGILL";
  case SIGTRAP:
    return "SIGTRAP";
  case SIGABRT:
    return "SIGABRT";
  case SIGBUS:
    return "SIGBUS";
  case SIGFPE:
    return "SIGFPE";
  case SIGKILL:
    return "SIGKILL";
  case SIGUSR1:
    return "SIGUSR1";
  case SIGSEGV:
    return "SIGSEGV";
  case SIGUSR2:
    return "SIGUSR2";
  case SIGPIPE:
    return "SIGPIPE";
  case SIGALRM:
    return "SIGALRM";
  case SIGTERM:
    return "SIGTERM";
  case SIGXCPU:
    return "SIGXCPU";
  case SIGXFSZ:
    return "SIGXFSZ";
  case SIGSYS:
    return "SIGSYS";
  default:
    return "?";
  }
}

/* The text of an MMP_E* code, from the header's X-macro list: minimprun
 * does not link libminimp, which owns mmp_strerror(). */
static const char *run_errstr(int err) {
  switch (err) {
#define RUN_ERR_CASE(name, val, msg)                                           \
  case MMP_##name:                                                             \
    return msg;
    MMP_ERRNO_MAP(RUN_ERR_CASE)
#undef RUN_ERR_CASE
  default:
    return "unknown error";
  }
}

/* ---- Output forwarding --------------------------------------------------- */

/* Writes all of p to fd, waiting if fd is non-blocking; drops the output
 * if the reader went away. */
static void run_write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pfd = {fd, POLLOUT, 0};
      poll(&pfd, 1, -1);
    } else {
      return;
    }
  }
}

/* Appends to the job's scratch buffer; on OOM writes through at once. */
static void run_scratch_add(run_job_t *j, int fd, const char *p, size_t n) {
  if (n == 0)
    return;
  if (j->scratch_len + n > j->scratch_cap) {
    size_t cap = j->scratch_cap != 0 ? j->scratch_cap : 4096;
    char *nb;
    while (cap < j->scratch_len + n)
      cap *= 2;
    nb = realloc(j->scratch, cap);
    if (nb == NULL) {
      run_write_all(fd, j->scratch, j->scratch_len);
      j->scratch_len = 0;
      run_write_all(fd, p, n);
      return;
    }
    j->scratch = nb;
    j->scratch_cap = cap;
  }
  memcpy(j->scratch + j->scratch_len, p, n);
  j->scratch_len += n;
}

/* Queues one output line (or a chunk of a long one, or a last unfinished
 * line): tag + a + b, and a newline if tagged output needs one. */
static void run_emit(run_out_t *o, const char *a, size_t na, const char *b,
                     size_t nb) {
  run_job_t *j = o->rank->job;
  const char *last = nb > 0 ? b + nb - 1 : na > 0 ? a + na - 1 : NULL;

  run_scratch_add(j, o->fd, o->rank->tag, strlen(o->rank->tag));
  run_scratch_add(j, o->fd, a, na);
  run_scratch_add(j, o->fd, b, nb);
  /* Untagged output is passed through byte for byte. */
  if (j->tag_output && (last == NULL || *last != '\n'))
    run_scratch_add(j, o->fd, "\n", 1);
}

static void run_scratch_flush(run_job_t *j, int fd) {
  run_write_all(fd, j->scratch, j->scratch_len);
  j->scratch_len = 0;
}

/* Holds bytes of an unfinished line, emitting a chunk when the cap fills. */
static void run_hold(run_out_t *o, const char *d, size_t n) {
  while (n > 0) {
    size_t take = RUN_LINE_CAP - o->len;
    take = take < n ? take : n;
    if (o->len + take > o->cap) {
      size_t cap = o->cap != 0 ? o->cap : 256;
      char *nb;
      while (cap < o->len + take)
        cap *= 2;
      cap = cap < RUN_LINE_CAP ? cap : RUN_LINE_CAP;
      nb = realloc(o->buf, cap);
      if (nb == NULL) {
        /* Without memory, forward what we have rather than lose it. */
        run_emit(o, o->buf, o->len, d, n);
        o->len = 0;
        return;
      }
      o->buf = nb;
      o->cap = cap;
    }
    memcpy(o->buf + o->len, d, take);
    o->len += take;
    d += take;
    n -= take;
    if (o->len == RUN_LINE_CAP) {
      run_emit(o, o->buf, o->len, NULL, 0);
      o->len = 0;
    }
  }
}

/*
 * Forwards what a rank wrote. Only whole lines are written, each write(2)
 * holding complete lines only, so lines of different ranks never mix.
 */
static void run_feed(run_out_t *o, const char *d, size_t n) {
  run_job_t *j = o->rank->job;

  while (n > 0) {
    const char *nl = memchr(d, '\n', n);
    size_t seg;
    if (nl == NULL) {
      run_hold(o, d, n);
      break;
    }
    seg = (size_t)(nl - d) + 1;
    if (o->len > 0 || j->tag_output) {
      run_emit(o, o->buf, o->len, d, seg);
      o->len = 0;
    } else {
      /* Untagged: every complete line of this read in one piece. */
      const char *end = d + n;
      while (end[-1] != '\n')
        end--;
      seg = (size_t)(end - d);
      run_scratch_add(j, o->fd, d, seg);
    }
    d += seg;
    n -= seg;
  }
  run_scratch_flush(j, o->fd);
}

static void run_out_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  run_out_t *o = h->data;

  (void)hint;
  /* One buffer serves every pipe: each read is consumed at once. */
  *buf = uv_buf_init(o->rank->job->rbuf, sizeof(o->rank->job->rbuf));
}

static void run_out_on_close(uv_handle_t *h) {
  run_out_t *o = h->data;

  free(o->buf);
  o->buf = NULL;
  o->cap = o->len = 0;
}

/* Flushes the unfinished line and closes the pipe. */
static void run_out_close(run_out_t *o) {
  run_job_t *j;

  if (!o->inited || o->closed)
    return;
  j = o->rank->job;
  if (o->len > 0) {
    run_emit(o, o->buf, o->len, NULL, 0);
    run_scratch_flush(j, o->fd);
    o->len = 0;
  }
  o->closed = 1;
  j->open_pipes--;
  uv_close((uv_handle_t *)&o->pipe, run_out_on_close);
}

static void run_out_on_read(uv_stream_t *st, ssize_t nread,
                            const uv_buf_t *buf) {
  run_out_t *o = st->data;

  if (nread > 0) {
    run_feed(o, buf->base, (size_t)nread);
  } else if (nread < 0) {
    run_out_close(o);
    run_maybe_finish(o->rank->job);
  }
}

/* ---- Stopping ranks ------------------------------------------------------ */

/* Signals a rank's whole process group. */
static void run_kill(run_rank_t *r, int sig) {
  if (!r->spawned || r->pid <= 0)
    return;
  if (kill(-r->pid, sig) != 0 && !r->exited)
    kill(r->pid, sig);
}

static void run_kill_all(run_job_t *j, int sig) {
  int i;

  for (i = 0; i < j->n; i++)
    if (j->ranks[i].spawned && !j->ranks[i].exited)
      run_kill(&j->ranks[i], sig);
}

static void run_on_kill_timer(uv_timer_t *t) {
  run_job_t *j = t->data;

  if (j->nrunning > 0 && j->verbose)
    run_say("%d rank(s) still running; sending SIGKILL", j->nrunning);
  run_kill_all(j, SIGKILL);
}

/* Records the job's failure (only the first), reports it in one line and
 * stops every rank: SIGTERM now, SIGKILL after RUN_KILL_AFTER_MS. `rank`
 * is the rank that caused it, or -1. */
static void run_fail(run_job_t *j, int rank, int code, const char *msg) {
  if (j->failed)
    return;
  j->failed = 1;
  j->exit_code = code;
  j->first_lost = NULL;
  uv_timer_stop(&j->grace_timer);
  run_say("%s", msg);
  if (j->boot != NULL)
    mmp__boot_server_broadcast(j->boot, MMP__BOOT_EV_ABORT, rank, code, msg,
                               -1);
  run_kill_all(j, SIGTERM);
  if (j->nrunning > 0)
    uv_timer_start(&j->kill_timer, run_on_kill_timer, RUN_KILL_AFTER_MS, 0);
}

/* A rank's failure. While we wait to learn how an earlier lost rank ended,
 * it is kept aside: that rank's loss likely caused this one. */
static void run_rank_fail(run_job_t *j, run_rank_t *r, int code,
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
  run_job_t *j = t->data;
  run_rank_t *r = j->first_lost;
  char msg[512];

  if (r == NULL || j->failed)
    return;
  j->first_lost = NULL;
  snprintf(msg, sizeof(msg),
           "rank %d (pid %d) lost its bootstrap connection: %s", r->rank,
           r->pid, r->lost_reason);
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
  run_job_t *j = t->data;
  char msg[512];
  int i;

  if (j->failed || j->njoined == 0)
    return;
  for (i = 0; i < j->n; i++) {
    run_rank_t *r = &j->ranks[i];
    if (r->exited && r->signo == 0 && r->status == 0 && !r->joined) {
      snprintf(msg, sizeof(msg),
               "rank %d (pid %d) exited with code 0 without calling "
               "mmp_init, while other ranks did",
               r->rank, r->pid);
      run_rank_fail(j, r, 1, msg);
      return;
    }
  }
}

static void run_check_unjoined(run_job_t *j) {
  if (j->njoined > 0 && j->unjoined_exits > 0 && !j->failed &&
      !uv_is_active((uv_handle_t *)&j->unjoined_timer))
    uv_timer_start(&j->unjoined_timer, run_on_unjoined, RUN_UNJOINED_MS, 0);
}

static void run_on_joined(void *ctx, int rank, const char *host, int pid) {
  run_job_t *j = ctx;
  run_rank_t *r = &j->ranks[rank];

  r->joined = 1;
  j->njoined++;
  if (r->exited && r->signo == 0 && r->status == 0)
    j->unjoined_exits--; /* its HELLO was still on the way */
  if (j->verbose)
    run_say("rank %d joined the bootstrap (host %s, pid %d)", rank, host, pid);
  run_check_unjoined(j);
}

static void run_on_lost(void *ctx, int rank, const char *reason) {
  run_job_t *j = ctx;
  run_rank_t *r = &j->ranks[rank];
  char msg[512];

  r->lost = 1;
  snprintf(r->lost_reason, sizeof(r->lost_reason), "%s", reason);
  if (j->verbose)
    run_say("rank %d left the bootstrap without finalizing: %s", rank, reason);
  if (j->failed) {
    run_maybe_finish(j);
    return;
  }
  if (r->exited) {
    /* A failed exit was reported already; a clean one was not clean. */
    if (r->signo == 0 && r->status == 0) {
      snprintf(msg, sizeof(msg),
               "rank %d (pid %d) exited with code 0 without calling "
               "mmp_finalize",
               r->rank, r->pid);
      run_rank_fail(j, r, 1, msg);
    }
    run_maybe_finish(j);
    return;
  }
  /* The process usually exits at the same moment; its status says more
   * than "connection lost", so wait a little for it. */
  if (j->first_lost == NULL) {
    j->first_lost = r;
    uv_timer_start(&j->grace_timer, run_on_grace, RUN_LOST_GRACE_MS, 0);
  }
}

static void run_on_abort(void *ctx, int rank, int code, const char *message) {
  run_job_t *j = ctx;
  run_rank_t *r = &j->ranks[rank];
  char msg[512];

  snprintf(msg, sizeof(msg), "rank %d (pid %d) called mmp_abort(%d)%s%s", rank,
           r->pid, code, message[0] != '\0' ? ": " : "", message);
  run_rank_fail(j, r, code >= 1 && code <= 255 ? code : 1, msg);
}

static void run_on_all_done(void *ctx) {
  run_job_t *j = ctx;

  j->all_done = 1;
  if (j->verbose)
    run_say("every rank finalized");
  run_maybe_finish(j);
}

/* ---- Processes ----------------------------------------------------------- */

static void run_on_exit(uv_process_t *p, int64_t status, int signo) {
  run_rank_t *r = p->data;
  run_job_t *j = r->job;
  char msg[512];
  int code = 0;

  r->exited = 1;
  r->status = status;
  r->signo = signo;
  j->nrunning--;
  uv_close((uv_handle_t *)p, NULL);
  if (signo != 0) {
    snprintf(msg, sizeof(msg), "rank %d (pid %d) killed by signal %d (%s)",
             r->rank, r->pid, signo, run_signame(signo));
    code = 128 + signo;
  } else if (status != 0) {
    snprintf(msg, sizeof(msg), "rank %d (pid %d) exited with code %d", r->rank,
             r->pid, (int)status);
    code = (int)(status & 0xff) != 0 ? (int)(status & 0xff) : 1;
  } else if (r->lost) {
    snprintf(msg, sizeof(msg),
             "rank %d (pid %d) exited with code 0 without calling "
             "mmp_finalize",
             r->rank, r->pid);
    code = 1;
  } else if (!r->joined) {
    j->unjoined_exits++;
    run_check_unjoined(j);
  }
  if (j->verbose)
    run_say("rank %d (pid %d) ended: %s", r->rank, r->pid,
            code != 0 ? msg : "exit code 0");
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

/* Environment entries every rank inherits unchanged. */
static int run_env_overridden(const run_job_t *j, const char *entry) {
  static const char *const ours[] = {"MINIMP_RANK",       "MINIMP_SIZE",
                                     "MINIMP_LOCAL_RANK", "MINIMP_LOCAL_SIZE",
                                     "MINIMP_BOOT_ADDR",  "MINIMP_JOB_KEY"};
  const char *eq = strchr(entry, '=');
  size_t n = eq != NULL ? (size_t)(eq - entry) : strlen(entry);
  size_t i;
  int k;

  for (i = 0; i < MMP__ARRAY_SIZE(ours); i++)
    if (strlen(ours[i]) == n && memcmp(ours[i], entry, n) == 0)
      return 1;
  for (k = 0; k < j->nexports; k++) {
    const char *x = j->exports[k];
    const char *xeq = strchr(x, '=');
    if (xeq != NULL && (size_t)(xeq - x) == n && memcmp(x, entry, n) == 0)
      return 1;
  }
  return 0;
}

/* The environment shared by all ranks: ours, minus what we set per rank,
 * plus -x VAR=VAL. Returns a NULL-terminated array of borrowed strings. */
static char **run_base_env(run_job_t *j, size_t *count) {
  size_t n = 0, i = 0;
  char **env;
  int k;

  while (environ[n] != NULL)
    n++;
  env = malloc((n + (size_t)j->nexports + 1) * sizeof(*env));
  if (env == NULL)
    return NULL;
  for (n = 0; environ[n] != NULL; n++)
    if (!run_env_overridden(j, environ[n]))
      env[i++] = environ[n];
  for (k = 0; k < j->nexports; k++) {
    if (strchr(j->exports[k], '=') != NULL)
      env[i++] = j->exports[k];
    else if (getenv(j->exports[k]) == NULL)
      run_say("warning: -x %s: %s is not set", j->exports[k], j->exports[k]);
    /* A set -x VAR is in our environment already. */
  }
  env[i] = NULL;
  *count = i;
  return env;
}

/*
 * Starts one rank on its host. Local hosts use uv_spawn; a remote host
 * will run "agent HOST env VAR=... program args" here instead.
 * Returns 0 or a libuv error.
 */
static int run_launch(run_job_t *j, run_rank_t *r, char **env) {
  uv_process_options_t o;
  uv_stdio_container_t stdio[3];
  int rc, k;

  if (!r->host->local)
    return UV_ENOTSUP;
  memset(&o, 0, sizeof(o));
  memset(stdio, 0, sizeof(stdio));
  if (r->rank == 0) {
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = 0;
  } else {
    stdio[0].flags = UV_IGNORE; /* /dev/null */
  }
  for (k = 0; k < 2; k++) {
    run_out_t *out = &r->out[k];
    out->rank = r;
    out->fd = k + 1;
    uv_pipe_init(&j->loop, &out->pipe, 0);
    out->pipe.data = out;
    out->inited = 1;
    stdio[k + 1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[k + 1].data.stream = (uv_stream_t *)&out->pipe;
  }
  o.file = j->argv[0];
  o.args = j->argv;
  o.env = env;
  o.stdio = stdio;
  o.stdio_count = 3;
  o.exit_cb = run_on_exit;
  /* A session (and process group) of its own, so signals can reach all
   * that the rank started, and a terminal's ^C reaches only minimprun. */
  o.flags = UV_PROCESS_DETACHED;
  r->proc.data = r;
  rc = uv_spawn(&j->loop, &r->proc, &o);
  if (rc != 0) {
    /* The handles exist even when spawning failed. */
    uv_close((uv_handle_t *)&r->proc, NULL);
    for (k = 0; k < 2; k++) {
      r->out[k].closed = 1;
      uv_close((uv_handle_t *)&r->out[k].pipe, run_out_on_close);
    }
    return rc;
  }
  r->spawned = 1;
  r->pid = r->proc.pid;
  j->nrunning++;
  for (k = 0; k < 2; k++) {
    j->open_pipes++;
    if (uv_read_start((uv_stream_t *)&r->out[k].pipe, run_out_alloc,
                      run_out_on_read) != 0)
      run_out_close(&r->out[k]);
  }
  return 0;
}

/* Spawns every rank, in rank order, each with its own MINIMP_* variables. */
static void run_spawn_all(run_job_t *j) {
  size_t nbase, i;
  char **base = run_base_env(j, &nbase);
  char **env = NULL;
  char vars[6][96];
  char msg[512];
  int r, rc, code;

  if (base != NULL)
    env = malloc((nbase + 7) * sizeof(*env));
  if (env == NULL) {
    free(base);
    run_fail(j, -1, 1, "out of memory");
    return;
  }
  memcpy(env, base, nbase * sizeof(*env));
  for (r = 0; r < j->n && !j->failed; r++) {
    run_rank_t *rk = &j->ranks[r];
    snprintf(vars[0], sizeof(vars[0]), "MINIMP_RANK=%d", r);
    snprintf(vars[1], sizeof(vars[1]), "MINIMP_SIZE=%d", j->n);
    snprintf(vars[2], sizeof(vars[2]), "MINIMP_LOCAL_RANK=%d", rk->local_rank);
    snprintf(vars[3], sizeof(vars[3]), "MINIMP_LOCAL_SIZE=%d", rk->local_size);
    snprintf(vars[4], sizeof(vars[4]), "MINIMP_BOOT_ADDR=%s", j->boot_addr);
    snprintf(vars[5], sizeof(vars[5]), "MINIMP_JOB_KEY=%s", j->keyhex);
    for (i = 0; i < 6; i++)
      env[nbase + i] = vars[i];
    env[nbase + 6] = NULL;
    rc = run_launch(j, rk, env);
    if (rc == 0) {
      if (j->verbose)
        run_say("rank %d started (pid %d)", r, rk->pid);
      continue;
    }
    /* Like a shell: 127 when not found, 126 when not executable. */
    code = rc == UV_ENOENT                                       ? 127
           : rc == UV_EACCES || rc == UV_EPERM || rc == -ENOEXEC ? 126
                                                                 : 1;
    /* libuv's codes are negated errno values here; strerror reads best. */
    if (code != 1)
      snprintf(msg, sizeof(msg), "cannot start '%s': %s", j->argv[0],
               strerror(-rc));
    else
      snprintf(msg, sizeof(msg), "cannot start rank %d of '%s': %s", r,
               j->argv[0], strerror(-rc));
    run_fail(j, r, code, msg);
  }
  free(env);
  free(base);
}

/* ---- Signals, timeout, end ----------------------------------------------- */

static void run_on_signal(uv_signal_t *h, int signo) {
  run_job_t *j = h->data;

  if (++j->nsignals == 1) {
    if (j->verbose)
      run_say("received %s; forwarding it to every rank", run_signame(signo));
    run_kill_all(j, signo);
  } else {
    run_say("received %s again; killing every rank", run_signame(signo));
    run_kill_all(j, SIGKILL);
  }
}

static void run_on_timeout(uv_timer_t *t) {
  run_job_t *j = t->data;
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
  run_job_t *j = t->data;

  j->end_expired = 1;
  run_maybe_finish(j);
}

/* Every rank that joined the bootstrap has either finalized (all_done) or
 * been reported lost, so no verdict is still on its way. */
static int run_settled(const run_job_t *j) {
  int i;

  if (j->failed || j->all_done)
    return 1;
  for (i = 0; i < j->n; i++)
    if (j->ranks[i].joined && !j->ranks[i].lost)
      return 0;
  return 1;
}

static void run_finish(run_job_t *j) {
  int i, k;

  j->finishing = 1;
  for (i = 0; i < j->n; i++) {
    run_rank_t *r = &j->ranks[i];
    for (k = 0; k < 2; k++)
      run_out_close(&r->out[k]);
    /* Nothing the rank started may outlive the job. */
    if (r->spawned)
      kill(-r->pid, SIGKILL);
  }
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
}

/* Ends the job once every rank exited, its output drained (or
 * RUN_DRAIN_MS passed: something the rank started keeps the pipe) and the
 * bootstrap has nothing more to say. */
static void run_maybe_finish(run_job_t *j) {
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

/* ---- Options ------------------------------------------------------------- */

static void run_usage(FILE *f) {
  fprintf(f, "Usage: minimprun [options] -n N program [args...]\n"
             "Starts N copies of program on this machine as one libminimp "
             "job.\n"
             "\n"
             "Options:\n"
             "  -n, -np N        number of ranks to start (required)\n"
             "  --tag-output     prefix every output line with \"[rank] \"\n"
             "  --timeout S      stop the job after S seconds (exit 110)\n"
             "  -x VAR           export VAR from this environment\n"
             "  -x VAR=VALUE     set VAR to VALUE in every rank\n"
             "  --verbose        report what the launcher does on stderr\n"
             "  -h, --help       show this help and exit\n"
             "  -V, --version    show the version and exit\n"
             "\n"
             "Exit status: 0 when every rank succeeded; otherwise the first\n"
             "failing rank's exit code (128+N if killed by signal N, its code\n"
             "if it called mmp_abort), 110 on timeout, 2 on a usage error,\n"
             "126/127 if the program cannot be run, 1 for other failures.\n");
}

static int run_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static int run_usage_error(const char *fmt, ...) {
  char line[512];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fprintf(stderr, "minimprun: %s\nTry 'minimprun --help' for more.\n", line);
  return RUN_EXIT_USAGE;
}

static int run_valid_var(const char *s) {
  const char *p = s;

  if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
    return 0;
  for (p++; *p != '\0' && *p != '='; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
          (*p >= '0' && *p <= '9') || *p == '_'))
      return 0;
  return 1;
}

/*
 * Parses the command line into j. Returns -1 to go on, or the exit status
 * to leave with (0 after --help/--version, 2 on a usage error).
 */
static int run_parse(run_job_t *j, int argc, char **argv) {
  int i;

  j->exports = calloc((size_t)argc, sizeof(*j->exports));
  if (j->exports == NULL)
    return 1;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = NULL;
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    size_t alen = eq != NULL ? (size_t)(eq - a) : strlen(a);
    long v;

#define RUN_IS(name) (alen == strlen(name) && strncmp(a, name, alen) == 0)
#define RUN_VALUE()                                                            \
  do {                                                                         \
    if (eq != NULL)                                                            \
      val = eq + 1;                                                            \
    else if (i + 1 < argc)                                                     \
      val = argv[++i];                                                         \
    else                                                                       \
      return run_usage_error("option '%.*s' needs a value", (int)alen, a);     \
  } while (0)

    if (a[0] != '-' || strcmp(a, "-") == 0)
      break;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (RUN_IS("-h") || RUN_IS("--help")) {
      run_usage(stdout);
      return 0;
    } else if (RUN_IS("-V") || RUN_IS("--version")) {
      printf("minimprun (libminimp) %d.%d.%d\n", MMP_VERSION_MAJOR,
             MMP_VERSION_MINOR, MMP_VERSION_PATCH);
      return 0;
    } else if (RUN_IS("-n") || RUN_IS("-np") || RUN_IS("--np")) {
      RUN_VALUE();
      if (mmp__parse_long(val, 1, RUN_MAX_RANKS, &v) != 0)
        return run_usage_error("bad number of ranks '%s' (1..%d)", val,
                               RUN_MAX_RANKS);
      j->n = (int)v;
    } else if (RUN_IS("--timeout")) {
      RUN_VALUE();
      if (mmp__parse_long(val, 1, INT_MAX / 1000, &v) != 0)
        return run_usage_error("bad timeout '%s' (whole seconds >= 1)", val);
      j->timeout_s = v;
    } else if (RUN_IS("--tag-output")) {
      if (eq != NULL)
        return run_usage_error("option '--tag-output' takes no value");
      j->tag_output = 1;
    } else if (RUN_IS("--verbose")) {
      if (eq != NULL)
        return run_usage_error("option '--verbose' takes no value");
      j->verbose = 1;
    } else if (RUN_IS("-x")) {
      RUN_VALUE();
      if (!run_valid_var(val))
        return run_usage_error("bad variable '%s' for -x", val);
      j->exports[j->nexports++] = (char *)val;
    } else {
      return run_usage_error("unknown option '%s'", a);
    }
#undef RUN_IS
#undef RUN_VALUE
  }
  if (j->n == 0)
    return run_usage_error("missing -n N");
  if (i >= argc)
    return run_usage_error("missing the program to run");
  j->argv = argv + i;
  return -1;
}

/* ---- Main ---------------------------------------------------------------- */

/* Places the ranks on the hosts, filling each host's slots in turn. */
static int run_place(run_job_t *j) {
  int h = 0, used = 0, r;

  j->hosts = calloc(1, sizeof(*j->hosts));
  j->ranks = calloc((size_t)j->n, sizeof(*j->ranks));
  if (j->hosts == NULL || j->ranks == NULL)
    return MMP_ENOMEM;
  j->hosts[0].name = "localhost";
  j->hosts[0].slots = j->n;
  j->hosts[0].local = 1;
  j->nhosts = 1;
  for (r = 0; r < j->n; r++) {
    run_rank_t *rk = &j->ranks[r];
    if (used == j->hosts[h].slots) {
      h = (h + 1) % j->nhosts;
      used = 0;
    }
    rk->job = j;
    rk->rank = r;
    rk->host = &j->hosts[h];
    rk->local_rank = used++;
    rk->local_size = j->hosts[h].slots;
    if (j->tag_output)
      snprintf(rk->tag, sizeof(rk->tag), "[%d] ", r);
  }
  return 0;
}

/* Each rank costs three descriptors here; lift the soft limit. */
static void run_raise_fd_limit(void) {
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

static int run_start_boot(run_job_t *j) {
  static const mmp__boot_server_cb_t cbs = {NULL, run_on_joined, run_on_lost,
                                            run_on_abort, run_on_all_done};
  mmp__boot_server_cb_t cb = cbs;
  struct sockaddr_in addr;
  int rc;

  rc = uv_random(NULL, NULL, j->key, sizeof(j->key), 0, NULL);
  if (rc != 0) {
    run_say("cannot make a job key: %s", uv_strerror(rc));
    return 1;
  }
  mmp__hex_encode(j->key, sizeof(j->key), j->keyhex);
  /* Every rank is local for now; remote hosts will need a routable one. */
  uv_ip4_addr("127.0.0.1", 0, &addr);
  cb.ctx = j;
  rc = mmp__boot_server_start(&j->loop, (const struct sockaddr *)&addr, j->n,
                              j->key, RUN_HANDSHAKE_MS, &cb, &j->boot,
                              j->boot_addr, sizeof(j->boot_addr));
  if (rc != 0) {
    run_say("cannot start the bootstrap service: %s", run_errstr(rc));
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  run_job_t *j;
  int rc, code;

  j = calloc(1, sizeof(*j));
  if (j == NULL) {
    run_say("out of memory");
    return 1;
  }
  rc = run_parse(j, argc, argv);
  if (rc >= 0) {
    free(j->exports);
    free(j);
    return rc;
  }
  /* Our own diagnostics are the one-line verdict; the bootstrap server's
   * warnings only with --verbose. */
  mmp__log_set_prefix("minimprun");
  mmp__log_level = j->verbose ? MMP__LOG_INFO : MMP__LOG_ERROR;
  signal(SIGPIPE, SIG_IGN); /* children get default dispositions back */
  run_raise_fd_limit();
  if (run_place(j) != 0 || uv_loop_init(&j->loop) != 0) {
    run_say("out of memory");
    return 1;
  }
  uv_signal_init(&j->loop, &j->sigint);
  uv_signal_init(&j->loop, &j->sigterm);
  uv_timer_init(&j->loop, &j->timeout_timer);
  uv_timer_init(&j->loop, &j->kill_timer);
  uv_timer_init(&j->loop, &j->grace_timer);
  uv_timer_init(&j->loop, &j->unjoined_timer);
  j->unjoined_timer.data = j;
  uv_timer_init(&j->loop, &j->end_timer);
  j->sigint.data = j->sigterm.data = j;
  j->timeout_timer.data = j->kill_timer.data = j;
  j->grace_timer.data = j->end_timer.data = j;
  uv_signal_start(&j->sigint, run_on_signal, SIGINT);
  uv_signal_start(&j->sigterm, run_on_signal, SIGTERM);
  if (j->timeout_s > 0)
    uv_timer_start(&j->timeout_timer, run_on_timeout,
                   (uint64_t)j->timeout_s * 1000, 0);

  if (run_start_boot(j) != 0) {
    j->failed = 1;
    j->exit_code = 1;
  } else {
    if (j->verbose)
      run_say("starting %d rank(s) of '%s'; bootstrap at %s", j->n, j->argv[0],
              j->boot_addr);
    run_spawn_all(j);
  }
  run_maybe_finish(j);
  uv_run(&j->loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&j->loop);
  if (rc != 0)
    run_say("internal error: handles left open at exit");
  code = j->failed ? j->exit_code : 0;
  free(j->scratch);
  free(j->ranks);
  free(j->hosts);
  free(j->exports);
  free(j);
  return code;
}
