/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory transport: ranks on one host exchange the same frames
 * as over TCP, through rings in shared memory, and large payloads with a
 * single copy from the sender's memory into the receiver's.
 *
 * Segments. Every rank creates one segment, a POSIX shared-memory object
 * of mode 0600 named from the job key and its rank (mmp__shm_names), that
 * holds one ring per other local rank: the ring that rank writes and this
 * one reads. Every rank maps the segments of the others and checks each
 * (owner, mode, size, header) before trusting any of it. Once every local
 * rank has mapped every segment the names are removed, so nothing is left
 * behind whatever later happens to the processes.
 *
 * Rings. A ring is a single-producer, single-consumer byte stream with
 * free-running 64-bit indices: the producer owns `tail`, the consumer
 * `head`, on separate cache lines. Each side keeps its own index privately
 * and checks the other's before using it, so a corrupted index drops the
 * pair with a logged reason instead of sending us outside the ring. The
 * bytes are frames exactly as on a TCP connection (frame.h, with sequence
 * numbers); the reader validates every header, asks the runtime for a sink
 * and copies the payload straight into it.
 *
 * Single copy. A DATA frame of at least SHM_REF_MIN bytes, and an EAGER
 * frame larger than the ring, travels as its header plus a descriptor
 * (address, length) of the payload in the sender's memory; the receiver
 * reads the payload with process_vm_readv() straight into its sink and
 * then counts it done in the ring (`ref_done`), which completes the
 * sender's write. At set-up each rank tries to read a probe word from
 * every peer; where the kernel refuses (ptrace restrictions, another user
 * namespace, another pid namespace) that peer sends every payload through
 * the ring instead.
 *
 * Wake-ups. A rank that spins finds new bytes by looking at the rings (the
 * progress engine calls poll() between its loop passes). Before its loop
 * sleeps it sets `asleep` in its own segment and looks once more; a peer
 * that then adds bytes, frees space it waits for or completes a pull rings
 * the sleeper's doorbell, a FIFO whose read end the sleeper's loop polls.
 * The flag and the indices are published with sequentially consistent
 * stores and fences on both sides, so either the sleeper sees the bytes or
 * the peer sees the flag.
 *
 * Liveness. The death of a peer process is watched through a pidfd, so
 * its pairs fail at once, like a reset TCP connection; a stopped peer is
 * found by the runtime's heartbeat as over TCP.
 */
#include "transport.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "minimp.h"
#include "util.h"

#define SHM_MAGIC 0x314d48535f504d4dull /* "MMP_SHM1" */
#define SHM_VERSION 2
/* The producer's and the consumer's fields sit on separate lines, twice
 * the cache line because x86 prefetches lines in pairs. */
#define SHM_LINE 128
#define SHM_HDR_BYTES 4096u /* the segment header's page */
#define SHM_RING_CTL 256u   /* a ring's indices, before its data */
#define SHM_FF_REF 0x8000u  /* ring-only flag: payload by reference */
#define SHM_REF_BYTES 16u   /* what follows a REF header: address, length */
#define SHM_REF_MIN (16u * 1024) /* smaller DATA payloads go through rings */
/* DATA payload asked of the runtime where the peer pulls them: each frame
 * costs a round trip, so large ones stream faster (docs/design/transport.md,
 * "Single copy"). */
#define SHM_PULL_CHUNK (4u << 20)
/* How long, since a payload of ours was last posted or pulled, the pulls a
 * peer still owes us count as activity (shm_progress), in ns. */
#define SHM_PULL_PATIENCE 2000000u
#define SHM_MAX_SEGMENT (1ull << 40)
/* A record is copied into the ring, and published, in pieces of at most
 * this many bytes, so that the consumer's copy out overlaps ours in. */
#define SHM_PIPE_CHUNK (16u * 1024)
/* Frames whose payload is at most this long are handed to the runtime
 * whole (frame_whole), in one call, once all of them is in the ring. */
#define SHM_WHOLE_MAX 4096u

/* The head of a segment. Written once by its owner before anyone maps it,
 * except `asleep` and `cpu`. */
typedef struct shm_seg_s {
  uint64_t magic;
  uint32_t version;
  uint32_t nslots; /* rings: one per local rank (its own slot unused) */
  uint64_t ring_bytes;
  uint64_t slot_bytes;
  int32_t rank;
  int32_t pid;
  uint64_t probe_addr;  /* a word in the owner's memory ... */
  uint64_t probe_value; /* ... holding this, for the single-copy probe */
  alignas(SHM_LINE) _Atomic uint32_t asleep; /* the owner's loop sleeps */
  _Atomic int32_t cpu; /* the CPU the owner last polled on, or -1 */
} shm_seg_t;

/* A ring's indices; its data follows at SHM_RING_CTL. */
typedef struct shm_ring_s {
  /* The producer's line. */
  alignas(SHM_LINE) _Atomic uint64_t tail;
  _Atomic uint32_t eof;        /* nothing follows tail any more */
  _Atomic uint32_t want_space; /* the producer waits for room */
  /* The consumer's line. */
  alignas(SHM_LINE) _Atomic uint64_t head;
  _Atomic uint64_t ref_done; /* REF payloads pulled so far */
  _Atomic uint32_t pull_ok;  /* the consumer can read the producer */
} shm_ring_t;

_Static_assert(sizeof(shm_seg_t) <= SHM_HDR_BYTES, "segment header");
_Static_assert(sizeof(shm_ring_t) <= SHM_RING_CTL, "ring control");

enum shm_state {
  SHM_IDLE,     /* attached, not started */
  SHM_UP,       /* frames flow */
  SHM_SHUTDOWN, /* EOF goes out after the queued writes; reading on */
  SHM_CLOSED
};

struct mmp__tp_conn_s {
  mmp__tp_t *tp;
  int peer; /* world rank */
  int lidx; /* its index among the local ranks */
  int state;
  int up_reported;
  const char *broken; /* a failure found where peer_down cannot run */
  /* The peer's segment, its doorbell, its process. */
  shm_seg_t *pseg;
  size_t pseg_len;
  int bell_fd;
  int pidfd;
  pid_t pid;    /* 0: its ids mean nothing here */
  int can_pull; /* our probe read its memory: it may send by reference */
  uv_poll_t pid_poll;
  uv_timer_t timer;
  int handles; /* initialised libuv handles */
  /* Receiving: the ring it writes in our segment. */
  shm_ring_t *rx;
  uint8_t *rx_data;
  uint64_t rx_head; /* ours; the copy in shared memory is for the peer */
  uint64_t rx_pub;  /* last head published */
  uint64_t rx_need; /* bytes that must be there before reading on */
  uint64_t rx_seq;
  uint64_t pulls; /* REF payloads pulled */
  int in_payload;
  mmp__frame_hdr_t cur;
  uint64_t pay_left, pay_off;
  mmp__sink_t sink;
  /* Sending: the ring we write in its segment. tx_tail, tx_head, tx_seq,
   * `partial` and the ring's free bytes have one writer at a time, which
   * alone reads them too: while `queued` is 0, the caller that serialises
   * this pair's writes (write, write_direct, send_inline; the runtime's
   * engine lock); while it is not, the loop, which moves the queued
   * writes (shm_flush). `queued` hands them over, so any other thread
   * reads `queued` first (shm_tx_free). Debug builds check that writers
   * never overlap (shm_tx_enter). */
  shm_ring_t *tx;
  uint8_t *tx_data;
  uint64_t tx_cap;
  uint64_t tx_tail; /* ours */
  uint64_t tx_head; /* its head as last read and checked */
  uint64_t tx_seq;
  mmp__list_t pending; /* writes waiting for room, in order (loop) */
  _Atomic int queued;  /* writes in `pending` (or the pair closed) */
#ifndef NDEBUG
  _Atomic uintptr_t tx_writer; /* the thread writing the sending side */
#endif
  mmp__list_t refs; /* REF writes waiting for the peer's pull */
  uint64_t refs_posted, refs_acked;
  int partial; /* a record is partly in the ring: it goes on first */
  int pull_ok; /* the peer reads our DATA payloads itself */
  int shut;    /* EOF follows the queued writes */
  int eof_sent;
};

