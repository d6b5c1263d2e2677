/* SPDX-License-Identifier: MIT */
/*
 * Process-arrival-pattern-aware broadcasts ([Patarasuk & Yuan 2008],
 * section 4): arrival_b for the blocking model, arrival_nb for the
 * non-blocking one. Unlike the other broadcasts they have no fixed
 * schedule: the root decides at run time who gets the message next, from
 * control messages that tell it who has arrived.
 *
 * arrival_b. A receiver, on arrival, sends a small ARRIVED message to the
 * root, then waits for a GROUP header from the root. The root repeatedly
 * collects the receivers whose ARRIVED came in and runs a sub-group
 * broadcast among them and itself; while one runs, later arrivals queue up
 * for the next round; when nobody has arrived, the root waits. The GROUP
 * header lists the members, so each builds the same schedule: a pipelined
 * chain in list order (the paper's linear-p), or any other static
 * broadcast, e.g. scatter-allgather (opts.inner).
 *
 * arrival_nb. A receiver first looks whether the root already pushed the
 * message to it (a GROUP header flagged PUSH, buffered by the progress
 * engine); if so it takes it from local memory. When nobody has arrived
 * and some receiver has not been served, the root pushes the whole message
 * eagerly to one such receiver. ARRIVED messages from receivers already
 * served are discarded.
 *
 * Cost, in the paper's model (T = time of one message, Delta = last
 * arrival - root's arrival): a receiver waits at most one round and then
 * takes T, so f_i <= a_i + 2T. arrival_b's root ends by a_0 + Delta + 2T,
 * arrival_nb's by a_0 + (n - 1)T; both are within 3 of the Lemma 2 bound
 * (Theorems 5 and 6). Control messages add about one latency (alpha) per
 * round, which is why the paper aims them at large messages.
 *
 * Bookkeeping this implementation adds. Every receiver sends exactly one
 * ARRIVED (flagged HAVE when it found the push), so the root knows it must
 * receive p - 1 and consumes every one: no control message is left over.
 * arrival_nb's root does not wait for the ARRIVED of receivers it pushed
 * to: its request completes once all are served, and one ARRIVED receive
 * stays posted until the last is in; the records are freed by whichever of
 * that and the request's destructor comes second. Each pair of ranks talks
 * in at most one round, so the sub-broadcasts share one set of tags in the
 * collective's context. A root that is idle waits a short gathering window
 * before it decides (arrival_times), so that receivers arriving together
 * share a round.
 *
 * Everything runs in completion callbacks under engine.lock: callbacks
 * only record what happened and call arr_drive, which does the work and,
 * at its end, completes the request or frees the records.
 *
 * A timeout (the call's or the communicator's) gives up as a scheduled
 * collective does (sched.c): the receives no message matched are
 * cancelled, the sub-broadcasts are abandoned, the communicator is marked
 * and the request completes with MMP_ETIMEDOUT at once; the records stay
 * until the control messages already under way complete.
 *
 * Selected: when asked for ("arrival_b", "arrival_nb"), and by AUTO where
 * the gathering window plus 2 p alpha is at most 8% of the best static
 * algorithm's predicted time (mmp__bcast_arrival_pays), i.e. for large
 * messages on a slow network: arrival_nb when the message fits half a
 * receiver's eager buffer, else arrival_b. The sub-group broadcast of a
 * round is a pipelined chain by default, or any classic algorithm of
 * [Hasanov et al. 2015] (opts.inner; MMP__BCAST_F_SUB in its row).
 */
#include <stdlib.h>
#include <string.h>

#include "collectives/bcast/bcast.h"

/* Phases (tags) of the collective; sub-broadcasts use 10..19. In AUTO's
 * adaptive mode a static broadcast may run instead, on the low phases, so
 * ARRIVED moves out of their way and GROUP headers travel as first
 * messages, which a receiver takes whichever kind the root sends. */
#define PH_ARRIVED 1
#define PH_GROUP 2
#define PH_SUB 10
#define PH_ADAPT_ARRIVED 231

#define ARRIVED_SIZE 16
#define GROUP_FIXED 24
/* GROUP header bytes 20 and 21: the algorithm the root runs and its hint
 * (adaptive mode). */
#define GRP_TOP 20
#define GRP_HINT 21
#define ARR_HAVE 0x1   /* ARRIVED: the push was already here */
#define GRP_PUSH 0x1   /* GROUP: the root pushed before an ARRIVED */
#define GRP_POISON 0x2 /* GROUP: arguments disagree, no data follows */

/* Root's view of a receiver. */
#define ST_HEARD 0x1  /* its ARRIVED was received */
#define ST_SERVED 0x2 /* in a round (or pushed) */
#define ST_POISON 0x4 /* its arguments disagree with the root's */

enum { CTL_ARRIVED_SEND = 1, CTL_ARRIVED_RECV, CTL_GROUP_SEND, CTL_GROUP_RECV };

typedef struct arr_s arr_t;

/* One control message in flight; freed with the collective. */
typedef struct arr_ctl_s {
  mmp_request_t req;
  arr_t *a;
  struct arr_ctl_s *next;
  int kind;
  uint8_t *buf; /* owned unless `shared` */
  int shared;
} arr_ctl_t;

/* One sub-group broadcast this rank takes part in. */
typedef struct arr_sub_s {
  mmp__sched_t *s;
  int poisoned; /* started in poison mode on purpose (GRP_POISON) */
  int *ranks;   /* group member i is comm rank ranks[i]; the root is 0 */
  uint8_t *hdr;
  struct arr_sub_s *next;
} arr_sub_t;

