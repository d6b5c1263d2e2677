/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench: libminimp's benchmark tool, run through minimprun.
 *
 *   minimp-bench pingpong  [--sizes 8,64k,4m] [--iters N] [--mode M]
 *   minimp-bench bcast     [--algs all|auto,binomial,...] [--sizes 1k,64k,1m]
 *                          [--iters M] [--root R]
 *                          [--method ol|barrier|both|arrival]
 *                          [--mode auto|eager|rndv] [--segment S]
 *                          [--groups G] [--inner ALG] [--outer ALG]
 *                          [--radix K]
 *                          [--dests all|N] [--gap auto|US]
 *                          [--csv FILE] [--svg FILE]
 *                          [--pattern all|rootearly|late20|balanced|switch]
 *                          [--warm N]
 *                          [--maxif US,...|NT,...] [--tm US]
 *                          [--raw FILE]
 *   minimp-bench calibrate
 *   minimp-bench allreduce|reduce|reduce_scatter|gather|scatter|allgather|
 *                alltoall [--algs all|a,b] [--sizes 4,4k,1m] [--iters M]
 *                [--mode M] [--root R]   (coll_bench.c)
 *
 * pingpong: half round trip and one-way streaming with 64 messages in
 * flight between ranks 0 and 1, exactly as ../shared/anchors/
 * mpi_pingpong.c measures Open MPI ("size half_rtt_us MBps").
 *
 * bcast: broadcast time per algorithm and size, by two methods.
 *  - ol (seed 003, de Supinski & Karonis): for each destination i, the
 *    root measures RTT_i by ping-pong with i, then times M broadcasts each
 *    followed by an ACK from i alone (E_i); OL_i = E_i - RTT_i / 2. Only
 *    the path to i is kept from pipelining, so OL_i is the latency to i;
 *    max_i OL_i estimates the broadcast's latency. --dests N samples N
 *    destinations spread over the ranks (all by default).
 *    The seed's loop is valid only while E_i exceeds the gap g_j of every
 *    rank j on i's path, the root included (its section 4). Where the
 *    root's link is the slowest part, it is not: at 1 KiB on the emulated
 *    cluster each E_i of a tree whose root sends r messages came out near
 *    r frame times at 100 Mbit/s, whatever the depth of i, because the
 *    back-to-back broadcasts queue at the root's link (and empty a shaper's
 *    token bucket). So by default (--gap auto) each of the M broadcasts is
 *    timed alone and the root pauses, untimed, for twice that time (at
 *    least 1 ms) before the next, which lets its link drain, and at least
 *    as long as the links' burst allowance takes to refill after the most
 *    any rank sends, min(burst, (p - 1) m) beta from the measured model
 *    (at 64 KiB on the emulated cluster twice the time was 4.4 ms against
 *    5.5 ms to refill a 64 KB bucket, and the next broadcast started on
 *    links still part drained: 2.0-2.3 ms against 1.3-1.8 ms); --gap US
 *    pauses US microseconds, and --gap 0 runs the seed's back-to-back
 *    loop. RTT_i is always timed back to back. --raw FILE keeps the
 *    root's E_i, RTT_i and OL_i per destination.
 *  - barrier: M times a barrier then a timed broadcast, as the anchors
 *    (mpi_bcast_bench.c) do; reports the per-node time averaged over
 *    ranks and the worst rank's. The seed shows this over-estimates, so it
 *    is for comparison with the anchors in the same run.
 *  - arrival (seed 000, Fig. 6 and "20% late"; tests/bench/arrival.c):
 *    a barrier, a sleep per rank by --pattern bounded by each --maxif
 *    value (microseconds, or multiples of T(m) as "16T"), then the timed
 *    broadcast; reports the average and worst per-node times and the
 *    measured competitive ratio against the Lemma 2 bounds, with T(m)
 *    from --tm or measured. --svg PREFIX writes PREFIX-maxif.svg and
 *    PREFIX-size.svg (Figs. 7-10). Its own CSV columns are described
 *    there. --raw FILE keeps every rank's arrival and exit per iteration.
 *  Every algorithm runs --warm broadcasts (3 by default) before it is
 *  timed: the first use of an algorithm opens the connections its pattern
 *  needs, which costs several times a broadcast (docs/performance.md).
 *  --shuffle SEED runs the algorithms in an order drawn from SEED, the
 *  same on every rank, so that rounds of a comparison differ in order.
 *  Rows go to stdout (and --csv): method,alg,chosen,p,size,avg_us,max_us;
 *  for "auto" the chosen column names the algorithm AUTO picked. Progress
 *  goes to stderr.
 *
 * s2p: s-to-p broadcast against s, by distribution, and with the total
 * size fixed (see the s2p section below for its options).
 *
 * calibrate: measures the Hockney alpha and beta as broadcast selection
 * does and prints them as a profile (MINIMP_NET_ALPHA_US/_BETA_NS).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arrival.h"
#include "coll_bench.h"
#include "minimp.h"
#include "svgplot.h"

#define WINDOW 64
#define MAX_ITEMS 64

typedef struct opts_s {
  size_t sizes[MAX_ITEMS];
  int nsizes;
  int algs[MAX_ITEMS];
  int nalgs;
  int iters; /* 0: per command default */
  unsigned mode;
  size_t segment;
  int groups;
  int radix; /* knomial */
  int root;
  int method;      /* 1 ol, 2 barrier, 3 both, 4 arrival */
  int dests;       /* 0: all */
  double gap_us;   /* ol: pause before each broadcast; < 0: auto */
  double refill_s; /* ol, --gap auto: the burst allowance's refill time */
  const char *csv;
  const char *svg;
  const char *raw;
  int inner;
  int outer;
  int pattern;
  int warm;     /* untimed broadcasts first; -1: the method's default */
  long shuffle; /* > 0: the algorithms' order drawn from it */
  double maxif[MAX_ITEMS];
  int maxif_t[MAX_ITEMS];
  int nmaxif;
  double tm_us;
} opts_t;

