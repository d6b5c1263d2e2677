/* SPDX-License-Identifier: MIT */
/*
 * Multicast broadcast: the root sends the message once, as datagrams to
 * the job's multicast group (runtime/mcast.c, transport/udp.c), and the
 * switch copies each to every host. Reliability is the receivers'
 * business, as in the receiver-initiated protocols Pingali, Towsley &
 * Kurose found to scale best (seed 004, reference [10]): each receiver
 * keeps a bitmap of the datagrams it holds and, when the stream goes
 * quiet with pieces missing, multicasts a NACK bitmap after a randomised
 * delay; a NACK it overhears from another receiver for the same first
 * missing piece cancels its own for that round. A NACK's bitmap names
 * only gaps below the highest datagram held (the first pass is in order,
 * so those are lost); the tail beyond it is asked for by a flag after two
 * quiet rounds, and the root heeds that flag only once its first pass is
 * out, for until then a quiet stream is a paused root, not a loss. While
 * its NACKs go unanswered a receiver doubles its interval up to
 * NACK_IDLE_MS.
 *
 * Repair. The root repairs what was asked for once per round however
 * many asked: by unicast to the one receiver that asked for a datagram,
 * by re-multicast when several did (before the repair went out) or when a
 * receiver other than the one it was last unicast to asks again. A NACK
 * that suppressed others stands for more receivers than its sender, so a
 * unicast repair may leave some short; they ask in a later round (nobody
 * suppresses them once the unicast's receiver holds the datagram) and
 * that second asker makes the repair a multicast: such a datagram costs
 * one unicast more than under re-multicast alone, and nobody waits on a
 * datagram nobody multicasts. The receiver a unicast was for asking
 * again (its repair was lost) gets another unicast, UNICAST_TRIES in all,
 * then a multicast. Asks that come while
 * the last repair should still be on its way (the kernel's queue ahead of
 * it at the link's rate, plus two NACK intervals) are ignored: a receiver
 * that hears nothing while the root serves others by unicast would
 * otherwise ask again for repairs that are only late. Where several
 * receivers have asked in this broadcast a unicast waits one NACK
 * interval for the others' asks. A rank whose address other ranks of the
 * job share (several ranks on a host) gets multicast repairs: the kernel
 * could hand a unicast to any of their sockets.
 *
 * Completion. Every rank acknowledges to its parent in a binary tree
 * rooted at the root (over the TCP point-to-point path) once it holds the
 * message and its children have acknowledged, so the root hears two ACKs,
 * not p - 1. In rendezvous mode the root completes on the last ACK; in
 * eager mode once it has handed the first pass to the kernel, keeping a
 * copy to repair from until the ACKs are in. A receiver completes as soon
 * as it holds the message. A receiver that has not got it within the
 * timeout (MINIMP_MCAST_TIMEOUT_MS, or the collective's own) fails with
 * MMP_ETIMEDOUT and sends that up the tree; a lost rank fails its
 * parent's ACK receive with MMP_EPEERLOST.
 *
 * Pacing. The root paces by elapsed time, a token bucket: every
 * millisecond tick it may have sent, since its first datagram, the bytes
 * on the wire (payload, our header, UDP, IP and Ethernet) that the
 * model's beta lets through, and it sends the difference to what it has
 * sent, first passes and repairs alike. A timer only bounds how late a
 * tick comes, not the rate, so ticks that fire late still reach the link
 * rate. The credit is capped at WINDOW_MAX datagrams (256 of 1408 bytes:
 * 360 KiB, about what a default net.core.rmem_max lets a receiver
 * buffer), so a pause (waiting for NACKs) never turns into a flood.
 *
 * Availability is detected collectively in mmp_init, and every
 * communicator takes its parent's verdict (mmp__mcast_usable); where
 * multicast is unusable, asking for this algorithm returns MMP_ENOTSUP on
 * every rank.
 *
 * Cost: alpha + m beta at the root and at each receiver, flat in p, plus
 * repairs (multicast_cost); the root's ACK tree adds ceil(log2 p) alpha
 * after every receiver holds the message.
 * Selected by AUTO where that price, under the loss the availability
 * probes saw, is 3% below every TCP row's, on one rank per node and CPUs
 * not shared, with MINIMP_MCAST=on (docs/design/auto.md, "Multicast");
 * else when asked for.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/bcast/bcast.h"

#define PH_ACK 1
#define PH_WATCH 4 /* a receive from the root that nothing ever matches */

