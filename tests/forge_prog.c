/* SPDX-License-Identifier: MIT */
/*
 * The job test_cluster_forge runs on the emulated cluster, one rank per
 * host: `forge_prog forge COPIES`. The last rank is a forger; the others
 * form a communicator that broadcasts by multicast, every byte checked,
 * while the forger sends to the job's group, from its own sockets, in
 * six steps, most of COPIES rounds each:
 *
 *   malformed  a short datagram, and a live authentic one with its magic,
 *              version or kind altered (5 a round);
 *   foreign    a live datagram's header under another job's id and MAC,
 *              and a live datagram with only its job id changed (2);
 *   bad_mac    a live datagram with a payload byte flipped, one with its
 *              offset moved, and garbage under this job's id with a MAC
 *              made with another key, for the live collective and for
 *              each of the next AHEAD at each size the broadcasts use
 *              (3 + 3 AHEAD): with the MAC unchecked these would reach
 *              the broadcasts and fail them;
 *   duplicate  not a forgery: every datagram it captures while this step
 *              runs, sent again at once (a duplicate), and once more
 *              from a ring of the last RING, in reverse once the ring is
 *              full (reordered: after later ones). The broadcasts ignore
 *              each piece they hold already and count it under
 *              `duplicate`; copies that come after their collective
 *              finished count as `stale`, so that one is not checked.
 *              The step runs for about 2 s, not COPIES rounds;
 *   replay     the bytes of every DATA datagram it captured from two
 *              roots' broadcasts that every rank has finished, unchanged;
 *   keyed      datagrams made with the job key itself (the one thing the
 *              forger takes from being a rank): new data as from a
 *              broadcaster under a finished collective's number and
 *              under a number far beyond the window (each as from world
 *              ranks 0 and 1, since a rank drops its own unheard), from
 *              a sender rank outside the job, and as from the forger
 *              itself, a rank of the job outside the broadcasters'
 *              communicator, for their live collective (6; counted as
 *              stale, the last as another communicator's).
 *
 * The first four and the replays need nothing but what crosses the wire:
 * the job id, the group and the headers are read off captured datagrams.
 * After each step every broadcasting rank waits until its counter of that
 * class moved (up to 10 s), checks that it did, and that the counters of
 * the other classes did not (authentic datagrams never count there).
 * It checks at least one, not all: a datagram lost on a loaded machine is
 * no failure, and the line it prints says how many of how many.
 * During the first four steps the broadcasts are multicast, so the
 * forgeries meet live collectives; during the last two they run over TCP,
 * so that `stale`, which a late authentic repair can also move, moves
 * only through the forgeries.
 *
 * Output: "rank N: forgeries rejected: ..." from every broadcasting rank,
 * "rank N: forger sent ..." from the forger; a failed check exits 2.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"
#include "transport/udp.h"
#include "transport/util.h"

#define CHECK MR_CHECK
#define TAG_GROUP 11
#define TAG_DONE 12
#define CAPTURE_MAX 16
#define DGRAM_MAX 9000
#define WAIT_S 10.0
#define LOOP_MAX_S 60.0

enum { MALFORMED, FOREIGN, BAD_MAC, DUPLICATE, REPLAY, KEYED, NSTEPS };
static const char *step_name[NSTEPS] = {"malformed", "foreign", "bad MAC",
                                        "duplicate", "replay",  "keyed"};
/* Collectives ahead of the live one the forger sends garbage for: far
 * enough that the broadcasts, which outrun the forger, meet some of it,
 * and well inside the window of 256 where it would be kept for them. */
#define AHEAD 32
/* Datagrams per round every broadcasting rank counts (replays: below). */
static const int per_round[NSTEPS] = {5, 2, 3 + 3 * AHEAD, 0, 0, 6};
/* The duplicate step: datagrams held back and sent in reverse, and how
 * long it runs (and the fewest it relays, unless DUP_MAX_S passes). */
#define RING 4
#define DUP_S 2.0
#define DUP_MIN 64
#define DUP_MAX_S 15.0
/* The broadcasts' sizes: one, four and fifteen datagrams. */
static const size_t bcast_sizes[] = {1024, 5000, 20000};

/* What the forger tells the broadcasters at the end of a step. */
typedef struct {
  int32_t done, rounds, from0, from1;
} step_msg_t;

/* ---- The broadcasting ranks --------------------------------------------- */

