/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by every layer of libminimp: an intrusive doubly
 * linked list, explicit little-endian encoding, logging, environment
 * parsing and the loop-context checks. It lives at the bottom layer
 * (transport/) so that every layer may include it without a dependency pointing
 * upwards.
 */
#ifndef MMP_TRANSPORT_UTIL_H
#define MMP_TRANSPORT_UTIL_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct uv_loop_s;

#define mmp__container_of(ptr, type, member)                                   \
  ((type *)((char *)(ptr)-offsetof(type, member)))

#define MMP__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Intrusive circular list. An empty list points at itself. ---------- */

typedef struct mmp__list_s {
  struct mmp__list_s *next;
  struct mmp__list_s *prev;
} mmp__list_t;

static inline void mmp__list_init(mmp__list_t *l) {
  l->next = l->prev = l;
}

static inline int mmp__list_empty(const mmp__list_t *l) {
  return l->next == l;
}

static inline void mmp__list_insert_tail(mmp__list_t *l, mmp__list_t *n) {
  n->prev = l->prev;
  n->next = l;
  l->prev->next = n;
  l->prev = n;
}

static inline void mmp__list_insert_head(mmp__list_t *l, mmp__list_t *n) {
  n->next = l->next;
  n->prev = l;
  l->next->prev = n;
  l->next = n;
}

static inline void mmp__list_remove(mmp__list_t *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->next = n->prev = n;
}

static inline mmp__list_t *mmp__list_head(const mmp__list_t *l) {
  return l->next == l ? NULL : l->next;
}

#define mmp__list_foreach(it, list)                                            \
  for ((it) = (list)->next; (it) != (list); (it) = (it)->next)

/* Iteration that tolerates removing `it`. */
#define mmp__list_foreach_safe(it, tmp, list)                                  \
  for ((it) = (list)->next, (tmp) = (it)->next; (it) != (list);                \
       (it) = (tmp), (tmp) = (it)->next)

/* ---- Little-endian encoding (the wire is always little-endian). -------- */