static int usage(void) {
  fprintf(stderr,
          "usage: minimp-bench pingpong [--sizes a,b] [--iters N] [--mode M]\n"
          "       minimp-bench bcast [--algs all|a,b] [--sizes a,b] "
          "[--iters M]\n"
          "                          [--root R] [--method ol|barrier|both]\n"
          "                          [--mode auto|eager|rndv] [--segment S]\n"
          "                          [--groups G] [--inner ALG] [--outer ALG]\n"
          "                          [--radix K]\n"
          "                          [--dests all|N] [--gap auto|US]\n"
          "                          [--csv FILE] [--svg FILE]\n"
          "                          [--method arrival] "
          "[--pattern all|rootearly|late20|balanced|switch] [--warm N]\n"
          "                          [--shuffle SEED]\n"
          "                          [--maxif US,..|NT,..] [--tm US] "
          "[--raw FILE]\n"
          "       minimp-bench s2p [--algs all|a,b] [--dists all|a,b] "
          "[--sources 1,4,16]\n"
          "                        [--sizes 4k,64k] [--total 1m] "
          "[--sweep s|dist|total|all]\n"
          "                        [--iters M] [--mode M] [--rows R] "
          "[--csv FILE] [--svg FILE]\n"
          "       minimp-bench calibrate\n"
          "       minimp-bench allreduce|reduce|reduce_scatter|gather|scatter|"
          "allgather|alltoall\n"
          "                    [--algs all|a,b] [--sizes 4,4k,1m] [--iters M] "
          "[--mode M] [--root R]\n");
  return 2;
}

static int parse_size(const char *t, size_t *out) {
  char *end;
  unsigned long long v = strtoull(t, &end, 10);

  if (end == t)
    return -1;
  if (*end == 'k' || *end == 'K')
    v <<= 10, end++;
  else if (*end == 'm' || *end == 'M')
    v <<= 20, end++;
  if (*end != '\0')
    return -1;
  *out = (size_t)v;
  return 0;
}

static int parse_sizes(const char *s, opts_t *o) {
  char *copy = strdup(s), *tok, *save = NULL;
  int rc = 0;

  o->nsizes = 0;
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    if (o->nsizes == MAX_ITEMS || parse_size(tok, &o->sizes[o->nsizes]) != 0)
      rc = -1;
    else
      o->nsizes++;
  }
  free(copy);
  return rc == 0 && o->nsizes > 0 ? 0 : -1;
}

static int parse_algs(const char *s, opts_t *o) {
  char *copy = strdup(s), *tok, *save = NULL;
  int rc = 0, a;

  o->nalgs = 0;
  if (strcmp(s, "all") == 0) {
    for (a = 0; a < MMP_BCAST_ALG_COUNT; a++)
      o->algs[o->nalgs++] = a;
    free(copy);
    return 0;
  }
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    a = mmp_bcast_alg_from_name(tok);
    if (a < 0 || o->nalgs == MAX_ITEMS)
      rc = -1;
    else
      o->algs[o->nalgs++] = a;
  }
  free(copy);
  return rc == 0 && o->nalgs > 0 ? 0 : -1;
}

/* MAX_IF values: "0,700000" microseconds, or "1T,16T" multiples of T(m). */
static int parse_maxif(const char *s, opts_t *o) {
  char *copy = strdup(s), *tok, *save = NULL, *end;
  int rc = 0;

  o->nmaxif = 0;
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    double v = strtod(tok, &end);
    int t = *end == 'T';
    if (end == tok || v < 0 || end[t] != '\0' || o->nmaxif == MAX_ITEMS) {
      rc = -1;
      break;
    }
    o->maxif[o->nmaxif] = v;
    o->maxif_t[o->nmaxif++] = t;
  }
  free(copy);
  return rc == 0 && o->nmaxif > 0 ? 0 : -1;
}

static int parse_mode(const char *m, unsigned *out) {
  if (strcmp(m, "auto") == 0)
    *out = MMP_SEND_AUTO;
  else if (strcmp(m, "eager") == 0)
    *out = MMP_SEND_EAGER;
  else if (strcmp(m, "rndv") == 0)
    *out = MMP_SEND_RNDV;
  else
    return -1;
  return 0;
}

/* "auto" (-1) or a pause in microseconds, 0 to 10 s. */
static int parse_gap(const char *v, double *out) {
  char *end;

  if (strcmp(v, "auto") == 0) {
    *out = -1;
    return 0;
  }
  *out = strtod(v, &end);
  return end != v && *end == '\0' && *out >= 0 && *out <= 1e7 ? 0 : -1;
}

