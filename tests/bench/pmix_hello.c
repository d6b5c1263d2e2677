/* SPDX-License-Identifier: MIT */
/*
 * The least a PMIx program does, for the start-up breakdown of
 * tests/bench/run_startup_real.sh: PMIx_Init, a line, PMIx_Finalize. Under
 * `srun --mpi=pmix` its time is what Slurm's PMIx plugin and libpmix cost
 * before any library of ranks runs.
 */
#include <pmix.h>
#include <stdio.h>

int main(void) {
  pmix_proc_t me;

  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS)
    return 1;
  printf("hello from rank %u\n", (unsigned)me.rank);
  return PMIx_Finalize(NULL, 0) == PMIX_SUCCESS ? 0 : 1;
}
