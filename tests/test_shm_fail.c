/* SPDX-License-Identifier: MIT */
/*
 * Failures on the shared-memory path, with ranks this test forks itself
 * (mmp_init_ex, rank 0 serving the rendezvous) so that it can kill, stop
 * and corrupt them, and under minimprun for its kill-on-fail:
 *  - a sender killed in the middle of a message, a receiver killed while
 *    the sender waits for room in the ring: MMP_EPEERLOST at once;
 *  - a stopped sender: MMP_EPEERLOST from the heartbeat, within
 *    MINIMP_PEER_TIMEOUT_MS as over TCP;
 *  - a rank that corrupts its ring's index: the pair is dropped, the rank
 *    that saw it goes on working with the others;
 *  - ranks whose memory the kernel will not let each other read (as under
 *    ptrace restrictions): detected at set-up, large messages go through
 *    the rings;
 *  - a rank killed while the segments are being set up, alone or with the
 *    whole job stopped by minimprun: nothing of the job is left in
 *    /dev/shm, which is checked after every test here.
 *
 * Run as: test_shm_fail MINIMPRUN SHM_HELPER
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"
#include "spawn_util.h"
#include "embed_util.h"

#define BIG (64u << 20)      /* through 4 KiB rings: a long transfer */
#define PEER_TIMEOUT_MS 1500 /* the heartbeat's bound in these jobs */
#define STARTED (1u << 20)   /* bytes moved before the victim is hit */

static const char *minimprun, *helper;
static char key[2 * MMP__JOB_KEY_LEN + 1];
static char addr[64];

/* A fresh job: its own key (so its names are its own) and address. */
static int setup(void **state) {
  uint8_t k[MMP__JOB_KEY_LEN];
  uint64_t s = uv_hrtime() ^ ((uint64_t)getpid() << 20);
  (void)state;

  for (int i = 0; i < MMP__JOB_KEY_LEN; i++)
    k[i] = (uint8_t)mr_next(&s);
  mmp__hex_encode(k, sizeof(k), key);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  return 0;
}

/* How many of the names of ranks 0..n-1 of the job with `hex` exist. */
static int names_left(const char *hex, int n) {
  uint8_t k[MMP__JOB_KEY_LEN];
  char seg[MMP__SHM_NAME_MAX], bell[MMP__SHM_NAME_MAX], path[96];
  int left = 0;

  assert_int_equal(mmp__hex_decode(hex, k, sizeof(k)), 0);
  for (int r = 0; r < n; r++) {
    mmp__shm_names(k, r, seg, bell);
    snprintf(path, sizeof(path), "/dev/shm%s", seg);
    left += access(path, F_OK) == 0;
    left += access(bell, F_OK) == 0;
  }
  return left;
}

typedef int (*rank_body_t)(int rank, int size);

/* MINIMP_SHM in the ranks spawn_rank forks; "ring" by default, so that
 * transfers take long enough to be hit in the middle. */
static const char *shm_mode = "ring";
/* The ranks spawn_rank forks refuse cross-memory attach (see below). */
static int refuse_cma;

/* Makes the kernel refuse other processes' process_vm_readv of this one,
 * as ptrace restrictions do: a non-dumpable process may only be read by
 * one with CAP_SYS_PTRACE, which this one (root, in CI perhaps) drops. */
static int refuse_reads(void) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];

  if (prctl(PR_SET_DUMPABLE, 0) != 0 || syscall(SYS_capget, &h, d) != 0)
    return -1;
  d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
  return syscall(SYS_capset, &h, d) == 0 ? 0 : -1;
}

/* Forks rank `rank` of a `size`-rank job: it sets the job's tuning, joins
 * and runs body, whose result is its exit code. */
static pid_t spawn_rank(int rank, int size, rank_body_t body) {
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    char t[16];
    int rc;
    if (refuse_cma && refuse_reads() != 0)
      _exit(91);
    setenv("MINIMP_SHM", shm_mode, 1);
    setenv("MINIMP_SHM_RING", "4k", 1);
    snprintf(t, sizeof(t), "%d", PEER_TIMEOUT_MS);
    setenv("MINIMP_PEER_TIMEOUT_MS", t, 1);
    rc = mmp_init_ex(rank, size, addr, key, NULL,
                     rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0);
    _exit(rc != 0 ? 90 : body(rank, size));
  }
  return pid;
}

