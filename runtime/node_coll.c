/* SPDX-License-Identifier: MIT */
/*
 * Node segments: one shared mapping per communicator for its ranks on one
 * host, through which the shm rows of the collectives copy data and
 * signal each other with flags instead of sending messages (coll_api.h
 * has the contract, docs/design/transport.md "Node segments" the layout
 * and its bound, docs/algorithms.md the algorithms).
 *
 * The first call makes it: the node's lowest rank creates it through
 * transport/ (shm_coll.c), sends its name to the others over the
 * point-to-point path, each maps and checks it and answers, the creator
 * removes the name and tells everyone whether all of them have it. A
 * segment that some rank could not map is given up on every rank alike.
 *
 * Flags are sequence numbers (slot numbers, coll_api.h), never booleans:
 * they only go up, so a flag is never reset and a wait never confuses
 * this call's signal with the last one's. Nothing read from the segment
 * is trusted for an address: the layout is computed from the rank count
 * alone, every flag read is checked against the last value seen (it
 * never goes down) and against how far any rank can have got, and the
 * header is checked at every call. A wait ends in an error when the
 * communicator loses a member (the runtime's watch of its peers, driven
 * from here when no other thread drives it), at the call's deadline (the
 * runtime's deadlines), or when another rank's failed call left its
 * error in the header.
 */
#include "internal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/transport.h"

#define NODE_MAGIC 0x45444f4e5f504d4dull /* "MMP_NODE" */
#define NODE_VERSION 1u
#define NODE_HDR 4096u /* the header's page */
#define NODE_LINE 128u /* one rank's flags: their own cache lines */
/* Polls between looks at the clock, the header and the runtime. */
#define NODE_CHECK_EVERY 64u
/* Nanoseconds between looks at the runtime (its loop and its losses). */
#define NODE_RUNTIME_NS 200000u

typedef struct node_hdr_s {
  uint64_t magic;
  uint32_t version;
  uint32_t n;
  uint64_t chunk;
  uint64_t slots;
  _Atomic int64_t abort; /* 0, or the error of a failed call */
} node_hdr_t;

_Static_assert(sizeof(node_hdr_t) <= NODE_HDR, "node header");
_Static_assert(MMP__NODE_NFLAGS * sizeof(uint64_t) <= NODE_LINE, "flags");

/* What each rank says of each call it begins, in a ring of these per
 * rank: the call's number, then its signature (collective and
 * arguments) and its slot count. */
typedef struct node_sig_s {
  _Atomic uint64_t epoch;
  uint64_t sig;
  uint64_t nslots;
  uint64_t pad;
} node_sig_t;

/* The name message: the creator's answer to "where is it". */
typedef struct node_name_msg_s {
  char name[MMP__SHM_MAP_NAME]; /* empty: the creator failed */
  uint64_t bytes;
} node_name_msg_t;

struct mmp__node_s {
  mmp_comm_t *comm;
  int state; /* 1 mapped, -1 given up (MMP_ENOTSUP) */
  int n, me;
  int *rank; /* index -> comm rank */
  mmp__shm_map_t map;
  node_hdr_t *hdr;
  uint8_t *flags;   /* n lines */
  node_sig_t *sigs; /* n rings of nsig */
  uint8_t *data;    /* slots * chunk bytes */
  uint64_t slots;
  uint64_t nsig;
  uint64_t base;     /* the next call's first slot number */
  uint64_t nslots;   /* the current call's */
  uint64_t epoch;    /* the current call's number, from 1 */
  uint64_t sig;      /* and its signature */
  uint64_t *checked; /* n: the last call whose signature each was checked */
  int mismatch;      /* 1: the call's signatures differ but the ranks agree
                        on its slots, so the next call can go on */
  uint64_t *seen;    /* n * MMP__NODE_NFLAGS: the last value read */
  int err;           /* the first failed call's error, for every later one */
  mmp__deadline_t tmo;
  int armed; /* tmo was started for this call */
  _Atomic int expired;
  int cpus_shared;
  uint64_t polls;
};

