/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory transport on its own, without the runtime: two
 * transports of a two-rank job in one process on one loop, with 4 KiB
 * rings so that every test wraps them many times. Checks the set-up (the
 * names go once both sides attached; a foreign object is refused), frames
 * of exactly the ring size and one byte either side, partial direct
 * writes, thousands of queued writes, payloads by single copy and through
 * the ring, truncation, the doorbell, orderly shut-down, that a
 * corrupted index or garbage in a ring drops only that pair, with a
 * reason, and that no other user can open a rank's segment or doorbell.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "minimp.h"
#include "transport/transport.h"
#include "transport/util.h"

#define RING 4096u
#define MAXF 4096

typedef struct side_s {
  mmp__tp_t *tp;
  mmp__tp_conn_t *conn;
  int ups, downs, down_err;
  char down_reason[128];
  int frames, finished;
  mmp__frame_hdr_t hdr[MAXF];
  uint8_t *buf[MAXF];
  size_t trunc; /* sinks hold at most this much; 0: everything */
} side_t;

static uv_loop_t loop;
static side_t side[2];
static uint8_t key[MMP__JOB_KEY_LEN];
static const mmp__tp_ops_t *ops = &mmp__shm_ops;
static const int local2[2] = {0, 1};
static int ncb, last_status; /* write callbacks seen, and the last result */

static void on_up(void *ctx, int peer, mmp__tp_conn_t *conn) {
  side_t *s = ctx;
  (void)peer;
  s->conn = conn;
  s->ups++;
}

static int on_frame(void *ctx, int peer, const mmp__frame_hdr_t *h,
                    mmp__sink_t *sink) {
  side_t *s = ctx;
  int i = s->frames;
  size_t n = (size_t)h->len;
  (void)peer;

  assert_true(i < MAXF);
  if (s->trunc != 0 && n > s->trunc)
    n = s->trunc;
  s->hdr[i] = *h;
  s->buf[i] = malloc(n ? n : 1);
  assert_non_null(s->buf[i]);
  sink->buf = s->buf[i];
  sink->len = n;
  s->frames++;
  return 0;
}

static int on_done(void *ctx, int peer, const mmp__frame_hdr_t *h) {
  side_t *s = ctx;
  (void)peer;
  assert_int_equal(h->seq, s->hdr[s->frames - 1].seq);
  s->finished++;
  return 0;
}

static void on_down(void *ctx, int peer, int err, const char *reason) {
  side_t *s = ctx;
  (void)peer;
  s->downs++;
  s->down_err = err;
  s->conn = NULL;
  snprintf(s->down_reason, sizeof(s->down_reason), "%s", reason);
}

static void run_until(int *flag, int want) {
  double t0 = uv_hrtime() * 1e-9;
  while (*flag < want) {
    assert_true(uv_hrtime() * 1e-9 - t0 < 10.0);
    uv_run(&loop, UV_RUN_NOWAIT);
  }
}

static int make_side(int rank, int size, const int *local, int nlocal,
                     uint64_t ring, int single_copy) {
  side_t *s = &side[rank < 2 ? rank : 1];
  mmp__tp_config_t cfg;
  mmp__tp_callbacks_t cb;

  memset(&cfg, 0, sizeof(cfg));
  memset(&cb, 0, sizeof(cb));
  cfg.rank = rank;
  cfg.size = size;
  memcpy(cfg.key, key, sizeof(key));
  cfg.max_frame = 1 << 24;
  cfg.local = local;
  cfg.nlocal = nlocal;
  cfg.ring_bytes = ring;
  cfg.single_copy = single_copy;
  cb.ctx = s;
  cb.peer_up = on_up;
  cb.frame = on_frame;
  cb.frame_done = on_done;
  cb.peer_down = on_down;
  return ops->create(&loop, &cfg, &cb, &s->tp);
}

/* 1 if the named objects of `rank` exist in /dev/shm. */
static int names_exist(int rank) {
  char seg[MMP__SHM_NAME_MAX], bell[MMP__SHM_NAME_MAX], path[96];

  mmp__shm_names(key, rank, seg, bell);
  snprintf(path, sizeof(path), "/dev/shm%s", seg);
  return (access(path, F_OK) == 0) + (access(bell, F_OK) == 0);
}