struct mmp__tp_s {
  uv_loop_t *loop;
  mmp__tp_config_t cfg;
  mmp__tp_callbacks_t cb;
  int *local;
  int nlocal;
  int me; /* our index in local[] */
  mmp__tp_conn_t **conns;
  shm_seg_t *seg;
  size_t seg_len;
  uint64_t slot_bytes;
  char seg_name[MMP__SHM_NAME_MAX];
  char bell_path[MMP__SHM_NAME_MAX];
  int named; /* our names still exist */
  int bell_rd;
  uv_poll_t bell_poll;
  uv_prepare_t prep;
  uv_check_t check;
  uv_idle_t idle;
  int armed;
  mmp__list_t done;    /* writes whose callback is due */
  uint64_t pull_since; /* uv_hrtime() a payload was last posted or pulled */
  unsigned open;       /* open handles, for destroy */
  int destroying;
  void (*destroy_done)(void *);
  void *destroy_arg;
  volatile uint64_t probe;
  _Atomic uint64_t dropped, frames_in, frames_out, bytes_in, bytes_out;
  _Atomic uint64_t pulled, pull_frames, bells, arms;
  _Atomic int peers, pulling;
};

static void shm_fail(mmp__tp_conn_t *c, int err, const char *reason,
                     int bad_input);
static int shm_progress(mmp__tp_t *tp);

/* ---- Small helpers ------------------------------------------------------ */

static shm_ring_t *shm_slot(shm_seg_t *s, uint64_t slot_bytes, int i) {
  return (shm_ring_t *)((uint8_t *)s + SHM_HDR_BYTES +
                        (uint64_t)i * slot_bytes);
}

static uint64_t shm_slot_bytes(uint64_t ring) {
  return (SHM_RING_CTL + ring + 4095) & ~(uint64_t)4095;
}

