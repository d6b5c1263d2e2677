/* SPDX-License-Identifier: MIT */
/*
 * The runtime's side of the multicast channel (transport/udp.c): opened at
 * the first use, it routes each authentic datagram to the collective that
 * listens for its (context, sequence number), keeps those that arrive
 * before their collective started, and drops replays: datagrams of
 * collectives this rank already finished, or too far ahead of the ones it
 * runs (docs/design/transport.md, "The UDP multicast channel"). A context
 * number alone does not name a communicator: the disjoint communicators of one
 * split share theirs, and each rank of the job hears every datagram. A
 * rank is in at most one communicator of a context, ever, so the pair
 * (context, sender) does: a datagram whose sender is no member of this
 * rank's communicator of that context is another communicator's, dropped
 * and counted, never delivered. It also sends a
 * datagram to one rank alone, at that rank's TCP host address and the
 * group's port, where that address and node are the rank's own (no other
 * rank of the job shares them: the kernel would hand the datagram to any
 * one of their sockets).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "transport/udp.h"

/* Collectives ahead of the oldest unfinished one whose datagrams are
 * kept; anything further ahead is no collective this rank can reach
 * soon, and is dropped as a replay or a forgery with a valid MAC. */
#define MCAST_WINDOW 256u
/* Early datagrams kept at most, bytes: a receiver that comes late to a
 * broadcast takes the rest from repairs. */
#define MCAST_EARLY_MAX (16u * 1024 * 1024)
/* Contexts of freed communicators remembered, so that their stragglers
 * (a repair another rank asked for, a late NACK) are dropped at once
 * rather than kept as early datagrams of a collective nobody will run. */
#define MCAST_GONE 64u

/* Where a context's collectives stand on this rank: the highest
 * sequence number finished, and the last MCAST_RECENT finished (not every
 * sequence number is a multicast collective, so finished ones need not be
 * contiguous). */
#define MCAST_RECENT 64u
typedef struct mcast_ctx_s {
  struct mcast_ctx_s *next;
  uint32_t ctx;
  uint32_t hi;
  uint32_t recent[MCAST_RECENT];
  unsigned nrecent, at;
  /* By world rank, a bit each: the members of this rank's communicator
   * of this context, from its first listener on (NULL before, or when
   * there was no memory: the listeners' own check then suffices). */
  uint8_t *members;
} mcast_ctx_t;

typedef struct early_s {
  mmp__list_t node;
  mmp__dgram_hdr_t h;
  size_t n;
  uint8_t payload[];
} early_t;

struct mmp__mcast_s {
  mmp__engine_t *e;
  mmp__udp_t *u;
  int state;          /* 0 unopened, 1 open, -1 unusable, -2 misconfigured */
  mmp__list_t listen; /* mmp__mcast_listener_t */
  mmp__list_t early;  /* early_t, oldest first */
  uint64_t early_bytes;
  mcast_ctx_t *ctxs;
  uint64_t stale;
  uint64_t early_dropped;
  /* By world rank: where a datagram reaches that rank alone;
   * sin_family 0 where none does (set at open, then read-only). */
  struct sockaddr_in *alone;
  uint64_t repair_unicast, repair_multicast;
  uint64_t duplicate;
  uint64_t other_comm;
  uint32_t gone[MCAST_GONE]; /* contexts of freed communicators, a ring */
  unsigned ngone, gone_at;
};

static int cmp_addr_rank(const void *a, const void *b) {
  const struct sockaddr_in *const *x = a, *const *y = b;
  uint32_t u = ntohl((*x)->sin_addr.s_addr), v = ntohl((*y)->sin_addr.s_addr);

  return u < v ? -1 : u > v;
}

/* Fills m->alone from the ranks' published addresses: an IPv4 address
 * that is not the wildcard and that no other rank has, of a rank alone on
 * its node (ranks of one host and network namespace share the port, even
 * at different addresses). */
