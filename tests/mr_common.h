/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the multi-rank tests, which minimprun starts as N
 * processes. Each process runs the same cmocka group in lockstep; with
 * CMOCKA_TEST_ABORT=1 (set by meson) a failed assertion aborts the rank, so
 * minimprun stops the job at once instead of letting the others hang.
 */
#ifndef MMP_TESTS_MR_COMMON_H
#define MMP_TESTS_MR_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "minimp.h"

/* splitmix64: a deterministic stream every rank can reproduce. */
static inline uint64_t mr_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline void mr_fill(void *buf, size_t n, uint64_t seed) {
  uint8_t *b = buf;
  size_t i;

  for (i = 0; i + 8 <= n; i += 8) {
    uint64_t v = mr_next(&seed);
    for (int k = 0; k < 8; k++)
      b[i + (size_t)k] = (uint8_t)(v >> (8 * k));
  }
  if (i < n) {
    uint64_t v = mr_next(&seed);
    for (; i < n; i++, v >>= 8)
      b[i] = (uint8_t)v;
  }
}

/* FNV-1a, 64 bit. */
static inline uint64_t mr_checksum(const void *buf, size_t n) {
  const uint8_t *b = buf;
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i;

  for (i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* 1 when the job runs with MINIMP_SHM=off: the shm collectives are
 * refused (MMP_ENOTSUP on every rank). */
static inline int mr_shm_off(void) {
  const char *v = getenv("MINIMP_SHM");
  return v != NULL && v[0] == 'o' && v[1] == 'f' && v[2] == 'f' && !v[3];
}

static inline int mr_rank(void) {
  return mmp_comm_rank(mmp_comm_world());
}
static inline int mr_size(void) {
  return mmp_comm_size(mmp_comm_world());
}

/* For the programs that cluster scripts run rather than cmocka (the
 * script reads their output): prints "rank N: FAILED cond: ..." and exits
 * 2, which minimprun reports and turns into the job's failure. */
#define MR_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("rank %d: FAILED %s: ", mr_rank(), #cond);                        \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
      fflush(stdout);                                                          \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

/* A barrier built from point-to-point messages (tag reserved for it). */
#define MR_BARRIER_TAG 999999
static inline int mr_barrier(void) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size(), i, rc = 0;

  if (r == 0) {
    for (i = 1; i < p; i++)
      rc |= mmp_recv(NULL, 0, MMP_ANY_SOURCE, MR_BARRIER_TAG, w, NULL);
    for (i = 1; i < p; i++)
      rc |= mmp_send(NULL, 0, i, MR_BARRIER_TAG, w);
  } else {
    rc |= mmp_send(NULL, 0, 0, MR_BARRIER_TAG, w);
    rc |= mmp_recv(NULL, 0, 0, MR_BARRIER_TAG, w, NULL);
  }
  return rc;
}

static inline int mr_setup(void **state) {
  (void)state;
  return mmp_init(NULL, NULL) == 0 ? 0 : -1;
}

static inline int mr_teardown(void **state) {
  (void)state;
  return mmp_finalize() == 0 ? 0 : -1;
}

/* Algorithm number i (0, 1, ...) of collective `coll` (MMP_COLL_*):
 * its name, or NULL past the last; *flags (may be NULL) its MMP_ALG_*.
 * Tests walk the list, so a new algorithm is tested without a change. */
static inline const char *mr_alg(int coll, int i, unsigned *flags) {
  mmp_alg_info_t a;

  if (mmp_coll_algs(coll, i, &a) != 0)
    return NULL;
  if (flags != NULL)
    *flags = a.flags;
  return a.name;
}

/* The options (MMP_OPT_*) algorithm i of `coll` reads; 0 past the last. */
static inline unsigned mr_alg_options(int coll, int i) {
  mmp_alg_info_t a;

  return mmp_coll_algs(coll, i, &a) == 0 ? a.options : 0;
}

/* A number for a name, for seeds. */
static inline uint64_t mr_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;

  while (s != NULL && *s != '\0')
    h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return h;
}

#endif /* MMP_TESTS_MR_COMMON_H */
