/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench: libminimp's benchmark tool, run through minimprun:
 *
 *   minimp-bench pingpong|bcast|s2p|calibrate|allreduce|... [OPTION]...
 *
 * The options, their defaults and the names they take are in one table
 * (bench_opts below), which getopt_long, --help and the checks per command
 * all read; minimp-bench(1) describes them for users.
 *
 * pingpong: half round trip and one-way streaming with 64 messages in
 * flight between ranks 0 and 1, exactly as ../shared/anchors/
 * mpi_pingpong.c measures Open MPI ("size half_rtt_us MBps").
 *
 * bcast: broadcast time per algorithm and size, by two methods.
 *  - ol ([de Supinski & Karonis 1999]): for each destination i, the
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
 *    ranks and the worst rank's. The paper shows this over-estimates, so it
 *    is for comparison with the anchors in the same run.
 *  - arrival ([Patarasuk & Yuan 2008], Fig. 6 and "20% late";
 *    tests/bench/arrival.c): a barrier, a sleep per rank by --pattern
 *    bounded by each --maxif value (microseconds, or multiples of T(m) as
 *    "16T"), then the timed broadcast; reports the average and worst
 *    per-node times and the measured competitive ratio against the Lemma 2
 *    bounds, with T(m) from --tm or measured (tests/bench/plot_arrival_csv.py
 *    draws Figs. 7-10 from the CSV). Its own CSV columns are described
 *    there. --raw FILE keeps every rank's arrival and exit per iteration.
 *  Every algorithm runs --warm broadcasts (3 by default) before it is
 *  timed, in the pattern the method times (with --method ol, each followed
 *  by the destination's acknowledgement and the pause): the first use of
 *  an algorithm opens the connections its pattern needs, which costs
 *  several times a broadcast, and AUTO learns the arrival pattern from
 *  its broadcasts, so a warm-up in another pattern leaves it relearning
 *  in the timed ones (docs/performance.md).
 *  --shuffle SEED runs the algorithms in an order drawn from SEED, the
 *  same on every rank, so that rounds of a comparison differ in order.
 *  Rows go to stdout (and --csv): method,alg,chosen,p,size,avg_us,max_us;
 *  for "auto" the chosen column names the algorithm AUTO ran most often in
 *  the timed broadcasts (mmp_bcast_last, on rank 0), and a line on
 *  stderr names any other algorithm it ran in them. Progress goes to
 *  stderr.
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

#include <getopt.h>

#include "arrival.h"
#include "bench_cli.h"
#include "coll_bench.h"
#include "minimp.h"

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

/* The s2p command's options (see the s2p section below). */
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
  const char *csv;
  FILE *csvf;
} s2p_bench_t;

/* ---- command line ------------------------------------------------------- */

/* Commands, as bits, so that an option can name the commands it serves. */
enum {
  CMD_PINGPONG = 1,
  CMD_BCAST = 2,
  CMD_S2P = 4,
  CMD_CALIBRATE = 8,
  CMD_COLL = 16,
};

enum {
  OPT_SIZES = 256,
  OPT_ALGS,
  OPT_ITERS,
  OPT_MODE,
  OPT_ROOT,
  OPT_CSV,
  OPT_METHOD,
  OPT_SEGMENT,
  OPT_GROUPS,
  OPT_INNER,
  OPT_OUTER,
  OPT_RADIX,
  OPT_DESTS,
  OPT_GAP,
  OPT_RAW,
  OPT_PATTERN,
  OPT_WARM,
  OPT_SHUFFLE,
  OPT_MAXIF,
  OPT_TM,
  OPT_DISTS,
  OPT_SOURCES,
  OPT_TOTAL,
  OPT_SWEEP,
  OPT_ROWS,
  OPT_END
};
#define OPT_N (OPT_END - OPT_SIZES)

typedef struct bench_opt_s {
  const char *name;
  int id;
  unsigned cmds; /* CMD_* bits */
  const char *arg;
  const char *help;
} bench_opt_t;

/* One table gives getopt_long its options, --help its text, and each
 * command the options it accepts, so that the three cannot disagree. */
