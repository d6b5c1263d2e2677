/* SPDX-License-Identifier: MIT */
/*
 * A service that runs its own libev loop and embeds libminimp in it. Each
 * peer keeps a counter; once per tick every peer shares its counter with
 * all the others (a non-blocking allgather) and one peer, a different one
 * each round, broadcasts a 4 KiB "configuration" (a non-blocking
 * broadcast). The loop never blocks in the library: the library runs
 * without a progress thread (MMP_INIT_EXTERNAL_PROGRESS), an ev_io
 * watches mmp_progress_fd() and calls mmp_progress(), and the requests
 * are checked with mmp_test(). A slow ev_timer also calls mmp_progress(),
 * as a safety net only: the descriptor is level-triggered.
 *
 * Run as:  MINIMP_JOB_KEY=<32 hex digits> ev_service RANK SIZE HOST:PORT
 *              [ROUNDS [IFACE]]
 * Rank 0 serves the rendezvous at HOST:PORT. EV_SERVICE_SAFETY_MS sets the
 * safety timer's period (100 ms; 0: none, the descriptor alone). Each rank
 * prints one line, "rank R: N rounds ok, longest callback U us, safety timer
 * fired K times", and exits 0, or says what went wrong and exits 1.
 */
#include <ev.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <minimp.h>

#define CONFIG_BYTES 4096

typedef struct service_s {
  int rank, size, rounds, round;
  int64_t counter;
  int64_t *all; /* every peer's counter, this round */
  unsigned char config[CONFIG_BYTES];
  mmp_request_t *gather_req; /* the round's allgather, or NULL */
  mmp_request_t *bcast_req;  /* the round's broadcast, or NULL */
  int failed;
  double longest;   /* seconds, the longest callback */
  int safety_calls; /* times the safety-net timer fired */
  ev_io progress;
  ev_timer tick, safety;
} service_t;

static void fail(struct ev_loop *loop, service_t *s, const char *what, int rc) {
  fprintf(stderr, "rank %d: %s: %s\n", s->rank, what, mmp_strerror(rc));
  s->failed = 1;
  ev_break(loop, EVBREAK_ALL);
}

/* The byte at `i` of round `round`'s configuration. */
static unsigned char config_byte(int round, size_t i) {
  return (unsigned char)(round * 31 + i * 7);
}

/* Starts the round's collectives. They complete in later callbacks. */
static void round_start(struct ev_loop *loop, service_t *s) {
  int root = s->round % s->size, rc;

  s->counter = (int64_t)s->rank * 1000 + s->round;
  if (s->rank == root)
    for (size_t i = 0; i < CONFIG_BYTES; i++)
      s->config[i] = config_byte(s->round, i);
  rc = mmp_iallgather(&s->counter, 1, s->all, 1, MMP_INT64, mmp_comm_world(),
                      NULL, &s->gather_req);
  if (rc == 0)
    rc = mmp_ibcast(s->config, CONFIG_BYTES, root, mmp_comm_world(), NULL,
                    &s->bcast_req);
  if (rc != 0)
    fail(loop, s, "starting a round", rc);
}

/* Checks the round's results once both requests completed. */
static int round_check(const service_t *s) {
  for (int r = 0; r < s->size; r++)
    if (s->all[r] != (int64_t)r * 1000 + s->round)
      return 0;
  for (size_t i = 0; i < CONFIG_BYTES; i++)
    if (s->config[i] != config_byte(s->round, i))
      return 0;
  return 1;
}

/* Lets the library move, then looks at the round's requests. Never
 * blocks. */
static void service_progress(struct ev_loop *loop, service_t *s) {
  int done_g = 0, done_b = 0, rc;

  rc = mmp_progress();
  if (rc == 0 && s->gather_req != NULL)
    rc = mmp_test(&s->gather_req, &done_g, MMP_STATUS_IGNORE);
  if (rc == 0 && s->bcast_req != NULL)
    rc = mmp_test(&s->bcast_req, &done_b, MMP_STATUS_IGNORE);
  if (rc != 0) {
    fail(loop, s, "a round", rc);
    return;
  }
  if (s->gather_req == NULL && s->bcast_req == NULL && s->round < s->rounds &&
      (done_g || done_b)) {
    if (!round_check(s)) {
      fprintf(stderr, "rank %d: round %d: wrong data\n", s->rank, s->round);
      s->failed = 1;
      ev_break(loop, EVBREAK_ALL);
      return;
    }
    if (++s->round == s->rounds)
      ev_break(loop, EVBREAK_ALL);
  }
}