static int shm_pow2(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

static void ring_put(uint8_t *data, uint64_t cap, uint64_t pos, const void *src,
                     size_t n) {
  size_t off = (size_t)(pos & (cap - 1)), first = (size_t)cap - off;

  if (first >= n) {
    memcpy(data + off, src, n);
  } else {
    memcpy(data + off, src, first);
    memcpy(data, (const uint8_t *)src + first, n - first);
  }
}

static void ring_get(const uint8_t *data, uint64_t cap, uint64_t pos, void *dst,
                     size_t n) {
  size_t off = (size_t)(pos & (cap - 1)), first = (size_t)cap - off;

  if (first >= n) {
    memcpy(dst, data + off, n);
  } else {
    memcpy(dst, data + off, first);
    memcpy((uint8_t *)dst + first, data, n - first);
  }
}

static int shm_local_index(const mmp__tp_t *tp, int rank) {
  int lo = 0, hi = tp->nlocal - 1;

  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (tp->local[mid] == rank)
      return mid;
    if (tp->local[mid] < rank)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

static mmp__tp_conn_t *shm_conn(const mmp__tp_t *tp, int rank) {
  int i = shm_local_index(tp, rank);
  return i < 0 ? NULL : tp->conns[i];
}

/* Rings the peer's doorbell if its loop sleeps. Any thread. The fence
 * orders our index stores before the look at its flag (see the top). */
static void shm_kick(mmp__tp_conn_t *c) {
  _Atomic uint32_t *asleep = &c->pseg->asleep;
  char b = 1;
  ssize_t n;

  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(asleep, memory_order_relaxed) == 0 ||
      atomic_exchange_explicit(asleep, 0, memory_order_seq_cst) == 0)
    return;
  /* A full pipe already wakes the peer; every other error is its death,
   * which its pidfd reports. */
  do
    n = write(c->bell_fd, &b, 1);
  while (n < 0 && errno == EINTR);
  atomic_fetch_add_explicit(&c->tp->bells, 1, memory_order_relaxed);
}

/* Lets the loop go round at once while callbacks or failures are due. */
static void shm_idle_cb(uv_idle_t *h) {
  shm_progress(h->data);
}

static void shm_idle_update(mmp__tp_t *tp) {
  int due = !mmp__list_empty(&tp->done);

  for (int i = 0; i < tp->nlocal && !due; i++)
    due = tp->conns[i] != NULL && tp->conns[i]->broken != NULL &&
          tp->conns[i]->state != SHM_CLOSED;
  if (tp->destroying)
    return;
  if (due)
    uv_idle_start(&tp->idle, shm_idle_cb);
  else
    uv_idle_stop(&tp->idle);
}

/* ---- Writing ------------------------------------------------------------ */

/* The calling thread starts and ends writing c's sending side. Debug
 * builds record it: a second writer meanwhile, which would interleave two
 * records in the ring, fails the assertion (see struct mmp__tp_conn_s). */
static void shm_tx_enter(mmp__tp_conn_t *c) {
#ifndef NDEBUG
  uintptr_t was = atomic_exchange_explicit(&c->tx_writer, mmp__thread_self(),
                                           memory_order_relaxed);
  assert(was == 0);
  (void)was;
#else
  (void)c;
#endif
}

static void shm_tx_leave(mmp__tp_conn_t *c) {
#ifndef NDEBUG
  atomic_store_explicit(&c->tx_writer, 0, memory_order_relaxed);
#else
  (void)c;
#endif
}

/* Any thread, under the caller's serialisation of this pair's writes.
 * 1 if the sending side is the caller's: no write is queued, which hands
 * it over from the loop (the acquire pairs with shm_flush's release), and
 * no record is partly in the ring. Nothing of the sending side may be
 * read before this says 1. */
static int shm_tx_free(const mmp__tp_conn_t *c) {
  return atomic_load_explicit(&c->queued, memory_order_acquire) == 0 &&
         !c->partial;
}

/* 1 if the payload of `w`, not yet encoded, goes by reference: rendezvous
 * data, and eager payloads that would not fit the ring anyway (their
 * sender waits for the receiver either way, as over TCP once the socket is
 * full). */
static int shm_by_ref(const mmp__tp_conn_t *c, const mmp__tp_write_t *w) {
  return c->pull_ok && w->npayload == 1 &&
         ((w->hdr.type == MMP__F_DATA && w->payload[0].len >= SHM_REF_MIN) ||
          (w->hdr.type == MMP__F_EAGER && w->payload[0].len > c->tx_cap));
}

/* Assigns the sequence number and encodes the header, once per frame, and
 * decides there whether the payload goes by reference. */
static void shm_encode_once(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  if (w->encoded_)
    return;
  if (shm_by_ref(c, w))
    w->hdr.flags |= SHM_FF_REF;
  w->hdr.seq = c->tx_seq++;
  w->hdr.src = (uint32_t)c->tp->cfg.rank;
  mmp__frame_encode(&w->hdr, w->wire_);
  w->offset_ = 0;
  w->encoded_ = 1;
}

static uint64_t shm_record_len(const mmp__tp_write_t *w) {
  uint64_t n = MMP__FRAME_HDR_SIZE;

  if (w->hdr.flags & SHM_FF_REF)
    return n + SHM_REF_BYTES;
  for (unsigned i = 0; i < w->npayload; i++)
    n += w->payload[i].len;
  return n;
}

/* Copies the next `n` bytes of w's record into the ring at tx_tail. */
static void shm_copy_record(mmp__tp_conn_t *c, mmp__tp_write_t *w, uint64_t n) {
  uint8_t desc[SHM_REF_BYTES];
  const void *piece[3];
  uint64_t plen[3], skip = w->offset_, pos = c->tx_tail;
  unsigned np = 0;

  piece[np] = w->wire_;
  plen[np++] = MMP__FRAME_HDR_SIZE;
  if (w->hdr.flags & SHM_FF_REF) {
    mmp__put_u64(desc, (uint64_t)(uintptr_t)w->payload[0].base);
    mmp__put_u64(desc + 8, w->payload[0].len);
    piece[np] = desc;
    plen[np++] = SHM_REF_BYTES;
  } else {
    for (unsigned i = 0; i < w->npayload; i++) {
      piece[np] = w->payload[i].base;
      plen[np++] = w->payload[i].len;
    }
  }
  for (unsigned i = 0; i < np && n > 0; i++) {
    uint64_t take;
    if (skip >= plen[i]) {
      skip -= plen[i];
      continue;
    }
    take = plen[i] - skip < n ? plen[i] - skip : n;
    ring_put(c->tx_data, c->tx_cap, pos, (const uint8_t *)piece[i] + skip,
             (size_t)take);
    pos += take;
    n -= take;
    skip = 0;
  }
}

/*
 * Copies as much of `w` as fits into the ring towards c's peer. The
 * caller writes the sending side (see struct mmp__tp_conn_s): the loop
 * while writes are queued, else whoever serialises the pair's writes.
 * Returns 1 once the whole record is in, 0 when it waits for room
 * (want_space is then set), -1 when the peer's head index is impossible.
 * *moved tells whether bytes went in.
 */
static int shm_push_owned(mmp__tp_conn_t *c, mmp__tp_write_t *w, int *moved) {
  uint64_t total, room, cap = c->tx_cap;
  int waited = 0;

  shm_encode_once(c, w);
  total = shm_record_len(w);
  for (;;) {
    uint64_t left = total - w->offset_, n;
    room = cap - (c->tx_tail - c->tx_head);
    if (room < left) {
      uint64_t h = atomic_load_explicit(
          &c->tx->head, waited ? memory_order_seq_cst : memory_order_acquire);
      /* The peer's head lies between ours and our tail, or it is lying. */
      if (h - c->tx_head > c->tx_tail - c->tx_head)
        return -1;
      c->tx_head = h;
      room = cap - (c->tx_tail - c->tx_head);
    }
    n = room < left ? room : left;
    while (n > 0) {
      /* In pieces, each published at once, so that the consumer copies
       * one out while we copy the next in. */
      uint64_t k = n < SHM_PIPE_CHUNK ? n : SHM_PIPE_CHUNK;
      if (*moved)
        shm_kick(c); /* a sleeping consumer starts on the last piece */
      shm_copy_record(c, w, k);
      c->tx_tail += k;
      w->offset_ += k;
      n -= k;
      atomic_store_explicit(&c->tx->tail, c->tx_tail, memory_order_release);
      atomic_fetch_add_explicit(&c->tp->bytes_out, k, memory_order_relaxed);
      *moved = 1;
    }
    c->partial = w->offset_ != total;
    if (w->offset_ == total)
      return 1;
    if (waited)
      return 0;
    /* Ask for a doorbell when room appears, then look once more: the
     * consumer may have made room before it could see the request. */
    atomic_store_explicit(&c->tx->want_space, 1, memory_order_seq_cst);
    waited = 1;
  }
}

/* shm_push_owned, with the writer recorded (shm_tx_enter). */
static int shm_push(mmp__tp_conn_t *c, mmp__tp_write_t *w, int *moved) {
  int r;

  shm_tx_enter(c);
  r = shm_push_owned(c, w, moved);
  shm_tx_leave(c);
  return r;
}

/* Loop context. A completely pushed write: REF writes wait for the pull,
 * the others' callbacks are due. */
static void shm_pushed(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  mmp__tp_t *tp = c->tp;

  atomic_fetch_add_explicit(&tp->frames_out, 1, memory_order_relaxed);
  w->status_ = 0;
  if (w->hdr.flags & SHM_FF_REF) {
    c->refs_posted++;
    tp->pull_since = uv_hrtime();
    mmp__list_insert_tail(&c->refs, &w->node_);
  } else {
    mmp__list_insert_tail(&tp->done, &w->node_);
  }
}

static int shm_write(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  mmp__tp_t *tp = c->tp;
  int moved = 0, r = 0;

  MMP__ASSERT_LOOP_OF(tp->loop);
  assert(w->npayload <= MMP__ARRAY_SIZE(w->payload));
  if (c->state != SHM_UP)
    return MMP_EPEERLOST;
  w->status_ = 0;
  if (mmp__list_empty(&c->pending) && c->broken == NULL) {
    r = shm_push(c, w, &moved);
    if (moved)
      shm_kick(c);
    if (r == 1) {
      shm_pushed(c, w);
      shm_idle_update(tp);
      return 0;
    }
    /* The runtime holds its lock here, so the failure waits for the
     * loop's next pass (peer_down takes that lock). */
    if (r < 0)
      c->broken = "corrupt ring index (head) from the peer";
  }
  mmp__list_insert_tail(&c->pending, &w->node_);
  atomic_fetch_add_explicit(&c->queued, 1, memory_order_relaxed);
  shm_idle_update(tp);
  return 0;
}

static int shm_write_direct(mmp__tp_conn_t *c, mmp__tp_write_t *w) {
  int moved = 0, r;

  assert(w->npayload <= MMP__ARRAY_SIZE(w->payload));
  if (!shm_tx_free(c))
    return 0;
  /* A payload by reference completes in the loop, when the peer has it. */
  if (!w->encoded_ && shm_by_ref(c, w))
    return 0;
  r = shm_push(c, w, &moved);
  if (moved)
    shm_kick(c);
  if (r != 1)
    return 0; /* write() finds a corrupt index again and reports it */
  atomic_fetch_add_explicit(&c->tp->frames_out, 1, memory_order_relaxed);
  return 1;
}

/* shm_send_inline once the sending side is the caller's (shm_tx_free):
 * writes `h` and `len` bytes of payload if they fit now. Returns 1 if
 * written, 0 if not (nothing written). */
static int shm_inline_owned(mmp__tp_conn_t *c, mmp__frame_hdr_t *h,
                            const void *buf, size_t len) {
  uint64_t total = MMP__FRAME_HDR_SIZE + (uint64_t)len, cap = c->tx_cap;
  uint64_t off = c->tx_tail & (cap - 1);

  if (cap - (c->tx_tail - c->tx_head) < total) {
    uint64_t hd = atomic_load_explicit(&c->tx->head, memory_order_acquire);
    /* An impossible head is reported by write(), which the caller uses
     * next. */
    if (hd - c->tx_head > c->tx_tail - c->tx_head)
      return 0;
    c->tx_head = hd;
    if (cap - (c->tx_tail - c->tx_head) < total)
      return 0;
  }
  h->seq = c->tx_seq++;
  h->src = (uint32_t)c->tp->cfg.rank;
  h->len = len;
  if (cap - off >= MMP__FRAME_HDR_SIZE) {
    mmp__frame_encode(h, c->tx_data + off);
  } else {
    uint8_t wire[MMP__FRAME_HDR_SIZE];
    mmp__frame_encode(h, wire);
    ring_put(c->tx_data, cap, c->tx_tail, wire, sizeof(wire));
  }
  if (len > 0)
    ring_put(c->tx_data, cap, c->tx_tail + MMP__FRAME_HDR_SIZE, buf, len);
  c->tx_tail += total;
  atomic_store_explicit(&c->tx->tail, c->tx_tail, memory_order_release);
  atomic_fetch_add_explicit(&c->tp->bytes_out, total, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->tp->frames_out, 1, memory_order_relaxed);
  return 1;
}

/* Any thread, under the caller's serialisation of this pair's writes (as
 * write_direct). Writes the frame `h` with `len` payload bytes straight
 * into the ring if it fits now and nothing waits before it: the header is
 * encoded in place, without a write to carry it. Returns 1 if written, 0
 * if not (nothing written). */
static int shm_send_inline(mmp__tp_conn_t *c, const mmp__frame_hdr_t *h,
                           const void *buf, size_t len) {
  uint64_t total = MMP__FRAME_HDR_SIZE + (uint64_t)len, cap = c->tx_cap;
  mmp__frame_hdr_t hdr = *h;
  int r;

  if (total > cap || !shm_tx_free(c))
    return 0;
  shm_tx_enter(c);
  r = shm_inline_owned(c, &hdr, buf, len);
  shm_tx_leave(c);
  if (r == 1)
    shm_kick(c);
  return r;
}

/* Loop context. Moves queued writes into the ring as room allows, and
 * sends EOF after the last once shutdown was asked. Returns 1 if anything
 * moved. */
static int shm_flush(mmp__tp_conn_t *c) {
  mmp__list_t *it;
  int moved = 0, did = 0;

  while ((it = mmp__list_head(&c->pending)) != NULL) {
    mmp__tp_write_t *w = mmp__container_of(it, mmp__tp_write_t, node_);
    int r;
    /* Queued writes make the sending side the loop's (struct comment). */
    assert(atomic_load_explicit(&c->queued, memory_order_relaxed) > 0);
    r = shm_push(c, w, &moved);
    if (r < 0) {
      shm_fail(c, MMP_EPROTO, "corrupt ring index (head) from the peer", 1);
      return 1;
    }
    if (r == 0)
      break;
    mmp__list_remove(it);
    shm_pushed(c, w);
    /* After the tail store, so that write_direct sees it. */
    atomic_fetch_sub_explicit(&c->queued, 1, memory_order_release);
    did = 1;
  }
  if (c->shut && !c->eof_sent && mmp__list_empty(&c->pending)) {
    c->eof_sent = 1;
    atomic_store_explicit(&c->tx->eof, 1, memory_order_release);
    moved = 1;
  }
  if (moved)
    shm_kick(c);
  return did || moved;
}

/* Loop context. Completes the REF writes the peer has pulled. */
static int shm_acks(mmp__tp_conn_t *c) {
  uint64_t d = atomic_load_explicit(&c->tx->ref_done, memory_order_acquire);
  int did = 0;

  if (d - c->refs_acked > c->refs_posted - c->refs_acked) {
    shm_fail(c, MMP_EPROTO, "corrupt pull count from the peer", 1);
    return 1;
  }
  while (c->refs_acked != d) {
    mmp__list_t *it = mmp__list_head(&c->refs);
    assert(it != NULL);
    mmp__list_remove(it);
    mmp__list_insert_tail(&c->tp->done, it);
    c->refs_acked++;
    did = 1;
  }
  if (did)
    c->tp->pull_since = uv_hrtime();
  return did;
}

/* Loop context. Runs the callbacks that are due. */
static int shm_run_done(mmp__tp_t *tp) {
  mmp__list_t *it;
  int did = 0;

  while ((it = mmp__list_head(&tp->done)) != NULL) {
    mmp__tp_write_t *w = mmp__container_of(it, mmp__tp_write_t, node_);
    mmp__list_remove(it);
    did = 1;
    if (w->cb != NULL)
      w->cb(w, w->status_); /* may free w */
  }
  return did;
}

/* ---- Reading ------------------------------------------------------------ */

/* Publishes how far we have read, and rings the producer if it waits for
 * room. */
static void shm_publish(mmp__tp_conn_t *c) {
  if (c->rx_pub == c->rx_head)
    return;
  c->rx_pub = c->rx_head;
  atomic_store_explicit(&c->rx->head, c->rx_head, memory_order_seq_cst);
  if (atomic_load_explicit(&c->rx->want_space, memory_order_seq_cst) &&
      atomic_exchange_explicit(&c->rx->want_space, 0, memory_order_seq_cst))
    shm_kick(c);
}

/* Reads a REF payload from the peer's memory into the sink. Returns 0 or
 * fails the pair and returns -1. */
static int shm_pull(mmp__tp_conn_t *c, uint64_t addr) {
  mmp__tp_t *tp = c->tp;
  uint64_t want = c->sink.len < c->cur.len ? c->sink.len : c->cur.len;
  uint64_t got = 0;

  if (!c->can_pull) {
    shm_fail(c, MMP_EPROTO, "payload by reference from a peer we cannot read",
             1);
    return -1;
  }
  while (got < want) {
    struct iovec l = {(uint8_t *)c->sink.buf + got, (size_t)(want - got)};
    struct iovec r = {(void *)(uintptr_t)(addr + got), (size_t)(want - got)};
    ssize_t n = process_vm_readv(c->pid, &l, 1, &r, 1, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EFAULT;
      if (e == ESRCH)
        shm_fail(c, MMP_EPEERLOST, "the process is gone", 0);
      else
        shm_fail(c, e == EFAULT ? MMP_EPROTO : MMP_EIO,
                 e == EFAULT ? "payload reference outside the peer's memory"
                             : "cannot read the peer's memory",
                 e == EFAULT);
      return -1;
    }
    got += (uint64_t)n;
  }
  atomic_fetch_add_explicit(&tp->pulled, want, memory_order_relaxed);
  atomic_fetch_add_explicit(&tp->pull_frames, 1, memory_order_relaxed);
  c->pulls++;
  atomic_store_explicit(&c->rx->ref_done, c->pulls, memory_order_seq_cst);
  shm_kick(c);
  return 0;
}

/* A frame's payload is all in: tell the runtime. Returns 0 to go on. */
static int shm_frame_done(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  int rc = tp->cb.frame_done(tp->cb.ctx, c->peer, &c->cur);

  c->in_payload = 0;
  if (rc != 0) {
    shm_fail(c, rc, "frame rejected by the runtime", 1);
    return -1;
  }
  return c->state == SHM_CLOSED ? -1 : 0;
}

/* The checked header is consumed and its whole payload follows at
 * rx_head: hand both to the runtime at once. Returns 0 to go on, -1 if
 * the pair failed. */
static int shm_whole(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  uint64_t cap = tp->cfg.ring_bytes, off = c->rx_head & (cap - 1);
  size_t len = (size_t)c->cur.len;
  size_t n0 = cap - off < len ? (size_t)(cap - off) : len;
  int rc = tp->cb.frame_whole(tp->cb.ctx, c->peer, &c->cur, c->rx_data + off,
                              n0, c->rx_data, len - n0);

  c->rx_head += len;
  atomic_fetch_add_explicit(&tp->bytes_in, len, memory_order_relaxed);
  if (rc != 0) {
    shm_fail(c, rc, "frame rejected by the runtime", 1);
    return -1;
  }
  return c->state == SHM_CLOSED ? -1 : 0;
}

/* A whole header (and descriptor) is at rx_head: check it and hand it to
 * the runtime. Returns 0 to go on, 1 to wait for more bytes, -1 if the
 * pair failed. */
static int shm_header(mmp__tp_conn_t *c, uint64_t avail) {
  mmp__tp_t *tp = c->tp;
  uint8_t hb[MMP__FRAME_HDR_SIZE + SHM_REF_BYTES];
  const char *why = NULL;
  uint64_t addr = 0;
  int rc, ref;

  ring_get(c->rx_data, tp->cfg.ring_bytes, c->rx_head, hb, MMP__FRAME_HDR_SIZE);
  rc = mmp__frame_decode(hb, tp->cfg.max_frame, &c->cur, &why);
  if (rc != 0) {
    shm_fail(c, rc, why, 1);
    return -1;
  }
  ref = (c->cur.flags & SHM_FF_REF) != 0;
  if (ref && c->cur.type != MMP__F_DATA && c->cur.type != MMP__F_EAGER) {
    shm_fail(c, MMP_EPROTO,
             "payload by reference on a frame other than DATA or EAGER", 1);
    return -1;
  }
  if (ref && avail < MMP__FRAME_HDR_SIZE + SHM_REF_BYTES) {
    c->rx_need = MMP__FRAME_HDR_SIZE + SHM_REF_BYTES;
    return 1;
  }
  if (c->cur.seq != c->rx_seq) {
    shm_fail(c, MMP_EPROTO, "frame out of sequence", 1);
    return -1;
  }
  if (ref) {
    ring_get(c->rx_data, tp->cfg.ring_bytes, c->rx_head + MMP__FRAME_HDR_SIZE,
             hb + MMP__FRAME_HDR_SIZE, SHM_REF_BYTES);
    addr = mmp__get_u64(hb + MMP__FRAME_HDR_SIZE);
    if (mmp__get_u64(hb + MMP__FRAME_HDR_SIZE + 8) != c->cur.len) {
      shm_fail(c, MMP_EPROTO, "payload reference of the wrong length", 1);
      return -1;
    }
    c->cur.flags &= (uint16_t)~SHM_FF_REF;
  }
  c->rx_seq++;
  c->rx_head += MMP__FRAME_HDR_SIZE + (ref ? SHM_REF_BYTES : 0);
  atomic_fetch_add_explicit(&tp->frames_in, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&tp->bytes_in,
                            MMP__FRAME_HDR_SIZE + (ref ? SHM_REF_BYTES : 0),
                            memory_order_relaxed);
  if (mmp__frame_is_handshake(c->cur.type)) {
    shm_fail(c, MMP_EPROTO, "handshake frame on a shared-memory pair", 1);
    return -1;
  }
  if (c->cur.src != (uint32_t)c->peer) {
    shm_fail(c, MMP_EPROTO, "frame with a forged source rank", 1);
    return -1;
  }
  if (!ref && tp->cb.frame_whole != NULL && c->cur.len <= SHM_WHOLE_MAX &&
      avail - MMP__FRAME_HDR_SIZE >= c->cur.len)
    return shm_whole(c);
  c->sink.buf = NULL;
  c->sink.len = 0;
  rc = tp->cb.frame(tp->cb.ctx, c->peer, &c->cur, &c->sink);
  if (rc != 0) {
    shm_fail(c, rc, "frame rejected by the runtime", 1);
    return -1;
  }
  if (c->state == SHM_CLOSED)
    return -1;
  c->in_payload = 1;
  c->pay_left = c->cur.len;
  c->pay_off = 0;
  if (ref) {
    if (shm_pull(c, addr) != 0)
      return -1;
    c->pay_left = 0;
  }
  if (c->pay_left == 0)
    return shm_frame_done(c);
  return 0;
}

/* The ring is drained and the peer said EOF. */
static void shm_eof(mmp__tp_conn_t *c, uint64_t avail) {
  if (avail > 0 || c->in_payload)
    shm_fail(c, MMP_EPEERLOST, "closed in the middle of a frame", 0);
  else if (c->state == SHM_SHUTDOWN)
    shm_fail(c, 0, "connection closed by peer", 0);
  else
    shm_fail(c, MMP_EPEERLOST, "connection closed by peer", 0);
}

/* Loop context. Reads what the peer wrote. Returns 1 if anything moved. */
static int shm_read(mmp__tp_conn_t *c) {
  mmp__tp_t *tp = c->tp;
  uint64_t cap = tp->cfg.ring_bytes, tail, start = c->rx_head;

  if (c->state != SHM_UP && c->state != SHM_SHUTDOWN)
    return 0;
  tail = atomic_load_explicit(&c->rx->tail, memory_order_acquire);
  if (tail - c->rx_head > cap) {
    shm_fail(c, MMP_EPROTO, "corrupt ring index (tail) from the peer", 1);
    return 1;
  }
  while (c->state == SHM_UP || c->state == SHM_SHUTDOWN) {
    uint64_t avail = tail - c->rx_head;
    if (!c->in_payload) {
      c->rx_need = MMP__FRAME_HDR_SIZE;
      if (avail < MMP__FRAME_HDR_SIZE || shm_header(c, avail) != 0)
        break;
    } else {
      uint64_t n = avail < c->pay_left ? avail : c->pay_left, t;
      c->rx_need = 1;
      if (n == 0) {
        /* The producer may be copying the next piece in (shm_push):
         * free what we read, and take the piece if it is there now. */
        shm_publish(c);
        t = atomic_load_explicit(&c->rx->tail, memory_order_acquire);
        if (t == tail || t - c->rx_head > cap)
          break;
        tail = t;
        continue;
      }
      if (c->pay_off < c->sink.len) {
        uint64_t m =
            c->sink.len - c->pay_off < n ? c->sink.len - c->pay_off : n;
        ring_get(c->rx_data, cap, c->rx_head,
                 (uint8_t *)c->sink.buf + c->pay_off, (size_t)m);
      }
      c->rx_head += n;
      c->pay_off += n;
      c->pay_left -= n;
      atomic_fetch_add_explicit(&tp->bytes_in, n, memory_order_relaxed);
      /* Room for the producer as soon as a large payload frees some. */
      if (c->rx_head - c->rx_pub >= cap / 4)
        shm_publish(c);
      if (c->pay_left == 0 && shm_frame_done(c) != 0)
        break;
    }
  }
  if (c->state == SHM_CLOSED)
    return 1;
  shm_publish(c);
  if (tail - c->rx_head < c->rx_need &&
      atomic_load_explicit(&c->rx->eof, memory_order_acquire)) {
    /* EOF is stored after the last tail: look at the tail again. */
    uint64_t t = atomic_load_explicit(&c->rx->tail, memory_order_acquire);
    if (t == tail) {
      shm_eof(c, t - c->rx_head);
      return 1;
    }
  }
  return c->rx_head != start;
}

/* ---- The loop ----------------------------------------------------------- */

/* Loop context. 1 if a look at the rings would find something to do. */
static int shm_ready(mmp__tp_t *tp) {
  if (!mmp__list_empty(&tp->done))
    return 1;
  for (int i = 0; i < tp->nlocal; i++) {
    mmp__tp_conn_t *c = tp->conns[i];
    if (c == NULL || (c->state != SHM_UP && c->state != SHM_SHUTDOWN))
      continue;
    if (c->broken != NULL ||
        atomic_load_explicit(&c->rx->tail, memory_order_acquire) - c->rx_head >=
            c->rx_need ||
        atomic_load_explicit(&c->rx->eof, memory_order_acquire))
      return 1;
    if (!mmp__list_empty(&c->pending) &&
        atomic_load_explicit(&c->tx->head, memory_order_acquire) != c->tx_head)
      return 1;
    if (!mmp__list_empty(&c->refs) &&
        atomic_load_explicit(&c->tx->ref_done, memory_order_acquire) !=
            c->refs_acked)
      return 1;
  }
  return 0;
}

/* Loop context. One pass over every pair. Returns 1 if anything moved. */
static int shm_progress(mmp__tp_t *tp) {
  int did = 0, owed = 0;

  for (int i = 0; i < tp->nlocal; i++) {
    mmp__tp_conn_t *c = tp->conns[i];
    if (c == NULL || (c->state != SHM_UP && c->state != SHM_SHUTDOWN))
      continue;
    if (c->broken != NULL) {
      shm_fail(c, MMP_EPROTO, c->broken, 1);
      did = 1;
      continue;
    }
    did |= shm_read(c);
    if (c->state == SHM_CLOSED)
      continue;
    if (!mmp__list_empty(&c->refs))
      did |= shm_acks(c);
    owed |= c->state != SHM_CLOSED && !mmp__list_empty(&c->refs);
    if (!mmp__list_empty(&c->pending) || (c->shut && !c->eof_sent))
      did |= shm_flush(c);
  }
  did |= shm_run_done(tp);
  /* A peer that copies our payload moves bytes we cannot see: for a
   * while that counts as activity, so a wait polls on as it does while a
   * socket drains, instead of sleeping and paying a wake-up. It is not
   * work, though: the loop may still sleep armed. */
  if (tp->cfg.activity != NULL &&
      (did || (owed && uv_hrtime() - tp->pull_since < SHM_PULL_PATIENCE)))
    (*tp->cfg.activity)++;
  shm_idle_update(tp);
  return did;
}

static void shm_disarm(mmp__tp_t *tp) {
  if (tp->armed) {
    tp->armed = 0;
    atomic_store_explicit(&tp->seg->asleep, 0, memory_order_relaxed);
  }
}

/* Loop context. 1 if a pass over the pairs would find nothing to do: no
 * bytes or EOF to read, no writes waiting for room, no pulls awaited, no
 * callbacks due. A spinning wait looks here first: a few loads per pair,
 * where a pass is many more. */
static int shm_quiet(const mmp__tp_t *tp) {
  if (!mmp__list_empty(&tp->done))
    return 0;
  for (int i = 0; i < tp->nlocal; i++) {
    const mmp__tp_conn_t *c = tp->conns[i];
    if (c == NULL || (c->state != SHM_UP && c->state != SHM_SHUTDOWN))
      continue;
    if (c->broken != NULL || !mmp__list_empty(&c->pending) ||
        !mmp__list_empty(&c->refs) || (c->shut && !c->eof_sent) ||
        atomic_load_explicit(&c->rx->tail, memory_order_acquire) - c->rx_head >=
            c->rx_need ||
        atomic_load_explicit(&c->rx->eof, memory_order_acquire))
      return 0;
  }
  return 1;
}

static int shm_poll(mmp__tp_t *tp, int arm) {
  MMP__ASSERT_LOOP_OF(tp->loop);
  if (!arm && shm_quiet(tp))
    return 0;
  if (shm_progress(tp))
    return 1;
  if (!arm)
    return 0;
  /* Then look again: a peer that wrote before it could see the flag has
   * not rung (see the top of the file). */
  atomic_store_explicit(&tp->seg->asleep, 1, memory_order_seq_cst);
  atomic_thread_fence(memory_order_seq_cst);
  if (shm_ready(tp)) {
    atomic_store_explicit(&tp->seg->asleep, 0, memory_order_relaxed);
    return 1;
  }
  tp->armed = 1;
  atomic_fetch_add_explicit(&tp->arms, 1, memory_order_relaxed);
  return 0;
}

/* Publishes `cpu` as ours, and looks for peers that are not asleep and
 * last polled on it: they are runnable there, waiting for the CPU our
 * polling holds. A peer's line is written only when its CPU changes, so
 * it stays shared in our cache. Returns the highest rank of such a peer,
 * or -1. */
static int shm_cpu_shared(mmp__tp_t *tp, int cpu) {
  int who = -1;

  MMP__ASSERT_LOOP_OF(tp->loop);
  if (atomic_load_explicit(&tp->seg->cpu, memory_order_relaxed) != cpu)
    atomic_store_explicit(&tp->seg->cpu, cpu, memory_order_relaxed);
  for (int i = tp->nlocal - 1; i >= 0 && who < 0; i--) {
    mmp__tp_conn_t *c = tp->conns[i];
    if (c != NULL && c->state == SHM_UP &&
        atomic_load_explicit(&c->pseg->cpu, memory_order_relaxed) == cpu &&
        atomic_load_explicit(&c->pseg->asleep, memory_order_relaxed) == 0)
      who = c->peer;
  }
  return who;
}

static void shm_prepare_cb(uv_prepare_t *h) {
  shm_progress(h->data);
}

static void shm_check_cb(uv_check_t *h) {
  mmp__tp_t *tp = h->data;

  shm_disarm(tp);
  shm_progress(tp);
}

static void shm_bell_cb(uv_poll_t *h, int status, int events) {
  mmp__tp_t *tp = h->data;
  char buf[4096];
  (void)status;
  (void)events;

  /* A few reads empty a pipe; a peer that keeps ringing gets the rest
   * read on the loop's next turn, never a loop of ours without end. */
  for (int i = 0; i < 16 && read(tp->bell_rd, buf, sizeof(buf)) > 0; i++)
    ;
  shm_disarm(tp);
  shm_progress(tp);
}

/* ---- Failure and liveness ----------------------------------------------- */

static void shm_fail(mmp__tp_conn_t *c, int err, const char *reason,
                     int bad_input) {
  mmp__tp_t *tp = c->tp;
  mmp__list_t *it;
  int report;

  if (c->state == SHM_CLOSED)
    return;
  report = c->up_reported && !tp->destroying;
  c->state = SHM_CLOSED;
  /* write_direct stays away from a closed pair for good. */
  atomic_fetch_add_explicit(&c->queued, 1, memory_order_relaxed);
  if (c->handles > 0) {
    uv_timer_stop(&c->timer);
    if (c->pidfd >= 0)
      uv_poll_stop(&c->pid_poll);
  }
  /* The peer learns that nothing more comes (a reset, as over TCP). */
  atomic_store_explicit(&c->tx->eof, 1, memory_order_release);
  shm_kick(c);
  while ((it = mmp__list_head(&c->pending)) != NULL ||
         (it = mmp__list_head(&c->refs)) != NULL) {
    mmp__tp_write_t *w = mmp__container_of(it, mmp__tp_write_t, node_);
    mmp__list_remove(it);
    w->status_ = MMP_EPEERLOST;
    mmp__list_insert_tail(&tp->done, it);
  }
  if (bad_input) {
    atomic_fetch_add_explicit(&tp->dropped, 1, memory_order_relaxed);
    MMP__LOG(MMP__LOG_WARN,
             "dropping connection to rank %d (shared memory): %s", c->peer,
             reason);
  } else if (err != 0) {
    MMP__LOG(MMP__LOG_INFO, "connection to rank %d (shared memory) lost: %s",
             c->peer, reason);
  }
  if (c->up_reported)
    atomic_fetch_sub_explicit(&tp->peers, 1, memory_order_relaxed);
  if (c->pull_ok)
    atomic_fetch_sub_explicit(&tp->pulling, 1, memory_order_relaxed);
  shm_idle_update(tp);
  if (report)
    tp->cb.peer_down(tp->cb.ctx, c->peer, err, reason);
}

/* The peer's process ended: what it wrote is still here, so read it all
 * first (a clean exit ends in EOF), then fail what is left. */
static void shm_pid_cb(uv_poll_t *h, int status, int events) {
  mmp__tp_conn_t *c = h->data;
  (void)status;
  (void)events;

  uv_poll_stop(h);
  while (shm_read(c) && c->state != SHM_CLOSED)
    ;
  shm_fail(c, MMP_EPEERLOST, "the process is gone", 0);
  shm_progress(c->tp);
}

static void shm_timeout(uv_timer_t *t) {
  mmp__tp_conn_t *c = t->data;
  shm_fail(c, 0, "no EOF from peer after shutdown", 0);
  shm_progress(c->tp);
}

/* ---- Set-up ------------------------------------------------------------- */

/* Opens `path` (a FIFO of ours, mode 0600) for reading and writing, so
 * that it never reports EOF and a write to it never raises SIGPIPE.
 * Returns the descriptor or -1 (logged). */
static int shm_open_bell(const char *path) {
  struct stat st;
  int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);

  if (fd < 0) {
    MMP__LOG(MMP__LOG_WARN, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 07777) != 0600) {
    MMP__LOG(MMP__LOG_WARN, "%s is not a FIFO of ours with mode 0600", path);
    close(fd);
    return -1;
  }
  return fd;
}

