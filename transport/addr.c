/* SPDX-License-Identifier: MIT */
/*
 * Address parsing, formatting and the choice of the local listening address
 * (MINIMP_IFACE). libminimp only listens where the user pointed it: an
 * interface, a CIDR prefix, a literal address, or by default the address
 * that routes to the job's rendezvous service.
 */
#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minimp.h"
#include "util.h"

int mmp__addr_parse(const char *s, struct sockaddr_storage *out) {
  char host[256];
  const char *port_s;
  size_t hlen;
  long port;
  struct addrinfo hints, *res = NULL;
  int rc;

  if (s == NULL || *s == '\0')
    return MMP_EINVAL;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (close == NULL || close[1] != ':')
      return MMP_EINVAL;
    hlen = (size_t)(close - s - 1);
    if (hlen == 0 || hlen >= sizeof(host))
      return MMP_EINVAL;
    memcpy(host, s + 1, hlen);
    port_s = close + 2;
  } else {
    const char *colon = strrchr(s, ':');
    if (colon == NULL || strchr(s, ':') != colon)
      return MMP_EINVAL; /* bare IPv6 needs brackets */
    hlen = (size_t)(colon - s);
    if (hlen == 0 || hlen >= sizeof(host))
      return MMP_EINVAL;
    memcpy(host, s, hlen);
    port_s = colon + 1;
  }
  host[hlen] = '\0';
  if (mmp__parse_long(port_s, 0, 65535, &port) != 0)
    return MMP_EINVAL;

  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  rc = getaddrinfo(host, port_s, &hints, &res);
  if (rc != 0 || res == NULL)
    return MMP_EADDR;
  memset(out, 0, sizeof(*out));
  memcpy(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

int mmp__addr_format(const struct sockaddr *sa, char *out, size_t len) {
  char ip[INET6_ADDRSTRLEN];
  int n;

  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
    if (inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)) == NULL)
      return MMP_EINVAL;
    n = snprintf(out, len, "%s:%u", ip, ntohs(a->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
    if (inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip)) == NULL)
      return MMP_EINVAL;
    n = snprintf(out, len, "[%s]:%u", ip, ntohs(a->sin6_port));
  } else {
    return MMP_EINVAL;
  }
  return n > 0 && (size_t)n < len ? 0 : MMP_EINVAL;
}

/* Compares the first `bits` bits of two byte strings. */
static int prefix_match(const uint8_t *a, const uint8_t *b, unsigned bits) {
  unsigned full = bits / 8, rest = bits % 8;

  if (memcmp(a, b, full) != 0)
    return 0;
  if (rest == 0)
    return 1;
  return ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static const uint8_t *addr_bytes(const struct sockaddr *sa, unsigned *nbits) {
  if (sa->sa_family == AF_INET) {
    *nbits = 32;
    return (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
  }
  *nbits = 128;
  return (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

static int is_link_local6(const struct sockaddr *sa) {
  const uint8_t *b =
      (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
  return sa->sa_family == AF_INET6 && b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
}

/* Copies an address with its port cleared; `sa` may point into `out`. */
static void copy_addr(const struct sockaddr *sa, struct sockaddr_storage *out) {
  struct sockaddr_storage tmp;

  memset(&tmp, 0, sizeof(tmp));
  if (sa->sa_family == AF_INET) {
    memcpy(&tmp, sa, sizeof(struct sockaddr_in));
    ((struct sockaddr_in *)&tmp)->sin_port = 0;
  } else {
    memcpy(&tmp, sa, sizeof(struct sockaddr_in6));
    ((struct sockaddr_in6 *)&tmp)->sin6_port = 0;
  }
  *out = tmp;
}

/* The local address the kernel picks to reach `toward` (a UDP "connect"
 * sends nothing). */
static int route_to(const struct sockaddr *toward,
                    struct sockaddr_storage *out) {
  socklen_t len = sizeof(*out);
  int fd, rc = MMP_EADDR;

  fd = socket(toward->sa_family, SOCK_DGRAM, 0);
  if (fd < 0)
    return MMP_EADDR;
  if (connect(fd, toward,
              toward->sa_family == AF_INET
                  ? sizeof(struct sockaddr_in)
                  : sizeof(struct sockaddr_in6)) == 0 &&
      getsockname(fd, (struct sockaddr *)out, &len) == 0) {
    copy_addr((struct sockaddr *)out, out);
    rc = 0;
  }
  close(fd);
  return rc;
}

/* Parses "addr/bits" into a sockaddr and a prefix length. */
static int parse_cidr(const char *spec, struct sockaddr_storage *net,
                      unsigned *bits) {
  char ip[INET6_ADDRSTRLEN];
  const char *slash = strchr(spec, '/');
  size_t n = slash ? (size_t)(slash - spec) : strlen(spec);
  long b;

  if (n == 0 || n >= sizeof(ip))
    return MMP_EINVAL;
  memcpy(ip, spec, n);
  ip[n] = '\0';
  memset(net, 0, sizeof(*net));
  if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)net)->sin_addr) == 1) {
    net->ss_family = AF_INET;
    b = 32;
  } else if (inet_pton(AF_INET6, ip,
                       &((struct sockaddr_in6 *)net)->sin6_addr) == 1) {
    net->ss_family = AF_INET6;
    b = 128;
  } else {
    return MMP_EINVAL;
  }
  if (slash != NULL && mmp__parse_long(slash + 1, 0, b, &b) != 0)
    return MMP_EINVAL;
  *bits = (unsigned)b;
  return 0;
}

int mmp__addr_select(const char *spec, const struct sockaddr *toward,
                     struct sockaddr_storage *out) {
  uv_interface_address_t *ifs = NULL;
  struct sockaddr_storage net;
  unsigned bits = 0;
  int count = 0, i, by_name, rc = MMP_EADDR, best = -1;

  if (spec == NULL || *spec == '\0') {
    struct sockaddr_in lo;
    if (toward != NULL)
      return route_to(toward, out);
    memset(&lo, 0, sizeof(lo));
    lo.sin_family = AF_INET;
    lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    copy_addr((struct sockaddr *)&lo, out);
    return 0;
  }

  by_name = parse_cidr(spec, &net, &bits) != 0;
  if (by_name && (strchr(spec, '/') != NULL || strchr(spec, ':') != NULL))
    return MMP_EINVAL; /* looked like an address but did not parse */
  if (uv_interface_addresses(&ifs, &count) != 0)
    return MMP_EADDR;

  for (i = 0; i < count; i++) {
    const struct sockaddr *sa = (const struct sockaddr *)&ifs[i].address;
    if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
      continue;
    if (by_name) {
      if (strcmp(ifs[i].name, spec) != 0 || is_link_local6(sa))
        continue;
      /* Prefer IPv4; take IPv6 only when the interface has no IPv4. */
      if (best < 0 || (sa->sa_family == AF_INET &&
                       ifs[best].address.address4.sin_family != AF_INET))
        best = i;
    } else {
      unsigned n;
      const uint8_t *a = addr_bytes(sa, &n);
      const uint8_t *b = addr_bytes((const struct sockaddr *)&net, &n);
      if (sa->sa_family != net.ss_family || !prefix_match(a, b, bits))
        continue;
      best = i;
      break;
    }
  }
  if (best >= 0) {
    copy_addr((const struct sockaddr *)&ifs[best].address, out);
    rc = 0;
  }
  uv_free_interface_addresses(ifs, count);
  return rc;
}
