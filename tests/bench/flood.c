/* SPDX-License-Identifier: MIT */
/*
 * minimp-flood: what a flood of small messages costs in memory. Rank 0
 * keeps WINDOW non-blocking sends of BYTES bytes in flight to rank 1 (N
 * messages in all); rank 1 receives them in windows of WINDOW. Each of
 * the two prints, as one line, the heap allocated after mmp_init, the
 * peak above it during the flood (glibc's count, sampled every 200 us
 * and after every window), the growth of the [heap] mapping of
 * /proc/self/smaps, and the flood's rate. docs/design/transport.md ("Memory")
 * and docs/performance.md quote it.
 *
 *   minimprun -n 2 minimp-flood [N [WINDOW [BYTES]]]
 *   (defaults 1000000 500 8)
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../heap_util.h"
#include "minimp.h"

/* The size of the [heap] mapping, bytes; 0 if there is none. */
static uint64_t heap_mapping(void) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[256];
  int in = 0;
  uint64_t kib = 0;

  if (f == NULL)
    return 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    /* A mapping's first line starts with its address, its fields with
     * a capitalised name. */
    if (!isupper((unsigned char)line[0])) {
      in = strstr(line, "[heap]") != NULL;
      continue;
    }
    if (in && strncmp(line, "Size:", 5) == 0) {
      kib = strtoull(line + 5, NULL, 10);
      break;
    }
  }
  fclose(f);
  return kib * 1024;
}

static int check(int rc, const char *what) {
  if (rc != 0) {
    fprintf(stderr, "minimp-flood: %s: %s\n", what, mmp_strerror(rc));
    exit(1);
  }
  return rc;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  int window = argc > 2 ? atoi(argv[2]) : 500;
  size_t bytes = argc > 3 ? (size_t)atol(argv[3]) : 8;
  mmp_comm_t *w;
  mmp_request_t **q;
  char *buf;
  uint64_t base, map0, peak;
  heap_peak_t h;
  double t0, t;
  int me;

  check(mmp_init(&argc, &argv), "mmp_init");
  w = mmp_comm_world();
  me = mmp_comm_rank(w);
  if (mmp_comm_size(w) != 2 || n <= 0 || window <= 0) {
    if (me == 0)
      fprintf(stderr, "usage: minimprun -n 2 minimp-flood [N [WINDOW "
                      "[BYTES]]]\n");
    mmp_finalize();
    return 2;
  }
  q = calloc((size_t)window, sizeof(*q));
  buf = calloc((size_t)window, bytes ? bytes : 1);
  if (q == NULL || buf == NULL)
    return 1;
  check(mmp_barrier(w), "mmp_barrier");
  base = heap_in_use();
  map0 = heap_mapping();
  if (heap_peak_start(&h) != 0)
    return 1;
  t0 = mmp_wtime();
  for (long i = 0; i < n; i += window) {
    int m = n - i < window ? (int)(n - i) : window;
    for (int k = 0; k < m; k++) {
      char *b = buf + (size_t)k * bytes;
      if (me == 0)
        check(mmp_isend(b, bytes, 1, 1, w, &q[k]), "mmp_isend");
      else
        check(mmp_irecv(b, bytes, 0, 1, w, &q[k]), "mmp_irecv");
    }
    check(mmp_waitall((size_t)m, q, NULL), "mmp_waitall");
    heap_peak_note(&h);
  }
  t = mmp_wtime() - t0;
  peak = heap_peak_stop(&h);
  printf("rank %d: %ld messages of %zu B, %d in flight: heap %.2f MiB after "
         "init, peak +%.2f MiB, [heap] mapping +%.2f MiB, %.2f Mmsg/s\n",
         me, n, bytes, window, base / 1048576.0,
         peak > base ? (peak - base) / 1048576.0 : 0.0,
         ((double)heap_mapping() - (double)map0) / 1048576.0, n / t / 1e6);
  fflush(stdout);
  check(mmp_barrier(w), "mmp_barrier");
  free(q);
  free(buf);
  check(mmp_finalize(), "mmp_finalize");
  return 0;
}
