/* SPDX-License-Identifier: MIT */
/*
 * Multicast as AUTO prices it: whether it considers multicast at all, the
 * availability the ranks agreed on (runtime/mcast_probe.c), and the price
 * of a multicast stream with its repairs under the loss the probes saw.
 * The broadcast's multicast row and the s-to-p's price their runs with it
 * (bcast/multicast.c, s2p/multicast.c).
 */
#include <math.h>
#include <string.h>

#include "collectives/select/netmodel.h"

int mmp__mcast_considered(int p, const mmp_netmodel_t *nm) {
  /* Ranks sharing a node each take every datagram through that node's
   * kernel, and ranks sharing CPUs wake all at once for each one: either
   * way the receivers' cost grows with p, which the flat price does not
   * say (docs/data/history/performance.md, "The multicast broadcast", p = 32).
   */
  return p >= 3 && nm->nodes == p && !nm->shared_cpus;
}

/*
 * Only where the user switched it on (MINIMP_MCAST=on): its price is not
 * yet checked on hosts where it applies (docs/design/auto.md,
 * "Multicast"). The verdict is the one mmp_init found for the job, which
 * every communicator takes from the one it was made from: the same on
 * every rank, and never checked here, in a collective's start.
 */
void mmp__mcast_auto(const mmp_comm_t *comm, const mmp_netmodel_t *nm,
                     mmp__mcast_verdict_t *mc) {
  mmp__rt_facts_t f;

  memset(mc, 0, sizeof(*mc));
  mmp__rt_facts(mmp__eng, &f);
  if (f.mcast != MMP__MCAST_ON || !mmp__mcast_considered(comm->size, nm))
    return;
  /* Unusable or misconfigured (logged in mmp_init): AUTO does without. */
  if (mmp__mcast_usable(comm, mc) != 0)
    memset(mc, 0, sizeof(*mc));
}

/* The pace over the model's rate for datagrams that add `extra` wire
 * bytes: MMP__MC_PACE_GAIN over IPv4 (extra 42). The model measures beta over
 * TCP on the job's own family, and an IPv6 segment carries 20 bytes of TCP
 * payload fewer (its IP header is that much longer), so the same link
 * shows a higher beta there: the gain takes that back out, or the pace
 * would undershoot the link (docs/data/history/performance.md, "Multicast over
 * IPv6"). */
double mmp__mcast_pace_gain(size_t extra) {
  size_t v4 = MMP__DGRAM_IP_UDP + MMP__MC_ETH_HDR;
  double more = extra > v4 ? (double)(extra - v4) : 0;

  return MMP__MC_PACE_GAIN * MMP__MC_TCP_MSS4 / (MMP__MC_TCP_MSS4 - more);
}

/* Repair rounds priced at most; the probability of one more after that
 * is below anything that shows in a time. */
#define COST_ROUNDS 32

/*
 * alpha, then the wire bytes (payload, our header, UDP, IP, Ethernet) at
 * the root's pace: the switch copies every datagram, so each receiver
 * takes the same bytes in the same time and the cost is flat in p. The
 * burst allowance is not counted: a multicast does not pass through it
 * at once, as a TCP row's first bytes do (docs/data/history/performance.md).
 * Then the repairs, under the loss q the availability probes saw: a datagram is
 * re-multicast in round k when one of the p - 1 receivers still misses it after
 * k sends (probability 1 - (1 - q^k)^(p-1)), and round k happens at all when
 * any of the n datagrams does; a round costs the NACK delay
 * (MMP__MC_NACK_GAP_MS plus half as much again on average) and 2 alpha. The ACK
 * tree is not priced: every receiver holds the message before it runs, as in
 * the TCP rows' prices, which end when the last receiver holds it.
 */
double mmp__mcast_price(int p, double first, double share, double m,
                        const mmp_netmodel_t *nm,
                        const mmp__mcast_verdict_t *mc) {
  double pl, n, wire, per, t, q, bytes = 0, rounds = 0, hold, all, hdr;
  int k;

  if (mc == NULL || mc->state <= 0 || mc->payload == 0 || p < 2)
    return INFINITY;
  pl = (double)mc->payload;
  hdr = (double)(MMP__DGRAM_HDR + mc->extra);
  per = nm->beta / mmp__mcast_pace_gain(mc->extra);
  n = ceil(first / pl);
  t = nm->alpha + (first + n * hdr) * per * share;
  n = ceil(m / pl);
  wire = m + n * hdr;
  q = fmin(fmax(mc->loss, 0), 0.99);
  for (k = 1; k <= COST_ROUNDS && q > 0 && n > 0; k++) {
    hold = pow(1 - pow(q, k), p - 1); /* all receivers hold a datagram */
    all = 1 - pow(hold, n);           /* some datagram is missing */
    if (all < 1e-6)
      break;
    bytes += (1 - hold) * wire;
    rounds += all;
  }
  return t + bytes * per +
         rounds * (1.5 * MMP__MC_NACK_GAP_MS * 1e-3 + 2 * nm->alpha);
}
