/* SPDX-License-Identifier: MIT */
/*
 * The mixed workload of the soak and chaos runs (tests/soak.sh,
 * tests/chaos.sh), written against the public API only. Every step is
 * chosen from a seed that all ranks share, so they agree on every choice
 * without talking: a point-to-point round (every rank sends 1 to 4
 * messages to rank r + j and receives as many from r - j, sizes 0 to MAX
 * bytes spread evenly over the powers of two, so both sides of the
 * eager/rendezvous threshold, and the protocol left to the threshold or
 * forced eager or rendezvous per message), a broadcast of a random
 * algorithm, root, size and mode, an s-to-p broadcast of a random
 * algorithm, source distribution and lengths, or an allreduce. Every byte
 * received is compared with the pattern its sender's seed gives.
 *
 *   soak_prog soak MESSAGES MAX SEED
 *       runs steps until the ranks together have sent MESSAGES
 *       point-to-point messages; samples the resident set size
 *       (/proc/self/statm) every few steps and fails (exit 2) when the
 *       last quarter's peak exceeds the first quarter's by more than
 *       SOAK_RSS_MARGIN_PCT percent and SOAK_RSS_SLACK_MB MiB both.
 *       Prints "rank R: soak ok ..." and, on rank 0, a "soak total" line
 *       and a "soak progress" line every twentieth of the run.
 *   soak_prog chaos STEPS MAX SEED
 *       the same workload for STEPS steps (0: until stopped), each wait
 *       also watching a receive from any source on a tag nobody sends to,
 *       which the library fails when any peer is lost. The first error is
 *       printed as "rank R: error NAME in OP at T" (T: seconds since the
 *       epoch, which every namespace shares) and the rank then waits for
 *       minimprun to stop it. SIGTERM only makes a rank that has not
 *       reported say "rank R: stopped while calling|waiting on OP (step
 *       S)", so that a survivor gets minimprun's whole 1.5 s before the
 *       SIGKILL to notice the loss, and one that does not says where it
 *       hangs.
 *
 * SOAK_ONLY=bcast|s2p|allreduce|multicast|measure makes every step one
 * kind (multicast: a multicast broadcast or s-to-p, with SOAK_MCAST=1;
 * measure: the network model's measurement), so that a chaos run's losses
 * all land in that operation.
 *
 * With SOAK_MCAST=1 the broadcasts and s-to-p draw the multicast
 * algorithms too, once a multicast broadcast at the start found the
 * channel usable (else "rank R: multicast unusable" and they are left
 * out); by default they are left out, since a multicast collective's
 * failure is bounded by MINIMP_MCAST_TIMEOUT_MS, not by the heartbeat
 * (tests/chaos.sh sets that below its own limit when SOAK_MCAST=1).
 *
 * A wrong byte prints "rank R: FAILED ..." and exits 2.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"

#define SOAK_RSS_MARGIN_PCT 10 /* allowed growth, first to last quarter */
#define SOAK_RSS_SLACK_MB 8    /* ... and in MiB (allocator noise) */
#define SOAK_MAX_K 4           /* messages per peer and round */
#define SOAK_RSS_EVERY 1       /* steps between samples */
#define SOAK_SENTINEL_TAG 424242
#define SOAK_MAX_SAMPLES (1 << 20)

#define CHECK MR_CHECK

typedef struct soak_s {
  int rank, p, chaos;
  size_t max;
  uint64_t seed;
  uint8_t *out[SOAK_MAX_K], *in[SOAK_MAX_K], *want, *buf;
  unsigned char *is_src;
  size_t *lens;
  int64_t *red_in, *red_out;
  mmp_request_t *sentinel;
  /* What this rank has seen, for the report. */
  unsigned long long msgs_all, bytes_all, bytes_mine, bcasts, s2ps, reds;
  int mcast; /* draw the multicast algorithms (SOAK_MCAST=1) */
  int only;  /* SOAK_ONLY: every step of one kind (ONLY_*), 0 the mix */
} soak_t;

/* SOAK_ONLY's kinds: a chaos run whose losses all land in one operation. */
enum { ONLY_BCAST = 1, ONLY_S2P, ONLY_ALLREDUCE, ONLY_MULTICAST, ONLY_MEASURE };

