/* SPDX-License-Identifier: MIT */
/*
 * The program test_cluster runs on the emulated cluster, one rank per host,
 * through minimprun --agent "ip netns exec". Modes:
 *
 *   mcast ROUNDS     multicast broadcasts of 1 KiB, 64 KiB, 1 MiB + 3 from
 *                    every third root and multicast s-to-p (p sources of
 *                    64 KiB, 2 of unequal lengths), checked
 *                    (test_cluster_mcast adds loss with nft), then AUTO
 *                    at 1 KiB and 1 MiB; mcast_auto on|off: that AUTO
 *                    alone (the same algorithm on every rank, printed by
 *                    rank 0; never multicast unless on, MINIMP_MCAST=on);
 *                    mcast_blocked on: the algorithm is MMP_ENOTSUP where
 *                    multicast is dropped, AUTO works without it;
 *                    mcast_deaf RANK: that rank drops all UDP after
 *                    detection, the broadcast fails in bounded time;
 *                    mcast_repair ROUNDS: that many 1 MiB multicast
 *                    broadcasts from rank 0, checked, then rank 0 prints
 *                    the repairs all ranks sent, by unicast and multicast
 *   exchange BYTES   every pair exchanges BYTES each way, checked byte for
 *                    byte; each rank checks that its peers' addresses are
 *                    on the cluster subnet and that the bytes left through
 *                    eth0, not lo (interface counters of its namespace)
 *   nodes BYTES      the same with several ranks per host (MINIMP_LOCAL_SIZE
 *                    of them, placed by slot): the ranks of a host share
 *                    memory and a node number, everything between hosts
 *                    still crosses eth0, and nothing goes over lo; the
 *                    model, AUTO and a node broadcast see the hosts
 *   hosts BYTES      the same where the launcher placed the ranks as it
 *                    chose and every host has its own name (srun on
 *                    tests/realcluster): the hosts are told apart by name;
 *                    AUTO's choice is checked where every host has as many
 *                    ranks
 *   stop R           after an exchange, rank R stops itself (SIGSTOP); the
 *                    others wait on it and must see MMP_EPEERLOST
 *   wait R           after an exchange, everyone waits on rank R forever
 *                    (the test cuts R's link meanwhile)
 *
 * Output: one line per rank, "rank N: ..." ; a failed check exits 2.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

#define CHECK MR_CHECK

/* The bytes `dev` sent, from /proc/net/dev, which is always this
 * process's network namespace's (/sys/class/net is the one sysfs was
 * mounted in, which a host whose mount namespace is its own, as
 * tests/realcluster's are, may not have remounted). */
static unsigned long long counter(const char *dev) {
  char line[512], name[64];
  unsigned long long v[9], found = 0;
  FILE *f = fopen("/proc/net/dev", "r");

  if (f == NULL)
    return 0;
  snprintf(name, sizeof(name), "%s:", dev);
  while (fgets(line, sizeof(line), f) != NULL) {
    char *p = line + strspn(line, " ");
    if (strncmp(p, name, strlen(name)) != 0)
      continue;
    /* Received: bytes and 7 more; then sent bytes. */
    if (sscanf(p + strlen(name), "%llu %llu %llu %llu %llu %llu %llu %llu %llu",
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
               &v[8]) == 9)
      found = v[8];
    break;
  }
  fclose(f);
  return found;
}

static void exchange(size_t n, int tag) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size(), j, nq = 0;
  uint8_t *out = malloc(n + 1), *in = malloc(n + 1), *want = malloc(n + 1);
  mmp_request_t **q = calloc(2 * (size_t)p, sizeof(*q));

  mr_fill(out, n, (uint64_t)r * 977 + (uint64_t)tag);
  for (j = 1; j < p; j++) {
    /* Pairwise rounds: send to r+j, receive from r-j. */
    int to = (r + j) % p, from = (r + p - j) % p;
    nq = 0;
    CHECK(mmp_irecv(in, n, from, tag, w, &q[nq++]) == 0, "irecv");
    CHECK(mmp_isend(out, n, to, tag, w, &q[nq++]) == 0, "isend");
    CHECK(mmp_waitall((size_t)nq, q, NULL) == 0, "waitall from %d", from);
    mr_fill(want, n, (uint64_t)from * 977 + (uint64_t)tag);
    CHECK(memcmp(in, want, n) == 0, "data from %d", from);
  }
  free(out);
  free(in);
  free(want);
  free(q);
}