static int alone_table(struct mmp__mcast_s *m) {
  mmp__engine_t *e = m->e;
  int n = e->cfg.size, i, j;
  struct sockaddr_in **by = calloc((size_t)n, sizeof(*by));
  int *per_node = calloc((size_t)n, sizeof(*per_node));

  m->alone = calloc((size_t)n, sizeof(*m->alone));
  if (by == NULL || per_node == NULL || m->alone == NULL) {
    free(by);
    free(per_node);
    return MMP_ENOMEM;
  }
  for (i = 0; i < n; i++)
    per_node[mmp__comm_node_of(&e->world, i)]++;
  for (i = 0; i < n; i++) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&e->peers[i].addr;
    if (e->peers[i].have_addr && a->sin_family == AF_INET &&
        a->sin_addr.s_addr != htonl(INADDR_ANY) &&
        per_node[mmp__comm_node_of(&e->world, i)] == 1)
      m->alone[i] = *a;
    by[i] = &m->alone[i];
  }
  free(per_node);
  qsort(by, (size_t)n, sizeof(*by), cmp_addr_rank);
  for (i = 0; i < n; i = j) {
    for (j = i + 1; j < n && cmp_addr_rank(&by[i], &by[j]) == 0; j++)
      ;
    if (j - i > 1)
      while (i < j)
        by[i++]->sin_family = 0;
  }
  free(by);
  return 0;
}

/* The record of `ctx` (made if `create`), moved to the front: every
 * datagram looks its context up, and the busy ones come first. */
static mcast_ctx_t *ctx_find(struct mmp__mcast_s *m, uint32_t ctx, int create) {
  mcast_ctx_t *c, **pp;

  for (pp = &m->ctxs; (c = *pp) != NULL; pp = &c->next)
    if (c->ctx == ctx) {
      *pp = c->next;
      c->next = m->ctxs;
      m->ctxs = c;
      return c;
    }
  if (!create || (c = calloc(1, sizeof(*c))) == NULL)
    return NULL;
  c->ctx = ctx;
  c->next = m->ctxs;
  m->ctxs = c;
  return c;
}

static int ctx_gone(const struct mmp__mcast_s *m, uint32_t ctx) {
  unsigned i;

  for (i = 0; i < m->ngone; i++)
    if (m->gone[i] == ctx)
      return 1;
  return 0;
}

/* 0 if world rank `src` is known to be no member of this rank's
 * communicator of context `ctx`: its datagrams are another one's. */
static int member(struct mmp__mcast_s *m, uint32_t ctx, uint32_t src) {
  mcast_ctx_t *c = ctx_find(m, ctx, 0);

  return c == NULL || c->members == NULL ||
         ((c->members[src / 8] >> (src % 8)) & 1);
}

/* Remembers the members of l's communicator for its context, so that
 * other communicators' datagrams go at once rather than wait as early
 * ones (best effort: the listeners check membership themselves). */