struct arr_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  const mmp__family_t *fam; /* the rows of sub-broadcasts */
  int (*build)(mmp__sched_t *s, const mmp__desc_t *d);
  /* AUTO's adaptive mode: receivers announce themselves whatever the root
   * runs; the root runs `stat` (static) or decides from arrivals. */
  int adaptive;
  int run_static;
  mmp__desc_t stat;
  int hint;
  uint64_t t0;  /* root: uv_hrtime() at the start */
  double *when; /* root, adaptive: seconds from t0 to each ARRIVED */
  double took;  /* root, adaptive: seconds its own part took; 0 open */
  int stat_sub; /* root: the static broadcast runs as a sub-schedule */
  int recorded; /* root: the pattern went to the state */
  uint32_t seq;
  uint8_t *buf;
  size_t len;
  const mmp__alg_t *alg; /* arrival_b or arrival_nb */
  int root, me, p;
  unsigned mode;
  const mmp__alg_t *subalg;
  size_t seg;
  mmp_request_t *creq;
  arr_ctl_t *ctls;
  arr_sub_t *subs;
  int running, again, completed, err;
  int ctl_out;  /* control operations not complete, but ARRIVED receives */
  int req_gone; /* the user freed the request; free `a` once idle */
  /* Root. */
  uint8_t *state; /* ST_* per comm rank */
  int *queue;     /* arrived, not served, in arrival order */
  int nq, nserved, nheard, arr_posted, busy, push_next;
  arr_ctl_t *arr_ctl; /* the ARRIVED receive last posted */
  uint64_t window_ms; /* gathering time before a decision; 0: none */
  uint64_t pace_ms;   /* a round keeps the root busy at least this long */
  int ready;          /* the root may start a round or a push now */
  int timer_pending;
  /* Receiver. */
  int started, sub_done;
  arr_ctl_t *group; /* the GROUP header, once received */
  int holding;      /* holds a->comm (mmp__comm_hold_locked) */
  /* Timeout. */
  unsigned timeout_ms;
  mmp__deadline_t tmo;
  int timed_out; /* gave up: nothing more is posted */
};

static void arr_drive(arr_t *a);
static void arr_free(arr_t *a);
static void adapt_record(arr_t *a);

/* The job's ranks: what a poison note names. */
static int world_size(const mmp__engine_t *e) {
  mmp__rt_facts_t f;

  mmp__rt_facts(e, &f);
  return f.world_size;
}

/* Nothing of this rank's part is under way: no ARRIVED receive posted, no
 * control message or timer outstanding. */
static int arr_idle(const arr_t *a) {
  return !a->arr_posted && a->ctl_out == 0;
}

/* The first error is kept, except that a lost or silent rank replaces a
 * mismatch (the executor's rule, sched.c). */
static void set_err(arr_t *a, int err) {
  if (a->err == 0 || (a->err == MMP_EMISMATCH &&
                      (err == MMP_EPEERLOST || err == MMP_ETIMEDOUT)))
    a->err = err;
}

/* ---- Control messages --------------------------------------------------- */

static void ctl_done(mmp_request_t *r, void *arg) {
  arr_ctl_t *c = arg;
  arr_t *a = c->a;

  if (c->kind != CTL_ARRIVED_RECV)
    a->ctl_out--;
  if (c->kind == CTL_ARRIVED_RECV) {
    a->arr_posted = 0;
    if (r->err == 0) {
      /* Parsed in root_heard, from drive. */
      c->kind = -CTL_ARRIVED_RECV;
    } else {
      set_err(a, r->err);
    }
  } else if (c->kind == CTL_GROUP_RECV) {
    if (r->err != 0 && r->err != MMP_ETRUNC)
      set_err(a, r->err);
    a->group = c;
  } else if (r->err != 0) {
    set_err(a, r->err);
  }
  arr_drive(a);
}

/* `buf` NULL: a new zeroed buffer of `cap` bytes. Otherwise the control
 * op owns `buf` unless `shared`. */
static arr_ctl_t *ctl_new(arr_t *a, int kind, uint8_t *buf, size_t cap,
                          int shared) {
  arr_ctl_t *c = calloc(1, sizeof(*c));

  if (c == NULL)
    return NULL;
  c->buf = buf != NULL ? buf : (cap > 0 ? calloc(1, cap) : NULL);
  if (c->buf == NULL && cap > 0) {
    free(c);
    return NULL;
  }
  c->shared = shared;
  c->a = a;
  c->kind = kind;
  c->next = a->ctls;
  a->ctls = c;
  c->req.cb = ctl_done;
  c->req.cb_arg = c;
  return c;
}

/* Posts a control send or receive; its completion may run ctl_done before
 * this returns (drive then only notes that there is more to do). On error
 * an owned `buf` is freed. */
/* The phase a control message travels on. */
static int ctl_phase(const arr_t *a, int kind) {
  if (kind == CTL_ARRIVED_SEND || kind == CTL_ARRIVED_RECV)
    return a->adaptive ? PH_ADAPT_ARRIVED : PH_ARRIVED;
  return a->adaptive ? MMP__PHASE_FIRST : PH_GROUP;
}

static int ctl_post(arr_t *a, int kind, int peer, uint8_t *buf, size_t len,
                    int shared) {
  int send = kind == CTL_ARRIVED_SEND || kind == CTL_GROUP_SEND;
  int tag = MMP__COLL_TAG(a->seq, ctl_phase(a, kind)), rc;
  arr_ctl_t *c = ctl_new(a, kind, buf, len, shared);

  if (c == NULL) {
    if (!shared)
      free(buf);
    return MMP_ENOMEM;
  }
  /* ARRIVED receives are tracked by arr_posted: they may outlive the
   * request. */
  if (kind == CTL_ARRIVED_RECV)
    a->arr_ctl = c;
  else
    a->ctl_out++;
  if (send)
    rc = mmp__isend_locked(a->e, a->comm, a->comm->ctx + 1, c->buf, len,
                           mmp__comm_world(a->comm, peer), tag, MMP_SEND_EAGER,
                           &c->req);
  else
    rc = mmp__irecv_locked(a->e, a->comm, a->comm->ctx + 1, c->buf, len,
                           peer < 0 ? MMP_ANY_SOURCE
                                    : mmp__comm_world(a->comm, peer),
                           tag, &c->req);
  if (rc != 0 && kind != CTL_ARRIVED_RECV)
    a->ctl_out--;
  return rc;
}