static int shm_make_segment(mmp__tp_t *tp) {
  int fd;
  shm_seg_t *s;

  tp->slot_bytes = shm_slot_bytes(tp->cfg.ring_bytes);
  tp->seg_len = SHM_HDR_BYTES + (size_t)tp->nlocal * tp->slot_bytes;
  fd = shm_open(tp->seg_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    MMP__LOG(MMP__LOG_WARN, "cannot create shared memory %s: %s", tp->seg_name,
             strerror(errno));
    return MMP_EIO;
  }
  tp->named = 1;
  /* The umask may have taken bits away; the peers check for 0600. */
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)tp->seg_len) != 0) {
    MMP__LOG(MMP__LOG_WARN, "cannot size shared memory %s: %s", tp->seg_name,
             strerror(errno));
    close(fd);
    return MMP_EIO;
  }
  /* Every page is reserved now, our own unused slot apart: a full tmpfs
   * (a container's 64 MiB /dev/shm) must fail here, not kill a process
   * with SIGBUS when a peer first writes to a page. */
  {
    off_t own = (off_t)(SHM_HDR_BYTES + (uint64_t)tp->me * tp->slot_bytes);
    off_t after = own + (off_t)tp->slot_bytes;
    int e = posix_fallocate(fd, 0, own);
    if (e == 0 && after < (off_t)tp->seg_len)
      e = posix_fallocate(fd, after, (off_t)tp->seg_len - after);
    if (e != 0) {
      MMP__LOG(MMP__LOG_WARN, "cannot reserve %zu bytes of shared memory: %s",
               tp->seg_len, strerror(e));
      close(fd);
      return MMP_EIO;
    }
  }
  s = mmap(NULL, tp->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s == MAP_FAILED) {
    MMP__LOG(MMP__LOG_WARN, "cannot map shared memory: %s", strerror(errno));
    return MMP_EIO;
  }
  tp->seg = s;
  s->magic = SHM_MAGIC;
  s->version = SHM_VERSION;
  s->nslots = (uint32_t)tp->nlocal;
  s->ring_bytes = tp->cfg.ring_bytes;
  s->slot_bytes = tp->slot_bytes;
  s->rank = tp->cfg.rank;
  s->pid = (int32_t)getpid();
  s->probe_addr = (uint64_t)(uintptr_t)&tp->probe;
  s->probe_value = tp->probe;
  atomic_init(&s->asleep, 0);
  atomic_init(&s->cpu, -1);
  if (mkfifo(tp->bell_path, 0600) != 0) {
    MMP__LOG(MMP__LOG_WARN, "cannot create %s: %s", tp->bell_path,
             strerror(errno));
    return MMP_EIO;
  }
  if (chmod(tp->bell_path, 0600) != 0 ||
      (tp->bell_rd = shm_open_bell(tp->bell_path)) < 0)
    return MMP_EIO;
  return 0;
}