/* The pace where there is no model: a communicator of one rank, which
 * sends nothing. */
#define DEFAULT_BETA 1e-7
/* Receivers look for a quiet stream every NACK_GAP_MS, plus up to as
 * much again at random, so that their NACKs spread out (the price counts
 * on it: select/netmodel.h) ... */
#define NACK_GAP_MS MMP__MC_NACK_GAP_MS
/* ... backing off to this while they have heard nothing at all (the root
 * may simply not have started). */
#define NACK_IDLE_MS 64u
#define WINDOW_MAX 256u
#define ETH_HDR MMP__MC_ETH_HDR
#define PACE_GAIN MMP__MC_PACE_GAIN
#define ACK_LEN 4
/* The root's who[i]: no unicast pending or last sent; several asked. */
#define WHO_NONE UINT32_MAX
#define WHO_MANY (UINT32_MAX - 1)
/* Unicast repairs of one datagram at most; then it goes by multicast (a
 * unicast that never arrives may be one that cannot: a firewall that lets
 * the group's datagrams in but not the root's). */
#define UNICAST_TRIES 2u
/* A NACK's flag: it also asks for every datagram after its bitmap. */
#define NACK_F_TAIL 1u

/* The root's record of a datagram's repairs. */
struct rep_s {
  uint32_t who;      /* while asked for: the world rank that asked, or WHO_MANY;
                        after: the rank it was unicast to, or WHO_NONE */
  uint32_t due;      /* while asked for: 1 + ms after t0 of the ask; after:
                        1 + ms after t0 by which its last repair should have
                        arrived; 0: never asked for */
  uint32_t unicasts; /* repairs of it sent by unicast */
};

typedef struct mc_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  uint8_t *buf;  /* the root sends from it; receivers fill it */
  uint8_t *copy; /* eager root: its own copy, or NULL */
  size_t len;
  int root, me, p, vr;
  uint32_t ctx, seq;
  size_t pl;          /* payload bytes a datagram */
  size_t extra;       /* wire bytes a datagram adds to pl and our header */
  uint32_t npk;       /* datagrams */
  uint8_t *bits;      /* receiver: held; root: asked for again */
  uint32_t nhave;     /* receiver */
  uint32_t next;      /* root: next datagram of the first pass */
  uint32_t nwant;     /* root: repairs asked for */
  struct rep_s *rep;  /* root, from the first NACK: by datagram */
  double unsent;      /* root: bytes queued in the kernel, as of this tick */
  uint32_t nacker;    /* root: the first receiver that sent a NACK */
  int several;        /* root: more than one has */
  double ns_per_byte; /* root: the pace, wire bytes */
  uint64_t t0;        /* root: uv_hrtime of the first tick, 0 before */
  double sent_bytes;  /* root: wire bytes sent since t0, less burst0 */
  double burst0;      /* root: wire bytes the first tick may send at once */
  int eager;
  mmp__mcast_listener_t l;
  mmp__deadline_t tick;  /* root: pacing; receiver: NACK rounds */
  mmp__deadline_t limit; /* receiver: the timeout */
  unsigned limit_ms;
  unsigned idle_ms; /* receiver: the current NACK interval */
  uint32_t heard;   /* receiver: new datagrams since the last round */
  uint32_t hi;      /* receiver: the highest datagram held, + 1 */
  unsigned quiet;   /* receiver: rounds in a row that heard nothing */
  int overheard;    /* receiver: a NACK for our first gap this round */
  uint32_t rnd;
  int nchild, child[2];
  mmp_request_t ack_rx[2];
  uint8_t ack_in[2][ACK_LEN];
  int acks_left;
  mmp_request_t ack_tx;
  uint8_t ack_out[ACK_LEN];
  int ack_state; /* 0 not sent, 1 sending, 2 sent */
  int have_all;  /* receiver: holds the message (or gave up) */
  int err;
  mmp_request_t *creq;
  int creq_done;
  int req_gone;
  int tree_done;
  int driving, again;  /* mc_drive is running; it must step again */
  mmp_request_t watch; /* receiver: fails when the root is lost */
  int watching;
} mc_t;

static void mc_drive(mc_t *m);

