/* SPDX-License-Identifier: MIT */
/*
 * Introspection for the test suite: a rank's listening address and the
 * transport's counters. Not exported from the shared library; tests link
 * the static archive.
 */
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

  memset(out, 0, sizeof(*out));
  if (e == NULL || e->tp == NULL)
    return MMP_EINVAL;
  e->ops->stats(e->tp, out);
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

uint64_t mmp__debug_unexp_peak(void) {
  mmp__engine_t *e = mmp__eng;
  uint64_t v;

  if (e == NULL)
    return 0;
  mmp__lock(e);
  v = e->unexp_peak;
  mmp__unlock(e);
  return v;
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
  mmp__unlock(e);
  return 0;
}

uint64_t mmp__debug_eager_buffer(void) {
  mmp__engine_t *e = mmp__eng;
  return e != NULL ? e->cfg.eager_buffer : 0;
}
