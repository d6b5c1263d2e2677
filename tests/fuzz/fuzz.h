/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz harnesses of tests/fuzz/ share. Each harness is one file
 * that defines LLVMFuzzerTestOneInput() and fuzz_seeds(); the same file is
 * linked with libFuzzer (a -Dfuzz=true build, see docs/testing.md) or
 * with replay.c, a small main that feeds it the files of its corpus, so
 * that every build regression-tests the decoders on the corpus.
 *
 * A harness checks invariants with FUZZ_CHECK, which reports the failed
 * condition and aborts; libFuzzer and the replayer both treat that as a
 * crash. The fuzz_in_t reader turns the input into the choices of a
 * structured harness: it never fails, and yields zeros once the input is
 * used up, so every input, however short, is a valid program.
 */
#ifndef MMP_TESTS_FUZZ_H
#define MMP_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The entry point of every harness (libFuzzer's name). Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where a harness's seed inputs go: `name` is a short file name without
 * directory ("hello-ok"), `data` its `len` bytes. */
typedef void (*fuzz_emit_fn)(const char *name, const void *data, size_t len);

/* Every harness defines it: writes its hand-made seed inputs through
 * `emit` (tests/fuzz/gen_corpus.sh stores them as corpus/NAME/seed-*). */
void fuzz_seeds(fuzz_emit_fn emit);

/* Reports "FILE:LINE: invariant failed: WHAT" on stderr and aborts. */
_Noreturn void fuzz_fail(const char *file, int line, const char *what);

#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      fuzz_fail(__FILE__, __LINE__, #cond);                                    \
  } while (0)

/* A cursor over the input, read as a sequence of choices. */
typedef struct fuzz_in_s {
  const uint8_t *p;
  size_t left;
} fuzz_in_t;

void fuzz_in_init(fuzz_in_t *in, const uint8_t *data, size_t size);
uint8_t fuzz_u8(fuzz_in_t *in);
uint16_t fuzz_u16(fuzz_in_t *in);
uint32_t fuzz_u32(fuzz_in_t *in);
/* A number in [0, n) for n >= 1. */
uint32_t fuzz_below(fuzz_in_t *in, uint32_t n);
/* Points *p at up to `max` bytes of the input (a u16 length first; fewer
 * if the input ends) and returns how many. */
size_t fuzz_bytes(fuzz_in_t *in, const uint8_t **p, size_t max);

/* A growable byte buffer for seeds and for what a harness records. */
typedef struct fuzz_buf_s {
  uint8_t *p;
  size_t len;
  size_t cap;
} fuzz_buf_t;

void fuzz_buf_put(fuzz_buf_t *b, const void *data, size_t n);
void fuzz_buf_u8(fuzz_buf_t *b, uint8_t v);
void fuzz_buf_u16(fuzz_buf_t *b, uint16_t v);
void fuzz_buf_u32(fuzz_buf_t *b, uint32_t v);
/* A u16 length, then the bytes: what fuzz_bytes() reads back. */
void fuzz_buf_bytes(fuzz_buf_t *b, const void *data, size_t n);
/* An action of a structured harness in a seed: three bytes, the action,
 * which connection or process it picks, and its small argument. */
void fuzz_buf_op(fuzz_buf_t *b, int op, int pick, int arg);
void fuzz_buf_free(fuzz_buf_t *b);
/* 1 if both hold the same bytes. */
int fuzz_buf_equal(const fuzz_buf_t *a, const fuzz_buf_t *b);

/* libsodium's random numbers, made a fixed sequence for every harness (a
 * constructor installs it before anything calls sodium_init), so that the
 * nonces of the v2 handshakes replay exactly. fuzz_random_reset() restarts
 * the sequence; harnesses that handshake call it per input. */
void fuzz_random_reset(void);

#endif /* MMP_TESTS_FUZZ_H */
