/* SPDX-License-Identifier: MIT */
/*
 * Per-peer bounds on what a peer can make a rank hold: a peer that leaves
 * more rendezvous requests unmatched than MINIMP_MAX_UNEXPECTED_RTS has its
 * connection cut (operations with it fail with MMP_EPEERLOST) and the rank
 * never holds more entries than the limit; a program that stays within the
 * limit, with many unexpected eager messages besides, works; a member that
 * floods PING|REQ and RTS frames by hand and never reads is cut off while
 * the rank's memory stays flat. Forked ranks of an embedded job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "minimp.h"
#include "embed_util.h"
#include "hs_util.h"
#include "runtime/internal.h"

static const char *key = "0123456789abcdef0123456789abcdef";

#define LIMIT 100  /* rank 1's MINIMP_MAX_UNEXPECTED_RTS */
#define NEAGER 500 /* unexpected eager messages beside the RTS */
#define FLOOD 1000 /* RTS a misbehaving rank sends */
#define TAG_EAGER 1000

static pid_t spawn(int rank, int size, const char *addr,
                   int (*body)(mmp_comm_t *)) {
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(30);
    /* A saved profile: mmp_init measures no network model, whose traffic
     * the hand-made member of the flood test would not answer. */
    setenv("MINIMP_NET_ALPHA_US", "50", 1);
    setenv("MINIMP_NET_BETA_NS", "10", 1);
    if (rank == 1)
      setenv("MINIMP_MAX_UNEXPECTED_RTS", "100", 1);
    if (mmp_init_ex(rank, size, addr, key, NULL,
                    rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0) != 0)
      _exit(90);
    _exit(body(mmp_comm_world()));
  }
  return pid;
}

static void run_pair(int (*r0)(mmp_comm_t *), int (*r1)(mmp_comm_t *)) {
  char addr[64];
  pid_t p0, p1;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  p1 = spawn(1, 2, addr, r1);
  p0 = spawn(0, 2, addr, r0);
  assert_int_equal(exit_code(p1), 0);
  assert_int_equal(exit_code(p0), 0);
}

/* Waits until a message with `tag` from rank 0 is here. */
static int arrived(mmp_comm_t *w, int tag) {
  int flag = 0, k;

  for (k = 0; k < 2000 && !flag; k++) {
    if (mmp_iprobe(0, tag, w, &flag, NULL) != 0)
      return 0;
    if (!flag)
      usleep(5000);
  }
  return flag;
}

/* Rank 0: LIMIT rendezvous sends (tags 0..LIMIT-1) and NEAGER eager ones,
 * none of which rank 1 has a receive for yet. */
static int within_sender(mmp_comm_t *w) {
  static int v[LIMIT + NEAGER];
  mmp_request_t *r[LIMIT + NEAGER];
  int i;

  for (i = 0; i < LIMIT + NEAGER; i++) {
    v[i] = i;
    if (mmp_isend_ex(&v[i], sizeof(v[i]), 1,
                     i < LIMIT ? i : TAG_EAGER + i - LIMIT, w,
                     i < LIMIT ? MMP_SEND_RNDV : MMP_SEND_EAGER, &r[i]) != 0)
      return 10;
  }
  if (mmp_waitall(LIMIT + NEAGER, r, NULL) != 0)
    return 11;
  return mmp_finalize() == 0 ? 0 : 12;
}

/* Rank 1: once everything is here, receives it all in reverse order. */
static int within_receiver(mmp_comm_t *w) {
  int i, v;

  if (!arrived(w, TAG_EAGER + NEAGER - 1) || !arrived(w, LIMIT - 1))
    return 20;
  for (i = LIMIT + NEAGER - 1; i >= 0; i--) {
    v = -1;
    if (mmp_recv(&v, sizeof(v), 0, i < LIMIT ? i : TAG_EAGER + i - LIMIT, w,
                 NULL) != 0 ||
        v != i)
      return 21;
  }
  /* All of rank 0's RTS were unmatched here at once: exactly the limit. */
  if (mmp__debug_unexp_rts_peak() != LIMIT)
    return 22;
  return mmp_finalize() == 0 ? 0 : 23;
}

/* A program with as many unmatched rendezvous requests as the limit
 * allows, and many unexpected eager messages, runs to the end. */
static void test_limits_unexpected_within_limit_work(void **state) {
  (void)state;
  run_pair(within_sender, within_receiver);
}

