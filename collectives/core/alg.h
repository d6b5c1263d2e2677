/* SPDX-License-Identifier: MIT */
/*
 * The algorithm descriptor: how every collective (broadcast, s-to-p,
 * reduce, allreduce, reduce-scatter, gather, scatter, allgather, alltoall,
 * barrier) describes its algorithms, and how a call is described to every
 * rank.
 *
 * Each algorithm is one row (mmp__alg_t) defined in the algorithm's own
 * file: its name, what it is, its flags, the options it takes, AUTO's
 * order of preference, and its hooks (a builder, or a start for a dynamic
 * row; a cost; a resolve for options the caller left open). A collective
 * is a family (mmp__family_t): its rows in the order of its table file
 * (<collective>/table.c), where row i is algorithm number i + 1 on the
 * wire, and the collective's own AUTO (its pick). Names, lookups, the
 * load-time check, AUTO, the cache and the wire descriptor work on any
 * family alike (core/registry.c, core/desc.c, select/).
 *
 * A call, as every rank must see it, is a description (mmp__desc_t): the
 * row, the root, the size, and the typed parameters the row was settled
 * with. Its wire form is self-describing (core/desc.c): a tag per
 * parameter, in one order, absent when 0, so that equal descriptions are
 * equal bytes and the executor compares first messages with memcmp.
 */
#ifndef MMP_COLLECTIVES_CORE_ALG_H
#define MMP_COLLECTIVES_CORE_ALG_H

#include "collectives/core/sched.h"

typedef struct mmp__alg_s mmp__alg_t;
typedef struct mmp__family_s mmp__family_t;
struct mmp__s2p_s;      /* s-to-p's sources and lengths (s2p/s2p.h) */
struct mmp__s2p_plan_s; /* its rounds of transfers (s2p/s2p.h) */

/* ---- Descriptions -------------------------------------------------------- */

/* One call as every rank must see it. Fields a row does not use are 0. */
typedef struct mmp__desc_s {
  int coll;                /* MMP_COLL_* */
  const mmp__alg_t *alg;   /* the row that runs */
  int root;                /* comm rank; 0 where there is none */
  uint64_t count;          /* elements: the vector, one block (0: v-forms),
                              a broadcast's bytes */
  size_t esize;            /* bytes per element */
  int base;                /* the element type's base (core/types.h) */
  int op;                  /* the reduction; 0: data movement */
  size_t seg;              /* bytes per segment; 0: whole */
  int radix;               /* a tree's radix */
  int groups;              /* G, the groups of a composite */
  const mmp__alg_t *inner; /* the row inside each group (or round) */
  const mmp__alg_t *outer; /* the row between the groups' leaders */
  int rows;                /* a logical grid's rows */
  int window;              /* exchanges in flight */
  int hint;                /* AUTO's advice from a broadcast's root to the
                              ranks that root the next ones */
} mmp__desc_t;

/* ---- What the hooks take ------------------------------------------------- */

/*
 * What a builder appends for: this rank's ops of the algorithm over group
 * `g`, from or to member `root`, on addresses of the schedule. Operations
 * that send start only after `dep` (-1: none); the builder uses phases
 * phase .. phase + 9 and returns an op that completes when this rank's
 * part is done (a NOP at least), or a negative error.
 */
typedef struct mmp__arg_s {
  const mmp__group_t *g;
  int root; /* group index */
  /* Broadcasts: the region [off, off + len). Reductions: this rank's
   * accumulator, its contribution at the start, the result where the
   * collective leaves one. */
  size_t off;
  size_t len;
  size_t esize; /* cuts fall on multiples of it */
  size_t seg;   /* bytes per segment; 0: whole */
  int radix;
  int groups;
  const mmp__alg_t *inner, *outer; /* composites' parts */
  int window;
  int noncomm; /* the operation is not commutative: keep rank order */
  /* Block collectives: member i's block is cnt[i] bytes at dsp[i] (the
   * output; alltoall: what this rank receives from i), and for alltoall
   * scnt[i] bytes at sdsp[i] go to member i. */
  const size_t *cnt, *dsp;
  const size_t *scnt, *sdsp;
  size_t res; /* exclusive scan: where the result goes (off: the
                 contribution, left as it is) */
  int dep;
  int phase;
  /* The top-level call: first messages carry (and check) the header,
   * each builder marking them as its pattern has them. */
  int first;
  const mmp_netmodel_t *nm;   /* composites choose their parts */
  const struct mmp__s2p_s *x; /* s-to-p: the sources */
} mmp__arg_t;

