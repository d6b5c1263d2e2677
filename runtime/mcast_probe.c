/* SPDX-License-Identifier: MIT */
/*
 * Whether multicast works on a communicator (mmp__mcast_usable): detected
 * collectively, once for the job, by every rank of the world in mmp_init
 * (mmp__mcast_world_up), so that every rank holds the same verdict; every
 * communicator made from another takes its parent's (runtime/comm.c), and
 * no collective's start ever checks: a non-blocking one may start on each
 * rank at a different point, and a check there would wait for ranks that
 * wait for it. Every rank opens the job's channel (mcast.c) and says
 * whether it could; once all have (a barrier over the point-to-point path,
 * so that no rank gives up on one that was merely late), each sends a
 * probe datagram every PROBE_MS, at least PROBE_MIN of them, until it has
 * heard every other rank or 500 ms have passed. The ranks then agree, over
 * the point-to-point path again, on the verdict: usable only if every rank
 * heard every other; the smallest payload any rank takes; the fraction of
 * probes lost, which AUTO prices multicast's repairs with
 * (docs/design/auto.md, "Multicast").
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

#define PH_GATHER 2 /* each rank's verdict to rank 0 */
#define PH_VERDICT 3
/* Ethernet's header, which a datagram adds on the wire beyond its
 * payload, our header, UDP and IP: what the kernel's shapers count. */
#define ETH_HDR 14u
/* Availability probes: one every PROBE_MS, at least PROBE_MIN from each
 * rank, so that the agreed loss rests on about PROBE_MIN (p - 1) probes
 * a rank, p of those in all. */
#define PROBE_MS 2u
#define PROBE_MIN 8

/* The result a verdict gives: 0 usable, MMP_EINVAL misconfigured,
 * MMP_ENOTSUP otherwise. */
static int verdict_rc(const mmp__mcast_verdict_t *v) {
  return v->state > 0 ? 0 : v->state == -2 ? MMP_EINVAL : MMP_ENOTSUP;
}

typedef struct probe_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  mmp__mcast_listener_t l;
  mmp__deadline_t tick;
  uint8_t *heard; /* by comm rank */
  uint32_t *got;  /* by comm rank: probes heard, then the highest index + 1 */
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

  if (h->kind != MMP__DG_PROBE || n < 8 || !mmp__comm_has(c, (int)h->src))
    return;
  r = c->local_of != NULL ? c->local_of[h->src] : (int)h->src;
  if (r < 0 || r >= c->size)
    return;
  /* The loss AUTO prices: probes missing below the highest index heard.
   * A replayed index counts once more at most, which only lowers it. */
  pr->got[2 * r]++;
  if (mmp__get_u32(payload + 4) < UINT32_MAX - 1 &&
      mmp__get_u32(payload + 4) + 1 > pr->got[2 * r + 1])
    pr->got[2 * r + 1] = mmp__get_u32(payload + 4) + 1;
  if (pr->heard[r])
    return;
  pr->heard[r] = 1;
  pr->nheard++;
  if (mmp__get_u32(payload) < pr->pmax)
    pr->pmax = mmp__get_u32(payload);
  mmp__engine_notify_locked(pr->e);
}

/* Loop context, lock held: a probe every PROBE_MS until told to stop. */
static void probe_tick(void *arg) {
  probe_t *pr = arg;
  mmp__dgram_hdr_t h;
  uint8_t pm[8];

  if (pr->stop)
    return;
  memset(&h, 0, sizeof(h));
  h.kind = MMP__DG_PROBE;
  h.ctx = pr->l.ctx;
  h.seq = pr->l.seq;
  mmp__put_u32(pm, (uint32_t)mmp__mcast_payload(pr->e));
  mmp__put_u32(pm + 4, (uint32_t)pr->sent);
  /* A probe the kernel refused was never on the network: its index is
   * used again, so that it does not count as lost. */
  if (mmp__mcast_send_locked(pr->e, &h, pm, sizeof(pm)) == 0)
    pr->sent++;
  mmp__engine_notify_locked(pr->e);
  mmp__deadline_start_locked(pr->e, &pr->tick, PROBE_MS, probe_tick, pr);
}

typedef struct probe_wait_s {
  probe_t *pr;
  uint64_t until;
} probe_wait_t;

static int probe_enough(void *arg) {
  probe_wait_t *w = arg;

  return (w->pr->nheard >= w->pr->comm->size - 1 && w->pr->sent >= PROBE_MIN) ||
         uv_hrtime() >= w->until;
}

/* What the ranks agree on after detection, as agree() combines it. */
enum { AG_OK, AG_PL, AG_LOST, AG_SENT, AG_BAD, AG_WORDS };

/* Rank 0's verdict from one rank's words: the AND of the first, the
 * least of the second, the sums of the others (saturating): probes lost
 * and sent, ranks whose MINIMP_MCAST_GROUP is of the wrong family. */