/* ---- Sub-group broadcasts ------------------------------------------------ */

/* One of the things keeping the root busy is over (drive context). */
static void root_unbusy(arr_t *a) {
  /* Whoever arrived during the round has waited long enough; arrival_nb's
   * root, with nobody waiting, pushes again at once: arrivals during the
   * last push are queued already, and the window only delays the push. */
  if (--a->busy == 0)
    a->ready =
        a->nq > 0 || a->window_ms == 0 ||
        (a->alg == &mmp__bcast_arrival_nb_alg && a->mode != MMP_SEND_RNDV);
}

static void sub_done(mmp__sched_t *s, void *arg) {
  arr_t *a = arg;
  const arr_sub_t *sub;
  int meant = 0;

  /* A round that failed (a peer lost, say) switched itself to poison
   * mode; only a round poisoned on purpose has its error reported
   * elsewhere. */
  for (sub = a->subs; sub != NULL; sub = sub->next)
    if (sub->s == s)
      meant = sub->poisoned;
  if (s->err != 0 && !meant)
    set_err(a, s->err);
  if (a->me == a->root) {
    if (a->stat_sub && a->took == 0)
      a->took = fmax((double)(uv_hrtime() - a->t0) * 1e-9, 1e-9);
    root_unbusy(a);
    adapt_record(a);
  } else {
    a->sub_done = 1;
  }
  arr_drive(a);
}

/* A sub-broadcast's schedule. Its receives fail on a loss anywhere in the
 * communicator: a member that gave up on that loss while it waited for
 * its GROUP header (a receive from any source) was maybe served already,
 * and its successors would otherwise wait on it for ever. */
static int sub_sched_new(arr_t *a, size_t len, unsigned mode,
                         mmp__sched_t **out) {
  int rc = mmp__sched_sub_new(a->e, a->comm, a->seq, a->buf, len, mode, out);

  if (rc == 0)
    (*out)->comm_loss = 1;
  return rc;
}

/* A record that owns `ranks` and `hdr` (freed on error too) until the
 * collective is freed. */
static arr_sub_t *sub_new(arr_t *a, int *ranks, uint8_t *hdr) {
  arr_sub_t *sub = calloc(1, sizeof(*sub));

  if (sub == NULL) {
    free(ranks);
    free(hdr);
    return NULL;
  }
  sub->ranks = ranks;
  sub->hdr = hdr;
  sub->next = a->subs;
  a->subs = sub;
  return sub;
}

/* Builds and starts this rank's part of a broadcast over sub->ranks (the
 * root first, n members) of a len-byte message: this rank's length, or in
 * poison mode the root's, so that the plan matches what is sent. */
static int sub_start(arr_t *a, arr_sub_t *sub, int n, const mmp__alg_t *b,
                     size_t len, size_t seg, unsigned mode, int poison) {
  int *ranks = sub->ranks;
  mmp__group_t g;
  mmp__arg_t ba;
  int i, rc;

  assert(b != NULL && (b->flags & MMP__ALG_PART));
  rc = sub_sched_new(a, a->len, mode, &sub->s);
  if (rc != 0)
    return rc;
  sub->s->poison = poison;
  sub->poisoned = poison;
  g.n = n;
  g.ranks = ranks;
  g.me = -1;
  for (i = 0; i < n; i++)
    if (ranks[i] == a->me)
      g.me = i;
  memset(&ba, 0, sizeof(ba));
  ba.g = &g;
  ba.len = len;
  ba.seg = seg;
  ba.dep = -1;
  ba.phase = PH_SUB;
  rc = b->build(sub->s, &ba);
  if (rc < 0)
    return rc;
  return mmp__sched_launch_locked(sub->s, sub_done, a);
}

/* ---- Root ---------------------------------------------------------------- */

/* What an ARRIVED message names as the algorithm: in adaptive mode the
 * receivers know only that it is AUTO's. */
static uint8_t announced_alg(const arr_t *a) {
  return (uint8_t)(a->adaptive ? 0 : mmp__alg_index(a->fam, a->alg));
}

/* Every receiver has announced itself: the pattern, in virtual ranks,
 * for the root's next decisions. */
static void adapt_record(arr_t *a) {
  double *off;
  int v;

  /* Once every receiver is heard and, for a static broadcast, the root's
   * part is over: that time is the model's check. */
  if (a->when == NULL || a->recorded || a->nheard < a->p - 1 || a->took == 0)
    return;
  a->recorded = 1;
  if ((off = malloc((size_t)a->p * sizeof(double))) == NULL)
    return;
  off[0] = 0;
  for (v = 1; v < a->p; v++)
    off[v] = a->when[mmp__rrank(v, a->root, a->p)];
  mmp__coll_adapt_record_locked(a->comm, a->len, off, a->took, !a->stat_sub);
  free(off);
}