/*
 * What a cost prices: p ranks and m bytes (the vector, one block, the
 * message) under the model, cut into X segments (a row AUTO segments) and
 * in G groups (a composite). A composite prices its parts with
 * mmp__auto_part (select/auto.h), through `fam`.
 */
typedef struct mmp__cost_in_s {
  int p;
  double m;
  double X;
  int G;
  const mmp_netmodel_t *nm;
  const mmp__family_t *fam;
  /* Multicast as AUTO prices it here, or NULL: not priced (infinite). */
  const mmp__mcast_verdict_t *mc;
  const struct mmp__s2p_s *x; /* s-to-p: the sources and lengths */
  /* The communicator's node segment may serve the call (blocking, one
   * node): the shm rows are priced, else they are INFINITY. */
  int node;
} mmp__cost_in_t;

/* The options of a call, its names looked up: what the caller asked for
 * (mmp_coll_opts_t), or what the environment or AUTO settles. */
typedef struct mmp__opts_s {
  const mmp__alg_t *alg; /* NULL: AUTO */
  unsigned mode;         /* MMP_SEND_* */
  unsigned timeout_ms;   /* 0: the communicator's */
  size_t segment;
  int radix;
  int groups;
  const mmp__alg_t *inner, *outer;
  int rows;
  int window;
  int from_env; /* MINIMP_<COLLECTIVE>_ALG's: groups and rows fit to the
                   communicator instead of failing the call */
} mmp__opts_t;

/* What a row's resolve settles options with: every rank computes the
 * same from the same call. */
typedef struct mmp__env_s {
  mmp_comm_t *comm;         /* the communicator; its model is the one
                               mmp_init measured, read, never measured here */
  const mmp_netmodel_t *nm; /* the model, where the caller has it; NULL:
                               mmp__env_model reads `comm`'s */
  int p;
  double m;      /* bytes, as AUTO prices them */
  int auto_pick; /* AUTO chose the row: the caller's options do not apply */
  const mmp__family_t *fam;
  const mmp__opts_t *o; /* what the caller asked for */
} mmp__env_t;

/* What a dynamic row needs to run on its own. */
typedef struct mmp__run_s {
  mmp__engine_t *e;
  mmp_comm_t *comm;
  uint8_t *buf;
  const mmp__desc_t *d;
  const mmp__family_t *fam; /* the rows of its parts */
  unsigned mode;
  unsigned timeout_ms; /* the call's, or the communicator's; 0: none */
  /* Builds a static row of `fam` for the whole communicator. */
  int (*build)(mmp__sched_t *s, const mmp__desc_t *d);
  /* Broadcast: AUTO's adaptive mode (receivers announce themselves and
   * follow the root, which runs `stat` when it is set, else `d`), the
   * root's regime for the ranks that root next, roots that share each
   * receiver's link (a multicast s-to-p), and whether it is a part of
   * another collective (not the communicator's latest broadcast). */
  int adaptive;
  const mmp__desc_t *stat;
  int hint;
  int pace_share;
  int part;
  /* s-to-p: the sources; and a hook that runs once, lock held, when the
   * collective is over and before its request completes, and may change
   * *err (a scratch buffer's copy). NULL: none. */
  const struct mmp__s2p_s *x;
  void (*fini)(int *err, void *arg);
  void *fini_arg;
  /* An s-to-p that starts once its lengths are in: the first of the
   * sequence numbers its start reserved (seq_given), which its parts take
   * in order (a multicast s-to-p's broadcasts, one per source); else each
   * part takes the communicator's next. */
  int seq_given;
  uint32_t seq;
  /* Reductions (the shm rows): this rank's contribution (`buf` gets the
   * result where the call leaves one) and the reduce callback's arg
   * (mmp__reduce_arg). */
  const uint8_t *in;
  void *reduce_arg;
} mmp__run_t;