static const bench_opt_t bench_opts[] = {
    {"sizes", OPT_SIZES, CMD_PINGPONG | CMD_BCAST | CMD_S2P | CMD_COLL, "LIST",
     "message sizes in bytes, comma-separated, each with an optional k, m\n"
     "or g suffix (powers of 1024). Defaults: pingpong 8,64k,4m; bcast\n"
     "1k,64k,1m (1m with --method arrival); s2p 4k,64k (bytes per source);\n"
     "the collectives 64k"},
    {"algs", OPT_ALGS, CMD_BCAST | CMD_S2P | CMD_COLL, "LIST",
     "algorithms to run, comma-separated, or all (names below). Defaults:\n"
     "bcast all; --method arrival binomial,pipeline,scatter_ring,arrival_b,\n"
     "arrival_nb; s2p all; the collectives auto"},
    {"iters", OPT_ITERS, CMD_PINGPONG | CMD_BCAST | CMD_S2P | CMD_COLL, "N",
     "timed repetitions per point (default: by size, fewer for large\n"
     "messages; the collectives 20)"},
    {"mode", OPT_MODE, CMD_PINGPONG | CMD_BCAST | CMD_S2P | CMD_COLL, "MODE",
     "auto, eager or rndv: the point-to-point protocol the messages use\n"
     "(default auto, by the measured threshold)"},
    {"root", OPT_ROOT, CMD_BCAST | CMD_COLL, "R", "the root rank (default 0)"},
    {"csv", OPT_CSV, CMD_PINGPONG | CMD_BCAST | CMD_S2P, "FILE",
     "also write the rows to FILE, after a '#' line naming the version,\n"
     "commit, date, host, ranks and arguments of the run"},
    {"method", OPT_METHOD, CMD_BCAST, "METHOD",
     "ol: the latency to each destination alone, its acknowledgement's\n"
     "time taken off (max OL_i, docs/performance.md); barrier: a barrier\n"
     "then the timed broadcast, as the MPI benchmarks do; both (default);\n"
     "arrival: ranks arriving late by --pattern and --maxif"},
    {"segment", OPT_SEGMENT, CMD_BCAST, "SIZE",
     "segment size of the pipelined algorithms (default: chosen)"},
    {"groups", OPT_GROUPS, CMD_BCAST, "G",
     "groups of the hierarchical broadcast (default ceil(sqrt p))"},
    {"inner", OPT_INNER, CMD_BCAST, "ALG",
     "broadcast within the hierarchical broadcast's groups, and the\n"
     "arrival-aware ones' sub-group broadcast"},
    {"outer", OPT_OUTER, CMD_BCAST, "ALG",
     "broadcast among the hierarchical broadcast's group leaders"},
    {"radix", OPT_RADIX, CMD_BCAST | CMD_COLL, "K",
     "radix of knomial (bcast, reduce; default chosen)"},
    {"dests", OPT_DESTS, CMD_BCAST, "N|all",
     "--method ol: destinations measured, spread over the ranks (default\n"
     "all)"},
    {"gap", OPT_GAP, CMD_BCAST, "US|auto",
     "--method ol: pause in microseconds before each timed broadcast, 0 for\n"
     "back to back; auto (default) lets the links drain"},
    {"raw", OPT_RAW, CMD_BCAST, "FILE",
     "--method ol: every destination's E_i, RTT_i and OL_i; --method\n"
     "arrival: every rank's arrival and exit per iteration"},
    {"pattern", OPT_PATTERN, CMD_BCAST, "NAME",
     "--method arrival: who arrives late (names below; default all)"},
    {"warm", OPT_WARM, CMD_BCAST, "N",
     "untimed broadcasts per algorithm before timing (default 3; --method\n"
     "arrival 4)"},
    {"shuffle", OPT_SHUFFLE, CMD_BCAST, "SEED",
     "run the algorithms in an order drawn from SEED (a positive number),\n"
     "the same on every rank"},
    {"maxif", OPT_MAXIF, CMD_BCAST, "LIST",
     "--method arrival: bounds of the random delays, in microseconds or as\n"
     "multiples of T(m) with a T suffix (default 0,1T,2T,4T,8T,16T)"},
    {"tm", OPT_TM, CMD_BCAST, "US",
     "--method arrival: T(m) in microseconds (default: measured per size)"},
    {"dists", OPT_DISTS, CMD_S2P, "LIST",
     "source distributions, comma-separated, or all (names below; default\n"
     "equal)"},
    {"sources", OPT_SOURCES, CMD_S2P, "LIST",
     "numbers of sources s (default 1, 2, 4, ... and p)"},
    {"total", OPT_TOTAL, CMD_S2P, "SIZE",
     "--sweep total: the bytes of all sources together (default 1m)"},
    {"sweep", OPT_SWEEP, CMD_S2P, "WHICH",
     "s (time against s), dist (by distribution), total (s against a fixed\n"
     "total) or all (default)"},
    {"rows", OPT_ROWS, CMD_S2P, "R",
     "rows of the grid the ranks form (default: as square as p allows)"},
};
#define BENCH_NOPTS ((int)(sizeof(bench_opts) / sizeof(bench_opts[0])))

static const char *const mode_names[] = {"auto", "eager", "rndv", NULL};
static const unsigned mode_flags[] = {MMP_SEND_AUTO, MMP_SEND_EAGER,
                                      MMP_SEND_RNDV};
static const char *const method_names[] = {"ol", "barrier", "both", "arrival",
                                           NULL};
static const char *const sweep_names[] = {"s", "dist", "total", "all", NULL};

/* cli_name_fn over the tables above, the library's and the benchmark's. */
static const char *name_in(const void *ctx, int i) {
  return ((const char *const *)ctx)[i];
}
static const int coll_bcast = MMP_COLL_BCAST, coll_s2p = MMP_COLL_S2P;
static const char *name_bcast(const void *ctx, int i) {
  (void)ctx;
  return cli_alg(&coll_bcast, i);
}
static const char *name_s2p(const void *ctx, int i) {
  (void)ctx;
  return cli_alg(&coll_s2p, i);
}
static const char *name_dist(const void *ctx, int i) {
  (void)ctx;
  return mmp_s2p_dist_name(i);
}
static const char *name_coll(const void *ctx, int i) {
  return cli_alg(ctx, i);
}
static const char *name_pattern(const void *ctx, int i) {
  (void)ctx;
  return arrival_pattern_name(i);
}

static void help_names(const char *what, cli_name_fn fn, const void *ctx) {
  printf("\n%s:\n", what);
  cli_print_names(stdout, 2, fn, ctx);
}

