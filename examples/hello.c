/* SPDX-License-Identifier: MIT */
/*
 * The smallest libminimp program: every rank says hello, then rank 0
 * collects one message from each of the others.
 *
 *   minimprun -n 4 ./hello
 */
#include <stdio.h>

#include <minimp.h>

int main(int argc, char **argv) {
  mmp_comm_t *world;
  int rank, size, rc;

  rc = mmp_init(&argc, &argv);
  if (rc != 0) {
    fprintf(stderr, "mmp_init: %s\n", mmp_strerror(rc));
    return 1;
  }
  world = mmp_comm_world();
  rank = mmp_comm_rank(world);
  size = mmp_comm_size(world);
  printf("hello from rank %d of %d\n", rank, size);
  if (rank == 0) {
    for (int i = 1; i < size; i++) {
      mmp_status_t st;
      int from;
      mmp_recv(&from, sizeof(from), MMP_ANY_SOURCE, 0, world, &st);
      printf("rank 0 heard from rank %d\n", st.source);
    }
  } else {
    mmp_send(&rank, sizeof(rank), 0, 0, world);
  }
  return mmp_finalize() == 0 ? 0 : 1;
}
