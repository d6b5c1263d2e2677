/* SPDX-License-Identifier: MIT */
/*
 * The job's UDP multicast channel (docs/design/transport.md, "The UDP multicast
 * channel"): one group per job, joined on the interface the TCP path
 * listens on, authenticated datagrams that never exceed the interface's
 * MTU. It knows nothing of collectives: it sends what it is given to the
 * group and hands every authentic datagram of this job to a callback.
 * Reliability (NACKs, repairs, acknowledgements) belongs to the layers
 * above.
 *
 * Threading: as transport.h, every call and callback in loop context.
 */
#ifndef MMP_TRANSPORT_UDP_H
#define MMP_TRANSPORT_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include "auth.h"

/* A datagram's header, as the runtime sees it (decoded). */
typedef struct mmp__dgram_hdr_s {
  uint8_t kind;    /* MMP__DG_* */
  uint8_t flags;   /* the layer above's */
  uint32_t ctx;    /* communicator context */
  uint32_t seq;    /* collective sequence number */
  uint32_t src;    /* sender's world rank */
  uint32_t aux;    /* the layer above's (e.g. bits in a NACK) */
  uint64_t offset; /* payload's place in the message */
  uint64_t total;  /* the message's length */
} mmp__dgram_hdr_t;

/* Kinds. Unknown kinds are dropped and counted as malformed. */
enum {
  MMP__DG_DATA = 1,  /* a piece of a message */
  MMP__DG_NACK = 2,  /* a bitmap of missing pieces */
  MMP__DG_PROBE = 3, /* availability detection */
  MMP__DG_KIND_MAX = 3
};

/* On the wire: "MMPU" | version u8 | kind u8 | flags u8 | 0 u8 |
 * job id u64 | ctx u32 | seq u32 | src u32 | aux u32 | offset u64 |
 * total u64 | MAC (16 bytes, over everything before it and the payload),
 * little-endian, then the payload. */
#define MMP__DGRAM_VERSION 1
#define MMP__DGRAM_HDR (48 + MMP__DGRAM_MAC_LEN)
/* IPv4 (no options) and UDP headers. */
#define MMP__DGRAM_IP_UDP (20 + 8)
/* IPv6 (no extension headers) and UDP headers. */
#define MMP__DGRAM_IP6_UDP (40 + 8)

/* The IP and UDP header bytes in front of every datagram of `family`
 * (AF_INET or AF_INET6): what the payload gives up to the MTU, and what
 * pacing counts on the wire. */
static inline size_t mmp__dgram_ip_udp(int family) {
  return family == AF_INET6 ? MMP__DGRAM_IP6_UDP : MMP__DGRAM_IP_UDP;
}

/* An IPv4 or IPv6 socket address; sa.sa_family says which. */
typedef union mmp__udp_addr_u {
  struct sockaddr sa;
  struct sockaddr_in v4;
  struct sockaddr_in6 v6;
} mmp__udp_addr_t;

typedef struct mmp__udp_s mmp__udp_t;

typedef struct mmp__udp_config_s {
  uint8_t key[MMP__JOB_KEY_LEN];
  int rank; /* this rank's world rank: the src of what it sends */
  /* The local address to join on (port unused); the channel takes its
   * family, and `group` must have the same one. */
  mmp__udp_addr_t iface;
  /* Group and port. Where group_bits is below the address's width, the
   * group is derived from the key in that range (its low 32 bits at
   * most); port 0: derived too. */
  mmp__udp_addr_t group;
  unsigned group_bits; /* prefix length of the range (IPv4 4..32, IPv6
                          8..128) */
  unsigned ttl;        /* IPv4 TTL, IPv6 hop limit */
  uint64_t sockbuf;    /* SO_RCVBUF / SO_SNDBUF asked for */
} mmp__udp_config_t;

typedef struct mmp__udp_callbacks_s {
  void *ctx;
  /* An authentic datagram of this job arrived. `h` and `payload` are
   * valid during the call only. Loop context. */
  void (*recv)(void *ctx, const mmp__dgram_hdr_t *h, const uint8_t *payload,
               size_t n);
} mmp__udp_callbacks_t;

typedef struct mmp__udp_stats_s {
  uint64_t sent;      /* datagrams handed to the kernel */
  uint64_t send_full; /* sends refused for a full socket buffer */
  uint64_t received;  /* authentic datagrams delivered */
  uint64_t malformed; /* short, bad magic, version or kind, bad length */
  uint64_t foreign;   /* another job's id */
  uint64_t bad_mac;   /* our job id, but the MAC does not verify */
  uint64_t rcvbuf;    /* the socket buffers the kernel granted */
  uint64_t sndbuf;
  /* Bytes the kernel holds, not yet sent (SIOCOUTQ), when read. */
  uint64_t unsent;
  unsigned mtu;    /* the interface's */
  size_t payload;  /* largest payload of one datagram */
  unsigned ip_udp; /* IP and UDP header bytes a datagram carries */
} mmp__udp_stats_t;

typedef struct mmp__udp_ops_s {
  const char *name;
  /* Opens, binds to the group's port and joins the group. Returns 0 and
   * *out, or MMP_ENOMEM, MMP_EINVAL (the group's family is not the
   * interface's), MMP_EIO / MMP_EADDR (logged: multicast cannot run). */
  int (*create)(uv_loop_t *loop, const mmp__udp_config_t *cfg,
                const mmp__udp_callbacks_t *cb, mmp__udp_t **out);
  /* Sends one datagram to the group (h->src is set from the config).
   * n <= payload_max. Returns 0, MMP_EAGAIN (socket buffer full: try
   * later) or MMP_EIO. Never blocks. */
  int (*send)(mmp__udp_t *u, const mmp__dgram_hdr_t *h, const void *payload,
              size_t n);
  /* The same to one host: `to`'s address at the group's port (its port
   * is ignored), where every rank's socket listens beside the group
   * (udp.c). Same returns; MMP_EINVAL for an address family the channel
   * does not speak. */
  int (*send_to)(mmp__udp_t *u, const struct sockaddr *to,
                 const mmp__dgram_hdr_t *h, const void *payload, size_t n);
  /* The largest payload of one unfragmented datagram. */
  size_t (*payload_max)(const mmp__udp_t *u);
  void (*stats)(const mmp__udp_t *u, mmp__udp_stats_t *out);
  /* The group and port, "a.b.c.d:port" or "[ff15::...]:port". */
  void (*group_name)(const mmp__udp_t *u, char *out, size_t cap);
  /* Closes; done(arg) runs once the handle is closed, then `u` is freed. */
  void (*destroy)(mmp__udp_t *u, void (*done)(void *arg), void *arg);
} mmp__udp_ops_t;

extern const mmp__udp_ops_t mmp__udp_ops;

/* Encodes a datagram (header, MAC, payload) into `out` (MMP__DGRAM_HDR +
 * n bytes), as the channel sends it: for tests that forge or replay. */
void mmp__dgram_encode(const mmp__dgram_keys_t *k, uint64_t job_id,
                       const mmp__dgram_hdr_t *h, const void *payload, size_t n,
                       uint8_t *out);

/* Decodes and checks a received datagram: 0 with *h and *payload set,
 * or 1 malformed, 2 foreign job, 3 bad MAC. */
int mmp__dgram_decode(const mmp__dgram_keys_t *k, const uint8_t *in, size_t n,
                      mmp__dgram_hdr_t *h, const uint8_t **payload);

#endif /* MMP_TRANSPORT_UDP_H */
