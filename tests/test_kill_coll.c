/* SPDX-License-Identifier: MIT */
/*
 * A rank that dies (SIGKILL) or stops (SIGSTOP, found by the heartbeat)
 * in the middle of every collective algorithm: every broadcast of the
 * descriptor table (rooted at the victim and at another rank), every s-to-p
 * algorithm, every algorithm of reduce, allreduce, reduce-scatter, gather,
 * scatter, allgather and alltoall, and ibarrier; and the collectives that
 * run inside a blocking call: s-to-p's length exchange and the network
 * model's measurement; and the blocking mmp_barrier. Each job of 4 ranks (two
 * more of 8) runs one set of them at once (kill_coll.c), and three more with
 * every message by rendezvous; this checks, per item and survivor:
 *  - its result is MMP_EPEERLOST or MMP_ETIMEDOUT, never MMP_EMISMATCH
 *    (a lost rank is no disagreement); success only where the survivor
 *    does not need the victim;
 *  - it came within a bound of round 2's start;
 * and that minimprun exits non-zero naming rank 1.
 *
 *   test_kill_coll MINIMPRUN KILL_COLL
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "minimp.h"
#include "spawn_util.h"

#define VICTIM 1
/* Heartbeat timeout for the jobs: a stopped rank is found in 3-4 s, and
 * a live one under TSan on a loaded machine is never taken for dead. */
#define PEER_TIMEOUT_S 3.0
/* Survivors report a killed rank at once (EOF); the bound leaves room
 * for sanitizers on a loaded machine. */
#define KILL_BOUND_S 10.0
/* A whole job: start, round 1, the loss, minimprun's stop (1.5 s). */
#define JOB_BOUND_S 60.0

static char *minimprun, *prog;
/* The job being checked: a failure prints its output on stdout, where
 * CI's excerpt of the log shows it (cmocka's own message goes to stderr). */
static const spawn_result_t *job;
/* Static, not allocated: a failed check leaves the test by longjmp. */
static spawn_result_t job_result;

#define job_fail(...)                                                          \
  do {                                                                         \
    printf(__VA_ARGS__);                                                       \
    printf("\njob status %d, %.1f s\nminimprun's stderr:\n%s\n", job->status,  \
           job->seconds, job->err);                                            \
    fflush(stdout);                                                            \
    fail_msg(__VA_ARGS__);                                                     \
  } while (0)

/* Prints what survivor `rank` wrote on stdout (its "kc" lines name it),
 * so that a missing result shows how far that rank got. */
static void print_rank_lines(const char *out, int rank) {
  char tag[32];
  const char *line = out, *end;

  snprintf(tag, sizeof(tag), " rank %d ", rank);
  printf("rank %d's lines:\n", rank);
  for (; *line != '\0'; line = *end != '\0' ? end + 1 : end) {
    end = strchr(line, '\n');
    if (end == NULL)
      end = line + strlen(line);
    if (memmem(line, (size_t)(end - line), tag, strlen(tag)) != NULL)
      printf("%.*s\n", (int)(end - line), line);
  }
}

/* Checks the result line of `item` for survivor `rank`. */
static void check_line(const char *out, const char *item, const char *expect,
                       int rank, double bound, double *worst) {
  char key[128], rc[32];
  const char *at;
  double secs;

  snprintf(key, sizeof(key), "kc %s rank %d rc ", item, rank);
  at = strstr(out, key);
  if (at == NULL) {
    print_rank_lines(out, rank);
    job_fail("%s: no result from rank %d", item, rank);
  }
  if (sscanf(at + strlen(key), "%31s s %lf", rc, &secs) != 2)
    job_fail("%s: malformed line from rank %d", item, rank);
  if (strcmp(rc, "MMP_EPEERLOST") != 0 && strcmp(rc, "MMP_ETIMEDOUT") != 0) {
    /* Success is right only for a survivor that never needs the
     * victim's data. */
    int may_succeed = strcmp(expect, "any") == 0 ||
                      (strcmp(expect, "root") == 0 && rank != 0);
    if (!(may_succeed && strcmp(rc, "MMP_OK") == 0))
      job_fail("%s: rank %d got %s (expected %s)", item, rank, rc,
               may_succeed ? "MMP_OK or a loss" : "MMP_EPEERLOST");
  }
  if (secs > bound)
    job_fail("%s: rank %d took %.3f s (bound %.1f s)", item, rank, secs, bound);
  if (secs > *worst)
    *worst = secs;
}