/* An ARRIVED message came in (drive context). */
static void root_heard(arr_t *a, arr_ctl_t *c) {
  int src = c->req.status.source;
  const uint8_t *m = c->buf;

  c->kind = CTL_ARRIVED_RECV;
  if (src < 0 || src >= a->p || src == a->root || (a->state[src] & ST_HEARD)) {
    set_err(a, MMP_EPROTO);
    return;
  }
  a->state[src] |= ST_HEARD;
  a->nheard++;
  if (c->req.status.bytes != ARRIVED_SIZE || m[0] != 'a' ||
      mmp__get_u64(m + 4) != (uint64_t)a->len || m[3] != announced_alg(a))
    a->state[src] |= ST_POISON;
  if (a->when != NULL) {
    a->when[src] = (double)(uv_hrtime() - a->t0) * 1e-9;
    adapt_record(a);
  }
  /* Served already (pushed before it arrived): nothing more to do. */
  if (!(a->state[src] & ST_SERVED))
    a->queue[a->nq++] = src;
}

static uint8_t *group_header(const arr_t *a, const int *ranks, int n, int flags,
                             const mmp__alg_t *alg, size_t seg) {
  uint8_t *h = calloc(1, GROUP_FIXED + 4 * (size_t)n);
  int i;

  if (h == NULL)
    return NULL;
  h[0] = 'g';
  h[1] = 1;
  h[2] = (uint8_t)flags;
  h[3] = (uint8_t)mmp__alg_index(a->fam, alg);
  mmp__put_u32(h + 4, (uint32_t)n);
  mmp__put_u64(h + 8, (uint64_t)a->len);
  mmp__put_u32(h + 16, (uint32_t)seg);
  h[GRP_TOP] = (uint8_t)mmp__alg_index(a->fam, a->alg);
  h[GRP_HINT] = (uint8_t)a->hint;
  for (i = 0; i < n; i++)
    mmp__put_u32(h + GROUP_FIXED + 4 * (size_t)i, (uint32_t)ranks[i]);
  return h;
}

static void pace_over(void *arg) {
  arr_t *a = arg;

  MMP__ASSERT_LOCKED(a->e);
  MMP__ASSERT_LOOP(a->e);
  a->ctl_out--;
  root_unbusy(a);
  arr_drive(a);
}

/* The root's sends complete once the kernel holds the bytes: with socket
 * buffers of megabytes that is almost at once. A root that then started
 * the next round or push would soon be sending to many receivers at the
 * same time, each transfer taking several T(m) on the shared uplink and
 * the rounds of receivers that do arrive crawling behind the pushes,
 * beyond the paper's bound of 3 T(m) (docs/algorithms.md). So a round or
 * push keeps the root busy for T(m) too, the time the model gives its
 * transfer over the root's link. */
static void round_pace(arr_t *a) {
  if (a->pace_ms == 0)
    return;
  a->busy++;
  a->ctl_out++; /* the request may not complete before it fires */
  if (mmp__timer_start_locked(a->e, a->pace_ms, pace_over, a) != 0) {
    a->busy--;
    a->ctl_out--;
  }
}

/* Serves `ranks[1..n)`: a GROUP header to each, then the sub-broadcast. */
static int root_round(arr_t *a, int *ranks, int n, int flags) {
  int push = flags & GRP_PUSH, poison = flags & GRP_POISON, i, rc;
  const mmp__alg_t *alg = push ? &mmp__bcast_flat_alg : a->subalg;
  size_t seg = push ? 0 : a->seg;
  uint8_t *h = group_header(a, ranks, n, flags, alg, seg);
  arr_sub_t *sub;

  if (h == NULL) {
    free(ranks);
    return MMP_ENOMEM;
  }
  if ((sub = sub_new(a, ranks, h)) == NULL)
    return MMP_ENOMEM;
  for (i = 1; i < n; i++) {
    a->state[ranks[i]] |= ST_SERVED;
    a->nserved++;
  }
  /* The header belongs to the round; the control sends share it. */
  for (i = 1; i < n; i++) {
    rc = ctl_post(a, CTL_GROUP_SEND, ranks[i], h, GROUP_FIXED + 4 * (size_t)n,
                  1);
    if (rc != 0)
      return rc;
  }
  a->busy = 1;
  a->ready = a->window_ms == 0;
  rc = sub_start(a, sub, n, alg, a->len, seg, push ? MMP_SEND_EAGER : a->mode,
                 poison);
  if (rc != 0)
    a->busy = 0;
  else if (!poison) /* a poisoned round carries no data */
    round_pace(a);
  return rc;
}

/* Starts a round with every queued receiver whose arguments agree, or
 * else the first queued one alone, with the POISON flag. */
static int root_collect(arr_t *a) {
  int *ranks = malloc((size_t)(a->nq + 1) * sizeof(int));
  int n = 1, i, keep = 0;

  if (ranks == NULL)
    return MMP_ENOMEM;
  ranks[0] = a->root;
  for (i = 0; i < a->nq; i++)
    if (!(a->state[a->queue[i]] & ST_POISON))
      ranks[n++] = a->queue[i];
  if (n == 1) {
    ranks[n++] = a->queue[0];
    for (i = 1; i < a->nq; i++)
      a->queue[keep++] = a->queue[i];
    a->nq = keep;
    return root_round(a, ranks, n, GRP_POISON);
  }
  for (i = 0; i < a->nq; i++)
    if (a->state[a->queue[i]] & ST_POISON)
      a->queue[keep++] = a->queue[i];
  a->nq = keep;
  return root_round(a, ranks, n, 0);
}

/* Nobody waits: push the whole message to the next unserved receiver. */
static int root_push(arr_t *a) {
  int k, r = -1, *ranks;

  for (k = 0; k < a->p - 1; k++) {
    r = mmp__rrank(1 + (a->push_next + k) % (a->p - 1), a->root, a->p);
    if (!(a->state[r] & (ST_SERVED | ST_HEARD)))
      break;
  }
  if (k == a->p - 1 || r < 0)
    return 0;
  a->push_next = (a->push_next + k + 1) % (a->p - 1);
  ranks = malloc(2 * sizeof(int));
  if (ranks == NULL)
    return MMP_ENOMEM;
  ranks[0] = a->root;
  ranks[1] = r;
  return root_round(a, ranks, 2, GRP_PUSH);
}

