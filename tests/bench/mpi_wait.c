/* SPDX-License-Identifier: MIT */
/*
 * How waiting ranks share a host's CPUs, through mpi.h only, so that the
 * same source runs on libminimp-mpi (built here) and on Open MPI
 * (run_onehost_wait.sh builds it with mpicc.openmpi):
 *   idle: rank 0 sleeps 5 s and then sends 8 bytes to rank 1, blocked in
 *         MPI_Recv; rank 1 prints the wait's length and the CPU time it
 *         used ("idle SECONDS CPU_SECONDS");
 *   ring: an 8-byte token passes N times round all the ranks, after N/10
 *         rounds to warm up; rank 0 prints the time per hop ("ring RANKS
 *         MICROSECONDS"). With more ranks than CPUs every hop is a
 *         hand-over of a CPU from one rank to the next.
 *   mpirun -n 2 mpi_wait idle;  mpirun -n 8 mpi_wait ring [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mpi.h"

static double cpu_seconds(void) {
  struct rusage u;

  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static void idle(int rank) {
  char b[8] = {0};

  if (rank == 0) {
    sleep(5);
    MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
  } else if (rank == 1) {
    double c0 = cpu_seconds(), t0 = MPI_Wtime();
    MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("idle %.3f %.3f\n", MPI_Wtime() - t0, cpu_seconds() - c0);
  }
}

static void ring(int rank, int size, int rounds) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  char b[8] = {0};

  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? rounds : rounds / 10;
    double t0;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
      if (rank == 0) {
        MPI_Send(b, 8, MPI_BYTE, next, 2, MPI_COMM_WORLD);
        MPI_Recv(b, 8, MPI_BYTE, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(b, 8, MPI_BYTE, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(b, 8, MPI_BYTE, next, 2, MPI_COMM_WORLD);
      }
    }
    if (pass && rank == 0)
      printf("ring %d %.3f\n", size,
             (MPI_Wtime() - t0) / ((double)n * size) * 1e6);
  }
}

int main(int argc, char **argv) {
  int rank, size;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2 || size < 2 ||
      (strcmp(argv[1], "idle") != 0 && strcmp(argv[1], "ring") != 0)) {
    if (rank == 0)
      fprintf(stderr, "usage: mpirun -n 2 mpi_wait idle | mpirun -n P "
                      "mpi_wait ring [N]\n");
    MPI_Finalize();
    return 2;
  }
  if (strcmp(argv[1], "idle") == 0)
    idle(rank);
  else
    ring(rank, size, argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 2000);
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
