/* SPDX-License-Identifier: MIT */
/*
 * Embedding without minimprun: forked processes call mmp_init_ex with an
 * explicit rank, size, rendezvous address and job key; rank 0 serves the
 * rendezvous and starts last. An intruder with a wrong key that tries to
 * join as rank 1 first is refused, and the real job is undisturbed. A job
 * whose ranks all set MINIMP_ENCRYPT=1 runs; one where they disagree
 * fails at init on every rank, and so does one where they disagree on
 * MINIMP_MCAST. Ranks that drive progress differently (one external)
 * start an explicit multicast broadcast on a new duplicate at different
 * points, and it completes. And with no launcher to stop the job, a
 * rank that dies makes receives from any source fail, and an
 * arrival-aware broadcast waiting for it; a rank that calls mmp_abort
 * makes every other rank's operations fail with MMP_EABORTED. Bad arguments
 * fail at once with a message that names the argument. For embedders: the log
 * callback receives the library's lines and the level filters them; a
 * collective that a rank never joins times out within its bound (blocking, and
 * polled with external progress) and leaves the communicator failing
 * collectives while point-to-point works; so do the arrival-aware broadcasts,
 * at the root and at receivers; a communicator's own timeout
 * (mmp_comm_set_timeout) ends receives, probes and collectives that name none,
 * before MINIMP_COLL_TIMEOUT_MS would; with errors fatal, minimprun exits
 * non-zero naming the rank and error; the progress calls answer as documented
 * in each progress mode, and bad MINIMP_PROGRESS, MINIMP_ERRORS and
 * MINIMP_COLL_TIMEOUT_MS fail init.
 *
 * Run as: test_embed MINIMPRUN ERRORS_HELPER
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "minimp.h"
#include "embed_util.h"
#include "spawn_util.h"

static const char *minimprun, *errors_helper;

static const char *key = "0123456789abcdef0123456789abcdef";
static const char *bad = "fedcba9876543210fedcba9876543210";

/* Child body: a ring exchange over an embedded job. Exit code: 0 ok. */
static int rank_main(int rank, int size, const char *addr, const char *k) {
  mmp_comm_t *w;
  int rc, got = -1, next = (rank + 1) % size, prev = (rank + size - 1) % size;
  mmp_request_t *r;

  rc = mmp_init_ex(rank, size, addr, k, NULL,
                   rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0);
  if (rc != 0)
    return rc == MMP_EBOOT ? 20 : 21;
  w = mmp_comm_world();
  if (mmp_comm_rank(w) != rank || mmp_comm_size(w) != size)
    return 22;
  if (mmp_isend(&rank, sizeof(rank), next, 1, w, &r) != 0 ||
      mmp_recv(&got, sizeof(got), prev, 1, w, NULL) != 0 ||
      mmp_wait(&r, NULL) != 0 || got != prev)
    return 23;
  return mmp_finalize() == 0 ? 0 : 24;
}

/* A rank in a child process; `value` (if not NULL) is its variable
 * `name`. */
static pid_t spawn_env(int rank, int size, const char *addr, const char *k,
                       int delay_ms, const char *name, const char *value) {
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    if (value != NULL)
      setenv(name, value, 1);
    usleep((useconds_t)delay_ms * 1000);
    _exit(rank_main(rank, size, addr, k));
  }
  return pid;
}

static pid_t spawn(int rank, int size, const char *addr, const char *k,
                   int delay_ms) {
  return spawn_env(rank, size, addr, k, delay_ms, NULL, NULL);
}

static void test_embed_host_starts_last(void **state) {
  char addr[64];
  pid_t p[3];
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  p[1] = spawn(1, 3, addr, key, 0);
  p[2] = spawn(2, 3, addr, key, 0);
  p[0] = spawn(0, 3, addr, key, 300);
  assert_int_equal(exit_code(p[0]), 0);
  assert_int_equal(exit_code(p[1]), 0);
  assert_int_equal(exit_code(p[2]), 0);
}

static void test_embed_wrong_key_is_refused(void **state) {
  char addr[64];
  pid_t p[3];
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  p[0] = spawn(0, 2, addr, key, 0);
  /* The intruder comes first, claiming rank 1 with the wrong key. */
  p[2] = spawn(1, 2, addr, bad, 100);
  assert_int_equal(exit_code(p[2]), 20); /* mmp_init_ex: MMP_EBOOT */
  p[1] = spawn(1, 2, addr, key, 0);
  assert_int_equal(exit_code(p[0]), 0);
  assert_int_equal(exit_code(p[1]), 0);
}

static void test_embed_encrypted_job_runs(void **state) {
  char addr[64];
  pid_t p[3];
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (int i = 0; i < 3; i++)
    p[i] = spawn_env(i, 3, addr, key, i == 0 ? 100 : 0, "MINIMP_ENCRYPT", "1");
  for (int i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 0);
}

/* Three ranks, rank `odd` with `name` set to `value`, the others to
 * `usual`: every rank's init fails with MMP_EENV (exit 21), none hangs. */
static void mixed_setting_fails(const char *name, int odd, const char *value,
                                const char *usual) {
  char addr[64];
  pid_t p[3];

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (int i = 0; i < 3; i++)
    p[i] = spawn_env(i, 3, addr, key, i == 0 ? 100 : 0, name,
                     i == odd ? value : usual);
  for (int i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 21);
}

/* One rank seals, the others do not. */
static void test_embed_mixed_encryption_fails(void **state) {
  (void)state;
  mixed_setting_fails("MINIMP_ENCRYPT", 2, "1", "0");
}

/* One rank has MINIMP_MCAST=off, the others the default: none waits in
 * the multicast check for a rank that does not make it. */
static void test_embed_mixed_mcast_fails(void **state) {
  (void)state;
  mixed_setting_fails("MINIMP_MCAST", 1, "off", "auto");
}

/* Four tasks started alike, as srun starts them, with only Slurm's
 * variables, the key and `extra` ("NAME=VALUE" entries, NULL-terminated);
 * each sends its rank to rank 0. */