static int help(void) {
  int i, c;

  printf(
      "Usage: minimp-bench COMMAND [OPTION]...   (under minimprun, e.g.\n"
      "       minimprun -n 8 minimp-bench bcast --sizes 64k)\n"
      "       minimp-bench --help | --version\n"
      "\n"
      "Commands:\n"
      "  pingpong    half round trip and streaming bandwidth between 2 "
      "ranks\n"
      "  bcast       broadcast time per algorithm and size\n"
      "  s2p         s-to-p broadcast: s of the p ranks each hold a message\n"
      "  calibrate   the network model (alpha, beta) AUTO uses, as\n"
      "              MINIMP_NET_* variables\n"
      "  allreduce, reduce, reduce_scatter, gather, scatter, allgather,\n"
      "  alltoall, barrier\n"
      "              a barrier, then the timed collective (rows on stdout)\n"
      "\n"
      "Options (the commands that take each in brackets):\n");
  for (i = 0; i < BENCH_NOPTS; i++) {
    const bench_opt_t *d = &bench_opts[i];
    const char *h = d->help;
    char cmds[64];
    snprintf(cmds, sizeof(cmds), "%s%s%s%s",
             d->cmds & CMD_PINGPONG ? " pingpong" : "",
             d->cmds & CMD_BCAST ? " bcast" : "",
             d->cmds & CMD_S2P ? " s2p" : "",
             d->cmds & CMD_COLL ? " collectives" : "");
    printf("  --%s %s   [%s]\n", d->name, d->arg, cmds + 1);
    while (*h != '\0') {
      const char *nl = strchr(h, '\n');
      int len = nl != NULL ? (int)(nl - h) : (int)strlen(h);
      printf("      %.*s\n", len, h);
      h += len + (nl != NULL);
    }
  }
  printf("  -h, --help      this text\n"
         "  -V, --version   version and commit\n");
  help_names("Broadcast algorithms (bcast --algs, --inner, --outer)",
             name_bcast, NULL);
  help_names("s-to-p algorithms (s2p --algs)", name_s2p, NULL);
  help_names("s-to-p source distributions (s2p --dists)", name_dist, NULL);
  help_names("Arrival patterns (bcast --pattern)", name_pattern, NULL);
  for (c = 1; coll_bench_name(c) != NULL; c++) {
    char what[96];
    snprintf(what, sizeof(what), "%s algorithms (%s --algs)",
             coll_bench_name(c), coll_bench_name(c));
    help_names(what, name_coll, &c);
  }
  printf("\nExit status: 0, 1 when a run fails, 2 on a usage error.\n"
         "See minimp-bench(1) and docs/performance.md.\n");
  return 0;
}

static int version(void) {
  printf("minimp-bench %s (commit %s)\n", cli_version(), cli_commit());
  return 0;
}

/* MAX_IF values: "0,700000" microseconds, or "1T,16T" multiples of T(m). */
static int parse_maxif(const char *opt, const char *s, opts_t *o) {
  char *copy = strdup(s), *tok, *save = NULL, *end;
  int rc = 0;

  o->nmaxif = 0;
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    double v = strtod(tok, &end);
    int t = *end == 'T';
    if (end == tok || !(v >= 0) || end[t] != '\0')
      rc = cli_fail("%s: '%s' is neither microseconds nor a multiple of T(m) "
                    "such as 16T",
                    opt, tok);
    else if (o->nmaxif == MAX_ITEMS)
      rc = cli_fail("%s: more than %d values", opt, MAX_ITEMS);
    else {
      o->maxif[o->nmaxif] = v;
      o->maxif_t[o->nmaxif++] = t;
    }
  }
  free(copy);
  if (rc == 0 && o->nmaxif == 0)
    rc = cli_fail("%s: '%s' names no value", opt, s);
  return rc;
}

/* One name of `table`, its index into *out. */
static int parse_one(const char *opt, const char *v, const char *what,
                     cli_name_fn fn, const void *ctx, int *out) {
  int n;

  return cli_names(opt, v, what, fn, ctx, 0, out, 1, &n);
}

/* A comma list of whole numbers from 1 to hi. */
static int parse_counts(const char *opt, const char *list, int *out, int *n) {
  char *copy = strdup(list), *tok, *save = NULL;
  long v;
  int rc = 0;

  *n = 0;
  for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == MAX_ITEMS)
      rc = cli_fail("%s: more than %d values", opt, MAX_ITEMS);
    else if ((rc = cli_long(opt, tok, 1, 1 << 30, &v)) == 0)
      out[(*n)++] = (int)v;
  }
  free(copy);
  if (rc == 0 && *n == 0)
    rc = cli_fail("%s: '%s' names no number", opt, list);
  return rc;
}

/* Everything the command line may set, before it is checked. */
typedef struct cmdline_s {
  int cmd;  /* CMD_* */
  int coll; /* CMD_COLL: MMP_COLL_* */
  const char *val[OPT_N];
} cmdline_t;