static int parse_opts(int argc, char **argv, opts_t *o) {
  int i;

  memset(o, 0, sizeof(*o));
  o->method = 3;
  o->gap_us = -1;
  o->warm = -1;
  for (i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = v == NULL;
    if (strcmp(a, "--sizes") == 0)
      bad = bad || parse_sizes(v, o);
    else if (strcmp(a, "--algs") == 0)
      bad = bad || parse_algs(v, o);
    else if (strcmp(a, "--iters") == 0)
      bad = bad || (o->iters = atoi(v)) <= 0;
    else if (strcmp(a, "--mode") == 0)
      bad = bad || parse_mode(v, &o->mode);
    else if (strcmp(a, "--segment") == 0)
      bad = bad || parse_size(v, &o->segment);
    else if (strcmp(a, "--groups") == 0)
      bad = bad || (o->groups = atoi(v)) < 0;
    else if (strcmp(a, "--radix") == 0)
      bad = bad || (o->radix = atoi(v)) < 0;
    else if (strcmp(a, "--root") == 0)
      bad = bad || (o->root = atoi(v)) < 0;
    else if (strcmp(a, "--gap") == 0)
      bad = bad || parse_gap(v, &o->gap_us) != 0;
    else if (strcmp(a, "--dests") == 0)
      o->dests = bad || strcmp(v, "all") == 0 ? 0 : atoi(v);
    else if (strcmp(a, "--maxif") == 0)
      bad = bad || parse_maxif(v, o);
    else if (strcmp(a, "--warm") == 0)
      bad = bad || (o->warm = atoi(v)) < 0;
    else if (strcmp(a, "--shuffle") == 0)
      bad = bad || (o->shuffle = atol(v)) <= 0;
    else if (strcmp(a, "--pattern") == 0)
      bad = bad || (o->pattern = arrival_pattern_from_name(v)) < 0;
    else if (strcmp(a, "--tm") == 0)
      bad = bad || (o->tm_us = atof(v)) <= 0;
    else if (strcmp(a, "--inner") == 0)
      bad = bad || (o->inner = mmp_bcast_alg_from_name(v)) < 0;
    else if (strcmp(a, "--outer") == 0)
      bad = bad || (o->outer = mmp_bcast_alg_from_name(v)) < 0;
    else if (strcmp(a, "--csv") == 0)
      o->csv = v;
    else if (strcmp(a, "--svg") == 0)
      o->svg = v;
    else if (strcmp(a, "--raw") == 0)
      o->raw = v;
    else if (strcmp(a, "--method") == 0)
      bad = bad || (o->method = strcmp(v, "ol") == 0        ? 1
                                : strcmp(v, "barrier") == 0 ? 2
                                : strcmp(v, "both") == 0    ? 3
                                : strcmp(v, "arrival") == 0 ? 4
                                                            : 0) == 0;
    else
      return -1;
    if (bad)
      return -1;
    i++;
  }
  return 0;
}

#define CHECK(call)                                                            \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0) {                                                            \
      fprintf(stderr, "minimp-bench: %s failed: %s\n", #call,                  \
              mmp_strerror(rc_));                                              \
      mmp_abort(1);                                                            \
    }                                                                          \
  } while (0)

/* Progress on stderr from rank 0: whole lines, so that minimprun's line
 * forwarding shows them as they come. */
/* Progress on rank 0's stderr: one line that updates itself on a
 * terminal, a line each elsewhere (a log). `done` ends the line. */
static void progress(const char *fmt, ...) {
  va_list ap;
  int tty = isatty(STDERR_FILENO);

  if (mmp_comm_rank(mmp_comm_world()) != 0)
    return;
  if (tty)
    fputs("\r\033[K", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (!tty)
    fputc('\n', stderr);
  fflush(stderr);
}

static void progress_done(void) {
  if (mmp_comm_rank(mmp_comm_world()) == 0 && isatty(STDERR_FILENO)) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
}

/* ---- pingpong ----------------------------------------------------------- */

static void pingpong_one(size_t n, int it, unsigned mode, double *lat,
                         double *bw) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mmp_comm_rank(w), i, k;
  char *b = calloc(n ? n : 1, 1);
  mmp_request_t *q[WINDOW];
  double t0;

  CHECK(mmp_send(NULL, 0, 1 - r, 9, w));
  CHECK(mmp_recv(NULL, 0, 1 - r, 9, w, NULL));
  t0 = mmp_wtime();
  for (i = 0; i < it; i++) {
    if (r == 0) {
      CHECK(mmp_send_ex(b, n, 1, 1, w, mode));
      CHECK(mmp_recv(b, n, 1, 1, w, NULL));
    } else {
      CHECK(mmp_recv(b, n, 0, 1, w, NULL));
      CHECK(mmp_send_ex(b, n, 0, 1, w, mode));
    }
  }
  *lat = (mmp_wtime() - t0) / it / 2;
  CHECK(mmp_send(NULL, 0, 1 - r, 9, w));
  CHECK(mmp_recv(NULL, 0, 1 - r, 9, w, NULL));
  t0 = mmp_wtime();
  for (i = 0; i < it; i += WINDOW) {
    for (k = 0; k < WINDOW; k++) {
      if (r == 0)
        CHECK(mmp_isend_ex(b, n, 1, 2, w, mode, &q[k]));
      else
        CHECK(mmp_irecv(b, n, 0, 2, w, &q[k]));
    }
    CHECK(mmp_waitall(WINDOW, q, NULL));
  }
  if (r == 0)
    CHECK(mmp_recv(NULL, 0, 1, 3, w, NULL));
  else
    CHECK(mmp_send(NULL, 0, 0, 3, w));
  *bw = (double)n * ((it + WINDOW - 1) / WINDOW * WINDOW) / (mmp_wtime() - t0) /
        1e6;
  free(b);
}

