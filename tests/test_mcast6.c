/* SPDX-License-Identifier: MIT */
/*
 * The multicast channel over IPv6. The test moves into a network
 * namespace of its own and gives it one multicast-capable link with only
 * an IPv6 address (a veth pair, fd00:6::1/64 on one end: the loopback
 * device has no multicast flag, and with one the kernel still does not
 * hand IPv6 multicast back), then runs mr_mcast there through minimprun
 * with MINIMP_IFACE on that address: the TCP path listens on IPv6, so the
 * channel joins a group in ff15::/16 and sizes datagrams for IPv6 headers;
 * every broadcast and s-to-p of mr_mcast (0, 1, one datagram and its
 * neighbours, 1 MiB + 3, every root, both modes; forgeries rejected)
 * must arrive intact. A packet socket on the link's other end checks what
 * went on the wire: every datagram to the group with hop limit 1, UDP
 * right after the IPv6 header (no fragment header) and no larger than
 * the link's MTU. Then the same job with an IPv4 MINIMP_MCAST_GROUP:
 * MMP_EINVAL on every rank, with the reason logged (mr_mcast checks
 * both). The opposite mismatch, an IPv6 group for an IPv4 job, needs no
 * namespace: tests/meson.build registers mcast_n3_family for it.
 *
 * Needs root (a namespace) and IPv6; exits 77 (skipped) otherwise.
 *
 * Run as: test_mcast6 MINIMPRUN MR_MCAST
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "spawn_util.h"

#define IFACE "fd00:6::1/128"

static const char *minimprun, *prog;
static int cap = -1; /* packet socket on m6b, the link's far end */

/* IPv6 packets that reach m6b from now on (SOCK_DGRAM: from the IPv6
 * header on). */
static void capture_start(void) {
  struct sockaddr_ll sll;
  int big = 8 << 20;

  cap = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK, htons(ETH_P_IPV6));
  assert_true(cap >= 0);
  (void)setsockopt(cap, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  memset(&sll, 0, sizeof(sll));
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_IPV6);
  sll.sll_ifindex = (int)if_nametoindex("m6b");
  assert_int_equal(bind(cap, (struct sockaddr *)&sll, sizeof(sll)), 0);
}

/* Checks every captured packet to ff15::/16 and returns how many there
 * were. */
static int capture_check(void) {
  uint8_t p[65536];
  ssize_t n;
  int count = 0;

  while ((n = recv(cap, p, sizeof(p), 0)) > 0) {
    if (n < 40 || p[24] != 0xff || p[25] != 0x15)
      continue;
    count++;
    if (p[6] != IPPROTO_UDP || p[7] != 1 || n > 1500)
      fail_msg("a datagram to the group: next header %u, hop limit %u, "
               "%zd bytes",
               p[6], p[7], n);
  }
  close(cap);
  cap = -1;
  return count;
}

/* Runs mr_mcast on `n` ranks over IPv6; every rank must pass `npass`
 * tests and none fail. */
static void run_job(int n, int npass) {
  char ns[16], want[64];
  char *argv[] = {
      (char *)minimprun, "--timeout", "100", "--iface", IFACE, "-n", ns,
      (char *)prog,      NULL};
  /* Static, not allocated: a failed check leaves by longjmp. */
  static spawn_result_t result;
  spawn_result_t *r = &result;

  memset(r, 0, sizeof(*r));
  snprintf(ns, sizeof(ns), "%d", n);
  snprintf(want, sizeof(want), "[  PASSED  ] %d test(s).", npass);
  assert_int_equal(spawn_run(argv, 110, r), 0);
  /* cmocka writes its summary to stderr. */
  if (r->status != 0 || spawn_count(r->err, want) != n ||
      spawn_count(r->out, "FAILED") + spawn_count(r->err, "FAILED") != 0)
    fail_msg("mr_mcast over IPv6 on %d ranks: status %d\n%s\n%s", n, r->status,
             r->out, r->err);
}

/* Every size class, every root, both modes, and the s-to-p, over an
 * IPv6 group (all of mr_mcast but its MINIMP_MCAST=off test). */
static void test_mcast6_bcast_and_s2p(void **state) {
  (void)state;
  unsetenv("MINIMP_MCAST_GROUP");
  capture_start();
  run_job(3, 9);
  assert_true(capture_check() > 0);
}

/* A group inside a range the user chose works as the default does (two
 * ranks: the tests that need three are skipped). */
static void test_mcast6_user_range(void **state) {
  (void)state;
  setenv("MINIMP_MCAST_GROUP", "ff15::6:0/112", 1);
  run_job(2, 8);
  unsetenv("MINIMP_MCAST_GROUP");
}

/* An IPv4 group for an IPv6 job: refused on every rank, with the reason
 * (mr_mcast's family_mismatch), and AUTO still works. */
static void test_mcast6_family_mismatch(void **state) {
  (void)state;
  setenv("MINIMP_MCAST_GROUP", "239.1.2.3", 1);
  run_job(2, 1);
  unsetenv("MINIMP_MCAST_GROUP");
}

/* A namespace with loopback up (minimprun's rendezvous) and one veth
 * link holding only fd00:6::1. 0, or a reason to skip. */
static const char *enter_namespace(void) {
  struct ifreq ifr;
  int fd;

  if (geteuid() != 0)
    return "needs root for a network namespace";
  if (access("/proc/net/if_inet6", R_OK) != 0)
    return "IPv6 is disabled in this kernel";
  if (unshare(CLONE_NEWNET) != 0)
    return "cannot create a network namespace";
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  memset(&ifr, 0, sizeof(ifr));
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
  if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
    return "cannot read loopback's flags";
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
    return "cannot bring loopback up";
  close(fd);
  if (spawn_sh("ip link add m6a type veth peer name m6b && "
               "ip link set m6b up && ip link set m6a up") != 0)
    return "cannot create a veth pair (ip link add ... type veth)";
  /* nodad: usable at once, not after duplicate address detection. */
  if (spawn_sh("ip addr add fd00:6::1/64 dev m6a nodad") != 0)
    return "cannot add an IPv6 address (IPv6 disabled?)";
  return NULL;
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mcast6_bcast_and_s2p),
      cmocka_unit_test(test_mcast6_user_range),
      cmocka_unit_test(test_mcast6_family_mismatch),
  };
  const char *why;

  if (argc != 3) {
    fprintf(stderr, "usage: test_mcast6 MINIMPRUN MR_MCAST\n");
    return 2;
  }
  minimprun = argv[1];
  prog = argv[2];
  if ((why = enter_namespace()) != NULL) {
    fprintf(stderr, "test_mcast6: skipped: %s\n", why);
    return 77;
  }
  setenv("CMOCKA_TEST_ABORT", "1", 1);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