static void slurm_job(const char *const *extra) {
  char nt[8], id[8];
  pid_t p[4];
  int i;

  for (i = 3; i >= 0; i--) {
    p[i] = fork();
    assert_true(p[i] >= 0);
    if (p[i] == 0) {
      mmp_comm_t *w;
      int rc, sum = 0, me;
      snprintf(nt, sizeof(nt), "%d", 4);
      snprintf(id, sizeof(id), "%d", i);
      unsetenv("MINIMP_RANK");
      unsetenv("MINIMP_SIZE");
      unsetenv("MINIMP_BOOT_ADDR");
      setenv("SLURM_NTASKS", nt, 1);
      setenv("SLURM_PROCID", id, 1);
      setenv("SLURM_LOCALID", id, 1);
      setenv("MINIMP_JOB_KEY", key, 1);
      for (const char *const *e = extra; *e != NULL; e++)
        putenv((char *)*e);
      rc = mmp_init(NULL, NULL);
      if (rc != 0)
        _exit(30);
      w = mmp_comm_world();
      me = mmp_comm_rank(w);
      if (me != i || mmp_comm_size(w) != 4)
        _exit(31);
      /* Everyone sends its rank to rank 0. */
      if (me == 0) {
        for (int k = 1; k < 4; k++) {
          int v;
          if (mmp_recv(&v, sizeof(v), MMP_ANY_SOURCE, 2, w, NULL) != 0)
            _exit(32);
          sum += v;
        }
        if (sum != 6)
          _exit(33);
      } else if (mmp_send(&me, sizeof(me), 0, 2, w) != 0) {
        _exit(34);
      }
      _exit(mmp_finalize() == 0 ? 0 : 35);
    }
  }
  for (i = 0; i < 4; i++)
    assert_int_equal(exit_code(p[i]), 0);
}

/* The user names the rendezvous, and MINIMP_BOOT_HOST=1 lets rank 0
 * serve it. */
static void test_embed_slurm_environment(void **state) {
  char addr[64];
  (void)state;

  snprintf(addr, sizeof(addr), "MINIMP_BOOT_ADDR=127.0.0.1:%d", free_port());
  {
    const char *const extra[] = {addr, "MINIMP_BOOT_HOST=1", NULL};
    slurm_job(extra);
  }
}

/* Nothing named: the rendezvous is the step's first node (127.0.0.1 of
 * the list) at the port derived from the job and step, within a range of
 * one free port here so that the test cannot collide. */
static void test_embed_slurm_derived_rendezvous(void **state) {
  char ports[64];
  int port = free_port();
  (void)state;

  snprintf(ports, sizeof(ports), "MINIMP_BOOT_PORTS=%d-%d", port, port);
  {
    const char *const extra[] = {ports, "SLURM_JOB_ID=77", "SLURM_STEP_ID=1",
                                 "SLURM_STEP_NODELIST=127.0.0.[1-4]", NULL};
    slurm_job(extra);
  }
}

/* Rank 0 of the job below; exit codes 40.. name what went wrong. */
/* Joins rank `rank` of a 3-rank job at `addr` (rank 0 hosts it), with a
 * saved network model (measuring one is a collective of its own) and
 * alarm(secs), so that a hang is a failure, not a stuck test. */
static int init3(int rank, const char *addr, unsigned secs) {
  alarm(secs);
  setenv("MINIMP_NET_ALPHA_US", "50", 1);
  setenv("MINIMP_NET_BETA_NS", "1", 1);
  return mmp_init_ex(rank, 3, addr, key, NULL,
                     rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0);
}

static int lost_root(void) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  char buf[1000];
  int v, rc;

  if (mmp_recv(&v, sizeof(v), 2, 1, w, NULL) != 0)
    return 40;
  (void)mmp_send(&v, sizeof(v), 2, 2, w); /* rank 2 may be gone already */
  /* Rank 2 is gone; nobody sends tag 9: the receive must fail, not wait
   * (whether rank 2's loss is noticed before it is posted or after). */
  rc = mmp_recv(&v, sizeof(v), MMP_ANY_SOURCE, 9, w, NULL);
  if (rc != MMP_EPEERLOST)
    return 41;
  /* The root would wait for rank 2's ARRIVED for ever. */
  o.algorithm = "arrival_b";
  memset(buf, 7, sizeof(buf));
  rc = mmp_bcast_ex(buf, sizeof(buf), 0, w, &o);
  return rc == MMP_EPEERLOST ? 0 : 42;
}

static void test_embed_lost_rank_fails_any_source_waits(void **state) {
  char addr[64];
  pid_t p[3];
  int i;
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (i = 2; i >= 0; i--) {
    p[i] = fork();
    assert_true(p[i] >= 0);
    if (p[i] == 0) {
      mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
      char buf[1000];
      int rc;
      if (init3(i, addr, 20) != 0)
        _exit(30);
      if (i == 2) /* a round trip with rank 0, then die without a word */
        _exit(mmp_send(&i, sizeof(i), 0, 1, mmp_comm_world()) == 0 &&
                      mmp_recv(&rc, sizeof(rc), 0, 2, mmp_comm_world(), NULL) ==
                          0
                  ? 0
                  : 31);
      if (i == 0)
        _exit(lost_root()); /* no finalize: rank 2 cannot take part */
      /* Rank 1 is served, or loses the root when it exits. */
      o.algorithm = "arrival_b";
      rc = mmp_bcast_ex(buf, sizeof(buf), 0, mmp_comm_world(), &o);
      _exit(rc == 0 || rc == MMP_EPEERLOST ? 0 : 32);
    }
  }
  for (i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 0);
}

/* Rank 2 of the abort test calls mmp_abort(ABORT_CODE) once ranks 0 and 1
 * have each posted a receive from the other that nothing answers. */
#define ABORT_CODE 7