static uint64_t rnd(uint64_t *s, uint64_t n) {
  return n ? mr_next(s) % n : 0;
}

/* 0 (1 in 32), else 2^b plus up to 2^b - 1 with b even over the bit
 * widths below `max`: as many messages near 100 bytes as near 100 KiB. */
static size_t rnd_size(uint64_t *s, size_t max) {
  int bits = 0;
  size_t b, n;

  while (((size_t)2 << bits) <= max + 1 && bits < 40)
    bits++;
  if (rnd(s, 32) == 0 || max == 0)
    return 0;
  b = (size_t)rnd(s, (uint64_t)bits + 1);
  n = ((size_t)1 << b) + (size_t)rnd(s, (uint64_t)1 << b);
  return n > max ? max : n;
}

static unsigned rnd_mode(uint64_t *s) {
  static const unsigned modes[] = {MMP_SEND_AUTO, MMP_SEND_AUTO, MMP_SEND_EAGER,
                                   MMP_SEND_RNDV};
  return modes[rnd(s, 4)];
}

/* The seed of everything a step decides; `who` picks a sub-stream. */
static uint64_t step_seed(const soak_t *k, unsigned long step, uint64_t who) {
  uint64_t s =
      k->seed ^ (step * 0x9e3779b97f4a7c15ull) ^ (who * 0xd1b54a32d192ed03ull);
  return mr_next(&s);
}

static double epoch_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Where this rank is, for the SIGTERM minimprun sends when it stops the
 * job: a survivor that never reported says what it was blocked in. */
static char chaos_where[160];
static volatile sig_atomic_t chaos_where_len;

static void soak_at(const soak_t *k, const char *op, unsigned long step,
                    const char *what) {
  int n;

  if (!k->chaos)
    return;
  chaos_where_len = 0; /* the handler must not see half a line */
  n = snprintf(chaos_where, sizeof(chaos_where),
               "rank %d: stopped while %s %s (step %lu)\n", k->rank, what, op,
               step);
  chaos_where_len = n > 0 && (size_t)n < sizeof(chaos_where) ? n : 0;
}

static void chaos_on_term(int sig) {
  (void)sig;
  if (chaos_where_len > 0 && write(1, chaos_where, (size_t)chaos_where_len) < 0)
    chaos_where_len = 0;
}

/* Chaos: report the first error and wait to be stopped. */
static MMP_NORETURN void chaos_report(const soak_t *k, int rc, const char *op,
                                      unsigned long step, const char *via) {
  chaos_where_len = 0;
  printf("rank %d: error %s in %s at %.3f (step %lu, %s)\n", k->rank,
         mmp_err_name(rc), op, epoch_now(), step, via);
  fflush(stdout);
  for (;;)
    pause();
}

/* A call that failed: in chaos mode the loss being tested, else a
 * failure of the soak. */
static void soak_rc(const soak_t *k, int rc, const char *op,
                    unsigned long step) {
  if (rc == 0)
    return;
  if (k->chaos)
    chaos_report(k, rc, op, step, "call");
  CHECK(rc == 0, "%s at step %lu: %s", op, step, mmp_err_name(rc));
}

/* Waits for n requests. In chaos mode it also watches the sentinel, a
 * receive from any source that fails when any peer is lost: a rank whose
 * own partners are alive would otherwise wait on them for ever, which is
 * the application's hang, not the library's. (It also ends the wait for
 * a collective whose live partners gave up, which is the library's: the
 * report says which of the two ended it.) */
static void soak_wait(soak_t *k, size_t n, mmp_request_t **q, const char *op,
                      unsigned long step) {
  int rc;

  if (!k->chaos) {
    soak_rc(k, mmp_waitall(n, q, NULL), op, step);
    return;
  }
  soak_at(k, op, step, "waiting on");
  for (;;) {
    mmp_request_t *all[2 * SOAK_MAX_K + 2];
    size_t i, idx, live = 0;

    for (i = 0; i < n; i++) {
      all[i] = q[i];
      live += q[i] != NULL;
    }
    if (live == 0)
      return;
    all[n] = k->sentinel;
    rc = mmp_waitany(n + 1, all, &idx, NULL);
    if (idx == n) {
      k->sentinel = NULL;
      chaos_report(k, rc != 0 ? rc : MMP_EINTERNAL, op, step, "any-source");
    }
    q[idx] = NULL;
    if (rc != 0)
      chaos_report(k, rc, op, step, "operation");
  }
}

