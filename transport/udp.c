/* SPDX-License-Identifier: MIT */
/*
 * The UDP multicast channel of udp.h on libuv's uv_udp_t, over IPv4 or
 * IPv6: the family of the address the TCP path listens on. The socket is
 * bound to that family's wildcard address at the group's port, so that it
 * receives both the group's datagrams and those sent to this host alone
 * (unicast repairs, send_to), and joins the group on the interface of the
 * address the TCP path listens on. IP_MULTICAST_ALL (IPV6_MULTICAST_ALL)
 * is off, so other groups on the same port (joined by other sockets of
 * the host) stay out; whatever else reaches the port is dropped by the
 * header and MAC checks and counted, never delivered. Datagrams are sized
 * from the interface's MTU less that family's IP and UDP headers and are
 * never fragmented: DF on IPv4 (IP_PMTUDISC_DO), IPV6_DONTFRAG on IPv6.
 */
#include "udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "minimp.h"
#include "transport.h"
#include "util.h"

#define DGRAM_MAGIC 0x55504d4du /* "MMPU" read little-endian */
#define RX_BUF 65536
#define MTU_MAX 9000u

struct mmp__udp_s {
  uv_udp_t h;
  mmp__udp_config_t cfg;
  mmp__udp_callbacks_t cb;
  mmp__dgram_keys_t keys;
  mmp__udp_addr_t group;
  size_t payload;
  mmp__udp_stats_t st; /* set at create; the counters below move */
  /* Bumped in loop context, read by mmp__mcast_stats from any thread. */
  _Atomic uint64_t n_sent, n_full, n_received, n_malformed, n_foreign,
      n_bad_mac;
  uint8_t *tx; /* one encoded datagram */
  uint8_t *rx;
  int rx_busy;
  void (*done)(void *arg);
  void *done_arg;
};

void mmp__dgram_encode(const mmp__dgram_keys_t *k, uint64_t job_id,
                       const mmp__dgram_hdr_t *h, const void *payload, size_t n,
                       uint8_t *out) {
  mmp__put_u32(out, DGRAM_MAGIC);
  out[4] = MMP__DGRAM_VERSION;
  out[5] = h->kind;
  out[6] = h->flags;
  out[7] = 0;
  mmp__put_u64(out + 8, job_id);
  mmp__put_u32(out + 16, h->ctx);
  mmp__put_u32(out + 20, h->seq);
  mmp__put_u32(out + 24, h->src);
  mmp__put_u32(out + 28, h->aux);
  mmp__put_u64(out + 32, h->offset);
  mmp__put_u64(out + 40, h->total);
  if (n > 0)
    memcpy(out + MMP__DGRAM_HDR, payload, n);
  mmp__auth_dgram_mac(k, out, 48, out + MMP__DGRAM_HDR, n, out + 48);
}

int mmp__dgram_decode(const mmp__dgram_keys_t *k, const uint8_t *in, size_t n,
                      mmp__dgram_hdr_t *h, const uint8_t **payload) {
  if (n < MMP__DGRAM_HDR || mmp__get_u32(in) != DGRAM_MAGIC ||
      in[4] != MMP__DGRAM_VERSION || in[5] == 0 || in[5] > MMP__DG_KIND_MAX)
    return 1;
  if (mmp__get_u64(in + 8) != k->job_id)
    return 2;
  if (!mmp__auth_dgram_check(k, in, 48, in + MMP__DGRAM_HDR, n - MMP__DGRAM_HDR,
                             in + 48))
    return 3;
  h->kind = in[5];
  h->flags = in[6];
  h->ctx = mmp__get_u32(in + 16);
  h->seq = mmp__get_u32(in + 20);
  h->src = mmp__get_u32(in + 24);
  h->aux = mmp__get_u32(in + 28);
  h->offset = mmp__get_u64(in + 32);
  h->total = mmp__get_u64(in + 40);
  *payload = in + MMP__DGRAM_HDR;
  return 0;
}

/* The address's bytes (4 or 16) and their number. */
static uint8_t *addr_bytes(mmp__udp_addr_t *a, size_t *n) {
  if (a->sa.sa_family == AF_INET6) {
    *n = sizeof(a->v6.sin6_addr);
    return (uint8_t *)&a->v6.sin6_addr;
  }
  *n = sizeof(a->v4.sin_addr);
  return (uint8_t *)&a->v4.sin_addr;
}