/* Which host each rank runs on (hosts numbered in the order of their
 * first rank), how many hosts, and how many ranks on each. */
static int *host_of, *on_host, nhosts;

/* minimprun places ranks by slot, MINIMP_LOCAL_SIZE to a host. */
static void layout_by_slot(void) {
  const char *s = getenv("MINIMP_LOCAL_SIZE");
  int p = mr_size(), per = s != NULL && atoi(s) > 0 ? atoi(s) : 1;

  host_of = calloc((size_t)p, sizeof(*host_of));
  on_host = calloc((size_t)p, sizeof(*on_host));
  CHECK(host_of != NULL && on_host != NULL, "memory");
  for (int j = 0; j < p; j++)
    on_host[host_of[j] = j / per]++;
  nhosts = (p + per - 1) / per;
}

/* Every rank's host name, gathered: ranks with one name share a host. */
static void layout_by_name(void) {
  enum { L = 64 };
  int p = mr_size(), j, k;
  char *names = calloc((size_t)p, L), mine[L] = "";

  host_of = calloc((size_t)p, sizeof(*host_of));
  on_host = calloc((size_t)p, sizeof(*on_host));
  CHECK(names != NULL && host_of != NULL && on_host != NULL, "memory");
  CHECK(gethostname(mine, L - 1) == 0, "host name");
  CHECK(mmp_allgather(mine, L, names, L, MMP_BYTE, mmp_comm_world()) == 0,
        "allgather");
  for (j = 0; j < p; j++) {
    for (k = 0; k < j && strcmp(names + k * L, names + j * L) != 0; k++)
      ;
    host_of[j] = k < j ? host_of[k] : nhosts++;
    on_host[host_of[j]]++;
  }
  free(names);
}

/* World ranks' index among their host's ranks. */
static int index_on_host(int rank) {
  int i = 0;

  for (int j = 0; j < rank; j++)
    i += host_of[j] == host_of[rank];
  return i;
}

/* The emulated cluster's subnet with its trailing dot, as tests/netcluster
 * sets it up (NETCLUSTER_SUBNET, 10.77.0 by default). */
static const char *subnet(void) {
  static char net[64];
  const char *s = getenv("NETCLUSTER_SUBNET");

  snprintf(net, sizeof(net), "%s.", s != NULL && *s ? s : "10.77.0");
  return net;
}

static void check_addresses(void) {
  int r = mr_rank(), p = mr_size(), j;
  char mine[128], other[128];
  const char *net = subnet();

  CHECK(mmp__debug_listen_addr(r, mine, sizeof(mine)) == 0, "own address");
  CHECK(strncmp(mine, net, strlen(net)) == 0, "listening on %s", mine);
  for (j = 0; j < p; j++) {
    if (j == r)
      continue;
    CHECK(mmp__debug_listen_addr(j, other, sizeof(other)) == 0, "addr %d", j);
    CHECK(strncmp(other, net, strlen(net)) == 0, "rank %d on %s", j, other);
    /* Only the ranks of our host share our address. */
    CHECK((strncmp(other, mine, strcspn(mine, ":") + 1) == 0) ==
              (host_of[j] == host_of[r]),
          "rank %d on %s, we on %s", j, other, mine);
  }
}

static void mode_exchange(size_t n) {
  unsigned long long eth0 = counter("eth0");
  unsigned long long lo = counter("lo");
  int p = mr_size();

  check_addresses();
  exchange(n, 1);
  /* A send completes once the kernel holds its bytes; after the barrier
   * every rank has received everything, so it has all left this host. */
  CHECK(mmp_barrier(mmp_comm_world()) == 0, "barrier");
  eth0 = counter("eth0") - eth0;
  lo = counter("lo") - lo;
  /* Everything we sent to the p-1 other hosts left through eth0. */
  CHECK(eth0 >= (unsigned long long)n * (unsigned long long)(p - 1),
        "eth0 carried %llu bytes", eth0);
  CHECK(lo < (unsigned long long)n / 4, "lo carried %llu bytes", lo);
  printf("rank %d: exchange ok, eth0 %llu bytes, lo %llu bytes\n", mr_rank(),
         eth0, lo);
}

