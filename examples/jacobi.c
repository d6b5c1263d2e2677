/* SPDX-License-Identifier: MIT */
/*
 * A 1-D Jacobi solver for -u'' = 1 on [0, 1], u(0) = u(1) = 0, the grid
 * split into one slab per rank: each sweep exchanges the slab's edge
 * points with the neighbours, and every CHECK sweeps the ranks agree on
 * the global residual with mmp_allreduce, stopping together once it is
 * below the tolerance. The program the port had to write by hand
 * (send to rank 0, then broadcast).
 *
 *   minimprun -n 4 ./jacobi [POINTS] [TOLERANCE]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <minimp.h>

#define CHECK 50
#define MAX_SWEEPS 2000000

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 200;
  double tol = argc > 2 ? atof(argv[2]) : 1e-6;
  mmp_comm_t *w;
  int rank, size, left, right, sweep;
  long lo, cnt, i;
  double h, *u, *v, res = 0, t0;

  if (mmp_init(&argc, &argv) != 0)
    return 1;
  w = mmp_comm_world();
  rank = mmp_comm_rank(w);
  size = mmp_comm_size(w);
  left = rank > 0 ? rank - 1 : -1;
  right = rank + 1 < size ? rank + 1 : -1;
  /* Interior points 1 .. n, the slab [lo, lo + cnt), plus two ghosts. */
  lo = 1 + n * rank / size;
  cnt = 1 + n * (rank + 1) / size - lo;
  h = 1.0 / (double)(n + 1);
  u = calloc((size_t)cnt + 2, sizeof(double));
  v = calloc((size_t)cnt + 2, sizeof(double));
  if (u == NULL || v == NULL)
    return 1;
  t0 = mmp_wtime();
  for (sweep = 1; sweep <= MAX_SWEEPS; sweep++) {
    mmp_request_t *r[4] = {NULL, NULL, NULL, NULL};
    double *t;
    if (left >= 0) {
      mmp_irecv(&u[0], sizeof(double), left, 1, w, &r[0]);
      mmp_isend(&u[1], sizeof(double), left, 2, w, &r[1]);
    }
    if (right >= 0) {
      mmp_irecv(&u[cnt + 1], sizeof(double), right, 2, w, &r[2]);
      mmp_isend(&u[cnt], sizeof(double), right, 1, w, &r[3]);
    }
    mmp_waitall(4, r, NULL);
    for (i = 1; i <= cnt; i++)
      v[i] = 0.5 * (u[i - 1] + u[i + 1] + h * h);
    if (sweep % CHECK == 0) {
      double local = 0;
      for (i = 1; i <= cnt; i++)
        local = fmax(local, fabs(v[i] - u[i]));
      /* Every rank gets the same maximum, so all stop at the same sweep. */
      if (mmp_allreduce(&local, &res, 1, MMP_DOUBLE, MMP_MAX, w) != 0)
        return 1;
    }
    t = u;
    u = v;
    v = t;
    if (sweep % CHECK == 0 && res < tol)
      break;
  }
  {
    /* The error against u(x) = x(1 - x)/2, largest over all ranks. */
    double err = 0, gerr;
    for (i = 1; i <= cnt; i++) {
      double x = (double)(lo + i - 1) * h;
      err = fmax(err, fabs(u[i] - x * (1 - x) / 2));
    }
    mmp_reduce(&err, &gerr, 1, MMP_DOUBLE, MMP_MAX, 0, w);
    if (rank == 0)
      printf("jacobi: %ld points on %d ranks, %d sweeps, residual %.2e, "
             "max error %.2e, %.3f s\n",
             n, size, sweep, res, gerr, mmp_wtime() - t0);
  }
  free(u);
  free(v);
  return mmp_finalize() == 0 ? 0 : 1;
}
