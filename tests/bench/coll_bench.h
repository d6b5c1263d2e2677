/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench's modes for reduce, allreduce, reduce-scatter, gather,
 * scatter, allgather and alltoall (coll_bench.c).
 */
#ifndef MMP_TESTS_BENCH_COLL_BENCH_H
#define MMP_TESTS_BENCH_COLL_BENCH_H

/* The MMP_COLL_* of a mode name ("allreduce"), or 0. */
int coll_bench_mode(const char *name);

/* Runs the mode argv[1] with its options; after mmp_init. Returns the
 * exit code. */
int coll_bench_run(int argc, char **argv);

#endif /* MMP_TESTS_BENCH_COLL_BENCH_H */
