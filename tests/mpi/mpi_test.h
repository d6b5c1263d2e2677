/* SPDX-License-Identifier: MIT */
/*
 * What the MPI test programs share. Each is a cmocka group that every
 * rank of a minimprun job runs in lockstep, against libminimp-mpi's
 * mpi.h; with CMOCKA_TEST_ABORT=1 (set by meson) a failed assertion
 * aborts the rank, so minimprun stops the job instead of leaving the
 * others waiting.
 */
#ifndef MMP_TESTS_MPI_TEST_H
#define MMP_TESTS_MPI_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"

static inline int mt_rank(void) {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

static inline int mt_size(void) {
  int p;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

/* The class of an error code. */
static inline int mt_class(int code) {
  int c = -1;
  MPI_Error_class(code, &c);
  return c;
}

#endif /* MMP_TESTS_MPI_TEST_H */