static int setup_pair(int single_copy) {
  uint64_t seed = uv_hrtime() ^ ((uint64_t)getpid() << 32);
  int i;

  memset(side, 0, sizeof(side));
  ncb = last_status = 0;
  /* A key of our own: concurrent runs never meet. */
  for (i = 0; i < MMP__JOB_KEY_LEN; i++)
    key[i] = (uint8_t)((seed >> (8 * (i % 8))) + (uint64_t)i * 37);
  if (uv_loop_init(&loop) != 0)
    return -1;
  if (make_side(0, 2, local2, 2, RING, single_copy) != 0 ||
      make_side(1, 2, local2, 2, RING, single_copy) != 0)
    return -1;
  if (names_exist(0) != 2 || names_exist(1) != 2)
    return -1;
  if (mmp__shm_attach(side[0].tp, 1, 1) != 0 ||
      mmp__shm_attach(side[1].tp, 0, 1) != 0)
    return -1;
  mmp__shm_unlink(side[0].tp);
  mmp__shm_unlink(side[1].tp);
  if (mmp__shm_start(side[0].tp, 1) != 0 || mmp__shm_start(side[1].tp, 0) != 0)
    return -1;
  return side[0].ups == 1 && side[1].ups == 1 ? 0 : -1;
}

static int setup(void **state) {
  (void)state;
  return setup_pair(1);
}

static int setup_ring_only(void **state) {
  (void)state;
  return setup_pair(0);
}

static void destroyed(void *arg) {
  (*(int *)arg)++;
}

static int teardown(void **state) {
  int done = 0, i;
  (void)state;

  for (i = 0; i < 2; i++)
    if (side[i].tp != NULL)
      ops->destroy(side[i].tp, destroyed, &done);
  run_until(&done, (side[0].tp != NULL) + (side[1].tp != NULL));
  uv_run(&loop, UV_RUN_DEFAULT);
  for (i = 0; i < 2; i++)
    for (int k = 0; k < side[i].frames; k++)
      free(side[i].buf[k]);
  /* Nothing of the job is left in /dev/shm, and every handle closed. */
  if (names_exist(0) != 0 || names_exist(1) != 0)
    return -1;
  return uv_loop_close(&loop) == 0 ? 0 : -1;
}

/* ---- Helpers ------------------------------------------------------------ */

static void fill(uint8_t *b, size_t n, unsigned seed) {
  for (size_t j = 0; j < n; j++)
    b[j] = (uint8_t)(j * 131u + seed * 7u + (j >> 8) + 13u);
}

static void check(const uint8_t *b, size_t n, unsigned seed) {
  for (size_t j = 0; j < n; j++)
    if (b[j] != (uint8_t)(j * 131u + seed * 7u + (j >> 8) + 13u))
      fail_msg("byte %zu of frame %u differs", j, seed);
}

static void written(mmp__tp_write_t *w, int status) {
  (void)w;
  ncb++;
  last_status = status;
}

static void frame_init(mmp__tp_write_t *w, uint8_t type, void *buf, size_t n) {
  memset(w, 0, sizeof(*w));
  w->hdr.type = type;
  w->hdr.len = n;
  w->hdr.a0 = n;
  if (n > 0) {
    w->payload[0] = uv_buf_init(buf, (unsigned)n);
    w->npayload = 1;
  }
  w->cb = written;
}

/* Sends one frame of n bytes from side 0 and checks it arrives whole. */
static void send_check(uint8_t type, size_t n, unsigned seed) {
  uint8_t *b = malloc(n ? n : 1);
  mmp__tp_write_t w;
  int want = side[1].finished + 1, cbs = ncb + 1;

  assert_non_null(b);
  fill(b, n, seed);
  frame_init(&w, type, b, n);
  assert_int_equal(ops->write(side[0].conn, &w), 0);
  run_until(&side[1].finished, want);
  run_until(&ncb, cbs);
  assert_int_equal(last_status, 0);
  assert_int_equal(side[1].hdr[want - 1].len, n);
  assert_int_equal(side[1].hdr[want - 1].type, type);
  assert_int_equal(side[1].hdr[want - 1].src, 0);
  check(side[1].buf[want - 1], n, seed);
  free(b);
}

/* ---- Tests -------------------------------------------------------------- */