/* Converts the options of a broadcast or pingpong command into `o`. */
static int convert_bcast(const cmdline_t *cl, opts_t *o) {
  const char *const *v = cl->val;
  long x;
  int rc = 0, n, m;

#define V(id) v[(id)-OPT_SIZES]
  memset(o, 0, sizeof(*o));
  o->method = 3;
  o->gap_us = -1;
  o->warm = -1;
  o->csv = V(OPT_CSV);
  o->raw = V(OPT_RAW);
  if (rc == 0 && V(OPT_SIZES))
    rc = cli_sizes("--sizes", V(OPT_SIZES), o->sizes, MAX_ITEMS, &o->nsizes);
  if (rc == 0 && V(OPT_ALGS))
    rc = cli_names("--algs", V(OPT_ALGS), "algorithm", name_bcast, NULL, 1,
                   o->algs, MAX_ITEMS, &o->nalgs);
  if (rc == 0 && V(OPT_ITERS) &&
      (rc = cli_long("--iters", V(OPT_ITERS), 1, 1000000000, &x)) == 0)
    o->iters = (int)x;
  if (rc == 0 && V(OPT_MODE) &&
      (rc = parse_one("--mode", V(OPT_MODE), "mode", name_in, mode_names,
                      &m)) == 0)
    o->mode = mode_flags[m];
  if (rc == 0 && V(OPT_SEGMENT))
    rc = cli_size("--segment", V(OPT_SEGMENT), &o->segment);
  if (rc == 0 && V(OPT_GROUPS) &&
      (rc = cli_long("--groups", V(OPT_GROUPS), 0, 1 << 30, &x)) == 0)
    o->groups = (int)x;
  if (rc == 0 && V(OPT_RADIX) &&
      (rc = cli_long("--radix", V(OPT_RADIX), 0, 1 << 30, &x)) == 0)
    o->radix = (int)x;
  if (rc == 0 && V(OPT_ROOT) &&
      (rc = cli_long("--root", V(OPT_ROOT), 0, 1 << 30, &x)) == 0)
    o->root = (int)x;
  if (rc == 0 && V(OPT_GAP) && strcmp(V(OPT_GAP), "auto") != 0)
    rc = cli_double("--gap", V(OPT_GAP), 0, 1e7, &o->gap_us);
  if (rc == 0 && V(OPT_DESTS) && strcmp(V(OPT_DESTS), "all") != 0 &&
      (rc = cli_long("--dests", V(OPT_DESTS), 1, 1 << 30, &x)) == 0)
    o->dests = (int)x;
  if (rc == 0 && V(OPT_MAXIF))
    rc = parse_maxif("--maxif", V(OPT_MAXIF), o);
  if (rc == 0 && V(OPT_WARM) &&
      (rc = cli_long("--warm", V(OPT_WARM), 0, 1000000, &x)) == 0)
    o->warm = (int)x;
  if (rc == 0 && V(OPT_SHUFFLE))
    rc = cli_long("--shuffle", V(OPT_SHUFFLE), 1, 1L << 30, &o->shuffle);
  if (rc == 0 && V(OPT_PATTERN))
    rc = parse_one("--pattern", V(OPT_PATTERN), "pattern", name_pattern, NULL,
                   &o->pattern);
  if (rc == 0 && V(OPT_TM))
    rc = cli_double("--tm", V(OPT_TM), 1e-3, 1e10, &o->tm_us);
  if (rc == 0 && V(OPT_INNER))
    rc = parse_one("--inner", V(OPT_INNER), "algorithm", name_bcast, NULL,
                   &o->inner);
  if (rc == 0 && V(OPT_OUTER))
    rc = parse_one("--outer", V(OPT_OUTER), "algorithm", name_bcast, NULL,
                   &o->outer);
  if (rc == 0 && V(OPT_METHOD) &&
      (rc = parse_one("--method", V(OPT_METHOD), "method", name_in,
                      method_names, &n)) == 0)
    o->method = n + 1;
  return rc;
}

/* Converts the options of the s2p command into `b`. */
static int convert_s2p(const cmdline_t *cl, s2p_bench_t *b) {
  const char *const *v = cl->val;
  long x;
  int rc = 0, m;

  memset(b, 0, sizeof(*b));
  b->total = 1u << 20;
  b->sweeps = 7;
  b->csv = V(OPT_CSV);
  if (rc == 0 && V(OPT_ALGS))
    rc = cli_names("--algs", V(OPT_ALGS), "algorithm", name_s2p, NULL, 1,
                   b->algs, MAX_ITEMS, &b->nalgs);
  if (rc == 0 && V(OPT_DISTS))
    rc = cli_names("--dists", V(OPT_DISTS), "distribution", name_dist, NULL, 1,
                   b->dists, MAX_ITEMS, &b->ndists);
  if (rc == 0 && V(OPT_SOURCES))
    rc = parse_counts("--sources", V(OPT_SOURCES), b->srcs, &b->nsrcs);
  if (rc == 0 && V(OPT_SIZES))
    rc = cli_sizes("--sizes", V(OPT_SIZES), b->sizes, MAX_ITEMS, &b->nsizes);
  if (rc == 0 && V(OPT_TOTAL) &&
      (rc = cli_size("--total", V(OPT_TOTAL), &b->total)) == 0 && b->total == 0)
    rc = cli_fail("--total: '%s' is not a size above 0", V(OPT_TOTAL));
  if (rc == 0 && V(OPT_SWEEP) &&
      (rc = parse_one("--sweep", V(OPT_SWEEP), "sweep", name_in, sweep_names,
                      &m)) == 0)
    b->sweeps = m == 3 ? 7 : 1 << m;
  if (rc == 0 && V(OPT_ITERS) &&
      (rc = cli_long("--iters", V(OPT_ITERS), 1, 1000000000, &x)) == 0)
    b->iters = (int)x;
  if (rc == 0 && V(OPT_ROWS) &&
      (rc = cli_long("--rows", V(OPT_ROWS), 0, 1 << 30, &x)) == 0)
    b->rows = (int)x;
  if (rc == 0 && V(OPT_MODE) &&
      (rc = parse_one("--mode", V(OPT_MODE), "mode", name_in, mode_names,
                      &m)) == 0)
    b->mode = mode_flags[m];
  return rc;
}

/* Converts the options of a collective's command into `b`. */
static int convert_coll(const cmdline_t *cl, coll_bench_opts_t *b) {
  const char *const *v = cl->val;
  long x;
  int rc = 0, m;

  memset(b, 0, sizeof(*b));
  b->coll = cl->coll;
  if (rc == 0 && V(OPT_ALGS))
    rc = cli_names("--algs", V(OPT_ALGS), "algorithm", name_coll, &b->coll, 1,
                   b->algs, COLL_BENCH_MAX, &b->nalgs);
  if (rc == 0 && V(OPT_SIZES))
    rc = cli_sizes("--sizes", V(OPT_SIZES), b->sizes, COLL_BENCH_MAX,
                   &b->nsizes);
  if (rc == 0 && V(OPT_ITERS) &&
      (rc = cli_long("--iters", V(OPT_ITERS), 1, 1000000000, &x)) == 0)
    b->iters = (int)x;
  if (rc == 0 && V(OPT_ROOT) &&
      (rc = cli_long("--root", V(OPT_ROOT), 0, 1 << 30, &x)) == 0)
    b->root = (int)x;
  if (rc == 0 && V(OPT_RADIX) &&
      (rc = cli_long("--radix", V(OPT_RADIX), 0, 1 << 30, &x)) == 0)
    b->radix = (int)x;
  if (rc == 0 && V(OPT_MODE) &&
      (rc = parse_one("--mode", V(OPT_MODE), "mode", name_in, mode_names,
                      &m)) == 0)
    b->mode = mode_flags[m];
  return rc;
#undef V
}

