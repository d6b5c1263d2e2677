/* SPDX-License-Identifier: MIT */
/*
 * [De Supinski & Karonis 1999]'s max OL_i for an MPI library's MPI_Bcast,
 * measured exactly as `minimp-bench bcast --method ol` measures libminimp, so
 * that the two can be compared on that metric (the anchors in ../shared/anchors
 * time only the per-node loop after a barrier). Not part of the meson build:
 * METHOD=ol tests/bench/run_paired.sh compiles it with mpicc.openmpi.
 *
 * For each destination i: RTT_i from M zero-byte ping-pongs; one broadcast
 * and ACK from i untimed; then M broadcasts, each followed by an ACK from
 * i alone, each timed on its own, with an untimed pause at the root
 * before each (GAP_US, or "auto": twice the previous one's time, at least
 * 1 ms; 0 runs the seed's back-to-back loop).
 * OL_i = E_i - RTT_i / 2.
 *
 * usage: mpi_ol_bench SIZE ITERS [GAP_US|auto]   (SIZE in bytes)
 * prints: size avg_OL_us max_OL_us
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double ol_to(char *buf, int n, int dest, int M, double gap) {
  int me, x;
  double t0 = 0, rtt = 0, e = 0, took = 0;

  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  /* The first ping-pong is not timed: it may open the connection. */
  if (me == 0) {
    for (x = -1; x < M; x++) {
      if (x == 0)
        t0 = MPI_Wtime();
      MPI_Send(NULL, 0, MPI_BYTE, dest, 101, MPI_COMM_WORLD);
      MPI_Recv(NULL, 0, MPI_BYTE, dest, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    rtt = (MPI_Wtime() - t0) / M;
  } else if (me == dest) {
    for (x = -1; x < M; x++) {
      MPI_Recv(NULL, 0, MPI_BYTE, 0, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(NULL, 0, MPI_BYTE, 0, 101, MPI_COMM_WORLD);
    }
  }
  for (x = 0; x <= M; x++) {
    if (me == 0) {
      double us = gap >= 0 ? gap : (2e6 * took > 1000 ? 2e6 * took : 1000);
      struct timespec ts = {(time_t)(us / 1e6), (long)fmod(us * 1e3, 1e9)};
      if (x > 0 && us > 0)
        nanosleep(&ts, NULL);
      t0 = MPI_Wtime();
    }
    MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (me == 0) {
      MPI_Recv(NULL, 0, MPI_BYTE, dest, 102, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      took = MPI_Wtime() - t0;
      e += x > 0 ? took : 0;
    } else if (me == dest) {
      MPI_Send(NULL, 0, MPI_BYTE, 0, 102, MPI_COMM_WORLD);
    }
  }
  e /= M;
  return e - rtt / 2;
}

int main(int argc, char **argv) {
  int r, p, n = 0, M = 0, i;
  double gap = -1, sum = 0, worst = 0;
  char *buf;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 3 || (n = atoi(argv[1])) < 0 || (M = atoi(argv[2])) <= 0) {
    if (r == 0)
      fprintf(stderr, "usage: mpi_ol_bench SIZE ITERS [GAP_US|auto]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (argc > 3 && strcmp(argv[3], "auto") != 0) {
    char *end;
    gap = strtod(argv[3], &end);
    if (end == argv[3] || *end != '\0' || gap < 0) {
      if (r == 0)
        fprintf(stderr, "mpi_ol_bench: bad gap '%s'\n", argv[3]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  buf = calloc((size_t)n + 1, 1);
  MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
  for (i = 1; i < p; i++) {
    double ol = ol_to(buf, n, i, M, gap);
    sum += ol;
    worst = ol > worst ? ol : worst;
  }
  if (r == 0)
    printf("%d %.1f %.1f\n", n, sum / (p - 1) * 1e6, worst * 1e6);
  free(buf);
  MPI_Finalize();
  return 0;
}