static void note_members(struct mmp__mcast_s *m,
                         const mmp__mcast_listener_t *l) {
  mcast_ctx_t *c = ctx_find(m, l->ctx, 1);
  int n = m->e->cfg.size, i;

  if (c == NULL || c->members != NULL ||
      (c->members = calloc(((size_t)n + 7) / 8, 1)) == NULL)
    return;
  for (i = 0; i < n; i++)
    if (mmp__comm_has(l->comm, i))
      c->members[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* 1 if (ctx, seq) may still run here: not finished, and within
 * MCAST_WINDOW of the highest finished. A context with nothing finished
 * takes anything. */
static int live(struct mmp__mcast_s *m, uint32_t ctx, uint32_t seq) {
  mcast_ctx_t *c = ctx_find(m, ctx, 0);
  int32_t d;
  unsigned i;

  if (c == NULL || c->nrecent == 0)
    return 1;
  d = (int32_t)(seq - c->hi);
  if (d < -(int32_t)MCAST_WINDOW || d > (int32_t)MCAST_WINDOW)
    return 0;
  for (i = 0; i < c->nrecent; i++)
    if (c->recent[i] == seq)
      return 0;
  /* Older than everything remembered: finished long ago, or never ours. */
  return !(c->nrecent == MCAST_RECENT && d < -(int32_t)MCAST_RECENT);
}

static void finish(struct mmp__mcast_s *m, uint32_t ctx, uint32_t seq) {
  mcast_ctx_t *c = ctx_find(m, ctx, 1);

  if (c == NULL)
    return;
  if (c->nrecent == 0 || (int32_t)(seq - c->hi) > 0)
    c->hi = seq;
  c->recent[c->at] = seq;
  c->at = (c->at + 1) % MCAST_RECENT;
  if (c->nrecent < MCAST_RECENT)
    c->nrecent++;
}

static mmp__mcast_listener_t *find_listener(struct mmp__mcast_s *m,
                                            uint32_t ctx, uint32_t seq) {
  mmp__list_t *it;

  mmp__list_foreach(it, &m->listen) {
    mmp__mcast_listener_t *l =
        mmp__container_of(it, mmp__mcast_listener_t, node);
    if (l->ctx == ctx && l->seq == seq)
      return l;
  }
  return NULL;
}

static void keep_early(struct mmp__mcast_s *m, const mmp__dgram_hdr_t *h,
                       const uint8_t *payload, size_t n) {
  early_t *x;

  /* The oldest go first: their collectives are the likeliest to have
   * been missed altogether. */
  while (m->early_bytes + n > MCAST_EARLY_MAX && !mmp__list_empty(&m->early)) {
    early_t *old = mmp__container_of(mmp__list_head(&m->early), early_t, node);
    mmp__list_remove(&old->node);
    m->early_bytes -= old->n;
    m->early_dropped++;
    free(old);
  }
  x = malloc(sizeof(*x) + n);
  if (x == NULL) {
    m->early_dropped++;
    return;
  }
  x->h = *h;
  x->n = n;
  memcpy(x->payload, payload, n);
  mmp__list_insert_tail(&m->early, &x->node);
  m->early_bytes += n;
}

/* Loop context: an authentic datagram of this job. */
static void on_datagram(void *arg, const mmp__dgram_hdr_t *h,
                        const uint8_t *payload, size_t n) {
  struct mmp__mcast_s *m = arg;
  mmp__engine_t *e = m->e;
  mmp__mcast_listener_t *l;

  /* Our own, looped back. */
  if ((int)h->src == e->cfg.rank)
    return;
  mmp__lock(e);
  /* A collective listening takes its datagrams, replays included (they
   * are idempotent); for the others, the window decides. Datagrams of
   * another communicator (of a context this rank has no communicator of,
   * or of the same context) never get that far. */
  if (h->src >= (uint32_t)e->cfg.size || ctx_gone(m, h->ctx)) {
    m->stale++;
  } else if (h->ctx == 0 || !mmp__comm_ctx_mine_locked(e, h->ctx - 1) ||
             !member(m, h->ctx, h->src)) {
    m->other_comm++;
  } else if ((l = find_listener(m, h->ctx, h->seq)) != NULL) {
    if (mmp__comm_has(l->comm, (int)h->src))
      l->cb(l->arg, h, payload, n);
    else
      m->other_comm++;
  } else if (!live(m, h->ctx, h->seq)) {
    m->stale++;
  } else {
    keep_early(m, h, payload, n);
  }
  mmp__unlock(e);
}

typedef struct open_s {
  mmp__engine_t *e;
  int rc;
} open_t;

/* The group (or range) to join in `family`: MINIMP_MCAST_GROUP's, or the
 * default range of that family. MMP_EINVAL, logged, when the variable
 * names a group of the other family: set by hand, it is a mistake to
 * report, not a reason to fall back in silence. */
static int group_of(const mmp__engine_t *e, int family, mmp__udp_config_t *uc) {
  const mmp__config_t *c = &e->cfg;
  char a[INET6_ADDRSTRLEN] = "";

  if (c->mcast_family != 0 && c->mcast_family != family) {
    if (c->mcast_family == AF_INET6) {
      inet_ntop(AF_INET6, c->mcast_group6, a, sizeof(a));
    } else {
      uint32_t be = htonl(c->mcast_group);
      inet_ntop(AF_INET, &be, a, sizeof(a));
    }
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_MCAST_GROUP=%s/%u is an %s group, but this job's "
             "addresses are %s (listening on %s): name an %s group or "
             "range, or unset it",
             a, c->mcast_family == AF_INET6 ? c->mcast_bits6 : c->mcast_bits,
             c->mcast_family == AF_INET6 ? "IPv6" : "IPv4",
             family == AF_INET6 ? "IPv6" : "IPv4", e->listen_name,
             family == AF_INET6 ? "IPv6" : "IPv4");
    return MMP_EINVAL;
  }
  uc->group.sa.sa_family = (sa_family_t)family;
  if (family == AF_INET6) {
    memcpy(&uc->group.v6.sin6_addr, c->mcast_group6, 16);
    uc->group.v6.sin6_port = htons((uint16_t)c->mcast_port);
    uc->group_bits = c->mcast_bits6;
  } else {
    uc->group.v4.sin_addr.s_addr = htonl(c->mcast_group);
    uc->group.v4.sin_port = htons((uint16_t)c->mcast_port);
    uc->group_bits = c->mcast_bits;
  }
  return 0;
}

/* Loop context, lock not held. */
static void open_task(void *arg) {
  open_t *o = arg;
  mmp__engine_t *e = o->e;
  struct mmp__mcast_s *m = e->mcast;
  struct sockaddr_storage la;
  mmp__udp_config_t uc;
  mmp__udp_callbacks_t cb;

  memset(&uc, 0, sizeof(uc));
  if (e->listen_name[0] == '\0' || mmp__addr_parse(e->listen_name, &la) != 0 ||
      (la.ss_family != AF_INET && la.ss_family != AF_INET6)) {
    MMP__LOG(MMP__LOG_DEBUG,
             "multicast: no IP address to join on (listening on '%s')",
             e->listen_name);
    o->rc = MMP_ENOTSUP;
    return;
  }
  if ((o->rc = group_of(e, la.ss_family, &uc)) != 0)
    return;
  memcpy(uc.key, e->cfg.key, sizeof(uc.key));
  uc.rank = e->cfg.rank;
  memcpy(&uc.iface, &la,
         la.ss_family == AF_INET6 ? sizeof(uc.iface.v6) : sizeof(uc.iface.v4));
  /* Hop limit 1: the datagrams never leave the subnet. */
  uc.ttl = 1;
  uc.sockbuf = e->cfg.mcast_sockbuf;
  cb.ctx = m;
  cb.recv = on_datagram;
  if (alone_table(m) != 0) {
    o->rc = MMP_ENOTSUP;
    return;
  }
  o->rc = mmp__udp_ops.create(&e->loop, &uc, &cb, &m->u);
  mmp__auth_wipe(uc.key, sizeof(uc.key));
  if (o->rc != 0)
    o->rc = MMP_ENOTSUP;
}

int mmp__mcast_wanted(const mmp__engine_t *e) {
  /* Datagrams are authenticated, not sealed: a job that asked for
   * sealing (MINIMP_ENCRYPT) keeps its data off them. */
  return e->cfg.mcast != MMP__MCAST_OFF && !e->cfg.singleton && !e->cfg.encrypt;
}

int mmp__mcast_group_ok(const mmp__engine_t *e) {
  struct sockaddr_storage la;
  mmp__udp_config_t uc;

  memset(&uc, 0, sizeof(uc));
  if (e->listen_name[0] == '\0' || mmp__addr_parse(e->listen_name, &la) != 0 ||
      (la.ss_family != AF_INET && la.ss_family != AF_INET6))
    return 0;
  return group_of(e, la.ss_family, &uc);
}

int mmp__mcast_open(mmp__engine_t *e) {
  struct mmp__mcast_s *m;
  open_t o;
  int state;

  MMP__ASSERT_UNLOCKED(e);
  if (!mmp__mcast_wanted(e))
    return MMP_ENOTSUP;
  mmp__lock(e);
  if (e->mcast == NULL) {
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
      mmp__unlock(e);
      return MMP_ENOMEM;
    }
    m->e = e;
    mmp__list_init(&m->listen);
    mmp__list_init(&m->early);
    e->mcast = m;
  }
  m = e->mcast;
  state = m->state;
  mmp__unlock(e);
  if (state != 0)
    return state > 0 ? 0 : state == -2 ? MMP_EINVAL : MMP_ENOTSUP;
  /* Collectives on one communicator are started in the same order by
   * one thread at a time, so two opens do not race on a communicator;
   * on different ones the loop runs them one after the other. */
  o.e = e;
  o.rc = 0;
  if (mmp__in_loop())
    return MMP_ENOTSUP;
  mmp__engine_call(e, open_task, &o);
  mmp__lock(e);
  if (m->state == 0)
    m->state = o.rc == 0 ? 1 : o.rc == MMP_EINVAL ? -2 : -1;
  state = m->state;
  mmp__unlock(e);
  return state > 0 ? 0 : state == -2 ? MMP_EINVAL : MMP_ENOTSUP;
}

