/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of the collectives MPI and Gloo programs use:
 * reduce, allreduce, reduce-scatter, gather, scatter, allgather and
 * alltoall, with element types and reduction operations (types.c).
 *
 * Every algorithm is one row (mmp__coll_alg_t) in its own file, with its
 * builder and its cost; coll_algs.c holds a table per collective as an
 * X-macro list, and each front-end (allreduce.c, reduce.c, ...) the
 * public calls.
 * The builders append one rank's ops to a schedule (sched.c) on an address
 * space the front-end lays out: the reductions work on an accumulator of
 * `len` bytes at `off`, and take scratch from the schedule; the block
 * collectives name every member's block by address. Builders need no
 * engine, so every rank's schedule also builds offline and runs
 * symbolically with real bytes (test_coll_offline).
 *
 * Consistency: the description of the call (mmp__coll_desc_t) travels as
 * a header on the first messages (MMP__SOP_CHECK); a rank that receives
 * one that differs from its own ends with MMP_EMISMATCH and empties its
 * later sends, so the ranks after it fail too. Internal to collectives/.
 */
#ifndef MMP_COLLECTIVES_COLL_H
#define MMP_COLLECTIVES_COLL_H

#include "collectives/core/collectives.h"

/* ---- Types and operations (types.c) ------------------------------------ */

/* What a type is made of: `n` base elements of a built-in type. */
typedef struct mmp__type_info_s {
  int base;    /* MMP_BYTE .. MMP_DOUBLE */
  size_t n;    /* base elements per element */
  size_t size; /* bytes per element */
} mmp__type_info_t;

/* Fills `ti` for a type handle: 0, or MMP_EINVAL for an unknown one. */
int mmp__type_info(mmp_type_t type, mmp__type_info_t *ti);

/* 0 if `op` is a known operation that applies to `type`, else
 * MMP_EINVAL; *commutative tells whether it is. */
int mmp__op_check(mmp_op_t op, mmp_type_t type, int *commutative);

/* The schedule's reduce callback for (op, type): arg packs both
 * (mmp__reduce_arg). */
void mmp__reduce_apply(const void *in, void *inout, size_t n, int right,
                       void *arg);
static inline void *mmp__reduce_arg(mmp_op_t op, mmp_type_t type) {
  return (void *)(uintptr_t)(((uintptr_t)(unsigned)op << 16) | (unsigned)type);
}

/* ---- Descriptions and build arguments ---------------------------------- */

/* One call as every rank must see it: what the header carries. */
typedef struct mmp__coll_desc_s {
  int coll; /* MMP_COLL_* */
  int alg;
  int root;
  int base;       /* the type's base (mmp__type_info) */
  size_t esize;   /* bytes per element */
  int op;         /* 0: data movement */
  uint64_t count; /* elements: the vector, or one block (v-forms: 0) */
  size_t seg;
  int window;
  int radix; /* rows with a .radix hook: 2 .. MMP__KNOMIAL_RADIX_MAX */
} mmp__coll_desc_t;

/* What a builder appends for. Regions are addresses of the schedule. */
typedef struct mmp__coll_arg_s {
  const mmp__group_t *g;
  int root;     /* group index */
  size_t esize; /* cuts fall on multiples of it */
  /* Reductions: this rank's accumulator, its contribution at the start,
   * the result where the collective leaves one. */
  size_t off;
  size_t len;
  size_t seg;  /* bytes per segment; 0: whole */
  int noncomm; /* the operation is not commutative: keep rank order */
  /* Block collectives: member i's block is cnt[i] bytes at dsp[i] (the
   * output; alltoall: what this rank receives from i), and for alltoall
   * scnt[i] bytes at sdsp[i] go to member i. */
  const size_t *cnt, *dsp;
  const size_t *scnt, *sdsp;
  int window;
  int radix;                /* tree radix (rows with a .radix hook) */
  int dep;                  /* sends (and local ops) start after it; -1: none */
  int phase;                /* the builder uses phases phase .. phase + 9 */
  int check;                /* the first messages carry the header */
  const mmp_netmodel_t *nm; /* composites choose their parts */
} mmp__coll_arg_t;