/* The counter a step moves. */
static uint64_t step_counter(const mmp__mcast_stats_t *s, int step) {
  switch (step) {
  case MALFORMED:
    return s->udp.malformed;
  case FOREIGN:
    return s->udp.foreign;
  case BAD_MAC:
    return s->udp.bad_mac;
  case DUPLICATE:
    return s->duplicate;
  case KEYED:
    return s->stale + s->other_comm;
  default:
    return s->stale;
  }
}

/* One checked broadcast on g, number i of the job: multicast or, with
 * `tcp`, the binomial tree. */
static void one_bcast(mmp_comm_t *g, int i, int tcp) {
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  size_t n = bcast_sizes[i % 3];
  int root = i % mmp_comm_size(g), rc;
  uint8_t buf[20000], want[20000];

  mr_fill(want, n, 10000 + (uint64_t)i);
  if (mmp_comm_rank(g) == root)
    memcpy(buf, want, n);
  else
    memset(buf, 0, n);
  o.algorithm = tcp ? "binomial" : "multicast";
  o.mode = i % 2 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
  rc = mmp_bcast_ex(buf, n, root, g, &o);
  CHECK(rc == 0, "broadcast %d (%zu bytes from %d): %s", i, n, root,
        mmp_err_name(rc));
  CHECK(memcmp(buf, want, n) == 0, "broadcast %d (%zu bytes from %d): %s", i, n,
        root, "data differ");
}

/* Broadcasts on g until the forger says the step is done (rank 0 of g
 * listens for it and passes it on) and at least four ran in the step;
 * returns the forger's message. *count: the job's broadcasts so far. */
static step_msg_t bcast_until_done(mmp_comm_t *g, int forger, int tcp,
                                   int *count) {
  mmp_request_t *q = NULL;
  step_msg_t m, in;
  double t0 = mmp_wtime();
  int flag = 0, k;

  memset(&m, 0, sizeof(m));
  if (mmp_comm_rank(g) == 0)
    CHECK(mmp_irecv(&in, sizeof(in), forger, TAG_DONE, mmp_comm_world(), &q) ==
              0,
          "irecv");
  for (k = 0;; k++) {
    one_bcast(g, (*count)++, tcp);
    if (mmp_comm_rank(g) == 0 && q != NULL) {
      CHECK(mmp_test(&q, &flag, NULL) == 0, "test");
      if (flag) {
        q = NULL;
        m = in;
      }
    }
    CHECK(mmp_bcast(&m, sizeof(m), 0, g) == 0, "step flag");
    if (m.done && k >= 3)
      return m;
    CHECK(mmp_wtime() - t0 < LOOP_MAX_S, "the forger never finished");
  }
}

/* Waits until this step's counter moved by `want` (or WAIT_S passed),
 * then checks it moved and the other classes' counters did not. */
static uint64_t check_step(int step, const mmp__mcast_stats_t *b,
                           uint64_t want) {
  mmp__mcast_stats_t a;
  double t0 = mmp_wtime();
  uint64_t got;

  for (;;) {
    CHECK(mmp__mcast_stats(&a) == 0, "stats");
    got = step_counter(&a, step) - step_counter(b, step);
    if (got >= want || mmp_wtime() - t0 > WAIT_S)
      break;
    usleep(10000);
  }
  CHECK(got >= 1, "%s: none of %llu counted", step_name[step],
        (unsigned long long)want);
  CHECK(step == MALFORMED || a.udp.malformed == b->udp.malformed,
        "%s counted as malformed", step_name[step]);
  CHECK(step == FOREIGN || a.udp.foreign == b->udp.foreign,
        "%s counted as foreign", step_name[step]);
  CHECK(step == BAD_MAC || a.udp.bad_mac == b->udp.bad_mac,
        "%s counted as bad MAC", step_name[step]);
  /* Only the forger's own keyed datagram comes from outside the
   * broadcasters' communicator. */
  CHECK(step == KEYED ? a.other_comm > b->other_comm
                      : a.other_comm == b->other_comm,
        "%s: another communicator's counted %llu times", step_name[step],
        (unsigned long long)(a.other_comm - b->other_comm));
  return got;
}