static int cmd_pingpong(opts_t *o) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mmp_comm_rank(w), s;
  FILE *csv = NULL;

  if (o->nsizes == 0)
    parse_sizes("8,65536,4194304", o);
  if (mmp_comm_size(w) != 2) {
    if (r == 0)
      fprintf(stderr, "minimp-bench pingpong needs exactly 2 ranks\n");
    return 2;
  }
  if (r == 0 && o->csv != NULL) {
    csv = fopen(o->csv, "w");
    if (csv == NULL) {
      perror(o->csv);
      return 1;
    }
    fprintf(csv, "size,half_rtt_us,bandwidth_MBps\n");
  }
  if (r == 0)
    printf("%10s %14s %14s\n", "size", "half_rtt_us", "stream_MBps");
  for (s = 0; s < o->nsizes; s++) {
    size_t n = o->sizes[s];
    int it = o->iters > 0 ? o->iters : (n > 100000 ? 200 : 4000);
    double lat = 0, bw = 0;
    int pass;
    for (pass = 0; pass < 2; pass++) /* the first warms up */
      pingpong_one(n, it, o->mode, &lat, &bw);
    if (r == 0) {
      printf("%10zu %14.2f %14.1f\n", n, lat * 1e6, bw);
      fflush(stdout);
      if (csv != NULL)
        fprintf(csv, "%zu,%.3f,%.1f\n", n, lat * 1e6, bw);
    }
  }
  if (csv != NULL)
    fclose(csv);
  return 0;
}

/* ---- bcast -------------------------------------------------------------- */

static void bcast_once(void *buf, size_t n, int root, const opts_t *o,
                       int alg) {
  mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;

  bo.algorithm = alg;
  bo.mode = o->mode;
  bo.segment = o->segment;
  if (alg == MMP_BCAST_HIERARCHICAL) {
    bo.groups = o->groups;
    bo.inner = o->inner;
    bo.outer = o->outer;
  }
  if (alg == MMP_BCAST_KNOMIAL)
    bo.radix = o->radix;
  CHECK(mmp_bcast_ex(buf, n, root, mmp_comm_world(), &bo));
}

/* The untimed pause before the next of ol_to's broadcasts, after one that
 * took `took` seconds. */
static double ol_gap_us(const opts_t *o, double took) {
  double g = 2 * took * 1e6, refill = o->refill_s * 1e6;

  if (o->gap_us >= 0)
    return o->gap_us;
  g = g > refill ? g : refill;
  return g > 1000 ? g : 1000;
}

/* How long the links' burst allowance takes to refill after an n-byte
 * broadcast: no rank sends more than (p - 1) n bytes (the flat tree's
 * root). Collective: the model may be measured now. */
static double ol_refill_s(size_t n) {
  mmp_comm_t *w = mmp_comm_world();
  double most = (double)n * (mmp_comm_size(w) - 1);
  mmp_netmodel_t nm;

  CHECK(mmp_comm_netmodel(w, &nm));
  return (most < nm.burst ? most : (double)nm.burst) * nm.beta;
}

/* Seed 003: latency to destination i, corrected for the ACK. On the root,
 * e_rtt receives E_i and RTT_i. */
static double ol_to(void *buf, size_t n, int root, int dest, int M,
                    const opts_t *o, int alg, double e_rtt[2]) {
  mmp_comm_t *w = mmp_comm_world();
  int me = mmp_comm_rank(w), x;
  double t1 = 0, rtt = 0, e = 0, t0 = 0, took = 0;

  /* The first ping-pong is not timed: it may open the connection. */
  if (me == root) {
    for (x = -1; x < M; x++) {
      if (x == 0)
        t1 = mmp_wtime();
      CHECK(mmp_send(NULL, 0, dest, 101, w));
      CHECK(mmp_recv(NULL, 0, dest, 101, w, NULL));
    }
    rtt = (mmp_wtime() - t1) / M;
  } else if (me == dest) {
    for (x = -1; x < M; x++) {
      CHECK(mmp_recv(NULL, 0, root, 101, w, NULL));
      CHECK(mmp_send(NULL, 0, root, 101, w));
    }
  }
  /* One broadcast and ACK first, then M timed ones, each after the pause
   * (none with --gap 0: the seed's back-to-back loop). */
  for (x = 0; x <= M; x++) {
    if (me == root) {
      if (x > 0)
        bench_sleep_us(ol_gap_us(o, took));
      t0 = mmp_wtime();
    }
    bcast_once(buf, n, root, o, alg);
    if (me == root) {
      CHECK(mmp_recv(NULL, 0, dest, 102, w, NULL));
      took = mmp_wtime() - t0;
      e += x > 0 ? took : 0;
    } else if (me == dest) {
      CHECK(mmp_send(NULL, 0, root, 102, w));
    }
  }
  e /= M;
  e_rtt[0] = e;
  e_rtt[1] = rtt;
  return e - rtt / 2;
}

/* raw: the root's file for one row per destination, or NULL. */
static void method_ol(void *buf, size_t n, const opts_t *o, int alg, int M,
                      FILE *raw, double *avg, double *mx) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), root = o->root % p, i, count = 0;
  int want = o->dests > 0 && o->dests < p - 1 ? o->dests : p - 1;
  double sum = 0, worst = 0, er[2] = {0, 0};

  for (i = 1; i <= want; i++) {
    /* Spread the sampled destinations over the virtual ranks. */
    int dest = (root + (i * (p - 1) + want - 1) / want) % p;
    double ol = ol_to(buf, n, root, dest, M, o, alg, er);
    if (raw != NULL)
      fprintf(raw, "%s,%d,%zu,%d,%.1f,%.1f,%.1f\n", mmp_bcast_alg_name(alg), p,
              n, dest, er[0] * 1e6, er[1] * 1e6, ol * 1e6);
    sum += ol;
    worst = ol > worst ? ol : worst;
    count++;
  }
  /* Only the root timed anything; rank 0 prints. */
  er[0] = count ? sum / count : 0;
  er[1] = worst;
  CHECK(mmp_bcast(er, sizeof(er), root, w));
  *avg = er[0];
  *mx = er[1];
}