/* The point-to-point round: 1..SOAK_MAX_K messages to r + j, as many from
 * r - j, each from its own seed so that order is checked too. */
static void step_p2p(soak_t *k, unsigned long step, uint64_t *s) {
  mmp_comm_t *w = mmp_comm_world();
  int j = 1 + (int)rnd(s, (uint64_t)k->p - 1), i, nk = 1 + (int)rnd(s, 4);
  int to = (k->rank + j) % k->p, from = (k->rank + k->p - j) % k->p;
  mmp_request_t *q[2 * SOAK_MAX_K];
  size_t len_in[SOAK_MAX_K];
  uint64_t ss;
  int src;

  if (k->p == 1)
    return;
  /* Every sender's sizes and modes come from its own sub-stream. */
  for (src = 0; src < k->p; src++) {
    ss = step_seed(k, step, 1000 + (uint64_t)src);
    for (i = 0; i < nk; i++) {
      size_t n = rnd_size(&ss, k->max);
      unsigned mode = rnd_mode(&ss);
      k->msgs_all++;
      k->bytes_all += n;
      if (src == k->rank) {
        mr_fill(k->out[i], n,
                step_seed(k, step, 77 + (uint64_t)i) ^ (uint64_t)src);
        soak_rc(k, mmp_isend_ex(k->out[i], n, to, i, w, mode, &q[nk + i]),
                "p2p", step);
        k->bytes_mine += n;
      }
      if (src == from)
        len_in[i] = n;
    }
  }
  for (i = 0; i < nk; i++)
    soak_rc(k, mmp_irecv(k->in[i], k->max, from, i, w, &q[i]), "p2p", step);
  soak_wait(k, 2 * (size_t)nk, q, "p2p", step);
  for (i = 0; i < nk; i++) {
    mr_fill(k->want, len_in[i],
            step_seed(k, step, 77 + (uint64_t)i) ^ (uint64_t)from);
    CHECK(memcmp(k->in[i], k->want, len_in[i]) == 0,
          "p2p step %lu: message %d of %zu bytes from %d", step, i, len_in[i],
          from);
  }
}

/* AUTO ("auto") or one of collective `coll`'s algorithms, at random.
 * The shm rows count as AUTO: the soak's calls are non-blocking, which
 * refuse them (MMP_ENOTSUP), and its ranks are on several hosts. */
static const char *rnd_alg(uint64_t *s, int coll) {
  mmp_alg_info_t a;
  int n = 0, i;

  while (mmp_coll_algs(coll, n, &a) == 0)
    n++;
  i = (int)rnd(s, (uint64_t)n + 1);
  if (i == 0 || mmp_coll_algs(coll, i - 1, &a) != 0 ||
      strcmp(a.name, "shm") == 0)
    return "auto";
  return a.name;
}

static void step_bcast(soak_t *k, unsigned long step, uint64_t *s) {
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp_request_t *q = NULL;
  size_t n = rnd_size(s, k->max);
  int root = (int)rnd(s, (uint64_t)k->p);
  uint64_t fill = step_seed(k, step, 2);

  o.algorithm = rnd_alg(s, MMP_COLL_BCAST);
  /* Multicast's failures are bounded by its own timeout, not the
   * heartbeat the soak's chaos is judged by: only with SOAK_MCAST=1. */
  if (strcmp(o.algorithm, "multicast") == 0 && !k->mcast)
    o.algorithm = "auto";
  if (k->only == ONLY_MULTICAST && k->mcast)
    o.algorithm = "multicast";
  o.mode = rnd_mode(s);
  if (k->rank == root)
    mr_fill(k->buf, n, fill);
  else
    memset(k->buf, 0, n);
  soak_at(k, o.algorithm, step, "calling");
  soak_rc(k, mmp_ibcast(k->buf, n, root, mmp_comm_world(), &o, &q), o.algorithm,
          step);
  soak_wait(k, 1, &q, o.algorithm, step);
  mr_fill(k->want, n, fill);
  CHECK(memcmp(k->buf, k->want, n) == 0, "bcast %s step %lu: %zu bytes from %d",
        o.algorithm, step, n, root);
  k->bcasts++;
}