/* Child body of ranks 0 and 1. Exit codes 50.. */
static int aborted_main(int rank) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_request_t *r;
  int v = 0, other = 1 - rank, rc;

  /* Without MMP_EABORTED the receive would end here, not by alarm(). */
  if (mmp_comm_set_timeout(w, 10000) != 0)
    return 50;
  if (mmp_irecv(&v, sizeof(v), other, 9, w, &r) != 0)
    return 51;
  if (mmp_send(&v, sizeof(v), 2, 1, w) != 0)
    return 52;
  /* Pending when the job is aborted: fails, though `other` is alive.
   * Rank 0 hosts the rendezvous and learns of the abort before anyone
   * else; rank 1 may see rank 0 close its connection on the news first. */
  rc = mmp_wait(&r, NULL);
  if (rc != MMP_EABORTED && (rank == 0 || rc != MMP_EPEERLOST)) {
    fprintf(stderr, "rank %d: pending receive: %s\n", rank, mmp_err_name(rc));
    return 53;
  }
  /* Once the news is in (rank 1: within the 2 s rank 2 waits before it
   * exits), every later operation with another rank fails with it. */
  if (rank == 1)
    sleep(2);
  rc = mmp_send(&v, sizeof(v), other, 10, w);
  if (rc != MMP_EABORTED) {
    fprintf(stderr, "rank %d: later send: %s\n", rank, mmp_err_name(rc));
    return 54;
  }
  rc = mmp_recv(&v, sizeof(v), MMP_ANY_SOURCE, 11, w, NULL);
  if (rc != MMP_EABORTED) {
    fprintf(stderr, "rank %d: later receive: %s\n", rank, mmp_err_name(rc));
    return 55;
  }
  rc = mmp_barrier(w);
  if (rc != MMP_EABORTED) {
    fprintf(stderr, "rank %d: later barrier: %s\n", rank, mmp_err_name(rc));
    return 56;
  }
  /* Rank 0 hosts the rendezvous: it stays until rank 1 is done. */
  if (rank == 0)
    sleep(3);
  return 0;
}

/* A rank that calls mmp_abort in a job with no launcher: the others'
 * operations, pending and later, fail with MMP_EABORTED, not only those
 * with the aborting rank. */
static void test_embed_abort_fails_every_operation(void **state) {
  char addr[64];
  pid_t p[3];
  int i, code[3];
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (i = 2; i >= 0; i--) {
    p[i] = fork();
    assert_true(p[i] >= 0);
    if (p[i] == 0) {
      int v;
      if (init3(i, addr, 30) != 0)
        _exit(30);
      if (i < 2)
        _exit(aborted_main(i));
      if (mmp_recv(&v, sizeof(v), 0, 1, mmp_comm_world(), NULL) != 0 ||
          mmp_recv(&v, sizeof(v), 1, 1, mmp_comm_world(), NULL) != 0)
        _exit(31);
      mmp_abort(ABORT_CODE);
    }
  }
  for (i = 0; i < 3; i++)
    code[i] = exit_code(p[i]);
  assert_int_equal(code[0], 0);
  assert_int_equal(code[1], 0);
  assert_int_equal(code[2], ABORT_CODE);
}

/* What one mmp_init_ex call in a child returned, said and took. */
typedef struct initres_s {
  int rc;
  double seconds;
  char err[4096]; /* its standard error */
} initres_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Calls mmp_init_ex in a child whose standard error goes to a pipe; the
 * return code comes back as the exit status (negated). */
static void init_in_child(initres_t *r, int rank, int size, const char *addr,
                          const char *k, const char *iface, unsigned flags) {
  int fds[2], st;
  size_t n = 0;
  double t0 = now_s();
  pid_t pid;

  assert_int_equal(pipe(fds), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int rc;
    close(fds[0]);
    dup2(fds[1], 2);
    alarm(20);
    /* Long enough that a wait for the rendezvous cannot pass for at once. */
    setenv("MINIMP_BOOT_TIMEOUT_MS", "5000", 1);
    rc = mmp_init_ex(rank, size, addr, k, iface, flags);
    if (rc == 0)
      mmp_finalize();
    _exit(-rc);
  }
  close(fds[1]);
  for (;;) {
    ssize_t got = read(fds[0], r->err + n, sizeof(r->err) - 1 - n);
    if (got <= 0)
      break;
    n += (size_t)got;
  }
  close(fds[0]);
  r->err[n] = '\0';
  assert_int_equal(waitpid(pid, &st, 0), pid);
  r->seconds = now_s() - t0;
  assert_true(WIFEXITED(st));
  r->rc = -WEXITSTATUS(st);
}

/* An iface that matches no local address fails with MMP_EADDR before the
 * rendezvous is even tried (it used to be MMP_EBOOT once the rendezvous
 * timed out), and the message names the argument, not MINIMP_IFACE. */
static void test_embed_unknown_iface_fails_at_once(void **state) {
  static const char *const bad_ifaces[] = {"nosuch0", "10.254.253.0/24",
                                           "192.0.2.77"};
  char addr[64];
  initres_t r;
  size_t i;
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port()); /* nobody */
  for (i = 0; i < sizeof(bad_ifaces) / sizeof(bad_ifaces[0]); i++) {
    init_in_child(&r, 1, 2, addr, key, bad_ifaces[i], 0);
    assert_int_equal(r.rc, MMP_EADDR);
    assert_true(r.seconds < 2.0);
    assert_non_null(strstr(r.err, "iface argument"));
    assert_non_null(strstr(r.err, bad_ifaces[i]));
    assert_null(strstr(r.err, "MINIMP_IFACE"));
  }
  /* The hosting rank too, before it serves anything. */
  init_in_child(&r, 0, 2, addr, key, "nosuch0", MMP_INIT_HOST_RENDEZVOUS);
  assert_int_equal(r.rc, MMP_EADDR);
  assert_true(r.seconds < 2.0);
}

/* A malformed rendezvous or key, or any other bad argument, is
 * MMP_EINVAL with a line that names the argument. */