static void method_barrier(void *buf, size_t n, const opts_t *o, int alg, int M,
                           double *avg, double *mx) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), x;
  double mine = 0, all[2], t0;

  for (x = 0; x < M; x++) {
    CHECK(mmp_barrier(w));
    t0 = mmp_wtime();
    bcast_once(buf, n, o->root % p, o, alg);
    mine += mmp_wtime() - t0;
  }
  mine /= M;
  /* Gather the per-node times at rank 0 (point-to-point, tag 103). */
  if (mmp_comm_rank(w) == 0) {
    double sum = mine, worst = mine, v;
    for (x = 1; x < p; x++) {
      CHECK(mmp_recv(&v, sizeof(v), MMP_ANY_SOURCE, 103, w, NULL));
      sum += v;
      worst = v > worst ? v : worst;
    }
    all[0] = sum / p;
    all[1] = worst;
  } else {
    CHECK(mmp_send(&mine, sizeof(mine), 0, 103, w));
  }
  CHECK(mmp_bcast(all, sizeof(all), 0, w));
  *avg = all[0];
  *mx = all[1];
}

/* Fisher-Yates with a fixed stream: every rank draws the same order. */
static void shuffle_algs(opts_t *o, unsigned long long seed) {
  int i;

  for (i = o->nalgs - 1; i > 0; i--) {
    int j, t;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    j = (int)((seed >> 33) % (unsigned long long)(i + 1));
    t = o->algs[i];
    o->algs[i] = o->algs[j];
    o->algs[j] = t;
  }
}

static int default_iters(size_t n) {
  return n >= (1u << 20) ? 5 : n >= 65536 ? 20 : 100;
}

static int cmd_arrival(opts_t *o) {
  arrival_cfg_t c;

  memset(&c, 0, sizeof(c));
  if (o->nsizes == 0)
    parse_sizes("1m", o);
  if (o->nalgs == 0)
    parse_algs("binomial,pipeline,scatter_ring,arrival_b,arrival_nb", o);
  if (o->nmaxif == 0)
    parse_maxif("0,1T,2T,4T,8T,16T", o);
  if (o->shuffle > 0)
    shuffle_algs(o, (unsigned long long)o->shuffle); /* one order per run */
  c.sizes = o->sizes;
  c.nsizes = o->nsizes;
  c.algs = o->algs;
  c.nalgs = o->nalgs;
  c.maxif = o->maxif;
  c.maxif_t = o->maxif_t;
  c.nmaxif = o->nmaxif;
  c.pattern = o->pattern;
  c.warm = o->warm;
  c.iters = o->iters;
  c.mode = o->mode;
  c.segment = o->segment;
  c.inner = o->inner;
  c.root = o->root % mmp_comm_size(mmp_comm_world());
  c.tm_us = o->tm_us;
  c.csv = o->csv;
  c.svg = o->svg;
  c.raw = o->raw;
  return bench_arrival(&c);
}

static int cmd_bcast(opts_t *o) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), r = mmp_comm_rank(w), a, s, m;
  FILE *csv = NULL, *raw = NULL;
  size_t maxn = 0;
  uint8_t *buf;
  static svg_chart_t chart;

  if (o->nsizes == 0)
    parse_sizes("1k,64k,1m", o);
  if (o->nalgs == 0)
    parse_algs("all", o);
  for (s = 0; s < o->nsizes; s++)
    maxn = o->sizes[s] > maxn ? o->sizes[s] : maxn;
  buf = calloc(maxn + 1, 1);
  if (r == 0 && o->csv != NULL) {
    csv = fopen(o->csv, "w");
    if (csv == NULL) {
      perror(o->csv);
      mmp_abort(1);
    }
    fprintf(csv, "method,alg,chosen,p,size,avg_us,max_us\n");
  }
  if (r == o->root % p && o->raw != NULL && (o->method & 1)) {
    raw = fopen(o->raw, "w");
    if (raw == NULL) {
      perror(o->raw);
      mmp_abort(1);
    }
    fprintf(raw, "alg,p,size,dest,e_us,rtt_us,ol_us\n");
  }
  if (r == 0)
    printf("%-8s %-13s %-13s %4s %10s %12s %12s\n", "method", "algorithm",
           "chosen", "p", "size", "avg_us", "max_us");
  for (s = 0; s < o->nsizes; s++) {
    size_t n = o->sizes[s];
    int M = o->iters > 0 ? o->iters : default_iters(n);
    const char *chosen = "-";
    mmp_bcast_opts_t sel;
    CHECK(mmp_bcast_select(w, n, &sel));
    chosen = mmp_bcast_alg_name(sel.algorithm);
    o->refill_s = ol_refill_s(n);
    if (o->shuffle > 0)
      shuffle_algs(o, (unsigned long long)o->shuffle + (unsigned long long)s);
    for (a = 0; a < o->nalgs; a++) {
      int alg = o->algs[a], k;
      for (k = 0; k < (o->warm >= 0 ? o->warm : 3); k++)
        bcast_once(buf, n, o->root % p, o, alg); /* connect, warm up */
      for (m = 1; m <= 2; m++) {
        double avg = 0, mx = 0;
        if (!(o->method & m))
          continue;
        progress("[%d/%d] %s %zu B by %s...", s * o->nalgs + a + 1,
                 o->nsizes * o->nalgs, mmp_bcast_alg_name(alg), n,
                 m == 1 ? "max OL_i" : "barrier loop");
        if (m == 1)
          method_ol(buf, n, o, alg, M, raw, &avg, &mx);
        else
          method_barrier(buf, n, o, alg, M, &avg, &mx);
        if (r != 0)
          continue;
        printf("%-8s %-13s %-13s %4d %10zu %12.1f %12.1f\n",
               m == 1 ? "ol" : "barrier", mmp_bcast_alg_name(alg),
               alg == MMP_BCAST_AUTO ? chosen : "-", p, n, avg * 1e6, mx * 1e6);
        fflush(stdout);
        /* The plot shows max OL_i (or, without it, the barrier average). */
        if (m == 1 || o->method == 2)
          svg_add(&chart, mmp_bcast_alg_name(alg), (double)n,
                  (m == 1 ? mx : avg) * 1e6);
        if (csv != NULL)
          fprintf(csv, "%s,%s,%s,%d,%zu,%.1f,%.1f\n", m == 1 ? "ol" : "barrier",
                  mmp_bcast_alg_name(alg), alg == MMP_BCAST_AUTO ? chosen : "",
                  p, n, avg * 1e6, mx * 1e6);
      }
    }
  }
  progress_done();
  if (csv != NULL)
    fclose(csv);
  if (raw != NULL)
    fclose(raw);
  if (r == 0 && o->svg != NULL) {
    char title[128];
    snprintf(title, sizeof(title), "broadcast, p = %d: time against size", p);
    chart.title = title;
    chart.xlabel = "message size (bytes)";
    chart.ylabel = o->method & 1 ? "max OL_i (us)" : "avg per-node time (us)";
    if (svg_write(&chart, o->svg) != 0)
      perror(o->svg);
  }
  free(buf);
  return 0;
}