static inline void mmp__put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static inline void mmp__put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline void mmp__put_u64(uint8_t *p, uint64_t v) {
  mmp__put_u32(p, (uint32_t)v);
  mmp__put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t mmp__get_u16(const uint8_t *p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t mmp__get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

static inline uint64_t mmp__get_u64(const uint8_t *p) {
  return (uint64_t)mmp__get_u32(p) | ((uint64_t)mmp__get_u32(p + 4) << 32);
}

/* ---- Logging ----------------------------------------------------------- */

enum {
  MMP__LOG_ERROR = 0,
  MMP__LOG_WARN = 1,
  MMP__LOG_INFO = 2,
  MMP__LOG_DEBUG = 3
};

/* Current level; messages above it are dropped. Set from MINIMP_LOG or
 * mmp_set_log_level, read by every thread (hence atomic). */
extern _Atomic int mmp__log_level;

/* Where lines go instead of stderr: fn(level, text without the prefix,
 * arg). Any thread; fn NULL restores stderr. Returns once no thread runs
 * the previous fn; MMP_EINVAL when called from inside a sink. */
typedef void (*mmp__log_sink_fn)(int level, const char *line, void *arg);
int mmp__log_set_sink(mmp__log_sink_fn fn, void *arg);

/* Sets the "[who]" prefix of every line, e.g. "rank 3". Thread-safe. */
void mmp__log_set_prefix(const char *who);

/* Writes one line to stderr: "minimp[rank 3] warn: ...", or "minimp[pid
 * 1234] warn: ..." before a prefix is set. Thread-safe. */
void mmp__log(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#define MMP__LOG(level, ...)                                                   \
  do {                                                                         \
    if ((level) <= mmp__log_level)                                             \
      mmp__log((level), __VA_ARGS__);                                          \
  } while (0)

/*
 * A budget for log lines that strangers can cause (rejected connections):
 * at most MMP__RATELOG_BURST lines per MMP__RATELOG_INTERVAL_MS, then one
 * line counting the rest, so that a flood of connections cannot flood the
 * log. Not thread-safe: each budget belongs to one loop.
 */
#define MMP__RATELOG_BURST 10
#define MMP__RATELOG_INTERVAL_MS 10000

typedef struct mmp__ratelog_s {
  uint64_t start_ms;   /* start of the current interval */
  unsigned logged;     /* lines logged in it */
  uint64_t suppressed; /* lines left out of it */
} mmp__ratelog_t;

/* Returns 1 if one more line may be logged at `now_ms`, else counts it as
 * left out and returns 0. When this call begins a new interval, *ended is
 * set to the number of lines the last one left out (else 0), for the caller
 * to log first. */
int mmp__ratelog_take(mmp__ratelog_t *r, uint64_t now_ms, uint64_t *ended);

/* Ends the current interval; returns the number of lines it left out. */
uint64_t mmp__ratelog_end(mmp__ratelog_t *r);

/* ---- Threads and loop context ------------------------------------------ */

/* A number that identifies the calling thread while it lives; never 0. */
uintptr_t mmp__thread_self(void);

/*
 * Loop context. libuv is single-threaded, so code marked "loop context" may
 * run only in the thread that currently runs its loop. A loop that one
 * thread runs from start to end (minimprun's, a unit test's) needs no
 * bookkeeping. The runtime hands its loop between threads: it declares the
 * loop shared with mmp__loop_share(), and every thread brackets its turn
 * with mmp__loop_enter() and mmp__loop_leave(). MMP__ASSERT_LOOP_OF(loop)
 * then checks, in debug builds, that the caller has the turn.
 */
/* Declares `loop` shared (NULL: none). One shared loop per process. */
void mmp__loop_share(const struct uv_loop_s *loop);
/* The calling thread starts or ends its turn at running `loop`. */
void mmp__loop_enter(const struct uv_loop_s *loop);
void mmp__loop_leave(const struct uv_loop_s *loop);
/* The loop the calling thread is running, or NULL. */
const struct uv_loop_s *mmp__loop_current(void);
/* 1 if the calling thread may call libuv on `loop`. */
int mmp__loop_check(const struct uv_loop_s *loop);

#define MMP__ASSERT_LOOP_OF(loop) assert(mmp__loop_check(loop))

/* ---- Environment and numbers ------------------------------------------- */

/*
 * Parses a decimal size with an optional k/m/g (binary) suffix. Returns 0 or
 * MMP_EINVAL; never writes *out on error.
 */
int mmp__parse_size(const char *s, uint64_t *out);

/* Parses a decimal integer in [min, max]. Returns 0 or MMP_EINVAL. */
int mmp__parse_long(const char *s, long min, long max, long *out);

/* Encodes / decodes a 16-byte key as 32 lowercase hex digits. */
void mmp__hex_encode(const uint8_t *in, size_t n, char *out /* 2n+1 */);
int mmp__hex_decode(const char *in, uint8_t *out, size_t n);

/* Constant-time comparison of two byte strings; 1 if equal. */
int mmp__ct_equal(const uint8_t *a, const uint8_t *b, size_t n);

/* Maps a libuv error (negative errno) to an MMP_E* code. */
int mmp__err_from_uv(int uverr);

/* ---- Keyed hashing and the names derived from a job key ---------------- */

/* SipHash-2-4 of `len` bytes under a 16-byte key. It is a pseudo-random
 * function, so what it derives from a secret key reveals nothing of it. */
uint64_t mmp__siphash(const uint8_t key[16], const void *data, size_t len);

/*
 * The names of the shared-memory objects of rank `rank` in the job with
 * `key` (transport/shm.c): its segment, for shm_open ("/minimp-<hex>"),
 * and its doorbell, a FIFO path under /dev/shm. Derived from the key, so
 * only the job's members can know them, and no two jobs share one. The
 * launcher uses them too, to remove what a rank it stopped may have left.
 */
#define MMP__SHM_NAME_MAX 64
void mmp__shm_names(const uint8_t key[16], int rank,
                    char seg[MMP__SHM_NAME_MAX], char bell[MMP__SHM_NAME_MAX]);

/* Removes both names of `rank`; missing ones are fine. Returns how many
 * existed. */
int mmp__shm_remove(const uint8_t key[16], int rank);

#endif /* MMP_TRANSPORT_UTIL_H */