static void set_err(mc_t *m, int err) {
  if (m->err == 0 || (m->err == MMP_EMISMATCH &&
                      (err == MMP_EPEERLOST || err == MMP_ETIMEDOUT)))
    m->err = err;
}

static int bit_get(const uint8_t *b, uint32_t i) {
  return (b[i / 8] >> (i % 8)) & 1;
}

static void bit_set(uint8_t *b, uint32_t i) {
  b[i / 8] |= (uint8_t)(1u << (i % 8));
}

static void bit_clear(uint8_t *b, uint32_t i) {
  b[i / 8] &= (uint8_t) ~(1u << (i % 8));
}

static size_t piece_len(const mc_t *m, uint32_t i) {
  size_t off = (size_t)i * m->pl;

  return m->len - off < m->pl ? m->len - off : m->pl;
}

static uint32_t mc_rand(mc_t *m) {
  m->rnd ^= m->rnd << 13;
  m->rnd ^= m->rnd >> 17;
  m->rnd ^= m->rnd << 5;
  return m->rnd;
}

/* The request's status counts the message's bytes, as the other
 * broadcasts' do. */
static void complete_req(mc_t *m, int err) {
  if (m->creq_done)
    return;
  m->creq_done = 1;
  m->creq->status.bytes = err == 0 ? m->len : 0;
  mmp__req_complete_locked(m->e, m->creq, err);
}

static void mc_free(mc_t *m) {
  mmp__mcast_unlisten_locked(m->e, &m->l);
  mmp__deadline_stop_locked(m->e, &m->tick);
  mmp__deadline_stop_locked(m->e, &m->limit);
  mmp__comm_release_locked(m->comm);
  free(m->copy);
  free(m->bits);
  free(m->rep);
  free(m);
}

/* ---- The root ----------------------------------------------------------- */

/* Datagram i to the group, or to world rank `to` alone (WHO_NONE: the
 * group). */
static int send_piece(mc_t *m, uint32_t i, uint32_t to) {
  const uint8_t *src = m->copy != NULL ? m->copy : m->buf;
  mmp__dgram_hdr_t h;

  memset(&h, 0, sizeof(h));
  h.kind = MMP__DG_DATA;
  h.ctx = m->ctx;
  h.seq = m->seq;
  h.offset = (uint64_t)i * m->pl;
  h.total = m->len;
  if (to != WHO_NONE)
    return mmp__mcast_send_to_locked(m->e, (int)to, &h, src + h.offset,
                                     piece_len(m, i));
  return mmp__mcast_send_locked(m->e, &h, src + h.offset, piece_len(m, i));
}

static double wire_bytes(const mc_t *m, uint32_t i) {
  return (double)(piece_len(m, i) + MMP__DGRAM_HDR + m->extra);
}

/* Milliseconds since the root's first tick. */
static uint32_t root_ms(const mc_t *m) {
  return (uint32_t)((uv_hrtime() - m->t0) / 1000000u);
}

/* A repair of datagram i: by unicast where one receiver asked and an
 * address reaches it alone, else to the group. It should arrive once the
 * link has carried what the kernel held unsent before it, so asks for it
 * until then (at most NACK_IDLE_MS), and NACK_GAP_MS twice over, are
 * ignored (root_nack): they only say that it is on its way. */
static int send_repair(mc_t *m, uint32_t i) {
  uint32_t to = m->rep != NULL && m->rep[i].who < WHO_MANY &&
                        m->rep[i].unicasts < UNICAST_TRIES
                    ? m->rep[i].who
                    : WHO_NONE;
  int rc = to != WHO_NONE ? send_piece(m, i, to) : MMP_ENOTSUP;
  double wait_ms;

  if (rc == MMP_ENOTSUP) {
    to = WHO_NONE;
    rc = send_piece(m, i, to);
  }
  if (rc != 0)
    return rc;
  m->unsent += wire_bytes(m, i);
  if (m->rep != NULL) {
    /* The queue ahead of it drains at the link's rate. */
    wait_ms = fmin(m->unsent * m->ns_per_byte * PACE_GAIN / 1e6, NACK_IDLE_MS);
    m->rep[i].who = to;
    m->rep[i].unicasts += to != WHO_NONE;
    m->rep[i].due = 1 + root_ms(m) + 2 * NACK_GAP_MS + (uint32_t)wait_ms;
  }
  mmp__mcast_repaired_locked(m->e, to != WHO_NONE);
  return 0;
}

