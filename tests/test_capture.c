/* SPDX-License-Identifier: MIT */
/*
 * Everything a short job puts on the network, read without tcpdump: the
 * test moves into a network namespace of its own, captures every IPv4
 * packet on its loopback with a packet socket, and runs a job of three
 * ranks there through minimprun, one rank on "this" host and two on
 * hosts reached through daemons (scripted_job as the agent), so that the
 * rendezvous, the control connections and the ranks' own connections all
 * cross the capture. It reassembles each TCP stream and checks that no
 * stream holds the job key (raw, reversed, hex in either case, base64),
 * and that the ranks' data is there in clear without MINIMP_ENCRYPT and
 * nowhere with it; so are, on the control connections, a -x variable (in
 * LAUNCH) and what the ranks behind daemons print. Rank 0 prints the key
 * through minimprun's pipe.
 *
 * Needs root (a namespace and a packet socket); exits 77 (skipped)
 * otherwise.
 *
 * Run as: test_capture MINIMPRUN CAPTURE_PROG LAUNCH_HELPER
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

extern char **environ;

#define MARKER "capture-marker-5d1e7a"
#define OUT_MARKER "capture-output-3b9f0c" /* capture_prog's output */
#define ENV_MARKER "capture-env-71d2e4"

static const char *minimprun, *prog, *helper;

/* ---- Capture ------------------------------------------------------------ */

typedef struct seg_s {
  uint32_t seq;
  uint32_t len;
  size_t at; /* in the arena */
} seg_t;

typedef struct flow_s {
  uint32_t saddr, daddr;
  uint16_t sport, dport;
  seg_t *segs;
  size_t nsegs, cap;
  uint8_t *data; /* reassembled */
  size_t len;
  size_t gaps;
} flow_t;

typedef struct capture_s {
  int fd;
  atomic_int stop;
  pthread_t th;
  uint8_t *arena;
  size_t used, cap;
  flow_t *flows;
  size_t nflows, fcap;
  size_t packets;
} capture_t;

static flow_t *flow_of(capture_t *c, const struct iphdr *ip,
                       const struct tcphdr *tcp) {
  for (size_t i = 0; i < c->nflows; i++) {
    flow_t *f = &c->flows[i];
    if (f->saddr == ip->saddr && f->daddr == ip->daddr &&
        f->sport == tcp->source && f->dport == tcp->dest)
      return f;
  }
  if (c->nflows == c->fcap) {
    c->fcap = c->fcap ? 2 * c->fcap : 64;
    c->flows = realloc(c->flows, c->fcap * sizeof(*c->flows));
  }
  memset(&c->flows[c->nflows], 0, sizeof(flow_t));
  c->flows[c->nflows].saddr = ip->saddr;
  c->flows[c->nflows].daddr = ip->daddr;
  c->flows[c->nflows].sport = tcp->source;
  c->flows[c->nflows].dport = tcp->dest;
  return &c->flows[c->nflows++];
}

/* One IPv4 packet: keeps its TCP payload, if any, under its flow. */
static void capture_packet(capture_t *c, const uint8_t *p, size_t n) {
  const struct iphdr *ip = (const void *)p;
  const struct tcphdr *tcp;
  size_t ihl, thl, tot;
  flow_t *f;

  if (n < sizeof(*ip) || ip->version != 4 || ip->protocol != IPPROTO_TCP)
    return;
  ihl = (size_t)ip->ihl * 4;
  tot = ntohs(ip->tot_len);
  if (tot > n || ihl + sizeof(*tcp) > tot)
    return;
  tcp = (const void *)(p + ihl);
  thl = (size_t)tcp->doff * 4;
  if (ihl + thl > tot)
    return;
  f = flow_of(c, ip, tcp);
  if (tot == ihl + thl)
    return;
  if (f->nsegs == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    f->segs = realloc(f->segs, f->cap * sizeof(*f->segs));
  }
  if (c->used + tot > c->cap) {
    c->cap = (c->used + tot) * 2;
    c->arena = realloc(c->arena, c->cap);
  }
  memcpy(c->arena + c->used, p + ihl + thl, tot - ihl - thl);
  f->segs[f->nsegs].seq = ntohl(tcp->seq);
  f->segs[f->nsegs].len = (uint32_t)(tot - ihl - thl);
  f->segs[f->nsegs].at = c->used;
  f->nsegs++;
  c->used += tot - ihl - thl;
}