/* Broadcasts `want` (n bytes) from `root` into `buf` as `o` says, checks
 * the data, and returns the bytes this host's eth0 sent meanwhile. */
static unsigned long long counted_bcast(uint8_t *buf, const uint8_t *want,
                                        size_t n, int root,
                                        const mmp_bcast_opts_t *o) {
  mmp_comm_t *w = mmp_comm_world();
  unsigned long long eth0;

  memcpy(buf, want, n);
  if (mr_rank() != root)
    memset(buf, 0, n);
  eth0 = counter("eth0");
  CHECK(mmp_barrier(w) == 0, "barrier");
  CHECK(mmp_bcast_ex(buf, n, root, w, o) == 0, "node broadcast (groups %d)",
        o->groups);
  CHECK(mmp_barrier(w) == 0, "barrier");
  eth0 = counter("eth0") - eth0;
  /* Every rank of a host has read the counter before the next broadcast
   * sends anything (a slow rank would count the next one's bytes too). */
  CHECK(mmp_barrier(w) == 0, "barrier");
  CHECK(memcmp(buf, want, n) == 0, "node broadcast data (groups %d)",
        o->groups);
  return eth0;
}

/*
 * The collectives see the nodes: the model has a figure for the links
 * within a node far below the network's, AUTO runs the node broadcast,
 * and a node broadcast (pipeline between leaders) from a rank that is no
 * host's first sends the data out of each host at most once.
 */
static void node_bcast(size_t n) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT, sel;
  int r = mr_rank(), p = mr_size(), root = 0, most = 0, even = 1, h, j;
  uint8_t *buf = malloc(n), *want = malloc(n);
  unsigned long long eth0;
  mmp_netmodel_t nm;

  for (h = 0; h < nhosts; h++) {
    most = on_host[h] > most ? on_host[h] : most;
    even = even && on_host[h] == on_host[0];
  }
  /* The root is no host's first: the second host's second rank, else the
   * first host's (rank 0, a first, stands for none found). */
  for (j = 0; j < p; j++)
    if (index_on_host(j) == 1 && (root == 0 || host_of[j] == 1))
      root = j;
  CHECK(mmp_comm_netmodel(w, &nm) == 0, "model");
  CHECK(nm.nodes == nhosts && nm.node_size == most, "layout %d x %d", nm.nodes,
        nm.node_size);
  CHECK(nm.beta_node < nm.beta / 4, "beta %.3g within a node, %.3g between",
        nm.beta_node, nm.beta);
  /* At 256 KiB, where the node broadcast beats the pipelined chain by
   * more than the model's noise and the arrival-aware rule's share; at
   * 1 MiB on 4 hosts x 4 ranks the two are within a few percent, and the
   * measured alpha decides between node, the pipeline and arrival_nb. */
  CHECK(mmp_bcast_select(w, 256 << 10, &sel) == 0, "select");
  CHECK(!even || strcmp(sel.algorithm, "node") == 0,
        "AUTO runs %s at 256 KiB (model: alpha %.3g s, beta %.3g s/B, gap "
        "%.3g s, node alpha %.3g s, node beta %.3g s/B, shared %d)",
        sel.algorithm, nm.alpha, nm.beta, nm.gap, nm.alpha_node, nm.beta_node,
        nm.shared_cpus);
  mr_fill(want, n, 4242);
  o.algorithm = "node";
  o.outer = "pipeline";
  o.inner = "binomial";
  eth0 = counted_bcast(buf, want, n, root, &o);
  /* Frames, headers, barriers and ACKs: well under a fifth more. */
  CHECK(eth0 < n + n / 5 + 65536,
        "eth0 carried %llu bytes of a %zu-byte "
        "broadcast",
        eth0, n);
  /* The leaders in two groups (seed 001's grouping over the leaders):
   * the same data, and a host sends it out at most twice (to the other
   * group's head and to its own group's other leader). */
  o.groups = 2;
  o.outer = "flat";
  eth0 = counted_bcast(buf, want, n, root, &o);
  CHECK(eth0 < 2 * n + n / 5 + 65536,
        "eth0 carried %llu bytes of a %zu-byte grouped broadcast", eth0, n);
  /* And AUTO's choice delivers the same. */
  if (r != 0)
    memset(buf, 0, n);
  else
    memcpy(buf, want, n);
  CHECK(mmp_bcast(buf, n, 0, w) == 0, "AUTO broadcast");
  CHECK(memcmp(buf, want, n) == 0, "AUTO broadcast data");
  printf("rank %d: node broadcast ok, eth0 %llu bytes; model alpha %.1f us "
         "beta %.3f ns/B, within a node %.1f us %.3f ns/B\n",
         r, eth0, nm.alpha * 1e6, nm.beta * 1e9, nm.alpha_node * 1e6,
         nm.beta_node * 1e9);
  free(buf);
  free(want);
}