static const char *const cmd_names[] = {"pingpong", "bcast", "s2p", "calibrate",
                                        NULL};

/* Splits argv into the command and its options' texts. Returns 0, 1 when
 * --help or --version was answered, or 2 after a usage error. */
static int parse_cmdline(int argc, char **argv, cmdline_t *cl) {
  struct option lo[BENCH_NOPTS + 3];
  const char *cmd = argc > 1 ? argv[1] : NULL;
  char **av;
  int i, c, k, ac;

  memset(cl, 0, sizeof(*cl));
  if (cmd == NULL)
    return cli_fail("no command given (pingpong, bcast, s2p, calibrate or a "
                    "collective)");
  for (i = 0; i < BENCH_NOPTS; i++)
    lo[i] = (struct option){bench_opts[i].name, required_argument, NULL,
                            bench_opts[i].id};
  lo[i++] = (struct option){"help", no_argument, NULL, 'h'};
  lo[i++] = (struct option){"version", no_argument, NULL, 'V'};
  lo[i] = (struct option){NULL, 0, NULL, 0};
  /* getopt_long takes the command as its argv[0], or the program's name
   * when none is given (`minimp-bench --help`). */
  av = cmd[0] == '-' ? argv : argv + 1;
  ac = cmd[0] == '-' ? argc : argc - 1;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(ac, av, ":hV", lo, NULL)) != -1) {
    if (c == 'h')
      return help(), 1;
    if (c == 'V')
      return version(), 1;
    if (c == ':')
      return cli_fail("option '%s' needs a value", av[optind - 1]);
    if (c == '?')
      return cli_fail("unknown option '%s'", av[optind - 1]);
    cl->val[c - OPT_SIZES] = optarg;
  }
  if (optind < ac)
    return cli_fail("unexpected argument '%s'", av[optind]);
  if (cmd[0] == '-')
    return cli_fail("no command given (pingpong, bcast, s2p, calibrate or a "
                    "collective)");
  for (k = 0; cmd_names[k] != NULL; k++)
    if (strcmp(cmd, cmd_names[k]) == 0)
      cl->cmd = 1 << k;
  if (cl->cmd == 0 && (cl->coll = coll_bench_mode(cmd)) != 0)
    cl->cmd = CMD_COLL;
  if (cl->cmd == 0)
    return cli_fail("unknown command '%s' (known: pingpong, bcast, s2p, "
                    "calibrate, allreduce, reduce, reduce_scatter, gather, "
                    "scatter, allgather, alltoall, barrier)",
                    cmd);
  for (i = 0; i < BENCH_NOPTS; i++)
    if (cl->val[bench_opts[i].id - OPT_SIZES] != NULL &&
        !(bench_opts[i].cmds & (unsigned)cl->cmd))
      return cli_fail("--%s is not an option of '%s'", bench_opts[i].name, cmd);
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
    cli_sizes("--sizes", "8,64k,4m", o->sizes, MAX_ITEMS, &o->nsizes);
  if (mmp_comm_size(w) != 2) {
    if (r == 0)
      fprintf(stderr, "minimp-bench pingpong needs exactly 2 ranks\n");
    return 2;
  }
  if (r == 0)
    csv = cli_open_csv(o->csv, "size,half_rtt_us,stream_MBps");
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

/* How many timed AUTO broadcasts ran each algorithm (as name_bcast
 * numbers them), at this rank. */
#define MAX_ALGS 64
static int auto_ran[MAX_ALGS];

/* The algorithm the most timed AUTO broadcasts ran. */
static int most_ran(void) {
  int a, best = 0;

  for (a = 1; a < MAX_ALGS; a++)
    best = auto_ran[a] > auto_ran[best] ? a : best;
  return best;
}

/* Names on stderr (rank 0) the algorithms AUTO ran besides its most
 * frequent one in a row's timed broadcasts of `n` bytes: that row's time
 * mixes them, which its chosen column alone does not say. */
static void auto_mixed(size_t n) {
  int a, top = most_ran(), total = 0;

  for (a = 1; a < MAX_ALGS; a++)
    total += auto_ran[a];
  if (mmp_comm_rank(mmp_comm_world()) != 0 || total == auto_ran[top])
    return;
  progress_done();
  fprintf(stderr,
          "minimp-bench: auto at %zu B ran %s in %d of %d timed "
          "broadcasts, and",
          n, name_bcast(NULL, top), auto_ran[top], total);
  for (a = 1; a < MAX_ALGS; a++)
    if (a != top && auto_ran[a] > 0)
      fprintf(stderr, " %s in %d", name_bcast(NULL, a), auto_ran[a]);
  fputc('\n', stderr);
}

/* One broadcast of `alg` with the benchmark's options: the call's
 * result. */