/* A tree's radix, where a row takes one (opts.radix): at most this many
 * children a level, this many by default. */
#define MMP__RADIX_MAX 16
#define MMP__RADIX_DEFAULT 3

/* ---- The row ------------------------------------------------------------- */

enum {
  MMP__ALG_AUTO = 0x1,       /* AUTO may choose it (priced; `prefer`) */
  MMP__ALG_TOP = 0x2,        /* ... only as its own top-level choice */
  MMP__ALG_PART = 0x4,       /* runs as a composite's inner or outer part,
                                or as an arrival-aware round */
  MMP__ALG_COMPOSITE = 0x8,  /* runs an inner and an outer row (PART) */
  MMP__ALG_DYNAMIC = 0x10,   /* no static schedule: `start` */
  MMP__ALG_SEGMENTED = 0x20, /* AUTO cuts it into segments: `segment`, else
                                its collective's */
  MMP__ALG_ORDERED = 0x40,   /* keeps rank order: any associative op */
  MMP__ALG_MODEL = 0x80,     /* its build reads the model (a->nm): it
                                chooses its parts from it */
  MMP__ALG_BLOCKING = 0x100  /* runs to completion inside its start:
                                blocking calls only (the shm rows) */
};

struct mmp__alg_s {
  const char *name;    /* as users name it: opts.algorithm, MINIMP_*_ALG */
  const char *summary; /* one line: mmp_coll_algs, --list-algs */
  unsigned flags;      /* MMP__ALG_* */
  unsigned takes;      /* the options it reads: MMP_OPT_* */
  int prefer;          /* AUTO: of two within 3%, the lower wins; unique in
                          its collective, 0 for rows AUTO never prices */
  size_t auto_min;     /* AUTO considers it from this many bytes on */
  /* Appends this rank's ops (a static row). */
  int (*build)(mmp__sched_t *s, const mmp__arg_t *a);
  /* Its rounds of transfers, which a plan schedules or prices (an s-to-p
   * row built from rounds, instead of `build`). */
  int (*plan)(struct mmp__s2p_plan_s *pl);
  /* Starts a dynamic row (MMP__ALG_DYNAMIC). Any thread, lock NOT held.
   * 0 with *req a new collective request (run->fini then runs exactly
   * once), or an error (it never ran). */
  int (*start)(const mmp__run_t *run, mmp_request_t **req);
  /* Predicted seconds (Hockney); NULL: never priced. */
  double (*cost)(const mmp__cost_in_t *in);
  /* Bytes the busiest link carries once (a burst allowance covers it). */
  double (*link_bytes)(int p, double m);
  /* MMP__ALG_SEGMENTED: the segment when the caller gave none; NULL: the
   * collective's. */
  size_t (*segment)(int p, size_t len, size_t esize, const mmp_netmodel_t *nm);
  /* Settles what the caller left open in `d` (d->alg, root, count set,
   * and the options given or AUTO's). NULL: nothing to settle. 0, or an
   * error from measuring the model. */
  int (*resolve)(mmp__desc_t *d, const mmp__env_t *env);
};

/* ---- The collective ------------------------------------------------------ */

/* How far AUTO looks: every row (TOP), none that runs only as its own
 * top-level choice (STATIC), and no composite either (FLAT: a part). */
enum { MMP__PICK_TOP = 0, MMP__PICK_STATIC = 1, MMP__PICK_FLAT = 2 };