static void mode_nodes(size_t n) {
  mmp_comm_t *w = mmp_comm_world();
  int r = mr_rank(), p = mr_size(), per = on_host[host_of[r]], j, k;
  unsigned long long eth0, lo, remote = (unsigned long long)(p - per) * n;
  mmp__shm_stats_t st;

  check_addresses();
  /* The node numbers are the hosts, in rank order, on every rank. */
  CHECK(mmp__comm_node_count(w) == nhosts, "%d nodes", mmp__comm_node_count(w));
  for (j = 0; j < p; j++) {
    CHECK(mmp__comm_node_of(w, j) == host_of[j], "rank %d on node %d", j,
          mmp__comm_node_of(w, j));
    if (j != r)
      CHECK(mmp__debug_peer_shm(j) == (host_of[j] == host_of[r]),
            "rank %d's transport", j);
  }
  {
    /* A communicator numbers its own nodes: the i-th rank of each host
     * makes a node of one rank per host that has an i-th; the first two
     * hosts' ranks, two nodes. */
    mmp_comm_t *c;
    int i = index_on_host(r), want = 0;
    for (k = 0; k < nhosts; k++)
      want += on_host[k] > i;
    CHECK(mmp_comm_split(w, i, r, &c) == 0, "split");
    CHECK(mmp__comm_node_count(c) == want, "%d nodes across",
          mmp__comm_node_count(c));
    for (j = 0; j < mmp_comm_size(c); j++)
      CHECK(mmp__comm_node_of(c, j) == j, "across: rank %d on node %d", j,
            mmp__comm_node_of(c, j));
    CHECK(mmp_comm_free(&c) == 0, "free");
    CHECK(mmp_comm_split(w, host_of[r] / 2, r, &c) == 0, "split");
    CHECK(mmp__comm_node_count(c) == (host_of[r] / 2 * 2 + 1 < nhosts ? 2 : 1),
          "%d nodes in two hosts", mmp__comm_node_count(c));
    for (j = 0, k = 0; k < p; k++) {
      if (host_of[k] / 2 != host_of[r] / 2)
        continue;
      CHECK(mmp__comm_node_of(c, j) == host_of[k] % 2,
            "two hosts: rank %d on %d", j, mmp__comm_node_of(c, j));
      j++;
    }
    CHECK(mmp_comm_free(&c) == 0, "free");
  }
  /* Every rank of the host reads the counters before any sends. */
  eth0 = counter("eth0");
  lo = counter("lo");
  CHECK(mmp_barrier(w) == 0, "barrier");
  exchange(n, 1);
  CHECK(mmp_barrier(w) == 0, "barrier");
  eth0 = counter("eth0") - eth0;
  lo = counter("lo") - lo;
  CHECK(mmp__debug_shm_stats(&st) == 0, "shm stats");
  /* This host's ranks sent n bytes to each rank of the other hosts, all of
   * it through eth0; the bytes within the host went through shared memory
   * (read by single copy or from a ring), none over lo. */
  CHECK(eth0 >= per * remote, "eth0 carried %llu bytes", eth0);
  CHECK(lo < (unsigned long long)n / 4, "lo carried %llu bytes", lo);
  CHECK(st.pulled + st.bytes_in >= (uint64_t)n * (uint64_t)(per - 1),
        "shared memory carried %llu bytes",
        (unsigned long long)(st.pulled + st.bytes_in));
  printf("rank %d: nodes ok, eth0 %llu bytes, lo %llu bytes, shared memory "
         "%llu bytes\n",
         r, eth0, lo, (unsigned long long)(st.pulled + st.bytes_in));
  node_bcast(n);
}

