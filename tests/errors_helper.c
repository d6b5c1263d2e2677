/* SPDX-License-Identifier: MIT */
/*
 * For test_embed: a program that does not check its return codes. Started
 * by minimprun with three ranks, rank 1 makes one bad call: MODE "send"
 * sends to a rank that does not exist (fatal through MINIMP_ERRORS=fatal),
 * "barrier" passes no communicator after mmp_set_errors_fatal(1). The
 * other ranks wait in a barrier that rank 1 never reaches; minimprun
 * stops them. Prints "rank 1 went on" if the error was not fatal.
 */
#include <stdio.h>
#include <string.h>

#include "minimp.h"

int main(int argc, char **argv) {
  mmp_comm_t *w;
  int x = 0;

  if (argc != 2 || mmp_init(&argc, &argv) != 0)
    return 2;
  w = mmp_comm_world();
  if (mmp_comm_rank(w) == 1) {
    if (strcmp(argv[1], "barrier") == 0) {
      mmp_set_errors_fatal(1);
      mmp_barrier(NULL);
    } else {
      mmp_send(&x, sizeof(x), mmp_comm_size(w) + 5, 0, w);
    }
    printf("rank 1 went on\n");
    fflush(stdout);
  }
  mmp_barrier(w);
  return mmp_finalize() == 0 ? 0 : 1;
}