/* Rank 0: FLOOD rendezvous sends that rank 1 never matches. */
static int flooder(mmp_comm_t *w) {
  static char b[FLOOD];
  mmp_request_t *r[FLOOD];
  int i, rc;

  for (i = 0; i < FLOOD; i++) {
    rc = mmp_isend_ex(&b[i], 1, 1, i, w, MMP_SEND_RNDV, &r[i]);
    if (rc == MMP_EPEERLOST && i > LIMIT)
      break; /* already cut off: later sends fail at once */
    if (rc != 0)
      return 30;
  }
  /* Rank 1 cuts the connection: the sends cannot complete. */
  rc = mmp_waitall((size_t)i, r, NULL);
  return rc == MMP_EPEERLOST ? 0 : 31;
}

/* Rank 1: waits for a message rank 0 never sends; the flood must end it
 * with MMP_EPEERLOST, and the entries held never passed the limit. */
static int flooded(mmp_comm_t *w) {
  int v;

  if (mmp_recv(&v, sizeof(v), 0, FLOOD + 1, w, NULL) != MMP_EPEERLOST)
    return 40;
  if (mmp__debug_unexp_rts_peak() != LIMIT)
    return 41;
  return 0;
}

static void test_limits_rts_flood_is_cut_off(void **state) {
  (void)state;
  run_pair(flooder, flooded);
}

#define NPING 500000 /* PING|REQ frames a member sends without reading */

/* A kB figure ("VmRSS:", "VmHWM:") of this process, in bytes. */
static uint64_t proc_status_bytes(const char *field) {
  char line[256];
  unsigned long long kb = 0;
  FILE *f = fopen("/proc/self/status", "r");

  if (f == NULL)
    return 0;
  while (fgets(line, sizeof(line), f) != NULL)
    if (strncmp(line, field, strlen(field)) == 0)
      sscanf(line + strlen(field), "%llu", &kb);
  fclose(f);
  return (uint64_t)kb * 1024;
}

/* Sends `n` header-only frames of `type` as rank 2 on `fd`, numbered
 * from *seq; RTS frames get distinct cookies and tags. 0 or -1. */
static int raw_frames(int fd, uint8_t type, uint16_t flags, int n,
                      uint64_t *seq) {
  static uint8_t buf[1024 * MMP__FRAME_HDR_SIZE];
  int done = 0;

  while (done < n) {
    int k = n - done < 1024 ? n - done : 1024, i;
    for (i = 0; i < k; i++) {
      mmp__frame_hdr_t h;
      memset(&h, 0, sizeof(h));
      h.type = type;
      h.flags = flags;
      h.src = 2;
      h.seq = (*seq)++;
      h.tag = done + i;
      h.a0 = (uint64_t)(done + i) + 1;
      h.a1 = 1;
      mmp__frame_encode(&h, buf + (size_t)i * MMP__FRAME_HDR_SIZE);
    }
    if (send(fd, buf, (size_t)k * MMP__FRAME_HDR_SIZE, MSG_NOSIGNAL) !=
        (ssize_t)k * MMP__FRAME_HDR_SIZE)
      return -1;
    done += k;
  }
  return 0;
}

/* The dialer's half of the handshake (frame.h) on a blocking socket, as
 * rank 2 of 3 to rank 1 with key `k`: HELLO, the CHALLENGE, PROOF, and
 * the HELLO_ACK that makes the connection rank 2's. Returns 0 if all went
 * through; the next frame is numbered 2. */
static int raw_handshake(int fd, const uint8_t *k) {
  uint8_t hello[MMP__GREET_LEN], msg[MMP__FRAME_HDR_SIZE + MMP__GREET_LEN];
  uint8_t mac[MMP__MAC_LEN];
  size_t n;

  hs_greeting(hello, 2, 3, 1, 0);
  n = hs_frame(msg, MMP__F_HELLO, 0, 2, MMP__GREET_LEN, MMP__FRAME_VERSION,
               hello, sizeof(hello));
  if (send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n ||
      recv(fd, msg, sizeof(msg), MSG_WAITALL) != (ssize_t)sizeof(msg) ||
      msg[5] != MMP__F_CHALLENGE)
    return -1;
  hs_proof(mac, k, hello, msg + MMP__FRAME_HDR_SIZE);
  n = hs_frame(msg, MMP__F_PROOF, 1, 2, MMP__MAC_LEN, MMP__FRAME_VERSION, mac,
               sizeof(mac));
  if (send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n ||
      recv(fd, msg, MMP__FRAME_HDR_SIZE + MMP__MAC_LEN, MSG_WAITALL) !=
          (ssize_t)(MMP__FRAME_HDR_SIZE + MMP__MAC_LEN) ||
      msg[5] != MMP__F_HELLO_ACK)
    return -1;
  return 0;
}

