/* SPDX-License-Identifier: MIT */
/*
 * What the collectives layer keeps about a communicator: the network
 * model once measured, and AUTO's recent broadcast decisions. The state
 * belongs to this layer; the runtime carries the pointer on the
 * communicator, frees it with it, and asks for a child's state when a
 * communicator is made from another (mmp__comm_ext_ops_t): the child
 * inherits the model, which is the parent's network, and starts with no
 * decisions.
 */
#include <stdlib.h>
#include <string.h>

#include "collectives.h"

static void *state_inherit(const void *parent) {
  const mmp__coll_state_t *ps = parent;
  mmp__coll_state_t *s = calloc(1, sizeof(*s));

  MMP__ASSERT_UNLOCKED(mmp__eng); /* the state is read without it */
  if (s != NULL && ps != NULL) {
    s->net_known = ps->net_known;
    s->net = ps->net;
  }
  return s;
}

static void state_free(void *state) {
  free(state);
}

static const mmp__comm_ext_ops_t state_ops = {
    .inherit = state_inherit,
    .free = state_free,
};

mmp__coll_state_t *mmp__coll_state(mmp_comm_t *comm) {
  mmp__engine_t *e = mmp__eng;
  mmp__coll_state_t *s, *fresh = NULL;

  MMP__ASSERT_UNLOCKED(e);
  for (;;) {
    mmp__lock(e);
    s = comm->coll;
    if (s == NULL && fresh != NULL) {
      comm->coll = s = fresh;
      comm->coll_ops = &state_ops;
      fresh = NULL;
    }
    mmp__unlock(e);
    free(fresh); /* another thread was first */
    if (s != NULL)
      return s;
    /* Allocated outside the lock, which every rank's progress shares. */
    if ((fresh = calloc(1, sizeof(*fresh))) == NULL)
      return NULL;
  }
}
