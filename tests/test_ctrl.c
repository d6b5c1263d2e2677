/* SPDX-License-Identifier: MIT */
/*
 * The control protocol between minimprun and its per-host daemons
 * (launcher/ctrl.c, remote.c, daemon.c): the header and LAUNCH codec,
 * every truncation and corruption of a LAUNCH body, then both ends over
 * real sockets. minimprun's control server is driven by a raw client
 * (garbage, a wrong key, a replayed handshake, a rank that is not the
 * host's, a clean run), and "minimprun --daemon" by a raw server (garbage,
 * a server that cannot prove the key, a LAUNCH before the proof, a whole
 * job whose rank gets the key from its daemon, the same in a --wdir with
 * its bindings reported, a --wdir missing there, a dropped connection that
 * must stop its rank, a SIGKILL that must take the rank along, a program
 * that does not exist). No message carries the key.
 *
 * Run as: test_ctrl MINIMPRUN
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launcher/common.h"
#include "launcher/ctrl.h"
#include "launcher/remote.h"
#include "minimp.h"
#include "transport/auth.h"
#include "transport/util.h"

extern char **environ;

static const char *minimprun;
static const uint8_t test_key[MMP__JOB_KEY_LEN] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* ---- Codec ------------------------------------------------------------- */

static void hdr_with(uint8_t h[MMP__BOOT_HDR_SIZE], uint8_t type,
                     uint32_t len) {
  mmp__put_u32(h, MMP__CTRL_MAGIC);
  h[4] = MMP__CTRL_VERSION;
  h[5] = type;
  mmp__put_u16(h + 6, 0);
  mmp__put_u32(h + 8, 0);
  mmp__put_u32(h + 12, len);
}

static void test_ctrl_header_checks(void **state) {
  mmp__boot_hdr_t h;
  mmp__boot_wr_t w;
  uint8_t b[MMP__BOOT_HDR_SIZE];
  const char *why = NULL;
  (void)state;

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, 7);
  assert_int_equal(mmp__ctrl_finish(&w, MMP__C_SIGNAL), 0);
  assert_int_equal(w.len, MMP__BOOT_HDR_SIZE + 4);
  assert_int_equal(mmp__ctrl_hdr_decode(w.buf, &h, &why), 0);
  assert_int_equal(h.type, MMP__C_SIGNAL);
  assert_int_equal(h.len, 4);
  /* The bootstrap protocol's header is not ours. */
  assert_int_equal(mmp__boot_wr_finish(&w, MMP__B_HELLO, 0), 0);
  assert_int_equal(mmp__ctrl_hdr_decode(w.buf, &h, &why), MMP_EPROTO);
  assert_string_equal(why, "bad magic");
  free(w.buf);

  hdr_with(b, MMP__C_HELLO, 10);
  b[4] = MMP__CTRL_VERSION + 1;
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_EPROTO);
  assert_non_null(strstr(why, "unsupported control protocol version"));
  /* Version 2 had no flags in CHALLENGE. */
  b[4] = 2;
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_EPROTO);
  assert_non_null(strstr(why, "unsupported control protocol version"));
  /* The version that sent the key says so. */
  b[4] = 1;
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_EPROTO);
  assert_non_null(strstr(why, "version 1"));
  hdr_with(b, 0, 10);
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_EPROTO);
  assert_string_equal(why, "unknown message type");
  hdr_with(b, MMP__C_TYPE_MAX + 1, 10);
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_EPROTO);
  hdr_with(b, MMP__C_BYE, 0);
  b[7] = 1;
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_EPROTO);
  assert_string_equal(why, "reserved header field is not zero");
  /* Caps by type: LAUNCH may be large, nothing else. */
  hdr_with(b, MMP__C_OUTPUT, MMP__CTRL_MAX_BODY + 1);
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_ETOOBIG);
  hdr_with(b, MMP__C_LAUNCH, MMP__CTRL_MAX_BODY + 1);
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), 0);
  hdr_with(b, MMP__C_LAUNCH, MMP__CTRL_MAX_LAUNCH + 1);
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_ETOOBIG);
  hdr_with(b, MMP__C_LAUNCH, UINT32_MAX);
  assert_int_equal(mmp__ctrl_hdr_decode(b, &h, &why), MMP_ETOOBIG);
}

/* Every launch flag, so that each must survive the codec. */
#define SAMPLE_FLAGS                                                           \
  (MMP__CTRL_LAUNCH_VERBOSE | MMP__CTRL_LAUNCH_BIND_CORE |                     \
   MMP__CTRL_LAUNCH_REPORT_BINDINGS | MMP__CTRL_LAUNCH_WDIR)

/* A LAUNCH of 2 ranks; returns the whole message (header first). */
static mmp__boot_wr_t sample_launch(void) {
  char *argv[] = {"/bin/prog", "arg one", "", NULL};
  char *env[] = {"MINIMP_SIZE=4", "A=b=c", NULL};
  char *v3[] = {"MINIMP_RANK=3", "MINIMP_LOCAL_RANK=0", NULL};
  char *v7[] = {"MINIMP_RANK=7", NULL};
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__ctrl_launch_begin(&w, SAMPLE_FLAGS, "/home/u", argv, env, 2);
  mmp__ctrl_launch_rank(&w, 3, 0, v3, 2);
  mmp__ctrl_launch_rank(&w, 7, MMP__CTRL_RANK_STDIN, v7, 1);
  assert_int_equal(mmp__ctrl_finish(&w, MMP__C_LAUNCH), 0);
  return w;
}

