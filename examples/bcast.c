/* SPDX-License-Identifier: MIT */
/*
 * Rank 0 broadcasts an array of doubles to every rank, which checks every
 * element; rank 0 reports which algorithm the automatic choice ran
 * (mmp_bcast_last, after the broadcast) and the network model it chose
 * from (docs/algorithms.md explains both).
 *
 *   minimprun -n 8 ./bcast [DOUBLES]
 */
#include <stdio.h>
#include <stdlib.h>

#include <minimp.h>

/* What each algorithm is good at, in a line (docs/algorithms.md). */
static const char *why(int alg) {
  switch (alg) {
  case MMP_BCAST_PIPELINE:
    return "long message: the pipelined chain keeps every link busy with "
           "segments and approaches the time of one link";
  case MMP_BCAST_BINOMIAL:
  case MMP_BCAST_KNOMIAL:
  case MMP_BCAST_BINARY:
    return "short message: a tree reaches every rank in few steps";
  case MMP_BCAST_SYMMETRIC:
    return "the message fits what an idle link passes at once: pieces go "
           "to all ranks in parallel";
  case MMP_BCAST_ARRIVAL_B:
  case MMP_BCAST_ARRIVAL_NB:
    return "ranks have been arriving apart: the root serves whoever is "
           "there";
  default:
    return "the cost model prices it lowest for this size and rank count";
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 131072, i, bad = 0, total = 0;
  mmp_bcast_opts_t chosen;
  mmp_netmodel_t nm;
  mmp_comm_t *world;
  double *a;
  int rank, rc, ran = MMP_BCAST_AUTO;

  if (mmp_init(&argc, &argv) != 0)
    return 1;
  world = mmp_comm_world();
  rank = mmp_comm_rank(world);
  a = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  if (a == NULL)
    mmp_abort(1);
  for (i = 0; i < n; i++)
    a[i] = rank == 0 ? (double)i * 0.5 : -1;
  /* What AUTO would run, from rank 0's view, and the model it uses; what
   * it ran can differ (mmp_bcast_last, below). */
  rc = mmp_bcast_select(world, (size_t)n * sizeof(double), &chosen);
  if (rc == 0)
    rc = mmp_comm_netmodel(world, &nm);
  if (rc == 0)
    rc = mmp_bcast(a, (size_t)n * sizeof(double), 0, world);
  if (rc == 0)
    rc = mmp_bcast_last(world, &ran);
  if (rc != 0) {
    fprintf(stderr, "rank %d: %s\n", rank, mmp_strerror(rc));
    mmp_abort(1);
  }
  for (i = 0; i < n; i++)
    bad += a[i] != (double)i * 0.5;
  /* Every rank's count of wrong elements, added up at rank 0. */
  if (rank != 0) {
    mmp_send(&bad, sizeof(bad), 0, 1, world);
  } else {
    total = bad;
    for (int r = 1; r < mmp_comm_size(world); r++) {
      long b = 0;
      mmp_recv(&b, sizeof(b), r, 1, world, NULL);
      total += b;
    }
    printf("%d ranks received %ld doubles (%ld KiB) from rank 0: %s\n",
           mmp_comm_size(world), n, n * 8 / 1024,
           total == 0 ? "every element checked on every rank"
                      : "WRONG ELEMENTS");
    printf("automatic choice: %s", mmp_bcast_alg_name(ran));
    if (ran == chosen.algorithm && chosen.segment > 0)
      printf(", segments of %zu bytes", chosen.segment);
    printf(" (%s)\n", why(ran));
    if (ran != chosen.algorithm)
      printf("  (asked before the broadcast, mmp_bcast_select named %s)\n",
             mmp_bcast_alg_name(chosen.algorithm));
    printf("network model: %.1f us per message, %.2f ns per byte%s\n",
           nm.alpha * 1e6, nm.beta * 1e9,
           nm.shared_cpus ? ", more ranks than CPUs" : "");
  }
  free(a);
  rc = mmp_finalize();
  return rc == 0 && total == 0 ? 0 : 1;
}