/* Rank 2, misbehaving: connects to rank 1 by hand as itself (it holds the
 * key and completes the challenge-response), never reads after the
 * handshake, sends NPING PING|REQ frames and then more RTS than rank 1's
 * limit. Rank 1 must close the connection. */
static int raw_member(mmp_comm_t *w) {
  uint8_t k[MMP__JOB_KEY_LEN];
  struct sockaddr_storage ss;
  char addr[128];
  uint64_t seq = 2; /* after HELLO and PROOF */
  int fd, small = 4096;
  (void)w;

  if (mmp__debug_job_key(k) != 0 || mmp__debug_listen_addr(1, addr, 128) ||
      mmp__addr_parse(addr, &ss) != 0)
    return 60;
  fd = socket(ss.ss_family, SOCK_STREAM, 0);
  if (fd < 0)
    return 61;
  /* Keep what the kernel holds for us small, so that rank 1's answers
   * back up into its own memory, as they would without a bound. */
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  if (connect(fd, (struct sockaddr *)&ss,
              ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                      : sizeof(struct sockaddr_in6)))
    return 61;
  if (raw_handshake(fd, k) != 0)
    return 62;
  if (raw_frames(fd, MMP__F_PING, MMP__FF_REQ, NPING, &seq) != 0)
    return 63;
  (void)raw_frames(fd, MMP__F_RTS, 0, 2 * LIMIT, &seq);
  for (;;) { /* now read: rank 1 must have closed the connection */
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    char buf[65536];
    ssize_t n;
    if (poll(&pfd, 1, 10000) <= 0)
      return 64;
    n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
      break;
    if (n < 0)
      return 65;
  }
  close(fd);
  return 0;
}

/* Rank 1: the flood must end in rank 2 being lost, with no more than the
 * limit of RTS entries held and the PING answers not piling up: without
 * the bound each unanswerable PING|REQ queued an answer (hundreds of
 * MiB here). */
static int victim(mmp_comm_t *w) {
  uint64_t rss0 = proc_status_bytes("VmRSS:"), grew;
  int v = 0;

  if (mmp_recv(&v, sizeof(v), 2, 7, w, NULL) != MMP_EPEERLOST)
    return 70;
  if (mmp__debug_unexp_rts_peak() != LIMIT)
    return 71;
  grew = proc_status_bytes("VmHWM:") - rss0;
  if (grew > (64u << 20)) {
    fprintf(stderr, "rank 1 grew by %llu bytes\n", (unsigned long long)grew);
    return 72;
  }
  if (mmp_send(&v, sizeof(v), 0, 9, w) != 0)
    return 73;
  /* Stay until rank 0 has it and leaves (then this fails). */
  (void)mmp_recv(&v, sizeof(v), 0, 10, w, NULL);
  return 0;
}

/* Rank 0 hosts the rendezvous until rank 1 is done. */
static int host(mmp_comm_t *w) {
  int v;
  return mmp_recv(&v, sizeof(v), 1, 9, w, NULL) == 0 ? 0 : 80;
}

/* A member that floods a rank with PING|REQ and RTS frames and never
 * reads is cut off, and the rank's memory stays bounded. */
static void test_limits_flooding_member_is_cut_off(void **state) {
  const char *shm = getenv("MINIMP_SHM");
  char addr[64];
  pid_t p[3];
  (void)state;

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
  /* Rank 1 takes rank 2's connection only over TCP: with shared memory
   * it refuses a TCP connection from a rank on its host. */
  setenv("MINIMP_SHM", "off", 1);
  p[2] = spawn(2, 3, addr, raw_member);
  p[1] = spawn(1, 3, addr, victim);
  p[0] = spawn(0, 3, addr, host);
  if (shm != NULL)
    setenv("MINIMP_SHM", shm, 1);
  else
    unsetenv("MINIMP_SHM");
  assert_int_equal(exit_code(p[2]), 0);
  assert_int_equal(exit_code(p[1]), 0);
  assert_int_equal(exit_code(p[0]), 0);
}

/* A limit that is not a number from 1 up is refused at init. */
static void test_limits_bad_value_refused(void **state) {
  static const char *const bad[] = {"0", "-5", "lots", "99999999999"};
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("MINIMP_MAX_UNEXPECTED_RTS", bad[i], 1);
    assert_int_equal(mmp_init_ex(0, 2, "127.0.0.1:1", key, NULL, 0), MMP_EENV);
  }
  unsetenv("MINIMP_MAX_UNEXPECTED_RTS");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_limits_unexpected_within_limit_work),
      cmocka_unit_test(test_limits_rts_flood_is_cut_off),
      cmocka_unit_test(test_limits_flooding_member_is_cut_off),
      cmocka_unit_test(test_limits_bad_value_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
