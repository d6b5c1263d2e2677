/* SPDX-License-Identifier: MIT */
/*
 * gamma, the seconds per byte a reduction's arithmetic costs, measured
 * beside alpha and beta (netmodel.c shares rank 0's figure): the best of
 * a few float sums over 256 KiB, the operation an allreduce of floats
 * runs, on buffers that stay in cache as a segment's do.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/core/types.h"
#include "collectives/select/netmodel.h"

#define GAMMA_BYTES (256u * 1024)
#define GAMMA_REPS 5

double mmp__measure_gamma(void) {
  float *in = malloc(GAMMA_BYTES), *io = malloc(GAMMA_BYTES);
  double best = INFINITY;
  size_t i, n = GAMMA_BYTES / sizeof(float);
  int r;

  if (in == NULL || io == NULL) {
    free(in);
    free(io);
    return 0;
  }
  for (i = 0; i < n; i++) {
    in[i] = (float)i;
    io[i] = 1.0f;
  }
  for (r = 0; r < GAMMA_REPS; r++) {
    double t0 = mmp_wtime(), t;
    mmp__reduce_apply(in, io, GAMMA_BYTES, 0,
                      mmp__reduce_arg(MMP_SUM, MMP_FLOAT));
    t = mmp_wtime() - t0;
    if (t < best)
      best = t;
  }
  free(in);
  free(io);
  return best / GAMMA_BYTES;
}