static void step_s2p(soak_t *k, unsigned long step, uint64_t *s) {
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  mmp_request_t *q = NULL;
  int ns = 1 + (int)rnd(s, (uint64_t)k->p), i, dist, exchange;
  size_t total = 0, at = 0, per = k->max / (size_t)k->p;
  char op[64];

  dist = (int)rnd(s, MMP_S2P_DIST_COUNT);
  o.algorithm = rnd_alg(s, MMP_COLL_S2P);
  /* As for the broadcast: multicast fails by its own timeout. */
  if (strcmp(o.algorithm, "multicast") == 0 && !k->mcast)
    o.algorithm = "auto";
  if (k->only == ONLY_MULTICAST && k->mcast)
    o.algorithm = "multicast";
  o.mode = rnd_mode(s);
  CHECK(mmp_s2p_dist(dist, ns, k->p, 0, k->is_src) == 0, "dist");
  for (i = 0; i < k->p; i++) {
    k->lens[i] = k->is_src[i] ? rnd_size(s, per) : MMP_S2P_NONE;
    total += k->is_src[i] ? k->lens[i] : 0;
  }
  if (k->is_src[k->rank])
    mr_fill(k->out[0], k->lens[k->rank],
            step_seed(k, step, 3) ^ (uint64_t)k->rank);
  snprintf(op, sizeof(op), "s2p %s", o.algorithm);
  /* Half the time the lengths are exchanged first, as without `lens`. */
  exchange = rnd(s, 2);
  soak_at(k, op, step, "calling");
  soak_rc(k,
          mmp_ibcast_s2p(k->out[0], k->is_src[k->rank] ? k->lens[k->rank] : 0,
                         k->is_src[k->rank], k->buf, total,
                         exchange ? NULL : k->lens, NULL, mmp_comm_world(), &o,
                         &q),
          op, step);
  soak_wait(k, 1, &q, op, step);
  for (i = 0; i < k->p; i++) {
    if (!k->is_src[i])
      continue;
    mr_fill(k->want, k->lens[i], step_seed(k, step, 3) ^ (uint64_t)i);
    CHECK(memcmp(k->buf + at, k->want, k->lens[i]) == 0,
          "%s step %lu: %zu bytes of rank %d", op, step, k->lens[i], i);
    at += k->lens[i];
  }
  k->s2ps++;
}

/* A sum of 64-bit integers: exact, so every rank can check it. */
static void step_allreduce(soak_t *k, unsigned long step, uint64_t *s) {
  mmp_allreduce_opts_t o = MMP_ALLREDUCE_OPTS_INIT;
  mmp_request_t *q = NULL;
  size_t count = (size_t)rnd(s, 4096), i;
  int r;

  o.algorithm = rnd_alg(s, MMP_COLL_ALLREDUCE);
  for (i = 0; i < count; i++)
    k->red_in[i] = (int64_t)(step * 31 + i) * (k->rank + 1);
  soak_at(k, "allreduce", step, "calling");
  soak_rc(k,
          mmp_iallreduce(k->red_in, k->red_out, count, MMP_INT64, MMP_SUM,
                         mmp_comm_world(), &o, &q),
          "allreduce", step);
  soak_wait(k, 1, &q, "allreduce", step);
  for (i = 0; i < count; i++) {
    int64_t want = 0;
    for (r = 0; r < k->p; r++)
      want += (int64_t)(step * 31 + i) * (r + 1);
    CHECK(k->red_out[i] == want, "allreduce step %lu element %zu", step, i);
  }
  k->reds++;
}

/* The network model measured by everyone, as one step. */
static void step_measure(soak_t *k, unsigned long step) {
  mmp_netmodel_t nm;

  soak_at(k, "network model", step, "measuring");
  soak_rc(k, mmp_comm_netmodel_measure(mmp_comm_world(), &nm), "network model",
          step);
}