static void *capture_main(void *arg) {
  capture_t *c = arg;
  static uint8_t buf[1 << 17];

  while (!atomic_load(&c->stop)) {
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    struct sockaddr_ll from;
    socklen_t fl = sizeof(from);
    ssize_t n;

    if (poll(&pfd, 1, 50) <= 0)
      continue;
    while ((n = recvfrom(c->fd, buf, sizeof(buf), MSG_DONTWAIT,
                         (struct sockaddr *)&from, &fl)) > 0) {
      /* On loopback every packet is seen leaving and arriving. */
      if (from.sll_pkttype != PACKET_OUTGOING) {
        c->packets++;
        capture_packet(c, buf, (size_t)n);
      }
      fl = sizeof(from);
    }
  }
  return NULL;
}

static int seg_cmp(const void *a, const void *b) {
  const seg_t *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Puts each flow's payload in order, dropping retransmitted bytes and
 * counting holes (which would make the check blind). */
static void capture_reassemble(capture_t *c) {
  for (size_t i = 0; i < c->nflows; i++) {
    flow_t *f = &c->flows[i];
    uint32_t base, next;
    size_t total = 0;

    if (f->nsegs == 0)
      continue;
    base = f->segs[0].seq;
    /* Relative sequence numbers, so that sorting survives a wrap. */
    for (size_t k = 0; k < f->nsegs; k++) {
      f->segs[k].seq -= base;
      total += f->segs[k].len;
    }
    qsort(f->segs, f->nsegs, sizeof(*f->segs), seg_cmp);
    f->data = malloc(total + 1);
    next = f->segs[0].seq;
    for (size_t k = 0; k < f->nsegs; k++) {
      seg_t *s = &f->segs[k];
      uint32_t skip;
      if (s->seq > next)
        f->gaps++;
      if (s->seq + s->len <= next)
        continue;
      skip = s->seq < next ? next - s->seq : 0;
      memcpy(f->data + f->len, c->arena + s->at + skip, s->len - skip);
      f->len += s->len - skip;
      next = s->seq + s->len;
    }
  }
}

static void capture_free(capture_t *c) {
  for (size_t i = 0; i < c->nflows; i++) {
    free(c->flows[i].segs);
    free(c->flows[i].data);
  }
  free(c->flows);
  free(c->arena);
  close(c->fd);
}

/* ---- The namespace ------------------------------------------------------ */

static int enter_namespace(void) {
  struct ifreq ifr;
  int fd;

  if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0)
    return -1;
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  memset(&ifr, 0, sizeof(ifr));
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
  if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
    return -1;
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
    return -1;
  close(fd);
  return 0;
}

static void capture_start(capture_t *c) {
  struct sockaddr_ll sll;
  int big = 64 << 20;

  memset(c, 0, sizeof(*c));
  c->fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
  assert_true(c->fd >= 0);
  setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  memset(&sll, 0, sizeof(sll));
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_IP);
  sll.sll_ifindex = (int)if_nametoindex("lo");
  assert_int_equal(bind(c->fd, (struct sockaddr *)&sll, sizeof(sll)), 0);
  atomic_init(&c->stop, 0);
  assert_int_equal(pthread_create(&c->th, NULL, capture_main, c), 0);
}

static void capture_stop(capture_t *c) {
  struct tpacket_stats st;
  socklen_t len = sizeof(st);

  usleep(200000); /* the last packets of the job */
  atomic_store(&c->stop, 1);
  pthread_join(c->th, NULL);
  assert_int_equal(getsockopt(c->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len),
                   0);
  assert_int_equal(st.tp_drops, 0);
  capture_reassemble(c);
}

/* ---- The job ------------------------------------------------------------ */

