/* SPDX-License-Identifier: MIT */
/*
 * The out-of-line half of the collectives' view of the runtime
 * (runtime/coll_api.h): engine.lock and its contracts, and the facts of
 * the configuration, for a layer to which the engine is opaque.
 */
#include "runtime/internal.h"

void mmp__rt_lock(mmp__engine_t *e) {
  mmp__lock(e);
}

void mmp__rt_unlock(mmp__engine_t *e) {
  mmp__unlock(e);
}

int mmp__rt_lock_held(mmp__engine_t *e) {
#ifndef NDEBUG
  return mmp__lock_held(e);
#else
  (void)e;
  return 1;
#endif
}

int mmp__rt_in_loop(mmp__engine_t *e) {
#ifndef NDEBUG
  return atomic_load_explicit(&e->loop_thread, memory_order_relaxed) ==
         mmp__thread_self();
#else
  (void)e;
  return 1;
#endif
}

void mmp__rt_facts(const mmp__engine_t *e, mmp__rt_facts_t *out) {
  const mmp__config_t *cfg = &e->cfg;

  out->world_size = cfg->size;
  out->cpus_shared = cfg->cpus_shared;
  out->eager_limit = cfg->eager_limit;
  out->eager_buffer = cfg->eager_buffer;
  out->max_frame = cfg->max_frame;
  out->mcast = cfg->mcast;
  out->mcast_timeout_ms = cfg->mcast_timeout_ms;
  out->coll = &cfg->coll;
}

const mmp__coll_config_t *mmp__rt_coll_config(const mmp__engine_t *e) {
  return &e->cfg.coll;
}

unsigned mmp__rt_coll_timeout(const mmp__engine_t *e, const mmp_comm_t *c) {
  return mmp__comm_timeout(e, c, 1);
}
