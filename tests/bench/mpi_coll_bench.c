/* SPDX-License-Identifier: MIT */
/*
 * Anchor benchmark: MPI_Allreduce (floats, sum), MPI_Reduce (floats, sum,
 * root 0), MPI_Alltoall, MPI_Gather and MPI_Allgather (bytes, per pair or
 * per rank) and MPI_Barrier (BYTES ignored),
 * per-node time after a barrier, as minimp-bench's collective modes
 * measure libminimp.
 * usage: mpi_coll_bench allreduce|reduce|alltoall|gather|allgather|barrier
 *        BYTES ITERS
 * prints: COLL BYTES avg_per_node_us max_per_node_us   (rank 0)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const colls[] = {"allreduce", "reduce",    "alltoall",
                                    "gather",    "allgather", "barrier"};

static void once(const char *c, long n, void *in, void *out) {
  int f = (int)(n / (long)sizeof(float));

  if (!strcmp(c, "allreduce"))
    MPI_Allreduce(in, out, f, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (!strcmp(c, "reduce"))
    MPI_Reduce(in, out, f, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  else if (!strcmp(c, "alltoall"))
    MPI_Alltoall(in, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, MPI_COMM_WORLD);
  else if (!strcmp(c, "allgather"))
    MPI_Allgather(in, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, MPI_COMM_WORLD);
  else if (!strcmp(c, "barrier"))
    MPI_Barrier(MPI_COMM_WORLD);
  else if (!strcmp(c, "gather"))
    MPI_Gather(in, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* 1 if `c` names a collective once() runs: any other name is refused, not
 * measured as something else. */
static int known(const char *c) {
  for (size_t k = 0; k < sizeof(colls) / sizeof(colls[0]); k++)
    if (!strcmp(c, colls[k]))
      return 1;
  return 0;
}

int main(int argc, char **argv) {
  int r, p, i, iters;
  long n;
  double sum = 0, mine, tot = 0, mx = 0;
  char *in, *out;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 4 || !known(argv[1])) {
    if (r == 0)
      fprintf(stderr,
              "usage: %s allreduce|reduce|alltoall|gather|allgather|barrier "
              "BYTES ITERS\n",
              argv[0]);
    MPI_Finalize();
    return 2;
  }
  n = atol(argv[2]);
  iters = atoi(argv[3]);
  in = calloc((size_t)n * (size_t)p + 16, 1);
  out = calloc((size_t)n * (size_t)p + 16, 1);
  for (i = 0; i < 2; i++)
    once(argv[1], n, in, out);
  for (i = 0; i < iters; i++) {
    double t0;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    once(argv[1], n, in, out);
    sum += MPI_Wtime() - t0;
  }
  mine = sum / iters;
  MPI_Reduce(&mine, &tot, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (r == 0)
    printf("%s %ld %.1f %.1f\n", argv[1], n, tot / p * 1e6, mx * 1e6);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
