/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench's modes for the collectives MPI and Gloo programs use:
 *
 *   minimp-bench allreduce|reduce|alltoall|gather|allgather|reduce_scatter
 *                [--algs all|auto,ring,...] [--sizes 4,4k,64k,1m,16m]
 *                [--iters M] [--mode auto|eager|rndv] [--root R]
 *   minimp-bench barrier [--iters M]
 *
 * The barrier takes no options: it runs AUTO's choice, or the row
 * MINIMP_BARRIER_ALG names, and its rows say size 0.
 *
 * The anchors' method (tests/bench/mpi_coll_bench.c, gloo_allreduce_bench.cc):
 * M times a barrier, then the timed call; each rank averages its times,
 * and the row gives the mean over ranks and the worst rank's. Sizes are
 * bytes: of the float vector for allreduce, reduce and reduce_scatter
 * (the whole vector), of one rank's block for gather and allgather, of
 * one pair's block for alltoall. Rows, on stdout:
 *   coll,<collective>,<alg>,<chosen>,p,size,avg_us,max_us
 * where `chosen` names the algorithm AUTO picked for "auto".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cli.h"
#include "coll_bench.h"
#include "minimp.h"

typedef coll_bench_opts_t cb_t;

/* The collectives of the mode: those with an element type and a block. */
int coll_bench_mode(const char *name) {
  int c;

  for (c = MMP_COLL_ALLREDUCE; c <= MMP_COLL_ALLTOALL; c++)
    if (strcmp(name, mmp_coll_name(c)) == 0)
      return c;
  return strcmp(name, mmp_coll_name(MMP_COLL_BARRIER)) == 0 ? MMP_COLL_BARRIER
                                                            : 0;
}

const char *coll_bench_name(int coll) {
  return (coll >= MMP_COLL_ALLREDUCE && coll <= MMP_COLL_ALLTOALL) ||
                 coll == MMP_COLL_BARRIER
             ? mmp_coll_name(coll)
             : NULL;
}

/* One call of the collective with `n` bytes (see the comment above). */
static int cb_once(const cb_t *b, const mmp_coll_opts_t *o, size_t n, float *in,
                   float *out) {
  mmp_comm_t *w = mmp_comm_world();
  size_t f = n / sizeof(float);

  switch (b->coll) {
  case MMP_COLL_ALLREDUCE:
    return mmp_allreduce_ex(in, out, f, MMP_FLOAT, MMP_SUM, w, o);
  case MMP_COLL_REDUCE:
    return mmp_reduce_ex(in, out, f, MMP_FLOAT, MMP_SUM, b->root, w, o);
  case MMP_COLL_REDUCE_SCATTER:
    return mmp_reduce_scatter_block_ex(in, out, f / mmp_comm_size(w), MMP_FLOAT,
                                       MMP_SUM, w, o);
  case MMP_COLL_GATHER:
    return mmp_gather_ex(in, n, out, n, MMP_BYTE, b->root, w, o);
  case MMP_COLL_SCATTER:
    return mmp_scatter_ex(in, n, out, n, MMP_BYTE, b->root, w, o);
  case MMP_COLL_ALLGATHER:
    return mmp_allgather_ex(in, n, out, n, MMP_BYTE, w, o);
  case MMP_COLL_BARRIER:
    return mmp_barrier(w);
  default:
    return mmp_alltoall_ex(in, n, out, n, MMP_BYTE, w, o);
  }
}

int coll_bench_run(const coll_bench_opts_t *opts) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), me = mmp_comm_rank(w), a, k, i, rc = 0;
  const char *name = coll_bench_name(opts->coll);
  cb_t b = *opts;

  if (b.nalgs == 0)
    b.algs[b.nalgs++] = 0;
  if (b.nsizes == 0)
    b.sizes[b.nsizes++] = 65536;
  if (b.coll == MMP_COLL_BARRIER) {
    /* mmp_barrier takes no options: MINIMP_BARRIER_ALG picks a row. */
    for (a = 0; a < b.nalgs; a++)
      if (b.algs[a] != 0)
        return cli_fail("barrier: --algs auto only (MINIMP_BARRIER_ALG "
                        "chooses a row)");
    b.nsizes = 1;
    b.sizes[0] = 0;
  }
  if (b.iters == 0)
    b.iters = 20;
  if (b.root >= p)
    return cli_fail("--root: '%d' is not a rank of this job (0 to %d)", b.root,
                    p - 1);
  if (me == 0) {
    cli_comment(stdout);
    printf("# coll,collective,alg,chosen,p,size,avg_us,max_us\n");
  }
  for (k = 0; k < b.nsizes; k++) {
    size_t n = b.sizes[k], big = n * (size_t)p + 16;
    float *in = calloc(big / sizeof(float) + 1, sizeof(float));
    float *out = calloc(big / sizeof(float) + 1, sizeof(float));
    if (in == NULL || out == NULL)
      return 1;
    for (a = 0; a < b.nalgs && rc == 0; a++) {
      mmp_coll_opts_t o = MMP_COLL_OPTS_INIT, chosen = MMP_COLL_OPTS_INIT;
      double sum = 0, t[2], avg[2];
      o.algorithm = cli_alg(&b.coll, b.algs[a]);
      o.mode = b.mode;
      o.radix = b.radix;
      if (b.algs[a] == 0 &&
          mmp_coll_select(
              w, b.coll,
              b.coll <= MMP_COLL_REDUCE_SCATTER
                  ? n / sizeof(float) /
                        (b.coll == MMP_COLL_REDUCE_SCATTER ? p : 1)
                  : n,
              b.coll <= MMP_COLL_REDUCE_SCATTER ? MMP_FLOAT : MMP_BYTE,
              b.coll <= MMP_COLL_REDUCE_SCATTER ? MMP_SUM : 0, &chosen) != 0)
        chosen.algorithm = NULL;
      /* Two untimed calls: connections and the model are set up. A row
       * that cannot run here (the shm rows across hosts, multicast where
       * it is unusable) is refused on every rank alike, and skipped. */
      for (i = 0; i < 2 && rc == 0; i++)
        rc = cb_once(&b, &o, n, in, out);
      if (rc == MMP_ENOTSUP && b.algs[a] != 0) {
        if (me == 0)
          fprintf(stderr,
                  "minimp-bench %s %s %zu: not available here, "
                  "skipped\n",
                  name, o.algorithm, n);
        rc = 0;
        continue;
      }
      for (i = 0; i < b.iters && rc == 0; i++) {
        double t0;
        rc = mmp_barrier(w);
        t0 = mmp_wtime();
        if (rc == 0)
          rc = cb_once(&b, &o, n, in, out);
        sum += mmp_wtime() - t0;
      }
      if (rc != 0) {
        fprintf(stderr, "minimp-bench %s %s %zu: %s\n", name, o.algorithm, n,
                mmp_strerror(rc));
        break;
      }
      t[0] = t[1] = sum / b.iters;
      rc = mmp_allreduce(t, avg, 1, MMP_DOUBLE, MMP_SUM, w);
      if (rc == 0)
        rc = mmp_allreduce(t + 1, avg + 1, 1, MMP_DOUBLE, MMP_MAX, w);
      if (rc == 0 && me == 0) {
        printf("coll,%s,%s,%s,%d,%zu,%.1f,%.1f\n", name, o.algorithm,
               b.algs[a] == 0 && chosen.algorithm != NULL ? chosen.algorithm
                                                          : "-",
               p, n, avg[0] / p * 1e6, avg[1] * 1e6);
        fflush(stdout);
      }
    }
    free(in);
    free(out);
  }
  return rc == 0 ? 0 : 1;
}