static void test_shm_names_are_gone_once_attached(void **state) {
  (void)state;
  /* setup found both names before attaching; unlinked now. */
  assert_int_equal(names_exist(0), 0);
  assert_int_equal(names_exist(1), 0);
  assert_int_equal(mmp__shm_remove(key, 0), 0);
  /* The pairs still work without them. */
  send_check(MMP__F_EAGER, 100, 1);
}

static void test_shm_frames_around_the_ring_size(void **state) {
  const size_t h = MMP__FRAME_HDR_SIZE;
  const size_t sizes[] = {
      0,        1,    RING - h - 1, RING - h,     RING - h + 1,
      RING - 1, RING, RING + 1,     3 * RING + 5, 2 * RING - h};
  mmp__shm_stats_t st;
  unsigned seed = 0;
  (void)state;

  /* Every size at several offsets in the ring, so that headers and
   * payloads are cut by the wrap at every kind of place. */
  for (int round = 0; round < 7; round++)
    for (size_t i = 0; i < MMP__ARRAY_SIZE(sizes); i++)
      send_check(MMP__F_EAGER, sizes[i] + (size_t)round * 7, seed++);
  mmp__shm_stats(side[1].tp, &st);
  assert_int_equal(st.ring_bytes, RING);
  /* The ring was gone round dozens of times. */
  assert_true(st.bytes_in > 40 * RING);
  assert_int_equal(st.pulled, 0);
}

static void test_shm_direct_write_partial_then_queued(void **state) {
  uint8_t *b = malloc(3 * RING);
  mmp__tp_write_t w;
  (void)state;

  fill(b, 3 * RING, 5);
  /* A small frame goes at once, without a callback. */
  frame_init(&w, MMP__F_EAGER, b, 10);
  assert_int_equal(ops->write_direct(side[0].conn, &w), 1);
  run_until(&side[1].finished, 1);
  assert_int_equal(ncb, 0);
  /* One larger than the ring goes in part; write() finishes it. */
  frame_init(&w, MMP__F_EAGER, b, 3 * RING);
  assert_int_equal(ops->write_direct(side[0].conn, &w), 0);
  assert_true(w.offset_ > 0 && w.offset_ <= RING);
  assert_int_equal(ops->write(side[0].conn, &w), 0);
  run_until(&side[1].finished, 2);
  run_until(&ncb, 1);
  assert_int_equal(side[1].hdr[1].len, 3 * RING);
  check(side[1].buf[1], 3 * RING, 5);
  assert_int_equal(side[1].hdr[1].seq, 1);
  free(b);
}

static void test_shm_many_outstanding_writes(void **state) {
  enum { N = 3000 };
  mmp__tp_write_t *w = calloc(N, sizeof(*w));
  uint8_t **b = calloc(N, sizeof(*b));
  (void)state;

  /* All queued before the loop runs once: the ring holds a few, the rest
   * wait, and they must arrive complete and in order. */
  for (int i = 0; i < N; i++) {
    size_t n = (size_t)(i * 977) % 3001;
    b[i] = malloc(n ? n : 1);
    fill(b[i], n, (unsigned)i);
    frame_init(&w[i], MMP__F_EAGER, b[i], n);
    assert_int_equal(ops->write(side[0].conn, &w[i]), 0);
  }
  run_until(&side[1].finished, N);
  run_until(&ncb, N);
  for (int i = 0; i < N; i++) {
    size_t n = (size_t)(i * 977) % 3001;
    assert_int_equal(side[1].hdr[i].seq, i);
    assert_int_equal(side[1].hdr[i].len, n);
    check(side[1].buf[i], n, (unsigned)i);
    free(b[i]);
  }
  free(b);
  free(w);
}