size_t mmp__mcast_ip_udp(mmp__engine_t *e) {
  mmp__udp_stats_t st;

  if (e->mcast == NULL || e->mcast->u == NULL)
    return 0;
  mmp__udp_ops.stats(e->mcast->u, &st);
  return st.ip_udp;
}

size_t mmp__mcast_payload(mmp__engine_t *e) {
  return e->mcast != NULL && e->mcast->u != NULL
             ? mmp__udp_ops.payload_max(e->mcast->u)
             : 0;
}

void mmp__mcast_listen_locked(mmp__engine_t *e, mmp__mcast_listener_t *l) {
  struct mmp__mcast_s *m = e->mcast;
  mmp__list_t mine, *it, *tmp;

  MMP__ASSERT_LOCKED(e);
  assert(m != NULL && m->state > 0 && l->comm != NULL);
  mmp__list_insert_tail(&m->listen, &l->node);
  note_members(m, l);
  /* What came before it, in arrival order, taken off the shared list
   * first: the callback may unlisten, which prunes that list. What
   * another communicator of this context sent goes now. */
  mmp__list_init(&mine);
  mmp__list_foreach_safe(it, tmp, &m->early) {
    early_t *x = mmp__container_of(it, early_t, node);
    int ours;
    if (x->h.ctx != l->ctx)
      continue;
    ours = mmp__comm_has(l->comm, (int)x->h.src);
    if (ours && x->h.seq != l->seq)
      continue;
    mmp__list_remove(&x->node);
    m->early_bytes -= x->n;
    if (ours) {
      mmp__list_insert_tail(&mine, &x->node);
    } else {
      m->other_comm++;
      free(x);
    }
  }
  while (!mmp__list_empty(&mine)) {
    early_t *x = mmp__container_of(mmp__list_head(&mine), early_t, node);
    mmp__list_remove(&x->node);
    if (find_listener(m, l->ctx, l->seq) == l)
      l->cb(l->arg, &x->h, x->payload, x->n);
    free(x);
  }
}