static void test_embed_bad_arguments_are_named(void **state) {
  char addr[64];
  initres_t r;
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  init_in_child(&r, 0, 2, "not-an-address", key, NULL, 0);
  assert_int_equal(r.rc, MMP_EINVAL);
  assert_non_null(strstr(r.err, "rendezvous argument 'not-an-address'"));
  assert_null(strstr(r.err, "MINIMP_BOOT_ADDR"));
  init_in_child(&r, 0, 2, addr, "0123456789abcdef", NULL, 0);
  assert_int_equal(r.rc, MMP_EINVAL);
  assert_non_null(strstr(r.err, "job_key argument"));
  assert_non_null(strstr(r.err, "32 hex digits"));
  init_in_child(&r, 3, 2, addr, key, NULL, 0);
  assert_int_equal(r.rc, MMP_EINVAL);
  assert_non_null(strstr(r.err, "rank 3"));
  init_in_child(&r, 0, 2, addr, key, NULL, 0x80);
  assert_int_equal(r.rc, MMP_EINVAL);
  assert_non_null(strstr(r.err, "flags"));
  init_in_child(&r, 0, 2, NULL, key, NULL, 0);
  assert_int_equal(r.rc, MMP_EINVAL);
  assert_non_null(strstr(r.err, "rendezvous argument"));
}

/* A rank that dies before an allreduce: its neighbours in the ring see
 * MMP_EPEERLOST (rank 0 receives from it first), and every other rank an
 * error too (the dead rank's share never comes, or comes empty from a
 * rank that already failed), never a hang. Exit codes 50.. */
static void test_embed_lost_rank_fails_allreduce(void **state) {
  char addr[64];
  pid_t p[3];
  int i;
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (i = 2; i >= 0; i--) {
    p[i] = fork();
    assert_true(p[i] >= 0);
    if (p[i] == 0) {
      mmp_allreduce_opts_t o = MMP_ALLREDUCE_OPTS_INIT;
      mmp_comm_t *w;
      double x[100] = {0}, y[100];
      int rc, v = 0;
      alarm(20);
      setenv("MINIMP_NET_ALPHA_US", "50", 1);
      setenv("MINIMP_NET_BETA_NS", "1", 1);
      if (mmp_init_ex(i, 3, addr, key, NULL,
                      i == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0) != 0)
        _exit(50);
      w = mmp_comm_world();
      if (i == 2) /* a round trip with rank 0, then die without a word */
        _exit(mmp_send(&i, sizeof(i), 0, 1, w) == 0 &&
                      mmp_recv(&v, sizeof(v), 0, 2, w, NULL) == 0
                  ? 0
                  : 51);
      if (i == 0) {
        if (mmp_recv(&v, sizeof(v), 2, 1, w, NULL) != 0)
          _exit(52);
        (void)mmp_send(&v, sizeof(v), 2, 2, w);
        /* Wait until rank 2 is known to be gone. */
        if (mmp_recv(&v, sizeof(v), 2, 9, w, NULL) != MMP_EPEERLOST)
          _exit(53);
      }
      o.algorithm = "ring";
      rc = mmp_allreduce_ex(x, y, 100, MMP_DOUBLE, MMP_SUM, w, &o);
      if (i == 0)
        _exit(rc == MMP_EPEERLOST ? 0 : 54);
      _exit(rc == MMP_EPEERLOST || rc == MMP_EMISMATCH ? 0 : 55);
    }
  }
  for (i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 0);
}

/* What the log callback saw. */
typedef struct log_seen_s {
  int lines;
  int debug_lines;
  int listening_level; /* level of "listening on", or -1 */
  int shm_level;       /* level of the MINIMP_SHM complaint, or -1 */
  int notinit_lines;   /* "called before a successful mmp_init" lines */
  int prefixed;        /* lines that kept stderr's "minimp[...]" prefix */
  int nested_rc;       /* mmp_set_log_fn from inside the callback */
} log_seen_t;

static void log_cb(int level, const char *line, void *userdata) {
  log_seen_t *seen = userdata;

  seen->lines++;
  seen->debug_lines += level == MMP_LOG_DEBUG;
  if (strstr(line, "listening on") != NULL)
    seen->listening_level = level;
  if (strstr(line, "MINIMP_SHM='bogus'") != NULL)
    seen->shm_level = level;
  if (level == MMP_LOG_ERROR &&
      strstr(line, "mmp_progress called before a successful mmp_init") != NULL)
    seen->notinit_lines++;
  seen->prefixed += strncmp(line, "minimp[", 7) == 0;
  seen->nested_rc = mmp_set_log_fn(NULL, NULL);
}

/* Up a one-rank embedded job with extra init flags; 0 or the error. */
static int one_rank_init(unsigned flags) {
  char addr[64];

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  return mmp_init_ex(0, 1, addr, key, NULL, MMP_INIT_HOST_RENDEZVOUS | flags);
}

/* A one-rank embedded job, up and down; 0 or the error. */
static int one_rank_job(void) {
  int rc = one_rank_init(0);

  return rc != 0 ? rc : mmp_finalize();
}

/* 1 unless `name`=`value` makes init fail with MMP_EENV. */
static int bad_variable(const char *name, const char *value) {
  int rc;

  setenv(name, value, 1);
  rc = mmp_init(NULL, NULL);
  unsetenv(name);
  return rc != MMP_EENV;
}

/* Child body. Exit codes 40.. */
static int log_main(void) {
  log_seen_t seen;

  memset(&seen, 0, sizeof(seen));
  seen.listening_level = seen.shm_level = -1;
  unsetenv("MINIMP_LOG");
  if (mmp_set_log_fn(log_cb, &seen) != 0 ||
      mmp_set_log_level(MMP_LOG_WARN) != 0 || mmp_set_log_level(7) == 0)
    return 40;
  /* Before init the progress calls say so, once, through the callback. */
  if (mmp_progress() != MMP_ENOTINIT || mmp_progress_fd() != MMP_ENOTINIT ||
      seen.notinit_lines != 1)
    return 47;
  /* At warn, init's debug line ("listening on") is dropped. */
  if (one_rank_job() != 0 || seen.debug_lines != 0 ||
      seen.listening_level != -1)
    return 41;
  mmp_set_log_level(MMP_LOG_DEBUG);
  if (one_rank_job() != 0 || seen.listening_level != MMP_LOG_DEBUG)
    return 42;
  if (seen.nested_rc != MMP_EINVAL) /* it would deadlock */
    return 43;
  setenv("MINIMP_SHM", "bogus", 1);
  if (mmp_init(NULL, NULL) != MMP_EENV || seen.shm_level != MMP_LOG_ERROR)
    return 44;
  unsetenv("MINIMP_SHM");
  if (bad_variable("MINIMP_PROGRESS", "sideways") ||
      bad_variable("MINIMP_ERRORS", "maybe") ||
      bad_variable("MINIMP_COLL_TIMEOUT_MS", "-3"))
    return 46;
  if (seen.prefixed != 0) /* the callback gets the text alone */
    return 48;
  /* Back to stderr: the callback sees nothing more. */
  seen.lines = 0;
  if (mmp_set_log_fn(NULL, NULL) != 0 || one_rank_job() != 0 || seen.lines != 0)
    return 45;
  return 0;
}