static void run_job(const char *set, const char *sig, int nranks,
                    int min_items) {
  char n[8];
  char *argv[] = {minimprun, "--timeout", "90",        "-n", n,
                  prog,      (char *)set, (char *)sig, NULL};
  spawn_result_t *r = &job_result;
  int stop = strcmp(sig, "stop") == 0, items = 0, rank;
  double bound = stop ? PEER_TIMEOUT_S + KILL_BOUND_S : KILL_BOUND_S;
  double worst = 0;
  const char *line;

  memset(r, 0, sizeof(*r));
  snprintf(n, sizeof(n), "%d", nranks);
  assert_int_equal(spawn_run(argv, 110, r), 0);
  job = r;
  if (r->status == -1 || strstr(r->out, "kc done rank 0") == NULL)
    job_fail("job %s/%s: no end from rank 0; its stdout:\n%s", set, sig,
             r->out);
  if (r->seconds > JOB_BOUND_S)
    job_fail("job %s/%s took %.1f s", set, sig, r->seconds);
  /* minimprun stops the job at the victim and says so. */
  if (stop ? r->status == 0 || r->status == 110 : r->status != 128 + SIGKILL)
    job_fail("job %s/%s: minimprun's status %d", set, sig, r->status);
  if (strstr(r->err, "rank 1 ") == NULL)
    job_fail("minimprun does not name rank 1:\n%s", r->err);
  for (line = strstr(r->out, "kc plan "); line != NULL;
       line = strstr(line + 1, "kc plan ")) {
    char item[64], expect[8];
    if (sscanf(line, "kc plan %63s %7s", item, expect) != 2)
      job_fail("malformed plan line");
    for (rank = 0; rank < nranks; rank++)
      if (rank != VICTIM)
        check_line(r->out, item, expect, rank, bound, &worst);
    items++;
  }
  assert_true(items >= min_items);
  printf("%s/%s, p = %d: %d algorithms, every survivor reported within "
         "%.3f s, job %.1f s\n",
         set, sig, nranks, items, worst, r->seconds);
}

/* How many algorithms of collective `coll` (mmp_coll_algs) kill_coll
 * runs: all but the shm rows, which serve blocking calls only (its set
 * 'barrier' runs the barrier's). */
static int algs_of(int coll) {
  mmp_alg_info_t a;
  int i, n = 0;

  for (i = 0; mmp_coll_algs(coll, i, &a) == 0; i++)
    n += strcmp(a.name, "shm") != 0;
  return n;
}

/* Every algorithm of every table of the set `coll`, and ibarrier. */
static int coll_items(void) {
  int c, n = 1;

  for (c = MMP_COLL_ALLREDUCE; c <= MMP_COLL_ALLTOALL; c++)
    n += algs_of(c);
  return n;
}

static void test_kill_coll_bcast_killed(void **state) {
  (void)state;
  run_job("bcast", "kill", 4, 2 * algs_of(MMP_COLL_BCAST));
}

static void test_kill_coll_s2p_killed(void **state) {
  (void)state;
  run_job("s2p", "kill", 4, algs_of(MMP_COLL_S2P));
}

static void test_kill_coll_coll_killed(void **state) {
  (void)state;
  run_job("coll", "kill", 4, coll_items());
}

/* At p = 8 the trees are deeper: causes travel through more ranks. */
static void test_kill_coll_bcast_killed_p8(void **state) {
  (void)state;
  run_job("bcast", "kill", 8, 2 * algs_of(MMP_COLL_BCAST));
}