static int wait_status(pid_t pid) {
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* ---- A victim hit in the middle of a transfer --------------------------- */

static pid_t victim;   /* in rank 0: the pid of rank 1 */
static int hit_signal; /* SIGKILL or SIGSTOP */
static int hit_on_out; /* watch bytes we send, not bytes we receive */
static double hit_at;

/* Rank 0's watcher: hits rank 1 once STARTED bytes have moved. */
static void *watcher(void *arg) {
  (void)arg;
  for (;;) {
    mmp__shm_stats_t st;
    mmp__debug_shm_stats(&st);
    if ((hit_on_out ? st.bytes_out : st.bytes_in) > STARTED) {
      hit_at = mmp_wtime();
      kill(victim, hit_signal);
      return NULL;
    }
    usleep(200);
  }
}

/* Rank 0 receives (or sends) BIG bytes from (to) rank 1 and checks the
 * transfer fails within `bound` seconds of the hit, part-way. Exit codes
 * 50.. say what went wrong. */
static int hit_root(double bound) {
  mmp_comm_t *w = mmp_comm_world();
  uint8_t *buf = malloc(BIG);
  pthread_t th;
  mmp__shm_stats_t st;
  double took;
  int rc;

  if (buf == NULL || pthread_create(&th, NULL, watcher, NULL) != 0)
    return 50;
  if (hit_on_out)
    rc = mmp_send_ex(buf, BIG, 1, 1, w, MMP_SEND_RNDV);
  else
    rc = mmp_recv(buf, BIG, 1, 1, w, NULL);
  took = mmp_wtime();
  pthread_join(th, NULL);
  took -= hit_at;
  mmp__debug_shm_stats(&st);
  printf("transfer ended %.3f s after the hit: %s\n", took, mmp_err_name(rc));
  fflush(stdout);
  if (rc != MMP_EPEERLOST)
    return 51;
  if (took > bound)
    return 52;
  if ((hit_on_out ? st.bytes_out : st.bytes_in) >= BIG)
    return 53; /* it was not in the middle */
  if (hit_signal == SIGSTOP && took < PEER_TIMEOUT_MS / 2000.0)
    return 54; /* the heartbeat cannot have been this fast */
  return 0;
}

static int hit_body(int rank, int size) {
  mmp_comm_t *w = mmp_comm_world();
  uint8_t *buf;
  (void)size;

  if (rank == 0)
    return hit_root(hit_signal == SIGKILL ? PEER_TIMEOUT_MS / 1000.0
                                          : PEER_TIMEOUT_MS / 1000.0 + 1.0);
  buf = calloc(1, BIG);
  if (hit_on_out)
    (void)mmp_recv(buf, BIG, 0, 1, w, NULL);
  else
    (void)mmp_send_ex(buf, BIG, 0, 1, w, MMP_SEND_RNDV);
  return 60; /* the hit comes first */
}

static void run_hit(int sig, int on_out) {
  pid_t p0;
  int st0, st1;

  hit_signal = sig;
  hit_on_out = on_out;
  victim = spawn_rank(1, 2, hit_body);
  p0 = spawn_rank(0, 2, hit_body);
  st0 = wait_status(p0);
  if (sig == SIGSTOP)
    kill(victim, SIGKILL);
  st1 = wait_status(victim);
  assert_int_equal(st0, 0);
  assert_int_equal(st1, 100 + SIGKILL);
  assert_int_equal(names_left(key, 2), 0);
}

static void test_sender_killed_mid_message(void **state) {
  (void)state;
  run_hit(SIGKILL, 0);
}

static void test_receiver_killed_while_sender_waits_for_room(void **state) {
  (void)state;
  run_hit(SIGKILL, 1);
}

static void test_stopped_sender_found_by_heartbeat(void **state) {
  (void)state;
  run_hit(SIGSTOP, 0);
}

/* ---- A rank that corrupts an index -------------------------------------- */

/* Ranks 1 and 2 talk; rank 1 then corrupts the tail of its ring in rank
 * 2's segment. Rank 2 must drop rank 1 only, and go on with rank 0. */
static int corrupt_body(int rank, int size) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__tp_stats_t st;
  int v = 0;
  (void)size;

  if (rank == 1) {
    if (mmp_send(&v, sizeof(v), 2, 1, w) != 0 ||
        mmp_recv(&v, sizeof(v), 2, 2, w, NULL) != 0)
      return 70;
    if (mmp__debug_shm_corrupt(2, 0, 1ull << 62) != 0)
      return 71;
    usleep(1500 * 1000);
    _exit(0);
  }
  if (rank == 2) {
    if (mmp_recv(&v, sizeof(v), 1, 1, w, NULL) != 0 ||
        mmp_send(&v, sizeof(v), 1, 2, w) != 0)
      return 72;
    if (mmp_recv(&v, sizeof(v), 1, 3, w, NULL) != MMP_EPEERLOST)
      return 73;
    if (mmp__debug_tp_stats(&st) != 0 || st.dropped != 1)
      return 74;
    if (mmp_send(&v, sizeof(v), 0, 4, w) != 0 ||
        mmp_recv(&v, sizeof(v), 0, 5, w, NULL) != 0)
      return 75;
    _exit(0);
  }
  if (mmp_recv(&v, sizeof(v), 2, 4, w, NULL) != 0 ||
      mmp_send(&v, sizeof(v), 2, 5, w) != 0)
    return 76;
  usleep(500 * 1000); /* rank 0 serves the rendezvous */
  _exit(0);
}