static void shm_free(mmp__tp_t *tp) {
  for (int i = 0; tp->conns != NULL && i < tp->nlocal; i++) {
    mmp__tp_conn_t *c = tp->conns[i];
    if (c == NULL)
      continue;
    munmap(c->pseg, c->pseg_len);
    close(c->bell_fd);
    if (c->pidfd >= 0)
      close(c->pidfd);
    free(c);
  }
  if (tp->seg != NULL)
    munmap(tp->seg, tp->seg_len);
  if (tp->bell_rd >= 0)
    close(tp->bell_rd);
  free(tp->conns);
  free(tp->local);
  free(tp);
}

static int shm_create(uv_loop_t *loop, const mmp__tp_config_t *cfg,
                      const mmp__tp_callbacks_t *cb, mmp__tp_t **out) {
  mmp__tp_t *tp;
  int i, rc;

  MMP__ASSERT_LOOP_OF(loop);
  if (cfg->size <= 0 || cfg->rank < 0 || cfg->rank >= cfg->size ||
      cfg->local == NULL || cfg->nlocal < 1 || cfg->nlocal > cfg->size ||
      !shm_pow2(cfg->ring_bytes) || cfg->ring_bytes < MMP__SHM_RING_MIN ||
      cfg->ring_bytes > MMP__SHM_RING_MAX)
    return MMP_EINVAL;
  for (i = 1; i < cfg->nlocal; i++)
    if (cfg->local[i] <= cfg->local[i - 1])
      return MMP_EINVAL;
  tp = calloc(1, sizeof(*tp));
  if (tp == NULL)
    return MMP_ENOMEM;
  tp->bell_rd = -1;
  tp->local = malloc((size_t)cfg->nlocal * sizeof(*tp->local));
  tp->conns = calloc((size_t)cfg->nlocal, sizeof(*tp->conns));
  if (tp->local == NULL || tp->conns == NULL) {
    shm_free(tp);
    return MMP_ENOMEM;
  }
  memcpy(tp->local, cfg->local, (size_t)cfg->nlocal * sizeof(*tp->local));
  tp->nlocal = cfg->nlocal;
  tp->loop = loop;
  tp->cfg = *cfg;
  tp->cfg.local = tp->local;
  tp->cb = *cb;
  if (tp->cfg.max_frame == 0)
    tp->cfg.max_frame = 64u << 20;
  tp->me = shm_local_index(tp, cfg->rank);
  if (tp->me < 0) {
    shm_free(tp);
    return MMP_EINVAL;
  }
  mmp__list_init(&tp->done);
  {
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
      v = (uint64_t)uv_hrtime() * 0x9e3779b97f4a7c15ull;
    tp->probe = v | 1;
  }
  mmp__shm_names(cfg->key, cfg->rank, tp->seg_name, tp->bell_path);
  rc = shm_make_segment(tp);
  if (rc != 0) {
    mmp__shm_unlink(tp);
    shm_free(tp);
    return rc;
  }
  uv_poll_init(loop, &tp->bell_poll, tp->bell_rd);
  uv_prepare_init(loop, &tp->prep);
  uv_check_init(loop, &tp->check);
  uv_idle_init(loop, &tp->idle);
  tp->bell_poll.data = tp->prep.data = tp->check.data = tp->idle.data = tp;
  tp->open = 4;
  uv_poll_start(&tp->bell_poll, UV_READABLE, shm_bell_cb);
  uv_prepare_start(&tp->prep, shm_prepare_cb);
  uv_check_start(&tp->check, shm_check_cb);
  *out = tp;
  return 0;
}