static void test_ctrl_launch_round_trip(void **state) {
  mmp__boot_wr_t w = sample_launch();
  mmp__ctrl_launch_t l;
  const char *why = NULL;
  (void)state;

  assert_int_equal(mmp__ctrl_launch_decode(w.buf + MMP__BOOT_HDR_SIZE,
                                           w.len - MMP__BOOT_HDR_SIZE, &l,
                                           &why),
                   0);
  assert_int_equal(l.flags, SAMPLE_FLAGS);
  assert_string_equal(l.cwd, "/home/u");
  assert_int_equal(l.argc, 3);
  assert_string_equal(l.argv[0], "/bin/prog");
  assert_string_equal(l.argv[1], "arg one");
  assert_string_equal(l.argv[2], "");
  assert_null(l.argv[3]);
  assert_int_equal(l.nenv, 2);
  assert_string_equal(l.env[1], "A=b=c");
  assert_null(l.env[2]);
  assert_int_equal(l.nranks, 2);
  assert_int_equal(l.ranks[0].rank, 3);
  assert_int_equal(l.ranks[0].flags, 0);
  assert_int_equal(l.ranks[0].nvars, 2);
  assert_string_equal(l.ranks[0].vars[1], "MINIMP_LOCAL_RANK=0");
  assert_null(l.ranks[0].vars[2]);
  assert_int_equal(l.ranks[1].rank, 7);
  assert_int_equal(l.ranks[1].flags, MMP__CTRL_RANK_STDIN);
  assert_string_equal(l.ranks[1].vars[0], "MINIMP_RANK=7");
  mmp__ctrl_launch_free(&l);
  assert_null(l.mem);
  free(w.buf);
}

/* The body must be refused with `want` as the reason. */
static void check_bad_launch(const uint8_t *body, size_t len,
                             const char *want) {
  mmp__ctrl_launch_t l;
  const char *why = NULL;

  assert_int_equal(mmp__ctrl_launch_decode(body, len, &l, &why), MMP_EPROTO);
  assert_null(l.mem);
  if (want != NULL && (why == NULL || strcmp(why, want) != 0))
    fail_msg("LAUNCH refused with '%s', want '%s'", why ? why : "(null)", want);
}

/* Encodes a LAUNCH of `nranks` (0 or 1) rank numbered `rank`, with `var`
 * (or nothing) added to the environment; it must be refused with `want`. */
static void check_bad_encoded(char *var, int nranks, int rank,
                              const char *want) {
  char *argv[] = {"p", NULL}, *env[] = {var, NULL};
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__ctrl_launch_begin(&w, 0, "/", argv, env, nranks);
  if (nranks > 0)
    mmp__ctrl_launch_rank(&w, rank, 0, env + 1, 0);
  assert_int_equal(mmp__ctrl_finish(&w, MMP__C_LAUNCH), 0);
  check_bad_launch(w.buf + MMP__BOOT_HDR_SIZE, w.len - MMP__BOOT_HDR_SIZE,
                   want);
  free(w.buf);
}

static void test_ctrl_launch_rejects_malformed(void **state) {
  mmp__boot_wr_t w = sample_launch();
  uint8_t *body = w.buf + MMP__BOOT_HDR_SIZE, *copy;
  size_t len = w.len - MMP__BOOT_HDR_SIZE, cut;
  (void)state;

  /* Every truncation is refused, without reading past the end (ASan). */
  for (cut = 0; cut < len; cut++) {
    copy = malloc(cut + 1);
    assert_non_null(copy);
    memcpy(copy, body, cut);
    check_bad_launch(copy, cut, NULL);
    free(copy);
  }
  copy = malloc(len + 1);
  assert_non_null(copy);
  memcpy(copy, body, len);
  copy[len] = 0;
  check_bad_launch(copy, len + 1, "trailing bytes");
  /* Body: flags(4) cwd(4+7) argc(4) "/bin/prog"(4+9) ... */
  memcpy(copy, body, len);
  mmp__put_u32(copy + 15, 0x7fffffff); /* argc larger than the body */
  check_bad_launch(copy, len, "bad count");
  memcpy(copy, body, len);
  mmp__put_u32(copy + 15, 0); /* no program */
  check_bad_launch(copy, len, "bad count");
  memcpy(copy, body, len);
  copy[8 + 2] = '\0'; /* a NUL inside cwd */
  check_bad_launch(copy, len, "NUL byte in a string");
  memcpy(copy, body, len);
  mmp__put_u32(copy + 19, 0x40000000); /* a string longer than allowed */
  check_bad_launch(copy, len, NULL);
  free(copy);
  free(w.buf);

  /* A variable without '=', a rank out of range, no rank at all. */
  check_bad_encoded("NOEQUALS", 1, 0, "variable without NAME=");
  check_bad_encoded(NULL, 1, MMP__CTRL_MAX_RANK, "bad rank");
  check_bad_encoded(NULL, 0, 0, "bad count");
}

/* ---- A blocking peer ---------------------------------------------------- */

