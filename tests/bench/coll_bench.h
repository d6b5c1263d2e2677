/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench's modes for reduce, allreduce, reduce-scatter, gather,
 * scatter, allgather and alltoall (coll_bench.c).
 */
#ifndef MMP_TESTS_BENCH_COLL_BENCH_H
#define MMP_TESTS_BENCH_COLL_BENCH_H

#include <stddef.h>

#define COLL_BENCH_MAX 32

/* What minimp-bench's option parser hands a collective's mode. */
typedef struct coll_bench_opts_s {
  int coll; /* MMP_COLL_* */
  int algs[COLL_BENCH_MAX], nalgs;
  size_t sizes[COLL_BENCH_MAX];
  int nsizes, iters, root;
  int radix; /* opts.radix: 0, chosen */
  unsigned mode;
} coll_bench_opts_t;

/* The MMP_COLL_* of a mode name ("allreduce"), or 0. */
int coll_bench_mode(const char *name);

/* The mode name of MMP_COLL_* `coll`, NULL for 0 and past the last. */
const char *coll_bench_name(int coll);

/* Runs the mode with its options (algs and sizes empty: AUTO at 64 KiB;
 * iters 0: 20); after mmp_init. Returns the exit code. */
int coll_bench_run(const coll_bench_opts_t *b);

#endif /* MMP_TESTS_BENCH_COLL_BENCH_H */