void mmp__mcast_unlisten_locked(mmp__engine_t *e, mmp__mcast_listener_t *l) {
  struct mmp__mcast_s *m = e->mcast;
  mmp__list_t *it, *tmp;

  MMP__ASSERT_LOCKED(e);
  if (m == NULL || l->node.next == NULL)
    return;
  mmp__list_remove(&l->node);
  l->node.next = l->node.prev = NULL;
  finish(m, l->ctx, l->seq);
  /* Whatever else was kept for it is now a replay (only its context's
   * window moved). */
  mmp__list_foreach_safe(it, tmp, &m->early) {
    early_t *x = mmp__container_of(it, early_t, node);
    if (x->h.ctx == l->ctx && !live(m, x->h.ctx, x->h.seq)) {
      mmp__list_remove(&x->node);
      m->early_bytes -= x->n;
      free(x);
    }
  }
}

void mmp__mcast_comm_freed_locked(mmp__engine_t *e, uint32_t comm_ctx) {
  struct mmp__mcast_s *m = e->mcast;
  uint32_t ctx = comm_ctx + 1; /* its collectives' */
  mcast_ctx_t *c, **pp;
  mmp__list_t *it, *tmp;

  MMP__ASSERT_LOCKED(e);
  if (m == NULL)
    return;
  for (pp = &m->ctxs; (c = *pp) != NULL; pp = &c->next)
    if (c->ctx == ctx) {
      *pp = c->next;
      free(c->members);
      free(c);
      break;
    }
  mmp__list_foreach_safe(it, tmp, &m->early) {
    early_t *x = mmp__container_of(it, early_t, node);
    if (x->h.ctx == ctx) {
      mmp__list_remove(&x->node);
      m->early_bytes -= x->n;
      m->stale++;
      free(x);
    }
  }
  m->gone[m->gone_at] = ctx;
  m->gone_at = (m->gone_at + 1) % MCAST_GONE;
  if (m->ngone < MCAST_GONE)
    m->ngone++;
}

int mmp__mcast_send_locked(mmp__engine_t *e, const mmp__dgram_hdr_t *h,
                           const void *payload, size_t n) {
  MMP__ASSERT_LOCKED(e);
  MMP__ASSERT_LOOP(e);
  if (e->mcast == NULL || e->mcast->u == NULL)
    return MMP_ENOTSUP;
  return mmp__udp_ops.send(e->mcast->u, h, payload, n);
}