/* Entries of a rank's signature ring: more than the calls a rank can be
 * ahead of another (each takes a slot, and no rank gets a whole ring of
 * slots ahead of the slowest). */
static uint64_t node_nsig(int n) {
  return (uint64_t)MMP__NODE_DEPTH * (uint64_t)(n + 1) + 2;
}

static size_t node_bytes(int n) {
  return NODE_HDR + (size_t)n * NODE_LINE +
         (size_t)n * (size_t)node_nsig(n) * sizeof(node_sig_t) +
         (size_t)MMP__NODE_DEPTH * (size_t)(n + 1) * MMP__NODE_CHUNK;
}

static _Atomic uint64_t *node_flag(const mmp__node_t *nd, int who, int f) {
  return (_Atomic uint64_t *)(void *)(nd->flags + (size_t)who * NODE_LINE +
                                      (size_t)f * sizeof(uint64_t));
}

/* Only what every rank sees alike: MINIMP_SHM is each rank's own, so it
 * is a vote at the segment's making, never a reason to skip it. */
int mmp__node_usable(const mmp_comm_t *comm) {
  return mmp__eng != NULL && comm->size <= MMP__NODE_MAX_RANKS &&
         mmp__comm_node_count(comm) == 1 &&
         (comm->node == NULL || comm->node->state > 0);
}

/* ---- Making the segment ------------------------------------------------ */

/* One message of the set-up, waited for as a collective's are: a lost
 * member of the communicator ends it, and so does the call's deadline
 * (nd->expired). The bytes go through a copy of the runtime's, which a
 * transfer still under way when the wait ends keeps. */
static int node_xfer(mmp__engine_t *e, mmp__node_t *nd, int send, void *buf,
                     size_t len, int peer, int tag) {
  mmp_comm_t *comm = nd->comm;
  mmp_request_t *r = calloc(1, sizeof(*r));
  void *own = malloc(len);
  int rc;

  if (r == NULL || own == NULL) {
    free(r);
    free(own);
    return MMP_ENOMEM;
  }
  if (send)
    memcpy(own, buf, len);
  peer = mmp__comm_world(comm, peer);
  rc = send ? mmp__isend(e, comm, comm->ctx + 1, own, len, peer, tag,
                         MMP_SEND_EAGER, r)
            : mmp__irecv(e, comm, comm->ctx + 1, own, len, peer, tag, r);
  if (rc == 0)
    rc = mmp__wait_watch_until(e, comm, &r, &own, &nd->expired);
  if (rc == 0 && !send && r->status.bytes != len)
    rc = MMP_EPROTO;
  if (rc == 0 && !send)
    memcpy(buf, own, len);
  free(r);
  free(own);
  return rc;
}

/* Lays out the mapped segment's pointers from n alone. */
static void node_layout(mmp__node_t *nd) {
  uint8_t *b = nd->map.base;

  nd->hdr = (node_hdr_t *)(void *)b;
  nd->flags = b + NODE_HDR;
  nd->nsig = node_nsig(nd->n);
  nd->sigs = (node_sig_t *)(void *)(nd->flags + (size_t)nd->n * NODE_LINE);
  nd->data = (uint8_t *)(nd->sigs + (size_t)nd->n * nd->nsig);
  nd->slots = (uint64_t)MMP__NODE_DEPTH * (uint64_t)(nd->n + 1);
}

/* What each rank answers, and the verdict: the segment is used only
 * where every rank of the node says NODE_MAPPED. */
enum { NODE_FAILED = 0, NODE_MAPPED = 1, NODE_SHM_OFF = 2 };

/* The verdict from one answer: the first rank that says no decides it. */
static int32_t node_vote(int32_t verdict, int32_t got) {
  return verdict != NODE_MAPPED ? verdict
         : got == NODE_SHM_OFF  ? NODE_SHM_OFF
         : got == NODE_MAPPED   ? NODE_MAPPED
                                : NODE_FAILED;
}

/* The creator: makes, names, hands out, collects the answers, removes the
 * name, gives the verdict. A creator with shared memory off makes
 * nothing and names nothing, and the verdict says so. */