static uint16_t *addr_port(mmp__udp_addr_t *a) {
  return a->sa.sa_family == AF_INET6 ? &a->v6.sin6_port : &a->v4.sin_port;
}

static socklen_t addr_len(const mmp__udp_addr_t *a) {
  return a->sa.sa_family == AF_INET6 ? sizeof(a->v6) : sizeof(a->v4);
}

/* The MTU of the interface that holds `addr`, or 1500 if it cannot be
 * read; its name goes to `name` ("" if not found). */
static unsigned iface_find(const mmp__udp_addr_t *addr,
                           char name[IF_NAMESIZE]) {
  mmp__udp_addr_t want = *addr, have;
  struct ifaddrs *ifs, *i;
  unsigned mtu = 1500;
  const uint8_t *wb;
  size_t n, m;
  int fd;

  name[0] = '\0';
  if (getifaddrs(&ifs) != 0)
    return mtu;
  wb = addr_bytes(&want, &n);
  fd = socket(addr->sa.sa_family, SOCK_DGRAM, 0);
  for (i = ifs; i != NULL && fd >= 0; i = i->ifa_next) {
    struct ifreq ifr;
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != addr->sa.sa_family)
      continue;
    memcpy(&have, i->ifa_addr, addr_len(addr));
    if (memcmp(addr_bytes(&have, &m), wb, n) != 0)
      continue;
    snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
      mtu = (unsigned)ifr.ifr_mtu;
    break;
  }
  if (fd >= 0)
    close(fd);
  freeifaddrs(ifs);
  return mtu;
}

/* The group: the configured one, or one derived from the job key inside
 * the configured range. Only the range's low 32 bits (at most) are
 * derived: on IPv6 those are what Ethernet maps to the frame's
 * destination (33:33 and the low 32 bits), so two jobs' groups also
 * differ in what the NICs filter on. The derived part stays away from its
 * first and last 256 values, which hold well-known groups
 * (239.255.255.250, ff0x::fb and the like). */
static void udp_group(mmp__udp_t *u) {
  const mmp__udp_config_t *c = &u->cfg;
  uint32_t low, host, span, bits = mmp__get_u32(u->keys.group_bits);
  uint16_t *port;
  uint8_t *a;
  size_t n;
  unsigned hb;

  u->group = c->group;
  a = addr_bytes(&u->group, &n);
  hb = c->group_bits >= 8 * n ? 0 : 8 * (unsigned)n - c->group_bits;
  if (hb > 32)
    hb = 32;
  if (hb > 0) {
    span = hb == 32 ? 0xffffffffu : (1u << hb) - 1u;
    if (span > 1024) {
      host = 256 + bits % (span - 512);
    } else {
      host = span > 2 ? 1 + bits % (span - 1) : 0;
    }
    low = (uint32_t)a[n - 4] << 24 | (uint32_t)a[n - 3] << 16 |
          (uint32_t)a[n - 2] << 8 | a[n - 1];
    low = (low & ~span) + host;
    a[n - 4] = (uint8_t)(low >> 24);
    a[n - 3] = (uint8_t)(low >> 16);
    a[n - 2] = (uint8_t)(low >> 8);
    a[n - 1] = (uint8_t)low;
  }
  port = addr_port(&u->group);
  if (*port == 0)
    *port = htons((uint16_t)(20000 + (bits >> 16) % 20000));
}

static void bump(_Atomic uint64_t *c) {
  atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void udp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  mmp__udp_t *u = h->data;
  (void)hint;

  /* One receive at a time: the callback consumes it before the next. */
  if (u->rx_busy) {
    *buf = uv_buf_init(NULL, 0);
    return;
  }
  u->rx_busy = 1;
  *buf = uv_buf_init((char *)u->rx, RX_BUF);
}