static void test_shm_data_by_single_copy(void **state) {
  size_t n = 1u << 20;
  uint8_t *b = malloc(n);
  mmp__tp_write_t w;
  mmp__shm_stats_t st;
  (void)state;

  mmp__shm_stats(side[0].tp, &st);
  assert_int_equal(st.single_copy, 1);
  fill(b, n, 9);
  frame_init(&w, MMP__F_DATA, b, n);
  /* A payload by reference completes only in the loop. */
  assert_int_equal(ops->write_direct(side[0].conn, &w), 0);
  assert_int_equal(ops->write(side[0].conn, &w), 0);
  run_until(&ncb, 1);
  /* The receiver had it in place before the sender heard back. */
  assert_int_equal(side[1].finished, 1);
  check(side[1].buf[0], n, 9);
  mmp__shm_stats(side[1].tp, &st);
  assert_int_equal(st.pulled, n);
  assert_int_equal(st.pull_frames, 1);
  assert_true(st.bytes_in < 100); /* only the header and the reference */
  /* Small DATA goes through the ring. */
  send_check(MMP__F_DATA, 1000, 10);
  mmp__shm_stats(side[1].tp, &st);
  assert_int_equal(st.pull_frames, 1);
  /* So does an EAGER frame that fits it; a larger one is pulled. */
  send_check(MMP__F_EAGER, RING / 2, 21);
  mmp__shm_stats(side[1].tp, &st);
  assert_int_equal(st.pull_frames, 1);
  send_check(MMP__F_EAGER, RING + 1, 22);
  mmp__shm_stats(side[1].tp, &st);
  assert_int_equal(st.pull_frames, 2);
  assert_int_equal(st.pulled, n + RING + 1);
  free(b);
}

static void test_shm_data_through_ring_when_not_allowed(void **state) {
  size_t n = 1u << 20;
  mmp__shm_stats_t st;
  (void)state;

  mmp__shm_stats(side[0].tp, &st);
  assert_int_equal(st.single_copy, 0);
  send_check(MMP__F_DATA, n, 11);
  mmp__shm_stats(side[1].tp, &st);
  assert_int_equal(st.pulled, 0);
  assert_true(st.bytes_in >= n);
}

/* Sinks shorter than the payload: through the ring, the rest is read and
 * dropped; by reference, only what fits is pulled. */
static void test_shm_truncated_sink(void **state) {
  uint8_t *b = malloc(2 * RING);
  mmp__tp_write_t w[2];
  mmp__shm_stats_t st;
  (void)state;

  side[1].trunc = 100;
  fill(b, 2 * RING, 12);
  frame_init(&w[0], MMP__F_EAGER, b, RING - 100);
  frame_init(&w[1], MMP__F_EAGER, b, 2 * RING);
  assert_int_equal(ops->write(side[0].conn, &w[0]), 0);
  assert_int_equal(ops->write(side[0].conn, &w[1]), 0);
  run_until(&side[1].finished, 2);
  check(side[1].buf[0], 100, 12);
  check(side[1].buf[1], 100, 12);
  mmp__shm_stats(side[1].tp, &st);
  assert_int_equal(st.pulled, 100);
  side[1].trunc = 0;
  /* The next frame is intact. */
  send_check(MMP__F_EAGER, 300, 13);
  free(b);
}

static void test_shm_doorbell_wakes_a_sleeper(void **state) {
  mmp__shm_stats_t st0, st1;
  uint8_t b[8];
  mmp__tp_write_t w;
  (void)state;

  /* Nobody sleeps: no doorbell. */
  send_check(MMP__F_EAGER, 8, 14);
  mmp__shm_stats(side[0].tp, &st0);
  assert_int_equal(st0.bells, 0);
  /* Side 1 arms; a frame from side 0 rings once, and side 1's loop, run
   * as a sleeper would, finds it. */
  assert_int_equal(ops->poll(side[1].tp, 1), 0);
  mmp__shm_stats(side[1].tp, &st1);
  assert_int_equal(st1.arms, 1);
  fill(b, 8, 15);
  frame_init(&w, MMP__F_EAGER, b, 8);
  assert_int_equal(ops->write_direct(side[0].conn, &w), 1);
  mmp__shm_stats(side[0].tp, &st0);
  assert_int_equal(st0.bells, 1);
  uv_run(&loop, UV_RUN_ONCE);
  run_until(&side[1].finished, 2);
  check(side[1].buf[1], 8, 15);
  /* Arming with work pending does not arm. */
  frame_init(&w, MMP__F_EAGER, b, 8);
  assert_int_equal(ops->write_direct(side[0].conn, &w), 1);
  assert_int_equal(ops->poll(side[1].tp, 1), 1);
  assert_int_equal(side[1].finished, 3);
}