/* Runs body() in a child process, which must exit 0 within 20 s. */
static void run_child(int (*body)(void)) {
  pid_t p = fork();

  assert_true(p >= 0);
  if (p == 0) {
    alarm(20);
    _exit(body());
  }
  assert_int_equal(exit_code(p), 0);
}

static void test_embed_log_fn_and_level(void **state) {
  (void)state;
  run_child(log_main);
}

/* Child body: the progress calls' answers in each mode. Exit codes 70.. */
static int progress_calls_main(void) {
  int fd;

  if (mmp_progress_fd() != MMP_ENOTINIT || mmp_progress() != MMP_ENOTINIT)
    return 70;
  if (one_rank_init(0x80) != MMP_EINVAL) /* an unknown flag */
    return 71;
  /* With the progress thread there is no descriptor to watch. */
  if (one_rank_init(0) != 0 || mmp_progress_fd() != MMP_ENOTSUP ||
      mmp_progress() != 0 || mmp_finalize() != 0)
    return 72;
  if (one_rank_init(MMP_INIT_EXTERNAL_PROGRESS) != 0 ||
      (fd = mmp_progress_fd()) < 0 || mmp_progress() != 0 ||
      mmp_progress_fd() != fd || mmp_finalize() != 0)
    return 73;
  setenv("MINIMP_PROGRESS", "external", 1);
  if (one_rank_init(0) != 0 || mmp_progress_fd() < 0 || mmp_finalize() != 0)
    return 74;
  unsetenv("MINIMP_PROGRESS");
  return 0;
}

static void test_embed_progress_calls(void **state) {
  (void)state;
  run_child(progress_calls_main);
}

#define TIMEOUT_MS 300

/* The allreduce rank 2 never joins, on rank 0 (blocking, rendezvous
 * sends that rank 2 never answers) or rank 1 (non-blocking, polled with
 * external progress). Returns 0 or an exit code 60.. */
static int timeout_allreduce(int rank, mmp_comm_t *w) {
  mmp_allreduce_opts_t o = MMP_ALLREDUCE_OPTS_INIT;
  double x[64] = {0}, y[64], t0 = mmp_wtime(), took;
  mmp_request_t *r;
  int rc, flag = 0;

  o.timeout_ms = TIMEOUT_MS;
  if (rank == 0) {
    o.mode = MMP_SEND_RNDV;
    rc = mmp_allreduce_ex(x, y, 64, MMP_DOUBLE, MMP_SUM, w, &o);
  } else {
    rc = mmp_iallreduce(x, y, 64, MMP_DOUBLE, MMP_SUM, w, &o, &r);
    while (rc == 0 && !flag && mmp_wtime() - t0 < 10) {
      usleep(1000);
      rc = mmp_test(&r, &flag, NULL);
    }
  }
  took = mmp_wtime() - t0;
  if (rc != MMP_ETIMEDOUT)
    return 60;
  if (took < TIMEOUT_MS * 0.9e-3 || took > 3.0)
    return 61;
  /* The communicator's collectives fail at once from now on. */
  t0 = mmp_wtime();
  if (mmp_barrier(w) != MMP_ETIMEDOUT || mmp_wtime() - t0 > 0.1)
    return 62;
  return 0;
}

/* Rank `rank` of the three of a timeout test, killed after `secs`: rank 0
 * hosts the rendezvous, rank 1 runs with external progress. A fixed
 * network model, so that every rank's choices agree. */
static int timeout_init(int rank, const char *addr, unsigned secs) {
  unsigned flags = rank == 0   ? MMP_INIT_HOST_RENDEZVOUS
                   : rank == 1 ? MMP_INIT_EXTERNAL_PROGRESS
                               : 0;

  alarm(secs);
  setenv("MINIMP_NET_ALPHA_US", "50", 1);
  setenv("MINIMP_NET_BETA_NS", "1", 1);
  return mmp_init_ex(rank, 3, addr, key, NULL, flags);
}

/* Child body. Exit codes 60.. */
static int timeout_main(int rank, const char *addr) {
  mmp_comm_t *w;
  int rc, v = 0;

  if (timeout_init(rank, addr, 20) != 0)
    return 63;
  w = mmp_comm_world();
  if (rank == 2) {
    /* Never joins; waits for both to have given up. */
    if (mmp_recv(&v, sizeof(v), 0, 9, w, NULL) != 0 ||
        mmp_recv(&v, sizeof(v), 1, 9, w, NULL) != 0)
      return 64;
  } else {
    if ((rc = timeout_allreduce(rank, w)) != 0)
      return rc;
    /* Point-to-point on it still works. */
    if (mmp_send(&v, sizeof(v), 2, 9, w) != 0)
      return 65;
  }
  return mmp_finalize() == 0 ? 0 : 66;
}

/* Runs n ranks of body(rank, addr) in child processes, the host (rank 0)
 * last, and expects each to exit 0. */
static void run_ranks(int n, int (*body)(int rank, const char *addr)) {
  char addr[64];
  pid_t p[8];
  int i, code[8];

  assert_true(n <= 8);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (i = n - 1; i >= 0; i--)
    if ((p[i] = fork()) == 0)
      _exit(body(i, addr));
  /* Every rank's code first: the first failure may be another's echo. */
  for (i = 0; i < n; i++)
    if ((code[i] = exit_code(p[i])) != 0)
      fprintf(stderr, "rank %d exited with %d\n", i, code[i]);
  for (i = 0; i < n; i++)
    assert_int_equal(code[i], 0);
}