/* The wire bytes the pace allows now: what the elapsed time since t0
 * lets through, less what went out, at most WINDOW_MAX full datagrams
 * (a credit unused while waiting is forfeited beyond that). */
static double root_credit(mc_t *m) {
  uint64_t now = uv_hrtime();
  double cap = (double)WINDOW_MAX * (double)(m->pl + MMP__DGRAM_HDR + m->extra);
  double allowed;

  if (m->t0 == 0) {
    m->t0 = now;
    m->sent_bytes = -m->burst0;
  }
  allowed = (double)(now - m->t0) / m->ns_per_byte - m->sent_bytes;
  if (allowed > cap) {
    /* Idle time does not bank more than a window. */
    m->sent_bytes += allowed - cap;
    allowed = cap;
  }
  return allowed;
}

/* 1 if datagram i, asked for by one receiver, waits for others' NACKs:
 * where several receivers have asked for repairs in this broadcast, a
 * unicast waits one NACK interval (receivers ask every NACK_GAP_MS to
 * twice that), so that the others asking for the same datagram make it
 * one multicast rather than a unicast and then a multicast. */
static int held(const mc_t *m, uint32_t i) {
  return m->several && m->rep != NULL && m->rep[i].who < WHO_MANY &&
         root_ms(m) + 1 < m->rep[i].due + 2 * NACK_GAP_MS;
}

/* Loop context, lock held: what the pace allows now, repairs first. At
 * least one datagram goes out each tick, so a pace slower than one
 * datagram a millisecond still moves. */
static void root_tick(void *arg) {
  mc_t *m = arg;
  double credit = root_credit(m);
  unsigned sent = 0;
  uint32_t i;
  int rc = 0;

  if (m->nwant > 0)
    m->unsent = (double)mmp__mcast_unsent_locked(m->e);
  for (i = 0; m->nwant > 0 && i < m->npk && (sent == 0 || credit > 0); i++) {
    if (!bit_get(m->bits, i) || held(m, i))
      continue;
    if ((rc = send_repair(m, i)) != 0)
      break;
    bit_clear(m->bits, i);
    m->nwant--;
    sent++;
    credit -= wire_bytes(m, i);
    m->sent_bytes += wire_bytes(m, i);
  }
  while (rc == 0 && m->next < m->npk && (sent == 0 || credit > 0)) {
    if ((rc = send_piece(m, m->next, WHO_NONE)) != 0)
      break;
    credit -= wire_bytes(m, m->next);
    m->sent_bytes += wire_bytes(m, m->next);
    m->next++;
    sent++;
  }
  if (rc != 0 && rc != MMP_EAGAIN) {
    set_err(m, rc);
    m->next = m->npk;
    m->nwant = 0;
  }
  if (m->next < m->npk || m->nwant > 0)
    mmp__deadline_start_locked(m->e, &m->tick, 1, root_tick, m);
  mc_drive(m);
}

/* A receiver's NACK: the bits from h->offset on, h->aux of them. Who
 * asked decides how each goes out (the header comment's rule). */
static void root_nack(mc_t *m, const mmp__dgram_hdr_t *h,
                      const uint8_t *payload, size_t n) {
  uint32_t first = (uint32_t)h->offset, last, i, by = h->src, now;
  struct rep_s *r;

  if (h->offset >= m->npk || h->aux > n * 8 || h->aux > m->npk - first)
    return;
  if (m->rep == NULL && (m->rep = malloc(m->npk * sizeof(*m->rep))) != NULL)
    for (i = 0; i < m->npk; i++) {
      m->rep[i].who = WHO_NONE;
      m->rep[i].due = 0;
      m->rep[i].unicasts = 0;
    }
  now = root_ms(m) + 1;
  if (m->nacker == WHO_NONE)
    m->nacker = by;
  else if (m->nacker != by)
    m->several = 1;
  /* The tail only once the first pass is out: until then the first pass
   * brings it (the receiver merely waited on a pause in the stream). */
  last =
      (h->flags & NACK_F_TAIL) && m->next == m->npk ? m->npk : first + h->aux;
  for (i = first; i < last; i++) {
    /* Not sent yet: the first pass brings it. */
    if ((i - first < h->aux && !bit_get(payload, i - first)) || i >= m->next)
      continue;
    r = m->rep != NULL ? &m->rep[i] : NULL;
    if (bit_get(m->bits, i)) {
      if (r != NULL && r->who != by)
        r->who = WHO_MANY;
      continue;
    }
    /* Its last repair, to this receiver or to all, is on its way. */
    if (r != NULL && r->due > now && (r->who == by || r->who == WHO_NONE))
      continue;
    bit_set(m->bits, i);
    m->nwant++;
    if (r != NULL) {
      r->who = r->who == WHO_NONE || r->who == by ? by : WHO_MANY;
      r->due = now;
    }
  }
  if (m->nwant > 0 && !m->tick.armed)
    mmp__deadline_start_locked(m->e, &m->tick, 0, root_tick, m);
}