static int bcast_call(void *buf, size_t n, int root, const opts_t *o, int alg) {
  mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
  mmp_alg_info_t info;

  bo.algorithm = name_bcast(NULL, alg);
  bo.mode = o->mode;
  bo.segment = o->segment;
  /* The options the algorithm takes, from the benchmark's. */
  if (alg > 0 && mmp_coll_algs(MMP_COLL_BCAST, alg - 1, &info) == 0) {
    if (info.options & MMP_OPT_GROUPS)
      bo.groups = o->groups;
    if (info.options & MMP_OPT_INNER)
      bo.inner = o->inner > 0 ? name_bcast(NULL, o->inner) : NULL;
    if (info.options & MMP_OPT_OUTER)
      bo.outer = o->outer > 0 ? name_bcast(NULL, o->outer) : NULL;
    if (info.options & MMP_OPT_RADIX)
      bo.radix = o->radix;
  }
  return mmp_bcast_ex(buf, n, root, mmp_comm_world(), &bo);
}

static void bcast_once(void *buf, size_t n, int root, const opts_t *o,
                       int alg) {
  CHECK(bcast_call(buf, n, root, o, alg));
  if (alg == 0) {
    const char *ran;
    int a;
    CHECK(mmp_bcast_last(mmp_comm_world(), &ran));
    for (a = 1; a < MAX_ALGS && name_bcast(NULL, a) != NULL; a++)
      if (strcmp(name_bcast(NULL, a), ran) == 0)
        auto_ran[a]++;
  }
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

/* [De Supinski & Karonis 1999]: latency to destination i, corrected for the
 * ACK. On the root, e_rtt receives E_i and RTT_i. */
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

/* The i-th of `want` destinations method_ol samples, spread over the
 * virtual ranks. */
static int ol_dest(int root, int p, int want, int i) {
  return (root + (i * (p - 1) + want - 1) / want) % p;
}

/* `warm` untimed broadcasts of `alg` before it is timed by `method`, in
 * the pattern that method times them in. */
static void warm_up(void *buf, size_t n, const opts_t *o, int alg, int method,
                    int warm) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), k;
  int want = o->dests > 0 && o->dests < p - 1 ? o->dests : p - 1;
  double er[2];

  if (warm <= 0)
    return;
  if (method & 1) {
    if (p < 2) /* no destination to time */
      return;
    (void)ol_to(buf, n, o->root, ol_dest(o->root, p, want, 1), warm, o, alg,
                er);
    return;
  }
  for (k = 0; k < warm; k++) {
    CHECK(mmp_barrier(w));
    bcast_once(buf, n, o->root, o, alg);
  }
}

/* raw: the root's file for one row per destination, or NULL. */
static void method_ol(void *buf, size_t n, const opts_t *o, int alg, int M,
                      FILE *raw, double *avg, double *mx) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), root = o->root, i, count = 0;
  int want = o->dests > 0 && o->dests < p - 1 ? o->dests : p - 1;
  double sum = 0, worst = -INFINITY, er[2] = {0, 0};

  for (i = 1; i <= want; i++) {
    int dest = ol_dest(root, p, want, i);
    double ol = ol_to(buf, n, root, dest, M, o, alg, er);
    /* Kept as measured, not clamped to 0: a reader must see it failed. */
    if (ol < 0)
      fprintf(stderr,
              "minimp-bench: %s, %zu B to rank %d: OL_i = %.1f us < 0, the "
              "ping-pong (RTT %.1f us) took longer than the broadcast: CPUs "
              "too contended (more ranks than cores, or other load) for this "
              "method\n",
              name_bcast(NULL, alg), n, dest, ol * 1e6, er[1] * 1e6);
    if (raw != NULL)
      fprintf(raw, "%s,%d,%zu,%d,%.1f,%.1f,%.1f\n", name_bcast(NULL, alg), p, n,
              dest, er[0] * 1e6, er[1] * 1e6, ol * 1e6);
    sum += ol;
    worst = ol > worst ? ol : worst;
    count++;
  }
  /* Only the root timed anything; rank 0 prints. */
  er[0] = count ? sum / count : 0;
  er[1] = count ? worst : 0;
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
    bcast_once(buf, n, o->root, o, alg);
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
    cli_sizes("--sizes", "1m", o->sizes, MAX_ITEMS, &o->nsizes);
  if (o->nalgs == 0)
    cli_names("--algs", "binomial,pipeline,scatter_ring,arrival_b,arrival_nb",
              "algorithm", name_bcast, NULL, 0, o->algs, MAX_ITEMS, &o->nalgs);
  if (o->nmaxif == 0)
    parse_maxif("--maxif", "0,1T,2T,4T,8T,16T", o);
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
  c.root = o->root;
  c.tm_us = o->tm_us;
  c.csv = o->csv;
  c.raw = o->raw;
  return bench_arrival(&c);
}

