/* SPDX-License-Identifier: MIT */
/*
 * The arrival-pattern benchmark behind minimp-bench bcast --method arrival.
 *
 * Each iteration, as in ../shared/anchors/mpi_bcast_bench.c: a barrier,
 * then every rank draws u uniform in [0, 1] and sleeps (sleep, not spin:
 * emulated hosts share CPU cores):
 *   all        MAX_IF * u, the root included;
 *   rootearly  MAX_IF * u, but the root never sleeps;
 *   late20     the root never sleeps; any other rank sleeps MAX_IF when
 *              u < 0.2;
 *   balanced   nobody sleeps, whatever MAX_IF;
 *   switch     balanced for the first half of the timed iterations,
 *              rootearly for the second (AUTO following a change);
 * then the timed broadcast. Each point first runs --warm iterations (4 by
 * default) untimed under the pattern of its first timed one: the steady
 * state of a job whose ranks keep arriving that way, which AUTO learns
 * (docs/algorithms.md). Every rank records its arrival a_i and exit
 * f_i on mmp_wtime(), a monotonic clock that processes on one machine
 * (and the emulated cluster's namespaces) share; across real hosts the
 * clocks differ and only per-node times e_i = f_i - a_i mean anything.
 *
 * Reported per (size, MAX_IF, algorithm), averaged over the iterations:
 *  - avg_us: the average per-node time e = mean_i e_i ([Patarasuk & Yuan
 * 2008], 2.2);
 *  - max_us: the worst rank's mean e_i (what the anchors print as max);
 *  - g_us: the worst per-node time of an iteration, max_i e_i;
 *  - wait_us: the part of e nobody can avoid when the root is late:
 *    sum_i max(0, a_0 - a_i) / n (receivers wait for the root);
 *  - the Lemma 2 lower bounds, with a_i < a_0 counted as a_0 plus that
 *    wait (as section 3.1 prescribes), Delta = max_i a_i - a_0:
 *      blocking      (W + Delta + (n - 1) T) / n
 *      non-blocking  (W + (n - 1) T) / n,        W = n * wait;
 *  - ratio_b, ratio_nb: the mean over iterations of e / bound, the
 *    measured competitive ratio in each model.
 * --raw FILE keeps the times behind these, one row per rank and iteration:
 * pattern,alg,p,size,maxif_us,iter,rank,arrival_us,exit_us,e_us, with
 * arrival and exit counted from the root's arrival.
 * T = T(m), the time to move m bytes between two ranks: --tm, or measured
 * here per size as the best of a few root -> neighbour transfers (m bytes
 * out, an empty reply back, minus half an empty round trip).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arrival.h"
#include "bench_cli.h"
#include "minimp.h"

#define TAG_T 111
#define TAG_GATHER 112

static const char *const pat_names[] = {"all", "rootearly", "late20",
                                        "balanced", "switch"};

const char *arrival_pattern_name(int i) {
  return i >= 0 && i < (int)(sizeof(pat_names) / sizeof(pat_names[0]))
             ? pat_names[i]
             : NULL;
}

int arrival_pattern_from_name(const char *name) {
  int i;

  for (i = 0; i < (int)(sizeof(pat_names) / sizeof(pat_names[0])); i++)
    if (strcmp(name, pat_names[i]) == 0)
      return i;
  return -1;
}

/* The broadcast algorithm numbered `alg` as minimp-bench numbers them. */
static const char *name_of(int alg) {
  static const int bcast = MMP_COLL_BCAST;

  return cli_alg(&bcast, alg);
}

static void die(const char *what, int rc) {
  fprintf(stderr, "minimp-bench: %s: %s\n", what, mmp_strerror(rc));
  mmp_abort(1);
}

#define CHK(call)                                                              \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0)                                                              \
      die(#call, rc_);                                                         \
  } while (0)

void bench_sleep_us(double us) {
  struct timespec ts;

  if (us <= 0)
    return;
  ts.tv_sec = (time_t)(us / 1e6);
  ts.tv_nsec = (long)((us - 1e6 * (double)ts.tv_sec) * 1e3);
  nanosleep(&ts, NULL);
}

