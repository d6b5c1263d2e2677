/* SPDX-License-Identifier: MIT */
/*
 * examples/hello for MPI, the anchor of the start-up comparison
 * (tests/bench/run_startup_real.sh): every rank prints a line and sends
 * one message to rank 0, which receives them all; then finalize.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  int rank, size;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("hello from rank %d of %d\n", rank, size);
  if (rank == 0) {
    for (int i = 1; i < size; i++) {
      MPI_Status st;
      int from;
      MPI_Recv(&from, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
      printf("rank 0 heard from rank %d\n", st.MPI_SOURCE);
    }
  } else {
    MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
