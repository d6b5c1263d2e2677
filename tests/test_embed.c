/* SPDX-License-Identifier: MIT */
/*
 * Embedding without minimprun: forked processes call mmp_init_ex with an
 * explicit rank, size, rendezvous address and job key; rank 0 serves the
 * rendezvous and starts last. An intruder with a wrong key that tries to
 * join as rank 1 first is refused, and the real job is undisturbed. A job
 * whose ranks all set MINIMP_ENCRYPT=1 runs; one where they disagree
 * fails at init on every rank. And with no launcher to stop the job, a
 * rank that dies makes receives from any source fail, and an
 * arrival-aware broadcast waiting for it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "minimp.h"

static const char *key = "0123456789abcdef0123456789abcdef";
static const char *bad = "fedcba9876543210fedcba9876543210";

/* A free port on the loopback: bind port 0, note it, close. */
static int free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;

  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  getsockname(fd, (struct sockaddr *)&a, &len);
  port = ntohs(a.sin_port);
  close(fd);
  return port;
}

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

/* A rank in a child process; `encrypt` (if not NULL) is its
 * MINIMP_ENCRYPT. */
static pid_t spawn_env(int rank, int size, const char *addr, const char *k,
                       int delay_ms, const char *encrypt) {
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    if (encrypt != NULL)
      setenv("MINIMP_ENCRYPT", encrypt, 1);
    usleep((useconds_t)delay_ms * 1000);
    _exit(rank_main(rank, size, addr, k));
  }
  return pid;
}

static pid_t spawn(int rank, int size, const char *addr, const char *k,
                   int delay_ms) {
  return spawn_env(rank, size, addr, k, delay_ms, NULL);
}

static int exit_code(pid_t pid) {
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
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
    p[i] = spawn_env(i, 3, addr, key, i == 0 ? 100 : 0, "1");
  for (int i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 0);
}

/* One rank seals, the others do not: every rank's init fails with
 * MMP_EENV (exit 21), none hangs. */
static void test_embed_mixed_encryption_fails(void **state) {
  char addr[64];
  pid_t p[3];
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  for (int i = 0; i < 3; i++)
    p[i] = spawn_env(i, 3, addr, key, i == 0 ? 100 : 0, i == 2 ? "1" : "0");
  for (int i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 21);
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
  o.algorithm = MMP_BCAST_ARRIVAL_B;
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
      alarm(20); /* a hang is a failure, not a stuck test */
      /* A saved network model: measuring it is a collective of its own. */
      setenv("MINIMP_NET_ALPHA_US", "50", 1);
      setenv("MINIMP_NET_BETA_NS", "1", 1);
      if (mmp_init_ex(i, 3, addr, key, NULL,
                      i == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0) != 0)
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
      o.algorithm = MMP_BCAST_ARRIVAL_B;
      rc = mmp_bcast_ex(buf, sizeof(buf), 0, mmp_comm_world(), &o);
      _exit(rc == 0 || rc == MMP_EPEERLOST ? 0 : 32);
    }
  }
  for (i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 0);
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
      o.algorithm = MMP_ALLREDUCE_RING;
      rc = mmp_allreduce_ex(x, y, 100, MMP_DOUBLE, MMP_SUM, w, &o);
      if (i == 0)
        _exit(rc == MMP_EPEERLOST ? 0 : 54);
      _exit(rc == MMP_EPEERLOST || rc == MMP_EMISMATCH ? 0 : 55);
    }
  }
  for (i = 0; i < 3; i++)
    assert_int_equal(exit_code(p[i]), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embed_host_starts_last),
      cmocka_unit_test(test_embed_wrong_key_is_refused),
      cmocka_unit_test(test_embed_encrypted_job_runs),
      cmocka_unit_test(test_embed_mixed_encryption_fails),
      cmocka_unit_test(test_embed_slurm_environment),
      cmocka_unit_test(test_embed_slurm_derived_rendezvous),
      cmocka_unit_test(test_embed_lost_rank_fails_any_source_waits),
      cmocka_unit_test(test_embed_lost_rank_fails_allreduce),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