/* What a cost function prices: p ranks, m bytes (the vector, or one
 * block), under the model (gamma included). */
typedef struct mmp__coll_cost_in_s {
  int p;
  double m;
  const mmp_netmodel_t *nm;
} mmp__coll_cost_in_t;

enum {
  MMP__COLL_F_AUTO = 0x1,     /* AUTO may choose it */
  MMP__COLL_F_ORDERED = 0x2,  /* keeps rank order: any associative op */
  MMP__COLL_F_SEGMENTED = 0x4 /* AUTO gives it mmp__coll_seg's segment */
};

/* One algorithm: a row of its collective's table, defined in its file. */
typedef struct mmp__coll_alg_s {
  int coll; /* MMP_COLL_* */
  int id;   /* MMP_<COLL>_* */
  const char *name;
  unsigned flags;
  int prefer; /* AUTO: of two within 3%, the lower wins; unique */
  /* Appends this rank's ops; returns an op that completes when this
   * rank's part is done (a NOP at least), or a negative error. */
  int (*build)(mmp__sched_t *s, const mmp__coll_arg_t *a);
  /* Predicted seconds; NULL: AUTO never prices it. */
  double (*cost)(const mmp__coll_cost_in_t *in);
  /* MMP__COLL_F_SEGMENTED: the segment when the caller gave none; NULL:
   * mmp__coll_seg. */
  size_t (*segment)(int p, size_t len, size_t esize, const mmp_netmodel_t *nm);
  /* Non-NULL: the row takes opts.radix, and this is the radix when the
   * caller gave none (0), priced by the model for p ranks and m bytes. */
  int (*radix)(int p, double m, const mmp_netmodel_t *nm);
} mmp__coll_alg_t;

/* A collective's table (coll_algs.c). */
typedef struct mmp__coll_table_s {
  int coll;
  const char *name;                   /* "allreduce" */
  int count;                          /* MMP_<COLL>_ALG_COUNT */
  const mmp__coll_alg_t *const *rows; /* rows[id], NULL at 0 */
} mmp__coll_table_t;

/* ---- The tables (coll_algs.c) ------------------------------------------- */

/* The tables, by MMP_COLL_*; NULL for an unknown number. */
const mmp__coll_table_t *mmp__coll_table(int coll);
/* The row of algorithm `alg` of collective `coll`, or NULL. */
const mmp__coll_alg_t *mmp__coll_alg(int coll, int alg);
/* Checks every table (debug builds): ids, names, unique prefer, AUTO
 * rows priced. */
void mmp__coll_tables_check(void);

/* AUTO: the cheapest row of `coll` for p ranks and m bytes that AUTO may
 * choose and, with `noncomm`, keeps rank order. Returns its id. */
int mmp__coll_choose(int coll, int p, double m, int noncomm,
                     const mmp_netmodel_t *nm);
/* The segment AUTO gives a segmented algorithm (coll_util.c): cuts of at
 * least 8 KiB that balance a segment's alpha against the arithmetic it
 * hides, on element boundaries; 0 for one segment. */
size_t mmp__coll_seg(int p, size_t len, size_t esize, const mmp_netmodel_t *nm);

/* ---- Descriptions (coll.c) ---------------------------------------------- */

/* The header of `d` (MMP__HDR_MAX bytes at most); its length. */
size_t mmp__coll_desc_encode(const mmp__coll_desc_t *d, uint8_t *out);

/* Marks `op` (if >= 0) as a first message, where the header is checked
 * (a->check): a receive from any rank, so that a rank with another root
 * learns of it instead of waiting for a parent that never sends, and a
 * send to a peer whose first receive it is. Returns op. */
