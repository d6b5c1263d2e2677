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
#include <string.h>

#include <minimp.h>

/* What each algorithm is good at, in a line (docs/algorithms.md). */
static const char *why(const char *alg) {
  static const struct {
    const char *alg, *why;
  } lines[] = {
      {"pipeline", "long message: the pipelined chain keeps every link busy "
                   "with segments and approaches the time of one link"},
      {"binomial", "short message: a tree reaches every rank in few steps"},
      {"knomial", "short message: a tree reaches every rank in few steps"},
      {"binary", "short message: a tree reaches every rank in few steps"},
      {"symmetric", "the message fits what an idle link passes at once: "
                    "pieces go to all ranks in parallel"},
      {"arrival_b", "ranks have been arriving apart: the root serves "
                    "whoever is there"},
      {"arrival_nb", "ranks have been arriving apart: the root serves "
                     "whoever is there"},
  };
  size_t i;

  for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
    if (strcmp(lines[i].alg, alg) == 0)
      return lines[i].why;
  return "the cost model prices it lowest for this size and rank count";
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 131072, i, bad = 0, total = 0;
  mmp_bcast_opts_t chosen;
  const char *ran = NULL;
  mmp_netmodel_t nm;
  mmp_comm_t *world;
  double *a;
  int rank, rc;

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
    printf("automatic choice: %s", ran);
    if (strcmp(ran, chosen.algorithm) == 0 && chosen.segment > 0)
      printf(", segments of %zu bytes", chosen.segment);
    printf(" (%s)\n", why(ran));
    if (strcmp(ran, chosen.algorithm) != 0)
      printf("  (asked before the broadcast, mmp_bcast_select named %s)\n",
             chosen.algorithm);
    printf("network model: %.1f us per message, %.2f ns per byte%s\n",
           nm.alpha * 1e6, nm.beta * 1e9,
           nm.shared_cpus ? ", more ranks than CPUs" : "");
  }
  free(a);
  rc = mmp_finalize();
  return rc == 0 && total == 0 ? 0 : 1;
}