/* Takes in every ARRIVED already here, leaving one receive posted for the
 * next. Returns 0 or an error. */
static int root_listen(arr_t *a) {
  arr_ctl_t *c;
  int rc;

  for (;;) {
    for (c = a->ctls; c != NULL; c = c->next)
      if (c->kind == -CTL_ARRIVED_RECV)
        root_heard(a, c);
    if (a->arr_posted || a->nheard == a->p - 1 || a->err != 0)
      return 0;
    a->arr_posted = 1;
    rc = ctl_post(a, CTL_ARRIVED_RECV, -1, NULL, ARRIVED_SIZE, 0);
    if (rc != 0) {
      a->arr_posted = 0;
      return rc;
    }
  }
}

static void window_over(void *arg) {
  arr_t *a = arg;

  MMP__ASSERT_LOCKED(a->e);
  MMP__ASSERT_LOOP(a->e);
  a->timer_pending = 0;
  a->ready = 1;
  a->ctl_out--;
  arr_drive(a);
}

/* The root is free: serve whoever arrived, push (arrival_nb), or wait. A
 * decision from idle waits window_ms first, so that receivers arriving
 * together (a balanced pattern) share one round instead of the first of
 * them getting a round of its own. */
static int root_decide(arr_t *a) {
  int nb = a->alg == &mmp__bcast_arrival_nb_alg && a->mode != MMP_SEND_RNDV;

  if (!a->ready) {
    if (a->timer_pending || (a->nq == 0 && !nb))
      return 0;
    a->timer_pending = 1;
    a->ctl_out++; /* the request may not complete before it fires */
    if (mmp__timer_start_locked(a->e, a->window_ms, window_over, a) == 0)
      return 0;
    a->timer_pending = 0;
    a->ctl_out--;
  }
  if (a->nq > 0)
    return root_collect(a);
  return nb ? root_push(a) : 0;
}

/* Adaptive mode, the static regime: every receiver at once, by the static
 * algorithm AUTO chose, exactly as a static broadcast runs; the ARRIVED
 * messages are only counted and timed. */
static int root_static(arr_t *a) {
  uint8_t hdr[MMP__DESC_MAX];
  arr_sub_t *sub;
  int r, rc;

  a->run_static = 0; /* once */
  if ((sub = sub_new(a, NULL, NULL)) == NULL)
    return MMP_ENOMEM;
  rc = sub_sched_new(a, a->len, a->mode, &sub->s);
  if (rc != 0)
    return rc;
  a->stat.hint = a->hint;
  mmp__sched_set_header(sub->s, hdr, mmp__desc_encode(a->fam, &a->stat, hdr),
                        NULL);
  if ((rc = a->build(sub->s, &a->stat)) != 0)
    return rc;
  for (r = 0; r < a->p; r++)
    if (r != a->root && !(a->state[r] & ST_SERVED)) {
      a->state[r] |= ST_SERVED;
      a->nserved++;
    }
  a->busy++;
  a->stat_sub = 1;
  rc = mmp__sched_launch_locked(sub->s, sub_done, a);
  if (rc != 0) {
    a->busy--;
    a->stat_sub = 0;
  }
  return rc;
}

static void root_step(arr_t *a) {
  int rc = root_listen(a);

  if (rc == 0 && a->err == 0 && a->run_static)
    rc = root_static(a);
  else if (rc == 0 && a->err == 0 && !a->busy && a->nserved < a->p - 1)
    rc = root_decide(a);
  if (rc != 0)
    set_err(a, rc);
  /* After an error, stop listening, or the request could never complete. */
  if (a->err != 0 && a->arr_posted)
    mmp__cancel_locked(a->e, &a->arr_ctl->req);
}

/* The root's request completes once every receiver has been served. An
 * arrival_nb receiver pushed before it arrived still sends its ARRIVED;
 * the root keeps listening for those after the request completed (the
 * paper's root does not wait for them), so that none is left unconsumed. */
static int root_finished(const arr_t *a) {
  if (a->err != 0)
    return a->ctl_out == 0 && !a->busy && !a->arr_posted;
  return a->nserved == a->p - 1 && !a->busy && a->ctl_out == 0 &&
         (a->alg == &mmp__bcast_arrival_nb_alg || a->adaptive ||
          a->nheard == a->p - 1);
}

/* ---- Receivers ----------------------------------------------------------- */

/* On arrival: look for a push (arrival_nb), tell the root, and wait for
 * the GROUP header. */
static int recv_begin(arr_t *a) {
  int tag = MMP__COLL_TAG(a->seq, ctl_phase(a, CTL_GROUP_RECV)), have = 0, rc;
  size_t cap = GROUP_FIXED + 4 * (size_t)a->p;
  uint8_t *m = calloc(1, ARRIVED_SIZE);

  if (m == NULL)
    return MMP_ENOMEM;
  if (a->alg == &mmp__bcast_arrival_nb_alg || a->adaptive)
    have = mmp__iprobe_locked(a->e, a->comm, a->comm->ctx + 1,
                              mmp__comm_world(a->comm, a->root), tag, NULL);
  /* In adaptive mode the first message may be a static broadcast's, from
   * the parent in its tree: from anyone, and room for the data that rides
   * with its header. */
  if (a->adaptive) {
    size_t first =
        MMP__HDR_SIZE +
        (a->len < MMP__FIRST_PIGGYBACK_MAX ? a->len : MMP__FIRST_PIGGYBACK_MAX);
    cap = cap > first ? cap : first;
  }
  m[0] = 'a';
  m[1] = 1;
  m[2] = (uint8_t)(have ? ARR_HAVE : 0);
  m[3] = announced_alg(a);
  mmp__put_u64(m + 4, (uint64_t)a->len);
  /* Posted first: with `have`, it takes the buffered header at once.
   * From any rank (only the root sends GROUP headers) so that a lost
   * member fails it at once: the root then stops serving (its ARRIVED
   * receive fails the same way), and a receive from the root alone would
   * wait for ever. */
  rc = ctl_post(a, CTL_GROUP_RECV, -1, NULL, cap, 0);
  if (rc != 0) {
    free(m);
    return rc;
  }
  return ctl_post(a, CTL_ARRIVED_SEND, a->root, m, ARRIVED_SIZE, 0);
}