/* Child body, ranks of three with rank 1 on external progress: an
 * explicit multicast broadcast on a new duplicate, rank 0 starting it
 * after a barrier of the world and the others before it. mmp_init
 * checked multicast with every rank, whatever its progress mode, and the
 * duplicate took that verdict: no start waits. Exit codes 70.. */
static int mcast_progress_main(int rank, const char *addr) {
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp_comm_t *w, *d = NULL;
  mmp_request_t *r = NULL;
  uint8_t b[3000];
  int rc, i;

  if (timeout_init(rank, addr, 30) != 0)
    return 70;
  w = mmp_comm_world();
  if (mmp_comm_dup(w, &d) != 0)
    return 71;
  o.algorithm = "multicast";
  memset(b, rank == 0 ? 0xa5 : 0, sizeof(b));
  if (rank == 0) {
    rc = mmp_barrier(w);
    if (rc == 0)
      rc = mmp_ibcast(b, sizeof(b), 0, d, &o, &r);
  } else {
    rc = mmp_ibcast(b, sizeof(b), 0, d, &o, &r);
    if (rc == 0)
      rc = mmp_barrier(w);
  }
  if (rc != 0) {
    fprintf(stderr, "rank %d: %s\n", rank, mmp_err_name(rc));
    return 72;
  }
  if (mmp_wait(&r, NULL) != 0)
    return 73;
  for (i = 0; i < (int)sizeof(b); i++)
    if (b[i] != 0xa5)
      return 74;
  if (mmp_comm_free(&d) != 0)
    return 75;
  return mmp_finalize() == 0 ? 0 : 76;
}

static void test_embed_mcast_mixed_progress(void **state) {
  (void)state;
  run_ranks(3, mcast_progress_main);
}

/* Ranks that differ in progress mode (rank 1 external) and have no saved
 * network model: every one measures it in mmp_init, they hold the same
 * figures, and AUTO's allreduce runs. Before, the ranks on a progress
 * thread measured alone and waited for rank 1 for ever. Exit codes 90.. */
static int mixed_model_main(int rank, const char *addr) {
  unsigned flags = rank == 0   ? MMP_INIT_HOST_RENDEZVOUS
                   : rank == 1 ? MMP_INIT_EXTERNAL_PROGRESS
                               : 0;
  mmp_netmodel_t nm, root;
  int32_t v = rank + 1, sum = 0;
  mmp_comm_t *w;

  alarm(30);
  unsetenv("MINIMP_NET_ALPHA_US");
  unsetenv("MINIMP_NET_BETA_NS");
  if (mmp_init_ex(rank, 3, addr, key, NULL, flags) != 0)
    return 90;
  w = mmp_comm_world();
  if (mmp_comm_netmodel(w, &nm) != 0)
    return 91;
  root = nm;
  if (mmp_bcast(&root, sizeof(root), 0, w) != 0)
    return 92;
  if (memcmp(&root.alpha, &nm.alpha, sizeof(nm.alpha)) != 0 ||
      memcmp(&root.beta, &nm.beta, sizeof(nm.beta)) != 0)
    return 93;
  if (mmp_allreduce(&v, &sum, 1, MMP_INT32, MMP_SUM, w) != 0 || sum != 6)
    return 94;
  return mmp_finalize() == 0 ? 0 : 95;
}

static void test_embed_model_mixed_progress(void **state) {
  (void)state;
  run_ranks(3, mixed_model_main);
}

static void test_embed_collective_times_out(void **state) {
  (void)state;
  run_ranks(3, timeout_main);
}

/* Seconds since t0 within [0.9, 10] times `ms`: the call gave up after its
 * timeout, and not much later (generous: ASan, a loaded machine). */
static int took_about(double t0, unsigned ms) {
  double took = mmp_wtime() - t0;

  return took >= ms * 0.9e-3 && took <= ms * 10e-3;
}

/* AUTO from 64 KiB on (its adaptive mode: receivers announce themselves
 * and follow the root) with the call's timeout, rank 2 absent: on c3 as
 * receivers of rank 2, then on c4 from rank 0, which ends in bounded
 * time whatever it runs. The buffers of a timed-out
 * collective stay allocated until mmp_finalize (docs/embedding.md), so
 * they are left to the child's exit. Exit codes 70.. */
static int timeout_auto(int rank, mmp_comm_t *c3, mmp_comm_t *c4) {
  mmp_bcast_opts_t b = MMP_BCAST_OPTS_INIT;
  size_t len = 256 * 1024;
  char *x = calloc(1, len), *y = calloc(1, len);
  double t0 = mmp_wtime();
  int rc;

  if (x == NULL || y == NULL)
    return 70;
  b.timeout_ms = TIMEOUT_MS;
  rc = mmp_bcast_ex(x, len, 2, c3, &b);
  if (rc != MMP_ETIMEDOUT || !took_about(t0, TIMEOUT_MS))
    return 71;
  /* Rendezvous sends, so that a root whose tree reaches rank 2 directly
   * waits for it; one whose tree does not is done once rank 1 has it. */
  b.mode = MMP_SEND_RNDV;
  t0 = mmp_wtime();
  rc = mmp_bcast_ex(y, len, 0, c4, &b);
  if ((rc != 0 && rc != MMP_ETIMEDOUT) || mmp_wtime() - t0 > TIMEOUT_MS * 10e-3)
    return 72;
  if (rank == 0 && rc == MMP_ETIMEDOUT && !took_about(t0, TIMEOUT_MS))
    return 73;
  return 0;
}

/* An arrival-aware broadcast that rank 2 never joins: arrival_nb from
 * rank 2 with the call's timeout (both ranks wait as receivers; rank 1
 * polls a request with external progress), then arrival_b from rank 0
 * with the communicator's (the root waits for rank 2's arrival). Exit
 * codes 80.. */