static int node_create(mmp__engine_t *e, mmp__node_t *nd, int seq,
                       int32_t *verdict) {
  node_name_msg_t msg;
  char tag[32];
  int i, rc;

  memset(&msg, 0, sizeof(msg));
  snprintf(tag, sizeof(tag), "%x-%x", (unsigned)getpid(),
           (unsigned)nd->comm->ctx);
  msg.bytes = node_bytes(nd->n);
  *verdict = NODE_MAPPED;
  if (e->cfg.shm == MMP__SHM_OFF) {
    msg.name[0] = '\0';
    *verdict = NODE_SHM_OFF;
  } else if (mmp__shm_map_create(tag, msg.bytes, &nd->map, msg.name) != 0) {
    msg.name[0] = '\0';
    *verdict = NODE_FAILED;
  } else {
    node_layout(nd);
    nd->hdr->magic = NODE_MAGIC;
    nd->hdr->version = NODE_VERSION;
    nd->hdr->n = (uint32_t)nd->n;
    nd->hdr->chunk = MMP__NODE_CHUNK;
    nd->hdr->slots = nd->slots;
  }
  for (i = 1; i < nd->n; i++)
    if ((rc = node_xfer(e, nd, 1, &msg, sizeof(msg), nd->rank[i],
                        MMP__COLL_TAG(seq, 1))) != 0)
      goto out;
  for (i = 1; i < nd->n; i++) {
    int32_t got = NODE_FAILED;
    if ((rc = node_xfer(e, nd, 0, &got, sizeof(got), nd->rank[i],
                        MMP__COLL_TAG(seq, 2))) != 0)
      goto out;
    *verdict = node_vote(*verdict, got);
  }
  if (msg.name[0] != '\0')
    mmp__shm_map_unlink(msg.name);
  for (i = 1; i < nd->n; i++)
    if ((rc = node_xfer(e, nd, 1, verdict, sizeof(*verdict), nd->rank[i],
                        MMP__COLL_TAG(seq, 3))) != 0)
      return rc;
  return *verdict == NODE_MAPPED ? 0 : MMP_ENOTSUP;
out:
  if (msg.name[0] != '\0')
    mmp__shm_map_unlink(msg.name);
  return rc;
}

/* Every other rank: maps what the creator names, if it checks out and
 * shared memory is on here, and answers; the creator's verdict holds. */
static int node_join(mmp__engine_t *e, mmp__node_t *nd, int seq,
                     int32_t *verdict) {
  node_name_msg_t msg;
  int32_t got = NODE_FAILED;
  int rc, leader = nd->rank[0];

  *verdict = NODE_FAILED;
  if ((rc = node_xfer(e, nd, 0, &msg, sizeof(msg), leader,
                      MMP__COLL_TAG(seq, 1))) != 0)
    return rc;
  msg.name[MMP__SHM_MAP_NAME - 1] = '\0';
  if (e->cfg.shm == MMP__SHM_OFF)
    got = NODE_SHM_OFF;
  else if (msg.name[0] != '\0' && msg.bytes == node_bytes(nd->n) &&
           mmp__shm_map_attach(msg.name, msg.bytes, &nd->map) == 0) {
    node_layout(nd);
    got = nd->hdr->magic == NODE_MAGIC && nd->hdr->version == NODE_VERSION &&
                  nd->hdr->n == (uint32_t)nd->n
              ? NODE_MAPPED
              : NODE_FAILED;
  }
  if ((rc = node_xfer(e, nd, 1, &got, sizeof(got), leader,
                      MMP__COLL_TAG(seq, 2))) != 0 ||
      (rc = node_xfer(e, nd, 0, verdict, sizeof(*verdict), leader,
                      MMP__COLL_TAG(seq, 3))) != 0)
    return rc;
  return got == NODE_MAPPED && *verdict == NODE_MAPPED ? 0 : MMP_ENOTSUP;
}

/* Loop context, lock held: the call's deadline (the set-up's too). The
 * set-up's waits sleep in the runtime, so they are woken to look. */
static void node_expired(void *arg) {
  mmp__node_t *nd = arg;

  atomic_store_explicit(&nd->expired, 1, memory_order_release);
  mmp__engine_notify_locked(mmp__eng);
}