static void udp_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf,
                     const struct sockaddr *from, unsigned flags) {
  mmp__udp_t *u = h->data;
  mmp__dgram_hdr_t hd;
  const uint8_t *payload;
  int rc;
  (void)from;

  if (buf->base != NULL)
    u->rx_busy = 0;
  if (nread <= 0 || buf->base == NULL)
    return; /* nothing, or an error the next read reports again */
  if (flags & UV_UDP_PARTIAL) {
    bump(&u->n_malformed);
    return;
  }
  rc = mmp__dgram_decode(&u->keys, (const uint8_t *)buf->base, (size_t)nread,
                         &hd, &payload);
  if (rc == 1) {
    bump(&u->n_malformed);
  } else if (rc == 2) {
    bump(&u->n_foreign);
  } else if (rc == 3) {
    bump(&u->n_bad_mac);
  } else {
    bump(&u->n_received);
    u->cb.recv(u->cb.ctx, &hd, payload, (size_t)nread - MMP__DGRAM_HDR);
  }
}

/* Asks for large socket buffers and reports what the kernel granted. */
static void udp_buffers(mmp__udp_t *u, int fd) {
  int want =
      u->cfg.sockbuf > INT32_MAX / 2 ? INT32_MAX / 2 : (int)u->cfg.sockbuf;
  int got = 0;
  socklen_t len = sizeof(got);

  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) == 0)
    u->st.rcvbuf = (uint64_t)got;
  len = sizeof(got);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len) == 0)
    u->st.sndbuf = (uint64_t)got;
  /* Linux reports twice what it grants (bookkeeping included). */
  if (u->st.rcvbuf < (uint64_t)want || u->st.sndbuf < (uint64_t)want)
    MMP__LOG(MMP__LOG_DEBUG,
             "multicast socket buffers: asked %d bytes, the kernel granted "
             "%llu to receive and %llu to send (net.core.rmem_max, "
             "wmem_max limit them)",
             want, (unsigned long long)u->st.rcvbuf,
             (unsigned long long)u->st.sndbuf);
}

static void udp_closed(uv_handle_t *h);

/* Never fragmented: DF on IPv4; on IPv6, where only the sender may
 * fragment, IPV6_DONTFRAG, so a datagram over the MTU fails (EMSGSIZE)
 * instead of leaving in pieces. */
static int udp_dontfrag(uv_udp_t *h, int family) {
  uv_os_fd_t fd;
  int on = 1, pmtu = IP_PMTUDISC_DO, rc = uv_fileno((uv_handle_t *)h, &fd);

  if (rc != 0)
    return rc;
  if (family == AF_INET6)
    rc = setsockopt(fd, IPPROTO_IPV6, IPV6_DONTFRAG, &on, sizeof(on));
  else
    rc = setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
  return rc == 0 ? 0 : UV_EINVAL;
}

/* Binds the family's wildcard address at the group's port (every rank of
 * the host binds the same), with IP_MULTICAST_ALL / IPV6_MULTICAST_ALL off
 * first: only the groups this socket joins reach it. */
static int udp_bind_port(mmp__udp_t *u) {
  mmp__udp_addr_t any;
  uv_os_fd_t fd;
  int off = 0, rc = uv_fileno((uv_handle_t *)&u->h, &fd);

  memset(&any, 0, sizeof(any));
  if (u->group.sa.sa_family == AF_INET6) {
    any.v6.sin6_family = AF_INET6;
    any.v6.sin6_port = u->group.v6.sin6_port;
#ifdef IPV6_MULTICAST_ALL
    if (rc == 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &off,
                              sizeof(off)) != 0)
      rc = UV_EINVAL;
#endif
  } else {
    any.v4.sin_family = AF_INET;
    any.v4.sin_port = u->group.v4.sin_port;
    any.v4.sin_addr.s_addr = htonl(INADDR_ANY);
    if (rc == 0 &&
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof(off)) != 0)
      rc = UV_EINVAL;
  }
  if (rc == 0)
    rc = uv_udp_bind(&u->h, &any.sa, UV_UDP_REUSEADDR);
  return rc;
}

/* Binds, joins the group and sends through the interface `iface` names
 * (for IPv6 "address%name": libuv takes the interface from that scope),
 * with the configured TTL or hop limit. */
static int udp_join(mmp__udp_t *u, const char *group, const char *iface) {
  int rc = udp_bind_port(u);

  if (rc == 0)
    rc = uv_udp_set_membership(&u->h, group, iface, UV_JOIN_GROUP);
  if (rc == 0)
    rc = uv_udp_set_multicast_interface(&u->h, iface);
  if (rc == 0)
    rc = uv_udp_set_multicast_ttl(&u->h, (int)u->cfg.ttl);
  /* Ranks on one host each receive what the others send. */
  if (rc == 0)
    rc = uv_udp_set_multicast_loop(&u->h, 1);
  if (rc == 0)
    rc = udp_dontfrag(&u->h, u->group.sa.sa_family);
  return rc;
}