static int timeout_arrival(int rank, mmp_comm_t *c1, mmp_comm_t *c2) {
  mmp_bcast_opts_t b = MMP_BCAST_OPTS_INIT;
  char x[4096] = {0};
  mmp_request_t *r;
  double t0 = mmp_wtime();
  int rc, flag = 0;

  b.algorithm = "arrival_nb";
  b.timeout_ms = TIMEOUT_MS;
  if (rank == 0) {
    rc = mmp_bcast_ex(x, sizeof(x), 2, c1, &b);
  } else {
    rc = mmp_ibcast(x, sizeof(x), 2, c1, &b, &r);
    while (rc == 0 && !flag && mmp_wtime() - t0 < 10) {
      usleep(1000);
      rc = mmp_test(&r, &flag, NULL);
    }
  }
  if (rc != MMP_ETIMEDOUT)
    return 80;
  if (!took_about(t0, TIMEOUT_MS))
    return 81;
  t0 = mmp_wtime();
  if (mmp_barrier(c1) != MMP_ETIMEDOUT || mmp_wtime() - t0 > 0.1)
    return 82;
  /* The root of arrival_b serves rank 1 and waits for rank 2. */
  b.algorithm = "arrival_b";
  b.timeout_ms = 0;
  if (mmp_comm_set_timeout(c2, TIMEOUT_MS) != 0)
    return 83;
  t0 = mmp_wtime();
  rc = mmp_bcast_ex(x, sizeof(x), 0, c2, &b);
  if (rank == 0 && (rc != MMP_ETIMEDOUT || !took_about(t0, TIMEOUT_MS)))
    return 84;
  if (rank == 1 && rc != 0 && rc != MMP_ETIMEDOUT)
    return 85;
  /* Point-to-point on it still works (without the timeout: rank 1, served
   * at once, waits for the root's whole timeout). */
  if (mmp_comm_set_timeout(c2, 0) != 0)
    return 88;
  if (rank == 0 && mmp_send(x, 8, 1, 5, c2) != 0)
    return 86;
  if (rank == 1 && mmp_recv(x, 8, 0, 5, c2, NULL) != 0)
    return 87;
  return 0;
}

/* Child body. Exit codes 80.. */
static int arrival_timeout_main(int rank, const char *addr) {
  mmp_comm_t *w, *c1, *c2, *c3, *c4;
  int rc, v = 0;

  if (timeout_init(rank, addr, 30) != 0)
    return 90;
  w = mmp_comm_world();
  if (mmp_comm_dup(w, &c1) != 0 || mmp_comm_dup(w, &c2) != 0 ||
      mmp_comm_dup(w, &c3) != 0 || mmp_comm_dup(w, &c4) != 0)
    return 91;
  if (rank == 2) {
    /* Never joins; waits for both to have given up. */
    if (mmp_recv(&v, sizeof(v), 0, 9, w, NULL) != 0 ||
        mmp_recv(&v, sizeof(v), 1, 9, w, NULL) != 0)
      return 92;
  } else {
    if ((rc = timeout_arrival(rank, c1, c2)) != 0 ||
        (rc = timeout_auto(rank, c3, c4)) != 0)
      return rc;
    if (mmp_send(&v, sizeof(v), 2, 9, w) != 0)
      return 93;
  }
  if (mmp_comm_free(&c1) != 0 || mmp_comm_free(&c2) != 0 ||
      mmp_comm_free(&c3) != 0 || mmp_comm_free(&c4) != 0)
    return 94;
  return mmp_finalize() == 0 ? 0 : 95;
}

static void test_embed_arrival_bcast_times_out(void **state) {
  (void)state;
  run_ranks(3, arrival_timeout_main);
}

#define COMM_TIMEOUT_MS 300
#define ENV_TIMEOUT_MS 20000

/* Rank 0 of two: a communicator's timeout, with MINIMP_COLL_TIMEOUT_MS
 * far longer, and a call's own, shorter than its communicator's. Rank 1
 * sends nothing until told. Exit codes 99.. */
static int comm_timeout_rank0(mmp_comm_t *w) {
  mmp_bcast_opts_t b = MMP_BCAST_OPTS_INIT;
  char x[4096] = {0};
  mmp_comm_t *d;
  mmp_request_t *r;
  mmp_status_t st;
  unsigned ms = 1;
  int v = 0, rc;
  double t0;

  if (mmp_comm_get_timeout(w, &ms) != 0 || ms != 0 ||
      mmp_comm_set_timeout(NULL, 5) != MMP_ECOMM ||
      mmp_comm_get_timeout(w, NULL) != MMP_EINVAL)
    return 100;
  if (mmp_comm_set_timeout(w, COMM_TIMEOUT_MS) != 0 ||
      mmp_comm_get_timeout(w, &ms) != 0 || ms != COMM_TIMEOUT_MS)
    return 101;
  /* A receive, a request and a probe that nothing matches. */
  t0 = mmp_wtime();
  if (mmp_recv(&v, sizeof(v), 1, 1, w, &st) != MMP_ETIMEDOUT ||
      !took_about(t0, COMM_TIMEOUT_MS) || st.error != MMP_ETIMEDOUT)
    return 102;
  t0 = mmp_wtime();
  if (mmp_irecv(&v, sizeof(v), MMP_ANY_SOURCE, 1, w, &r) != 0 ||
      mmp_wait(&r, NULL) != MMP_ETIMEDOUT || !took_about(t0, COMM_TIMEOUT_MS))
    return 103;
  t0 = mmp_wtime();
  if (mmp_probe(1, 1, w, NULL) != MMP_ETIMEDOUT ||
      !took_about(t0, COMM_TIMEOUT_MS))
    return 104;
  /* A copy starts with it; the timeout does not spoil the communicator:
   * a message that does come is received. */
  if (mmp_comm_dup(w, &d) != 0 || mmp_comm_get_timeout(d, &ms) != 0 ||
      ms != COMM_TIMEOUT_MS)
    return 105;
  if (mmp_send(&v, sizeof(v), 1, 2, w) != 0 ||
      mmp_recv(&v, sizeof(v), 1, 3, w, NULL) != 0 || v != 7)
    return 106;
  /* A collective rank 1 does not join: the communicator's timeout, not
   * the environment's; the call's own wins over it. */
  t0 = mmp_wtime();
  if ((rc = mmp_barrier(d)) != MMP_ETIMEDOUT ||
      !took_about(t0, COMM_TIMEOUT_MS))
    return 107;
  if (mmp_comm_free(&d) != 0 || mmp_comm_dup(w, &d) != 0 ||
      mmp_comm_set_timeout(d, ENV_TIMEOUT_MS) != 0)
    return 108;
  /* A flat broadcast's rendezvous send that rank 1 never answers: the
   * call's 100 ms, not the communicator's 20 s. */
  b.algorithm = "flat";
  b.mode = MMP_SEND_RNDV;
  b.timeout_ms = 100;
  t0 = mmp_wtime();
  if (mmp_bcast_ex(x, sizeof(x), 0, d, &b) != MMP_ETIMEDOUT ||
      !took_about(t0, 100))
    return 109;
  if (mmp_comm_free(&d) != 0 || mmp_comm_set_timeout(w, 0) != 0 ||
      mmp_send(&v, sizeof(v), 1, 4, w) != 0)
    return 99;
  return 0;
}