/* Adaptive mode: the root runs a static broadcast, and this is its first
 * message (from this rank's parent in it). Builds that broadcast from the
 * header, its first receive already done, in poison mode if the header
 * disagrees with this rank's arguments. */
static int recv_static(arr_t *a) {
  size_t got = a->group->req.status.bytes, hlen;
  const uint8_t *hdr;
  mmp__desc_t d;
  arr_sub_t *sub;
  int poison, rc, lost;
  /* A parent in poison mode says why: a failure upstream is no mismatch. */
  int cause =
      mmp__sched_note_decode(a->group->req.note, world_size(a->e), &lost);

  if (mmp__sched_envelope(a->group->buf, got, &hdr, &hlen, &poison) != 0 ||
      mmp__desc_decode(a->fam, hdr, hlen, &d) != 0)
    return MMP_EPROTO;
  poison =
      poison || cause != 0 || d.root != a->root || d.count != (uint64_t)a->len;
  if (poison) {
    set_err(a, cause != 0 ? cause : MMP_EMISMATCH);
    if (!mmp__poison_len_ok(d.count, d.seg))
      return MMP_EPROTO;
  }
  mmp__coll_adapt_hint_locked(a->comm, d.hint);
  mmp__coll_log_locked(a->comm, a->seq, d.alg);
  if ((sub = sub_new(a, NULL, NULL)) == NULL)
    return MMP_ENOMEM;
  rc = sub_sched_new(a, poison ? (size_t)d.count : a->len, a->mode, &sub->s);
  if (rc != 0)
    return rc;
  sub->s->poison = poison;
  sub->poisoned = poison;
  if (poison) { /* what its own poisoned sends pass on */
    sub->s->err = cause != 0 ? cause : MMP_EMISMATCH;
    sub->s->fail_rank = lost;
  }
  mmp__sched_set_header(sub->s, hdr, hlen, NULL);
  if ((rc = a->build(sub->s, &d)) != 0)
    return rc;
  /* The data that rode with the header: a sender with a longer message
   * (in poison mode) may have sent more than fits, which is dropped. */
  if ((rc = mmp__sched_take_first(sub->s, a->group->buf, got)) != 0) {
    set_err(a, rc);
    return rc;
  }
  return mmp__sched_launch_locked(sub->s, sub_done, a);
}

/* The GROUP header is in: join the sub-broadcast it describes. */
static int recv_group(arr_t *a) {
  const uint8_t *h = a->group->buf;
  size_t got = a->group->req.status.bytes;
  uint32_t n = got >= GROUP_FIXED ? mmp__get_u32(h + 4) : 0;
  const mmp__alg_t *sub_alg = mmp__alg_at(a->fam, h[3]);
  int poison, *ranks, i, mine = 0;
  uint64_t len;
  arr_sub_t *sub;

  if (a->adaptive && got > 0 && h[0] != 'g')
    return recv_static(a);
  if (got < GROUP_FIXED || h[0] != 'g' || n < 2 || n > (uint32_t)a->p ||
      got != GROUP_FIXED + 4 * (size_t)n || sub_alg == NULL ||
      !(sub_alg->flags & MMP__ALG_PART))
    return MMP_EPROTO;
  if (a->adaptive) {
    mmp__coll_adapt_hint_locked(a->comm, h[GRP_HINT]);
    mmp__coll_log_locked(a->comm, a->seq, mmp__alg_at(a->fam, h[GRP_TOP]));
  }
  len = mmp__get_u64(h + 8);
  poison = (h[2] & GRP_POISON) || len != (uint64_t)a->len;
  if (poison)
    set_err(a, MMP_EMISMATCH);
  if (poison && !mmp__poison_len_ok(len, mmp__get_u32(h + 16)))
    return MMP_EPROTO;
  ranks = malloc(n * sizeof(int));
  if (ranks == NULL || (sub = sub_new(a, ranks, NULL)) == NULL)
    return MMP_ENOMEM;
  for (i = 0; i < (int)n; i++) {
    ranks[i] = (int)mmp__get_u32(h + GROUP_FIXED + 4 * (size_t)i);
    if (ranks[i] < 0 || ranks[i] >= a->p || (i == 0) != (ranks[i] == a->root))
      return MMP_EPROTO;
    mine |= ranks[i] == a->me;
  }
  if (!mine)
    return MMP_EPROTO;
  return sub_start(a, sub, (int)n, sub_alg, poison ? (size_t)len : a->len,
                   mmp__get_u32(h + 16), a->mode, poison);
}

static void recv_step(arr_t *a) {
  int rc = 0;

  if (!a->started) {
    a->started = 1;
    rc = recv_begin(a);
  }
  if (rc == 0 && a->group != NULL && a->group->kind == CTL_GROUP_RECV) {
    a->group->kind = 0; /* consumed */
    if (a->err == 0)
      rc = recv_group(a);
    else
      a->sub_done = 1;
  }
  if (rc != 0) {
    set_err(a, rc);
    a->sub_done = 1;
  }
}