static void agree_fold(uint32_t *v, const uint8_t *in) {
  uint32_t x;
  int k;

  if (mmp__get_u32(in + 4 * AG_OK) == 0)
    v[AG_OK] = 0;
  if (mmp__get_u32(in + 4 * AG_PL) < v[AG_PL])
    v[AG_PL] = mmp__get_u32(in + 4 * AG_PL);
  for (k = AG_LOST; k < AG_WORDS; k++) {
    x = mmp__get_u32(in + 4 * k);
    v[k] = v[k] > UINT32_MAX - x ? UINT32_MAX : v[k] + x;
  }
}

/* Lock NOT held: a blocking exchange over the point-to-point path. Rank 0
 * gathers every rank's AG_WORDS words and sends back the verdict
 * (agree_fold), which every rank then holds in v. */
static int agree(mmp_comm_t *comm, uint32_t seq, uint32_t v[AG_WORDS]) {
  enum { N = 4 * AG_WORDS };
  mmp__engine_t *e = mmp__eng;
  uint8_t mine[N], *all = NULL;
  mmp_request_t r, *rs = NULL;
  int i, k, rc = 0;

  memset(&r, 0, sizeof(r)); /* no completion callback */
  for (k = 0; k < AG_WORDS; k++)
    mmp__put_u32(mine + 4 * k, v[k]);
  if (comm->rank != 0) {
    rc = mmp__isend(e, comm, comm->ctx + 1, mine, N, mmp__comm_world(comm, 0),
                    MMP__COLL_TAG(seq, PH_GATHER), MMP_SEND_EAGER, &r);
    if (rc == 0)
      rc = mmp__wait_internal(e, &r);
    memset(&r, 0, sizeof(r));
    if (rc == 0)
      rc = mmp__irecv(e, comm, comm->ctx + 1, mine, N, mmp__comm_world(comm, 0),
                      MMP__COLL_TAG(seq, PH_VERDICT), &r);
    if (rc == 0)
      rc = mmp__wait_internal(e, &r);
    for (k = 0; k < AG_WORDS; k++)
      v[k] = mmp__get_u32(mine + 4 * k);
    return rc;
  }
  all = calloc((size_t)comm->size, N);
  rs = calloc((size_t)comm->size, sizeof(*rs));
  if (all == NULL || rs == NULL) {
    free(all);
    free(rs);
    return MMP_ENOMEM;
  }
  for (i = 1; i < comm->size && rc == 0; i++)
    rc = mmp__irecv(e, comm, comm->ctx + 1, all + N * i, N,
                    mmp__comm_world(comm, i), MMP__COLL_TAG(seq, PH_GATHER),
                    &rs[i]);
  for (i = 1; i < comm->size; i++) {
    int w = mmp__wait_internal(e, &rs[i]);
    if (rc == 0 && w != 0)
      rc = w;
    agree_fold(v, all + N * i);
  }
  if (rc != 0)
    v[AG_OK] = 0;
  for (k = 0; k < AG_WORDS; k++)
    mmp__put_u32(mine + 4 * k, v[k]);
  memset(rs, 0, (size_t)comm->size * sizeof(*rs));
  for (i = 1; i < comm->size; i++) {
    int w =
        mmp__isend(e, comm, comm->ctx + 1, mine, N, mmp__comm_world(comm, i),
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

/* This rank's tally of probes lost and sent to it, from pr->got. */
static void probe_tally(const probe_t *pr, uint32_t v[AG_WORDS]) {
  int r;

  for (r = 0; r < pr->comm->size; r++)
    if (pr->got[2 * r + 1] > pr->got[2 * r]) {
      v[AG_LOST] += pr->got[2 * r + 1] - pr->got[2 * r];
      v[AG_SENT] += pr->got[2 * r + 1];
    } else {
      v[AG_SENT] += pr->got[2 * r];
    }
}

/* Lock NOT held: the probes, once every rank has the channel open. 1 if
 * this rank heard every other within 500 ms. */
static int probe_run(mmp_comm_t *comm, probe_t *pr, uint32_t seq) {
  mmp__engine_t *e = pr->e;
  probe_wait_t w;
  int ok;

  pr->l.comm = comm;
  pr->l.ctx = comm->ctx + 1;
  pr->l.seq = seq;
  pr->l.cb = probe_heard;
  pr->l.arg = pr;
  mmp__lock(e);
  pr->heard[comm->rank] = 1;
  mmp__mcast_listen_locked(e, &pr->l);
  mmp__deadline_start_locked(e, &pr->tick, 0, probe_tick, pr);
  mmp__unlock(e);
  w.pr = pr;
  w.until = uv_hrtime() + 500 * 1000000ull;
  mmp__progress_until(e, probe_enough, &w);
  mmp__lock(e);
  ok = pr->nheard >= comm->size - 1;
  mmp__unlock(e);
  return ok;
}

/* Some rank's MINIMP_MCAST_GROUP is of the wrong family: the error line
 * of a rank whose own group is right. */
static void log_misconfigured(const mmp_comm_t *comm) {
  MMP__LOG(MMP__LOG_ERROR,
           "multicast is misconfigured on %u of the %d ranks of this "
           "communicator: MINIMP_MCAST_GROUP is not of the family of "
           "their addresses (IPv4 or IPv6)",
           comm->mcast.bad, comm->size);
}

/* The verdict kept for the communicator, and its log line. */
static int usable_keep(mmp_comm_t *comm, const uint32_t v[AG_WORDS], int bad) {
  mmp__engine_t *e = mmp__eng;
  mmp__mcast_verdict_t *st = &comm->mcast;

  st->state = v[AG_BAD] > 0 ? -2 : v[AG_OK] && v[AG_PL] >= 64 ? 1 : -1;
  st->bad = v[AG_BAD];
  st->payload = v[AG_PL];
  st->loss = v[AG_SENT] > 0 ? (double)v[AG_LOST] / v[AG_SENT] : 0;
  st->extra = mmp__mcast_ip_udp(e) + ETH_HDR;
  /* A misconfigured rank has said why already (mmp__mcast_open). */
  if (st->state == -2 && !bad)
    log_misconfigured(comm);
  else if (st->state == -1)
    MMP__LOG(e->cfg.mcast == MMP__MCAST_ON ? MMP__LOG_WARN : MMP__LOG_DEBUG,
             "multicast is not usable on this communicator of %d ranks "
             "(some rank did not hear every other)",
             comm->size);
  else if (st->state > 0)
    MMP__LOG(MMP__LOG_DEBUG,
             "multicast on a communicator of %d ranks: %u-byte datagrams, "
             "%u of %u probes lost",
             comm->size, v[AG_PL], v[AG_LOST], v[AG_SENT]);
  return verdict_rc(st);
}

/* Lock NOT held. The collective check on `comm`, kept in comm->mcast:
 * 0, MMP_ENOTSUP, MMP_EINVAL (verdict_rc), or an error of the
 * point-to-point exchange (no verdict kept). */
static int usable_check(mmp_comm_t *comm) {
  mmp__engine_t *e = mmp__eng;
  probe_t pr;
  uint32_t v[AG_WORDS], seq, ok, bad;
  int rc;

  if (comm->size == 1 || !mmp__mcast_wanted(e)) {
    comm->mcast.state = -1;
    return MMP_ENOTSUP;
  }
  mmp__lock(e);
  seq = comm->coll_seq++;
  mmp__unlock(e);
  rc = mmp__mcast_open(e);
  ok = rc == 0;
  bad = rc == MMP_EINVAL;
  memset(&pr, 0, sizeof(pr));
  pr.e = e;
  pr.comm = comm;
  pr.pmax = (uint32_t)mmp__mcast_payload(e);
  /* Everyone starts listening at about the same time: a barrier over
   * TCP first, so that no rank gives up on one that was merely late. A
   * rank misconfigured says so here, and nobody probes. */
  memset(v, 0, sizeof(v));
  v[AG_OK] = ok;
  v[AG_PL] = pr.pmax;
  v[AG_BAD] = bad;
  rc = agree(comm, seq, v);
  /* Where a rank could not open the channel nobody probes: the verdict
   * is known, and the others would listen 500 ms for it in vain. */
  if (rc == 0 && ok && v[AG_OK] && v[AG_BAD] == 0) {
    pr.heard = calloc((size_t)comm->size, 1);
    pr.got = calloc(2 * (size_t)comm->size, sizeof(*pr.got));
    if (pr.heard == NULL || pr.got == NULL)
      rc = MMP_ENOMEM;
    else
      ok = probe_run(comm, &pr, seq);
  }
  /* A second sequence number keeps the verdict apart from the barrier. */
  memset(v, 0, sizeof(v));
  v[AG_OK] = ok;
  v[AG_PL] = pr.pmax;
  v[AG_BAD] = bad;
  if (rc == 0) {
    mmp__lock(e);
    seq = comm->coll_seq++;
    if (pr.got != NULL)
      probe_tally(&pr, v);
    mmp__unlock(e);
    rc = agree(comm, seq, v);
  }
  if (pr.heard != NULL) {
    mmp__lock(e);
    pr.stop = 1;
    mmp__deadline_stop_locked(e, &pr.tick);
    mmp__mcast_unlisten_locked(e, &pr.l);
    mmp__unlock(e);
  }
  free(pr.heard);
  free(pr.got);
  if (rc != 0)
    return rc;
  return usable_keep(comm, v, (int)bad);
}

int mmp__mcast_usable(const mmp_comm_t *comm, mmp__mcast_verdict_t *out) {
  *out = comm->mcast;
  return verdict_rc(&comm->mcast);
}

void mmp__mcast_explain(const mmp_comm_t *comm) {
  if (comm->mcast.state == -2 && mmp__mcast_group_ok(mmp__eng) == 0)
    log_misconfigured(comm);
}

void mmp__mcast_world_up(mmp__engine_t *e) {
  int rc = usable_check(&e->world);

  /* A rank that failed here (a rank lost, memory) cannot know what the
   * others found: unusable for it, which at worst fails a multicast in
   * bounded time (the job is failing anyway). */
  if (rc != 0 && rc != MMP_ENOTSUP && rc != MMP_EINVAL) {
    e->world.mcast.state = -1;
    MMP__LOG(MMP__LOG_WARN,
             "multicast could not be checked at init (%s): it is not used",
             mmp_strerror(rc));
  }
}