/* ---- s2p ---------------------------------------------------------------- */

/*
 * s-to-p broadcast, in the spirit of seed 002's Figures 3, 6 and 7. Every
 * rank times M calls, each after a barrier; the per-node time is averaged
 * over ranks (avg_us) and the slowest rank's is reported (max_us). Three
 * sweeps: time against s for each length L ("s"), time by distribution
 * for one s ("dist"), and time against s with the total s L fixed
 * ("total"). Its own options:
 *   --algs all|auto,br_lin,...  --dists all|equal,...  --sources 1,4,16
 *   --sizes 4k,64k  --total 1m  --sweep s|dist|total|all  --iters M
 *   --mode auto|eager|rndv  --rows R  --csv FILE  --svg FILE
 * With --svg F, each sweep writes F with "-s", "-dist" or "-total" before
 * its extension.
 */
typedef struct s2p_bench_s {
  int algs[MAX_ITEMS], nalgs;
  int dists[MAX_ITEMS], ndists;
  int srcs[MAX_ITEMS], nsrcs;
  size_t sizes[MAX_ITEMS];
  int nsizes;
  size_t total;
  int sweeps; /* 1 s, 2 dist, 4 total */
  int iters, rows;
  unsigned mode;
  const char *csv, *svg;
  FILE *csvf;
} s2p_bench_t;

/* A comma list of names (or "all") through `from_name`, or of numbers. */
static int s2p_parse_list(const char *s, int *out, int *n, int count,
                          int (*from_name)(const char *)) {
  char *copy = strdup(s), *tok, *save = NULL;
  int rc = 0, v;

  *n = 0;
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    if (from_name != NULL && strcmp(tok, "all") == 0) {
      for (v = 0; v < count && *n < MAX_ITEMS; v++)
        out[(*n)++] = v;
      continue;
    }
    v = from_name != NULL ? from_name(tok) : atoi(tok);
    if (v < 0 || (from_name == NULL && v == 0) || *n == MAX_ITEMS)
      rc = -1;
    else
      out[(*n)++] = v;
  }
  free(copy);
  return rc == 0 && *n > 0 ? 0 : -1;
}

static int s2p_parse(int argc, char **argv, s2p_bench_t *b) {
  opts_t sz;
  int i;

  memset(b, 0, sizeof(*b));
  b->total = 1u << 20;
  b->sweeps = 7;
  for (i = 2; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    int bad = 0;
    if (strcmp(a, "--algs") == 0)
      bad = s2p_parse_list(v, b->algs, &b->nalgs, MMP_S2P_ALG_COUNT,
                           mmp_s2p_alg_from_name);
    else if (strcmp(a, "--dists") == 0)
      bad = s2p_parse_list(v, b->dists, &b->ndists, MMP_S2P_DIST_COUNT,
                           mmp_s2p_dist_from_name);
    else if (strcmp(a, "--sources") == 0)
      bad = s2p_parse_list(v, b->srcs, &b->nsrcs, 0, NULL);
    else if (strcmp(a, "--sizes") == 0) {
      bad = parse_sizes(v, &sz);
      memcpy(b->sizes, sz.sizes, sizeof(b->sizes));
      b->nsizes = sz.nsizes;
    } else if (strcmp(a, "--total") == 0)
      bad = parse_size(v, &b->total) || b->total == 0;
    else if (strcmp(a, "--sweep") == 0)
      bad = (b->sweeps = strcmp(v, "s") == 0       ? 1
                         : strcmp(v, "dist") == 0  ? 2
                         : strcmp(v, "total") == 0 ? 4
                         : strcmp(v, "all") == 0   ? 7
                                                   : 0) == 0;
    else if (strcmp(a, "--iters") == 0)
      bad = (b->iters = atoi(v)) <= 0;
    else if (strcmp(a, "--rows") == 0)
      bad = (b->rows = atoi(v)) < 0;
    else if (strcmp(a, "--mode") == 0)
      bad = parse_mode(v, &b->mode);
    else if (strcmp(a, "--csv") == 0)
      b->csv = v;
    else if (strcmp(a, "--svg") == 0)
      b->svg = v;
    else
      bad = 1;
    if (bad)
      return -1;
  }
  return i == argc ? 0 : -1;
}

