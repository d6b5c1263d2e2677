/* SPDX-License-Identifier: MIT */
/*
 * A token travels around the ring of ranks ROUNDS times; every rank adds
 * its rank number, and rank 0 checks the total at the end.
 *
 *   minimprun -n 8 ./ring [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>

#include <minimp.h>

int main(int argc, char **argv) {
  mmp_comm_t *world;
  int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 10;
  long token = 0;
  double t0;

  if (mmp_init(&argc, &argv) != 0)
    return 1;
  world = mmp_comm_world();
  rank = mmp_comm_rank(world);
  size = mmp_comm_size(world);
  t0 = mmp_wtime();
  for (int r = 0; r < rounds; r++) {
    if (rank == 0) {
      mmp_send(&token, sizeof(token), (rank + 1) % size, 0, world);
      mmp_recv(&token, sizeof(token), size - 1, 0, world, NULL);
    } else {
      mmp_recv(&token, sizeof(token), rank - 1, 0, world, NULL);
      token += rank;
      mmp_send(&token, sizeof(token), (rank + 1) % size, 0, world);
    }
  }
  if (rank == 0) {
    long want = (long)rounds * size * (size - 1) / 2;
    printf("ring of %d ranks, %d rounds: token %ld (%s), %.1f us per hop\n",
           size, rounds, token, token == want ? "correct" : "WRONG",
           (mmp_wtime() - t0) * 1e6 / rounds / (size > 1 ? size : 1));
    if (token != want)
      mmp_abort(1);
  }
  return mmp_finalize() == 0 ? 0 : 1;
}
