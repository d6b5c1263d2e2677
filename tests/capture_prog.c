/* SPDX-License-Identifier: MIT */
/*
 * The job test_capture records: rank 0 prints the job key (through
 * minimprun's pipe, never a socket), then every pair of ranks exchanges
 * messages of 100 bytes and of 70,000 (eager and rendezvous) made of a
 * known marker, and checks what it got. Every other rank prints OUT_MARKER
 * with its rank, which crosses a control connection from the daemons.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "runtime/internal.h"

#define MARKER "capture-marker-5d1e7a"
#define OUT_MARKER "capture-output-3b9f0c"

static void fill(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)MARKER[i % (sizeof(MARKER) - 1)];
}

int main(void) {
  static const size_t sizes[] = {100, 70000};
  uint8_t key[MMP__JOB_KEY_LEN];
  char hex[2 * MMP__JOB_KEY_LEN + 1];
  mmp_comm_t *w;
  int rank, size, bad = 0;

  if (mmp_init(NULL, NULL) != 0)
    return 3;
  w = mmp_comm_world();
  rank = mmp_comm_rank(w);
  size = mmp_comm_size(w);
  if (rank == 0) {
    if (mmp__debug_job_key(key) != 0)
      return 4;
    mmp__hex_encode(key, sizeof(key), hex);
    printf("KEY %s\n", hex);
    fflush(stdout);
  } else {
    printf("%s %d\n", OUT_MARKER, rank);
    fflush(stdout);
  }
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t n = sizes[k];
    uint8_t *out = malloc(n), *in = malloc(n * (size_t)size);
    mmp_request_t **q = calloc(2 * (size_t)size, sizeof(*q));
    int nq = 0;

    fill(out, n);
    for (int j = 0; j < size; j++) {
      if (j == rank)
        continue;
      mmp_irecv(in + (size_t)j * n, n, j, (int)k, w, &q[nq++]);
      mmp_isend(out, n, j, (int)k, w, &q[nq++]);
    }
    if (mmp_waitall((size_t)nq, q, NULL) != 0)
      bad = 1;
    for (int j = 0; j < size; j++)
      if (j != rank && memcmp(in + (size_t)j * n, out, n) != 0)
        bad = 1;
    free(out);
    free(in);
    free(q);
  }
  if (mmp_finalize() != 0)
    return 5;
  return bad ? 6 : 0;
}
