/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench: libminimp's benchmark tool, run through minimprun.
 *
 *   minimprun -n 2 minimp-bench pingpong [--sizes 8,65536,4194304]
 *             [--iters N] [--mode auto|eager|rndv] [--csv FILE]
 *
 * pingpong measures, between ranks 0 and 1, the half round-trip time of a
 * blocking ping-pong and the one-way streaming bandwidth with 64 messages
 * in flight, exactly as ../shared/anchors/mpi_pingpong.c does for Open MPI,
 * so that the two print comparable numbers: "size half_rtt_us MBps". Each
 * size runs twice and the second pass is reported (the first warms up
 * connections and caches).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"

#define WINDOW 64

typedef struct opts_s {
  size_t sizes[64];
  int nsizes;
  int iters; /* 0: as the anchor, 4000 below 100 kB, 200 above */
  unsigned mode;
  const char *csv;
} opts_t;

static int usage(void) {
  fprintf(stderr,
          "usage: minimp-bench pingpong [--sizes a,b,c] [--iters N]\n"
          "                    [--mode auto|eager|rndv] [--csv FILE]\n");
  return 2;
}

static int parse_sizes(const char *s, opts_t *o) {
  char *copy = strdup(s), *tok, *save = NULL;

  o->nsizes = 0;
  for (tok = strtok_r(copy, ",", &save); tok != NULL && o->nsizes < 64;
       tok = strtok_r(NULL, ",", &save)) {
    char *end;
    unsigned long long v = strtoull(tok, &end, 10);
    if (*end == 'k' || *end == 'K')
      v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
      v <<= 20, end++;
    if (*end != '\0') {
      free(copy);
      return -1;
    }
    o->sizes[o->nsizes++] = (size_t)v;
  }
  free(copy);
  return o->nsizes > 0 ? 0 : -1;
}

static int parse_opts(int argc, char **argv, opts_t *o) {
  int i;

  memset(o, 0, sizeof(*o));
  parse_sizes("8,65536,4194304", o);
  for (i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      if (parse_sizes(argv[++i], o) != 0)
        return -1;
    } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      o->iters = atoi(argv[++i]);
      if (o->iters <= 0)
        return -1;
    } else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
      const char *m = argv[++i];
      if (strcmp(m, "auto") == 0)
        o->mode = MMP_SEND_AUTO;
      else if (strcmp(m, "eager") == 0)
        o->mode = MMP_SEND_EAGER;
      else if (strcmp(m, "rndv") == 0)
        o->mode = MMP_SEND_RNDV;
      else
        return -1;
    } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      o->csv = argv[++i];
    } else {
      return -1;
    }
  }
  return 0;
}

#define CHECK(call)                                                            \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0) {                                                            \
      fprintf(stderr, "minimp-bench: %s failed: %s\n", #call,                  \
              mmp_strerror(rc_));                                              \
      mmp_abort(1);                                                            \
    }                                                                          \
  } while (0)

/* One size: returns the half round trip (s) and the bandwidth (MB/s). */
static void pingpong_one(size_t n, int it, unsigned mode, double *lat,
                         double *bw) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mmp_comm_rank(w), i, k;
  char *b = calloc(n ? n : 1, 1);
  mmp_request_t *q[WINDOW];
  double t0;

  CHECK(mmp_send(NULL, 0, 1 - r, 9, w));
  CHECK(mmp_recv(NULL, 0, 1 - r, 9, w, NULL));
  t0 = mmp_wtime();
  for (i = 0; i < it; i++) {
    if (r == 0) {
      CHECK(mmp_send_ex(b, n, 1, 1, w, mode));
      CHECK(mmp_recv(b, n, 1, 1, w, NULL));
    } else {
      CHECK(mmp_recv(b, n, 0, 1, w, NULL));
      CHECK(mmp_send_ex(b, n, 0, 1, w, mode));
    }
  }
  *lat = (mmp_wtime() - t0) / it / 2;

  CHECK(mmp_send(NULL, 0, 1 - r, 9, w));
  CHECK(mmp_recv(NULL, 0, 1 - r, 9, w, NULL));
  t0 = mmp_wtime();
  for (i = 0; i < it; i += WINDOW) {
    for (k = 0; k < WINDOW; k++) {
      if (r == 0)
        CHECK(mmp_isend_ex(b, n, 1, 2, w, mode, &q[k]));
      else
        CHECK(mmp_irecv(b, n, 0, 2, w, &q[k]));
    }
    CHECK(mmp_waitall(WINDOW, q, NULL));
  }
  if (r == 0)
    CHECK(mmp_recv(NULL, 0, 1, 3, w, NULL));
  else
    CHECK(mmp_send(NULL, 0, 0, 3, w));
  *bw = (double)n * ((it + WINDOW - 1) / WINDOW * WINDOW) / (mmp_wtime() - t0) /
        1e6;
  free(b);
}

static int cmd_pingpong(const opts_t *o) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mmp_comm_rank(w), s;
  FILE *csv = NULL;

  if (mmp_comm_size(w) != 2) {
    if (r == 0)
      fprintf(stderr, "minimp-bench pingpong needs exactly 2 ranks\n");
    return 2;
  }
  if (r == 0 && o->csv != NULL) {
    csv = fopen(o->csv, "w");
    if (csv == NULL) {
      perror(o->csv);
      return 1;
    }
    fprintf(csv, "size,half_rtt_us,bandwidth_MBps\n");
  }
  if (r == 0)
    printf("%10s %14s %14s\n", "size", "half_rtt_us", "stream_MBps");
  for (s = 0; s < o->nsizes; s++) {
    size_t n = o->sizes[s];
    int it = o->iters > 0 ? o->iters : (n > 100000 ? 200 : 4000);
    double lat = 0, bw = 0;
    int pass;
    for (pass = 0; pass < 2; pass++)
      pingpong_one(n, it, o->mode, &lat, &bw);
    if (r == 0) {
      printf("%10zu %14.2f %14.1f\n", n, lat * 1e6, bw);
      fflush(stdout);
      if (csv != NULL)
        fprintf(csv, "%zu,%.3f,%.1f\n", n, lat * 1e6, bw);
    }
  }
  if (csv != NULL)
    fclose(csv);
  return 0;
}

int main(int argc, char **argv) {
  opts_t o;
  int rc;

  if (argc < 2 || parse_opts(argc, argv, &o) != 0)
    return usage();
  rc = mmp_init(&argc, &argv);
  if (rc != 0) {
    fprintf(stderr, "minimp-bench: mmp_init: %s\n", mmp_strerror(rc));
    return 1;
  }
  if (strcmp(argv[1], "pingpong") == 0)
    rc = cmd_pingpong(&o);
  else
    rc = usage();
  mmp_finalize();
  return rc;
}
