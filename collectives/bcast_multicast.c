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
 * missing piece cancels its own for that round. The root re-multicasts
 * what was asked for, once per round however many asked.
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
 * Availability is detected collectively at the first use on a
 * communicator (mmp__mcast_usable); where it fails, asking for this
 * algorithm returns MMP_ENOTSUP on every rank.
 *
 * Cost: alpha + m beta at the root and at each receiver, flat in p, plus
 * repairs and the ACK tree's ceil(log2 p) alpha. Selected: only when
 * asked for (AUTO does not price it yet).
 */
#include <stdlib.h>
#include <string.h>

#include "collectives.h"

#define PH_ACK 1
#define PH_GATHER 2 /* detection: each rank's verdict to rank 0 */
#define PH_VERDICT 3
#define PH_WATCH 4 /* a receive from the root that nothing ever matches */

/* The pace where there is no model: a communicator of one rank, which
 * sends nothing. */
#define DEFAULT_BETA 1e-7
/* Receivers look for a quiet stream this often, plus up to as much again
 * at random, so that their NACKs spread out. */
#define NACK_GAP_MS 2u
/* ... backing off to this while they have heard nothing at all (the root
 * may simply not have started). */
#define NACK_IDLE_MS 64u
#define WINDOW_MAX 256u
/* Bytes a datagram adds on the wire beyond its payload and our header:
 * UDP 8, IPv4 20, Ethernet 14 (what the kernel's shapers count). */
#define WIRE_EXTRA 42u
/* The pace over the model's rate (see multicast_start). */
#define PACE_GAIN 1.05
#define ACK_LEN 4

typedef struct mc_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  uint8_t *buf;  /* the root sends from it; receivers fill it */
  uint8_t *copy; /* eager root: its own copy, or NULL */
  size_t len;
  int root, me, p, vr;
  uint32_t ctx, seq;
  size_t pl;          /* payload bytes a datagram */
  uint32_t npk;       /* datagrams */
  uint8_t *bits;      /* receiver: held; root: asked for again */
  uint32_t nhave;     /* receiver */
  uint32_t next;      /* root: next datagram of the first pass */
  uint32_t nwant;     /* root: repairs asked for */
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

static void complete_req(mc_t *m, int err) {
  if (m->creq_done)
    return;
  m->creq_done = 1;
  mmp__req_complete_locked(m->e, m->creq, err);
}

static void mc_free(mc_t *m) {
  mmp__mcast_unlisten_locked(m->e, &m->l);
  mmp__deadline_stop_locked(m->e, &m->tick);
  mmp__deadline_stop_locked(m->e, &m->limit);
  mmp__comm_release_locked(m->comm);
  free(m->copy);
  free(m->bits);
  free(m);
}

/* ---- The root ----------------------------------------------------------- */

static int send_piece(mc_t *m, uint32_t i) {
  const uint8_t *src = m->copy != NULL ? m->copy : m->buf;
  mmp__dgram_hdr_t h;

  memset(&h, 0, sizeof(h));
  h.kind = MMP__DG_DATA;
  h.ctx = m->ctx;
  h.seq = m->seq;
  h.offset = (uint64_t)i * m->pl;
  h.total = m->len;
  return mmp__mcast_send_locked(m->e, &h, src + h.offset, piece_len(m, i));
}

static double wire_bytes(const mc_t *m, uint32_t i) {
  return (double)(piece_len(m, i) + MMP__DGRAM_HDR + WIRE_EXTRA);
}

/* The wire bytes the pace allows now: what the elapsed time since t0
 * lets through, less what went out, at most WINDOW_MAX full datagrams
 * (a credit unused while waiting is forfeited beyond that). */