static void soak_step(soak_t *k, unsigned long step) {
  uint64_t s = step_seed(k, step, 0);
  uint64_t kind = rnd(&s, 100);

  if (k->only == ONLY_MEASURE)
    step_measure(k, step);
  else if (k->only == ONLY_ALLREDUCE)
    step_allreduce(k, step, &s);
  else if (k->only == ONLY_BCAST ||
           (k->only == ONLY_MULTICAST && kind % 2 == 0))
    step_bcast(k, step, &s);
  else if (k->only == ONLY_S2P || k->only == ONLY_MULTICAST)
    step_s2p(k, step, &s);
  else if (kind < 85)
    step_p2p(k, step, &s);
  else if (kind < 93)
    step_bcast(k, step, &s);
  else if (kind < 98)
    step_s2p(k, step, &s);
  else
    step_allreduce(k, step, &s);
}

/* Resident set size in KiB (/proc/self/statm's second field). */
static long rss_kib(void) {
  long size = 0, res = 0;
  FILE *f = fopen("/proc/self/statm", "r");

  if (f == NULL)
    return 0;
  if (fscanf(f, "%ld %ld", &size, &res) != 2)
    res = 0;
  fclose(f);
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static long peak(const long *v, size_t from, size_t to) {
  long m = 0;
  for (size_t i = from; i < to; i++)
    m = v[i] > m ? v[i] : m;
  return m;
}

static void soak_alloc(soak_t *k) {
  int i;

  for (i = 0; i < SOAK_MAX_K; i++) {
    k->out[i] = malloc(k->max + 1);
    k->in[i] = malloc(k->max + 1);
    CHECK(k->out[i] != NULL && k->in[i] != NULL, "memory");
  }
  k->want = malloc(k->max + 1);
  k->buf = malloc(k->max + 1);
  k->is_src = calloc((size_t)k->p, 1);
  k->lens = calloc((size_t)k->p, sizeof(*k->lens));
  k->red_in = calloc(4096, sizeof(int64_t));
  k->red_out = calloc(4096, sizeof(int64_t));
  CHECK(k->want && k->buf && k->is_src && k->lens && k->red_in && k->red_out,
        "memory");
  /* Touched now, so that the RSS samples see the library, not our own
   * buffers becoming resident as larger messages come along. */
  for (i = 0; i < SOAK_MAX_K; i++) {
    memset(k->out[i], 0, k->max + 1);
    memset(k->in[i], 0, k->max + 1);
  }
  memset(k->want, 0, k->max + 1);
  memset(k->buf, 0, k->max + 1);
}

static void soak_free(soak_t *k) {
  for (int i = 0; i < SOAK_MAX_K; i++) {
    free(k->out[i]);
    free(k->in[i]);
  }
  free(k->want);
  free(k->buf);
  free(k->is_src);
  free(k->lens);
  free(k->red_in);
  free(k->red_out);
}

static int run_soak(soak_t *k, unsigned long long target) {
  long *rss = malloc(SOAK_MAX_SAMPLES * sizeof(long));
  size_t ns = 0, q;
  unsigned long step = 0;
  double t0 = mmp_wtime(), dt;
  long first, last, allowed;
  unsigned long long next = target / 20;

  CHECK(rss != NULL, "memory");
  while (k->msgs_all < target) {
    soak_step(k, step);
    /* Progress every twentieth of the run, so that a long run stopped
     * early still says how far it got. */
    if (k->rank == 0 && k->msgs_all >= next) {
      printf("soak progress: %llu messages, %llu bytes, %.0f s, RSS %ld KiB\n",
             k->msgs_all, k->bytes_all, mmp_wtime() - t0, rss_kib());
      fflush(stdout);
      next += target / 20 ? target / 20 : 1;
    }
    if (++step % SOAK_RSS_EVERY == 0 && ns < SOAK_MAX_SAMPLES)
      rss[ns++] = rss_kib();
  }
  CHECK(mmp_barrier(mmp_comm_world()) == 0, "barrier");
  dt = mmp_wtime() - t0;
  rss[ns++] = rss_kib();
  q = ns / 4 ? ns / 4 : 1;
  first = peak(rss, 0, q);
  last = peak(rss, ns - q, ns);
  allowed = first + first * SOAK_RSS_MARGIN_PCT / 100;
  if (allowed < first + SOAK_RSS_SLACK_MB * 1024)
    allowed = first + SOAK_RSS_SLACK_MB * 1024;
  printf("rank %d: soak ok, %lu steps, sent %llu bytes; RSS first quarter "
         "%ld KiB, last quarter %ld KiB (%zu samples)\n",
         k->rank, step, k->bytes_mine, first, last, ns);
  if (k->rank == 0)
    printf("soak total: %llu messages, %llu bytes, %llu broadcasts, %llu "
           "s-to-p, %llu allreduces, %d ranks, %.1f s\n",
           k->msgs_all, k->bytes_all, k->bcasts, k->s2ps, k->reds, k->p, dt);
  fflush(stdout);
  free(rss);
  CHECK(last <= allowed, "RSS grew from %ld KiB to %ld KiB (allowed %ld)",
        first, last, allowed);
  return 0;
}

static int run_chaos(soak_t *k, unsigned long steps) {
  mmp_comm_t *w = mmp_comm_world();
  unsigned long step;
  int dummy = 0;

  signal(SIGTERM, chaos_on_term);
  CHECK(mmp_irecv(&dummy, sizeof(dummy), MMP_ANY_SOURCE, SOAK_SENTINEL_TAG, w,
                  &k->sentinel) == 0,
        "sentinel");
  CHECK(mmp_barrier(w) == 0, "barrier");
  printf("rank %d: chaos ready\n", k->rank);
  fflush(stdout);
  /* mmp_init measured the network model before the chaos. With
   * SOAK_CHAOS_MEASURE=0 the workload starts by measuring it again, by
   * everyone, and a loss there is what the round finds. */
  if (getenv("SOAK_CHAOS_MEASURE") != NULL &&
      strcmp(getenv("SOAK_CHAOS_MEASURE"), "0") == 0) {
    step_measure(k, 0);
  }
  for (step = 0; steps == 0 || step < steps; step++)
    soak_step(k, step);
  /* The sentinel is completed by a message to ourselves. */
  CHECK(mmp_send(&dummy, sizeof(dummy), k->rank, SOAK_SENTINEL_TAG, w) == 0,
        "self");
  CHECK(mmp_wait(&k->sentinel, NULL) == 0, "sentinel");
  CHECK(mmp_barrier(w) == 0, "barrier");
  printf("rank %d: chaos steps done\n", k->rank);
  return 0;
}

int main(int argc, char **argv) {
  soak_t k;
  int rc;

  memset(&k, 0, sizeof(k));
  if (argc != 5 || mmp_init(&argc, &argv) != 0) {
    fprintf(stderr, "usage: %s soak|chaos COUNT MAXBYTES SEED\n", argv[0]);
    return 3;
  }
  k.rank = mr_rank();
  k.p = mr_size();
  k.max = (size_t)strtoull(argv[3], NULL, 0);
  k.seed = strtoull(argv[4], NULL, 0);
  k.chaos = strcmp(argv[1], "chaos") == 0;
  if (getenv("SOAK_ONLY") != NULL) {
    static const char *const kinds[] = {"bcast", "s2p", "allreduce",
                                        "multicast", "measure"};
    for (int i = 0; i < 5; i++)
      if (strcmp(getenv("SOAK_ONLY"), kinds[i]) == 0)
        k.only = i + 1;
    CHECK(k.only != 0,
          "SOAK_ONLY=%s: not bcast, s2p, allreduce, multicast "
          "or measure",
          getenv("SOAK_ONLY"));
    CHECK(k.only != ONLY_MULTICAST ||
              (getenv("SOAK_MCAST") && strcmp(getenv("SOAK_MCAST"), "1") == 0),
          "SOAK_ONLY=multicast needs SOAK_MCAST=1");
  }
  soak_alloc(&k);
  if (getenv("SOAK_MCAST") != NULL && strcmp(getenv("SOAK_MCAST"), "1") == 0) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    uint8_t b[8] = {0};
    o.algorithm = "multicast";
    rc = mmp_bcast_ex(b, sizeof(b), 0, mmp_comm_world(), &o);
    CHECK(rc == 0 || rc == MMP_ENOTSUP, "multicast detection: %s",
          mmp_err_name(rc));
    k.mcast = rc == 0;
    if (!k.mcast)
      printf("rank %d: multicast unusable\n", k.rank);
  }
  if (k.chaos)
    rc = run_chaos(&k, strtoul(argv[2], NULL, 0));
  else
    rc = run_soak(&k, strtoull(argv[2], NULL, 0));
  soak_free(&k);
  fflush(stdout);
  return rc == 0 && mmp_finalize() == 0 ? 0 : 5;
}