/* Runs minimprun with `args`; returns its exit code, its stdout in `out`. */
static int run_job(char *const *args, char *out, size_t cap) {
  posix_spawn_file_actions_t fa;
  int p[2], st;
  size_t got = 0;
  ssize_t n;
  pid_t pid;

  assert_int_equal(pipe(p), 0);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addclose(&fa, p[0]);
  assert_int_equal(posix_spawn(&pid, minimprun, &fa, NULL, args, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  while (got + 1 < cap && (n = read(p[0], out + got, cap - 1 - got)) > 0)
    got += (size_t)n;
  out[got] = '\0';
  close(p[0]);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* `pat` in any reassembled stream? */
static int seen(const capture_t *c, const void *pat, size_t n) {
  for (size_t i = 0; i < c->nflows; i++)
    if (c->flows[i].len >= n &&
        memmem(c->flows[i].data, c->flows[i].len, pat, n) != NULL)
      return 1;
  return 0;
}

static void check_job(int encrypt) {
  char agent[600], out[4096], hex[40], b64[64], *at;
  char *args[24];
  uint8_t key[16], rev[16];
  size_t bytes = 0;
  capture_t c;
  int k = 0;

  snprintf(agent, sizeof(agent), "%s agent", helper);
  args[k++] = (char *)minimprun;
  if (encrypt)
    args[k++] = "--encrypt";
  args[k++] = "--agent";
  args[k++] = agent;
  args[k++] = "--iface";
  args[k++] = "lo";
  args[k++] = "--host";
  args[k++] = "localhost,nodeA,nodeB";
  args[k++] = "-x";
  args[k++] = "MINIMP_SHM=off";
  args[k++] = "-x";
  args[k++] = "CAPTURE_VAR=" ENV_MARKER;
  args[k++] = (char *)prog;
  args[k] = NULL;
  capture_start(&c);
  assert_int_equal(run_job(args, out, sizeof(out)), 0);
  capture_stop(&c);
  at = strstr(out, "KEY ");
  assert_non_null(at);
  assert_int_equal(
      sodium_hex2bin(key, sizeof(key), at + 4, 32, NULL, NULL, NULL), 0);
  /* The capture saw the job: the rendezvous, two control connections and
   * three rank pairs, each way, without a hole. */
  for (size_t i = 0; i < c.nflows; i++) {
    assert_int_equal(c.flows[i].gaps, 0);
    bytes += c.flows[i].len;
  }
  assert_true(c.nflows >= 2 * (3 + 2 + 3));
  assert_true(bytes > 6 * 70000);
  /* Without sealing the ranks' data is in clear (so the capture reads what
   * crossed); with it, nowhere. */
  assert_int_equal(seen(&c, MARKER, sizeof(MARKER) - 1), !encrypt);
  /* The same for the control connections: what LAUNCH carries, and the
   * remote ranks' output, which still reaches minimprun. */
  assert_int_equal(seen(&c, ENV_MARKER, sizeof(ENV_MARKER) - 1), !encrypt);
  assert_int_equal(seen(&c, OUT_MARKER, sizeof(OUT_MARKER) - 1), !encrypt);
  assert_non_null(strstr(out, OUT_MARKER " 1"));
  assert_non_null(strstr(out, OUT_MARKER " 2"));
  /* No key, in any form. */
  for (size_t i = 0; i + 6 <= sizeof(key); i++)
    assert_false(seen(&c, key + i, 6));
  for (size_t i = 0; i < sizeof(key); i++)
    rev[i] = key[sizeof(key) - 1 - i];
  assert_false(seen(&c, rev, 8));
  sodium_bin2hex(hex, sizeof(hex), key, sizeof(key));
  assert_false(seen(&c, hex, 12));
  assert_false(seen(&c, hex + 20, 12));
  for (char *p = hex; *p != '\0'; p++)
    if (*p >= 'a' && *p <= 'f')
      *p = (char)(*p - 'a' + 'A');
  assert_false(seen(&c, hex, 12));
  sodium_bin2base64(b64, sizeof(b64), key, sizeof(key),
                    sodium_base64_VARIANT_ORIGINAL);
  assert_false(seen(&c, b64, 12));
  assert_false(seen(&c, "MINIMP_JOB_KEY", 14));
  capture_free(&c);
}

static void test_capture_plain_job_carries_no_key(void **state) {
  (void)state;
  check_job(0);
}

static void test_capture_sealed_job_carries_no_key_nor_data(void **state) {
  (void)state;
  check_job(1);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_capture_plain_job_carries_no_key),
      cmocka_unit_test(test_capture_sealed_job_carries_no_key_nor_data),
  };

  if (argc != 4) {
    fprintf(stderr, "usage: test_capture MINIMPRUN CAPTURE_PROG HELPER\n");
    return 2;
  }
  minimprun = argv[1];
  prog = argv[2];
  helper = argv[3];
  if (sodium_init() < 0)
    return 1;
  if (enter_namespace() != 0) {
    fprintf(stderr, "test_capture: needs root for a network namespace\n");
    return 77;
  }
  signal(SIGPIPE, SIG_IGN);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