void mmp__shm_unlink(mmp__tp_t *tp) {
  if (!tp->named)
    return;
  tp->named = 0;
  shm_unlink(tp->seg_name);
  unlink(tp->bell_path);
}

/* Maps a peer's segment after checking the object is this job's. Returns
 * the mapping or NULL (logged). */
static shm_seg_t *shm_map_peer(mmp__tp_t *tp, const char *name, int peer,
                               size_t *len) {
  struct stat st;
  shm_seg_t *s;
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);

  if (fd < 0) {
    MMP__LOG(MMP__LOG_WARN, "cannot open rank %d's shared memory: %s", peer,
             strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 07777) != 0600 || st.st_size < (off_t)SHM_HDR_BYTES ||
      (uint64_t)st.st_size > SHM_MAX_SEGMENT) {
    MMP__LOG(MMP__LOG_WARN,
             "rank %d's shared memory is not ours (owner, mode or size)", peer);
    close(fd);
    return NULL;
  }
  *len = (size_t)st.st_size;
  s = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s == MAP_FAILED) {
    MMP__LOG(MMP__LOG_WARN, "cannot map rank %d's shared memory: %s", peer,
             strerror(errno));
    return NULL;
  }
  if (s->magic != SHM_MAGIC || s->version != SHM_VERSION ||
      s->nslots != (uint32_t)tp->nlocal || s->rank != peer || s->pid <= 0 ||
      !shm_pow2(s->ring_bytes) || s->ring_bytes < MMP__SHM_RING_MIN ||
      s->ring_bytes > MMP__SHM_RING_MAX ||
      s->slot_bytes != shm_slot_bytes(s->ring_bytes) ||
      SHM_HDR_BYTES + (uint64_t)s->nslots * s->slot_bytes != *len) {
    MMP__LOG(MMP__LOG_WARN, "rank %d's shared memory has a bad header", peer);
    munmap(s, *len);
    return NULL;
  }
  return s;
}