/* Child body. Exit codes 100.. */
static int comm_timeout_main(int rank, const char *addr) {
  char env[32];
  mmp_comm_t *w, *d;
  int v = 7, got;

  alarm(30);
  snprintf(env, sizeof(env), "%d", ENV_TIMEOUT_MS);
  setenv("MINIMP_COLL_TIMEOUT_MS", env, 1);
  if (mmp_init_ex(rank, 2, addr, key, NULL,
                  rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0) != 0)
    return 110;
  w = mmp_comm_world();
  if (rank == 0) {
    int rc = comm_timeout_rank0(w);
    if (rc != 0)
      return rc;
  } else {
    /* The dup, then the go-ahead: a reply. Then it skips the barrier,
     * joins the second dup and skips its broadcast. */
    if (mmp_comm_dup(w, &d) != 0 ||
        mmp_recv(&got, sizeof(got), 0, 2, w, NULL) != 0 ||
        mmp_send(&v, sizeof(v), 0, 3, w) != 0 || mmp_comm_free(&d) != 0 ||
        mmp_comm_dup(w, &d) != 0 ||
        mmp_recv(&got, sizeof(got), 0, 4, w, NULL) != 0 ||
        mmp_comm_free(&d) != 0)
      return 111;
  }
  return mmp_finalize() == 0 ? 0 : 112;
}

static void test_embed_comm_timeout(void **state) {
  (void)state;
  run_ranks(2, comm_timeout_main);
}

/* minimprun -n 3 ERRORS_HELPER MODE with `env` set: rank 1 makes a bad
 * call that it does not check. */
static void run_fatal(const char *mode, const char *env, const char *call,
                      const char *err) {
  char *argv[] = {
      (char *)minimprun, "--timeout",           "60",         "-n", "3", "-x",
      (char *)env,       (char *)errors_helper, (char *)mode, NULL};
  /* Static, not allocated: a failed check leaves by longjmp. */
  static spawn_result_t result;
  spawn_result_t *r = &result;
  char want[128];

  memset(r, 0, sizeof(*r));
  assert_int_equal(spawn_run(argv, 90, r), 0);
  /* minimprun's own report names the rank, the call and the error. */
  snprintf(want, sizeof(want), "called mmp_abort(%d): %s failed: %s",
           MMP_FATAL_EXIT, call, err);
  if (r->status != MMP_FATAL_EXIT || strstr(r->err, want) == NULL ||
      strstr(r->err, "minimprun: rank 1 ") == NULL)
    fprintf(stderr, "status %d\n--- stdout\n%s--- stderr\n%s---\n", r->status,
            r->out, r->err);
  assert_int_equal(r->status, MMP_FATAL_EXIT);
  assert_non_null(strstr(r->err, want));
  assert_non_null(strstr(r->err, "minimprun: rank 1 "));
  assert_null(strstr(r->out, "rank 1 went on"));
}

static void test_embed_errors_fatal_from_environment(void **state) {
  (void)state;
  run_fatal("send", "MINIMP_ERRORS=fatal", "mmp_send", "MMP_ERANK");
}

static void test_embed_errors_fatal_from_call(void **state) {
  (void)state;
  run_fatal("barrier", "MINIMP_ERRORS=return", "mmp_barrier", "MMP_ECOMM");
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embed_unknown_iface_fails_at_once),
      cmocka_unit_test(test_embed_bad_arguments_are_named),
      cmocka_unit_test(test_embed_host_starts_last),
      cmocka_unit_test(test_embed_wrong_key_is_refused),
      cmocka_unit_test(test_embed_encrypted_job_runs),
      cmocka_unit_test(test_embed_mixed_encryption_fails),
      cmocka_unit_test(test_embed_mixed_mcast_fails),
      cmocka_unit_test(test_embed_mcast_mixed_progress),
      cmocka_unit_test(test_embed_model_mixed_progress),
      cmocka_unit_test(test_embed_slurm_environment),
      cmocka_unit_test(test_embed_slurm_derived_rendezvous),
      cmocka_unit_test(test_embed_lost_rank_fails_any_source_waits),
      cmocka_unit_test(test_embed_lost_rank_fails_allreduce),
      cmocka_unit_test(test_embed_abort_fails_every_operation),
      cmocka_unit_test(test_embed_log_fn_and_level),
      cmocka_unit_test(test_embed_progress_calls),
      cmocka_unit_test(test_embed_collective_times_out),
      cmocka_unit_test(test_embed_arrival_bcast_times_out),
      cmocka_unit_test(test_embed_comm_timeout),
      cmocka_unit_test(test_embed_errors_fatal_from_environment),
      cmocka_unit_test(test_embed_errors_fatal_from_call),
  };

  if (argc != 3) {
    fprintf(stderr, "usage: %s MINIMPRUN ERRORS_HELPER\n", argv[0]);
    return 2;
  }
  minimprun = argv[1];
  errors_helper = argv[2];
  return cmocka_run_group_tests(tests, NULL, NULL);
}