static void test_shm_orderly_shutdown(void **state) {
  (void)state;
  send_check(MMP__F_BYE, 0, 16);
  ops->shutdown(side[0].conn, 2000);
  ops->shutdown(side[1].conn, 2000);
  run_until(&side[0].downs, 1);
  run_until(&side[1].downs, 1);
  assert_int_equal(side[0].down_err, 0);
  assert_int_equal(side[1].down_err, 0);
}

static void test_shm_peer_closing_first_is_eof(void **state) {
  (void)state;
  ops->shutdown(side[0].conn, 2000);
  run_until(&side[1].downs, 1);
  /* Like a TCP peer's EOF: the runtime decides whether BYE came first. */
  assert_int_equal(side[1].down_err, MMP_EPEERLOST);
  assert_non_null(strstr(side[1].down_reason, "closed by peer"));
  /* And the closing side learns the pair is gone. */
  run_until(&side[0].downs, 1);
}

static void assert_dropped(int who, const char *why) {
  mmp__tp_stats_t st;

  run_until(&side[who].downs, 1);
  assert_non_null(strstr(side[who].down_reason, why));
  ops->stats(side[who].tp, &st);
  assert_int_equal(st.dropped, 1);
  /* The other side sees the pair end, as after a reset. */
  run_until(&side[1 - who].downs, 1);
  assert_int_not_equal(side[1 - who].down_err, 0);
}

static void test_shm_corrupt_tail_drops_the_pair(void **state) {
  (void)state;
  send_check(MMP__F_EAGER, 100, 17);
  /* Side 0 writes an impossible tail into side 1's ring. */
  assert_int_equal(mmp__shm_debug_corrupt(side[0].tp, 1, 0, 1ull << 62), 0);
  assert_dropped(1, "corrupt ring index (tail)");
}

static void test_shm_corrupt_head_drops_the_pair(void **state) {
  uint8_t *b = malloc(RING);
  mmp__tp_write_t w;
  (void)state;

  send_check(MMP__F_EAGER, 100, 18);
  /* Side 1 writes an impossible head where side 0 reads it; side 0 finds
   * out when it needs room (a frame of the ring's size, which goes
   * through it). */
  assert_int_equal(mmp__shm_debug_corrupt(side[1].tp, 0, 1, 12345678), 0);
  fill(b, RING, 18);
  frame_init(&w, MMP__F_EAGER, b, RING);
  assert_int_equal(ops->write(side[0].conn, &w), 0);
  assert_dropped(0, "corrupt ring index (head)");
  run_until(&ncb, 2);
  assert_int_equal(last_status, MMP_EPEERLOST);
  free(b);
}

static void test_shm_corrupt_pull_count_drops_the_pair(void **state) {
  size_t n = 1u << 18;
  uint8_t *b = malloc(n);
  mmp__tp_write_t w;
  (void)state;

  fill(b, n, 19);
  frame_init(&w, MMP__F_DATA, b, n);
  assert_int_equal(ops->write(side[0].conn, &w), 0);
  assert_int_equal(mmp__shm_debug_corrupt(side[1].tp, 0, 2, 5), 0);
  /* Side 0 looks before side 1 pulls: 5 pulls of 1 posted. */
  ops->poll(side[0].tp, 0);
  assert_dropped(0, "corrupt pull count");
  run_until(&ncb, 1);
  assert_int_equal(last_status, MMP_EPEERLOST);
  free(b);
}

static void test_shm_garbage_in_the_ring_drops_the_pair(void **state) {
  (void)state;
  send_check(MMP__F_EAGER, 100, 20);
  assert_int_equal(mmp__shm_debug_corrupt(side[0].tp, 1, 3, 0), 0);
  assert_dropped(1, "bad magic");
}

