/* SPDX-License-Identifier: MIT */
/*
 * Implementation of the shared helpers declared in util.h: logging to
 * stderr with a per-process prefix, strict number parsing for the MINIMP_*
 * environment, hex keys, the libuv-to-MMP error mapping and the record of
 * which thread runs a shared loop.
 */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uv.h>

#include "minimp.h"

_Atomic int mmp__log_level = MMP__LOG_WARN;

static uv_once_t log_once = UV_ONCE_INIT;
static uv_mutex_t log_mutex;
static char log_prefix[64] = "";
/* The sink is read-locked while it runs, so that replacing it (write
 * lock) returns only once no thread is inside the old one. */
static uv_rwlock_t log_sink_lock;
static mmp__log_sink_fn log_sink;
static void *log_sink_arg;
static _Thread_local int log_in_sink;

static void log_init_once(void) {
  if (uv_mutex_init(&log_mutex) != 0 || uv_rwlock_init(&log_sink_lock) != 0)
    abort();
}

int mmp__log_set_sink(mmp__log_sink_fn fn, void *arg) {
  /* Its own write lock would wait for the read lock this thread holds. */
  if (log_in_sink)
    return MMP_EINVAL;
  uv_once(&log_once, log_init_once);
  uv_rwlock_wrlock(&log_sink_lock);
  log_sink = fn;
  log_sink_arg = arg;
  uv_rwlock_wrunlock(&log_sink_lock);
  return 0;
}

void mmp__log_set_prefix(const char *who) {
  uv_once(&log_once, log_init_once);
  uv_mutex_lock(&log_mutex);
  snprintf(log_prefix, sizeof(log_prefix), "%s", who ? who : "");
  uv_mutex_unlock(&log_mutex);
}

void mmp__log(int level, const char *fmt, ...) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  const char *lv = names[level < 0 ? 0 : level > 3 ? 3 : level];
  char line[1024];
  va_list ap;
  int n;

  uv_once(&log_once, log_init_once);
  uv_mutex_lock(&log_mutex);
  /* Before the rank is known, the process id tells the lines apart. */
  if (log_prefix[0] != '\0')
    n = snprintf(line, sizeof(line), "minimp[%s] %s: ", log_prefix, lv);
  else
    n = snprintf(line, sizeof(line), "minimp[pid %ld] %s: ", (long)getpid(),
                 lv);
  uv_mutex_unlock(&log_mutex);
  if (n < 0)
    return;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  uv_rwlock_rdlock(&log_sink_lock);
  if (log_sink != NULL && !log_in_sink) {
    log_in_sink = 1;
    log_sink(level, line + n, log_sink_arg);
    log_in_sink = 0;
  } else {
    /* One fprintf per line keeps lines from different threads whole. */
    fprintf(stderr, "%s\n", line);
  }
  uv_rwlock_rdunlock(&log_sink_lock);
}

/* Its address is the thread's identity. */
static _Thread_local char util_self;
static _Thread_local const uv_loop_t *util_loop_here;
static _Atomic(const uv_loop_t *) util_loop_shared;

uintptr_t mmp__thread_self(void) {
  return (uintptr_t)&util_self;
}

void mmp__loop_share(const uv_loop_t *loop) {
  atomic_store_explicit(&util_loop_shared, loop, memory_order_relaxed);
}

void mmp__loop_enter(const uv_loop_t *loop) {
  assert(util_loop_here == NULL); /* one loop per thread at a time */
  util_loop_here = loop;
}

void mmp__loop_leave(const uv_loop_t *loop) {
  assert(util_loop_here == loop);
  util_loop_here = NULL;
  (void)loop;
}

const uv_loop_t *mmp__loop_current(void) {
  return util_loop_here;
}

int mmp__loop_check(const uv_loop_t *loop) {
  return util_loop_here == loop ||
         atomic_load_explicit(&util_loop_shared, memory_order_relaxed) != loop;
}

int mmp__ratelog_take(mmp__ratelog_t *r, uint64_t now_ms, uint64_t *ended) {
  *ended = 0;
  if (r->logged == 0 || now_ms - r->start_ms >= MMP__RATELOG_INTERVAL_MS) {
    *ended = mmp__ratelog_end(r);
    r->start_ms = now_ms;
  }
  if (r->logged >= MMP__RATELOG_BURST) {
    r->suppressed++;
    return 0;
  }
  r->logged++;
  return 1;
}

uint64_t mmp__ratelog_end(mmp__ratelog_t *r) {
  uint64_t n = r->suppressed;

  r->logged = 0;
  r->suppressed = 0;
  return n;
}

int mmp__parse_size(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;
  uint64_t mult = 1;

  if (s == NULL || *s < '0' || *s > '9')
    return MMP_EINVAL;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0)
    return MMP_EINVAL;
  switch (*end) {
  case '\0':
    break;
  case 'k':
  case 'K':
    mult = 1024;
    end++;
    break;
  case 'm':
  case 'M':
    mult = 1024 * 1024;
    end++;
    break;
  case 'g':
  case 'G':
    mult = 1024 * 1024 * 1024;
    end++;
    break;
  default:
    return MMP_EINVAL;
  }
  if (*end != '\0' || v > UINT64_MAX / mult)
    return MMP_EINVAL;
  *out = (uint64_t)v * mult;
  return 0;
}