static void mode_wait_on(int victim, int stop) {
  mmp_comm_t *w = mmp_comm_world();
  double t0;
  int rc, x;

  exchange(4096, 2);
  CHECK(mr_barrier() == 0, "barrier");
  if (mr_rank() == victim) {
    printf("rank %d: ready\n", mr_rank());
    fflush(stdout);
    if (stop)
      raise(SIGSTOP);
    for (;;)
      pause();
  }
  t0 = mmp_wtime();
  rc = mmp_recv(&x, sizeof(x), victim, 3, w, NULL);
  printf("rank %d: receive from %d ended after %.1f s: %s\n", mr_rank(), victim,
         mmp_wtime() - t0, mmp_err_name(rc));
  fflush(stdout);
  /* Wait to be stopped by minimprun, which now knows the victim is gone. */
  for (;;)
    pause();
}

/* Multicast s-to-p, `rounds` times: every rank a source of 64 KiB, then
 * two sources of unequal lengths, lengths exchanged first; checked byte
 * for byte. */
static void mcast_s2p(int rounds) {
  enum { L = 65536 };
  mmp_comm_t *w = mmp_comm_world();
  mmp_s2p_opts_t o = MMP_S2P_OPTS_INIT;
  int p = mr_size(), me = mr_rank(), i, j, rc;
  size_t np = (unsigned)p, at;
  uint8_t *out = malloc(np * L), *mine = malloc(L), *want = malloc(L);

  CHECK(out != NULL && mine != NULL && want != NULL, "memory");
  o.algorithm = "multicast";
  for (i = 0; i < rounds; i++) {
    o.mode = i % 2 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
    mr_fill(mine, L, 5000 + (uint64_t)(i * 64 + me));
    rc = mmp_bcast_s2p(mine, L, 1, out, np * L, NULL, NULL, w, &o);
    CHECK(rc == 0, "multicast s2p, %d sources: %s", p, mmp_err_name(rc));
    for (j = 0; j < p; j++) {
      mr_fill(want, L, 5000 + (uint64_t)(i * 64 + j));
      CHECK(memcmp(out + (size_t)j * L, want, L) == 0,
            "multicast s2p: source %d's data differ", j);
    }
    /* Ranks 0 and p - 1, L and L / 3 + 1 bytes. */
    mr_fill(mine, L, 6000 + (uint64_t)me);
    rc = mmp_bcast_s2p(mine, me == 0 ? L : (size_t)L / 3 + 1,
                       me == 0 || me == p - 1, out, np * L, NULL, NULL, w, &o);
    CHECK(rc == 0, "multicast s2p, 2 sources: %s", mmp_err_name(rc));
    for (j = 0, at = 0; j < (p > 1 ? 2 : 1); j++) {
      int src = j == 0 ? 0 : p - 1;
      size_t n = src == 0 ? L : (size_t)L / 3 + 1;
      mr_fill(want, L, 6000 + (uint64_t)src);
      CHECK(memcmp(out + at, want, n) == 0,
            "multicast s2p: source %d's data differ", src);
      at += n;
    }
  }
  free(out);
  free(mine);
  free(want);
}

/* Every rank passed the same name (compared by a hash of it). */
static int same_everywhere(const char *name) {
  uint64_t h = mr_hash(name), lo, hi;
  mmp_comm_t *w = mmp_comm_world();

  CHECK(mmp_allreduce(&h, &lo, 1, MMP_UINT64, MMP_MIN, w) == 0 &&
            mmp_allreduce(&h, &hi, 1, MMP_UINT64, MMP_MAX, w) == 0,
        "allreduce");
  return lo == hi;
}

/* s-to-p AUTO with one source of n bytes (rank 1): the data arrive,
 * every rank's choice is the same and is not algorithm `avoid` (NULL:
 * any); rank 0 prints it. */