/* Fills in what the options left open, for p ranks. */
static void s2p_defaults(s2p_bench_t *b, int p) {
  int s;

  if (b->nalgs == 0)
    s2p_parse_list("all", b->algs, &b->nalgs, MMP_S2P_ALG_COUNT,
                   mmp_s2p_alg_from_name);
  if (b->ndists == 0)
    b->dists[b->ndists++] = MMP_S2P_DIST_EQUAL;
  if (b->nsizes == 0) {
    b->sizes[b->nsizes++] = 4096;
    b->sizes[b->nsizes++] = 65536;
  }
  if (b->nsrcs == 0) {
    for (s = 1; s < p && b->nsrcs < MAX_ITEMS - 1; s *= 2)
      b->srcs[b->nsrcs++] = s;
    b->srcs[b->nsrcs++] = p;
  }
}

/* Times M s-to-p calls of `alg`; every rank learns the average per-node
 * time and the slowest rank's, through an s-to-p of the timings. */
static void s2p_time(const s2p_bench_t *b, int alg, const size_t *lens,
                     const uint8_t *mine, uint8_t *out, size_t total, int M,
                     double *avg, double *mx) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), me = mmp_comm_rank(w), x;
  mmp_s2p_opts_t so = MMP_S2P_OPTS_INIT;
  double t = 0, t0, *all = malloc((size_t)p * sizeof(double));

  so.algorithm = alg;
  so.mode = b->mode;
  so.rows = b->rows;
  for (x = -1; x < M; x++) { /* the first call warms up */
    CHECK(mmp_barrier(w));
    t0 = mmp_wtime();
    CHECK(mmp_bcast_s2p(mine, lens[me] == MMP_S2P_NONE ? 0 : lens[me],
                        lens[me] != MMP_S2P_NONE, out, total, lens, NULL, w,
                        &so));
    if (x >= 0)
      t += mmp_wtime() - t0;
  }
  t /= M;
  CHECK(mmp_bcast_s2p(&t, sizeof(t), 1, all, (size_t)p * sizeof(double), NULL,
                      NULL, w, NULL));
  *avg = *mx = 0;
  for (x = 0; x < p; x++) {
    *avg += all[x] / p;
    *mx = all[x] > *mx ? all[x] : *mx;
  }
  free(all);
}

/* One point: s sources of distribution d with L bytes each, every
 * algorithm; prints and records the rows. */
static void s2p_point(s2p_bench_t *b, const char *sweep, int d, int s, size_t L,
                      svg_chart_t *chart, double xval) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), i, a;
  unsigned char *mark = malloc((size_t)p);
  size_t *lens = malloc((size_t)p * sizeof(size_t)), total = (size_t)s * L;
  uint8_t *mine = calloc(L + 1, 1), *out = malloc(total + 1);
  int M = b->iters > 0               ? b->iters
          : total >= (size_t)1 << 20 ? 5
          : total >= 65536           ? 20
                                     : 100;
  mmp_s2p_opts_t sel;

  CHECK(mmp_s2p_dist(d, s, p, b->rows, mark));
  for (i = 0; i < p; i++)
    lens[i] = mark[i] ? L : MMP_S2P_NONE;
  CHECK(mmp_s2p_select(w, lens, &sel));
  for (a = 0; a < b->nalgs; a++) {
    double avg, mx;
    const char *name = mmp_s2p_alg_name(b->algs[a]);
    const char *chosen =
        b->algs[a] == MMP_S2P_AUTO ? mmp_s2p_alg_name(sel.algorithm) : "-";
    progress("[%s] %s %s s=%d L=%zu...", sweep, name, mmp_s2p_dist_name(d), s,
             L);
    s2p_time(b, b->algs[a], lens, mine, out, total, M, &avg, &mx);
    if (mmp_comm_rank(w) != 0)
      continue;
    printf("%-6s %-16s %-16s %-7s %4d %4d %9zu %10zu %11.1f %11.1f\n", sweep,
           name, chosen, mmp_s2p_dist_name(d), p, s, L, total, avg * 1e6,
           mx * 1e6);
    fflush(stdout);
    if (b->csvf != NULL)
      fprintf(b->csvf, "%s,%s,%s,%s,%d,%d,%zu,%zu,%.1f,%.1f\n", sweep, name,
              b->algs[a] == MMP_S2P_AUTO ? chosen : "", mmp_s2p_dist_name(d), p,
              s, L, total, avg * 1e6, mx * 1e6);
    {
      /* One line per algorithm and length when the sweep mixes lengths. */
      char series[32];
      snprintf(series, sizeof(series),
               b->nsizes > 1 && *sweep == 's' ? "%s %zu" : "%s", name, L);
      svg_add(chart, series, xval, mx * 1e6);
    }
  }
  free(mark);
  free(lens);
  free(mine);
  free(out);
}

/* Writes `chart` to the --svg path with `tag` before its extension. */
static void s2p_svg(const s2p_bench_t *b, svg_chart_t *chart, const char *tag,
                    const char *title, const char *xlabel) {
  char path[512];
  const char *dot;
  int stem;

  if (b->svg == NULL || mmp_comm_rank(mmp_comm_world()) != 0)
    return;
  dot = strrchr(b->svg, '.');
  stem = dot != NULL ? (int)(dot - b->svg) : (int)strlen(b->svg);
  snprintf(path, sizeof(path), "%.*s-%s%s", stem, b->svg, tag,
           dot != NULL ? dot : ".svg");
  chart->title = title;
  chart->xlabel = xlabel;
  chart->ylabel = "slowest rank's time (us)";
  if (svg_write(chart, path) != 0)
    perror(path);
}

