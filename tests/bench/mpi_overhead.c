/* SPDX-License-Identifier: MIT */
/*
 * What libminimp-mpi adds to a message, without a network to blur it: one
 * process sends 8 bytes to itself and receives them, N times, through
 * minimp.h (mmp_send, mmp_recv) and through mpi.h (MPI_Send, MPI_Recv),
 * then the same with a posted receive (mmp_irecv/MPI_Irecv, send, wait),
 * alternating the two in ROUNDS rounds. Prints each pair's median time
 * per message in nanoseconds, and the difference (docs/performance.md).
 * With two ranks it is osu_latency's loop instead (rank 0 sends 8 bytes
 * and receives them back, rank 1 the reverse) through both interfaces in
 * the same two processes, so that the placement of the ranks and the
 * transport are the same for both; it prints half round trips.
 *   minimprun -n 1 mpi_overhead [N [ROUNDS]]
 *   minimprun -n 2 mpi_overhead [N [ROUNDS]]
 */
#include <stdio.h>
#include <stdlib.h>

#include "minimp.h"
#include "mpi.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ns per message of `n` self-sends; `mpi` picks the interface, `posted`
 * whether the receive is posted first. */
static double run(int n, int mpi, int posted) {
  mmp_comm_t *w = mmp_comm_world();
  char a[8] = {1}, b[8];
  double t0;
  int i, me = mmp_comm_rank(w);

  if (mmp_comm_size(w) == 2) { /* a ping-pong: half round trips */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (i = 0; i < n; i++) {
      if (mpi && me == 0) {
        MPI_Send(a, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(b, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (mpi) {
        MPI_Recv(b, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(a, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      } else if (me == 0) {
        mmp_send(a, 8, 1, 1, w);
        mmp_recv(b, 8, 1, 1, w, MMP_STATUS_IGNORE);
      } else {
        mmp_recv(b, 8, 0, 1, w, MMP_STATUS_IGNORE);
        mmp_send(a, 8, 0, 1, w);
      }
    }
    /* Rank 0's time, the way osu_latency reports it. */
    t0 = (MPI_Wtime() - t0) * 1e9 / n / 2;
    MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t0;
  }
  t0 = MPI_Wtime();
  for (i = 0; i < n; i++) {
    if (mpi && posted) {
      MPI_Request r;
      MPI_Irecv(b, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &r);
      MPI_Send(a, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (mpi) {
      MPI_Send(a, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      MPI_Recv(b, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (posted) {
      mmp_request_t *r;
      mmp_irecv(b, 8, 0, 1, w, &r);
      mmp_send(a, 8, 0, 1, w);
      mmp_wait(&r, MMP_STATUS_IGNORE);
    } else {
      mmp_send(a, 8, 0, 1, w);
      mmp_recv(b, 8, 0, 1, w, MMP_STATUS_IGNORE);
    }
  }
  return (MPI_Wtime() - t0) * 1e9 / n;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  int rounds = argc > 2 ? atoi(argv[2]) : 11, k, posted, pp;
  double *m = malloc((size_t)rounds * sizeof(double));
  double *p = malloc((size_t)rounds * sizeof(double));

  MPI_Init(&argc, &argv);
  pp = mmp_comm_size(mmp_comm_world()) == 2;
  for (posted = 0; posted < 2 - pp; posted++) {
    (void)run(n / 10, 0, posted); /* warm */
    (void)run(n / 10, 1, posted);
    for (k = 0; k < rounds; k++) {
      m[k] = run(n, k % 2, posted); /* alternate which goes first */
      p[k] = run(n, 1 - k % 2, posted);
      if (k % 2) {
        double t = m[k];
        m[k] = p[k];
        p[k] = t;
      }
    }
    if (mmp_comm_rank(mmp_comm_world()) == 0) {
      double mm = median(m, rounds), mp = median(p, rounds);
      printf("%-22s minimp.h %7.1f ns  mpi.h %7.1f ns  added %6.1f ns\n",
             pp       ? "ping-pong (half rtt)"
             : posted ? "irecv, send, wait"
                      : "send, recv",
             mm, mp, mp - mm);
    }
  }
  free(m);
  free(p);
  MPI_Finalize();
  return 0;
}