int mmp__coll_first(mmp__sched_t *s, const mmp__coll_arg_t *a, int op);

/* The description in a header of n bytes (from another rank: checked
 * for nothing but its kind and length). 0 or MMP_EMISMATCH. */
int mmp__coll_desc_decode(const uint8_t *in, size_t n, mmp__coll_desc_t *d);

/* Appends rank s->me's ops for `d` over the whole communicator, with
 * the layout in `a` (g, root, phase and check are set here). */
int mmp__coll_build(mmp__sched_t *s, const mmp__coll_desc_t *d,
                    mmp__coll_arg_t *a);

/* ---- Running (coll.c) ---------------------------------------------------- */

/*
 * Settles d->alg, d->seg and d->window from the options for a call of m
 * bytes (the vector, or one block); AUTO measures the model on first use
 * (lock NOT held). d->coll and d->esize are set. 0, MMP_EINVAL (unknown
 * algorithm or mode, an algorithm that does not keep rank order for a
 * non-commutative operation), or an error of the measurement.
 */
int mmp__coll_resolve(mmp_comm_t *comm, mmp__coll_desc_t *d,
                      const mmp_coll_opts_t *o, double m, int noncomm);

/* What every call checks first: the library and communicator, the type,
 * and the operation (op 0: none) on it. *noncomm (may be NULL) tells
 * whether the operation keeps rank order only. 0, MMP_ENOTINIT,
 * MMP_ECOMM or MMP_EINVAL. */
int mmp__coll_check(mmp_comm_t *comm, mmp_type_t type, mmp_op_t op,
                    mmp__type_info_t *ti, int *noncomm);
/* count elements of esize bytes: 0 or MMP_ETOOBIG. Inline, so that the
 * files every collective uses need not call into coll.c (layering). */
static inline int mmp__coll_elems(size_t count, size_t esize, size_t *bytes) {
  if (esize != 0 && count > SIZE_MAX / esize)
    return MMP_ETOOBIG;
  *bytes = count * esize;
  return 0;
}

/* A schedule for `d` with buffer [buf, len) and input [in, in_len), the
 * header, the reduce callback of (d->op, type), and the mode and timeout
 * of `o` set. Lock NOT held. The caller owns *out until mmp__coll_start.
 * 0 or MMP_ENOMEM. */
int mmp__coll_sched_new(mmp_comm_t *comm, const mmp__coll_desc_t *d,
                        mmp_type_t type, const mmp_coll_opts_t *o, void *buf,
                        size_t len, const void *in, size_t in_len,
                        mmp__sched_t **out);

/* Allocates the scratch, copies fill_len bytes of `fill` to address
 * fill_at, arranges for out_len bytes at out_at to be copied to `out`
 * when the collective succeeds, and starts. Takes the schedule in every
 * case. 0 with *req, or an error. */
int mmp__coll_start(mmp__sched_t *s, const void *fill, size_t fill_at,
                    size_t fill_len, void *out, size_t out_at, size_t out_len,
                    mmp_request_t **req);

/* A NOP after every op appended from `from` on: a region this rank sent
 * from may be written after it. */
int mmp__coll_after_all(mmp__sched_t *s, int from);

/* ---- Helpers for builders (coll_util.c) -------------------------------- */

/* A send or receive of [off, off+len) with group member `peer`; a send
 * waits for `after` and a->dep; with `check`, it carries the header (a
 * receive checks it) when a->check. Return the op or a negative error. */
int mmp__coll_send(mmp__sched_t *s, const mmp__coll_arg_t *a, int peer,
                   size_t off, size_t len, int phase, int after, int check);
int mmp__coll_recv(mmp__sched_t *s, const mmp__coll_arg_t *a, int peer,
                   size_t off, size_t len, int phase, int check);
/* A REDUCE of [src, src+len) into [dst, dst+len) after `a1` and `a2`
 * (either may be -1); `right`: src is the right operand. */