/* Makes `comm`'s segment with every rank of the node by `timeout_ms` (0:
 * no deadline): a rank that never comes or dies turns it into an error
 * (MMP_ETIMEDOUT, MMP_EPEERLOST) on the others, never a wait for ever. */
static int node_make(mmp_comm_t *comm, unsigned timeout_ms, mmp__node_t **out) {
  mmp__engine_t *e = mmp__eng;
  mmp__node_t *nd = calloc(1, sizeof(*nd));
  int32_t verdict = NODE_FAILED;
  int i, rc, seq, mine = mmp__comm_node_of(comm, comm->rank);

  if (nd == NULL)
    return MMP_ENOMEM;
  nd->comm = comm;
  nd->rank = malloc((size_t)comm->size * sizeof(*nd->rank));
  if (nd->rank == NULL) {
    free(nd);
    return MMP_ENOMEM;
  }
  for (i = 0; i < comm->size; i++)
    if (mmp__comm_node_of(comm, i) == mine) {
      if (i == comm->rank)
        nd->me = nd->n;
      nd->rank[nd->n++] = i;
    }
  nd->seen = calloc((size_t)nd->n * MMP__NODE_NFLAGS, sizeof(*nd->seen));
  nd->checked = calloc((size_t)nd->n, sizeof(*nd->checked));
  nd->cpus_shared = e->cfg.cpus_shared;
  mmp__lock(e);
  seq = (int)comm->coll_seq++;
  mmp__unlock(e);
  if (timeout_ms > 0) {
    mmp__lock(e);
    mmp__deadline_start_locked(e, &nd->tmo, timeout_ms, node_expired, nd);
    mmp__unlock(e);
  }
  if (nd->seen == NULL || nd->checked == NULL)
    rc = MMP_ENOMEM;
  else
    rc = nd->me == 0 ? node_create(e, nd, seq, &verdict)
                     : node_join(e, nd, seq, &verdict);
  if (timeout_ms > 0) {
    mmp__lock(e);
    mmp__deadline_stop_locked(e, &nd->tmo);
    mmp__unlock(e);
  }
  if (rc == MMP_ENOTSUP) {
    /* Shared memory turned off on a rank is a choice; a segment a rank
     * could not map is worth a warning. */
    MMP__LOG(verdict == NODE_SHM_OFF ? MMP__LOG_INFO : MMP__LOG_WARN,
             "node segment: %s; the shm collectives are off on this "
             "communicator",
             verdict == NODE_SHM_OFF
                 ? "a rank of this host runs with MINIMP_SHM=off"
                 : "not every rank of this host could map it");
    mmp__shm_map_free(&nd->map);
    nd->state = -1;
  } else if (rc != 0) {
    /* A set-up that ran out of time leaves the ranks out of step, as any
     * collective's timeout does: every later collective on `comm` fails. */
    if (rc == MMP_ETIMEDOUT) {
      int zero = 0;
      atomic_compare_exchange_strong(&comm->coll_err, &zero, MMP_ETIMEDOUT);
    }
    mmp__node_free(nd);
    return rc;
  } else
    nd->state = 1;
  *out = nd;
  return 0;
}

void mmp__node_free(mmp__node_t *nd) {
  if (nd == NULL)
    return;
  mmp__shm_map_free(&nd->map);
  free(nd->rank);
  free(nd->seen);
  free(nd->checked);
  free(nd);
}

/* ---- Calls ---------------------------------------------------------- */

/* The header as this rank laid it out, and no error left in it. */
static int node_check_hdr(const mmp__node_t *nd) {
  int64_t a;

  if (nd->hdr->magic != NODE_MAGIC || nd->hdr->version != NODE_VERSION ||
      nd->hdr->n != (uint32_t)nd->n || nd->hdr->chunk != MMP__NODE_CHUNK ||
      nd->hdr->slots != nd->slots)
    return MMP_EPROTO;
  a = atomic_load_explicit(&nd->hdr->abort, memory_order_acquire);
  if (a == 0)
    return 0;
  /* Only a code of ours explains a failure; anything else is damage. */
  return a < 0 && a > -1000 && strcmp(mmp_err_name((int)a), "MMP_E?") != 0
             ? (int)a
             : MMP_EPROTO;
}