static void test_corrupt_index_drops_only_that_pair(void **state) {
  pid_t p[3];
  (void)state;

  for (int i = 2; i >= 0; i--)
    p[i] = spawn_rank(i, 3, corrupt_body);
  for (int i = 0; i < 3; i++)
    assert_int_equal(wait_status(p[i]), 0);
  assert_int_equal(names_left(key, 3), 0);
}

/* ---- Single copy refused by the kernel ---------------------------------- */

/* Rank 0 and 1 exchange 4 MiB by rendezvous both ways; with reads refused,
 * it must all go through the rings. Exit codes 85.. say what went wrong. */
static int refused_body(int rank, int size) {
  mmp_comm_t *w = mmp_comm_world();
  size_t n = 4u << 20;
  uint8_t *out = malloc(n), *in = malloc(n), *want = malloc(n);
  mmp__shm_stats_t st;
  mmp_request_t *q[2];
  (void)size;

  if (mmp__debug_shm_stats(&st) != 0 || st.peers != 1)
    return 85;
  if (st.single_copy != 0)
    return 86; /* the probe should have failed */
  mr_fill(out, n, (uint64_t)rank);
  if (mmp_irecv(in, n, 1 - rank, 1, w, &q[0]) != 0 ||
      mmp_isend_ex(out, n, 1 - rank, 1, w, MMP_SEND_RNDV, &q[1]) != 0 ||
      mmp_waitall(2, q, NULL) != 0)
    return 87;
  mr_fill(want, n, (uint64_t)(1 - rank));
  if (memcmp(in, want, n) != 0)
    return 88;
  mmp__debug_shm_stats(&st);
  if (st.pulled != 0 || st.bytes_in < n)
    return 89;
  return mmp_finalize() == 0 ? 0 : 84;
}

static void test_single_copy_refused_goes_through_the_rings(void **state) {
  pid_t p[2];
  (void)state;

  shm_mode = "on";
  refuse_cma = 1;
  p[1] = spawn_rank(1, 2, refused_body);
  p[0] = spawn_rank(0, 2, refused_body);
  shm_mode = "ring";
  refuse_cma = 0;
  assert_int_equal(wait_status(p[0]), 0);
  assert_int_equal(wait_status(p[1]), 0);
  assert_int_equal(names_left(key, 2), 0);
}

/* ---- A rank killed during the set-up ------------------------------------ */

static const char *kill_stage;

