/* SPDX-License-Identifier: MIT */
/*
 * Introspection for the test suite: a rank's listening address and the
 * transport's counters. Not exported from the shared library; tests link
 * the static archive.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

int mmp__debug_listen_addr(int rank, char *buf, size_t len) {
  mmp__engine_t *e = mmp__eng;
  int rc = 0;

  if (e == NULL || rank < 0 || rank >= e->cfg.size || e->cfg.singleton)
    return MMP_EINVAL;
  mmp__lock(e);
  if (rank == e->cfg.rank)
    snprintf(buf, len, "%s", e->listen_name);
  else if (e->peers[rank].have_addr)
    rc = mmp__addr_format((struct sockaddr *)&e->peers[rank].addr, buf, len);
  else
    rc = MMP_EINVAL;
  mmp__unlock(e);
  return rc;
}

int mmp__debug_tp_stats(mmp__tp_stats_t *out) {
  mmp__engine_t *e = mmp__eng;
  mmp__tp_stats_t s;

  memset(out, 0, sizeof(*out));
  if (e == NULL || e->tcp.tp == NULL)
    return MMP_EINVAL;
  e->tcp.ops->stats(e->tcp.tp, out);
  if (e->shm.tp != NULL) {
    e->shm.ops->stats(e->shm.tp, &s);
    out->rejected += s.rejected;
    out->dropped += s.dropped;
    out->frames_in += s.frames_in;
    out->frames_out += s.frames_out;
  }
  return 0;
}

int mmp__debug_shm_stats(mmp__shm_stats_t *out) {
  mmp__engine_t *e = mmp__eng;

  memset(out, 0, sizeof(*out));
  if (e == NULL)
    return MMP_EINVAL;
  mmp__shm_stats(e->shm.tp, out);
  return 0;
}

int mmp__debug_peer_shm(int peer) {
  mmp__engine_t *e = mmp__eng;
  int v;

  if (e == NULL || peer < 0 || peer >= e->cfg.size)
    return 0;
  mmp__lock(e);
  v = e->peers[peer].via == &e->shm;
  mmp__unlock(e);
  return v;
}

typedef struct corrupt_s {
  mmp__engine_t *e;
  int peer, which, rc;
  uint64_t value;
} corrupt_t;

/* Loop context, lock not held. The lock serialises the garbage written
 * into a ring with the runtime's own writes to the pair, which other
 * threads make under it. */
static void corrupt_in_loop(void *arg) {
  corrupt_t *c = arg;

  MMP__ASSERT_UNLOCKED(c->e);
  mmp__lock(c->e);
  c->rc = c->e->shm.tp == NULL ? MMP_EINVAL
                               : mmp__shm_debug_corrupt(c->e->shm.tp, c->peer,
                                                        c->which, c->value);
  mmp__unlock(c->e);
}

int mmp__debug_shm_corrupt(int peer, int which, uint64_t value) {
  mmp__engine_t *e = mmp__eng;
  corrupt_t c;

  if (e == NULL)
    return MMP_EINVAL;
  c.e = e;
  c.peer = peer;
  c.which = which;
  c.value = value;
  c.rc = MMP_EINVAL;
  mmp__engine_call(e, corrupt_in_loop, &c);
  return c.rc;
}

static void stall_in_loop(void *arg) {
  uv_sleep(*(unsigned *)arg);
}

int mmp__debug_stall_loop(unsigned ms) {
  mmp__engine_t *e = mmp__eng;

  if (e == NULL)
    return MMP_EINVAL;
  mmp__engine_call(e, stall_in_loop, &ms);
  return 0;
}

int mmp__debug_config_reload(void) {
  mmp__engine_t *e = mmp__eng;

  if (e == NULL)
    return MMP_EINVAL;
  return mmp__config_coll(&e->cfg.coll);
}

int mmp__debug_job_key(uint8_t key[MMP__JOB_KEY_LEN]) {
  mmp__engine_t *e = mmp__eng;

  if (e == NULL)
    return MMP_EINVAL;
  memcpy(key, e->cfg.key, MMP__JOB_KEY_LEN);
  return 0;
}

/* Reads the engine's counter at `off` under the lock; 0 before init. */
static uint64_t read_counter(size_t off) {
  mmp__engine_t *e = mmp__eng;
  uint64_t v;

  if (e == NULL)
    return 0;
  mmp__lock(e);
  memcpy(&v, (const char *)e + off, sizeof(v));
  mmp__unlock(e);
  return v;
}

uint64_t mmp__debug_unexp_peak(void) {
  return read_counter(offsetof(mmp__engine_t, unexp_peak));
}

uint64_t mmp__debug_unexp_rts_peak(void) {
  return read_counter(offsetof(mmp__engine_t, unexp_rts_peak));
}

int mmp__debug_progress(mmp__debug_progress_t *out) {
  mmp__engine_t *e = mmp__eng;

  if (e == NULL)
    return MMP_EINVAL;
  mmp__lock(e);
  out->checks = e->checks;
  out->check_us = e->cfg.check_us;
  out->polls = e->polls;
  out->yield = e->cfg.spin_yield;
  out->long_waits = e->long_waits;
  out->spin_offs = e->spin_offs;
  out->spin_off = e->spin_off;
  out->handoffs = e->handoffs;
  out->sleeps = e->sleeps;
  out->spin_us = e->cfg.spin_us;
  out->moves = atomic_load(&e->moves);
  mmp__unlock(e);
  return 0;
}

uint64_t mmp__debug_eager_buffer(void) {
  mmp__engine_t *e = mmp__eng;
  return e != NULL ? e->cfg.eager_buffer : 0;
}

uint64_t mmp__debug_p2p_allocs(void) {
  return read_counter(offsetof(mmp__engine_t, allocs));
}

uint64_t mmp__debug_eager_overhead(int peer) {
  mmp__engine_t *e = mmp__eng;
  uint64_t v;

  if (e == NULL || peer < 0 || peer >= e->cfg.size)
    return 0;
  mmp__lock(e);
  v = e->peers[peer].eager_over;
  mmp__unlock(e);
  return v;
}