static int peer_connect(const char *addr) {
  struct sockaddr_in sa;
  char ip[64];
  const char *colon = strrchr(addr, ':');
  int fd = socket(AF_INET, SOCK_STREAM, 0);

  assert_true(fd >= 0 && colon != NULL);
  memcpy(ip, addr, (size_t)(colon - addr));
  ip[colon - addr] = '\0';
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  assert_int_equal(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void peer_write(int fd, const void *p, size_t n) {
  ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
  (void)w;
}

static void peer_send(int fd, uint8_t type, mmp__boot_wr_t *w) {
  if (mmp__ctrl_finish(w, type) == 0) {
    peer_write(fd, w->buf, w->len);
    free(w->buf);
  }
}

static int peer_read_all(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t got = recv(fd, p, n, 0);
    if (got <= 0)
      return -1;
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

/* Reads one message (its body malloc'd into *body); -1 at EOF. */
static int peer_recv(int fd, uint8_t *type, uint8_t **body, size_t *len) {
  uint8_t hb[MMP__BOOT_HDR_SIZE];
  mmp__boot_hdr_t h;
  const char *why;

  *body = NULL;
  if (peer_read_all(fd, hb, sizeof(hb)) != 0)
    return -1;
  if (mmp__ctrl_hdr_decode(hb, &h, &why) != 0)
    return -2;
  *type = h.type;
  *len = h.len;
  *body = malloc(h.len + 1);
  if (*body == NULL || peer_read_all(fd, *body, h.len) != 0) {
    free(*body);
    return -1;
  }
  return 0;
}

/* Expects an ERROR whose message contains `want`, then the end. */
static int peer_expect_error(int fd, const char *want) {
  uint8_t type, *body;
  size_t len;
  int ok;

  if (peer_recv(fd, &type, &body, &len) != 0)
    return 0;
  if (type == MMP__C_CHALLENGE) {
    /* Every connection is challenged first. */
    free(body);
    if (peer_recv(fd, &type, &body, &len) != 0)
      return 0;
  }
  ok = type == MMP__C_ERROR && len > 6 &&
       memmem(body + 6, len - 6, want, strlen(want)) != NULL;
  free(body);
  return ok && peer_recv(fd, &type, &body, &len) == -1;
}

/* A daemon's side of the handshake, with `key` and minimprun `version`:
 * HELLO, then PROOF over HELLO and the server's CHALLENGE. The bytes sent
 * go to `sent` (at least 256) when not NULL; the transcript to `a`.
 * Returns bytes sent, or 0. */
static size_t peer_hello_v(int fd, const uint8_t *key, uint32_t index,
                           const char *version, uint8_t *sent, mmp__auth_t *a) {
  uint8_t nonce[MMP__NONCE_LEN], mac[MMP__MAC_LEN], hello[160], type, *body;
  size_t hlen, len;
  mmp__boot_wr_t w;

  mmp__auth_nonce(nonce);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
  mmp__boot_wr_u32(&w, index);
  mmp__boot_wr_u32(&w, 4242);
  mmp__boot_wr_str(&w, "fakehost", 8);
  mmp__boot_wr_str(&w, version, strlen(version));
  assert_int_equal(mmp__ctrl_finish(&w, MMP__C_HELLO), 0);
  hlen = w.len;
  memcpy(hello, w.buf, hlen);
  peer_write(fd, w.buf, w.len);
  free(w.buf);
  if (peer_recv(fd, &type, &body, &len) != 0)
    return 0;
  /* This server does not seal. */
  if (type != MMP__C_CHALLENGE || len != MMP__CTRL_CHALLENGE_LEN ||
      mmp__get_u32(body + MMP__NONCE_LEN) != 0) {
    free(body);
    return 0;
  }
  mmp__auth_begin(a, key, MMP__AUTH_CTRL, hello + MMP__BOOT_HDR_SIZE,
                  hlen - MMP__BOOT_HDR_SIZE, body, len);
  free(body);
  mmp__auth_mac(a, MMP__AUTH_DIALER, MMP__AUTH_PROVE, mac);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, mac, sizeof(mac));
  assert_int_equal(mmp__ctrl_finish(&w, MMP__C_PROOF), 0);
  if (sent != NULL) {
    memcpy(sent, hello, hlen);
    memcpy(sent + hlen, w.buf, w.len);
  }
  hlen += w.len;
  peer_write(fd, w.buf, w.len);
  free(w.buf);
  return hlen;
}

static size_t peer_hello(int fd, const uint8_t *key, uint32_t index,
                         uint8_t *sent, mmp__auth_t *a) {
  return peer_hello_v(fd, key, index, MMP__LAUNCHER_VERSION, sent, a);
}

static void peer_u32s(int fd, uint8_t type, uint32_t a, uint32_t b,
                      uint32_t c) {
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, a);
  mmp__boot_wr_u32(&w, b);
  mmp__boot_wr_u32(&w, c);
  peer_send(fd, type, &w);
}

static void peer_output(int fd, uint32_t rank, uint32_t stream,
                        const char *data) {
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__boot_wr_u32(&w, rank);
  mmp__boot_wr_u32(&w, stream);
  mmp__boot_wr_blob(&w, data, strlen(data));
  peer_send(fd, MMP__C_OUTPUT, &w);
}

/* ---- minimprun's control server, from a daemon's side ------------------- */

typedef struct rm_seen_s {
  int started_rank, started_pid, started_err;
  char output[64];
  int exited_rank, exited_status;
  int lost[3];
  char lost_msg[3][512];
} rm_seen_t;

typedef struct rm_client_s {
  char addrfile[64];
  atomic_int done;
  int ok[7]; /* each step's verdict */
} rm_client_t;

static void seen_started(void *ctx, int rank, int pid, int err) {
  rm_seen_t *s = ctx;
  s->started_rank = rank;
  s->started_pid = pid;
  s->started_err = err;
}

static void seen_output(void *ctx, int rank, int fd, const char *data,
                        size_t n) {
  rm_seen_t *s = ctx;
  (void)rank;
  (void)fd;
  if (n > 0 && strlen(s->output) + n < sizeof(s->output))
    strncat(s->output, data, n);
}

static void seen_exited(void *ctx, int rank, int64_t status, int signo) {
  rm_seen_t *s = ctx;
  (void)signo;
  s->exited_rank = rank;
  s->exited_status = (int)status;
}

static void seen_lost(void *ctx, int id, const char *msg) {
  rm_seen_t *s = ctx;
  s->lost[id]++;
  snprintf(s->lost_msg[id], sizeof(s->lost_msg[id]), "%s", msg ? msg : "");
}

static void seen_agent(void *ctx, int id, int fd, const char *d, size_t n) {
  (void)ctx;
  (void)id;
  (void)fd;
  (void)d;
  (void)n;
}

/* Connects as host `index`; returns the socket once WELCOME (its proof
 * checked) and LAUNCH came, or -1. The handshake's bytes go to `sent`
 * (may be NULL) and their count to *nsent. */
static int peer_join(const char *addr, const uint8_t *key, uint32_t index,
                     uint8_t *sent, size_t *nsent) {
  uint8_t type = 0, *body = NULL;
  mmp__auth_t a;
  size_t len, n;
  int fd = peer_connect(addr), ok;

  if (fd < 0)
    return -1;
  n = peer_hello(fd, key, index, sent, &a);
  if (nsent != NULL)
    *nsent = n;
  ok = n > 0 && peer_recv(fd, &type, &body, &len) == 0 &&
       type == MMP__C_WELCOME && len == MMP__MAC_LEN &&
       mmp__auth_check(&a, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, body);
  free(body);
  body = NULL;
  ok = ok && peer_recv(fd, &type, &body, &len) == 0 && type == MMP__C_LAUNCH;
  free(body);
  mmp__auth_end(&a);
  if (!ok) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Connects as host `index`; 1 if refused with `want`. */
static int peer_refused(const char *addr, const uint8_t *key, uint32_t index,
                        const char *want) {
  int fd = peer_connect(addr), ok;
  mmp__auth_t a;

  if (fd < 0)
    return 0;
  peer_hello(fd, key, index, NULL, &a);
  ok = peer_expect_error(fd, want);
  close(fd);
  return ok;
}

/* Sends recorded handshake bytes again on a new connection; 1 if refused
 * with `want`. */
static int peer_replay(const char *addr, const uint8_t *bytes, size_t n,
                       const char *want) {
  int fd = peer_connect(addr), ok;

  if (fd < 0)
    return 0;
  peer_write(fd, bytes, n);
  ok = peer_expect_error(fd, want);
  close(fd);
  return ok;
}

/* Waits for the agent to write the control address it was given. */
static void peer_read_addr(const char *path, char *addr, size_t len) {
  int i;

  addr[0] = '\0';
  for (i = 0; i < 500 && addr[0] == '\0'; i++) {
    FILE *f = fopen(path, "r");
    if (f != NULL) {
      if (fgets(addr, (int)len, f) == NULL || strchr(addr, '\n') == NULL)
        addr[0] = '\0';
      fclose(f);
    }
    usleep(10000);
  }
  addr[strcspn(addr, "\n")] = '\0';
}

/* The steps of a daemon that misbehaves, then of one that does not. */
static void *rm_client(void *arg) {
  rm_client_t *c = arg;
  uint8_t bad_key[MMP__JOB_KEY_LEN] = {0}, type, *body, sent[256];
  mmp__boot_wr_t w;
  char addr[64];
  size_t len, nsent = 0;
  int fd;

  peer_read_addr(c->addrfile, addr, sizeof(addr));
  /* 0: garbage. 1: a wrong key. */
  fd = peer_connect(addr);
  peer_write(fd, "GET / HTTP/1.0\r\n\r\n", 18);
  c->ok[0] = peer_expect_error(fd, "bad magic");
  close(fd);
  c->ok[1] = peer_refused(addr, bad_key, 0, "bad job key");
  /* 2: host 0 gets its LAUNCH, then reports a rank that is not its own. */
  fd = peer_join(addr, test_key, 0, NULL, NULL);
  peer_u32s(fd, MMP__C_EXIT, 1, 0, 0);
  c->ok[2] = fd >= 0 && peer_expect_error(fd, "does not run there");
  close(fd);
  /* 3: host 1 runs rank 1 to its end. */
  fd = peer_join(addr, test_key, 1, sent, &nsent);
  peer_u32s(fd, MMP__C_STARTED, 1, 4711, 0);
  peer_output(fd, 1, 1, "hi\n");
  peer_output(fd, 1, 1, "");
  peer_output(fd, 1, 2, "");
  peer_u32s(fd, MMP__C_EXIT, 1, 3, 0);
  mmp__boot_wr_init(&w);
  peer_send(fd, MMP__C_BYE, &w);
  c->ok[3] = fd >= 0 && peer_recv(fd, &type, &body, &len) == -1;
  close(fd);
  /* 4: host 1 again is not expected any more. */
  c->ok[4] = peer_refused(addr, test_key, 1, "not expected");
  /* 5: host 1's handshake replayed is not even a valid proof: the server's
   * challenge is new (a valid one would be "not expected"). */
  c->ok[5] = nsent > 0 && peer_replay(addr, sent, nsent, "bad job key");
  /* 6: host 2 holds the key but runs another minimprun version. */
  fd = peer_connect(addr);
  if (fd >= 0) {
    mmp__auth_t a;
    peer_hello_v(fd, test_key, 2, "9.9.9-other", NULL, &a);
    c->ok[6] = peer_expect_error(fd, "version differs");
    mmp__auth_end(&a);
    close(fd);
  }
  atomic_store(&c->done, 1);
  return NULL;
}

static void rm_encode(mmp__remote_host_t *h, int rank) {
  char *argv[] = {"prog", NULL}, *env[] = {NULL};
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__ctrl_launch_begin(&w, 0, "/", argv, env, 1);
  mmp__ctrl_launch_rank(&w, rank, 0, env, 0);
  assert_int_equal(mmp__ctrl_finish(&w, MMP__C_LAUNCH), 0);
  h->launch = w.buf;
  h->launch_len = w.len;
}

static void test_remote_server_checks_daemons(void **state) {
  static const int r0[] = {0}, r1[] = {1}, r2[] = {2};
  static const mmp__remote_cb_t cbs = {NULL,        seen_started, seen_output,
                                       seen_exited, seen_lost,    seen_agent};
  rm_client_t c;
  rm_seen_t seen;
  mmp__remote_cb_t cb = cbs;
  mmp__remote_host_t hosts[3];
  mmp__remote_opts_t o;
  mmp__remote_t *rm = NULL;
  struct sockaddr_in lo;
  char script[160];
  char *agent[] = {"/bin/sh", "-c", script, "sh", NULL};
  uv_loop_t loop;
  pthread_t th;
  int i;
  (void)state;

  memset(&c, 0, sizeof(c));
  memset(&seen, 0, sizeof(seen));
  snprintf(c.addrfile, sizeof(c.addrfile), "/tmp/mmp-ctrl-%d", (int)getpid());
  unlink(c.addrfile);
  /* An agent that records the address and never starts a daemon. */
  snprintf(script, sizeof(script), "echo \"$4\" > %s; exec sleep 30",
           c.addrfile);
  memset(hosts, 0, sizeof(hosts));
  hosts[0].name = "hA";
  hosts[0].id = 0;
  hosts[0].ranks = r0;
  hosts[0].nranks = 1;
  rm_encode(&hosts[0], 0);
  hosts[1].name = "hB";
  hosts[1].id = 1;
  hosts[1].ranks = r1;
  hosts[1].nranks = 1;
  rm_encode(&hosts[1], 1);
  hosts[2].name = "hC";
  hosts[2].id = 2;
  hosts[2].ranks = r2;
  hosts[2].nranks = 1;
  rm_encode(&hosts[2], 2);
  uv_ip4_addr("127.0.0.1", 0, &lo);
  memset(&o, 0, sizeof(o));
  o.addr = (struct sockaddr *)&lo;
  o.key = test_key;
  o.agent = agent;
  o.launcher = "/nonexistent/minimprun";
  o.stdin_rank = -1;
  cb.ctx = &seen;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(mmp__remote_start(&loop, &o, hosts, 3, &cb, &rm), 0);
  assert_int_equal(pthread_create(&th, NULL, rm_client, &c), 0);
  for (i = 0; i < 2000 && !atomic_load(&c.done); i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(2000);
  }
  pthread_join(th, NULL);
  for (i = 0; i < 50; i++) { /* what the last writes caused */
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(2000);
  }
  for (i = 0; i < 7; i++)
    if (!c.ok[i])
      fail_msg("client step %d failed", i);
  assert_int_equal(seen.lost[0], 1);
  assert_non_null(strstr(seen.lost_msg[0], "lost contact with host hA (rank "
                                           "0): protocol violation"));
  assert_int_equal(seen.lost[1], 0);
  assert_int_equal(seen.lost[2], 1);
  assert_string_equal(seen.lost_msg[2],
                      "cannot start on host hC: minimprun there "
                      "('/nonexistent/minimprun') is version 9.9.9-other, "
                      "this one " MMP__LAUNCHER_VERSION
                      "; install the same version on every host, or give "
                      "--launcher");
  assert_int_equal(seen.started_rank, 1);
  assert_int_equal(seen.started_pid, 4711);
  assert_string_equal(seen.output, "hi\n");
  assert_int_equal(seen.exited_rank, 1);
  assert_int_equal(seen.exited_status, 3);
  /* The agents still "run": stop sends them SIGTERM, and the loop ends
   * once they are gone. */
  mmp__remote_stop(rm);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  unlink(c.addrfile);
}

/* ---- The daemon, from minimprun's side ---------------------------------- */

typedef struct daemon_run_s {
  pid_t pid;
  int listen_fd;
  int fd; /* the daemon's connection */
  char err[4096];
  int errfd;
} daemon_run_t;

/* Starts "minimprun --daemon 127.0.0.1:PORT 0" with the key on its stdin
 * and accepts its connection. */
static void daemon_start(daemon_run_t *d) {
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  posix_spawn_file_actions_t fa;
  char addr[64], keyline[40], errpath[] = "/tmp/mmp-dmn-err-XXXXXX";
  char *argv[] = {(char *)minimprun, "--daemon", addr, "0", NULL};
  int in[2];

  d->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(d->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  assert_int_equal(listen(d->listen_fd, 4), 0);
  assert_int_equal(getsockname(d->listen_fd, (struct sockaddr *)&sa, &sl), 0);
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
  assert_int_equal(pipe(in), 0);
  d->errfd = mkstemp(errpath);
  assert_true(d->errfd >= 0);
  unlink(errpath);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, d->errfd, 2);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  assert_int_equal(posix_spawn(&d->pid, minimprun, &fa, NULL, argv, environ),
                   0);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  mmp__hex_encode(test_key, MMP__JOB_KEY_LEN, keyline);
  strcat(keyline, "\n");
  assert_int_equal(write(in[1], keyline, strlen(keyline)),
                   (int)strlen(keyline));
  close(in[1]);
  {
    struct pollfd p = {d->listen_fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 10000), 1);
  }
  d->fd = accept(d->listen_fd, NULL, NULL);
  assert_true(d->fd >= 0);
}

/* Waits for the daemon's exit code; reads what it wrote on stderr. */
static int daemon_wait(daemon_run_t *d) {
  int st = 0, i;
  ssize_t n;

  for (i = 0; i < 1000 && waitpid(d->pid, &st, WNOHANG) == 0; i++)
    usleep(10000);
  if (i == 1000) {
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &st, 0);
  }
  n = pread(d->errfd, d->err, sizeof(d->err) - 1, 0);
  d->err[n > 0 ? n : 0] = '\0';
  close(d->errfd);
  close(d->fd);
  close(d->listen_fd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* minimprun's side of the handshake with the daemon: its HELLO (without
 * the key), our CHALLENGE with `flags`, its PROOF (checked), then our
 * WELCOME, whose proof is made with `key` (the daemon must refuse a wrong
 * one). */
static void daemon_handshake_flags(daemon_run_t *d, const uint8_t *key,
                                   uint32_t flags) {
  uint8_t type, *body, nonce[MMP__CTRL_CHALLENGE_LEN], mac[MMP__MAC_LEN];
  mmp__auth_t a, mine;
  mmp__boot_wr_t w;
  size_t len;

  assert_int_equal(peer_recv(d->fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_HELLO);
  assert_true(len > MMP__NONCE_LEN + 8);
  assert_int_equal(mmp__get_u32(body + MMP__NONCE_LEN), 0); /* index */
  /* It ends with the daemon's version. */
  assert_memory_equal(body + len - strlen(MMP__LAUNCHER_VERSION),
                      MMP__LAUNCHER_VERSION, strlen(MMP__LAUNCHER_VERSION));
  assert_null(memmem(body, len, test_key, 6));
  mmp__auth_nonce(nonce);
  mmp__put_u32(nonce + MMP__NONCE_LEN, flags);
  mmp__auth_begin(&a, test_key, MMP__AUTH_CTRL, body, len, nonce,
                  sizeof(nonce));
  mmp__auth_begin(&mine, key, MMP__AUTH_CTRL, body, len, nonce, sizeof(nonce));
  free(body);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
  peer_send(d->fd, MMP__C_CHALLENGE, &w);
  assert_int_equal(peer_recv(d->fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_PROOF);
  assert_int_equal(len, MMP__MAC_LEN);
  assert_true(mmp__auth_check(&a, MMP__AUTH_DIALER, MMP__AUTH_PROVE, body));
  free(body);
  mmp__auth_mac(&mine, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, mac);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, mac, sizeof(mac));
  peer_send(d->fd, MMP__C_WELCOME, &w);
  mmp__auth_end(&a);
  mmp__auth_end(&mine);
}

static void daemon_handshake_with(daemon_run_t *d, const uint8_t *key) {
  daemon_handshake_flags(d, key, 0);
}

static void daemon_expect_hello(daemon_run_t *d) {
  daemon_handshake_with(d, test_key);
}

/* Sends a LAUNCH of rank 5 running `argv` in `cwd` under launch `flags`;
 * its environment holds no key. */
static void daemon_launch_in(daemon_run_t *d, char **argv, unsigned flags,
                             const char *cwd) {
  char *env[] = {"MMP_TEST_FROM_LAUNCH=yes", NULL};
  char *vars[] = {"MINIMP_RANK=5", NULL};
  mmp__boot_wr_t w;

  mmp__boot_wr_init(&w);
  mmp__ctrl_launch_begin(&w, flags, cwd, argv, env, 1);
  mmp__ctrl_launch_rank(&w, 5, 0, vars, 1);
  assert_null(memmem(w.buf, w.len, "MINIMP_JOB_KEY=", 15));
  peer_send(d->fd, MMP__C_LAUNCH, &w);
}

/* A directory that does not exist: the daemon falls back to $HOME. */
static void daemon_launch(daemon_run_t *d, char **argv) {
  daemon_launch_in(d, argv, 0, "/nonexistent/dir");
}

/* Reads the daemon's messages until it closes: rank 5's STARTED error in
 * *start_err, its standard output in `out`. Returns whether BYE came. */
static int daemon_collect(daemon_run_t *d, int *start_err, char *out,
                          size_t outlen) {
  uint8_t type, *body;
  size_t len;
  int bye = 0;

  *start_err = -1;
  out[0] = '\0';
  while (peer_recv(d->fd, &type, &body, &len) == 0) {
    if (type == MMP__C_STARTED && mmp__get_u32(body) == 5) {
      *start_err = (int)mmp__get_u32(body + 8);
    } else if (type == MMP__C_OUTPUT && mmp__get_u32(body + 4) == 1) {
      uint32_t n = mmp__get_u32(body + 8);
      if (strlen(out) + n < outlen)
        strncat(out, (char *)body + 12, n);
    } else if (type == MMP__C_BYE) {
      bye = 1;
    }
    free(body);
  }
  return bye;
}

static void test_daemon_refuses_garbage(void **state) {
  daemon_run_t d;
  (void)state;

  daemon_start(&d);
  daemon_expect_hello(&d);
  peer_write(d.fd, "this is not a control message", 29);
  assert_true(peer_expect_error(d.fd, "bad magic"));
  assert_int_equal(daemon_wait(&d), 1);
  assert_non_null(strstr(d.err, "protocol violation: bad magic"));
}

static void test_daemon_refuses_a_server_without_the_key(void **state) {
  uint8_t bad[MMP__JOB_KEY_LEN];
  daemon_run_t d;
  (void)state;

  memcpy(bad, test_key, sizeof(bad));
  bad[7] ^= 0x04;
  daemon_start(&d);
  daemon_handshake_with(&d, bad);
  assert_true(peer_expect_error(d.fd, "does not hold the job key"));
  assert_int_equal(daemon_wait(&d), 1);
  assert_non_null(strstr(d.err, "does not hold the job key"));
}

static void test_daemon_refuses_launch_before_the_proof(void **state) {
  char *argv[] = {"/bin/sh", "-c", "echo ran", NULL};
  uint8_t type, *body;
  size_t len;
  daemon_run_t d;
  (void)state;

  daemon_start(&d);
  assert_int_equal(peer_recv(d.fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_HELLO);
  free(body);
  /* No CHALLENGE, no WELCOME: straight to the program. */
  daemon_launch(&d, argv);
  assert_true(peer_expect_error(d.fd, "before minimprun proved the job key"));
  assert_int_equal(daemon_wait(&d), 1);
}

/* A CHALLENGE with a flag this version does not know is refused. */
static void test_daemon_refuses_unknown_challenge_flags(void **state) {
  uint8_t type, *body, nonce[MMP__CTRL_CHALLENGE_LEN];
  mmp__boot_wr_t w;
  size_t len;
  daemon_run_t d;
  (void)state;

  daemon_start(&d);
  assert_int_equal(peer_recv(d.fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_HELLO);
  free(body);
  mmp__auth_nonce(nonce);
  mmp__put_u32(nonce + MMP__NONCE_LEN, MMP__CTRL_SEAL << 1);
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
  peer_send(d.fd, MMP__C_CHALLENGE, &w);
  assert_true(peer_expect_error(d.fd, "unknown flags"));
  assert_int_equal(daemon_wait(&d), 1);
}

/* Once CHALLENGE said MMP__CTRL_SEAL, a LAUNCH in clear after WELCOME (an
 * injection after the handshake) is refused, and nothing runs. */
static void test_daemon_sealed_refuses_a_clear_launch(void **state) {
  char mark[64], cmd[96];
  char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  daemon_run_t d;
  (void)state;

  snprintf(mark, sizeof(mark), "/tmp/mmp-ctrl-sealed-%ld", (long)getpid());
  snprintf(cmd, sizeof(cmd), "touch %s", mark);
  unlink(mark);
  daemon_start(&d);
  daemon_handshake_flags(&d, test_key, MMP__CTRL_SEAL);
  daemon_launch(&d, argv);
  assert_int_equal(daemon_wait(&d), 1);
  assert_non_null(strstr(d.err, "sealed record"));
  assert_int_equal(access(mark, F_OK), -1);
}

static void test_daemon_runs_a_rank_and_says_bye(void **state) {
  char *argv[] = {"/bin/sh", "-c",
                  "echo $MINIMP_RANK $MMP_TEST_FROM_LAUNCH $MINIMP_JOB_KEY; "
                  "echo oops >&2; exit 3",
                  NULL};
  char out[64] = "", err[64] = "", want[64], hex[2 * MMP__JOB_KEY_LEN + 1];
  uint8_t type, *body;
  size_t len;
  daemon_run_t d;
  int started = 0, exits = 0, eofs = 0, bye = 0;
  (void)state;

  daemon_start(&d);
  daemon_expect_hello(&d);
  daemon_launch(&d, argv);
  while (peer_recv(d.fd, &type, &body, &len) == 0) {
    if (type == MMP__C_STARTED) {
      started = mmp__get_u32(body) == 5 && mmp__get_u32(body + 4) > 0 &&
                mmp__get_u32(body + 8) == 0;
    } else if (type == MMP__C_OUTPUT) {
      uint32_t n = mmp__get_u32(body + 8);
      char *dst = mmp__get_u32(body + 4) == 1 ? out : err;
      if (n == 0)
        eofs++;
      else if (strlen(dst) + n < sizeof(out))
        strncat(dst, (char *)body + 12, n);
    } else if (type == MMP__C_EXIT) {
      exits += mmp__get_u32(body) == 5 && mmp__get_u32(body + 4) == 3 &&
               mmp__get_u32(body + 8) == 0;
    } else if (type == MMP__C_BYE) {
      bye = 1;
    }
    free(body);
  }
  assert_int_equal(daemon_wait(&d), 0);
  assert_true(started);
  assert_int_equal(exits, 1);
  assert_int_equal(eofs, 2);
  assert_true(bye);
  /* The rank got the key from its daemon, not from the LAUNCH. */
  mmp__hex_encode(test_key, MMP__JOB_KEY_LEN, hex);
  snprintf(want, sizeof(want), "5 yes %s\n", hex);
  assert_string_equal(out, want);
  assert_string_equal(err, "oops\n");
}

/* launch's flags and sec's key handling together: the rank runs in the
 * --wdir the LAUNCH names, the daemon reports its binding, and the key the
 * rank sees is the one the daemon read from its agent. */
static void test_daemon_runs_a_rank_in_its_wdir_with_the_key(void **state) {
  char *argv[] = {"/bin/sh", "-c", "echo $(pwd -P) $MINIMP_JOB_KEY", NULL};
  char dir[] = "/tmp/mmp-wdir-XXXXXX", real[PATH_MAX], out[PATH_MAX + 80];
  char want[PATH_MAX + 80], hex[2 * MMP__JOB_KEY_LEN + 1];
  daemon_run_t d;
  int err;
  (void)state;

  assert_non_null(mkdtemp(dir));
  assert_non_null(realpath(dir, real));
  daemon_start(&d);
  daemon_expect_hello(&d);
  daemon_launch_in(
      &d, argv, MMP__CTRL_LAUNCH_WDIR | MMP__CTRL_LAUNCH_REPORT_BINDINGS, dir);
  assert_true(daemon_collect(&d, &err, out, sizeof(out)));
  assert_int_equal(daemon_wait(&d), 0);
  rmdir(dir);
  assert_int_equal(err, 0);
  mmp__hex_encode(test_key, MMP__JOB_KEY_LEN, hex);
  snprintf(want, sizeof(want), "%s %s\n", real, hex);
  assert_string_equal(out, want);
  assert_non_null(strstr(d.err, "MCW rank 5 is not bound"));
}

/* A --wdir missing on the daemon's host has no fallback: the rank does
 * not start (UV_ENOENT in STARTED), and the daemon says which directory. */
static void test_daemon_missing_wdir_fails_the_start(void **state) {
  char *argv[] = {"/bin/true", NULL};
  char out[64];
  daemon_run_t d;
  int err;
  (void)state;

  daemon_start(&d);
  daemon_expect_hello(&d);
  daemon_launch_in(&d, argv, MMP__CTRL_LAUNCH_WDIR, "/nonexistent/wdir");
  assert_true(daemon_collect(&d, &err, out, sizeof(out)));
  assert_int_equal(daemon_wait(&d), 0);
  assert_int_equal(err, UV_ENOENT);
  assert_string_equal(out, "");
  assert_non_null(strstr(d.err, "--wdir '/nonexistent/wdir'"));
}

static void test_daemon_stops_its_rank_when_contact_is_lost(void **state) {
  char *argv[] = {"/bin/sleep", "60", NULL};
  uint8_t type, *body;
  size_t len;
  daemon_run_t d;
  pid_t rank = 0;
  (void)state;

  daemon_start(&d);
  daemon_expect_hello(&d);
  daemon_launch(&d, argv);
  assert_int_equal(peer_recv(d.fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_STARTED);
  rank = (pid_t)mmp__get_u32(body + 4);
  free(body);
  assert_true(rank > 0);
  assert_int_equal(kill(rank, 0), 0);
  /* minimprun "dies": the daemon stops the rank and exits 1. */
  shutdown(d.fd, SHUT_RDWR);
  assert_int_equal(daemon_wait(&d), 1);
  assert_non_null(strstr(d.err, "lost contact with minimprun"));
  errno = 0;
  assert_int_equal(kill(rank, 0), -1);
  assert_int_equal(errno, ESRCH);
}

static void test_daemon_killed_takes_its_rank_along(void **state) {
  char *argv[] = {"sleep", "60", NULL};
  uint8_t type, *body;
  size_t len;
  daemon_run_t d;
  pid_t rank;
  int i;
  (void)state;

  daemon_start(&d);
  daemon_expect_hello(&d);
  daemon_launch(&d, argv); /* found on PATH */
  assert_int_equal(peer_recv(d.fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_STARTED);
  rank = (pid_t)mmp__get_u32(body + 4);
  assert_int_equal(mmp__get_u32(body + 8), 0);
  free(body);
  /* The shim has become the program by now, or soon. */
  for (i = 0; i < 200; i++) {
    char path[64], comm[64] = "";
    FILE *f;
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)rank);
    f = fopen(path, "r");
    if (f != NULL) {
      if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
      fclose(f);
    }
    if (strcmp(comm, "sleep\n") == 0)
      break;
    usleep(10000);
  }
  assert_true(i < 200);
  /* SIGKILL leaves the daemon no chance; the kernel stops the rank. */
  kill(d.pid, SIGKILL);
  assert_int_equal(daemon_wait(&d), 128 + SIGKILL);
  for (i = 0; i < 200 && kill(rank, 0) == 0; i++)
    usleep(10000);
  assert_int_equal(kill(rank, 0), -1);
  /* A missing program is a failed start, not a rank exiting 127. */
  daemon_start(&d);
  daemon_expect_hello(&d);
  argv[0] = "no-such-program-here";
  daemon_launch(&d, argv);
  assert_int_equal(peer_recv(d.fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_STARTED);
  assert_int_equal((int32_t)mmp__get_u32(body + 8), UV_ENOENT);
  free(body);
  assert_int_equal(peer_recv(d.fd, &type, &body, &len), 0);
  assert_int_equal(type, MMP__C_BYE);
  free(body);
  assert_int_equal(daemon_wait(&d), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ctrl_header_checks),
      cmocka_unit_test(test_ctrl_launch_round_trip),
      cmocka_unit_test(test_ctrl_launch_rejects_malformed),
      cmocka_unit_test(test_remote_server_checks_daemons),
      cmocka_unit_test(test_daemon_refuses_garbage),
      cmocka_unit_test(test_daemon_refuses_a_server_without_the_key),
      cmocka_unit_test(test_daemon_refuses_launch_before_the_proof),
      cmocka_unit_test(test_daemon_refuses_unknown_challenge_flags),
      cmocka_unit_test(test_daemon_sealed_refuses_a_clear_launch),
      cmocka_unit_test(test_daemon_runs_a_rank_and_says_bye),
      cmocka_unit_test(test_daemon_runs_a_rank_in_its_wdir_with_the_key),
      cmocka_unit_test(test_daemon_missing_wdir_fails_the_start),
      cmocka_unit_test(test_daemon_stops_its_rank_when_contact_is_lost),
      cmocka_unit_test(test_daemon_killed_takes_its_rank_along),
  };

  if (argc != 2) {
    fprintf(stderr, "usage: %s MINIMPRUN\n", argv[0]);
    return 2;
  }
  minimprun = argv[1];
  signal(SIGPIPE, SIG_IGN);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