int mmp__mcast_send_to_locked(mmp__engine_t *e, int rank,
                              const mmp__dgram_hdr_t *h, const void *payload,
                              size_t n) {
  struct mmp__mcast_s *m = e->mcast;

  MMP__ASSERT_LOCKED(e);
  MMP__ASSERT_LOOP(e);
  if (m == NULL || m->u == NULL || m->alone == NULL || rank < 0 ||
      rank >= e->cfg.size || m->alone[rank].sin_family != AF_INET)
    return MMP_ENOTSUP;
  return mmp__udp_ops.send_to(m->u, (const struct sockaddr *)&m->alone[rank], h,
                              payload, n);
}

uint64_t mmp__mcast_unsent_locked(mmp__engine_t *e) {
  mmp__udp_stats_t st;

  MMP__ASSERT_LOCKED(e);
  if (e->mcast == NULL || e->mcast->u == NULL)
    return 0;
  mmp__udp_ops.stats(e->mcast->u, &st);
  return st.unsent;
}

void mmp__mcast_repaired_locked(mmp__engine_t *e, int unicast) {
  MMP__ASSERT_LOCKED(e);
  if (e->mcast == NULL)
    return;
  if (unicast)
    e->mcast->repair_unicast++;
  else
    e->mcast->repair_multicast++;
}

void mmp__mcast_duplicate_locked(mmp__engine_t *e) {
  MMP__ASSERT_LOCKED(e);
  if (e->mcast != NULL)
    e->mcast->duplicate++;
}

void mmp__mcast_not_mine_locked(mmp__engine_t *e, uint32_t comm_ctx) {
  struct mmp__mcast_s *m = e->mcast;
  mmp__list_t *it, *tmp;

  MMP__ASSERT_LOCKED(e);
  if (m == NULL)
    return;
  mmp__list_foreach_safe(it, tmp, &m->early) {
    early_t *x = mmp__container_of(it, early_t, node);
    if (x->h.ctx == comm_ctx + 1) {
      mmp__list_remove(&x->node);
      m->early_bytes -= x->n;
      m->other_comm++;
      free(x);
    }
  }
}

int mmp__mcast_stats(mmp__mcast_stats_t *out) {
  mmp__engine_t *e = mmp__eng;
  const mcast_ctx_t *c;

  memset(out, 0, sizeof(*out));
  if (e == NULL)
    return MMP_EINVAL;
  mmp__lock(e);
  if (e->mcast != NULL) {
    if (e->mcast->u != NULL)
      mmp__udp_ops.stats(e->mcast->u, &out->udp);
    out->stale = e->mcast->stale;
    out->early_dropped = e->mcast->early_dropped;
    out->repair_unicast = e->mcast->repair_unicast;
    out->repair_multicast = e->mcast->repair_multicast;
    out->duplicate = e->mcast->duplicate;
    out->other_comm = e->mcast->other_comm;
    out->early_bytes = e->mcast->early_bytes;
    for (c = e->mcast->ctxs; c != NULL; c = c->next)
      out->contexts++;
    out->open = e->mcast->state;
    if (e->mcast->u != NULL)
      mmp__udp_ops.group_name(e->mcast->u, out->group, sizeof(out->group));
  }
  mmp__unlock(e);
  return 0;
}

static void closed(void *arg) {
  *(int *)arg = 1;
}

void mmp__mcast_close(mmp__engine_t *e, int *done) {
  struct mmp__mcast_s *m = e->mcast;

  *done = 1;
  if (m == NULL)
    return;
  if (m->u != NULL) {
    *done = 0;
    mmp__udp_ops.destroy(m->u, closed, done);
    m->u = NULL;
  }
}

void mmp__mcast_free(mmp__engine_t *e) {
  struct mmp__mcast_s *m = e->mcast;

  if (m == NULL)
    return;
  /* Collectives still listening (never waited for) forget the channel. */
  while (!mmp__list_empty(&m->listen)) {
    mmp__list_t *n = mmp__list_head(&m->listen);
    mmp__list_remove(n);
    n->next = n->prev = NULL;
  }
  while (!mmp__list_empty(&m->early)) {
    early_t *x = mmp__container_of(mmp__list_head(&m->early), early_t, node);
    mmp__list_remove(&x->node);
    free(x);
  }
  while (m->ctxs != NULL) {
    mcast_ctx_t *c = m->ctxs;
    m->ctxs = c->next;
    free(c->members);
    free(c);
  }
  free(m->alone);
  free(m);
  e->mcast = NULL;
}