/* ---- Driving and the request -------------------------------------------- */

static void arr_finish(arr_t *a) {
  mmp_request_t *creq = a->creq;

  a->completed = 1;
  a->creq = NULL;
  mmp__deadline_stop_locked(a->e, &a->tmo);
  if (a->adaptive)
    mmp__coll_bcast_done_locked(a->comm);
  /* The root of an arrival-aware run has served the last receiver: its
   * time is that regime's check (a static run's was taken in sub_done). */
  if (a->me == a->root && a->when != NULL && a->err == 0 && a->took == 0) {
    a->took = fmax((double)(uv_hrtime() - a->t0) * 1e-9, 1e-9);
    adapt_record(a);
  }
  /* Given up on a loss: whatever still comes for this collective is
   * dropped. A receiver that gave up before its GROUP header may have been
   * put in a round, and whoever sends it that round's data by rendezvous
   * would otherwise wait for its CTS for ever. Nothing of this rank's part
   * is posted any more. */
  if (a->err == MMP_EPEERLOST)
    mmp__recv_sink_locked(a->e, a->comm->ctx + 1, MMP__COLL_TAG(a->seq, 0),
                          MMP__COLL_SEQ_MASK);
  creq->status.error = a->err;
  creq->status.bytes = a->err == 0 ? a->len : 0;
  mmp__req_complete_locked(a->e, creq, a->err);
}

/* Lock held. Does whatever the recorded events allow, until nothing does;
 * completing the request is the last thing it does. */
static void arr_drive(arr_t *a) {
  int done;

  MMP__ASSERT_LOCKED(a->e);
  if (a->running) {
    a->again = 1;
    return;
  }
  a->running = 1;
  do {
    a->again = 0;
    if (a->timed_out)
      break;
    if (a->me == a->root)
      root_step(a);
    else
      recv_step(a);
  } while (a->again);
  a->running = 0;
  done = a->me == a->root ? root_finished(a) : a->sub_done && a->ctl_out == 0;
  if (done && !a->completed)
    arr_finish(a);
  /* The request is gone and the last ARRIVED is in: nothing refers to `a`
   * any more (the lock keeps the request's destructor out until here). */
  if (a->completed && a->req_gone && arr_idle(a))
    arr_free(a);
}

/* Loop context, lock held: the timeout passed. */
static void arr_timed_out(void *arg) {
  arr_t *a = arg;
  arr_ctl_t *c;
  arr_sub_t *sub;

  MMP__ASSERT_LOCKED(a->e);
  MMP__LOG(MMP__LOG_WARN, "collective %u timed out after %u ms", a->seq,
           a->timeout_ms);
  a->timed_out = 1;
  a->err = MMP_ETIMEDOUT;
  atomic_store_explicit(&a->comm->coll_err, MMP_ETIMEDOUT,
                        memory_order_relaxed);
  /* The callbacks that cancelling runs only note what happened. */
  a->running = 1;
  for (c = a->ctls; c != NULL; c = c->next)
    if (c->kind == CTL_ARRIVED_RECV || c->kind == CTL_GROUP_RECV)
      mmp__cancel_locked(a->e, &c->req);
  for (sub = a->subs; sub != NULL; sub = sub->next)
    if (sub->s != NULL) {
      mmp__sched_abandon_locked(sub->s, MMP_ETIMEDOUT);
      sub->s = NULL;
    }
  a->busy = 0;
  a->running = 0;
  arr_finish(a);
}

/* Lock held once the collective started (a->holding). */
static void arr_free(arr_t *a) {
  if (a->holding)
    mmp__comm_release_locked(a->comm);
  while (a->ctls != NULL) {
    arr_ctl_t *c = a->ctls;
    a->ctls = c->next;
    if (!c->shared)
      free(c->buf);
    free(c);
  }
  while (a->subs != NULL) {
    arr_sub_t *s = a->subs;
    a->subs = s->next;
    mmp__sched_free(s->s);
    free(s->ranks);
    free(s->hdr);
    free(s);
  }
  free(a->state);
  free(a->queue);
  free(a->when);
  free(a);
}

/* The request's destructor, in the user's thread, lock not held. */
static void arr_req_free(mmp_request_t *r) {
  arr_t *a = r->cb_arg;
  mmp__engine_t *e = a->e;
  int idle;

  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  a->req_gone = 1;
  idle = arr_idle(a);
  if (idle)
    arr_free(a);
  mmp__unlock(e);
}

static arr_t *arr_new(const mmp__run_t *run, uint64_t window_us,
                      uint64_t pace_us) {
  const mmp__desc_t *d = run->d;
  arr_t *a = calloc(1, sizeof(*a));

  if (a == NULL)
    return NULL;
  a->e = run->e;
  a->comm = run->comm;
  a->fam = run->fam;
  a->build = run->build;
  a->adaptive = run->adaptive;
  a->run_static = run->adaptive && run->stat != NULL;
  if (run->stat != NULL)
    a->stat = *run->stat;
  a->hint = run->hint;
  a->buf = run->buf;
  a->len = (size_t)d->count;
  a->alg = d->alg;
  a->root = d->root;
  a->me = run->comm->rank;
  a->p = run->comm->size;
  a->mode = run->mode;
  a->subalg = d->inner != NULL ? d->inner : &mmp__bcast_pipeline_alg;
  a->seg = d->seg;
  a->window_ms = (window_us + 999) / 1000;
  a->pace_ms = pace_us / 1000;
  a->ready = a->window_ms == 0;
  a->timeout_ms = run->timeout_ms;
  if (a->me == a->root) {
    a->state = calloc((size_t)a->p, 1);
    a->queue = malloc((size_t)a->p * sizeof(int));
    if (a->adaptive)
      a->when = calloc((size_t)a->p, sizeof(double));
    if (a->state == NULL || a->queue == NULL ||
        (a->adaptive && a->when == NULL)) {
      arr_free(a);
      return NULL;
    }
    a->t0 = uv_hrtime();
  }
  return a;
}