int mmp__node_begin(mmp_comm_t *comm, unsigned timeout_ms, uint64_t nslots,
                    uint64_t sig, mmp__node_t **out, mmp__node_view_t *v) {
  node_sig_t *mine;
  mmp__engine_t *e = mmp__eng;
  mmp__node_t *nd;
  int rc;

  assert(nslots >= 1);
  if (!mmp__node_usable(comm))
    return MMP_ENOTSUP;
  if ((rc = atomic_load(&comm->coll_err)) != 0)
    return rc;
  if (comm->node == NULL &&
      (rc = node_make(comm, timeout_ms, &comm->node)) != 0)
    return rc;
  nd = comm->node;
  if (nd->state < 0)
    return MMP_ENOTSUP;
  if (nd->err != 0)
    return nd->err;
  if ((rc = node_check_hdr(nd)) != 0)
    return mmp__node_end(nd, rc);
  nd->nslots = nslots;
  nd->sig = sig;
  nd->mismatch = 0;
  nd->epoch++;
  /* The entry of the call epoch - nsig, which nobody reads any more. */
  mine = &nd->sigs[(size_t)nd->me * nd->nsig + nd->epoch % nd->nsig];
  mine->sig = sig;
  mine->nslots = nslots;
  atomic_store_explicit(&mine->epoch, nd->epoch, memory_order_release);
  atomic_store(&nd->expired, 0);
  nd->armed = timeout_ms > 0;
  if (timeout_ms > 0) {
    mmp__lock(e);
    mmp__deadline_start_locked(e, &nd->tmo, timeout_ms, node_expired, nd);
    mmp__unlock(e);
  }
  v->n = nd->n;
  v->me = nd->me;
  v->rank = nd->rank;
  v->base = nd->base;
  v->slots = nd->slots;
  v->chunk = MMP__NODE_CHUNK;
  *out = nd;
  return 0;
}

uint8_t *mmp__node_slot(mmp__node_t *nd, uint64_t u) {
  return nd->data + (size_t)(u % nd->slots) * MMP__NODE_CHUNK;
}

void mmp__node_post(mmp__node_t *nd, int flag, uint64_t value) {
  atomic_store_explicit(node_flag(nd, nd->me, flag), value,
                        memory_order_release);
}

/* The flag of `who`, checked: it never goes down, and no rank gets more
 * than a call and the whole ring of slots past this one's end. 0 (below
 * `value`), 1 (reached) or MMP_EPROTO. */
static int node_look(mmp__node_t *nd, int flag, int who, uint64_t value) {
  uint64_t f =
      atomic_load_explicit(node_flag(nd, who, flag), memory_order_acquire);
  uint64_t *seen = &nd->seen[(size_t)who * MMP__NODE_NFLAGS + (size_t)flag];
  uint64_t limit = nd->base + 2 * (nd->nslots + nd->slots) + 2;

  if (f < *seen || f > limit) {
    MMP__LOG(MMP__LOG_WARN,
             "node segment: flag %d of rank %d went from %llu to %llu "
             "(at most %llu); damaged",
             flag, nd->rank[who], (unsigned long long)*seen,
             (unsigned long long)f, (unsigned long long)limit);
    return MMP_EPROTO;
  }
  *seen = f;
  if (f < value)
    return 0;
  /* A flag of this call: the rank began it, so its signature for it is
   * there (the flag's release order covers it). */
  if (value > nd->base && nd->checked[who] != nd->epoch) {
    const node_sig_t *e =
        &nd->sigs[(size_t)who * nd->nsig + nd->epoch % nd->nsig];
    uint64_t ep = atomic_load_explicit(&e->epoch, memory_order_acquire);
    if (ep != nd->epoch)
      return ep < nd->epoch ? MMP_EPROTO : 1;
    nd->checked[who] = nd->epoch;
    if (e->sig != nd->sig) {
      nd->mismatch = e->nslots == nd->nslots;
      MMP__LOG(MMP__LOG_WARN,
               "node segment: rank %d called another collective, or with "
               "other arguments",
               nd->rank[who]);
      return MMP_EMISMATCH;
    }
  }
  return 1;
}