/* Keeps the longest time a callback took since t0. */
static void note(service_t *s, double t0) {
  double took = ev_time() - t0;

  if (took > s->longest)
    s->longest = took;
}

static void on_progress_fd(struct ev_loop *loop, ev_io *w, int revents) {
  double t0 = ev_time();
  (void)revents;
  service_progress(loop, w->data);
  note(w->data, t0);
}

static void on_safety(struct ev_loop *loop, ev_timer *w, int revents) {
  double t0 = ev_time();
  (void)revents;
  ((service_t *)w->data)->safety_calls++;
  service_progress(loop, w->data);
  note(w->data, t0);
}

/* The service's own work: a new round when the last one is over. */
static void on_tick(struct ev_loop *loop, ev_timer *w, int revents) {
  service_t *s = w->data;
  double t0 = ev_time();
  (void)revents;

  if (s->gather_req == NULL && s->bcast_req == NULL && s->round < s->rounds)
    round_start(loop, s);
  note(s, t0);
}

int main(int argc, char **argv) {
  struct ev_loop *loop = EV_DEFAULT;
  const char *key = getenv("MINIMP_JOB_KEY");
  service_t s;
  double safety;
  int rc, fd;

  if (argc < 4 || argc > 6 || key == NULL) {
    fprintf(stderr,
            "usage: MINIMP_JOB_KEY=<32 hex> %s RANK SIZE HOST:PORT "
            "[ROUNDS [IFACE]]\n",
            argv[0]);
    return 2;
  }
  memset(&s, 0, sizeof(s));
  s.rank = atoi(argv[1]);
  s.size = atoi(argv[2]);
  s.rounds = argc > 4 ? atoi(argv[4]) : 50;
  safety = getenv("EV_SERVICE_SAFETY_MS") != NULL
               ? atoi(getenv("EV_SERVICE_SAFETY_MS")) / 1000.
               : 0.1;
  rc = mmp_init_ex(s.rank, s.size, argv[3], key, argc > 5 ? argv[5] : NULL,
                   MMP_INIT_EXTERNAL_PROGRESS |
                       (s.rank == 0 ? MMP_INIT_HOST_RENDEZVOUS : 0));
  if (rc != 0) {
    fprintf(stderr, "rank %d: mmp_init_ex: %s\n", s.rank, mmp_strerror(rc));
    return 1;
  }
  /* mmp_init_ex cannot measure the network model automatic selection
   * uses without a progress thread: every rank measures it here, a
   * blocking step that belongs before the loop, not in a callback
   * (until then the selection prices with fixed figures). */
  {
    mmp_netmodel_t nm;
    rc = mmp_comm_netmodel(mmp_comm_world(), &nm);
    if (rc != 0) {
      fprintf(stderr, "rank %d: mmp_comm_netmodel: %s\n", s.rank,
              mmp_strerror(rc));
      return 1;
    }
  }
  s.all = calloc((size_t)s.size, sizeof(*s.all));
  fd = mmp_progress_fd();
  if (s.all == NULL || fd < 0) {
    fprintf(stderr, "rank %d: no memory or no descriptor\n", s.rank);
    return 1;
  }
  ev_io_init(&s.progress, on_progress_fd, fd, EV_READ);
  s.progress.data = &s;
  ev_io_start(loop, &s.progress);
  ev_timer_init(&s.tick, on_tick, 0., 0.002);
  s.tick.data = &s;
  ev_timer_start(loop, &s.tick);
  ev_timer_init(&s.safety, on_safety, safety, safety);
  s.safety.data = &s;
  if (safety > 0)
    ev_timer_start(loop, &s.safety);
  ev_run(loop, 0);

  if (!s.failed)
    printf("rank %d: %d rounds ok, longest callback %.0f us, safety timer "
           "fired %d times\n",
           s.rank, s.round, s.longest * 1e6, s.safety_calls);
  free(s.all);
  /* The service is done with its loop; finalising may wait for the
   * others. */
  rc = mmp_finalize();
  return s.failed || rc != 0 ? 1 : 0;
}
