/* SPDX-License-Identifier: MIT */
/*
 * examples/ring.c as an MPI program: built with minimpicc, it runs on
 * libminimp-mpi; the same file builds with any MPI's mpicc. A token
 * travels around the ring ROUNDS times, every rank adds its rank, and
 * MPI_Allreduce checks the total everywhere.
 *
 *   minimpicc mpi_ring.c -o mpi_ring && minimprun -n 8 ./mpi_ring [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

int main(int argc, char **argv) {
  int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 10, ok;
  long token = 0, want;
  double t0;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  t0 = MPI_Wtime();
  for (int r = 0; r < rounds; r++) {
    if (rank == 0) {
      MPI_Send(&token, 1, MPI_LONG, (rank + 1) % size, 0, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_LONG, size - 1, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      token += rank;
      MPI_Send(&token, 1, MPI_LONG, (rank + 1) % size, 0, MPI_COMM_WORLD);
    }
  }
  /* Rank 0 holds the token: every rank learns whether it is right. */
  MPI_Bcast(&token, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  want = (long)rounds * size * (size - 1) / 2;
  ok = token == want;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0)
    printf("ring of %d ranks, %d rounds: token %ld (%s), %.1f us per hop\n",
           size, rounds, token, ok ? "correct" : "WRONG",
           (MPI_Wtime() - t0) * 1e6 / rounds / (size > 1 ? size : 1));
  MPI_Finalize();
  return ok ? 0 : 1;
}