int mmp__coll_reduce(mmp__sched_t *s, size_t src, size_t dst, size_t len,
                     int right, int a1, int a2);
/* A NOP after `a1` and `a2`. */
int mmp__coll_join(mmp__sched_t *s, int a1, int a2);
/* A COPY after `a1`. */
int mmp__coll_copy(mmp__sched_t *s, size_t src, size_t dst, size_t len, int a1);
/* Block k of `parts` equal cuts of `len` bytes on element boundaries:
 * [*o, *o + *n). Every block is within one element of the others. */
void mmp__coll_block(size_t len, size_t esize, int parts, int k, size_t *o,
                     size_t *n);
/* Bytes and offsets of p blocks from counts and displacements (elements),
 * or equal blocks of `count` when counts is NULL; *hi: the end of the
 * last. 0, or MMP_ETOOBIG when a block does not fit a size_t. */
int mmp__coll_layout(int p, size_t esize, size_t count, const size_t *counts,
                     const size_t *displs, size_t *cnt, size_t *dsp,
                     size_t *hi);
/* The blocks of virtual members lo .. hi - 1 (member (base + v) mod n),
 * cnt[i] bytes at dsp[i], as (offset, length) pairs in `regs` (room for
 * hi - lo), adjacent ones merged, empty ones left out. Returns how many. */
int mmp__coll_regions(const mmp__coll_arg_t *a, const size_t *dsp,
                      const size_t *cnt, int base, int lo, int hi,
                      size_t *regs);
/* A send or receive of those regions as one message (packed when more
 * than one; the header only travels on a single region, where the two
 * ends agree it does). */
int mmp__coll_sendv(mmp__sched_t *s, const mmp__coll_arg_t *a, int peer,
                    const size_t *regs, int nregs, int phase, int after,
                    int check);
int mmp__coll_recvv(mmp__sched_t *s, const mmp__coll_arg_t *a, int peer,
                    const size_t *regs, int nregs, int phase, int check);

/* Largest power of two not above n (n >= 1). */
static inline int mmp__pow2_floor(int n) {
  int q = 1;

  while (q * 2 <= n)
    q *= 2;
  return q;
}

/* Recursive algorithms over a non-power of two n: with q =
 * mmp__pow2_floor(n) and rem = n - q, members 2k and 2k + 1 (k < rem)
 * fold into one virtual rank k, held by the odd one; the others are
 * virtual ranks i - rem. Virtual order is member order. */
static inline int mmp__fold_v(int i, int n) {
  int rem = n - mmp__pow2_floor(n);

  if (i < 2 * rem)
    return i % 2 ? i / 2 : -1;
  return i - rem;
}
static inline int mmp__fold_m(int v, int n) {
  int rem = n - mmp__pow2_floor(n);

  return v < rem ? 2 * v + 1 : v + rem;
}

/* The fold of a reduction: member 2k sends its accumulator to 2k + 1,
 * which combines it on the left (rank order). Returns the op after which
 * this rank's accumulator holds its virtual rank's contribution (a NOP
 * for the even ones), or a negative error. `t` is len bytes of scratch. */
int mmp__fold_in(mmp__sched_t *s, const mmp__coll_arg_t *a, size_t t,
                 int phase);
/* And back: 2k + 1 sends the result to 2k, after `after`. Returns the op
 * after which this rank holds the result. */
int mmp__fold_out(mmp__sched_t *s, const mmp__coll_arg_t *a, int after,
                  int phase, int from);

/* The reduction builders other algorithms are made of. */
int mmp__reduce_binomial_build(mmp__sched_t *s, const mmp__coll_arg_t *a);
/* After a reduction to member `troot` (`done` there), the result moves
 * to a->root if that is another member: the root's receive waits for
 * everything it sent from its accumulator (ops from `from` on). Returns
 * this rank's final op. */
int mmp__reduce_hop(mmp__sched_t *s, const mmp__coll_arg_t *a, int troot,
                    int done, int from, int phase);