static void broadcaster(mmp_comm_t *g, int forger) {
  mmp_comm_t *w = mmp_comm_world();
  mmp__mcast_stats_t st, before;
  uint64_t got[NSTEPS], want;
  char line[256];
  int i, step, count = 0;
  size_t at = 0;

  /* The first use detects multicast; then rank 0 names the group. */
  one_bcast(g, count++, 0);
  CHECK(mmp__mcast_stats(&st) == 0 && st.open == 1, "multicast not open");
  if (mmp_comm_rank(g) == 0)
    CHECK(mmp_send(st.group, sizeof(st.group), forger, TAG_GROUP, w) == 0,
          "send group");
  /* The forger listens; two roots' broadcasts it captures, each finished
   * on every rank (rendezvous: the root waits for everyone) before the
   * barrier lets the forger replay them. */
  CHECK(mmp_barrier(w) == 0, "barrier");
  for (i = 0; i < 4; i++) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    uint8_t b[3000], want_b[3000];
    mr_fill(want_b, sizeof(b), 500 + (uint64_t)i);
    if (mmp_comm_rank(g) == i % 2)
      memcpy(b, want_b, sizeof(b));
    else
      memset(b, 0, sizeof(b));
    o.algorithm = "multicast";
    o.mode = MMP_SEND_RNDV;
    CHECK(mmp_bcast_ex(b, sizeof(b), i % 2, g, &o) == 0, "captured broadcast");
    CHECK(memcmp(b, want_b, sizeof(b)) == 0, "captured broadcast data");
  }
  CHECK(mmp_barrier(w) == 0, "barrier");
  for (step = 0; step < NSTEPS; step++) {
    step_msg_t m;
    CHECK(mmp__mcast_stats(&before) == 0, "stats");
    /* Every rank has its `before` when the forger starts. */
    CHECK(mmp_barrier(w) == 0, "barrier");
    m = bcast_until_done(g, forger, step >= REPLAY, &count);
    if (step == REPLAY) /* a rank drops its own datagrams unheard */
      want = (uint64_t)m.rounds * (uint64_t)((mr_rank() == 0 ? 0 : m.from0) +
                                             (mr_rank() == 1 ? 0 : m.from1));
    else if (step == DUPLICATE) /* counted (or stale) before `done` came */
      want = 1;
    else if (step == KEYED && mr_rank() <= 1) /* not its own two */
      want = (uint64_t)m.rounds * (uint64_t)(per_round[step] - 2);
    else
      want = (uint64_t)m.rounds * (uint64_t)per_round[step];
    got[step] = check_step(step, &before, want);
    /* Of the duplicates: how many of the copies the forger sent. */
    if (step == DUPLICATE)
      want = (uint64_t)m.rounds;
    at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%s %llu of %llu",
                           step ? ", " : "", step_name[step],
                           (unsigned long long)got[step],
                           (unsigned long long)want);
  }
  CHECK(mmp_barrier(w) == 0, "barrier");
  printf("rank %d: forgeries rejected: %s; %d broadcasts ok\n", mr_rank(), line,
         count);
}

/* ---- The forger --------------------------------------------------------- */

typedef struct {
  int cap, tx;
  struct sockaddr_in group;
  uint8_t live[DGRAM_MAX]; /* the newest authentic DATA datagram */
  size_t nlive;
  size_t piece;               /* the largest payload seen: a datagram's */
  uint8_t *capt[CAPTURE_MAX]; /* DATA of finished broadcasts, as sent */
  size_t ncapt[CAPTURE_MAX];
  int ncaptured, from0, from1;
  uint32_t ctx, seq_max;
  mmp__dgram_keys_t other; /* another job's */
  int sent, relayed, relay_lost;
} forger_t;

/* "a.b.c.d:port" into *sa. */
static void parse_addr(const char *s, struct sockaddr_in *sa) {
  char host[64];
  size_t n = strcspn(s, ":");

  CHECK(n < sizeof(host) && s[n] == ':', "address %s", s);
  memcpy(host, s, n);
  host[n] = '\0';
  memset(sa, 0, sizeof(*sa));
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)atoi(s + n + 1));
  CHECK(inet_pton(AF_INET, host, &sa->sin_addr) == 1, "address %s", s);
}

/* Joins the group on this host's eth0 address (the one we listen on), to
 * capture; opens a second socket to send from. */