/* Between polls: the runtime's view (a lost member, the deadline, its
 * loop where nobody else runs it) and the header. */
static int node_between(mmp__node_t *nd) {
  mmp__engine_t *e = mmp__eng;
  int rc, lost;

  if (atomic_load_explicit(&nd->expired, memory_order_acquire))
    return MMP_ETIMEDOUT;
  if ((rc = node_check_hdr(nd)) != 0)
    return rc;
  mmp__progress_poke(e);
  mmp__lock(e);
  lost = mmp__comm_lost_locked(e, nd->comm);
  mmp__unlock(e);
  if (lost >= 0)
    return MMP_EPEERLOST;
  return atomic_load_explicit(&nd->expired, memory_order_acquire)
             ? MMP_ETIMEDOUT
             : 0;
}

static inline void node_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int mmp__node_wait(mmp__node_t *nd, int flag, int who, uint64_t value) {
  uint64_t last = 0;
  unsigned polls = 0;
  int i = who == MMP__NODE_ALL ? 0 : who, rc;

  for (;;) {
    /* Ranks already seen to have reached it are not looked at again. */
    for (; i < nd->n; i++) {
      if (who == MMP__NODE_ALL && i == nd->me)
        continue;
      if ((rc = node_look(nd, flag, i, value)) < 0)
        return rc;
      if (rc == 0)
        break;
      if (who != MMP__NODE_ALL)
        return 0;
    }
    if (i >= nd->n)
      return 0;
    /* Where ranks outnumber CPUs the rank we wait for may need ours. */
    if (nd->cpus_shared)
      sched_yield();
    else
      node_relax();
    if (++polls % NODE_CHECK_EVERY == 0) {
      uint64_t now = uv_hrtime();
      if (last == 0)
        last = now;
      else if (now - last >= NODE_RUNTIME_NS) {
        last = now;
        if ((rc = node_between(nd)) != 0)
          return rc;
      }
      if (!nd->cpus_shared && polls >= 64 * NODE_CHECK_EVERY)
        sched_yield();
    }
  }
}

int mmp__node_end(mmp__node_t *nd, int rc) {
  mmp__engine_t *e = mmp__eng;
  int64_t none = 0;

  /* Without a deadline the call takes the engine's lock only where it
   * waits long. */
  if (nd->armed) {
    mmp__lock(e);
    mmp__deadline_stop_locked(e, &nd->tmo);
    mmp__unlock(e);
    nd->armed = 0;
  }
  /* Arguments that differ but slots that agree: the call ends on every
   * rank without touching the slots again, and the next one can go on. */
  if (rc == 0 || (rc == MMP_EMISMATCH && nd->mismatch)) {
    nd->base += nd->nslots;
    mmp__node_post(nd, MMP__NODE_DONE, nd->base);
    return rc;
  }
  /* The first error stays, here and in the segment, for the others. */
  if (nd->err == 0)
    nd->err = rc;
  if (nd->hdr != NULL)
    atomic_compare_exchange_strong(&nd->hdr->abort, &none, (int64_t)rc);
  if (rc == MMP_ETIMEDOUT) {
    int zero = 0;
    atomic_compare_exchange_strong(&nd->comm->coll_err, &zero, MMP_ETIMEDOUT);
  }
  return rc;
}

int mmp__node_debug_damage(mmp_comm_t *comm, int what) {
  mmp__node_t *nd = comm->node;

  if (nd == NULL || nd->state <= 0)
    return MMP_EINVAL;
  if (what == 0)
    mmp__node_post(nd, MMP__NODE_POSTED, 1ull << 60);
  else
    nd->hdr->magic = 0;
  return 0;
}

uint64_t mmp__node_debug_calls(const mmp_comm_t *comm) {
  return comm->node != NULL ? comm->node->epoch : 0;
}