static void test_kill_coll_coll_killed_p8(void **state) {
  (void)state;
  run_job("coll", "kill", 8, coll_items());
}

static void test_kill_coll_bcast_stopped(void **state) {
  (void)state;
  run_job("bcast", "stop", 4, 2 * algs_of(MMP_COLL_BCAST));
}

static void test_kill_coll_s2p_stopped(void **state) {
  (void)state;
  run_job("s2p", "stop", 4, algs_of(MMP_COLL_S2P));
}

/* Every message by rendezvous (MINIMP_EAGER_LIMIT=0): a live sender
 * whose receiver gave up on the loss before it matched the RTS must still
 * complete, or it waits for a CTS for ever. */
static void run_job_rndv(const char *set, int nranks, int min_items) {
  setenv("MINIMP_EAGER_LIMIT", "0", 1);
  run_job(set, "kill", nranks, min_items);
  unsetenv("MINIMP_EAGER_LIMIT");
}

static void test_kill_coll_bcast_killed_p8_rndv(void **state) {
  (void)state;
  run_job_rndv("bcast", 8, 2 * algs_of(MMP_COLL_BCAST));
}

static void test_kill_coll_s2p_killed_rndv(void **state) {
  (void)state;
  run_job_rndv("s2p", 4, algs_of(MMP_COLL_S2P));
}

static void test_kill_coll_coll_killed_p8_rndv(void **state) {
  (void)state;
  run_job_rndv("coll", 8, coll_items());
}

static void test_kill_coll_coll_stopped(void **state) {
  (void)state;
  run_job("coll", "stop", 4, coll_items());
}

/* Inside a blocking call no receive of the caller's watches the
 * collective: it must give up by itself on the loss. */
static void test_kill_coll_exchange_killed(void **state) {
  (void)state;
  run_job("exchange", "kill", 4, 1);
}

static void test_kill_coll_netmodel_killed(void **state) {
  (void)state;
  run_job("netmodel", "kill", 4, 1);
}

/* The blocking barrier: a survivor that hears of the loss must pass it on
 * to the ranks still waiting for its signal. */
static void test_kill_coll_barrier_killed(void **state) {
  (void)state;
  run_job("barrier", "kill", 4, 1);
}

static void test_kill_coll_barrier_stopped(void **state) {
  (void)state;
  run_job("barrier", "stop", 4, 1);
}

static void test_kill_coll_netmodel_stopped(void **state) {
  (void)state;
  run_job("netmodel", "stop", 4, 1);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kill_coll_bcast_killed),
      cmocka_unit_test(test_kill_coll_s2p_killed),
      cmocka_unit_test(test_kill_coll_coll_killed),
      cmocka_unit_test(test_kill_coll_bcast_killed_p8),
      cmocka_unit_test(test_kill_coll_coll_killed_p8),
      cmocka_unit_test(test_kill_coll_bcast_killed_p8_rndv),
      cmocka_unit_test(test_kill_coll_s2p_killed_rndv),
      cmocka_unit_test(test_kill_coll_coll_killed_p8_rndv),
      cmocka_unit_test(test_kill_coll_bcast_stopped),
      cmocka_unit_test(test_kill_coll_s2p_stopped),
      cmocka_unit_test(test_kill_coll_coll_stopped),
      cmocka_unit_test(test_kill_coll_exchange_killed),
      cmocka_unit_test(test_kill_coll_netmodel_killed),
      cmocka_unit_test(test_kill_coll_netmodel_stopped),
      cmocka_unit_test(test_kill_coll_barrier_killed),
      cmocka_unit_test(test_kill_coll_barrier_stopped),
  };
  char buf[32];

  if (argc != 3) {
    fprintf(stderr, "usage: test_kill_coll MINIMPRUN KILL_COLL\n");
    return 2;
  }
  minimprun = argv[1];
  prog = argv[2];
  snprintf(buf, sizeof(buf), "%d", (int)(PEER_TIMEOUT_S * 1000));
  setenv("MINIMP_PEER_TIMEOUT_MS", buf, 1);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