static void s2p_sweeps(s2p_bench_t *b, int p) {
  static svg_chart_t cs, cd, ct;
  char title[160];
  int i, k;

  if (b->sweeps & 1) {
    for (k = 0; k < b->nsizes; k++)
      for (i = 0; i < b->nsrcs; i++)
        s2p_point(b, "s", b->dists[0], b->srcs[i], b->sizes[k], &cs,
                  b->srcs[i]);
    snprintf(title, sizeof(title), "s-to-p, p = %d, %s: time against s", p,
             mmp_s2p_dist_name(b->dists[0]));
    s2p_svg(b, &cs, "s", title, "sources s");
  }
  if (b->sweeps & 2) {
    int s = b->nsrcs > 1 ? b->srcs[b->nsrcs / 2] : b->srcs[0];
    for (i = 0; i < MMP_S2P_DIST_COUNT; i++)
      s2p_point(b, "dist", i, s, b->sizes[0], &cd, i + 1);
    snprintf(title, sizeof(title),
             "s-to-p, p = %d, s = %d: by distribution (1 row, 2 col, 3 "
             "equal, 4 Dr, 5 Dl, 6 band, 7 cross, 8 square)",
             p, s);
    s2p_svg(b, &cd, "dist", title, "distribution");
  }
  if (b->sweeps & 4) {
    for (i = 0; i < b->nsrcs; i++)
      s2p_point(b, "total", b->dists[0], b->srcs[i], b->total / b->srcs[i], &ct,
                b->srcs[i]);
    snprintf(title, sizeof(title), "s-to-p, p = %d: total %zu bytes fixed", p,
             b->total);
    s2p_svg(b, &ct, "total", title, "sources s");
  }
}

static int cmd_s2p(s2p_bench_t *b) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), i;

  s2p_defaults(b, p);
  for (i = 0; i < b->nsrcs; i++)
    if (b->srcs[i] > p) {
      if (mmp_comm_rank(w) == 0)
        fprintf(stderr, "minimp-bench s2p: s = %d > p = %d\n", b->srcs[i], p);
      return 2;
    }
  if (mmp_comm_rank(w) == 0 && b->csv != NULL) {
    b->csvf = fopen(b->csv, "w");
    if (b->csvf == NULL) {
      perror(b->csv);
      mmp_abort(1);
    }
    fprintf(b->csvf, "sweep,alg,chosen,dist,p,s,len,total,avg_us,max_us\n");
  }
  if (mmp_comm_rank(w) == 0)
    printf("%-6s %-16s %-16s %-7s %4s %4s %9s %10s %11s %11s\n", "sweep",
           "algorithm", "chosen", "dist", "p", "s", "len", "total", "avg_us",
           "max_us");
  s2p_sweeps(b, p);
  if (b->csvf != NULL)
    fclose(b->csvf);
  return 0;
}

/* ---- calibrate ---------------------------------------------------------- */

static int cmd_calibrate(void) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_netmodel_t nm;

  if (mmp_comm_size(w) < 2) {
    fprintf(stderr, "minimp-bench calibrate needs at least 2 ranks\n");
    return 2;
  }
  /* Exactly what automatic selection measures (collectives/netmodel.c). */
  CHECK(mmp_comm_netmodel(w, &nm));
  if (mmp_comm_rank(w) != 0)
    return 0;
  printf("MINIMP_NET_ALPHA_US=%.2f\nMINIMP_NET_BETA_NS=%.4f\n"
         "MINIMP_NET_BURST_BYTES=%.0f\nMINIMP_NET_SHARED_CPUS=%d\n"
         "MINIMP_NET_GAMMA_NS=%.4f\n",
         nm.alpha * 1e6, nm.beta * 1e9, nm.burst, nm.shared_cpus,
         nm.gamma * 1e9);
  /* Links within a node, where some ranks share one and others not. */
  if (nm.nodes > 1 && nm.node_size > 1)
    printf("MINIMP_NET_NODE_ALPHA_US=%.2f\nMINIMP_NET_NODE_BETA_NS=%.4f\n",
           nm.alpha_node * 1e6, nm.beta_node * 1e9);
  return 0;
}

int main(int argc, char **argv) {
  opts_t o;
  s2p_bench_t sb;
  int s2p = argc >= 2 && strcmp(argv[1], "s2p") == 0, rc;

  /* The collectives' modes parse their own options. */
  if (argc >= 2 && coll_bench_mode(argv[1]) != 0) {
    rc = mmp_init(&argc, &argv);
    if (rc != 0) {
      fprintf(stderr, "minimp-bench: mmp_init: %s\n", mmp_strerror(rc));
      return 1;
    }
    rc = coll_bench_run(argc, argv);
    mmp_finalize();
    return rc;
  }

  /* s2p has options of its own. */
  if (s2p ? s2p_parse(argc, argv, &sb) != 0
          : argc < 2 || parse_opts(argc, argv, &o) != 0)
    return usage();
  if (!s2p && strcmp(argv[1], "pingpong") != 0 &&
      strcmp(argv[1], "bcast") != 0 && strcmp(argv[1], "calibrate") != 0)
    return usage();
  rc = mmp_init(&argc, &argv);
  if (rc != 0) {
    fprintf(stderr, "minimp-bench: mmp_init: %s\n", mmp_strerror(rc));
    return 1;
  }
  if (s2p)
    rc = cmd_s2p(&sb);
  else if (strcmp(argv[1], "pingpong") == 0)
    rc = cmd_pingpong(&o);
  else if (strcmp(argv[1], "bcast") == 0)
    rc = o.method == 4 ? cmd_arrival(&o) : cmd_bcast(&o);
  else
    rc = cmd_calibrate();
  mmp_finalize();
  return rc;
}
