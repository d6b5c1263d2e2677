/* SPDX-License-Identifier: MIT */
/*
 * Barrier: the dissemination algorithm. In round k every rank signals
 * rank + 2^k and waits for rank - 2^k; after ceil(log2 p) rounds every rank
 * has heard, directly or not, from every other. Zero-byte messages in the
 * communicator's collective context.
 */
#include <string.h>

#include "collectives.h"

int mmp_barrier(mmp_comm_t *comm) {
  mmp__engine_t *e = mmp__eng;
  int p, me, k, round = 0, rc = 0;
  uint32_t seq;

  if ((rc = mmp__coll_ready(comm)) != 0)
    return rc;
  p = comm->size;
  me = comm->rank;
  mmp__lock(e);
  seq = comm->coll_seq++;
  mmp__unlock(e);
  for (k = 1; k < p && rc == 0; k <<= 1, round++) {
    mmp_request_t sr, rr;
    int tag = MMP__COLL_TAG(seq, 1 + round), r2;
    memset(&sr, 0, sizeof(sr));
    memset(&rr, 0, sizeof(rr));
    rc = mmp__irecv(e, comm, comm->ctx + 1, NULL, 0,
                    mmp__comm_world(comm, (me - k + p) % p), tag, &rr);
    if (rc != 0)
      break;
    rc = mmp__isend(e, comm, comm->ctx + 1, NULL, 0,
                    mmp__comm_world(comm, (me + k) % p), tag, MMP_SEND_EAGER,
                    &sr);
    r2 = mmp__wait_internal(e, &rr);
    if (rc == 0)
      rc = mmp__wait_internal(e, &sr);
    if (rc == 0)
      rc = r2;
  }
  return rc;
}
