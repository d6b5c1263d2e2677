/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench bcast --method arrival: broadcasts under controlled process
 * arrival patterns ([Patarasuk & Yuan 2008], section 5, Fig. 6 and the "20%
 * late" experiment), with the same semantics as ../shared/anchors/
 * mpi_bcast_bench.c, so that libminimp and the anchors can be compared in
 * one run.
 */
#ifndef MMP_BENCH_ARRIVAL_H
#define MMP_BENCH_ARRIVAL_H

#include <stddef.h>

/* Patterns, as the anchors name them. */
enum {
  ARR_PAT_ALL = 0,
  ARR_PAT_ROOTEARLY,
  ARR_PAT_LATE20,
  ARR_PAT_BALANCED,
  ARR_PAT_SWITCH
};

typedef struct arrival_cfg_s {
  const size_t *sizes;
  int nsizes;
  const int *algs;
  int nalgs;
  const double *maxif; /* MAX_IF values: microseconds, or multiples of T(m) */
  const int *maxif_t;  /* 1: the value is a multiple of T(m) */
  int nmaxif;
  int pattern; /* ARR_PAT_* */
  int iters;   /* 0: 20 */
  int warm;    /* untimed iterations first, under the pattern; -1: 4 */
  unsigned mode;
  size_t segment;
  int inner; /* arrival_b/_nb sub-group broadcast, 0 default */
  int root;
  double tm_us; /* T(m) in microseconds; 0: measure it per size */
  const char *csv;
  const char *raw; /* every rank's times, one row per rank and iteration */
} arrival_cfg_t;

/* Sleeps (never spins: emulated hosts share the CPUs); no-op for us <= 0. */
void bench_sleep_us(double us);

/* Collective over the world communicator. Prints one row per (size,
 * MAX_IF, algorithm) on rank 0. Returns 0 (a file that cannot be opened
 * aborts the job). */
int bench_arrival(const arrival_cfg_t *c);

/* The name of pattern i (ARR_PAT_*), NULL past the last. */
const char *arrival_pattern_name(int i);

/* "all", "rootearly", "late20", "balanced", "switch" -> ARR_PAT_*, or
 * -1. */
int arrival_pattern_from_name(const char *name);

#endif /* MMP_BENCH_ARRIVAL_H */
