/* SPDX-License-Identifier: MIT */
/*
 * The helpers of fuzz.h: the invariant failure report, the choice reader
 * and the byte buffer. Linked into every harness, with libFuzzer or with
 * the replayer.
 */
#include "fuzz.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Deterministic random numbers for libsodium ------------------------ */

static uint64_t fuzz_rng = 1;

static uint32_t fuzz_rng_next(void) {
  /* splitmix64 */
  uint64_t z = (fuzz_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static const char *fuzz_rng_name(void) {
  return "fuzz";
}

static void fuzz_rng_buf(void *const buf, const size_t n) {
  uint8_t *p = buf;
  size_t i;

  for (i = 0; i < n; i++)
    p[i] = (uint8_t)fuzz_rng_next();
}

static struct randombytes_implementation fuzz_rng_impl = {
    fuzz_rng_name, fuzz_rng_next, NULL, NULL, fuzz_rng_buf, NULL};

__attribute__((constructor)) static void fuzz_rng_install(void) {
  randombytes_set_implementation(&fuzz_rng_impl);
  if (sodium_init() < 0)
    abort();
}

void fuzz_random_reset(void) {
  fuzz_rng = 1;
}

/* Under a sanitizer, its report channel: libFuzzer keeps that one open when
 * -close_fd_mask=3 silences what the code under test prints (run.sh). */
extern void __sanitizer_report_error_summary(const char *summary)
    __attribute__((weak));

void fuzz_fail(const char *file, int line, const char *what) {
  char msg[512];

  snprintf(msg, sizeof(msg), "%s:%d: invariant failed: %s", file, line, what);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
  if (__sanitizer_report_error_summary != NULL)
    __sanitizer_report_error_summary(msg);
  abort();
}

void fuzz_in_init(fuzz_in_t *in, const uint8_t *data, size_t size) {
  in->p = data;
  in->left = size;
}

uint8_t fuzz_u8(fuzz_in_t *in) {
  if (in->left == 0)
    return 0;
  in->left--;
  return *in->p++;
}

uint16_t fuzz_u16(fuzz_in_t *in) {
  uint16_t lo = fuzz_u8(in);
  return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

uint32_t fuzz_u32(fuzz_in_t *in) {
  uint32_t lo = fuzz_u16(in);
  return lo | (uint32_t)fuzz_u16(in) << 16;
}

uint32_t fuzz_below(fuzz_in_t *in, uint32_t n) {
  if (n <= 1)
    return 0;
  return (n <= 256 ? fuzz_u8(in) : fuzz_u32(in)) % n;
}

size_t fuzz_bytes(fuzz_in_t *in, const uint8_t **p, size_t max) {
  size_t n = fuzz_u16(in);

  if (n > max)
    n = max;
  if (n > in->left)
    n = in->left;
  *p = in->p;
  in->p += n;
  in->left -= n;
  return n;
}

void fuzz_buf_put(fuzz_buf_t *b, const void *data, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap != 0 ? b->cap : 256;
    while (cap < b->len + n)
      cap *= 2;
    b->p = realloc(b->p, cap);
    if (b->p == NULL)
      abort();
    b->cap = cap;
  }
  if (n > 0)
    memcpy(b->p + b->len, data, n);
  b->len += n;
}

void fuzz_buf_u8(fuzz_buf_t *b, uint8_t v) {
  fuzz_buf_put(b, &v, 1);
}

void fuzz_buf_u16(fuzz_buf_t *b, uint16_t v) {
  uint8_t le[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  fuzz_buf_put(b, le, 2);
}

void fuzz_buf_u32(fuzz_buf_t *b, uint32_t v) {
  fuzz_buf_u16(b, (uint16_t)v);
  fuzz_buf_u16(b, (uint16_t)(v >> 16));
}

void fuzz_buf_bytes(fuzz_buf_t *b, const void *data, size_t n) {
  if (n > UINT16_MAX)
    abort(); /* a seed too long for its length field */
  fuzz_buf_u16(b, (uint16_t)n);
  fuzz_buf_put(b, data, n);
}

void fuzz_buf_op(fuzz_buf_t *b, int op, int pick, int arg) {
  fuzz_buf_u8(b, (uint8_t)op);
  fuzz_buf_u8(b, (uint8_t)pick);
  fuzz_buf_u8(b, (uint8_t)arg);
}

void fuzz_buf_free(fuzz_buf_t *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

int fuzz_buf_equal(const fuzz_buf_t *a, const fuzz_buf_t *b) {
  return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}
