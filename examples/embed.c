/* SPDX-License-Identifier: MIT */
/*
 * Embedding libminimp without minimprun: the program is told its rank, the
 * job size, a rendezvous address and a shared job key by whatever starts it
 * (a workflow tool, a script, a scheduler). Rank 0 serves the rendezvous
 * itself. Each rank sends a greeting to the next one in a ring.
 *
 *   key=$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')
 *   ./embed 0 3 127.0.0.1:7000 $key & ./embed 1 3 127.0.0.1:7000 $key &
 *   ./embed 2 3 127.0.0.1:7000 $key; wait
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <minimp.h>

int main(int argc, char **argv) {
  int rank, size, rc, next, prev;
  char msg[64], got[64];
  mmp_comm_t *world;
  mmp_status_t st;

  if (argc != 5) {
    fprintf(stderr, "usage: %s RANK SIZE HOST:PORT KEY32HEX\n", argv[0]);
    return 2;
  }
  rank = atoi(argv[1]);
  size = atoi(argv[2]);
  rc = mmp_init_ex(rank, size, argv[3], argv[4], NULL,
                   rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0);
  if (rc != 0) {
    fprintf(stderr, "rank %d: mmp_init_ex: %s\n", rank, mmp_strerror(rc));
    return 1;
  }
  world = mmp_comm_world();
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  snprintf(msg, sizeof(msg), "greetings from rank %d", rank);
  mmp_request_t *req;
  mmp_isend(msg, strlen(msg) + 1, next, 0, world, &req);
  mmp_recv(got, sizeof(got), prev, 0, world, &st);
  mmp_wait(&req, NULL);
  printf("rank %d got \"%s\" (%zu bytes)\n", rank, got, st.bytes);
  return mmp_finalize() == 0 ? 0 : 1;
}