static int udp_create(uv_loop_t *loop, const mmp__udp_config_t *cfg,
                      const mmp__udp_callbacks_t *cb, mmp__udp_t **out) {
  mmp__udp_t *u;
  char group[INET6_ADDRSTRLEN], iface[INET6_ADDRSTRLEN + IF_NAMESIZE + 1];
  char ifname[IF_NAMESIZE], name[INET6_ADDRSTRLEN + 8];
  int family = cfg->iface.sa.sa_family, rc;
  uv_os_fd_t fd;
  size_t n;

  *out = NULL;
  if ((family != AF_INET && family != AF_INET6) ||
      cfg->group.sa.sa_family != family)
    return MMP_EINVAL;
  u = calloc(1, sizeof(*u));
  if (u == NULL || mmp__auth_init() != 0) {
    free(u);
    return u == NULL ? MMP_ENOMEM : MMP_EIO;
  }
  u->cfg = *cfg;
  u->cb = *cb;
  mmp__auth_dgram_keys(cfg->key, &u->keys);
  udp_group(u);
  u->tx = malloc(RX_BUF);
  u->rx = malloc(RX_BUF);
  if (u->tx == NULL || u->rx == NULL) {
    free(u->tx);
    free(u->rx);
    free(u);
    return MMP_ENOMEM;
  }
  u->st.mtu = iface_find(&cfg->iface, ifname);
  /* Loopback's 64 KiB MTU would make each datagram fill a good part of
   * a receiver's socket buffer: a jumbo frame is the most we use. */
  if (u->st.mtu > MTU_MAX)
    u->st.mtu = MTU_MAX;
  u->st.ip_udp = (unsigned)mmp__dgram_ip_udp(family);
  u->payload = u->st.mtu > u->st.ip_udp + MMP__DGRAM_HDR + 64
                   ? u->st.mtu - u->st.ip_udp - MMP__DGRAM_HDR
                   : 64;
  u->st.payload = u->payload;
  inet_ntop(family, addr_bytes(&u->group, &n), group, sizeof(group));
  inet_ntop(family, addr_bytes(&u->cfg.iface, &n), iface, INET6_ADDRSTRLEN);
  if (family == AF_INET6 && ifname[0] != '\0')
    snprintf(iface + strlen(iface), IF_NAMESIZE + 1, "%%%s", ifname);
  if (mmp__addr_format(&u->group.sa, name, sizeof(name)) != 0)
    snprintf(name, sizeof(name), "%s", group);
  /* The socket exists before the bind: its options go first. */
  rc = uv_udp_init_ex(loop, &u->h, (unsigned)family);
  if (rc != 0) {
    free(u->tx);
    free(u->rx);
    free(u);
    return MMP_EIO;
  }
  u->h.data = u;
  rc = udp_join(u, group, iface);
  if (rc == 0)
    rc = uv_fileno((uv_handle_t *)&u->h, &fd);
  if (rc == 0) {
    udp_buffers(u, fd);
    rc = uv_udp_recv_start(&u->h, udp_alloc, udp_recv);
  }
  if (rc != 0) {
    MMP__LOG(MMP__LOG_WARN, "multicast group %s on %s: %s", name, iface,
             uv_strerror(rc));
    /* Freed when the loop has closed the handle. */
    u->done = NULL;
    uv_close((uv_handle_t *)&u->h, udp_closed);
    return rc == UV_EADDRNOTAVAIL ? MMP_EADDR : MMP_EIO;
  }
  MMP__LOG(MMP__LOG_DEBUG,
           "multicast group %s on %s, mtu %u, %zu payload bytes a datagram",
           name, iface, u->st.mtu, u->payload);
  *out = u;
  return 0;
}