/* A segment under the name of a peer that is not ours is refused. */
static void test_shm_attach_checks_the_object(void **state) {
  static const int local3[2] = {0, 2};
  char seg[MMP__SHM_NAME_MAX], bell[MMP__SHM_NAME_MAX];
  uint8_t junk[8192];
  int fd;
  (void)state;

  memset(side, 0, sizeof(side));
  for (int i = 0; i < MMP__JOB_KEY_LEN; i++)
    key[i] = (uint8_t)(uv_hrtime() >> (i % 8)) ^ (uint8_t)getpid();
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(make_side(0, 3, local3, 2, RING, 1), 0);
  /* Nothing there. */
  assert_int_equal(mmp__shm_attach(side[0].tp, 2, 1), MMP_EIO);
  /* Not a local rank. */
  assert_int_equal(mmp__shm_attach(side[0].tp, 1, 1), MMP_EINVAL);
  mmp__shm_names(key, 2, seg, bell);
  /* World-readable: refused. */
  fd = shm_open(seg, O_RDWR | O_CREAT | O_EXCL, 0644);
  assert_true(fd >= 0);
  assert_int_equal(fchmod(fd, 0644), 0);
  memset(junk, 0xab, sizeof(junk));
  assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
  assert_int_equal(mmp__shm_attach(side[0].tp, 2, 1), MMP_EIO);
  /* Private but garbage: refused by its header. */
  assert_int_equal(fchmod(fd, 0600), 0);
  assert_int_equal(mmp__shm_attach(side[0].tp, 2, 1), MMP_EIO);
  close(fd);
  assert_int_equal(mmp__shm_remove(key, 2), 1);
  /* Whatever pre-exists under our own name makes creation fail. */
  side[1].tp = NULL;
  mmp__shm_names(key, 2, seg, bell);
  fd = shm_open(seg, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(make_side(2, 3, local3, 2, RING, 1), MMP_EIO);
  assert_int_equal(mmp__shm_remove(key, 2), 1);
  side[1].tp = NULL;
}

/* 0 if a process of user `uid` cannot open `path` for reading, else 1.
 * Needs root (to become that user); the caller checks. */
static int other_user_opens(const char *path, uid_t uid) {
  pid_t pid = fork();
  int st;

  assert_true(pid >= 0);
  if (pid == 0) {
    int fd;
    if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)
      _exit(2);
    fd = open(path, O_RDONLY | O_NONBLOCK);
    _exit(fd >= 0 ? 1 : errno == EACCES ? 0 : 3);
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* Shared memory carries the ranks' frames in clear (sealing covers TCP
 * only), so a rank's segment and doorbell are this user's alone, with mode
 * 0600 even under a umask of 0, and another user cannot open them. */
static void test_shm_objects_are_private_whatever_the_umask(void **state) {
  char seg[MMP__SHM_NAME_MAX], bell[MMP__SHM_NAME_MAX], path[96];
  struct stat st;
  mode_t old;
  (void)state;

  memset(side, 0, sizeof(side));
  for (int i = 0; i < MMP__JOB_KEY_LEN; i++)
    key[i] = (uint8_t)(uv_hrtime() >> (i % 8)) ^ (uint8_t)(getpid() + i);
  assert_int_equal(uv_loop_init(&loop), 0);
  old = umask(0);
  assert_int_equal(make_side(0, 2, local2, 2, RING, 1), 0);
  umask(old);
  mmp__shm_names(key, 0, seg, bell);
  snprintf(path, sizeof(path), "/dev/shm%s", seg);
  assert_int_equal(stat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_int_equal(st.st_uid, geteuid());
  assert_int_equal(stat(bell, &st), 0);
  assert_true(S_ISFIFO(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_int_equal(st.st_uid, geteuid());
  if (geteuid() == 0) {
    /* nobody (65534) stands for any other user of the host. */
    assert_int_equal(other_user_opens(path, 65534), 0);
    assert_int_equal(other_user_opens(bell, 65534), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_shm_names_are_gone_once_attached,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_shm_frames_around_the_ring_size,
                                      setup_ring_only, teardown),
      cmocka_unit_test_setup_teardown(test_shm_direct_write_partial_then_queued,
                                      setup_ring_only, teardown),
      cmocka_unit_test_setup_teardown(test_shm_many_outstanding_writes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_shm_data_by_single_copy, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          test_shm_data_through_ring_when_not_allowed, setup_ring_only,
          teardown),
      cmocka_unit_test_setup_teardown(test_shm_truncated_sink, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shm_doorbell_wakes_a_sleeper, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_shm_orderly_shutdown, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_shm_peer_closing_first_is_eof, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_shm_corrupt_tail_drops_the_pair,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_shm_corrupt_head_drops_the_pair,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_shm_corrupt_pull_count_drops_the_pair, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_shm_garbage_in_the_ring_drops_the_pair, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shm_attach_checks_the_object, NULL,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          test_shm_objects_are_private_whatever_the_umask, NULL, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