/* The member a reduction tree is rooted at: the root, or member 0 when
 * the operation is not commutative (virtual order is then rank order). */
static inline int mmp__reduce_troot(const mmp__coll_arg_t *a) {
  return a->noncomm ? 0 : a->root;
}
int mmp__allreduce_rd_build(mmp__sched_t *s, const mmp__coll_arg_t *a);
int mmp__allreduce_ring_build(mmp__sched_t *s, const mmp__coll_arg_t *a);
/* The halving reduce-scatter (reduce_scatter_halving.c) on q =
 * mmp__pow2_floor(n) blocks [bnd[b], bnd[b + 1]) of the accumulator
 * (relative to a->off), after the fold of a non-power of two: virtual
 * rank v (h->v, -1 for the ranks folded out) ends holding the range of
 * blocks [h->lo[steps], h->hi[steps]), one block, reduced; with
 * `ordered` in rank order (distances 1, 2, ...), else with distances
 * q/2, ..., 1 (v ends with block v). h->lo/hi[k] is its range before step
 * k, h->snd[k] the send of step k. `t` is a->len bytes of scratch.
 * Returns the op after which the block is reduced. */
typedef struct mmp__halving_s {
  int v, steps;
  int mask[32];
  int lo[33], hi[33];
  int snd[32];
  int done;
} mmp__halving_t;
int mmp__halving_build(mmp__sched_t *s, const mmp__coll_arg_t *a,
                       const size_t *bnd, int ordered, size_t t,
                       mmp__halving_t *h);

/* The ring (allreduce_ring.c) over n blocks `bnd` (relative to a->off):
 * rank i ends with block i + shift reduced, and with `allgather` every
 * block. Returns the op after which this rank's part is done. */
int mmp__ring_build(mmp__sched_t *s, const mmp__coll_arg_t *a,
                    const size_t *bnd, int shift, int allgather);

/* The receive-combine-forward step of every tree reduction
 * (reduce_binomial.c): segment by segment, receive each of `kids` (group
 * members) into scratch, combine them on the right in the order given,
 * and send the result to `parent` (-1: none). Returns the op after which
 * every op of it is done. */
int mmp__reduce_tree(mmp__sched_t *s, const mmp__coll_arg_t *a, int parent,
                     const int *kids, int nkids, int phase);

/* Hierarchical groups (reduce_hierarchical.c): the group size for n
 * members, and the members of this rank's group and the leaders (every
 * sz-th virtual rank from troot), into inner[] and outer[] (n entries
 * each); gi->me and go->me are -1 where this rank is not one. */
int mmp__hier_size(int n);
int mmp__hier_groups(const mmp__coll_arg_t *a, int troot, int sz, int *inner,
                     mmp__group_t *gi, int *outer, mmp__group_t *go);

/* The broadcast allreduce's second half runs: the static broadcast AUTO
 * would choose for (q, len) under `nm` (the binomial tree without one),
 * over group `g` from member `root`, after `dep`, at phases phase ..
 * phase + 9. Returns the broadcast builder's op. */
int mmp__coll_bcast(mmp__sched_t *s, const mmp__group_t *g, int root,
                    size_t off, size_t len, int dep, int phase,
                    const mmp_netmodel_t *nm);

int mmp__allreduce_rabenseifner_build(mmp__sched_t *s,
                                      const mmp__coll_arg_t *a);

/* Costs shared by several rows. */
double mmp__cost_rd(int p, double m, const mmp_netmodel_t *nm);
double mmp__cost_ring(int p, double m, const mmp_netmodel_t *nm);
double mmp__cost_rabenseifner(int p, double m, const mmp_netmodel_t *nm);
double mmp__cost_reduce_binomial(int p, double m, const mmp_netmodel_t *nm);
double mmp__cost_halving(int p, double m, const mmp_netmodel_t *nm);

#endif /* MMP_COLLECTIVES_COLL_H */