static void forger_open(forger_t *f, const char *group) {
  struct sockaddr_in me;
  struct ip_mreq mr;
  char mine[128];
  int one = 1, zero = 0, ttl = 1, big = 4 << 20;

  parse_addr(group, &f->group);
  CHECK(mmp__debug_listen_addr(mr_rank(), mine, sizeof(mine)) == 0, "addr");
  parse_addr(mine, &me);
  f->cap = socket(AF_INET, SOCK_DGRAM, 0);
  f->tx = socket(AF_INET, SOCK_DGRAM, 0);
  CHECK(f->cap >= 0 && f->tx >= 0, "socket");
  (void)setsockopt(f->cap, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  (void)setsockopt(f->cap, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  CHECK(bind(f->cap, (struct sockaddr *)&f->group, sizeof(f->group)) == 0,
        "bind %s", group);
  mr.imr_multiaddr = f->group.sin_addr;
  mr.imr_interface = me.sin_addr;
  CHECK(setsockopt(f->cap, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) == 0,
        "join %s", group);
  CHECK(fcntl(f->cap, F_SETFL, O_NONBLOCK) == 0, "nonblocking");
  CHECK(setsockopt(f->tx, IPPROTO_IP, IP_MULTICAST_IF, &me.sin_addr,
                   sizeof(me.sin_addr)) == 0,
        "multicast interface");
  (void)setsockopt(f->tx, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl));
  /* Our own forgeries must not come back as templates. */
  (void)setsockopt(f->tx, IPPROTO_IP, IP_MULTICAST_LOOP, &zero, sizeof(zero));
}

/* Reads what the group received since the last call: the newest DATA
 * datagram becomes the live template; with `keep`, DATA from world
 * ranks 0 and 1 is kept (as received) for replaying. */
static void forger_drain(forger_t *f, int keep) {
  uint8_t d[DGRAM_MAX];
  ssize_t n;

  while ((n = recv(f->cap, d, sizeof(d), 0)) > 0) {
    uint32_t src, seq;
    if ((size_t)n <= MMP__DGRAM_HDR || d[5] != MMP__DG_DATA)
      continue;
    memcpy(f->live, d, (size_t)n);
    f->nlive = (size_t)n;
    if ((size_t)n - MMP__DGRAM_HDR > f->piece)
      f->piece = (size_t)n - MMP__DGRAM_HDR;
    f->ctx = mmp__get_u32(d + 16);
    seq = mmp__get_u32(d + 20);
    src = mmp__get_u32(d + 24);
    if ((int32_t)(seq - f->seq_max) > 0 || f->seq_max == 0)
      f->seq_max = seq;
    if (!keep || src > 1 || f->ncaptured == CAPTURE_MAX)
      continue;
    f->capt[f->ncaptured] = malloc((size_t)n);
    CHECK(f->capt[f->ncaptured] != NULL, "memory");
    memcpy(f->capt[f->ncaptured], d, (size_t)n);
    f->ncapt[f->ncaptured++] = (size_t)n;
    if (src == 0)
      f->from0++;
    else
      f->from1++;
  }
}

static void forger_send(forger_t *f, const uint8_t *d, size_t n) {
  CHECK(sendto(f->tx, d, n, 0, (struct sockaddr *)&f->group,
               sizeof(f->group)) == (ssize_t)n,
        "sendto");
  f->sent++;
  /* Paced, so that the switch's queues never drop one. */
  usleep(1000);
}

/* One copy of an authentic datagram, unpaced (a copy that comes late
 * only finds its collective finished); one the kernel drops is counted,
 * not fatal: the broadcasts need none of them. */
static void relay(forger_t *f, const uint8_t *d, size_t n) {
  if (sendto(f->tx, d, n, 0, (struct sockaddr *)&f->group, sizeof(f->group)) ==
      (ssize_t)n)
    f->relayed++;
  else
    f->relay_lost++;
}

/* The duplicate step: every datagram captured while the broadcasts run
 * goes out again at once, and again from the ring, in reverse, each time
 * it fills. Returns the copies sent. */
static int relay_step(forger_t *f) {
  uint8_t d[DGRAM_MAX], ring[RING][DGRAM_MAX];
  size_t nring[RING];
  int k = 0, first = f->relayed;
  double t0 = mmp_wtime(), t;
  struct pollfd pf = {f->cap, POLLIN, 0};
  ssize_t n;

  while ((t = mmp_wtime() - t0) < DUP_MAX_S &&
         (t < DUP_S || f->relayed - first < DUP_MIN)) {
    if (poll(&pf, 1, 10) <= 0)
      continue;
    while ((n = recv(f->cap, d, sizeof(d), 0)) > 0) {
      if ((size_t)n <= MMP__DGRAM_HDR)
        continue;
      relay(f, d, (size_t)n);
      memcpy(ring[k], d, (size_t)n);
      nring[k++] = (size_t)n;
      if (k < RING)
        continue;
      while (k > 0) {
        k--;
        relay(f, ring[k], nring[k]);
      }
    }
  }
  while (k > 0) {
    k--;
    relay(f, ring[k], nring[k]);
  }
  return f->relayed - first;
}

/* The live template with byte `at` set to `v`. */
static void send_altered(forger_t *f, size_t at, uint8_t v) {
  uint8_t d[DGRAM_MAX];

  memcpy(d, f->live, f->nlive);
  d[at] = v;
  forger_send(f, d, f->nlive);
}

/* The live template's header fields. */
static void live_hdr(const forger_t *f, mmp__dgram_hdr_t *h) {
  memset(h, 0, sizeof(*h));
  h->kind = f->live[5];
  h->ctx = mmp__get_u32(f->live + 16);
  h->seq = mmp__get_u32(f->live + 20);
  h->src = mmp__get_u32(f->live + 24);
  h->offset = mmp__get_u64(f->live + 32);
  h->total = mmp__get_u64(f->live + 40);
}

/* One round of a step's datagrams. */
static void forge_round(forger_t *f, int step, const mmp__dgram_keys_t *key) {
  uint8_t d[DGRAM_MAX], junk[DGRAM_MAX];
  const size_t nj = 1000; /* the garbage's length, where any will do */
  size_t pl = f->nlive - MMP__DGRAM_HDR;
  uint64_t job_id = mmp__get_u64(f->live + 8);
  mmp__dgram_hdr_t h;
  int i;

  live_hdr(f, &h);
  memset(junk, 0xee, sizeof(junk));
  switch (step) {
  case MALFORMED:
    forger_send(f, junk, 20);
    send_altered(f, 0, f->live[0] ^ 0xff); /* magic */
    send_altered(f, 4, MMP__DGRAM_VERSION + 1);
    send_altered(f, 5, 0); /* kind */
    send_altered(f, 5, MMP__DG_KIND_MAX + 1);
    break;
  case FOREIGN:
    mmp__dgram_encode(&f->other, f->other.job_id, &h, junk, nj, d);
    forger_send(f, d, MMP__DGRAM_HDR + nj);
    memcpy(d, f->live, f->nlive);
    mmp__put_u64(d + 8, job_id ^ 1);
    forger_send(f, d, f->nlive);
    break;
  case BAD_MAC:
    send_altered(f, MMP__DGRAM_HDR + pl / 2,
                 f->live[MMP__DGRAM_HDR + pl / 2] ^ 1);
    memcpy(d, f->live, f->nlive);
    mmp__put_u64(d + 32, mmp__get_u64(f->live + 32) + pl);
    forger_send(f, d, f->nlive);
    /* Garbage for the live collective from its first byte on, and for
     * the next AHEAD at each size they may have, the furthest first (the
     * broadcasts outrun the forger): delivered, it would be kept for them
     * and end up in their data, or fail them. */
    h.offset = 0;
    mmp__dgram_encode(&f->other, job_id, &h, junk, nj, d);
    forger_send(f, d, MMP__DGRAM_HDR + nj);
    for (i = 0; i < 3 * AHEAD; i++) {
      size_t n = bcast_sizes[i % 3] < f->piece ? bcast_sizes[i % 3] : f->piece;
      h.seq = mmp__get_u32(f->live + 20) + AHEAD - (uint32_t)(i / 3);
      h.total = bcast_sizes[i % 3];
      mmp__dgram_encode(&f->other, job_id, &h, junk, n, d);
      forger_send(f, d, MMP__DGRAM_HDR + n);
    }
    break;
  case REPLAY:
    for (i = 0; i < f->ncaptured; i++)
      forger_send(f, f->capt[i], f->ncapt[i]);
    break;
  case KEYED:
    /* First as from this rank, for the live collective: a rank of the
     * job, but not of the broadcasters' communicator, which shares
     * nothing with it. Then as from world ranks 0 and 1: a finished
     * collective's number, one beyond the window; then a sender that is
     * no rank of the job. */
    h.kind = MMP__DG_DATA;
    h.ctx = f->ctx;
    h.offset = 0;
    h.total = nj;
    h.src = (uint32_t)mr_rank();
    h.seq = f->seq_max;
    mmp__dgram_encode(key, key->job_id, &h, junk, nj, d);
    forger_send(f, d, MMP__DGRAM_HDR + nj);
    for (h.src = 0; h.src < 2; h.src++) {
      h.seq = mmp__get_u32(f->capt[0] + 20);
      mmp__dgram_encode(key, key->job_id, &h, junk, nj, d);
      forger_send(f, d, MMP__DGRAM_HDR + nj);
      h.seq = f->seq_max + 100000;
      mmp__dgram_encode(key, key->job_id, &h, junk, nj, d);
      forger_send(f, d, MMP__DGRAM_HDR + nj);
    }
    h.seq = f->seq_max;
    h.src = (uint32_t)mr_size() + 3;
    mmp__dgram_encode(key, key->job_id, &h, junk, nj, d);
    forger_send(f, d, MMP__DGRAM_HDR + nj);
    break;
  }
}

static void forger(int rounds) {
  mmp_comm_t *w = mmp_comm_world();
  uint8_t key[MMP__JOB_KEY_LEN], other[MMP__JOB_KEY_LEN];
  mmp__dgram_keys_t k;
  /* As rank 0 sends it: mmp__mcast_stats_t's group, whole. */
  char group[sizeof(((mmp__mcast_stats_t *)NULL)->group)];
  forger_t *f = calloc(1, sizeof(*f));
  int step, r, i;

  CHECK(f != NULL, "memory");
  CHECK(mmp_recv(group, sizeof(group), 0, TAG_GROUP, w, NULL) == 0, "group");
  group[sizeof(group) - 1] = '\0';
  forger_open(f, group);
  /* Another job's key: ours with a bit flipped, for its id and MAC. */
  CHECK(mmp__debug_job_key(key) == 0, "key");
  mmp__auth_dgram_keys(key, &k);
  memcpy(other, key, sizeof(other));
  other[0] ^= 1;
  mmp__auth_dgram_keys(other, &f->other);
  CHECK(mmp_barrier(w) == 0, "barrier");
  /* The captured broadcasts run; the barrier says every rank finished. */
  CHECK(mmp_barrier(w) == 0, "barrier");
  forger_drain(f, 1);
  CHECK(f->from0 > 0 && f->from1 > 0,
        "captured %d datagrams from rank 0 and %d from rank 1 (is the group "
        "%s reaching this host?)",
        f->from0, f->from1, group);
  for (step = 0; step < NSTEPS; step++) {
    step_msg_t m = {1, rounds, f->from0, f->from1};
    CHECK(mmp_barrier(w) == 0, "barrier");
    if (step == DUPLICATE) {
      forger_drain(f, 0); /* what came before the step */
      m.rounds = relay_step(f);
    }
    for (r = 0; step != DUPLICATE && r < rounds; r++) {
      forger_drain(f, 0);
      forge_round(f, step, &k);
      usleep(20000);
    }
    CHECK(mmp_send(&m, sizeof(m), 0, TAG_DONE, w) == 0, "done");
  }
  CHECK(mmp_barrier(w) == 0, "barrier");
  printf("rank %d: forger sent %d datagrams to %s (%d captured for replay: %d "
         "from rank 0, %d from rank 1), and %d copies of authentic ones (%d "
         "more refused by its kernel)\n",
         mr_rank(), f->sent, group, f->ncaptured, f->from0, f->from1,
         f->relayed, f->relay_lost);
  mmp__auth_wipe(key, sizeof(key));
  close(f->cap);
  close(f->tx);
  for (i = 0; i < f->ncaptured; i++)
    free(f->capt[i]);
  free(f);
}

int main(int argc, char **argv) {
  mmp_comm_t *g;
  int forger_rank;

  if (argc < 3 || strcmp(argv[1], "forge") != 0 || atoi(argv[2]) < 1)
    return 4;
  if (mmp_init(&argc, &argv) != 0)
    return 3;
  forger_rank = mr_size() - 1;
  CHECK(mr_size() >= 3, "needs 3 ranks or more");
  CHECK(mmp_comm_split(mmp_comm_world(), mr_rank() == forger_rank, mr_rank(),
                       &g) == 0,
        "split");
  if (mr_rank() == forger_rank)
    forger(atoi(argv[2]));
  else
    broadcaster(g, forger_rank);
  CHECK(mmp_comm_free(&g) == 0, "free");
  fflush(stdout);
  return mmp_finalize() == 0 ? 0 : 5;
}