/* ---- Receivers ---------------------------------------------------------- */

static uint32_t first_gap(const mc_t *m) {
  uint32_t i;

  for (i = 0; i < m->npk; i++)
    if (!bit_get(m->bits, i))
      return i;
  return m->npk;
}

static void recv_done(mc_t *m, int err) {
  if (m->have_all)
    return;
  m->have_all = 1;
  if (err != 0)
    set_err(m, err);
  mmp__mcast_unlisten_locked(m->e, &m->l);
  mmp__deadline_stop_locked(m->e, &m->tick);
  mmp__deadline_stop_locked(m->e, &m->limit);
  if (m->watching)
    mmp__cancel_locked(m->e, &m->watch);
  complete_req(m, m->err);
}

/* The watch ended: cancelled by recv_done, or the root was lost. */
static void watch_done(mmp_request_t *r, void *arg) {
  mc_t *m = arg;

  m->watching = 0;
  if (r->err != 0 && r->err != MMP_ECANCELED)
    recv_done(m, r->err);
  else if (r->err == 0)
    recv_done(m, MMP_EPROTO); /* nobody sends on this tag */
  mc_drive(m);
}

static void recv_data(mc_t *m, const mmp__dgram_hdr_t *h,
                      const uint8_t *payload, size_t n) {
  uint32_t i;

  if (h->total != m->len) {
    MMP__LOG(MMP__LOG_WARN,
             "multicast broadcast %u: the root sends %llu bytes, this rank "
             "expects %zu",
             m->seq, (unsigned long long)h->total, m->len);
    recv_done(m, MMP_EMISMATCH);
    return;
  }
  if (h->offset % m->pl != 0 || h->offset / m->pl >= m->npk)
    return;
  i = (uint32_t)(h->offset / m->pl);
  if (n != piece_len(m, i))
    return;
  /* A piece held already (a repair someone else asked for, or the network
   * duplicated it) is ignored: the first copy, authenticated like it,
   * has the same bytes. */
  if (bit_get(m->bits, i)) {
    mmp__mcast_duplicate_locked(m->e);
    return;
  }
  memcpy(m->buf + h->offset, payload, n);
  bit_set(m->bits, i);
  m->nhave++;
  m->heard++;
  if (i >= m->hi)
    m->hi = i + 1;
  if (m->nhave == m->npk)
    recv_done(m, 0);
}

/* Loop context, lock held: a NACK round. */
static void recv_tick(void *arg) {
  mc_t *m = arg;
  uint8_t map[2048];
  uint32_t first, nbits, k;
  mmp__dgram_hdr_t h;
  unsigned next;
  uint8_t flags;

  if (m->have_all)
    return;
  m->quiet = m->heard > 0 ? 0 : m->quiet + 1;
  if (m->heard > 0) {
    /* The stream flows: no gap to report yet. */
    m->heard = 0;
    m->idle_ms = NACK_GAP_MS;
  } else if (m->overheard) {
    m->overheard = 0;
  } else if ((first = first_gap(m)) < m->hi || m->quiet >= 2) {
    /* The bitmap covers the gaps below the highest datagram held: the
     * first pass is in order, so those are lost. What lies beyond may
     * still be on its way (queued, or unread in our socket: a timer can
     * fire before the loop reads), so the tail, all of it missing, is
     * asked for only after a second quiet round, by a flag. */
    nbits = m->hi > first ? m->hi - first : 0;
    flags = m->quiet >= 2 ? NACK_F_TAIL : 0;
    if (nbits > sizeof(map) * 8 || (size_t)(nbits + 7) / 8 > m->pl)
      flags = 0;
    if (nbits > sizeof(map) * 8)
      nbits = sizeof(map) * 8;
    if ((size_t)(nbits + 7) / 8 > m->pl)
      nbits = (uint32_t)(m->pl * 8);
    memset(map, 0, (nbits + 7) / 8);
    for (k = 0; k < nbits; k++)
      if (!bit_get(m->bits, first + k))
        bit_set(map, k);
    memset(&h, 0, sizeof(h));
    h.kind = MMP__DG_NACK;
    h.flags = flags;
    h.ctx = m->ctx;
    h.seq = m->seq;
    h.offset = first;
    h.aux = nbits;
    h.total = m->len;
    (void)mmp__mcast_send_locked(m->e, &h, map, (nbits + 7) / 8);
    if (m->idle_ms < NACK_IDLE_MS)
      m->idle_ms *= 2;
  }
  next = m->idle_ms + mc_rand(m) % (m->idle_ms + 1);
  mmp__deadline_start_locked(m->e, &m->tick, next, recv_tick, m);
}