/* The root's timing, in microseconds, from the model: the gathering
 * window (mmp__arrival_window, or MINIMP_BCAST_ARRIVAL_WINDOW_US), and how
 * long a round or push keeps the root's link busy, T(m) = alpha + m beta
 * (the burst allowance does not help rounds that follow each other). */
static int arrival_times(const mmp__run_t *run, uint64_t *window,
                         uint64_t *pace) {
  size_t len = (size_t)run->d->count;
  mmp__rt_facts_t f;
  mmp_netmodel_t nm;
  int rc;

  if ((rc = mmp__netmodel_get(run->comm, &nm)) != 0)
    return rc;
  *pace = (uint64_t)((nm.alpha + (double)len * nm.beta) * 1e6);
  mmp__rt_facts(run->e, &f);
  if (f.coll->arrival_window_us >= 0)
    *window = (uint64_t)f.coll->arrival_window_us;
  else
    *window = (uint64_t)(mmp__arrival_window(run->comm->size, len, &nm) * 1e6);
  return 0;
}

static int arrival_start(const mmp__run_t *run, mmp_request_t **out) {
  mmp__engine_t *e = run->e;
  mmp_request_t *creq;
  uint64_t window, pace;
  arr_t *a;
  int rc;

  *out = NULL;
  MMP__ASSERT_UNLOCKED(e);
  if ((rc = arrival_times(run, &window, &pace)) != 0)
    return rc;
  a = arr_new(run, window, pace);
  creq = calloc(1, sizeof(*creq));
  if (a == NULL || creq == NULL) {
    if (a != NULL)
      arr_free(a);
    free(creq);
    return MMP_ENOMEM;
  }
  mmp__coll_req_init(creq, run->comm, (size_t)run->d->count, run->d->root, a,
                     arr_req_free);
  a->creq = creq;
  mmp__lock(e);
  a->seq = run->comm->coll_seq++;
  mmp__comm_hold_locked(run->comm);
  a->holding = 1;
  /* Which algorithm this broadcast runs, as far as this rank knows now:
   * an adaptive receiver learns it from its first message. */
  if (a->me == a->root || !a->adaptive)
    mmp__coll_log_locked(run->comm, a->seq,
                         a->run_static ? a->stat.alg : a->alg);
  if (a->timeout_ms > 0)
    mmp__deadline_start_locked(e, &a->tmo, a->timeout_ms, arr_timed_out, a);
  arr_drive(a);
  mmp__unlock(e);
  *out = creq;
  return 0;
}

/* ---- Choice and the rows ------------------------------------------------- */

double mmp__arrival_window(int p, size_t len, const mmp_netmodel_t *nm) {
  double T = nm->alpha + (double)len * nm->beta, w = p * nm->alpha;

  if (T / MMP__ARRIVAL_WINDOW_DIV < 1e-3)
    return 0;
  w = w < 1e-3 ? 1e-3 : w;
  return w < T / MMP__ARRIVAL_WINDOW_DIV ? w : T / MMP__ARRIVAL_WINDOW_DIV;
}

/* Everyone arriving together, an arrival-aware broadcast costs its
 * sub-broadcast's time over all ranks plus the root's gathering window
 * and about two latencies of p ranks (the ARRIVED messages in, the GROUP
 * headers out). Worth it when that is at most MMP__ARRIVAL_AUTO_SHARE
 * above the static choice's time: arriving apart, it is several times
 * faster (docs/design/auto.md). Where the static choice is the pipeline
 * itself, the rule is the overhead against that share of it; where it is
 * a shape the sub-broadcast cannot be (the node hierarchy), the gap
 * counts too. */
int mmp__bcast_arrival_pays(int p, size_t len, const mmp_netmodel_t *nm,
                            double best, double sub) {
  double w = mmp__arrival_window(p, len, nm);

  return p >= 3 && w > 0 &&
         w + 2 * p * nm->alpha + sub <= (1 + MMP__ARRIVAL_AUTO_SHARE) * best;
}

/* The sub-group broadcast is a pipelined chain unless told otherwise, in
 * the model's segments unless opts.segment says (AUTO's own pick takes
 * the model's). */
static int arrival_resolve(mmp__desc_t *d, const mmp__env_t *env) {
  size_t seg = env->auto_pick ? 0 : d->seg;
  mmp_netmodel_t nm;
  int rc;

  if (d->inner == NULL)
    d->inner = &mmp__bcast_pipeline_alg;
  if (seg == 0 && d->inner == &mmp__bcast_pipeline_alg) {
    if ((rc = mmp__env_model(env, &nm)) != 0)
      return rc;
    seg = mmp__pipeline_seg(env->p, (size_t)d->count, &nm);
  }
  d->seg = seg;
  return 0;
}

const mmp__alg_t mmp__bcast_arrival_b_alg = {
    .name = "arrival_b",
    .summary = "arrival-aware: rounds among the ranks that have arrived",
    .takes = MMP_OPT_SEGMENT | MMP_OPT_INNER,
    .flags = MMP__ALG_DYNAMIC,
    .start = arrival_start,
    .resolve = arrival_resolve,
};

const mmp__alg_t mmp__bcast_arrival_nb_alg = {
    .name = "arrival_nb",
    .summary = "arrival-aware, pushing to ranks not yet arrived",
    .takes = MMP_OPT_SEGMENT | MMP_OPT_INNER,
    .flags = MMP__ALG_DYNAMIC,
    .start = arrival_start,
    .resolve = arrival_resolve,
};
