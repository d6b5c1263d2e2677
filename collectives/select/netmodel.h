/* SPDX-License-Identifier: MIT */
/*
 * The network as automatic selection prices it: the Hockney model of a
 * communicator (netmodel.c) with its burst allowance, gap and the nodes'
 * own links, gamma for reductions (gamma.c), and multicast where it works
 * (mcast.c). Pure data for the costs; measuring is collective.
 */
#ifndef MMP_COLLECTIVES_SELECT_NETMODEL_H
#define MMP_COLLECTIVES_SELECT_NETMODEL_H

#include "runtime/coll_api.h"

/* beta (s/byte) and the burst allowance (bytes) from the best half round
 * trips of 1-byte, 64 KiB and 1 MiB ping-pongs (seconds). */
void mmp__net_beta_burst(double one, double small, double large, double *beta,
                         double *burst);

/* The model for `comm`, never asking another rank: the saved profile
 * when MINIMP_NET_ALPHA_US and MINIMP_NET_BETA_NS were set, else the one
 * measured on it or on the communicator it was made from (the world's in
 * mmp_init, or one mmp_comm_netmodel measured), else fixed figures
 * (MMP__NET_DEFAULT_*), the same on every rank. A collective's start
 * calls it, and a non-blocking one must not wait there for the others.
 * Lock NOT held. 0 or MMP_ENOMEM. */
int mmp__netmodel_get(mmp_comm_t *comm, mmp_netmodel_t *out);

/* mmp__coll_hooks_t.world_up: measures the world's model with every rank
 * (nothing without ranks to measure or with a saved profile); a failure
 * is logged and leaves the fixed figures. Lock NOT held. */
void mmp__netmodel_world_up(mmp_comm_t *world);

/* The fixed figures of a communicator of two ranks or more that has no
 * measured model (MMP_INIT_EXTERNAL_PROGRESS, or a measurement at init
 * that failed): a switched network of about 8 Gbit/s between nodes, shared
 * memory within one (docs/design/auto.md, "The network model"). */
#define MMP__NET_DEFAULT_ALPHA_US 20.0
#define MMP__NET_DEFAULT_BETA_NS 1.0
#define MMP__NET_DEFAULT_NODE_ALPHA_US 2.0
#define MMP__NET_DEFAULT_NODE_BETA_NS 0.2

/* gamma (seconds per byte reduced) on this CPU: the best of a few float
 * sums (gamma.c); rank 0's travels with the model. */
double mmp__measure_gamma(void);
/* gamma where the model is not measured (a saved profile, one rank):
 * MINIMP_NET_GAMMA_NS, else this. */
#define MMP__GAMMA_DEFAULT_NS 0.25

/* What each segment of a pipeline after its first adds on a link: the
 * model's gap (one more message sent back to back), or alpha where none
 * was measured (a saved profile without MINIMP_NET_GAP_US). A segment
 * that follows another does not wait the latency again (docs/design/auto.md,
 * "The network model"). */
static inline double mmp__net_gap(const mmp_netmodel_t *nm) {
  return nm->gap > 0 ? nm->gap : nm->alpha;
}

/* ---- Multicast (mcast.c) ------------------------------------------------- */

/* The multicast protocol's constants its price depends on (the protocol
 * itself: bcast/multicast.c). Receivers look for a quiet stream every
 * NACK_GAP_MS (plus up to as much again at random); the root paces at
 * PACE_GAIN over the model's rate over IPv4, whose beta is per byte of
 * TCP payload in a 1500-byte segment (TCP_MSS4); Ethernet's header is what
 * a datagram adds on the wire beyond its payload, our header, UDP and IP. */
#define MMP__MC_NACK_GAP_MS 2u
#define MMP__MC_PACE_GAIN 1.05
#define MMP__MC_TCP_MSS4 1448.0
#define MMP__MC_ETH_HDR 14u

/* The root's pace over the model's rate: MMP__MC_PACE_GAIN over IPv4, more
 * where a datagram's `extra` wire bytes (mmp__mcast_verdict_t) are more,
 * so that beta per TCP payload byte becomes about the link's rate in wire
 * bytes. */
double mmp__mcast_pace_gain(size_t extra);

/* 1 if AUTO considers multicast at all on p ranks under `nm`: at least 3
 * ranks, one per node, on CPUs they do not share (docs/design/auto.md,
 * "Multicast"). A function of (p, nm) only, not of the length. */
int mmp__mcast_considered(int p, const mmp_netmodel_t *nm);

/* Multicast on `comm` as AUTO prices it (*mc zeroed: not usable): only
 * where MINIMP_MCAST=on and mmp__mcast_considered; then the runtime's
 * verdict, mmp_init's (mmp__mcast_usable). A misconfigured group, logged
 * as an error on every rank, leaves AUTO without multicast, as where it
 * is unusable. Local. */
void mmp__mcast_auto(const mmp_comm_t *comm, const mmp_netmodel_t *nm,
                     mmp__mcast_verdict_t *mc);

/* The price of multicasting: alpha, then `first` bytes of payload at the
 * root's pace slowed `share`-fold (roots that share the receivers'
 * links), then the repairs of `m` bytes of datagrams to p - 1 receivers
 * under mc->loss. INFINITY where `mc` is NULL or multicast unusable. */
double mmp__mcast_price(int p, double first, double share, double m,
                        const mmp_netmodel_t *nm,
                        const mmp__mcast_verdict_t *mc);

#endif /* MMP_COLLECTIVES_SELECT_NETMODEL_H */
