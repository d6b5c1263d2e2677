/* SPDX-License-Identifier: MIT */
/* mpi.h must compile on its own, with nothing included before it. */
#include "mpi.h"

int main(void) {
  MPI_Status st = {0};
  return st.MPI_ERROR == MPI_SUCCESS && MPI_COMM_WORLD != MPI_COMM_NULL ? 0 : 1;
}
