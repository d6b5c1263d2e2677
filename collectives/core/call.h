/* SPDX-License-Identifier: MIT */
/*
 * Running a call (call.c): what every public collective call checks
 * first, a schedule whose first messages carry the call's description,
 * building a static row from a description, and starting a schedule on
 * the address space a front-end laid out (its own contribution copied in
 * before the start, its result copied out at the end).
 */
#ifndef MMP_COLLECTIVES_CORE_CALL_H
#define MMP_COLLECTIVES_CORE_CALL_H

#include "collectives/core/alg.h"
#include "collectives/core/types.h"

/* What every public collective call checks first: 0, MMP_ENOTINIT
 * (logged once per process), MMP_ECOMM, or the error a collective that
 * gave up left on `comm`. */
static inline int mmp__coll_ready(const mmp_comm_t *comm) {
  if (mmp__eng == NULL)
    return mmp__not_init("a collective (mmp_bcast, mmp_barrier, ...)");
  if (comm == NULL)
    return MMP_ECOMM;
  /* A collective gave up on it: its sequence numbers no longer agree. */
  return atomic_load_explicit(&comm->coll_err, memory_order_relaxed);
}

/* What a reduction or block collective checks first: the library and
 * communicator, the type, and the operation (op 0: none) on it. *noncomm
 * (may be NULL) tells whether the operation keeps rank order only. 0,
 * MMP_ENOTINIT, MMP_ECOMM or MMP_EINVAL. */
int mmp__coll_check(mmp_comm_t *comm, mmp_type_t type, mmp_op_t op,
                    mmp__type_info_t *ti, int *noncomm);

/* The options of `o` (NULL: all defaults), its names looked up in `f`:
 * io->alg NULL for AUTO, unless MINIMP_<COLLECTIVE>_ALG names a row
 * (that row and its options then, with o's mode and timeout). AUTO reads
 * no other option of the caller's. Lock NOT held. 0, or MMP_EINVAL for a
 * name no row of `f` has. */
int mmp__opts_from(const mmp__family_t *f, const mmp_coll_opts_t *o,
                   mmp__opts_t *io);

/* For a non-blocking call (`blocking` 0): a row that runs only in
 * blocking calls (MMP__ALG_BLOCKING) that MINIMP_<COLLECTIVE>_ALG named
 * gives way to AUTO, which never chooses such a row there; named by the
 * caller, it is refused. 0, or MMP_ENOTSUP. */
int mmp__opts_blocking(mmp__opts_t *io, int blocking);

/* What the settled description `d` says in the public options: the
 * algorithm's name and those of its parts, segment, radix, groups, rows
 * and window (what a select call reports). */
void mmp__opts_to(const mmp__desc_t *d, mmp_coll_opts_t *out);

/*
 * Appends rank s->me's ops for the static description `d` over the whole
 * communicator, first messages marked: what a running call, a poison
 * rebuild and the offline checks do. The layout of `a` (off, len, cnt,
 * dsp, noncomm, nm, x) is the caller's; its group, root, parameters,
 * phase and dep are set here from `d`. Returns 0, MMP_EMISMATCH for a
 * description no rank could have made (a dynamic row, a root out of
 * range, parts that do not run as parts), or MMP_ENOMEM.
 */
int mmp__desc_build(mmp__sched_t *s, const mmp__desc_t *d, mmp__arg_t *a);

/* A schedule for `d` (a row of `f`) with buffer [buf, len) and input
 * [in, in_len), the description as its header (rebuilt with `rebuild`
 * where a sender's differs; NULL: a differing header only fails), the
 * reduce callback of (d->op, type), and `mode` and `timeout_ms` (0: the
 * communicator's). Lock NOT held. The caller owns *out until
 * mmp__coll_start. 0 or MMP_ENOMEM. */
int mmp__coll_sched_new(mmp_comm_t *comm, const mmp__family_t *f,
                        const mmp__desc_t *d, mmp_type_t type, unsigned mode,
                        unsigned timeout_ms, void *buf, size_t len,
                        const void *in, size_t in_len,
                        mmp__sched_rebuild_fn rebuild, mmp__sched_t **out);

/* Allocates the scratch, copies fill_len bytes of `fill` to address
 * fill_at, arranges for out_len bytes at out_at to be copied to `out`
 * when the collective succeeds, and starts. Takes the schedule in every
 * case. 0 with *req, or an error. */
int mmp__coll_start(mmp__sched_t *s, const void *fill, size_t fill_at,
                    size_t fill_len, void *out, size_t out_at, size_t out_len,
                    mmp_request_t **req);

/* Starts dynamic row d->alg of `f` (the shm rows of a reduction or a
 * barrier) on `buf`, this rank's contribution at `in`, with the reduce
 * callback's `reduce_arg` and the options' timeout (0: the
 * communicator's). Lock NOT held. As the row's start: 0 with *req, or an
 * error; MMP_ENOTSUP where the row cannot serve the call on any rank. */
int mmp__coll_run_dynamic(mmp_comm_t *comm, const mmp__family_t *f,
                          const mmp__desc_t *d, const mmp__opts_t *o, void *buf,
                          const void *in, void *reduce_arg,
                          mmp_request_t **req);

#endif /* MMP_COLLECTIVES_CORE_CALL_H */