static void mcast_auto_s2p(uint8_t *buf, uint8_t *want, size_t n,
                           const char *avoid) {
  mmp_comm_t *w = mmp_comm_world();
  size_t *lens = calloc((size_t)mr_size(), sizeof(*lens));
  mmp_s2p_opts_t sel;
  int i;

  CHECK(lens != NULL, "memory");
  for (i = 0; i < mr_size(); i++)
    lens[i] = i == 1 ? n : MMP_S2P_NONE;
  mr_fill(want, n, 99);
  memset(buf, 0, n);
  CHECK(mmp_s2p_select(w, lens, &sel) == 0, "s2p select");
  CHECK(same_everywhere(sel.algorithm), "s2p AUTO: ranks chose apart");
  CHECK(avoid == NULL || strcmp(sel.algorithm, avoid) != 0, "s2p AUTO chose %s",
        sel.algorithm);
  CHECK(mmp_bcast_s2p(want, mr_rank() == 1 ? n : 0, mr_rank() == 1, buf, n,
                      lens, NULL, w, NULL) == 0,
        "s2p AUTO");
  CHECK(memcmp(buf, want, n) == 0, "s2p AUTO: data differ");
  if (mr_rank() == 0)
    printf("s2p AUTO %zu bytes from one source: %s\n", n, sel.algorithm);
  free(lens);
}

/* A non-blocking start never makes the collective multicast check: on a
 * new duplicate, rank 0 starts its first broadcast after a barrier of the
 * world and the others before it, which a check inside the start would
 * turn into a hang. */
static void mcast_auto_nonblocking(uint8_t *buf, uint8_t *want, size_t n) {
  mmp_comm_t *w = mmp_comm_world(), *d;
  mmp_request_t *r = NULL;

  CHECK(mmp_comm_dup(w, &d) == 0, "dup");
  mr_fill(want, n, 55);
  if (mr_rank() == 0)
    memcpy(buf, want, n);
  else
    memset(buf, 0, n);
  if (mr_rank() == 0) {
    CHECK(mmp_barrier(w) == 0, "barrier");
    CHECK(mmp_ibcast(buf, n, 0, d, NULL, &r) == 0, "ibcast on the dup");
  } else {
    CHECK(mmp_ibcast(buf, n, 0, d, NULL, &r) == 0, "ibcast on the dup");
    CHECK(mmp_barrier(w) == 0, "barrier");
  }
  CHECK(mmp_wait(&r, NULL) == 0, "ibcast on the dup: wait");
  CHECK(memcmp(buf, want, n) == 0, "ibcast on the dup: data differ");
  CHECK(mmp_comm_free(&d) == 0, "free");
  if (mr_rank() == 0)
    printf("non-blocking AUTO on a new duplicate: done\n");
}

/* AUTO at 1 KiB and 1 MiB: the data arrive, and every rank ran the same
 * algorithm (multicast where its price, under the loss detection saw,
 * won; docs/design/auto.md), the one mmp_bcast_select names. */
static void mcast_auto(int on) {
  static const size_t sizes[] = {1024, 1u << 20};
  mmp_comm_t *w = mmp_comm_world();
  uint8_t *buf = malloc(sizes[1]), *want = malloc(sizes[1]);
  mmp_bcast_opts_t sel;
  const char *alg = NULL;
  size_t k;

  for (k = 0; k < 2; k++) {
    mr_fill(want, sizes[k], 77 + k);
    if (mr_rank() == 0)
      memcpy(buf, want, sizes[k]);
    else
      memset(buf, 0, sizes[k]);
    CHECK(mmp_bcast_select(w, sizes[k], &sel) == 0, "select");
    CHECK(mmp_bcast(buf, sizes[k], 0, w) == 0, "AUTO %zu bytes", sizes[k]);
    CHECK(memcmp(buf, want, sizes[k]) == 0, "AUTO %zu: data differ", sizes[k]);
    CHECK(mmp_bcast_last(w, &alg) == 0, "last");
    CHECK(same_everywhere(alg), "AUTO %zu bytes: ranks ran apart", sizes[k]);
    CHECK(strcmp(sel.algorithm, "multicast") != 0 ||
              strcmp(alg, "multicast") == 0,
          "AUTO %zu bytes: select said multicast, ran %s", sizes[k], alg);
    CHECK(on || strcmp(alg, "multicast") != 0,
          "AUTO %zu bytes ran multicast without MINIMP_MCAST=on", sizes[k]);
    if (mr_rank() == 0)
      printf("AUTO %zu bytes: %s\n", sizes[k], alg);
  }
  mcast_auto_s2p(buf, want, sizes[1], on ? NULL : "multicast");
  mcast_auto_nonblocking(buf, want, sizes[1]);
  free(buf);
  free(want);
}