static void kill_hook(const char *stage) {
  if (strcmp(stage, kill_stage) == 0)
    raise(SIGKILL);
}

static int never(int rank, int size) {
  (void)rank;
  (void)size;
  return 80; /* init must fail */
}

static void run_killed_in_setup(const char *stage) {
  pid_t p[3];

  kill_stage = stage;
  for (int i = 2; i >= 0; i--) {
    if (i == 2)
      mmp__debug_init_hook = kill_hook; /* inherited by rank 2 alone */
    p[i] = spawn_rank(i, 3, never);
    mmp__debug_init_hook = NULL;
  }
  /* The others' init fails (90), and they remove every name, rank 2's
   * included. */
  assert_int_equal(wait_status(p[2]), 100 + SIGKILL);
  assert_int_equal(wait_status(p[0]), 90);
  assert_int_equal(wait_status(p[1]), 90);
  assert_int_equal(names_left(key, 3), 0);
}

static void test_killed_after_creating_its_segment(void **state) {
  (void)state;
  run_killed_in_setup("shm-created");
}

static void test_killed_after_attaching(void **state) {
  (void)state;
  run_killed_in_setup("shm-attached");
}

/* ---- Under minimprun ---------------------------------------------------- */

/* Runs shm_helper MODE under minimprun with 3 ranks; returns minimprun's
 * status and the job's key (each rank prints it). */
static int run_helper(const char *mode, char *job_key) {
  static spawn_result_t r;
  char *argv[] = {(char *)minimprun, "--timeout",  "60", "-n", "3",
                  (char *)helper,    (char *)mode, NULL};
  const char *k;

  assert_int_equal(spawn_run(argv, 90, &r), 0);
  k = strstr(r.out, "key=");
  assert_non_null(k);
  memcpy(job_key, k + 4, 2 * MMP__JOB_KEY_LEN);
  job_key[2 * MMP__JOB_KEY_LEN] = '\0';
  return r.status;
}

static void test_minimprun_normal_exit(void **state) {
  char k[2 * MMP__JOB_KEY_LEN + 1];
  (void)state;
  assert_int_equal(run_helper("normal", k), 0);
  assert_int_equal(names_left(k, 3), 0);
}

static void test_minimprun_kill_on_fail_after_init(void **state) {
  char k[2 * MMP__JOB_KEY_LEN + 1];
  (void)state;
  /* Rank 1 is killed (-9) with the others waiting on it; minimprun stops
   * them. */
  assert_int_equal(run_helper("kill-after-init", k), 128 + SIGKILL);
  assert_int_equal(names_left(k, 3), 0);
}

static void test_minimprun_kill_on_fail_during_setup(void **state) {
  char k[2 * MMP__JOB_KEY_LEN + 1];
  (void)state;
  /* Rank 1 dies with its segment made; minimprun stops the others,
   * perhaps before they can clean up, and removes what they left. */
  assert_int_equal(run_helper("kill-in-setup", k), 128 + SIGKILL);
  assert_int_equal(names_left(k, 3), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_sender_killed_mid_message, setup),
      cmocka_unit_test_setup(test_receiver_killed_while_sender_waits_for_room,
                             setup),
      cmocka_unit_test_setup(test_stopped_sender_found_by_heartbeat, setup),
      cmocka_unit_test_setup(test_corrupt_index_drops_only_that_pair, setup),
      cmocka_unit_test_setup(test_single_copy_refused_goes_through_the_rings,
                             setup),
      cmocka_unit_test_setup(test_killed_after_creating_its_segment, setup),
      cmocka_unit_test_setup(test_killed_after_attaching, setup),
      cmocka_unit_test(test_minimprun_normal_exit),
      cmocka_unit_test(test_minimprun_kill_on_fail_after_init),
      cmocka_unit_test(test_minimprun_kill_on_fail_during_setup),
  };

  if (argc != 3) {
    fprintf(stderr, "usage: %s MINIMPRUN SHM_HELPER\n", argv[0]);
    return 2;
  }
  minimprun = argv[1];
  helper = argv[2];
  return cmocka_run_group_tests(tests, NULL, NULL);
}