static int cmd_bcast(opts_t *o) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), r = mmp_comm_rank(w), a, s, m;
  FILE *csv = NULL, *raw = NULL;
  size_t maxn = 0;
  uint8_t *buf;

  if (o->nsizes == 0)
    cli_sizes("--sizes", "1k,64k,1m", o->sizes, MAX_ITEMS, &o->nsizes);
  if (o->nalgs == 0)
    cli_names("--algs", "all", "algorithm", name_bcast, NULL, 1, o->algs,
              MAX_ITEMS, &o->nalgs);
  for (s = 0; s < o->nsizes; s++)
    maxn = o->sizes[s] > maxn ? o->sizes[s] : maxn;
  buf = calloc(maxn + 1, 1);
  if (r == 0)
    csv = cli_open_csv(o->csv, "method,alg,chosen,p,size,avg_us,max_us");
  if (r == o->root && (o->method & 1))
    raw = cli_open_csv(o->raw, "alg,p,size,dest,e_us,rtt_us,ol_us");
  if (r == 0)
    printf("%-8s %-13s %-13s %4s %10s %12s %12s\n", "method", "algorithm",
           "chosen", "p", "size", "avg_us", "max_us");
  for (s = 0; s < o->nsizes; s++) {
    size_t n = o->sizes[s];
    int M = o->iters > 0 ? o->iters : default_iters(n);
    const char *chosen = "-";
    o->refill_s = ol_refill_s(n);
    if (o->shuffle > 0)
      shuffle_algs(o, (unsigned long long)o->shuffle + (unsigned long long)s);
    for (a = 0; a < o->nalgs; a++) {
      int alg = o->algs[a], rc;
      /* A row that cannot run here (the shm row across hosts, multicast
       * where it is unusable) is refused on every rank alike: skipped. */
      CHECK(mmp_barrier(w));
      rc = alg > 0 ? bcast_call(buf, n, o->root, o, alg) : 0;
      if (rc == MMP_ENOTSUP) {
        if (r == 0)
          fprintf(stderr,
                  "minimp-bench bcast %s %zu: not available here, "
                  "skipped\n",
                  name_bcast(NULL, alg), n);
        continue;
      }
      CHECK(rc);
      warm_up(buf, n, o, alg, o->method, o->warm >= 0 ? o->warm : 3);
      for (m = 1; m <= 2; m++) {
        double avg = 0, mx = 0;
        if (!(o->method & m))
          continue;
        progress("[%d/%d] %s %zu B by %s...", s * o->nalgs + a + 1,
                 o->nsizes * o->nalgs, name_bcast(NULL, alg), n,
                 m == 1 ? "max OL_i" : "barrier loop");
        memset(auto_ran, 0, sizeof(auto_ran));
        if (m == 1)
          method_ol(buf, n, o, alg, M, raw, &avg, &mx);
        else
          method_barrier(buf, n, o, alg, M, &avg, &mx);
        if (alg == 0) {
          chosen = name_bcast(NULL, most_ran());
          auto_mixed(n);
        }
        if (r != 0)
          continue;
        printf("%-8s %-13s %-13s %4d %10zu %12.1f %12.1f\n",
               m == 1 ? "ol" : "barrier", name_bcast(NULL, alg),
               alg == 0 ? chosen : "-", p, n, avg * 1e6, mx * 1e6);
        fflush(stdout);
        if (csv != NULL)
          fprintf(csv, "%s,%s,%s,%d,%zu,%.1f,%.1f\n", m == 1 ? "ol" : "barrier",
                  name_bcast(NULL, alg), alg == 0 ? chosen : "", p, n,
                  avg * 1e6, mx * 1e6);
      }
    }
  }
  progress_done();
  if (csv != NULL)
    fclose(csv);
  if (raw != NULL)
    fclose(raw);
  free(buf);
  return 0;
}

/* ---- s2p ---------------------------------------------------------------- */

/*
 * s-to-p broadcast, in the spirit of [Hambrusch et al. 1998]'s Figures 3, 6
 * and 7. Every rank times M calls, each after a barrier; the per-node time is
 * averaged over ranks (avg_us) and the slowest rank's is reported (max_us).
 * Three sweeps: time against s for each length L ("s"), time by distribution
 * for one s ("dist"), and time against s with the total s L fixed
 * ("total"). Its own options:
 *   --algs all|auto,br_lin,...  --dists all|equal,...  --sources 1,4,16
 *   --sizes 4k,64k  --total 1m  --sweep s|dist|total|all  --iters M
 *   --mode auto|eager|rndv  --rows R  --csv FILE
 * tests/bench/plot_s2p_csv.py draws each sweep from the CSV.
 */
/* Fills in what the options left open, for p ranks. */
static void s2p_defaults(s2p_bench_t *b, int p) {
  int s;

  if (b->nalgs == 0)
    cli_names("--algs", "all", "algorithm", name_s2p, NULL, 1, b->algs,
              MAX_ITEMS, &b->nalgs);
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
 * time and the slowest rank's, through an s-to-p of the timings. 0, or
 * MMP_ENOTSUP (on every rank alike) where `alg` cannot run here: the
 * multicast row where multicast is unusable. */
static int s2p_time(const s2p_bench_t *b, int alg, const size_t *lens,
                    const uint8_t *mine, uint8_t *out, size_t total, int M,
                    double *avg, double *mx) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), me = mmp_comm_rank(w), x;
  mmp_s2p_opts_t so = MMP_S2P_OPTS_INIT;
  double t = 0, t0, *all = malloc((size_t)p * sizeof(double));

  so.algorithm = name_s2p(NULL, alg);
  so.mode = b->mode;
  so.rows = b->rows;
  for (x = -1; x < M; x++) { /* the first call warms up */
    int rc;
    CHECK(mmp_barrier(w));
    t0 = mmp_wtime();
    rc =
        mmp_bcast_s2p(mine, lens[me] == MMP_S2P_NONE ? 0 : lens[me],
                      lens[me] != MMP_S2P_NONE, out, total, lens, NULL, w, &so);
    if (x < 0 && rc == MMP_ENOTSUP && strcmp(so.algorithm, "multicast") == 0) {
      free(all);
      return rc;
    }
    CHECK(rc);
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
  return 0;
}

/* One point: s sources of distribution d with L bytes each, every
 * algorithm; prints and records the rows. */