/* What AUTO prices: a call's size as every rank sees it. */
typedef struct mmp__query_s {
  int p;
  size_t len;   /* bytes: the vector, one block, the message */
  size_t esize; /* segments fall on multiples of it */
  int noncomm;  /* only rows that keep rank order */
  int level;    /* MMP__PICK_* */
  const mmp_netmodel_t *nm;
  const mmp__mcast_verdict_t *mc; /* NULL: multicast not priced */
  const struct mmp__s2p_s *x;
  int node; /* the shm rows may run (mmp__cost_in_t.node) */
} mmp__query_t;

struct mmp__family_s {
  int coll;                      /* MMP_COLL_* */
  const char *name;              /* "bcast": what mmp_coll_name says */
  const char *env;               /* "MINIMP_BCAST_ALG": the variable that
                                    names its algorithm in place of AUTO */
  const mmp__alg_t *const *rows; /* row i is algorithm number i + 1 */
  int nrows;
  /* AUTO: the cheapest row for `q`, with its segment and groups in *d
   * (d->alg, seg, groups), and its predicted seconds. Every rank that
   * passes the same query gets the same. mmp__auto_pick, or a wrapper
   * with the collective's own rules. */
  double (*pick)(const mmp__family_t *f, const mmp__query_t *q, mmp__desc_t *d);
  /* The segment AUTO gives a SEGMENTED row without one of its own;
   * NULL: whole. */
  size_t (*segment)(int p, size_t len, size_t esize, const mmp_netmodel_t *nm);
  /* A row's price under `in`; NULL: row->cost. */
  double (*price)(const mmp__alg_t *row, const mmp__cost_in_t *in);
};

/* ---- The registry (registry.c) ------------------------------------------- */

/* The row of `f` named `name`, or NULL (NULL name, "auto" or unknown). */
const mmp__alg_t *mmp__alg_find(const mmp__family_t *f, const char *name);
/* Row `a`'s number in `f` (1 .. nrows), or 0 if it is not one of them. */
int mmp__alg_index(const mmp__family_t *f, const mmp__alg_t *a);
/* The row of number `i`, or NULL. */
static inline const mmp__alg_t *mmp__alg_at(const mmp__family_t *f, int i) {
  return i >= 1 && i <= f->nrows ? f->rows[i - 1] : NULL;
}

/* Checks a family's rows (debug builds abort on a violation): names
 * unique and plain, exactly one of build, plan and start as the flags
 * say, AUTO rows priced with a unique `prefer`, parts static and not
 * composite, composites taking their parts, the options a row takes
 * among those its hooks read. Returns the number of violations it logged
 * (0), for release builds and tests. */
int mmp__family_check(const mmp__family_t *f);

/* Runs mmp__family_check when the library loads (debug builds). One line
 * at the end of each table file. */
#ifndef NDEBUG
#define MMP__FAMILY_CHECK_AT_LOAD(f)                                           \
  __attribute__((constructor)) static void check_at_load(void) {               \
    int bad = mmp__family_check(&(f));                                         \
    assert(bad == 0);                                                          \
    (void)bad;                                                                 \
  }
#else
#define MMP__FAMILY_CHECK_AT_LOAD(f)
#endif

/* ---- The wire descriptor (desc.c) ------------------------------------- */

/* The largest encoding: mmp__desc_encode never writes more. */
#define MMP__DESC_MAX 76

/* Writes the wire form of `d` (a row of `f`) to `out` (MMP__DESC_MAX
 * bytes) and returns its length. */
size_t mmp__desc_encode(const mmp__family_t *f, const mmp__desc_t *d,
                        uint8_t *out);

/* The description in `n` bytes from another rank, checked for nothing
 * but its form: a known tag of each parameter at most once, in order,
 * rows that `f` has. 0 or MMP_EPROTO. */
int mmp__desc_decode(const mmp__family_t *f, const uint8_t *in, size_t n,
                     mmp__desc_t *d);

#endif /* MMP_COLLECTIVES_CORE_ALG_H */
