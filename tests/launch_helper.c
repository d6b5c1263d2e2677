/* SPDX-License-Identifier: MIT */
/*
 * A program for test_launcher to run under minimprun. Every rank writes its
 * pid to $TEST_PIDDIR/<rank>, initialises, and then does what argv says:
 *
 *   ok               say hello and finalize
 *   exit R CODE      rank R exits with CODE; the others wait forever
 *   signal R SIG     rank R raises SIG; the others wait forever
 *   abort R CODE     rank R calls mmp_abort(CODE); the others wait forever
 *   nofinalize R     rank R returns 0 without mmp_finalize; others wait
 *   hang             every rank sleeps forever
 *   env VAR...       print each VAR's value, then finalize
 *   stdin            rank 0 echoes its standard input, then finalize
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"

static void record_pid(int rank) {
  const char *dir = getenv("TEST_PIDDIR");
  char path[512];
  FILE *f;

  if (dir == NULL)
    return;
  snprintf(path, sizeof(path), "%s/%d", dir, rank);
  f = fopen(path, "w");
  if (f != NULL) {
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  }
}

static void wait_forever(void) {
  char c;
  /* A receive nobody answers: the launcher must stop us. */
  mmp_recv(&c, 1, MMP_ANY_SOURCE, 12345, mmp_comm_world(), NULL);
  for (;;)
    pause();
}

int main(int argc, char **argv) {
  const char *env_rank = getenv("MINIMP_RANK");
  int rank, size, who;

  record_pid(env_rank ? atoi(env_rank) : 0);
  if (argc < 2 || mmp_init(&argc, &argv) != 0)
    return 3;
  rank = mmp_comm_rank(mmp_comm_world());
  size = mmp_comm_size(mmp_comm_world());
  who = argc > 2 ? atoi(argv[2]) : -1;

  if (strcmp(argv[1], "ok") == 0) {
    printf("hello from %d of %d\n", rank, size);
  } else if (strcmp(argv[1], "exit") == 0) {
    if (rank == who)
      exit(atoi(argv[3]));
    wait_forever();
  } else if (strcmp(argv[1], "signal") == 0) {
    if (rank == who)
      raise(atoi(argv[3]));
    wait_forever();
  } else if (strcmp(argv[1], "abort") == 0) {
    if (rank == who)
      mmp_abort(atoi(argv[3]));
    wait_forever();
  } else if (strcmp(argv[1], "nofinalize") == 0) {
    if (rank == who)
      return 0;
    wait_forever();
  } else if (strcmp(argv[1], "hang") == 0) {
    for (;;)
      pause();
  } else if (strcmp(argv[1], "env") == 0) {
    for (int i = 2; i < argc; i++) {
      const char *v = getenv(argv[i]);
      printf("%d %s=%s\n", rank, argv[i], v ? v : "(unset)");
    }
  } else if (strcmp(argv[1], "stdin") == 0) {
    if (rank == 0) {
      char line[256];
      while (fgets(line, sizeof(line), stdin) != NULL)
        printf("got: %s", line);
    }
  } else {
    return 4;
  }
  fflush(stdout);
  return mmp_finalize() == 0 ? 0 : 5;
}