static void s2p_point(s2p_bench_t *b, const char *sweep, int d, int s,
                      size_t L) {
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
    const char *name = name_s2p(NULL, b->algs[a]);
    const char *chosen = b->algs[a] == 0 ? sel.algorithm : "-";
    progress("[%s] %s %s s=%d L=%zu...", sweep, name, mmp_s2p_dist_name(d), s,
             L);
    if (s2p_time(b, b->algs[a], lens, mine, out, total, M, &avg, &mx) != 0) {
      progress_done();
      if (mmp_comm_rank(w) == 0)
        fprintf(stderr,
                "minimp-bench: s2p %s not supported here "
                "(multicast unusable): skipped\n",
                name);
      continue;
    }
    if (mmp_comm_rank(w) != 0)
      continue;
    printf("%-6s %-16s %-16s %-7s %4d %4d %9zu %10zu %11.1f %11.1f\n", sweep,
           name, chosen, mmp_s2p_dist_name(d), p, s, L, total, avg * 1e6,
           mx * 1e6);
    fflush(stdout);
    if (b->csvf != NULL)
      fprintf(b->csvf, "%s,%s,%s,%s,%d,%d,%zu,%zu,%.1f,%.1f\n", sweep, name,
              b->algs[a] == 0 ? chosen : "", mmp_s2p_dist_name(d), p, s, L,
              total, avg * 1e6, mx * 1e6);
  }
  free(mark);
  free(lens);
  free(mine);
  free(out);
}

static void s2p_sweeps(s2p_bench_t *b) {
  int i, k;

  if (b->sweeps & 1) {
    for (k = 0; k < b->nsizes; k++)
      for (i = 0; i < b->nsrcs; i++)
        s2p_point(b, "s", b->dists[0], b->srcs[i], b->sizes[k]);
  }
  if (b->sweeps & 2) {
    int s = b->nsrcs > 1 ? b->srcs[b->nsrcs / 2] : b->srcs[0];
    for (i = 0; i < MMP_S2P_DIST_COUNT; i++)
      s2p_point(b, "dist", i, s, b->sizes[0]);
  }
  if (b->sweeps & 4) {
    for (i = 0; i < b->nsrcs; i++)
      s2p_point(b, "total", b->dists[0], b->srcs[i], b->total / b->srcs[i]);
  }
}

static int cmd_s2p(s2p_bench_t *b) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mmp_comm_size(w), i;

  s2p_defaults(b, p);
  for (i = 0; i < b->nsrcs; i++)
    if (b->srcs[i] > p) {
      return cli_fail("--sources: '%d' is more sources than the %d ranks",
                      b->srcs[i], p);
    }
  if (mmp_comm_rank(w) == 0)
    b->csvf = cli_open_csv(b->csv,
                           "sweep,alg,chosen,dist,p,s,len,total,avg_us,max_us");
  if (mmp_comm_rank(w) == 0)
    printf("%-6s %-16s %-16s %-7s %4s %4s %9s %10s %11s %11s\n", "sweep",
           "algorithm", "chosen", "dist", "p", "s", "len", "total", "avg_us",
           "max_us");
  s2p_sweeps(b);
  if (b->csvf != NULL)
    fclose(b->csvf);
  return 0;
}

/* ---- calibrate ---------------------------------------------------------- */

static int cmd_calibrate(void) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_netmodel_t nm;

  if (mmp_comm_size(w) < 2) {
    return cli_fail("calibrate needs at least 2 ranks, not %d",
                    mmp_comm_size(w));
  }
  /* Exactly what automatic selection measures (collectives/select/netmodel.c).
   */
  CHECK(mmp_comm_netmodel(w, &nm));
  if (mmp_comm_rank(w) != 0)
    return 0;
  printf("MINIMP_NET_ALPHA_US=%.2f\nMINIMP_NET_BETA_NS=%.4f\n"
         "MINIMP_NET_BURST_BYTES=%.0f\nMINIMP_NET_SHARED_CPUS=%d\n"
         "MINIMP_NET_GAMMA_NS=%.4f\nMINIMP_NET_GAP_US=%.2f\n",
         nm.alpha * 1e6, nm.beta * 1e9, nm.burst, nm.shared_cpus,
         nm.gamma * 1e9, nm.gap * 1e6);
  /* Links within a node, where some ranks share one and others not. */
  if (nm.nodes > 1 && nm.node_size > 1)
    printf("MINIMP_NET_NODE_ALPHA_US=%.2f\nMINIMP_NET_NODE_BETA_NS=%.4f\n",
           nm.alpha_node * 1e6, nm.beta_node * 1e9);
  return 0;
}

int main(int argc, char **argv) {
  cmdline_t cl;
  opts_t o;
  s2p_bench_t sb;
  coll_bench_opts_t cb;
  int rc;

  cli_set_args(argc, argv);
  /* Every value is checked before the job starts, so that a typing error
   * costs no connection set-up and is reported once. */
  rc = parse_cmdline(argc, argv, &cl);
  if (rc == 0)
    rc = cl.cmd == CMD_S2P    ? convert_s2p(&cl, &sb)
         : cl.cmd == CMD_COLL ? convert_coll(&cl, &cb)
                              : convert_bcast(&cl, &o);
  if (rc != 0)
    return rc == 1 ? 0 : rc;
  rc = mmp_init(&argc, &argv);
  if (rc != 0) {
    fprintf(stderr, "minimp-bench: mmp_init: %s\n", mmp_strerror(rc));
    return 1;
  }
  if (cl.cmd == CMD_BCAST && o.root >= mmp_comm_size(mmp_comm_world()))
    rc = cli_fail("--root: '%d' is not a rank of this job (0 to %d)", o.root,
                  mmp_comm_size(mmp_comm_world()) - 1);
  else if (cl.cmd == CMD_S2P)
    rc = cmd_s2p(&sb);
  else if (cl.cmd == CMD_COLL)
    rc = coll_bench_run(&cb);
  else if (cl.cmd == CMD_PINGPONG)
    rc = cmd_pingpong(&o);
  else if (cl.cmd == CMD_BCAST)
    rc = o.method == 4 ? cmd_arrival(&o) : cmd_bcast(&o);
  else
    rc = cmd_calibrate();
  mmp_finalize();
  return rc;
}