static void recv_limit(void *arg) {
  mc_t *m = arg;
  int i;

  MMP__LOG(MMP__LOG_WARN,
           "multicast broadcast %u: %u of %u datagrams after %u ms; giving up",
           m->seq, m->nhave, m->npk, m->limit_ms);
  atomic_store_explicit(&m->comm->coll_err, MMP_ETIMEDOUT,
                        memory_order_relaxed);
  recv_done(m, MMP_ETIMEDOUT);
  /* Children that never answer must not keep this rank: their ACKs, if
   * they come, stay unmatched. */
  for (i = 0; i < m->nchild; i++)
    mmp__cancel_locked(m->e, &m->ack_rx[i]);
  mc_drive(m);
}

/* ---- Datagrams and the ACK tree ---------------------------------------- */

static void on_dgram(void *arg, const mmp__dgram_hdr_t *h,
                     const uint8_t *payload, size_t n) {
  mc_t *m = arg;

  if (m->me == m->root) {
    if (h->kind == MMP__DG_NACK)
      root_nack(m, h, payload, n);
    return;
  }
  if (h->kind == MMP__DG_DATA) {
    recv_data(m, h, payload, n);
  } else if (h->kind == MMP__DG_NACK && !m->have_all) {
    /* Someone asked for our first gap already: the repair serves us. */
    if (h->offset == first_gap(m))
      m->overheard = 1;
  }
  mc_drive(m);
}

static void ack_rx_done(mmp_request_t *r, void *arg) {
  mc_t *m = arg;
  int err = r->err;

  if (err == 0 && r->status.bytes >= ACK_LEN) {
    const uint8_t *in = m->ack_in[r == &m->ack_rx[0] ? 0 : 1];
    err = -(int)mmp__get_u32(in);
  }
  if (err != 0 && err != MMP_ECANCELED)
    set_err(m, err);
  m->acks_left--;
  mc_drive(m);
}

static void ack_tx_done(mmp_request_t *r, void *arg) {
  mc_t *m = arg;

  if (r->err != 0)
    set_err(m, r->err);
  m->ack_state = 2;
  mc_drive(m);
}

/* One step of mc_drive; 1 if it freed `m`. */
static int mc_step(mc_t *m) {
  int parent, rc;

  if (m->tree_done)
    return 0;
  if (m->me == m->root) {
    if (m->eager && m->next >= m->npk)
      complete_req(m, m->err);
    if (m->acks_left > 0 || m->next < m->npk)
      return 0;
    if (m->eager && m->err != 0)
      MMP__LOG(MMP__LOG_WARN,
               "multicast broadcast %u (eager) failed after the root "
               "returned: %s",
               m->seq, mmp_strerror(m->err));
    complete_req(m, m->err);
  } else {
    if (!m->have_all || m->acks_left > 0 || m->watching)
      return 0;
    if (m->ack_state == 0) {
      parent = (m->vr - 1) / 2;
      parent = (parent + m->root) % m->p;
      mmp__put_u32(m->ack_out, (uint32_t)-m->err);
      m->ack_state = 1;
      memset(&m->ack_tx, 0, sizeof(m->ack_tx));
      m->ack_tx.cb = ack_tx_done;
      m->ack_tx.cb_arg = m;
      rc = mmp__isend_locked(m->e, m->comm, m->ctx, m->ack_out, ACK_LEN,
                             mmp__comm_world(m->comm, parent),
                             MMP__COLL_TAG(m->seq, PH_ACK), MMP_SEND_EAGER,
                             &m->ack_tx);
      if (rc != 0) {
        set_err(m, rc);
        m->ack_state = 2;
      }
    }
    if (m->ack_state != 2)
      return 0;
  }
  m->tree_done = 1;
  mmp__mcast_unlisten_locked(m->e, &m->l);
  mmp__deadline_stop_locked(m->e, &m->tick);
  if (!m->req_gone)
    return 0;
  mc_free(m);
  return 1;
}