/* xorshift64*: a per-rank stream of u in [0, 1]. */
static double uniform(unsigned long long *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (double)((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static void bcast(void *buf, size_t n, const arrival_cfg_t *c, int alg) {
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;

  o.algorithm = name_of(alg);
  o.mode = c->mode;
  o.segment = c->segment;
  if (strcmp(o.algorithm, "arrival_b") == 0 ||
      strcmp(o.algorithm, "arrival_nb") == 0)
    o.inner = c->inner > 0 ? name_of(c->inner) : NULL;
  CHK(mmp_bcast_ex(buf, n, c->root, mmp_comm_world(), &o));
}

/* T(m) between the root and its right neighbour, in seconds, on every
 * rank. */
static double measure_t(void *buf, size_t n, const arrival_cfg_t *c) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mmp_comm_rank(w), p = mmp_comm_size(w), i, k;
  int peer = (c->root + 1) % p;
  double best[2] = {INFINITY, INFINITY}, t0, v[1];

  for (i = 0; i < 12 && p > 1; i++) {
    size_t len = i % 2 ? n : 0; /* even: empty round trips */
    t0 = mmp_wtime();
    if (me == c->root) {
      CHK(mmp_send_ex(buf, len, peer, TAG_T, w, c->mode));
      CHK(mmp_recv(NULL, 0, peer, TAG_T, w, NULL));
    } else if (me == peer) {
      CHK(mmp_recv(buf, n, c->root, TAG_T, w, NULL));
      CHK(mmp_send(NULL, 0, c->root, TAG_T, w));
    }
    k = i % 2;
    best[k] = fmin(best[k], mmp_wtime() - t0);
  }
  v[0] = p > 1 ? fmax(best[1] - best[0] / 2, 1e-9) : 1e-9;
  CHK(mmp_bcast(v, sizeof(v), c->root, w));
  return v[0];
}

/* How long this rank sleeps before timed iteration k of `iters` (k < 0:
 * a warm-up one): the anchors' rule. */
static double delay(const arrival_cfg_t *c, double maxif, double u, int k,
                    int iters) {
  int me = mmp_comm_rank(mmp_comm_world()), pat = c->pattern;

  if (pat == ARR_PAT_SWITCH)
    pat = k < iters / 2 ? ARR_PAT_BALANCED : ARR_PAT_ROOTEARLY;
  if (maxif <= 0 || pat == ARR_PAT_BALANCED ||
      (me == c->root && pat != ARR_PAT_ALL))
    return 0;
  if (pat == ARR_PAT_LATE20)
    return u < 0.2 ? maxif : 0;
  return maxif * u;
}

/* Runs the timed iterations; at[2k], at[2k+1] = arrival, exit of k. */
static void timed(void *buf, size_t n, const arrival_cfg_t *c, int alg,
                  double maxif_s, unsigned long long *rng, double *at,
                  int iters) {
  int k, warm = c->warm >= 0 ? c->warm : 4;

  bcast(buf, n, c, alg); /* connections */
  for (k = -warm; k < iters; k++) {
    double u, t0;
    CHK(mmp_barrier(mmp_comm_world()));
    u = uniform(rng);
    bench_sleep_us(delay(c, maxif_s * 1e6, u, k < 0 ? 0 : k, iters));
    t0 = mmp_wtime();
    bcast(buf, n, c, alg);
    if (k >= 0) {
      at[2 * k] = t0;
      at[2 * k + 1] = mmp_wtime();
    }
  }
}

typedef struct metrics_s {
  double avg, max, g, wait, lb_b, lb_nb, ratio_b, ratio_nb;
} metrics_t;

/* Rank 0, from every rank's times (all[r * 2 * iters + ...]). */
static void compute(const double *all, int p, int root, int iters, double T,
                    metrics_t *m) {
  int k, i;
  double *per = calloc((size_t)p, sizeof(double));

  memset(m, 0, sizeof(*m));
  for (k = 0; k < iters; k++) {
    double a0 = all[(size_t)root * 2 * (size_t)iters + 2 * (size_t)k];
    double sum = 0, g = 0, W = 0, last = a0, lb_b, lb_nb;
    for (i = 0; i < p; i++) {
      const double *t = all + (size_t)i * 2 * (size_t)iters + 2 * (size_t)k;
      double e = t[1] - t[0];
      sum += e;
      per[i] += e / iters;
      g = fmax(g, e);
      W += fmax(0, a0 - t[0]);
      last = fmax(last, t[0]);
    }
    lb_b = (W + (last - a0) + (p - 1) * T) / p;
    lb_nb = (W + (p - 1) * T) / p;
    m->avg += sum / p / iters;
    m->g += g / iters;
    m->wait += W / p / iters;
    m->lb_b += lb_b / iters;
    m->lb_nb += lb_nb / iters;
    m->ratio_b += p > 1 ? sum / p / lb_b / iters : 0;
    m->ratio_nb += p > 1 ? sum / p / lb_nb / iters : 0;
  }
  for (i = 0; i < p; i++)
    m->max = fmax(m->max, per[i]);
  free(per);
}

static const char *const raw_header =
    "pattern,alg,p,size,maxif_us,iter,rank,arrival_us,exit_us,e_us";

static void raw_rows(FILE *f, const double *all, int p, int iters,
                     const arrival_cfg_t *c, int alg, size_t n,
                     double maxif_s) {
  int k, i;

  for (k = 0; k < iters; k++) {
    double a0 = all[(size_t)c->root * 2 * (size_t)iters + 2 * (size_t)k];
    for (i = 0; i < p; i++) {
      const double *t = all + (size_t)i * 2 * (size_t)iters + 2 * (size_t)k;
      fprintf(f, "%s,%s,%d,%zu,%.0f,%d,%d,%.1f,%.1f,%.1f\n",
              pat_names[c->pattern], name_of(alg), p, n, maxif_s * 1e6, k, i,
              (t[0] - a0) * 1e6, (t[1] - a0) * 1e6, (t[1] - t[0]) * 1e6);
    }
  }
}

/* Gathers the times at rank 0 and computes there (and writes them to
 * `raw` unless NULL); 1 on rank 0. */
static int gather(double *at, int iters, const arrival_cfg_t *c, double T,
                  metrics_t *m, FILE *raw, int alg, size_t n, double maxif_s) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mmp_comm_rank(w), p = mmp_comm_size(w), i;
  size_t per = 2 * (size_t)iters * sizeof(double);
  double *all;

  if (me != 0) {
    CHK(mmp_send(at, per, 0, TAG_GATHER, w));
    return 0;
  }
  all = malloc(per * (size_t)p);
  memcpy(all, at, per);
  for (i = 1; i < p; i++)
    CHK(mmp_recv(all + (size_t)i * 2 * (size_t)iters, per, i, TAG_GATHER, w,
                 NULL));
  compute(all, p, c->root, iters, T, m);
  if (raw != NULL)
    raw_rows(raw, all, p, iters, c, alg, n, maxif_s);
  free(all);
  return 1;
}

static const char *const header =
    "pattern,alg,p,size,maxif_us,maxif_T,T_us,avg_us,max_us,g_us,wait_us,"
    "lb_b_us,lb_nb_us,ratio_b,ratio_nb";

static void row(FILE *f, const arrival_cfg_t *c, int alg, size_t n,
                double maxif_s, double T, const metrics_t *m) {
  fprintf(f,
          "%s,%s,%d,%zu,%.0f,%.2f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.2f,"
          "%.2f\n",
          pat_names[c->pattern], name_of(alg), mmp_comm_size(mmp_comm_world()),
          n, maxif_s * 1e6, maxif_s / T, T * 1e6, m->avg * 1e6, m->max * 1e6,
          m->g * 1e6, m->wait * 1e6, m->lb_b * 1e6, m->lb_nb * 1e6, m->ratio_b,
          m->ratio_nb);
  fflush(f);
}

/* One (size, MAX_IF number xi, algorithm) point on every rank; the row on
 * rank 0. */
static void point(void *buf, size_t n, const arrival_cfg_t *c, int alg, int xi,
                  double T, FILE *csv, FILE *raw) {
  int iters = c->iters > 0 ? c->iters : 20;
  double maxif_s = c->maxif[xi] * (c->maxif_t[xi] ? T : 1e-6);
  double *at = calloc(2 * (size_t)iters, sizeof(double));
  /* Every algorithm meets the same arrival patterns at a given point: the
   * draws depend on the rank, the size and MAX_IF only. */
  unsigned long long rng =
      1234 + 7919ull * (unsigned)mmp_comm_rank(mmp_comm_world()) +
      104729ull * (unsigned long long)n + 1299709ull * (unsigned)xi;
  metrics_t m;

  timed(buf, n, c, alg, maxif_s, &rng, at, iters);
  if (gather(at, iters, c, T, &m, raw, alg, n, maxif_s)) {
    row(stdout, c, alg, n, maxif_s, T, &m);
    if (csv != NULL)
      row(csv, c, alg, n, maxif_s, T, &m);
  }
  free(at);
}

int bench_arrival(const arrival_cfg_t *c) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mmp_comm_rank(w), s, x, a;
  size_t maxn = 0;
  FILE *csv = NULL, *raw = NULL;
  uint8_t *buf;

  for (s = 0; s < c->nsizes; s++)
    maxn = c->sizes[s] > maxn ? c->sizes[s] : maxn;
  buf = calloc(maxn + 1, 1);
  if (me == 0) {
    csv = cli_open_csv(c->csv, header);
    raw = cli_open_csv(c->raw, raw_header);
    printf("%s\n", header);
  }
  for (s = 0; s < c->nsizes; s++) {
    size_t n = c->sizes[s];
    double T = c->tm_us > 0 ? c->tm_us * 1e-6 : measure_t(buf, n, c);
    for (x = 0; x < c->nmaxif; x++)
      for (a = 0; a < c->nalgs; a++)
        point(buf, n, c, c->algs[a], x, T, csv, raw);
  }
  if (csv != NULL)
    fclose(csv);
  if (raw != NULL)
    fclose(raw);
  free(buf);
  return 0;
}