/* Multicast broadcasts of 1 KiB, 64 KiB and 1 MiB + 3 from every root,
 * `rounds` times each, checked byte for byte; prints what the channel
 * counted. The receivers' hosts may drop some of the group's datagrams
 * (nft rules test_cluster_mcast set up): the data must arrive anyway. */
static void mode_mcast(int rounds) {
  static const size_t sizes[] = {1024, 65536, (1u << 20) + 3};
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  size_t k, big = sizes[2];
  uint8_t *buf = malloc(big), *want = malloc(big);
  mmp__mcast_stats_t st;
  int root, i, rc;
  double t0 = mmp_wtime();

  o.algorithm = "multicast";
  for (i = 0; i < rounds; i++)
    for (k = 0; k < 3; k++)
      for (root = 0; root < mr_size(); root += 3) {
        uint64_t seed = (uint64_t)(i * 1000 + (int)k * 100 + root);
        mr_fill(want, sizes[k], seed);
        if (mr_rank() == root)
          memcpy(buf, want, sizes[k]);
        else
          memset(buf, 0, sizes[k]);
        o.mode = (i + root) % 2 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
        rc = mmp_bcast_ex(buf, sizes[k], root, w, &o);
        CHECK(rc == 0, "multicast %zu bytes from %d: %s", sizes[k], root,
              mmp_err_name(rc));
        CHECK(memcmp(buf, want, sizes[k]) == 0,
              "multicast %zu bytes from %d: data differ", sizes[k], root);
      }
  mcast_s2p(rounds);
  mcast_auto(0);
  CHECK(mmp__mcast_stats(&st) == 0, "stats");
  printf("rank %d: mcast ok in %.1f s, group %s, %llu received, %llu sent, "
         "%llu foreign, %llu bad MAC, %llu stale\n",
         mr_rank(), mmp_wtime() - t0, st.group,
         (unsigned long long)st.udp.received, (unsigned long long)st.udp.sent,
         (unsigned long long)st.udp.foreign, (unsigned long long)st.udp.bad_mac,
         (unsigned long long)st.stale);
  free(buf);
  free(want);
}

/* `rounds` multicast broadcasts of 1 MiB from rank 0, both modes, checked
 * byte for byte; rank 0 prints the repairs sent (summed over the ranks),
 * which test_cluster_mcast reads to tell unicast from multicast repair. */
static void mode_mcast_repair(int rounds) {
  enum { N = 1 << 20 };
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  uint8_t *buf = malloc(N), *want = malloc(N);
  mmp__mcast_stats_t st;
  uint64_t mine[2], all[2];
  int i, rc;

  CHECK(buf != NULL && want != NULL, "memory");
  o.algorithm = "multicast";
  for (i = 0; i < rounds; i++) {
    mr_fill(want, N, 7000 + (uint64_t)i);
    if (mr_rank() == 0)
      memcpy(buf, want, N);
    else
      memset(buf, 0, N);
    o.mode = i % 2 ? MMP_SEND_RNDV : MMP_SEND_EAGER;
    rc = mmp_bcast_ex(buf, N, 0, w, &o);
    CHECK(rc == 0, "multicast 1 MiB, round %d: %s", i, mmp_err_name(rc));
    CHECK(memcmp(buf, want, N) == 0, "multicast 1 MiB, round %d: data differ",
          i);
  }
  CHECK(mmp__mcast_stats(&st) == 0, "stats");
  mine[0] = st.repair_unicast;
  mine[1] = st.repair_multicast;
  CHECK(mmp_allreduce(mine, all, 2, MMP_UINT64, MMP_SUM, w) == 0, "allreduce");
  if (mr_rank() == 0)
    printf("repairs: %llu unicast, %llu multicast\n",
           (unsigned long long)all[0], (unsigned long long)all[1]);
  printf("rank %d: mcast repair ok\n", mr_rank());
  free(buf);
  free(want);
}

/* Multicast blocked on some hosts before the job: detection finds it,
 * the algorithm is MMP_ENOTSUP on every rank, AUTO still works. */