/* Lock held: moves on to whatever can happen now. Sends and receives it
 * posts may complete inside it and call it again: that call only asks
 * the running one for another step, so `m` is freed in one place. */
static void mc_drive(mc_t *m) {
  if (m->driving) {
    m->again = 1;
    return;
  }
  m->driving = 1;
  do {
    m->again = 0;
    if (mc_step(m))
      return;
  } while (m->again);
  m->driving = 0;
}

static void mc_req_free(mmp_request_t *r) {
  mc_t *m = r->cb_arg;
  mmp__engine_t *e = m->e;

  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  m->req_gone = 1;
  if (m->tree_done)
    mc_free(m);
  mmp__unlock(e);
}

/* ---- Start --------------------------------------------------------------- */

static int multicast_start(const mmp__run_t *run, mmp_request_t **out) {
  mmp__engine_t *e = run->e;
  mmp_comm_t *comm = run->comm;
  const mmp__desc_t *d = run->d;
  mmp_request_t *creq;
  double beta = DEFAULT_BETA, burst = 0;
  mmp_netmodel_t nm;
  size_t pl, extra = MMP__DGRAM_IP_UDP + ETH_HDR;
  mmp__mcast_verdict_t v;
  mmp__rt_facts_t f;
  mc_t *m;
  int rc, i;

  *out = NULL;
  MMP__ASSERT_UNLOCKED(e);
  mmp__rt_facts(e, &f);
  /* A broadcast to nobody needs no channel: it completes at once. */
  if (comm->size == 1)
    pl = 1024;
  else if ((rc = mmp__mcast_usable(comm, &v)) != 0) {
    mmp__mcast_explain(comm);
    return rc;
  } else {
    pl = v.payload;
    extra = v.extra;
  }
  /* The pace comes from the model (local: no start asks other ranks). */
  if (comm->size > 1 && (rc = mmp__netmodel_get(comm, &nm)) != 0)
    return rc;
  if (comm->size > 1) {
    beta = nm.beta;
    burst = nm.burst;
  }
  m = calloc(1, sizeof(*m));
  creq = calloc(1, sizeof(*creq));
  if (m == NULL || creq == NULL) {
    free(m);
    free(creq);
    return MMP_ENOMEM;
  }
  m->e = e;
  m->comm = comm;
  m->buf = run->buf;
  m->len = (size_t)d->count;
  m->root = d->root;
  m->me = comm->rank;
  m->p = comm->size;
  m->vr = (m->me - m->root + m->p) % m->p;
  m->ctx = comm->ctx + 1;
  m->pl = pl;
  m->extra = extra;
  m->npk = (uint32_t)((m->len + pl - 1) / pl);
  m->eager = run->mode == MMP_SEND_EAGER ||
             (run->mode == MMP_SEND_AUTO && m->len <= f.eager_limit);
  m->bits = calloc(((size_t)m->npk + 7) / 8 + 1, 1);
  if (m->bits == NULL || (m->me == m->root && m->eager && m->len > 0 &&
                          (m->copy = malloc(m->len)) == NULL)) {
    free(m->bits);
    free(m);
    free(creq);
    return MMP_ENOMEM;
  }
  if (m->copy != NULL)
    memcpy(m->copy, m->buf, m->len);
  /* The model's beta is per byte of TCP payload, which carries headers
   * on the wire besides; pace_gain turns it into about the link's rate in
   * wire bytes, a little over rather than under: an overshoot waits in
   * the root's interface queue, an undershoot leaves the link idle. */
  m->ns_per_byte =
      (beta > 0 ? beta : DEFAULT_BETA) * 1e9 / mmp__mcast_pace_gain(m->extra);
  /* Roots sending at once (a multicast s-to-p) share every receiver's
   * link: each takes its part of the rate and of the burst, or together
   * they overrun the receivers and repairs must make up the loss. */
  if (run->pace_share > 1) {
    m->ns_per_byte *= run->pace_share;
    burst /= run->pace_share;
  }
  /* The links' burst allowance (the model's burst, at most a window) may
   * go out at once. */
  m->burst0 = burst < (double)WINDOW_MAX * (double)(pl + MMP__DGRAM_HDR + extra)
                  ? burst
                  : (double)WINDOW_MAX * (double)(pl + MMP__DGRAM_HDR + extra);
  m->limit_ms = run->timeout_ms > 0 ? run->timeout_ms : f.mcast_timeout_ms;
  m->idle_ms = NACK_GAP_MS;
  m->nacker = WHO_NONE;
  for (i = 1; i <= 2; i++)
    if (2 * m->vr + i < m->p)
      m->child[m->nchild++] = (2 * m->vr + i + m->root) % m->p;
  m->acks_left = m->nchild;
  m->have_all = m->me == m->root || m->npk == 0;
  m->l.comm = comm;
  m->l.ctx = m->ctx;
  m->l.cb = on_dgram;
  m->l.arg = m;
  mmp__coll_req_init(creq, comm, m->len, d->root, m, mc_req_free);
  m->creq = creq;
  mmp__lock(e);
  m->seq = run->seq_given ? run->seq : comm->coll_seq++;
  m->l.seq = m->seq;
  m->rnd = 2463534242u ^ (uint32_t)(m->me * 7919) ^ m->seq;
  mmp__comm_hold_locked(comm);
  if (!run->part)
    mmp__coll_log_locked(comm, m->seq, &mmp__bcast_multicast_alg);
  for (i = 0; i < m->nchild; i++) {
    m->ack_rx[i].cb = ack_rx_done;
    m->ack_rx[i].cb_arg = m;
    rc = mmp__irecv_locked(e, comm, m->ctx, m->ack_in[i], ACK_LEN,
                           mmp__comm_world(comm, m->child[i]),
                           MMP__COLL_TAG(m->seq, PH_ACK), &m->ack_rx[i]);
    if (rc != 0) {
      set_err(m, rc);
      m->acks_left--;
    }
  }
  if (m->me == m->root && m->p == 1) {
    m->next = m->npk;
  } else if (m->me == m->root) {
    mmp__mcast_listen_locked(e, &m->l);
    if (m->npk > 0)
      mmp__deadline_start_locked(e, &m->tick, 0, root_tick, m);
  } else if (!m->have_all) {
    /* No datagram tells a receiver that the root died; the
     * point-to-point path does, through a receive nothing matches. */
    m->watch.cb = watch_done;
    m->watch.cb_arg = m;
    m->watching = 1;
    rc = mmp__irecv_locked(e, comm, m->ctx, NULL, 0,
                           mmp__comm_world(comm, m->root),
                           MMP__COLL_TAG(m->seq, PH_WATCH), &m->watch);
    if (rc != 0) {
      /* The root is lost already. */
      m->watching = 0;
      recv_done(m, rc);
    } else {
      mmp__mcast_listen_locked(e, &m->l);
    }
    if (!m->have_all) {
      mmp__deadline_start_locked(e, &m->tick, m->idle_ms, recv_tick, m);
      mmp__deadline_start_locked(e, &m->limit, m->limit_ms, recv_limit, m);
    }
  } else {
    complete_req(m, 0);
  }
  mc_drive(m);
  mmp__unlock(e);
  *out = creq;
  return 0;
}

/* ---- Cost ---------------------------------------------------------------- */

static double multicast_cost(const mmp__cost_in_t *in) {
  return mmp__mcast_price(in->p, in->m, 1, in->m, in->nm, in->mc);
}

const mmp__alg_t mmp__bcast_multicast_alg = {
    .name = "multicast",
    .summary = "UDP multicast with NACK repair, where it works",
    .flags = MMP__ALG_DYNAMIC | MMP__ALG_AUTO | MMP__ALG_TOP,
    .cost = multicast_cost,
    .prefer = 11,
    .start = multicast_start,
};