/* 1 if we can read the word the peer published in its header. */
static int shm_probe(pid_t pid, const shm_seg_t *s) {
  uint64_t v = 0, want = s->probe_value;
  struct iovec l = {&v, sizeof(v)};
  struct iovec r = {(void *)(uintptr_t)s->probe_addr, sizeof(v)};
  ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

  if (n != (ssize_t)sizeof(v) || v != want) {
    MMP__LOG(MMP__LOG_INFO,
             "cannot read process %d's memory (%s): large messages go "
             "through the rings",
             (int)pid, n < 0 ? strerror(errno) : "wrong value");
    return 0;
  }
  return 1;
}

static int shm_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  long fd = syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -1 : (int)fd;
#else
  (void)pid;
  return -1;
#endif
}

int mmp__shm_attach(mmp__tp_t *tp, int peer, int same_pid_ns) {
  char seg[MMP__SHM_NAME_MAX], bell[MMP__SHM_NAME_MAX];
  int lidx = shm_local_index(tp, peer), fd;
  mmp__tp_conn_t *c;
  shm_seg_t *s;
  size_t len = 0;

  MMP__ASSERT_LOOP_OF(tp->loop);
  if (lidx < 0 || lidx == tp->me)
    return MMP_EINVAL;
  if (tp->conns[lidx] != NULL)
    return 0;
  mmp__shm_names(tp->cfg.key, peer, seg, bell);
  s = shm_map_peer(tp, seg, peer, &len);
  if (s == NULL)
    return MMP_EIO;
  fd = shm_open_bell(bell);
  c = fd < 0 ? NULL : calloc(1, sizeof(*c));
  if (c == NULL) {
    if (fd >= 0)
      close(fd);
    munmap(s, len);
    return MMP_EIO;
  }
  c->tp = tp;
  c->peer = peer;
  c->lidx = lidx;
  c->state = SHM_IDLE;
  c->pseg = s;
  c->pseg_len = len;
  c->bell_fd = fd;
  c->pidfd = -1;
  c->pid = same_pid_ns ? (pid_t)s->pid : 0;
  c->tx = shm_slot(s, s->slot_bytes, tp->me);
  c->tx_data = (uint8_t *)c->tx + SHM_RING_CTL;
  c->tx_cap = s->ring_bytes;
  c->rx = shm_slot(tp->seg, tp->slot_bytes, lidx);
  c->rx_data = (uint8_t *)c->rx + SHM_RING_CTL;
  c->rx_need = MMP__FRAME_HDR_SIZE;
  mmp__list_init(&c->pending);
  mmp__list_init(&c->refs);
  atomic_init(&c->queued, 0);
#ifndef NDEBUG
  atomic_init(&c->tx_writer, 0);
#endif
  /* Whether the peer may send us DATA by reference: we must be able to
   * read its memory. It learns our answer from its ring in our segment. */
  c->can_pull = tp->cfg.single_copy && c->pid != 0 && shm_probe(c->pid, s);
  atomic_store_explicit(&c->rx->pull_ok, c->can_pull, memory_order_release);
  if (c->pid != 0)
    c->pidfd = shm_pidfd(c->pid);
  tp->conns[lidx] = c;
  return 0;
}

