/* SPDX-License-Identifier: MIT */
/*
 * The job test_shm_fail runs under minimprun to see what its kill-on-fail
 * leaves in /dev/shm. Every rank first prints the job key ("key=HEX"), by
 * which the test finds the job's names. Modes:
 *   normal            every pair exchanges a message, then all finalize
 *   kill-after-init   rank 1 kills itself (-9) while the others wait on it
 *   kill-in-setup     rank 1 kills itself once it has made its segment
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

static void die_at_creation(const char *stage) {
  if (strcmp(stage, "shm-created") == 0)
    raise(SIGKILL);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "normal";
  const char *key = getenv("MINIMP_JOB_KEY");
  const char *rank = getenv("MINIMP_RANK");
  mmp_comm_t *w;
  int me, v = 0;

  printf("key=%s\n", key != NULL ? key : "?");
  fflush(stdout);
  if (strcmp(mode, "kill-in-setup") == 0 && rank != NULL &&
      strcmp(rank, "1") == 0)
    mmp__debug_init_hook = die_at_creation;
  if (mmp_init(&argc, &argv) != 0)
    return 3;
  w = mmp_comm_world();
  me = mmp_comm_rank(w);
  if (strcmp(mode, "kill-after-init") == 0) {
    if (me == 1)
      raise(SIGKILL);
    (void)mmp_recv(&v, sizeof(v), 1, 1, w, NULL);
    return 4; /* minimprun stops us first, or the receive fails */
  }
  for (int j = 0; j < mmp_comm_size(w); j++)
    if (j != me && mmp_send(&me, sizeof(me), j, 2, w) != 0)
      return 5;
  for (int j = 0; j < mmp_comm_size(w); j++)
    if (j != me && mmp_recv(&v, sizeof(v), j, 2, w, NULL) != 0)
      return 6;
  return mmp_finalize() == 0 ? 0 : 7;
}