int mmp__parse_long(const char *s, long min, long max, long *out) {
  char *end;
  long v;

  if (s == NULL || *s == '\0')
    return MMP_EINVAL;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max)
    return MMP_EINVAL;
  *out = v;
  return 0;
}

void mmp__hex_encode(const uint8_t *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  size_t i;

  for (i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int mmp__hex_decode(const char *in, uint8_t *out, size_t n) {
  size_t i;

  if (in == NULL || strlen(in) != 2 * n)
    return MMP_EINVAL;
  for (i = 0; i < n; i++) {
    int hi = hex_digit(in[2 * i]);
    int lo = hex_digit(in[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return MMP_EINVAL;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

int mmp__ct_equal(const uint8_t *a, const uint8_t *b, size_t n) {
  uint8_t diff = 0;
  size_t i;

  for (i = 0; i < n; i++)
    diff |= (uint8_t)(a[i] ^ b[i]);
  return diff == 0;
}

int mmp__err_from_uv(int uverr) {
  switch (uverr) {
  case 0:
    return 0;
  case UV_ENOMEM:
  case UV_ENOBUFS:
    return MMP_ENOMEM;
  case UV_EINVAL:
    return MMP_EINVAL;
  case UV_ETIMEDOUT:
    return MMP_ETIMEDOUT;
  case UV_ECONNREFUSED:
    return MMP_ECONNREFUSED;
  case UV_EADDRINUSE:
    return MMP_EADDRINUSE;
  case UV_EADDRNOTAVAIL:
  case UV_ENETUNREACH:
  case UV_EHOSTUNREACH:
    return MMP_EADDR;
  case UV_ECONNRESET:
  case UV_EPIPE:
  case UV_EOF:
  case UV_ECONNABORTED:
  case UV_ENOTCONN:
    return MMP_EPEERLOST;
  case UV_ECANCELED:
    return MMP_ECANCELED;
  case UV_EAGAIN:
    return MMP_EAGAIN;
  default:
    return MMP_EIO;
  }
}

/* ---- SipHash-2-4 (Aumasson and Bernstein's reference algorithm) -------- */

#define UTIL_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define UTIL_SIPROUND(v0, v1, v2, v3)                                          \
  do {                                                                         \
    v0 += v1;                                                                  \
    v1 = UTIL_ROTL(v1, 13);                                                    \
    v1 ^= v0;                                                                  \
    v0 = UTIL_ROTL(v0, 32);                                                    \
    v2 += v3;                                                                  \
    v3 = UTIL_ROTL(v3, 16);                                                    \
    v3 ^= v2;                                                                  \
    v0 += v3;                                                                  \
    v3 = UTIL_ROTL(v3, 21);                                                    \
    v3 ^= v0;                                                                  \
    v2 += v1;                                                                  \
    v1 = UTIL_ROTL(v1, 17);                                                    \
    v1 ^= v2;                                                                  \
    v2 = UTIL_ROTL(v2, 32);                                                    \
  } while (0)

uint64_t mmp__siphash(const uint8_t key[16], const void *data, size_t len) {
  const uint8_t *in = data;
  uint64_t k0 = mmp__get_u64(key), k1 = mmp__get_u64(key + 8);
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  uint64_t b = (uint64_t)len << 56, m;
  size_t i, left = len & 7;

  for (i = 0; i + 8 <= len; i += 8) {
    m = mmp__get_u64(in + i);
    v3 ^= m;
    UTIL_SIPROUND(v0, v1, v2, v3);
    UTIL_SIPROUND(v0, v1, v2, v3);
    v0 ^= m;
  }
  for (size_t k = 0; k < left; k++)
    b |= (uint64_t)in[i + k] << (8 * k);
  v3 ^= b;
  UTIL_SIPROUND(v0, v1, v2, v3);
  UTIL_SIPROUND(v0, v1, v2, v3);
  v0 ^= b;
  v2 ^= 0xff;
  for (i = 0; i < 4; i++)
    UTIL_SIPROUND(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

void mmp__shm_names(const uint8_t key[16], int rank,
                    char seg[MMP__SHM_NAME_MAX], char bell[MMP__SHM_NAME_MAX]) {
  uint8_t msg[12] = {'m', 'i', 'n', 'i', 'm', 'p', 's', 'h'};
  unsigned long long h;

  mmp__put_u32(msg + 8, (uint32_t)rank);
  h = (unsigned long long)mmp__siphash(key, msg, sizeof(msg));
  snprintf(seg, MMP__SHM_NAME_MAX, "/minimp-%016llx", h);
  snprintf(bell, MMP__SHM_NAME_MAX, "/dev/shm/minimp-%016llx.bell", h);
}

int mmp__shm_remove(const uint8_t key[16], int rank) {
  char seg[MMP__SHM_NAME_MAX], bell[MMP__SHM_NAME_MAX];
  int n = 0;

  mmp__shm_names(key, rank, seg, bell);
  n += shm_unlink(seg) == 0;
  n += unlink(bell) == 0;
  return n;
}
