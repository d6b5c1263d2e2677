/* SPDX-License-Identifier: MIT */
/*
 * How fast one core seals and opens a stream (transport/auth.c): the
 * bound that sealing puts on a connection's rate, to read beside
 * run_encrypt.sh's figures on the same machine. Seals a 4 MiB message
 * into 32 KiB records, opens them again, checks the bytes, and prints the
 * median rate of each over REPEATS rounds in MB/s (10^6 bytes).
 *   seal-rate [REPEATS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/auth.h"

#define MSG (4u << 20)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 9;
  uint64_t wire = mmp__seal_size(MSG);
  uint8_t *plain = malloc(MSG), *sealed = malloc(wire), *back = malloc(MSG);
  uint8_t *scratch = malloc(MMP__REC_MAX);
  double *rs = calloc((size_t)(reps > 0 ? reps : 1), sizeof(double));
  double *ro = calloc((size_t)(reps > 0 ? reps : 1), sizeof(double));
  mmp__seal_t tx, rx;

  if (reps <= 0 || plain == NULL || sealed == NULL || back == NULL ||
      scratch == NULL || rs == NULL || ro == NULL || mmp__auth_init() != 0) {
    fprintf(stderr, "usage: seal-rate [REPEATS > 0]\n");
    return 2;
  }
  for (size_t i = 0; i < MSG; i++)
    plain[i] = (uint8_t)(i * 131u + 7u);
  memset(&tx, 0, sizeof(tx));
  mmp__auth_nonce(tx.key); /* any 32 bytes make a key */
  rx = tx;
  for (int r = 0; r < reps; r++) {
    struct iovec iov = {plain, MSG};
    size_t at = 0, out = 0;
    double t0 = now(), t1;

    mmp__seal(&tx, &iov, 1, MSG, sealed, scratch);
    t1 = now();
    while (at < wire) {
      const char *why = NULL;
      size_t got = 0;
      long used =
          mmp__open(&rx, sealed + at, wire - at, back + out, &got, &why);
      if (used <= 0) {
        fprintf(stderr, "seal-rate: a record does not open: %s\n",
                why != NULL ? why : "incomplete");
        return 1;
      }
      at += (size_t)used;
      out += got;
    }
    ro[r] = MSG / (now() - t1) / 1e6;
    rs[r] = MSG / (t1 - t0) / 1e6;
    if (out != MSG || memcmp(back, plain, MSG) != 0) {
      fprintf(stderr, "seal-rate: the bytes differ\n");
      return 1;
    }
  }
  qsort(rs, (size_t)reps, sizeof(double), cmp);
  qsort(ro, (size_t)reps, sizeof(double), cmp);
  printf("seal_MBps %.0f\nopen_MBps %.0f\n", rs[reps / 2], ro[reps / 2]);
  free(plain);
  free(sealed);
  free(back);
  free(scratch);
  free(rs);
  free(ro);
  return 0;
}