static double root_credit(mc_t *m) {
  uint64_t now = uv_hrtime();
  double cap =
      (double)WINDOW_MAX * (double)(m->pl + MMP__DGRAM_HDR + WIRE_EXTRA);
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

/* Loop context, lock held: what the pace allows now, repairs first. At
 * least one datagram goes out each tick, so a pace slower than one
 * datagram a millisecond still moves. */
static void root_tick(void *arg) {
  mc_t *m = arg;
  double credit = root_credit(m);
  unsigned sent = 0;
  uint32_t i;
  int rc = 0;

  for (i = 0; m->nwant > 0 && i < m->npk && (sent == 0 || credit > 0); i++) {
    if (!bit_get(m->bits, i))
      continue;
    if ((rc = send_piece(m, i)) != 0)
      break;
    bit_clear(m->bits, i);
    m->nwant--;
    sent++;
    credit -= wire_bytes(m, i);
    m->sent_bytes += wire_bytes(m, i);
  }
  while (rc == 0 && m->next < m->npk && (sent == 0 || credit > 0)) {
    if ((rc = send_piece(m, m->next)) != 0)
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

/* A receiver's NACK: the bits from h->offset on, h->aux of them. */
static void root_nack(mc_t *m, const mmp__dgram_hdr_t *h,
                      const uint8_t *payload, size_t n) {
  uint32_t first = (uint32_t)h->offset, k;

  if (h->offset >= m->npk || h->aux > n * 8 || h->aux > m->npk - first)
    return;
  for (k = 0; k < h->aux; k++) {
    uint32_t i = first + k;
    /* Not sent yet: the first pass brings it. */
    if (bit_get(payload, k) && i < m->next && !bit_get(m->bits, i)) {
      bit_set(m->bits, i);
      m->nwant++;
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
  if (n != piece_len(m, i) || bit_get(m->bits, i))
    return;
  memcpy(m->buf + h->offset, payload, n);
  bit_set(m->bits, i);
  m->nhave++;
  m->heard++;
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

  if (m->have_all)
    return;
  if (m->heard > 0) {
    /* The stream flows: no gap to report yet. */
    m->heard = 0;
    m->idle_ms = NACK_GAP_MS;
  } else if (m->overheard) {
    m->overheard = 0;
  } else {
    first = first_gap(m);
    nbits = m->npk - first;
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
    h.ctx = m->ctx;
    h.seq = m->seq;
    h.offset = first;
    h.aux = nbits;
    h.total = m->len;
    (void)mmp__mcast_send_locked(m->e, &h, map, (nbits + 7) / 8);
    if (m->nhave == 0 && m->idle_ms < NACK_IDLE_MS)
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

/* ---- Availability -------------------------------------------------------- */

typedef struct probe_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  mmp__mcast_listener_t l;
  mmp__deadline_t tick;
  uint8_t *heard; /* by comm rank */
  int nheard;
  int sent;
  int stop;
  uint32_t pmax; /* smallest payload_max heard, ours included */
} probe_t;

static void probe_heard(void *arg, const mmp__dgram_hdr_t *h,
                        const uint8_t *payload, size_t n) {
  probe_t *pr = arg;
  const mmp_comm_t *c = pr->comm;
  int r;

  if (h->kind != MMP__DG_PROBE || n < 4 || !mmp__comm_has(c, (int)h->src))
    return;
  r = c->local_of != NULL ? c->local_of[h->src] : (int)h->src;
  if (r < 0 || r >= c->size || pr->heard[r])
    return;
  pr->heard[r] = 1;
  pr->nheard++;
  if (mmp__get_u32(payload) < pr->pmax)
    pr->pmax = mmp__get_u32(payload);
  mmp__engine_notify_locked(pr->e);
}

/* Loop context, lock held: a probe every 10 ms until told to stop. */
static void probe_tick(void *arg) {
  probe_t *pr = arg;
  mmp__dgram_hdr_t h;
  uint8_t pm[4];

  if (pr->stop)
    return;
  memset(&h, 0, sizeof(h));
  h.kind = MMP__DG_PROBE;
  h.ctx = pr->l.ctx;
  h.seq = pr->l.seq;
  mmp__put_u32(pm, (uint32_t)mmp__mcast_payload(pr->e));
  if (mmp__mcast_send_locked(pr->e, &h, pm, sizeof(pm)) == 0)
    pr->sent++;
  mmp__engine_notify_locked(pr->e);
  mmp__deadline_start_locked(pr->e, &pr->tick, 10, probe_tick, pr);
}

typedef struct probe_wait_s {
  probe_t *pr;
  uint64_t until;
} probe_wait_t;

static int probe_enough(void *arg) {
  probe_wait_t *w = arg;

  return (w->pr->nheard >= w->pr->comm->size - 1 && w->pr->sent >= 2) ||
         uv_hrtime() >= w->until;
}

/* Lock NOT held: a blocking exchange over the point-to-point path. Rank 0
 * gathers every rank's 8 bytes and sends back the verdict: the AND of the
 * first words and the least of the second. */
static int agree(mmp_comm_t *comm, uint32_t seq, uint32_t *ok, uint32_t *pl) {
  mmp__engine_t *e = mmp__eng;
  uint8_t mine[8], *all = NULL;
  mmp_request_t r, *rs = NULL;
  int i, rc = 0;

  memset(&r, 0, sizeof(r)); /* no completion callback */
  mmp__put_u32(mine, *ok);
  mmp__put_u32(mine + 4, *pl);
  if (comm->rank != 0) {
    rc = mmp__isend(e, comm, comm->ctx + 1, mine, 8, mmp__comm_world(comm, 0),
                    MMP__COLL_TAG(seq, PH_GATHER), MMP_SEND_EAGER, &r);
    if (rc == 0)
      rc = mmp__wait_internal(e, &r);
    memset(&r, 0, sizeof(r));
    if (rc == 0)
      rc = mmp__irecv(e, comm, comm->ctx + 1, mine, 8, mmp__comm_world(comm, 0),
                      MMP__COLL_TAG(seq, PH_VERDICT), &r);
    if (rc == 0)
      rc = mmp__wait_internal(e, &r);
    *ok = mmp__get_u32(mine);
    *pl = mmp__get_u32(mine + 4);
    return rc;
  }
  all = calloc((size_t)comm->size, 8);
  rs = calloc((size_t)comm->size, sizeof(*rs));
  if (all == NULL || rs == NULL) {
    free(all);
    free(rs);
    return MMP_ENOMEM;
  }
  for (i = 1; i < comm->size && rc == 0; i++)
    rc = mmp__irecv(e, comm, comm->ctx + 1, all + 8 * i, 8,
                    mmp__comm_world(comm, i), MMP__COLL_TAG(seq, PH_GATHER),
                    &rs[i]);
  for (i = 1; i < comm->size; i++) {
    int w = mmp__wait_internal(e, &rs[i]);
    if (rc == 0 && w != 0)
      rc = w;
    if (mmp__get_u32(all + 8 * i) == 0)
      *ok = 0;
    if (mmp__get_u32(all + 8 * i + 4) < *pl)
      *pl = mmp__get_u32(all + 8 * i + 4);
  }
  mmp__put_u32(mine, rc == 0 ? *ok : 0);
  mmp__put_u32(mine + 4, *pl);
  memset(rs, 0, (size_t)comm->size * sizeof(*rs));
  for (i = 1; i < comm->size; i++) {
    int w =
        mmp__isend(e, comm, comm->ctx + 1, mine, 8, mmp__comm_world(comm, i),
                   MMP__COLL_TAG(seq, PH_VERDICT), MMP_SEND_EAGER, &rs[i]);
    if (w == 0)
      w = mmp__wait_internal(e, &rs[i]);
    if (rc == 0)
      rc = w;
  }
  free(all);
  free(rs);
  return rc;
}

int mmp__mcast_usable(mmp_comm_t *comm, size_t *payload) {
  mmp__coll_state_t *st = mmp__coll_state(comm);
  mmp__engine_t *e = mmp__eng;
  probe_t pr;
  probe_wait_t w;
  uint32_t ok, pl, seq, dummy = 0;
  int rc;

  if (st == NULL)
    return MMP_ENOMEM;
  if (st->mcast != 0) {
    *payload = st->mcast_payload;
    return st->mcast > 0 ? 0 : MMP_ENOTSUP;
  }
  if (comm->size == 1) {
    st->mcast = -1;
    return MMP_ENOTSUP;
  }
  mmp__lock(e);
  seq = comm->coll_seq++;
  mmp__unlock(e);
  ok = mmp__mcast_open(e) == 0;
  memset(&pr, 0, sizeof(pr));
  pr.e = e;
  pr.comm = comm;
  pr.pmax = (uint32_t)mmp__mcast_payload(e);
  /* Everyone starts listening at about the same time: a barrier over
   * TCP first, so that no rank gives up on one that was merely late. */
  pl = pr.pmax;
  rc = agree(comm, seq, &dummy, &pl);
  if (rc == 0 && ok) {
    pr.heard = calloc((size_t)comm->size, 1);
    if (pr.heard == NULL)
      rc = MMP_ENOMEM;
  }
  if (rc == 0 && ok) {
    pr.l.ctx = comm->ctx + 1;
    pr.l.seq = seq;
    pr.l.cb = probe_heard;
    pr.l.arg = &pr;
    mmp__lock(e);
    pr.heard[comm->rank] = 1;
    mmp__mcast_listen_locked(e, &pr.l);
    mmp__deadline_start_locked(e, &pr.tick, 0, probe_tick, &pr);
    mmp__unlock(e);
    w.pr = &pr;
    w.until = uv_hrtime() + 500 * 1000000ull;
    mmp__progress_until(e, probe_enough, &w);
    mmp__lock(e);
    ok = pr.nheard >= comm->size - 1;
    mmp__unlock(e);
  }
  /* A second sequence number keeps the verdict apart from the barrier. */
  pl = pr.pmax;
  if (rc == 0) {
    mmp__lock(e);
    seq = comm->coll_seq++;
    mmp__unlock(e);
    rc = agree(comm, seq, &ok, &pl);
  }
  if (pr.heard != NULL) {
    mmp__lock(e);
    pr.stop = 1;
    mmp__deadline_stop_locked(e, &pr.tick);
    mmp__mcast_unlisten_locked(e, &pr.l);
    mmp__unlock(e);
    free(pr.heard);
  }
  if (rc != 0)
    return rc;
  st->mcast = ok && pl >= 64 ? 1 : -1;
  st->mcast_payload = pl;
  *payload = pl;
  if (st->mcast < 0)
    MMP__LOG(e->cfg.mcast == MMP__MCAST_ON ? MMP__LOG_WARN : MMP__LOG_DEBUG,
             "multicast is not usable on this communicator of %d ranks "
             "(some rank did not hear every other)",
             comm->size);
  return st->mcast > 0 ? 0 : MMP_ENOTSUP;
}

/* ---- Start --------------------------------------------------------------- */

static int multicast_start(const mmp__bcast_run_t *run, mmp_request_t **out) {
  mmp__engine_t *e = run->e;
  mmp_comm_t *comm = run->comm;
  const mmp__bcast_desc_t *d = run->d;
  mmp_request_t *creq;
  double beta = DEFAULT_BETA, burst = 0;
  mmp_netmodel_t nm;
  size_t pl;
  mc_t *m;
  int rc, i;

  *out = NULL;
  MMP__ASSERT_UNLOCKED(e);
  /* A broadcast to nobody needs no channel: it completes at once. */
  if (comm->size == 1)
    pl = 1024;
  else if ((rc = mmp__mcast_usable(comm, &pl)) != 0)
    return rc;
  /* The pace comes from the model, measured now (collectively, once per
   * communicator) if nobody has yet. */
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
  m->len = (size_t)d->len;
  m->root = d->root;
  m->me = comm->rank;
  m->p = comm->size;
  m->vr = (m->me - m->root + m->p) % m->p;
  m->ctx = comm->ctx + 1;
  m->pl = pl;
  m->npk = (uint32_t)((m->len + pl - 1) / pl);
  m->eager = run->mode == MMP_SEND_EAGER ||
             (run->mode == MMP_SEND_AUTO && m->len <= run->cfg->eager_limit);
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
  /* The model's beta is per byte of TCP payload, which carries about
   * 4.5% of headers more on the wire at a 1500-byte MTU; PACE_GAIN turns
   * it into about the link's rate in wire bytes, a little over rather
   * than under: an overshoot waits in the root's interface queue, an
   * undershoot leaves the link idle. */
  m->ns_per_byte = (beta > 0 ? beta : DEFAULT_BETA) * 1e9 / PACE_GAIN;
  /* Roots sending at once (a multicast s-to-p) share every receiver's
   * link: each takes its part of the rate and of the burst, or together
   * they overrun the receivers and repairs must make up the loss. */
  if (run->pace_share > 1) {
    m->ns_per_byte *= run->pace_share;
    burst /= run->pace_share;
  }
  /* The links' burst allowance (the model's burst, at most a window) may
   * go out at once. */
  m->burst0 =
      burst < (double)WINDOW_MAX * (double)(pl + MMP__DGRAM_HDR + WIRE_EXTRA)
          ? burst
          : (double)WINDOW_MAX * (double)(pl + MMP__DGRAM_HDR + WIRE_EXTRA);
  m->limit_ms =
      run->timeout_ms > 0 ? run->timeout_ms : run->cfg->mcast_timeout_ms;
  m->idle_ms = NACK_GAP_MS;
  for (i = 1; i <= 2; i++)
    if (2 * m->vr + i < m->p)
      m->child[m->nchild++] = (2 * m->vr + i + m->root) % m->p;
  m->acks_left = m->nchild;
  m->have_all = m->me == m->root || m->npk == 0;
  m->l.ctx = m->ctx;
  m->l.cb = on_dgram;
  m->l.arg = m;
  mmp__coll_req_init(creq, comm, m->len, d->root, m, mc_req_free);
  m->creq = creq;
  mmp__lock(e);
  m->seq = comm->coll_seq++;
  m->l.seq = m->seq;
  m->rnd = 2463534242u ^ (uint32_t)(m->me * 7919) ^ m->seq;
  mmp__comm_hold_locked(comm);
  mmp__coll_log_locked(comm, m->seq, MMP_BCAST_MULTICAST);
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

const mmp__bcast_alg_t mmp__bcast_multicast_alg = {
    .id = MMP_BCAST_MULTICAST,
    .name = "multicast",
    .flags = MMP__BCAST_F_DYNAMIC,
    .start = multicast_start,
};