static void mode_mcast_blocked(void) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  uint8_t b[4096], want[4096];
  const char *alg = NULL;
  int rc;

  o.algorithm = "multicast";
  mr_fill(want, sizeof(want), 5);
  memcpy(b, want, sizeof(b));
  rc = mmp_bcast_ex(b, sizeof(b), 0, w, &o);
  CHECK(rc == MMP_ENOTSUP, "multicast where it is blocked: %s",
        mmp_err_name(rc));
  if (mr_rank() != 0)
    memset(b, 0, sizeof(b));
  CHECK(mmp_bcast(b, sizeof(b), 0, w) == 0, "AUTO");
  CHECK(memcmp(b, want, sizeof(b)) == 0, "AUTO: data differ");
  CHECK(mmp_bcast_last(w, &alg) == 0 && strcmp(alg, "multicast") != 0,
        "AUTO ran %s where multicast is blocked", alg);
  {
    uint8_t *big = malloc(1u << 20), *bwant = malloc(1u << 20);
    CHECK(big != NULL && bwant != NULL, "memory");
    mcast_auto_s2p(big, bwant, 1u << 20, "multicast");
    free(big);
    free(bwant);
  }
  printf("rank %d: mcast blocked ok\n", mr_rank());
}

/* Once detection passed, rank `victim` drops every UDP datagram to its
 * host, multicast and unicast repairs alike (nft in its own namespace):
 * a multicast broadcast from rank 0
 * must end in bounded time, with MMP_ETIMEDOUT at the victim and at the
 * root (rendezvous: it waits for the victim's acknowledgement). */
static void mode_mcast_deaf(int victim) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  uint8_t b[8192];
  double t0;
  int rc;

  o.algorithm = "multicast";
  o.mode = MMP_SEND_RNDV;
  CHECK(mmp_bcast_ex(b, 16, 0, w, &o) == 0, "detection");
  if (mr_rank() == victim)
    CHECK(system("nft add table inet mmpdeaf && nft add chain inet mmpdeaf in "
                 "'{ type filter hook input priority 0; }' && nft add rule "
                 "inet mmpdeaf in meta l4proto udp drop") == 0,
          "nft");
  CHECK(mmp_barrier(w) == 0, "barrier");
  t0 = mmp_wtime();
  rc = mmp_bcast_ex(b, sizeof(b), 0, w, &o);
  printf("rank %d: deaf broadcast ended after %.1f s: %s\n", mr_rank(),
         mmp_wtime() - t0, mmp_err_name(rc));
  if (mr_rank() == victim || mr_rank() == 0)
    CHECK(rc == MMP_ETIMEDOUT, "expected MMP_ETIMEDOUT");
}

int main(int argc, char **argv) {
  /* AUTO considers multicast only where the user switched it on. */
  if (argc >= 3 &&
      (strcmp(argv[1], "mcast_auto") == 0 ||
       strcmp(argv[1], "mcast_blocked") == 0) &&
      strcmp(argv[2], "on") == 0)
    setenv("MINIMP_MCAST", "on", 1);
  if (argc < 3 || mmp_init(&argc, &argv) != 0)
    return 3;
  if (strcmp(argv[1], "hosts") == 0)
    layout_by_name();
  else
    layout_by_slot();
  if (strcmp(argv[1], "exchange") == 0)
    mode_exchange((size_t)atol(argv[2]));
  else if (strcmp(argv[1], "nodes") == 0 || strcmp(argv[1], "hosts") == 0)
    mode_nodes((size_t)atol(argv[2]));
  else if (strcmp(argv[1], "stop") == 0)
    mode_wait_on(atoi(argv[2]), 1);
  else if (strcmp(argv[1], "wait") == 0)
    mode_wait_on(atoi(argv[2]), 0);
  else if (strcmp(argv[1], "mcast") == 0)
    mode_mcast(atoi(argv[2]));
  else if (strcmp(argv[1], "mcast_auto") == 0)
    mcast_auto(strcmp(argv[2], "on") == 0);
  else if (strcmp(argv[1], "mcast_blocked") == 0)
    mode_mcast_blocked();
  else if (strcmp(argv[1], "mcast_deaf") == 0)
    mode_mcast_deaf(atoi(argv[2]));
  else if (strcmp(argv[1], "mcast_repair") == 0)
    mode_mcast_repair(atoi(argv[2]));
  else
    return 4;
  fflush(stdout);
  free(host_of);
  free(on_host);
  return mmp_finalize() == 0 ? 0 : 5;
}