/* Encodes and sends one datagram to `dst`. */
static int udp_send_dst(mmp__udp_t *u, const struct sockaddr *dst,
                        const mmp__dgram_hdr_t *h, const void *payload,
                        size_t n) {
  mmp__dgram_hdr_t hd = *h;
  uv_buf_t b;
  int rc;

  if (n > u->payload)
    return MMP_EINVAL;
  hd.src = (uint32_t)u->cfg.rank;
  mmp__dgram_encode(&u->keys, u->keys.job_id, &hd, payload, n, u->tx);
  b = uv_buf_init((char *)u->tx, (unsigned)(MMP__DGRAM_HDR + n));
  rc = uv_udp_try_send(&u->h, &b, 1, dst);
  if (rc == UV_EAGAIN || rc == UV_ENOBUFS) {
    bump(&u->n_full);
    return MMP_EAGAIN;
  }
  if (rc < 0)
    return MMP_EIO;
  bump(&u->n_sent);
  return 0;
}

static int udp_send(mmp__udp_t *u, const mmp__dgram_hdr_t *h,
                    const void *payload, size_t n) {
  return udp_send_dst(u, &u->group.sa, h, payload, n);
}

static int udp_send_to(mmp__udp_t *u, const struct sockaddr *to,
                       const mmp__dgram_hdr_t *h, const void *payload,
                       size_t n) {
  mmp__udp_addr_t dst;

  if (to->sa_family != u->group.sa.sa_family)
    return MMP_EINVAL;
  memset(&dst, 0, sizeof(dst));
  if (to->sa_family == AF_INET6) {
    memcpy(&dst.v6, to, sizeof(dst.v6));
    dst.v6.sin6_port = u->group.v6.sin6_port;
  } else {
    memcpy(&dst.v4, to, sizeof(dst.v4));
    dst.v4.sin_port = u->group.v4.sin_port;
  }
  return udp_send_dst(u, &dst.sa, h, payload, n);
}

/* What the socket's datagrams still occupy in the kernel's queues,
 * bytes (their buffers' sizes: a little over the bytes on the wire). */
static uint64_t udp_unsent(const mmp__udp_t *u) {
  uv_os_fd_t fd;
  int v = 0;

  if (uv_fileno((const uv_handle_t *)&u->h, &fd) != 0 ||
      ioctl(fd, SIOCOUTQ, &v) != 0 || v < 0)
    return 0;
  return (uint64_t)v;
}

static size_t udp_payload_max(const mmp__udp_t *u) {
  return u->payload;
}

static void udp_stats(const mmp__udp_t *u, mmp__udp_stats_t *out) {
  *out = u->st;
  out->sent = atomic_load_explicit(&u->n_sent, memory_order_relaxed);
  out->send_full = atomic_load_explicit(&u->n_full, memory_order_relaxed);
  out->received = atomic_load_explicit(&u->n_received, memory_order_relaxed);
  out->malformed = atomic_load_explicit(&u->n_malformed, memory_order_relaxed);
  out->foreign = atomic_load_explicit(&u->n_foreign, memory_order_relaxed);
  out->bad_mac = atomic_load_explicit(&u->n_bad_mac, memory_order_relaxed);
  out->unsent = udp_unsent(u);
}

static void udp_group_name(const mmp__udp_t *u, char *out, size_t cap) {
  if (mmp__addr_format(&u->group.sa, out, cap) != 0 && cap > 0)
    out[0] = '\0';
}

static void udp_closed(uv_handle_t *h) {
  mmp__udp_t *u = (mmp__udp_t *)h;
  void (*done)(void *) = u->done;
  void *arg = u->done_arg;

  mmp__auth_wipe(&u->keys, sizeof(u->keys));
  mmp__auth_wipe(u->cfg.key, sizeof(u->cfg.key));
  free(u->tx);
  free(u->rx);
  free(u);
  if (done != NULL)
    done(arg);
}

static void udp_destroy(mmp__udp_t *u, void (*done)(void *arg), void *arg) {
  u->done = done;
  u->done_arg = arg;
  uv_udp_recv_stop(&u->h);
  uv_close((uv_handle_t *)&u->h, udp_closed);
}

const mmp__udp_ops_t mmp__udp_ops = {
    .name = "udp",
    .create = udp_create,
    .send = udp_send,
    .send_to = udp_send_to,
    .payload_max = udp_payload_max,
    .stats = udp_stats,
    .group_name = udp_group_name,
    .destroy = udp_destroy,
};