void mmp__shm_detach(mmp__tp_t *tp, int peer) {
  int lidx = shm_local_index(tp, peer);
  mmp__tp_conn_t *c = lidx < 0 ? NULL : tp->conns[lidx];

  MMP__ASSERT_LOOP_OF(tp->loop);
  if (c == NULL || c->state != SHM_IDLE)
    return;
  tp->conns[lidx] = NULL;
  munmap(c->pseg, c->pseg_len);
  close(c->bell_fd);
  if (c->pidfd >= 0)
    close(c->pidfd);
  free(c);
}

int mmp__shm_start(mmp__tp_t *tp, int peer) {
  mmp__tp_conn_t *c = shm_conn(tp, peer);

  MMP__ASSERT_LOOP_OF(tp->loop);
  if (c == NULL || c->state != SHM_IDLE || tp->destroying)
    return MMP_EINVAL;
  c->pull_ok = tp->cfg.single_copy &&
               atomic_load_explicit(&c->tx->pull_ok, memory_order_acquire) == 1;
  uv_timer_init(tp->loop, &c->timer);
  c->timer.data = c;
  c->handles = 1;
  tp->open++;
  if (c->pidfd >= 0) {
    uv_poll_init(tp->loop, &c->pid_poll, c->pidfd);
    c->pid_poll.data = c;
    c->handles++;
    tp->open++;
    uv_poll_start(&c->pid_poll, UV_READABLE, shm_pid_cb);
  }
  c->state = SHM_UP;
  c->up_reported = 1;
  atomic_fetch_add_explicit(&tp->peers, 1, memory_order_relaxed);
  if (c->pull_ok)
    atomic_fetch_add_explicit(&tp->pulling, 1, memory_order_relaxed);
  tp->cb.peer_up(tp->cb.ctx, peer, c);
  return 0;
}

/* ---- The other operations ---------------------------------------------- */

static int shm_listen(mmp__tp_t *tp, const struct sockaddr *addr, char *name,
                      size_t namelen) {
  (void)tp;
  (void)addr;
  (void)name;
  (void)namelen;
  return MMP_EINVAL;
}

static int shm_connect(mmp__tp_t *tp, int peer, const struct sockaddr *addr) {
  (void)addr;
  MMP__ASSERT_LOOP_OF(tp->loop);
  return shm_local_index(tp, peer) < 0 ? MMP_EINVAL : 0;
}

static void shm_shutdown(mmp__tp_conn_t *c, unsigned timeout_ms) {
  MMP__ASSERT_LOOP_OF(c->tp->loop);
  if (c->state != SHM_UP)
    return;
  c->state = SHM_SHUTDOWN;
  c->shut = 1;
  uv_timer_start(&c->timer, shm_timeout, timeout_ms, 0);
  /* The EOF goes out from the loop's next pass (the caller holds the
   * runtime's lock, which a failure found on the way would need). */
  uv_idle_start(&c->tp->idle, shm_idle_cb);
}

static void shm_abort(mmp__tp_conn_t *c, int err, const char *reason) {
  MMP__ASSERT_LOOP_OF(c->tp->loop);
  shm_fail(c, err, reason, 0);
}

static uint64_t shm_data_chunk(const mmp__tp_conn_t *c, uint64_t dflt) {
  uint64_t want = SHM_PULL_CHUNK < c->tp->cfg.max_frame ? SHM_PULL_CHUNK
                                                        : c->tp->cfg.max_frame;
  return c->pull_ok && want > dflt ? want : dflt;
}

static void shm_stats_op(mmp__tp_t *tp, mmp__tp_stats_t *out) {
  out->rejected = 0;
  out->dropped = atomic_load(&tp->dropped);
  out->frames_in = atomic_load(&tp->frames_in);
  out->frames_out = atomic_load(&tp->frames_out);
}

void mmp__shm_stats(mmp__tp_t *tp, mmp__shm_stats_t *out) {
  memset(out, 0, sizeof(*out));
  if (tp == NULL)
    return;
  out->peers = atomic_load(&tp->peers);
  out->ring_bytes = tp->cfg.ring_bytes;
  out->bytes_in = atomic_load(&tp->bytes_in);
  out->bytes_out = atomic_load(&tp->bytes_out);
  out->pulled = atomic_load(&tp->pulled);
  out->pull_frames = atomic_load(&tp->pull_frames);
  out->bells = atomic_load(&tp->bells);
  out->arms = atomic_load(&tp->arms);
  out->single_copy = atomic_load(&tp->pulling);
}

int mmp__shm_debug_corrupt(mmp__tp_t *tp, int peer, int which, uint64_t value) {
  mmp__tp_conn_t *c = shm_conn(tp, peer);

  if (c == NULL || c->state == SHM_IDLE)
    return MMP_EINVAL;
  if (which == 0)
    atomic_store(&c->tx->tail, value);
  else if (which == 1)
    atomic_store(&c->rx->head, value);
  else if (which == 2)
    atomic_store(&c->rx->ref_done, value);
  else if (which == 3) {
    uint8_t junk[64];
    int fits;
    memset(junk, 0xab, sizeof(junk));
    shm_tx_enter(c);
    fits = c->tx_cap - (c->tx_tail - c->tx_head) >= sizeof(junk);
    if (fits) {
      ring_put(c->tx_data, c->tx_cap, c->tx_tail, junk, sizeof(junk));
      c->tx_tail += sizeof(junk);
      atomic_store(&c->tx->tail, c->tx_tail);
    }
    shm_tx_leave(c);
    if (!fits)
      return MMP_EINVAL;
  } else
    return MMP_EINVAL;
  shm_kick(c);
  return 0;
}

static void shm_maybe_free(mmp__tp_t *tp) {
  void (*done)(void *) = tp->destroy_done;
  void *arg = tp->destroy_arg;

  if (!tp->destroying || tp->open != 0)
    return;
  shm_free(tp);
  if (done)
    done(arg);
}

static void shm_handle_closed(uv_handle_t *h) {
  mmp__tp_t *tp = h->data;

  assert(tp->open > 0);
  tp->open--;
  shm_maybe_free(tp);
}

static void shm_conn_handle_closed(uv_handle_t *h) {
  mmp__tp_conn_t *c = h->data;

  assert(c->tp->open > 0);
  c->tp->open--;
  shm_maybe_free(c->tp);
}

static void shm_destroy(mmp__tp_t *tp, void (*done)(void *arg), void *arg) {
  MMP__ASSERT_LOOP_OF(tp->loop);
  assert(!tp->destroying);
  mmp__shm_unlink(tp);
  tp->destroying = 1; /* no peer_down from here on */
  /* The writes still held complete now, while the caller expects
   * callbacks; the pairs close as a reset would. */
  for (int i = 0; i < tp->nlocal; i++)
    if (tp->conns[i] != NULL && tp->conns[i]->state != SHM_IDLE)
      shm_fail(tp->conns[i], MMP_ESHUTDOWN, "transport destroyed", 0);
  shm_run_done(tp);
  tp->destroy_done = done;
  tp->destroy_arg = arg;
  for (int i = 0; i < tp->nlocal; i++) {
    mmp__tp_conn_t *c = tp->conns[i];
    if (c == NULL || c->handles == 0)
      continue;
    uv_close((uv_handle_t *)&c->timer, shm_conn_handle_closed);
    if (c->pidfd >= 0)
      uv_close((uv_handle_t *)&c->pid_poll, shm_conn_handle_closed);
  }
  uv_close((uv_handle_t *)&tp->bell_poll, shm_handle_closed);
  uv_close((uv_handle_t *)&tp->prep, shm_handle_closed);
  uv_close((uv_handle_t *)&tp->check, shm_handle_closed);
  uv_close((uv_handle_t *)&tp->idle, shm_handle_closed);
}

const mmp__tp_ops_t mmp__shm_ops = {
    .name = "shm",
    .create = shm_create,
    .listen = shm_listen,
    .connect = shm_connect,
    .write = shm_write,
    .write_direct = shm_write_direct,
    .send_inline = shm_send_inline,
    .shutdown = shm_shutdown,
    .abort = shm_abort,
    .stats = shm_stats_op,
    .poll = shm_poll,
    .cpu_shared = shm_cpu_shared,
    .data_chunk = shm_data_chunk,
    .destroy = shm_destroy,
};
