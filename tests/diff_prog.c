/* SPDX-License-Identifier: MIT */
/*
 * The differential test of the collectives: from a seed, random
 * communicators and random collectives, every rank checking its result
 * and status against a reference it computes itself from the same seed.
 *
 * A run is a sequence of steps; step i's seed is mixed from the run's
 * seed and i, and a step depends on nothing but its seed (and the number
 * of ranks and the environment), so any step replays alone. A step:
 *   - makes 1 to 3 communicators, alive at once: world itself, a dup, a
 *     split with random colours (some ranks in none) and keys, a
 *     creation from a random subset in random order, each of world or
 *     of an earlier one of the step;
 *   - runs 1 to 8 collectives on them: broadcast, s-to-p, reduce,
 *     allreduce, reduce-scatter (block and v), gather(v), scatter(v),
 *     allgather(v), alltoall(v) and barrier, each with an algorithm
 *     drawn from the library's list (AUTO included; multicast too, where
 *     the channel is not switched off), random sizes (0, 1, odd, around
 *     powers of two, the eager limits, the datagram's payload), roots,
 *     types (built-in and contiguous) and operations (built-in, a
 *     commutative and a non-commutative user operation), segments,
 *     modes (eager, rendezvous), in place or not, blocking or not;
 *   - in one of three ways: one after another; started together on one
 *     thread across its communicators and completed in a random order
 *     (wait, waitall, waitany, test); or each communicator driven by a
 *     thread of its own, all at once (disjoint communicators of a split
 *     are then used concurrently by the ranks' threads).
 * A collective that ends with anything but the result the reference
 * gives (data, every output length, the request's status, the bytes
 * around the output untouched) fails the run; so does one that takes
 * longer than DIFF_WATCHDOG_S (default 120 s). A failure prints the
 * step's seed, what ran, and the command that replays it:
 *
 *   diff_prog [--seed S] [--steps N] [--collectives N] [--time SECONDS]
 *             [--replay STEP_SEED] [--verbose]
 *
 * The run ends after N steps, N collectives (summed over the
 * communicators that ran them) or SECONDS (rank 0 decides, and tells the
 * others at each step), whichever comes first. Without --seed the seed
 * comes from the clock, and is printed first. Rank 0 prints a summary:
 * steps, collectives by kind, the seconds, and how often the answers
 * that are allowed instead of a result came (MMP_ENOTSUP for multicast
 * where the channel does not work on a communicator, MMP_EINVAL for an
 * algorithm a non-commutative operation rules out).
 *
 * Algorithms are listed and set in one place (the "Algorithms" section),
 * by name.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_ref.h"
#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h"

extern char **environ;

#define MAXP 64
#define MAX_SPECS 3
#define MAX_OPS 8
#define MAX_THREADS MAX_SPECS
#define MAX_ALGS 32
#define GUARD 16

/* ---- Random numbers ------------------------------------------------------ */

typedef struct rng_s {
  uint64_t s;
} rng_t;

static uint64_t rnd(rng_t *g) {
  return mr_next(&g->s);
}

static uint64_t below(rng_t *g, uint64_t n) {
  return n > 0 ? rnd(g) % n : 0;
}

static int chance(rng_t *g, int pct) {
  return (int)below(g, 100) < pct;
}

static uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ull);
  return mr_next(&s);
}

/* ---- Algorithms: listed here, by name ----------------------------------- */

/* The collectives (MMP_COLL_*) are 1 to MMP_COLL_EXSCAN. */
#define NCOLLS (MMP_COLL_EXSCAN + 1)
typedef struct alg_list_s {
  int n;
  const char *name[MAX_ALGS];
} alg_list_t;

/* Indexed by MMP_COLL_*. */
static alg_list_t algs[NCOLLS];

/* The library's algorithms of each collective, by name (mmp_coll_algs),
 * AUTO left out; each collective's name must be known (mmp_coll_name). */
static void algs_init(void) {
  mmp_alg_info_t a;
  int c, i;

  for (c = 1; c < NCOLLS; c++) {
    MR_CHECK(mmp_coll_name(c) != NULL, "collective %d has no name", c);
    for (i = 0; algs[c].n < MAX_ALGS && mmp_coll_algs(c, i, &a) == 0; i++)
      algs[c].name[algs[c].n++] = a.name;
  }
}

/* NULL (AUTO) or a name from collective `coll`'s list. */
static const char *pick_alg(rng_t *g, int coll, int auto_pct) {
  const alg_list_t *l = &algs[coll];

  if (l->n == 0 || chance(g, auto_pct))
    return NULL;
  return l->name[below(g, (uint64_t)l->n)];
}

static int is_alg(const char *name, const char *want) {
  return name != NULL && strcmp(name, want) == 0;
}

/* The broadcasts that hierarchical, node and the arrival-aware ones take
 * as their inner and outer algorithms. */
static const char *const classic[] = {
    "flat",         "chain",    "pipeline",     "binary",
    "split_binary", "binomial", "scatter_ring", "scatter_rd"};

/* ---- Types and operations ------------------------------------------------ */

typedef struct tdesc_s {
  const char *name;
  mmp_type_t t;
  int base; /* built-in type of its base elements */
  size_t k; /* base elements an element */
} tdesc_t;

enum { T_C3I16 = MMP_TYPE_BUILTIN_COUNT, T_C4U64, NTYPES };
static tdesc_t types[NTYPES];

enum { U_ADD16 = MMP_OP_BUILTIN_COUNT, U_MAT, NOPS };
static mmp_op_t user_op[NOPS];
static const char *const op_name[NOPS] = {"?",    "sum",  "prod",  "min",
                                          "max",  "band", "bor",   "bxor",
                                          "land", "lor",  "add16", "matmul"};

/* Wrapping sums of 16-bit lanes: commutative. */
static void add16(const void *in, void *inout, size_t count, mmp_type_t type,
                  void *ctx) {
  size_t lanes = count * mmp_type_size(type) / 2, i;
  uint16_t a, b;
  (void)ctx;

  for (i = 0; i < lanes; i++) {
    memcpy(&a, (const uint8_t *)in + 2 * i, 2);
    memcpy(&b, (uint8_t *)inout + 2 * i, 2);
    b = (uint16_t)(a + b);
    memcpy((uint8_t *)inout + 2 * i, &b, 2);
  }
}

/* 2 x 2 matrices of uint64, inout = in x inout: not commutative. */
static void mat_mul(const uint64_t *a, uint64_t *b) {
  uint64_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                   a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
  memcpy(b, c, sizeof(c));
}

static void matmul(const void *in, void *inout, size_t count, mmp_type_t type,
                   void *ctx) {
  uint64_t a[4], b[4];
  size_t i;
  (void)type;
  (void)ctx;

  for (i = 0; i < count; i++) {
    memcpy(a, (const uint8_t *)in + 32 * i, 32);
    memcpy(b, (uint8_t *)inout + 32 * i, 32);
    mat_mul(a, b);
    memcpy((uint8_t *)inout + 32 * i, b, 32);
  }
}

static void types_init(void) {
  static const char *const names[MMP_TYPE_BUILTIN_COUNT] = {
      "byte",   "int8",  "uint8",  "int16", "uint16", "int32",
      "uint32", "int64", "uint64", "float", "double"};
  int t;

  for (t = 0; t < MMP_TYPE_BUILTIN_COUNT; t++)
    types[t] = (tdesc_t){names[t], t, t, 1};
  types[T_C3I16] = (tdesc_t){"3 x int16", 0, MMP_INT16, 3};
  types[T_C4U64] = (tdesc_t){"4 x uint64", 0, MMP_UINT64, 4};
  MR_CHECK(mmp_type_contiguous(3, MMP_INT16, &types[T_C3I16].t) == 0, "type");
  MR_CHECK(mmp_type_contiguous(4, MMP_UINT64, &types[T_C4U64].t) == 0, "type");
  for (t = 1; t < MMP_OP_BUILTIN_COUNT; t++)
    user_op[t] = t;
  MR_CHECK(mmp_op_create(add16, 1, NULL, &user_op[U_ADD16]) == 0, "op");
  MR_CHECK(mmp_op_create(matmul, 0, NULL, &user_op[U_MAT]) == 0, "op");
}

/* 1 if operation `op` (an index of user_op) applies to type `t`. */
static int op_fits(int t, int op) {
  if (op == U_ADD16)
    return types[t].base == MMP_INT16 || types[t].base == MMP_UINT16;
  if (op == U_MAT)
    return t == T_C4U64;
  return ref_supported(types[t].base, op);
}

/* ---- Reference data ------------------------------------------------------ */

/* Byte k of what world rank `from` gives world rank `to` (-1: everyone)
 * in the collective of `seed`. */
static uint8_t bb(uint64_t seed, int from, int to, size_t k) {
  uint64_t s =
      seed ^ ((uint64_t)(from + 1) << 48) ^ ((uint64_t)(to + 2) << 36) ^ k;
  return (uint8_t)mr_next(&s);
}

static void fill(uint8_t *b, size_t n, uint64_t seed, int from, int to) {
  size_t k;

  for (k = 0; k < n; k++)
    b[k] = bb(seed, from, to, k);
}

/* World rank r's base element e of a reduction of `seed`: small, so that
 * every operation is exact (ref_val); matrices' entries 0 .. 6. */
static int64_t red_val(uint64_t seed, int op, int base, int r, size_t e) {
  uint64_t s = seed ^ ((uint64_t)(r + 1) << 40) ^ e;
  if (op == U_MAT)
    return (int64_t)(mr_next(&s) % 7);
  return ref_val(base, op == U_ADD16 ? MMP_SUM : op, 0, (size_t)mr_next(&s));
}

/* Rank r's input of `n` elements of type t for operation op. */
static void red_input(uint8_t *buf, uint64_t seed, int t, int op, int r,
                      size_t n) {
  size_t e, nb = n * types[t].k;

  for (e = 0; e < nb; e++)
    ref_put(buf, types[t].base, e, red_val(seed, op, types[t].base, r, e));
}

/* The reduction over `members` (world ranks in rank order) of elements
 * [e0, e0 + n) into out. */
static void red_want(uint8_t *out, uint64_t seed, int t, int op,
                     const int *members, int nm, size_t e0, size_t n) {
  int base = types[t].base, i;
  size_t k = types[t].k, e;

  if (op == U_MAT) {
    for (e = e0; e < e0 + n; e++) {
      uint64_t acc[4], m[4];
      int j;
      for (j = 0; j < 4; j++)
        acc[j] = (uint64_t)red_val(seed, op, base, members[0], 4 * e + j);
      for (i = 1; i < nm; i++) {
        for (j = 0; j < 4; j++)
          m[j] = (uint64_t)red_val(seed, op, base, members[i], 4 * e + j);
        /* acc = acc x m: the lower ranks on the left. */
        mat_mul(acc, m);
        memcpy(acc, m, sizeof(m));
      }
      memcpy(out + 32 * (e - e0), acc, 32);
    }
    return;
  }
  for (e = e0 * k; e < (e0 + n) * k; e++) {
    int rop = op == U_ADD16 ? MMP_SUM : op;
    int64_t acc = red_val(seed, op, base, members[0], e);
    for (i = 1; i < nm; i++)
      acc = ref_op(rop, acc, red_val(seed, op, base, members[i], e));
    ref_put(out, base, e - e0 * k, acc);
  }
}

/* ---- Communicators ------------------------------------------------------- */

enum { K_WORLD, K_DUP, K_SPLIT, K_CREATE };
static const char *const kind_name[] = {"world", "dup", "split", "create"};

typedef struct grp_s {
  int n;
  int world[MAXP]; /* by rank in the group */
} grp_t;

typedef struct spec_s {
  int kind, parent;           /* parent: -1 world, else an earlier spec */
  int color[MAXP], key[MAXP]; /* K_SPLIT, by parent rank */
  uint64_t seed;              /* K_CREATE's list, by parent size */
  /* Every rank's comm of this spec: its group, or -1. */
  int ngrp;
  grp_t grp[MAXP];
  int grp_of[MAXP];
  mmp_comm_t *comm; /* this rank's, or NULL */
} spec_t;

static int P, ME;
static int verbose;

/* Ranks of a CREATE spec's list for a parent of n ranks (parent ranks,
 * in order). */
static int create_list(const spec_t *s, int n, int *list) {
  rng_t g = {mix(s->seed, (uint64_t)n)};
  int perm[MAXP], i, m;

  for (i = 0; i < n; i++)
    perm[i] = i;
  for (i = n - 1; i > 0; i--) {
    int j = (int)below(&g, (uint64_t)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  m = 1 + (int)below(&g, (uint64_t)n);
  memcpy(list, perm, (size_t)m * sizeof(int));
  return m;
}

/* Fills s's groups from its parent's (or world's). */
static void spec_groups(spec_t *s, const spec_t *specs) {
  const spec_t *par = s->parent >= 0 ? &specs[s->parent] : NULL;
  int npg = par != NULL ? par->ngrp : 1, pg, i, j, w;
  grp_t world;

  world.n = P;
  for (i = 0; i < P; i++)
    world.world[i] = i;
  s->ngrp = 0;
  for (w = 0; w < P; w++)
    s->grp_of[w] = -1;
  for (pg = 0; pg < npg; pg++) {
    const grp_t *pgp = par != NULL ? &par->grp[pg] : &world;
    int n = pgp->n;
    if (s->kind == K_WORLD || s->kind == K_DUP) {
      s->grp[s->ngrp] = *pgp;
      for (i = 0; i < n; i++)
        s->grp_of[pgp->world[i]] = s->ngrp;
      s->ngrp++;
    } else if (s->kind == K_CREATE) {
      int list[MAXP], m = create_list(s, n, list);
      grp_t *g = &s->grp[s->ngrp];
      g->n = m;
      for (i = 0; i < m; i++) {
        g->world[i] = pgp->world[list[i]];
        s->grp_of[g->world[i]] = s->ngrp;
      }
      s->ngrp++;
    } else {
      /* Colours in order of first appearance; members by (key, rank). */
      int done[MAXP] = {0};
      for (i = 0; i < n; i++) {
        grp_t *g;
        int c = s->color[i], a, b;
        if (c == MMP_UNDEFINED || done[i])
          continue;
        g = &s->grp[s->ngrp];
        g->n = 0;
        for (j = i; j < n; j++)
          if (s->color[j] == c) {
            done[j] = 1;
            g->world[g->n++] = j; /* parent rank for now */
          }
        for (a = 1; a < g->n; a++)
          for (b = a; b > 0; b--) {
            int x = g->world[b - 1], y = g->world[b];
            if (s->key[x] < s->key[y] || (s->key[x] == s->key[y] && x < y))
              break;
            g->world[b - 1] = y;
            g->world[b] = x;
          }
        for (a = 0; a < g->n; a++) {
          g->world[a] = pgp->world[g->world[a]];
          s->grp_of[g->world[a]] = s->ngrp;
        }
        s->ngrp++;
      }
    }
  }
}

static void spec_draw(rng_t *g, spec_t *specs, int idx) {
  spec_t *s = &specs[idx];
  int i, ncol;

  memset(s, 0, sizeof(*s));
  s->kind = (int)below(g, 4);
  if (idx == 0 && s->kind == K_WORLD && chance(g, 50))
    s->kind = K_SPLIT;
  s->parent = idx > 0 && chance(g, 30) ? (int)below(g, (uint64_t)idx) : -1;
  /* World once a step at most: no two threads call it at once. */
  for (i = 0; i < idx; i++)
    if (specs[i].kind == K_WORLD && s->kind == K_WORLD)
      s->kind = K_DUP;
  if (s->parent >= 0 && s->kind == K_WORLD)
    s->kind = K_DUP;
  ncol = 1 + (int)below(g, 4);
  for (i = 0; i < MAXP; i++) {
    s->color[i] = chance(g, 10) ? MMP_UNDEFINED : (int)below(g, (uint64_t)ncol);
    s->key[i] = (int)below(g, 7) - 3;
  }
  s->seed = rnd(g);
  spec_groups(s, specs);
}

static const grp_t *my_grp(const spec_t *s) {
  return s->grp_of[ME] >= 0 ? &s->grp[s->grp_of[ME]] : NULL;
}

/* ---- Operations ---------------------------------------------------------- */

enum {
  O_BCAST,
  O_S2P,
  O_ALLREDUCE,
  O_REDUCE,
  O_RS_BLOCK,
  O_RS,
  O_GATHER,
  O_GATHERV,
  O_SCATTER,
  O_SCATTERV,
  O_ALLGATHER,
  O_ALLGATHERV,
  O_ALLTOALL,
  O_ALLTOALLV,
  O_BARRIER,
  O_SCAN,
  O_EXSCAN,
  NKINDS
};
static const char *const op_kind[NKINDS] = {"bcast",
                                            "s2p",
                                            "allreduce",
                                            "reduce",
                                            "reduce_scatter_block",
                                            "reduce_scatter",
                                            "gather",
                                            "gatherv",
                                            "scatter",
                                            "scatterv",
                                            "allgather",
                                            "allgatherv",
                                            "alltoall",
                                            "alltoallv",
                                            "barrier",
                                            "scan",
                                            "exscan"};
/* The collective of each kind (MMP_COLL_*), 0 for the others. */
static const int op_coll[NKINDS] = {0,
                                    0,
                                    MMP_COLL_ALLREDUCE,
                                    MMP_COLL_REDUCE,
                                    MMP_COLL_REDUCE_SCATTER,
                                    MMP_COLL_REDUCE_SCATTER,
                                    MMP_COLL_GATHER,
                                    MMP_COLL_GATHER,
                                    MMP_COLL_SCATTER,
                                    MMP_COLL_SCATTER,
                                    MMP_COLL_ALLGATHER,
                                    MMP_COLL_ALLGATHER,
                                    MMP_COLL_ALLTOALL,
                                    MMP_COLL_ALLTOALL,
                                    0,
                                    MMP_COLL_SCAN,
                                    MMP_COLL_EXSCAN};

typedef struct op_s {
  int kind, spec, nb, in_place;
  uint64_t seed; /* data, and the parameters each group derives */
  const char *alg, *inner, *outer;
  unsigned mode;
  size_t size;    /* bytes (bcast) or elements (the others) */
  size_t seg_div; /* segment = bytes / seg_div (0: the default) */
  int root_draw, type, op, radix, groups, window, delay_us;
} op_t;

/* Sizes worth drawing: around powers of two, the limits, the multicast
 * payload, and the sizes where AUTO changes algorithm or segment. */
#define MAX_INTERESTING 512
static uint64_t interesting[MAX_INTERESTING];
static int ninteresting;
static int mcast_ok; /* the multicast channel may run */

static void add_around(size_t x) {
  size_t d;

  for (d = 0; d < 3 && ninteresting < MAX_INTERESTING; d++)
    if (x + d >= 1)
      interesting[ninteresting++] = x + d - 1;
}

/* AUTO's choice for `bytes` in collective `coll` (MMP_COLL_BCAST, or a
 * collective priced for doubles summed or a block of bytes), as one
 * number: its algorithm's name and segment. */
static uint64_t auto_choice(int coll, size_t bytes) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_coll_opts_t o = MMP_COLL_OPTS_INIT;

  if (coll == MMP_COLL_BCAST) {
    MR_CHECK(mmp_bcast_select(w, bytes, &o) == 0, "bcast select");
  } else {
    int red = coll <= MMP_COLL_REDUCE_SCATTER;
    MR_CHECK(mmp_coll_select(w, coll, red ? bytes / 8 : bytes,
                             red ? MMP_DOUBLE : MMP_BYTE, red ? MMP_SUM : 0,
                             &o) == 0,
             "coll select");
  }
  MR_CHECK(o.algorithm != NULL, "select named no algorithm");
  return mr_hash(o.algorithm) ^ (uint64_t)o.segment;
}

/* Adds the sizes up to 1 MiB where AUTO's choice of collective `coll`
 * changes: between powers of two that differ, the first size of the new
 * choice. */
static void add_switches(int coll) {
  size_t lo = 1, hi;

  for (hi = 2; hi <= (size_t)1 << 20; lo = hi, hi <<= 1) {
    size_t a = lo, b = hi;
    uint64_t ca = auto_choice(coll, a);
    if (ca == auto_choice(coll, b))
      continue;
    while (b - a > 1) {
      size_t mid = a + (b - a) / 2;
      if (auto_choice(coll, mid) == ca)
        a = mid;
      else
        b = mid;
    }
    add_around(b);
  }
}

/* Rank 0 finds the sizes and tells every rank, so that all draw alike. */
static void sizes_init(void) {
  size_t b;
  int f;

  if (ME == 0) {
    for (b = 1; b <= (size_t)1 << 18; b <<= 1)
      add_around(b);
    add_around((size_t)mmp__eng->cfg.eager_limit);
    add_around((size_t)mmp__eng->cfg.shm_eager_limit);
    if (mmp__mcast_payload(mmp__eng) > 0) {
      add_around(mmp__mcast_payload(mmp__eng));
      add_around(2 * mmp__mcast_payload(mmp__eng));
    }
    if (P > 1) {
      add_switches(MMP_COLL_BCAST);
      for (f = MMP_COLL_ALLREDUCE; f <= MMP_COLL_ALLTOALL; f++)
        add_switches(f);
    }
  }
  MR_CHECK(
      mmp_bcast(&ninteresting, sizeof(ninteresting), 0, mmp_comm_world()) == 0,
      "sizes");
  MR_CHECK(mmp_bcast(interesting, sizeof(interesting), 0, mmp_comm_world()) ==
               0,
           "sizes");
  if (verbose && ME == 0) {
    printf("diff: %d sizes:", ninteresting);
    for (f = 0; f < ninteresting; f++)
      printf(" %llu", (unsigned long long)interesting[f]);
    printf("\n");
  }
}

/* A size in bytes up to `cap`: 0 or tiny, one around a power of two or a
 * limit, or log-uniform; with `big`, 1 MiB + 3 rarely. */
static size_t draw_bytes(rng_t *g, size_t cap, int big) {
  size_t x;
  int r = (int)below(g, 1000);

  if (r < 5 && big)
    return (size_t)1 << 20 | 3;
  if (r < 150)
    return (size_t)below(g, 17);
  if (r < 600) {
    x = (size_t)interesting[below(g, (uint64_t)ninteresting)];
    /* Every draw is made whatever the sizes are, so that a step draws
     * the same from its seed even where the list differs. */
    big = big && chance(g, 10);
    r = (int)below(g, (uint64_t)cap + 1);
    return x <= cap || big ? x : (size_t)r;
  }
  x = (size_t)1 << below(g, 19);
  return (size_t)below(g, x < cap ? x + 1 : cap + 1);
}

/* 1 for the collectives that reduce (a vector of elements). */
static int reducing(int coll) {
  return coll <= MMP_COLL_REDUCE_SCATTER || coll == MMP_COLL_SCAN ||
         coll == MMP_COLL_EXSCAN;
}

static void op_draw(rng_t *g, op_t *o, int nspecs) {
  static const unsigned modes[] = {MMP_SEND_AUTO, MMP_SEND_EAGER,
                                   MMP_SEND_RNDV};
  int coll;

  memset(o, 0, sizeof(*o));
  o->kind = (int)below(g, NKINDS);
  o->spec = (int)below(g, (uint64_t)nspecs);
  o->seed = rnd(g);
  o->nb = chance(g, 50);
  o->in_place = chance(g, 20);
  o->mode = modes[below(g, 3)];
  o->seg_div = chance(g, 70) ? 0 : 1 + below(g, 64);
  o->root_draw = (int)below(g, MAXP);
  o->delay_us = chance(g, 10) ? (int)below(g, 3000) : 0;
  coll = op_coll[o->kind];
  if (o->kind == O_BCAST) {
    o->alg = pick_alg(g, MMP_COLL_BCAST, 15);
    if (is_alg(o->alg, "multicast") && !mcast_ok)
      o->alg = NULL;
    o->size = draw_bytes(g, (size_t)1 << 18, 1);
    if (is_alg(o->alg, "hierarchical") || is_alg(o->alg, "node") ||
        is_alg(o->alg, "arrival_b") || is_alg(o->alg, "arrival_nb")) {
      o->inner = chance(g, 50) ? classic[below(g, 8)] : NULL;
      o->outer = chance(g, 50) && !is_alg(o->alg, "arrival_b") &&
                         !is_alg(o->alg, "arrival_nb")
                     ? classic[below(g, 8)]
                     : NULL;
      o->groups = chance(g, 50) ? 0 : (int)below(g, 6);
    }
    if (is_alg(o->alg, "knomial"))
      o->radix = chance(g, 30) ? 0 : 2 + (int)below(g, 15);
  } else if (o->kind == O_S2P) {
    o->alg = pick_alg(g, MMP_COLL_S2P, 15);
    if (is_alg(o->alg, "multicast") && !mcast_ok)
      o->alg = NULL;
    o->size = draw_bytes(g, (size_t)1 << 16, 0);
  } else if (o->kind != O_BARRIER) {
    o->alg = pick_alg(g, coll, 15);
    /* The v-forms of gather and scatter run the flat algorithm; others
     * are refused on every rank (checked at times). */
    if ((o->kind == O_GATHERV || o->kind == O_SCATTERV) && chance(g, 80))
      o->alg = chance(g, 50) ? NULL : "flat";
    if (reducing(coll)) {
      do {
        o->type = (int)below(g, NTYPES);
        o->op = 1 + (int)below(g, NOPS - 1);
      } while (!op_fits(o->type, o->op));
    } else {
      static const int moves[] = {MMP_BYTE, MMP_INT32, MMP_DOUBLE, T_C3I16,
                                  T_C4U64};
      o->type = moves[below(g, 5)];
    }
    /* Elements: a vector for the reductions, a block for the others. */
    o->size = draw_bytes(g, reducing(coll) ? (size_t)1 << 17 : (size_t)1 << 14,
                         reducing(coll)) /
              mmp_type_size(types[o->type].t);
    if (is_alg(o->alg, "knomial"))
      o->radix = chance(g, 30) ? 0 : 2 + (int)below(g, 15);
    if (is_alg(o->alg, "linear"))
      o->window = (int)below(g, 6);
  }
}

/* ---- One collective on this rank ----------------------------------------- */

typedef struct run_s {
  const op_t *op;
  const grp_t *g;
  int me, n;
  mmp_comm_t *comm;
  uint8_t *send, *recv, *want, *extra;
  size_t recv_len, check_len, want_at; /* want compares recv[want_at ..] */
  size_t *a;                           /* counts and displacements, 4n */
  size_t *lens, *out_lens;
  mmp_request_t *req;
  int rc;
  long long want_bytes; /* the request's status.bytes, or -1 */
  int want_rc;          /* 0, or the error this rank must get */
  int may_rc;           /* an error allowed instead, on every rank */
  uint64_t step_seed;
  char desc[320];
} run_t;

static struct {
  pthread_mutex_t lock;
  /* Refusals allowed: a multicast row where multicast cannot serve the
   * call, a shm row where the node segment cannot, an order. */
  unsigned long long coll[NKINDS], enotsup_mcast, enotsup_shm, einval_order;
} tally = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0, 0};

/* What is running, for the watchdog and the failure message. */
typedef struct slot_s {
  uint64_t step_seed;
  double since; /* 0: idle */
  const char *desc;
} slot_t;
static slot_t slots[MAX_THREADS + 1];
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *prog;

/* The network model of the run, as the variables of a saved profile: a
 * replay with them makes the same automatic choices and draws from the
 * same sizes (rank 0 finds some of them from the model). */
static char model_vars[512];

static void model_vars_init(void) {
  mmp_netmodel_t nm;

  MR_CHECK(mmp_comm_netmodel(mmp_comm_world(), &nm) == 0, "netmodel");
  snprintf(model_vars, sizeof(model_vars),
           " -x MINIMP_NET_ALPHA_US=%.17g -x MINIMP_NET_BETA_NS=%.17g"
           " -x MINIMP_NET_BURST_BYTES=%.17g -x MINIMP_NET_SHARED_CPUS=%d"
           " -x MINIMP_NET_GAMMA_NS=%.17g -x MINIMP_NET_NODE_ALPHA_US=%.17g"
           " -x MINIMP_NET_NODE_BETA_NS=%.17g -x MINIMP_NET_GAP_US=%.17g",
           nm.alpha * 1e6, nm.beta * 1e9, nm.burst, nm.shared_cpus,
           nm.gamma * 1e9, nm.alpha_node * 1e6, nm.beta_node * 1e9,
           nm.gap * 1e6);
}

/* How to run step `step_seed` again: the same ranks (and hosts), the
 * same MINIMP_* variables of the job's own, and the model. */
static void replay_hint(uint64_t step_seed) {
  static const char *const launcher_set[] = {
      "MINIMP_RANK=",  "MINIMP_LOCAL_RANK=", "MINIMP_LOCAL_SIZE=",
      "MINIMP_SIZE=",  "MINIMP_BOOT_ADDR=",  "MINIMP_JOB_KEY=",
      "MINIMP_IFACE=", "MINIMP_ENCRYPT=",    "MINIMP_NET_"};
  char vars[1024] = "";
  size_t at = 0, i;
  int k;

  for (k = 0; environ[k] != NULL && at < sizeof(vars) - 1; k++) {
    int own = strncmp(environ[k], "MINIMP_", 7) == 0;
    for (i = 0; own && i < sizeof(launcher_set) / sizeof(*launcher_set); i++)
      own = strncmp(environ[k], launcher_set[i], strlen(launcher_set[i])) != 0;
    if (own)
      at +=
          (size_t)snprintf(vars + at, sizeof(vars) - at, " -x %s", environ[k]);
  }
  printf("rank %d: replay: minimprun -n %d%s%s %s --replay 0x%016llx\n", ME, P,
         vars, model_vars, prog, (unsigned long long)step_seed);
}

static void fail(const run_t *r, uint64_t step_seed, const char *fmt, ...) {
  va_list ap;

  printf("rank %d: FAILED step seed 0x%016llx: %s: ", ME,
         (unsigned long long)step_seed, r != NULL ? r->desc : "");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  replay_hint(step_seed);
  fflush(stdout);
  mmp_abort(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n > 0 ? n : 1);
  if (p == NULL) {
    printf("rank %d: out of memory (%zu bytes)\n", ME, n);
    fflush(stdout);
    mmp_abort(4);
  }
  return p;
}

/* Receive buffers: `len` bytes of 0xee and GUARD more. */
static uint8_t *guarded(size_t len) {
  uint8_t *b = xmalloc(len + GUARD);
  memset(b, 0xee, len + GUARD);
  return b;
}

/* Per-group parameters: a stream every member draws alike. */
static rng_t grp_rng(const run_t *r) {
  rng_t g = {mix(r->op->seed, (uint64_t)r->n)};
  return g;
}

static size_t segment_of(const op_t *o, size_t bytes) {
  return o->seg_div == 0 ? 0 : bytes / o->seg_div + 1;
}

/* Counts (some 0, at most `max` each) and displacements that lay the
 * blocks out in a random order with random gaps (packed: rank order, no
 * gaps); returns the layout's length in elements. */
static size_t layout(rng_t *g, int n, size_t max, int packed, size_t *cnt,
                     size_t *dsp) {
  int order[MAXP], i;
  size_t at = 0;

  for (i = 0; i < n; i++) {
    cnt[i] = chance(g, 15) ? 0 : (size_t)below(g, max + 1);
    order[i] = i;
  }
  for (i = n - 1; i > 0 && !packed; i--) {
    int j = (int)below(g, (uint64_t)i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (i = 0; i < n; i++) {
    dsp[order[i]] = at;
    at += cnt[order[i]] + (packed ? 0 : (size_t)below(g, 3));
  }
  return at;
}

/* Writes the blocks of a layout into `buf` (esize bytes an element):
 * block i from world rank from[i] (or `from1`) to `to` (or to[i]). */
static void put_blocks(uint8_t *buf, const size_t *cnt, const size_t *dsp,
                       int n, size_t esize, uint64_t seed, const int *from,
                       int from1, const int *to, int to1) {
  int i;

  for (i = 0; i < n; i++)
    fill(buf + dsp[i] * esize, cnt[i] * esize, seed,
         from != NULL ? from[i] : from1, to != NULL ? to[i] : to1);
}

static void run_free(run_t *r) {
  free(r->send);
  free(r->recv);
  free(r->want);
  free(r->extra);
  free(r->a);
  free(r->lens);
  free(r->out_lens);
}

/* Describes the op for messages. */
static void describe(run_t *r, const spec_t *specs) {
  const op_t *o = r->op;
  const spec_t *s = &specs[o->spec];
  size_t at;
  int i;

  at = (size_t)snprintf(
      r->desc, sizeof(r->desc),
      "%s alg %s%s%s%s%s size %zu type %s op %s root %d mode %u seg/%zu "
      "radix %d groups %d window %d nb %d in place %d; comm %d (%s of %d, %d "
      "ranks:",
      op_kind[o->kind], o->alg != NULL ? o->alg : "auto",
      o->inner != NULL ? " inner " : "", o->inner != NULL ? o->inner : "",
      o->outer != NULL ? " outer " : "", o->outer != NULL ? o->outer : "",
      o->size, types[o->type].name, op_name[o->op], o->root_draw % r->n,
      o->mode, o->seg_div, o->radix, o->groups, o->window, o->nb, o->in_place,
      o->spec, kind_name[s->kind], s->parent, r->n);
  for (i = 0; i < r->n && at < sizeof(r->desc) - 8; i++)
    at += (size_t)snprintf(r->desc + at, sizeof(r->desc) - at, " %d",
                           r->g->world[i]);
  snprintf(r->desc + at, sizeof(r->desc) - at, ")");
}

static void start_bcast(run_t *r) {
  const op_t *o = r->op;
  mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
  int root = o->root_draw % r->n;

  bo.algorithm = o->alg;
  bo.inner = o->inner;
  bo.outer = o->outer;
  bo.mode = o->mode;
  bo.segment = segment_of(o, o->size);
  bo.groups = o->groups % (r->n + 1); /* at most the ranks */
  bo.radix = o->radix;
  r->recv = guarded(o->size);
  r->want = xmalloc(o->size);
  fill(r->want, o->size, o->seed, r->g->world[root], -1);
  if (r->me == root)
    memcpy(r->recv, r->want, o->size);
  r->recv_len = r->check_len = o->size;
  r->want_bytes = (long long)o->size;
  if (is_alg(o->alg, "multicast") || is_alg(o->alg, "shm"))
    r->may_rc = MMP_ENOTSUP;
  if (o->nb)
    r->rc = mmp_ibcast(r->recv, o->size, root, r->comm, &bo, &r->req);
  else
    r->rc = mmp_bcast_ex(r->recv, o->size, root, r->comm, &bo);
}

static void start_s2p(run_t *r) {
  const op_t *o = r->op;
  mmp_s2p_opts_t so = MMP_S2P_OPTS_INIT;
  rng_t g = grp_rng(r);
  unsigned char mark[MAXP];
  size_t total = 0, at = 0, cap;
  int i, divs[MAXP], nd = 0, given;

  so.algorithm = o->alg;
  so.mode = o->mode;
  for (i = 1; i <= r->n; i++)
    if (r->n % i == 0)
      divs[nd++] = i;
  so.rows = chance(&g, 50) ? 0 : divs[below(&g, (uint64_t)nd)];
  if (chance(&g, 50)) {
    int s = (int)below(&g, (uint64_t)r->n + 1);
    MR_CHECK(mmp_s2p_dist((int)below(&g, MMP_S2P_DIST_COUNT), s, r->n, so.rows,
                          mark) == 0,
             "s2p dist");
  } else {
    for (i = 0; i < r->n; i++)
      mark[i] = (unsigned char)chance(&g, 50);
  }
  r->lens = xmalloc((size_t)r->n * sizeof(size_t));
  r->out_lens = xmalloc((size_t)r->n * sizeof(size_t));
  for (i = 0; i < r->n; i++) {
    r->lens[i] = mark[i] ? (chance(&g, 10) ? 0 : (size_t)below(&g, o->size + 1))
                         : MMP_S2P_NONE;
    r->out_lens[i] = 12345;
    total += mark[i] ? r->lens[i] : 0;
  }
  given = chance(&g, 50);
  /* Now and then one rank has less room: MMP_ETRUNC there only. */
  cap = total;
  if (total > 0 && chance(&g, 5) && r->me == (int)below(&g, (uint64_t)r->n)) {
    cap = (size_t)below(&g, total);
    r->want_rc = MMP_ETRUNC;
  }
  r->want = xmalloc(total);
  for (i = 0; i < r->n; i++)
    if (mark[i]) {
      fill(r->want + at, r->lens[i], o->seed, r->g->world[i], -1);
      at += r->lens[i];
    }
  r->send = xmalloc(mark[r->me] ? r->lens[r->me] : 0);
  if (mark[r->me])
    fill(r->send, r->lens[r->me], o->seed, ME, -1);
  r->recv = guarded(cap);
  r->recv_len = r->check_len = cap;
  r->want_bytes = r->want_rc == 0 ? (long long)total : 0;
  if (is_alg(o->alg, "multicast"))
    r->may_rc = MMP_ENOTSUP;
  if (o->nb)
    r->rc = mmp_ibcast_s2p(r->send, mark[r->me] ? r->lens[r->me] : 0,
                           mark[r->me], r->recv, cap, given ? r->lens : NULL,
                           r->out_lens, r->comm, &so, &r->req);
  else
    r->rc = mmp_bcast_s2p(r->send, mark[r->me] ? r->lens[r->me] : 0,
                          mark[r->me], r->recv, cap, given ? r->lens : NULL,
                          r->out_lens, r->comm, &so);
}

/* The blocking form of a call that has none with options: the
 * non-blocking one (started with `rc`), waited for at once. */
static int wait_now(run_t *r, int rc) {
  if (rc == 0 && !r->op->nb && r->req != NULL)
    rc = mmp_wait(&r->req, MMP_STATUS_IGNORE);
  return rc;
}

static void coll_opts(run_t *r, mmp_coll_opts_t *co, size_t bytes) {
  const op_t *o = r->op;

  co->algorithm = o->alg;
  co->mode = o->mode;
  co->segment = segment_of(o, bytes);
  co->radix = o->radix;
  co->window = o->window;
  /* A non-commutative operation rules some algorithms out, alike on
   * every rank. */
  if (o->op == U_MAT && o->alg != NULL)
    r->may_rc = MMP_EINVAL;
  /* The shm rows serve blocking calls of communicators on one host with
   * shared memory on; elsewhere every rank refuses them. */
  if (is_alg(o->alg, "shm"))
    r->may_rc = MMP_ENOTSUP;
}

static void start_reduction(run_t *r) {
  const op_t *o = r->op;
  mmp_coll_opts_t co = MMP_COLL_OPTS_INIT;
  mmp_type_t t = types[o->type].t;
  size_t es = mmp_type_size(t), n = o->size, total, off = 0, *cnt;
  int root = o->root_draw % r->n, i, nm = r->n;
  int in_place = o->in_place;
  rng_t g = grp_rng(r);

  coll_opts(r, &co, n * es);
  if (o->kind == O_RS_BLOCK || o->kind == O_RS) {
    /* n: each rank's block (block form) or the most one keeps. */
    r->a = xmalloc((size_t)r->n * sizeof(size_t));
    cnt = r->a;
    for (i = 0, total = 0; i < r->n; i++) {
      cnt[i] = o->kind == O_RS_BLOCK ? n : (size_t)below(&g, n + 1);
      if (i < r->me)
        off += cnt[i];
      total += cnt[i];
    }
  } else {
    total = n;
  }
  r->send = xmalloc(total * es);
  red_input(r->send, o->seed, o->type, o->op, ME, total);
  if (o->kind == O_SCAN || o->kind == O_EXSCAN) {
    /* The prefix of the members up to this one (exclusive: before it);
     * the exclusive scan leaves member 0's recvbuf as it was. */
    int upto = r->me + (o->kind == O_SCAN);
    r->want = xmalloc(n * es);
    r->recv = guarded(n * es);
    r->recv_len = r->check_len = n * es;
    if (in_place)
      memcpy(r->recv, r->send, n * es);
    if (upto > 0)
      red_want(r->want, o->seed, o->type, o->op, r->g->world, upto, 0, n);
    else
      memcpy(r->want, r->recv, n * es);
  } else if (o->kind == O_ALLREDUCE || o->kind == O_REDUCE) {
    r->want = xmalloc(n * es);
    red_want(r->want, o->seed, o->type, o->op, r->g->world, nm, 0, n);
    r->recv = guarded(n * es);
    if (o->kind == O_ALLREDUCE || r->me == root)
      r->recv_len = r->check_len = n * es;
    if (in_place && (o->kind == O_ALLREDUCE || r->me == root))
      memcpy(r->recv, r->send, n * es);
  } else {
    size_t mine = r->a[r->me];
    r->want = xmalloc(mine * es);
    red_want(r->want, o->seed, o->type, o->op, r->g->world, nm, off, mine);
    /* In place the input is in recvbuf, which then holds all of it: the
     * result is its first block. */
    r->recv = guarded((in_place ? total : mine) * es);
    r->recv_len = (in_place ? total : mine) * es;
    r->check_len = mine * es;
    if (in_place)
      memcpy(r->recv, r->send, total * es);
  }
  {
    const void *sb = in_place ? MMP_IN_PLACE : r->send;
    void *rb = r->recv;
    int op = user_op[o->op];
    switch (o->kind) {
    case O_ALLREDUCE:
      r->rc = o->nb ? mmp_iallreduce(sb, rb, n, t, op, r->comm, &co, &r->req)
                    : mmp_allreduce_ex(sb, rb, n, t, op, r->comm, &co);
      break;
    case O_REDUCE:
      if (r->me != root) {
        sb = r->send;
        rb = chance(&g, 50) ? NULL : rb;
      }
      r->rc = o->nb ? mmp_ireduce(sb, rb, n, t, op, root, r->comm, &co, &r->req)
                    : mmp_reduce_ex(sb, rb, n, t, op, root, r->comm, &co);
      break;
    case O_RS_BLOCK:
      r->rc = o->nb
                  ? mmp_ireduce_scatter_block(sb, rb, n, t, op, r->comm, &co,
                                              &r->req)
                  : mmp_reduce_scatter_block_ex(sb, rb, n, t, op, r->comm, &co);
      break;
    case O_SCAN:
      r->rc = o->nb ? mmp_iscan(sb, rb, n, t, op, r->comm, &co, &r->req)
                    : mmp_scan_ex(sb, rb, n, t, op, r->comm, &co);
      break;
    case O_EXSCAN:
      r->rc = o->nb ? mmp_iexscan(sb, rb, n, t, op, r->comm, &co, &r->req)
                    : mmp_exscan_ex(sb, rb, n, t, op, r->comm, &co);
      break;
    default:
      r->rc = o->nb ? mmp_ireduce_scatter(sb, rb, r->a, t, op, r->comm, &co,
                                          &r->req)
                    : mmp_reduce_scatter_ex(sb, rb, r->a, t, op, r->comm, &co);
    }
  }
}

static void start_gather_scatter(run_t *r) {
  const op_t *o = r->op;
  mmp_coll_opts_t co = MMP_COLL_OPTS_INIT;
  mmp_type_t t = types[o->type].t;
  size_t es = mmp_type_size(t), n = o->size, len, *cnt, *dsp;
  int root = o->root_draw % r->n, i, v, gather, here;
  rng_t g = grp_rng(r);

  v = o->kind == O_GATHERV || o->kind == O_SCATTERV;
  gather = o->kind == O_GATHER || o->kind == O_GATHERV;
  here = o->in_place && r->me == root;
  coll_opts(r, &co, n * es);
  r->a = xmalloc(2 * (size_t)r->n * sizeof(size_t));
  cnt = r->a;
  dsp = r->a + r->n;
  if (v) {
    len = layout(&g, r->n, n, 0, cnt, dsp);
  } else {
    for (i = 0; i < r->n; i++) {
      cnt[i] = n;
      dsp[i] = (size_t)i * n;
    }
    len = (size_t)r->n * n;
  }
  /* Only the root knows the v-forms' counts: the flat algorithm runs
   * them, any other is refused on every rank. */
  if (v && o->alg != NULL && !is_alg(o->alg, "flat"))
    r->want_rc = MMP_EINVAL;
  if (gather) {
    r->send = xmalloc(cnt[r->me] * es);
    fill(r->send, cnt[r->me] * es, o->seed, ME, r->g->world[root]);
    r->recv = guarded(len * es);
    if (r->me == root) {
      r->want = guarded(len * es);
      put_blocks(r->want, cnt, dsp, r->n, es, o->seed, r->g->world, 0, NULL,
                 r->g->world[root]);
      r->recv_len = r->check_len = len * es;
      if (here)
        memcpy(r->recv + dsp[r->me] * es, r->send, cnt[r->me] * es);
    }
  } else {
    r->send = guarded(len * es);
    if (r->me == root)
      put_blocks(r->send, cnt, dsp, r->n, es, o->seed, NULL, r->g->world[root],
                 r->g->world, 0);
    r->recv = guarded(cnt[r->me] * es);
    r->want = xmalloc(cnt[r->me] * es);
    fill(r->want, cnt[r->me] * es, o->seed, r->g->world[root], ME);
    if (!here)
      r->recv_len = r->check_len = cnt[r->me] * es;
  }
  {
    const void *sb = here && gather ? MMP_IN_PLACE : r->send;
    void *rb = here && !gather ? MMP_IN_PLACE : r->recv;
    int rt = r->me == root;
    switch (o->kind) {
    case O_GATHER:
      r->rc = o->nb ? mmp_igather(sb, n, rb, n, t, root, r->comm, &co, &r->req)
                    : mmp_gather_ex(sb, n, rb, n, t, root, r->comm, &co);
      break;
    case O_GATHERV:
      if (o->nb || co.algorithm != NULL)
        r->rc = wait_now(r, mmp_igatherv(sb, cnt[r->me], rt ? rb : NULL,
                                         rt ? cnt : NULL, rt ? dsp : NULL, t,
                                         root, r->comm, &co, &r->req));
      else
        r->rc = mmp_gatherv(sb, cnt[r->me], rt ? rb : NULL, rt ? cnt : NULL,
                            rt ? dsp : NULL, t, root, r->comm);
      break;
    case O_SCATTER:
      r->rc = o->nb ? mmp_iscatter(sb, n, rb, n, t, root, r->comm, &co, &r->req)
                    : mmp_scatter_ex(sb, n, rb, n, t, root, r->comm, &co);
      break;
    default:
      if (o->nb || co.algorithm != NULL)
        r->rc = wait_now(r, mmp_iscatterv(rt ? sb : NULL, rt ? cnt : NULL,
                                          rt ? dsp : NULL, rb, cnt[r->me], t,
                                          root, r->comm, &co, &r->req));
      else
        r->rc = mmp_scatterv(rt ? sb : NULL, rt ? cnt : NULL, rt ? dsp : NULL,
                             rb, cnt[r->me], t, root, r->comm);
    }
  }
}

static void start_allgather(run_t *r) {
  const op_t *o = r->op;
  mmp_coll_opts_t co = MMP_COLL_OPTS_INIT;
  mmp_type_t t = types[o->type].t;
  size_t es = mmp_type_size(t), n = o->size, len, *cnt, *dsp;
  int i, v = o->kind == O_ALLGATHERV, packed;
  rng_t g = grp_rng(r);

  coll_opts(r, &co, n * es);
  r->a = xmalloc(2 * (size_t)r->n * sizeof(size_t));
  cnt = r->a;
  dsp = r->a + r->n;
  packed = !v || chance(&g, 50);
  if (v) {
    len = layout(&g, r->n, n, packed, cnt, dsp);
    /* The s-to-p row needs the blocks packed in rank order. */
    for (i = 0, packed = 1; i < r->n; i++)
      packed = packed && dsp[i] == (i == 0 ? 0 : dsp[i - 1] + cnt[i - 1]);
    if (!packed && is_alg(o->alg, "s2p"))
      r->want_rc = MMP_EINVAL;
  } else {
    for (i = 0; i < r->n; i++) {
      cnt[i] = n;
      dsp[i] = (size_t)i * n;
    }
    len = (size_t)r->n * n;
  }
  r->send = xmalloc(cnt[r->me] * es);
  fill(r->send, cnt[r->me] * es, o->seed, ME, -1);
  r->recv = guarded(len * es);
  r->want = guarded(len * es);
  put_blocks(r->want, cnt, dsp, r->n, es, o->seed, r->g->world, 0, NULL, -1);
  r->recv_len = r->check_len = len * es;
  if (o->in_place)
    memcpy(r->recv + dsp[r->me] * es, r->send, cnt[r->me] * es);
  {
    const void *sb = o->in_place ? MMP_IN_PLACE : r->send;
    if (!v)
      r->rc = o->nb
                  ? mmp_iallgather(sb, n, r->recv, n, t, r->comm, &co, &r->req)
                  : mmp_allgather_ex(sb, n, r->recv, n, t, r->comm, &co);
    else if (o->nb || co.algorithm != NULL)
      r->rc = wait_now(r, mmp_iallgatherv(sb, cnt[r->me], r->recv, cnt, dsp, t,
                                          r->comm, &co, &r->req));
    else
      r->rc = mmp_allgatherv(sb, cnt[r->me], r->recv, cnt, dsp, t, r->comm);
  }
}

static void start_alltoall(run_t *r) {
  const op_t *o = r->op;
  mmp_coll_opts_t co = MMP_COLL_OPTS_INIT;
  mmp_type_t t = types[o->type].t;
  size_t es = mmp_type_size(t), n = o->size, slen, rlen, *sc, *sd, *rcn, *rd;
  int i, v = o->kind == O_ALLTOALLV, equal;
  int in_place = o->in_place;
  uint64_t cs;

  coll_opts(r, &co, n * es);
  r->a = xmalloc(4 * (size_t)r->n * sizeof(size_t));
  sc = r->a;
  sd = sc + r->n;
  rcn = sc + 2 * r->n;
  rd = sc + 3 * r->n;
  /* Bruck moves equal blocks only. */
  equal = !v || is_alg(o->alg, "bruck");
  cs = mix(o->seed, 77);
  for (i = 0; i < r->n; i++) {
    /* Elements from comm rank a to comm rank b: one draw per pair, the
     * same on both sides (symmetric in place). */
    int a = r->me, b = i;
    uint64_t x = in_place
                     ? mix(cs, (uint64_t)(a < b ? a * MAXP + b : b * MAXP + a))
                     : mix(cs, (uint64_t)(a * MAXP + b));
    uint64_t y = in_place ? x : mix(cs, (uint64_t)(b * MAXP + a));
    sc[i] = equal ? n : (x % 7 == 0 ? 0 : (size_t)(x % (n + 1)));
    rcn[i] = equal ? n : (y % 7 == 0 ? 0 : (size_t)(y % (n + 1)));
  }
  {
    rng_t g = {mix(o->seed, (uint64_t)ME)};
    int order[MAXP];
    size_t at = 0;
    for (i = 0; i < r->n; i++)
      order[i] = i;
    for (i = r->n - 1; i > 0 && v; i--) {
      int j = (int)below(&g, (uint64_t)i + 1), tt = order[i];
      order[i] = order[j];
      order[j] = tt;
    }
    for (i = 0; i < r->n; i++) {
      sd[order[i]] = at;
      at += sc[order[i]] + (v ? (size_t)below(&g, 2) : 0);
    }
    slen = at;
    at = 0;
    for (i = 0; i < r->n; i++) {
      rd[i] = in_place ? sd[i] : at;
      at += rcn[i] + (v ? (size_t)below(&g, 2) : 0);
    }
    rlen = in_place ? slen : at;
  }
  r->send = xmalloc(slen * es);
  for (i = 0; i < r->n; i++)
    fill(r->send + sd[i] * es, sc[i] * es, o->seed, ME, r->g->world[i]);
  r->recv = guarded(rlen * es);
  r->want = guarded(rlen * es);
  for (i = 0; i < r->n; i++)
    fill(r->want + rd[i] * es, rcn[i] * es, o->seed, r->g->world[i], ME);
  r->recv_len = r->check_len = rlen * es;
  if (in_place) {
    memcpy(r->recv, r->send, slen * es);
    /* The bytes outside the blocks are the caller's, as they were. */
    memcpy(r->want, r->send, slen * es);
    for (i = 0; i < r->n; i++)
      fill(r->want + rd[i] * es, rcn[i] * es, o->seed, r->g->world[i], ME);
  }
  {
    const void *sb = in_place ? MMP_IN_PLACE : r->send;
    if (!v)
      r->rc = o->nb ? mmp_ialltoall(sb, n, r->recv, n, t, r->comm, &co, &r->req)
                    : mmp_alltoall_ex(sb, n, r->recv, n, t, r->comm, &co);
    else if (o->nb || co.algorithm != NULL)
      r->rc = wait_now(r, mmp_ialltoallv(sb, in_place ? NULL : sc,
                                         in_place ? NULL : sd, r->recv, rcn, rd,
                                         t, r->comm, &co, &r->req));
    else
      r->rc = mmp_alltoallv(sb, in_place ? NULL : sc, in_place ? NULL : sd,
                            r->recv, rcn, rd, t, r->comm);
  }
}

/* Starts (or, blocking, runs) r->op on this rank. */
static void op_start(run_t *r) {
  const op_t *o = r->op;

  if (o->delay_us > 0 && (int)(mix(o->seed, (uint64_t)ME) % 3) == 0)
    usleep((useconds_t)o->delay_us);
  switch (o->kind) {
  case O_BCAST:
    start_bcast(r);
    break;
  case O_S2P:
    start_s2p(r);
    break;
  case O_ALLREDUCE:
  case O_REDUCE:
  case O_RS_BLOCK:
  case O_RS:
  case O_SCAN:
  case O_EXSCAN:
    start_reduction(r);
    break;
  case O_GATHER:
  case O_GATHERV:
  case O_SCATTER:
  case O_SCATTERV:
    start_gather_scatter(r);
    break;
  case O_ALLGATHER:
  case O_ALLGATHERV:
    start_allgather(r);
    break;
  case O_ALLTOALL:
  case O_ALLTOALLV:
    start_alltoall(r);
    break;
  default:
    r->rc = o->nb ? mmp_ibarrier(r->comm, &r->req) : mmp_barrier(r->comm);
  }
  if (r->rc != 0 && r->req != NULL)
    fail(r, r->step_seed, "error %s with a request", mmp_err_name(r->rc));
}

/* Checks a finished op's outcome on this rank. */
static void op_check(run_t *r, uint64_t step_seed, const mmp_status_t *st) {
  const op_t *o = r->op;
  size_t k;
  int i;

  if (r->rc != r->want_rc) {
    if (r->may_rc != 0 && r->rc == r->may_rc) {
      pthread_mutex_lock(&tally.lock);
      if (r->rc == MMP_ENOTSUP && is_alg(o->alg, "shm"))
        tally.enotsup_shm++;
      else if (r->rc == MMP_ENOTSUP)
        tally.enotsup_mcast++;
      else
        tally.einval_order++;
      pthread_mutex_unlock(&tally.lock);
      return;
    }
    fail(r, step_seed, "returned %s, want %s", mmp_err_name(r->rc),
         mmp_err_name(r->want_rc));
  }
  if (st != NULL) {
    if (st->error != r->rc)
      fail(r, step_seed, "status.error %d, returned %d", st->error, r->rc);
    if (r->want_bytes >= 0 && st->bytes != (size_t)r->want_bytes)
      fail(r, step_seed, "status.bytes %zu, want %lld", st->bytes,
           r->want_bytes);
  }
  if (r->rc == MMP_EINVAL)
    return; /* refused before anything moved */
  for (k = 0; k < r->check_len; k++)
    if (r->recv[k] != r->want[k])
      fail(r, step_seed, "byte %zu of %zu is 0x%02x, want 0x%02x", k,
           r->check_len, r->recv[k], r->want[k]);
  for (k = r->recv_len; r->recv != NULL && k < r->recv_len + GUARD; k++)
    if (r->recv[k] != 0xee)
      fail(r, step_seed, "byte %zu, after the output's %zu, was written", k,
           r->recv_len);
  if (o->kind == O_S2P)
    for (i = 0; i < r->n; i++)
      if (r->out_lens[i] != r->lens[i])
        fail(r, step_seed, "out_lens[%d] %zu, want %zu", i, r->out_lens[i],
             r->lens[i]);
  pthread_mutex_lock(&tally.lock);
  tally.coll[o->kind]++;
  pthread_mutex_unlock(&tally.lock);
}

/* ---- Steps --------------------------------------------------------------- */

enum { X_SEQ, X_INTERLEAVE, X_THREADS };
static const char *const exec_name[] = {"one after another", "interleaved",
                                        "threads"};

typedef struct step_s {
  uint64_t seed;
  int nspecs, nops, exec, nthreads, wait_style;
  spec_t specs[MAX_SPECS];
  op_t ops[MAX_OPS];
  unsigned long long collectives; /* summed over the groups */
} step_t;

static void step_draw(step_t *s, uint64_t seed) {
  rng_t g = {seed};
  int i;

  memset(s, 0, sizeof(*s));
  s->seed = seed;
  s->nspecs = 1 + (int)below(&g, MAX_SPECS);
  for (i = 0; i < s->nspecs; i++)
    spec_draw(&g, s->specs, i);
  s->nops = 1 + (int)below(&g, MAX_OPS);
  for (i = 0; i < s->nops; i++) {
    op_draw(&g, &s->ops[i], s->nspecs);
    s->collectives += (unsigned long long)s->specs[s->ops[i].spec].ngrp;
  }
  s->exec = (int)below(&g, 3);
  if (s->exec == X_THREADS && s->nspecs < 2)
    s->exec = X_INTERLEAVE;
  if (s->exec == X_INTERLEAVE)
    for (i = 0; i < s->nops; i++)
      s->ops[i].nb = 1;
  s->nthreads = s->exec == X_THREADS ? s->nspecs : 1;
  s->wait_style = (int)below(&g, 4);
}

static void slot_set(int t, uint64_t step_seed, const char *desc) {
  pthread_mutex_lock(&slot_lock);
  slots[t].step_seed = step_seed;
  slots[t].desc = desc;
  slots[t].since = desc != NULL ? mmp_wtime() : 0;
  pthread_mutex_unlock(&slot_lock);
}

static void run_init(run_t *r, const step_t *s, const op_t *o) {
  const spec_t *sp = &s->specs[o->spec];

  memset(r, 0, sizeof(*r));
  r->op = o;
  r->g = my_grp(sp);
  r->n = r->g->n;
  r->me = mmp_comm_rank(sp->comm);
  r->comm = sp->comm;
  r->step_seed = s->seed;
  r->want_bytes = -1;
  describe(r, s->specs);
}

/* Runs the ops of `s` that thread t owns (all for t < 0), one after
 * another. */
static void run_seq(step_t *s, int t) {
  int i;

  for (i = 0; i < s->nops; i++) {
    op_t *o = &s->ops[i];
    spec_t *sp = &s->specs[o->spec];
    run_t r;
    mmp_status_t st;
    if ((t >= 0 && o->spec % s->nthreads != t) || sp->comm == NULL)
      continue;
    run_init(&r, s, o);
    slot_set(t < 0 ? 0 : t + 1, s->seed, r.desc);
    if (verbose)
      printf("rank %d: op %d: %s\n", ME, i, r.desc);
    op_start(&r);
    if (r.req != NULL) {
      memset(&st, 0x5a, sizeof(st));
      r.rc = mmp_wait(&r.req, &st);
      op_check(&r, s->seed, &st);
    } else {
      op_check(&r, s->seed, NULL);
    }
    slot_set(t < 0 ? 0 : t + 1, s->seed, NULL);
    run_free(&r);
  }
}

/* Starts every op of the step this rank takes part in, then completes
 * them in the order of the step's wait style. */
static void run_interleaved(step_t *s) {
  run_t r[MAX_OPS];
  mmp_request_t *reqs[MAX_OPS];
  mmp_status_t st[MAX_OPS];
  int had[MAX_OPS], n = 0, i, left;

  memset(r, 0, sizeof(r));
  slot_set(0, s->seed, "interleaved collectives");
  for (i = 0; i < s->nops; i++) {
    spec_t *sp = &s->specs[s->ops[i].spec];
    if (sp->comm == NULL)
      continue;
    run_init(&r[n], s, &s->ops[i]);
    if (verbose)
      printf("rank %d: op %d: %s\n", ME, i, r[n].desc);
    op_start(&r[n]);
    n++;
  }
  for (i = 0; i < n; i++) {
    reqs[i] = r[i].req;
    had[i] = reqs[i] != NULL;
    r[i].req = NULL; /* completed and freed below, through reqs */
    memset(&st[i], 0x5a, sizeof(st[i]));
  }
  switch (s->wait_style) {
  case 0: /* waitall, then each one's own code from its status */
    (void)mmp_waitall((size_t)n, reqs, st);
    for (i = 0; i < n; i++)
      if (had[i])
        r[i].rc = st[i].error;
    break;
  case 1: /* waitany until none is left */
    for (left = n; left > 0; left--) {
      size_t at;
      mmp_status_t one;
      int rc = mmp_waitany((size_t)n, reqs, &at, &one);
      if (at == (size_t)-1)
        break;
      r[at].rc = rc;
      st[at] = one;
    }
    break;
  case 2: /* test in turn */
    for (left = 0, i = 0; i < n; i++)
      left += reqs[i] != NULL;
    while (left > 0) {
      for (i = 0; i < n; i++) {
        int flag = 0, rc;
        if (reqs[i] == NULL)
          continue;
        rc = mmp_test(&reqs[i], &flag, &st[i]);
        if (flag) {
          r[i].rc = rc;
          left--;
        }
      }
      if (left > 0)
        usleep(100);
    }
    break;
  default: /* wait, last started first */
    for (i = n - 1; i >= 0; i--)
      if (reqs[i] != NULL)
        r[i].rc = mmp_wait(&reqs[i], &st[i]);
  }
  for (i = 0; i < n; i++) {
    if (reqs[i] != NULL)
      fail(&r[i], s->seed, "request not completed (wait style %d)",
           s->wait_style);
    op_check(&r[i], s->seed, had[i] ? &st[i] : NULL);
    run_free(&r[i]);
  }
  slot_set(0, s->seed, NULL);
}

typedef struct thr_s {
  step_t *s;
  int t;
} thr_t;

static void *thread_main(void *arg) {
  thr_t *x = arg;
  run_seq(x->s, x->t);
  return NULL;
}

static int make_comms(step_t *s) {
  int i, rc;

  for (i = 0; i < s->nspecs; i++) {
    spec_t *sp = &s->specs[i];
    mmp_comm_t *par =
        sp->parent >= 0 ? s->specs[sp->parent].comm : mmp_comm_world();
    const grp_t *pg;
    int me, list[MAXP], m;
    sp->comm = NULL;
    if (par == NULL)
      continue;
    me = mmp_comm_rank(par);
    switch (sp->kind) {
    case K_WORLD:
      sp->comm = mmp_comm_world();
      rc = 0;
      break;
    case K_DUP:
      rc = mmp_comm_dup(par, &sp->comm);
      break;
    case K_SPLIT:
      rc = mmp_comm_split(par, sp->color[me], sp->key[me], &sp->comm);
      break;
    default:
      m = create_list(sp, mmp_comm_size(par), list);
      rc = mmp_comm_create(par, m, list, &sp->comm);
    }
    if (rc != 0)
      fail(NULL, s->seed, "making comm %d (%s): %s", i, kind_name[sp->kind],
           mmp_err_name(rc));
    /* The reference's membership is the library's. */
    pg = my_grp(sp);
    if ((pg == NULL) != (sp->comm == NULL) ||
        (pg != NULL && (mmp_comm_size(sp->comm) != pg->n ||
                        pg->world[mmp_comm_rank(sp->comm)] != ME)))
      fail(NULL, s->seed,
           "comm %d (%s): membership differs from the "
           "reference",
           i, kind_name[sp->kind]);
  }
  return 0;
}

static void free_comms(step_t *s) {
  int i;

  for (i = s->nspecs - 1; i >= 0; i--) {
    spec_t *sp = &s->specs[i];
    if (sp->comm != NULL && sp->kind != K_WORLD)
      MR_CHECK(mmp_comm_free(&sp->comm) == 0, "comm free");
    sp->comm = NULL;
  }
}

static void step_run(step_t *s) {
  pthread_t th[MAX_THREADS];
  thr_t x[MAX_THREADS];
  int t;

  slot_set(0, s->seed, "making communicators");
  make_comms(s);
  slot_set(0, s->seed, NULL);
  if (verbose)
    printf("rank %d: step 0x%016llx: %d comms, %d ops, %s\n", ME,
           (unsigned long long)s->seed, s->nspecs, s->nops, exec_name[s->exec]);
  if (s->exec == X_SEQ) {
    run_seq(s, -1);
  } else if (s->exec == X_INTERLEAVE) {
    run_interleaved(s);
  } else {
    for (t = 0; t < s->nthreads; t++) {
      x[t].s = s;
      x[t].t = t;
      MR_CHECK(pthread_create(&th[t], NULL, thread_main, &x[t]) == 0, "thread");
    }
    for (t = 0; t < s->nthreads; t++)
      pthread_join(th[t], NULL);
  }
  free_comms(s);
}

/* ---- The watchdog -------------------------------------------------------- */

static double watchdog_s = 120;

static void *watchdog(void *arg) {
  (void)arg;
  for (;;) {
    int t;
    sleep(1);
    pthread_mutex_lock(&slot_lock);
    for (t = 0; t <= MAX_THREADS; t++)
      if (slots[t].since > 0 && mmp_wtime() - slots[t].since > watchdog_s) {
        printf("rank %d: FAILED step seed 0x%016llx: no progress for %.0f s "
               "in %s\n",
               ME, (unsigned long long)slots[t].step_seed, watchdog_s,
               slots[t].desc != NULL ? slots[t].desc : "?");
        replay_hint(slots[t].step_seed);
        fflush(stdout);
        mmp_abort(3);
      }
    pthread_mutex_unlock(&slot_lock);
  }
  return NULL;
}

/* ---- Main ---------------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr,
          "usage: %s [--seed S] [--steps N] [--collectives N] [--time SECONDS]"
          " [--replay STEP_SEED] [--verbose]\n",
          prog);
  exit(64);
}

int main(int argc, char **argv) {
  uint64_t seed = 0, replay = 0;
  unsigned long long max_steps = 0, max_coll = 0, done_steps = 0, done = 0;
  double max_time = 0, t0, last = 0;
  int have_seed = 0, have_replay = 0, i;
  pthread_t wd;
  const char *e;
  step_t *s;

  prog = argv[0];
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--verbose") == 0) {
      verbose = 1;
      continue;
    }
    if (v == NULL)
      usage();
    i++;
    if (strcmp(a, "--seed") == 0)
      seed = strtoull(v, NULL, 0), have_seed = 1;
    else if (strcmp(a, "--replay") == 0)
      replay = strtoull(v, NULL, 0), have_replay = 1;
    else if (strcmp(a, "--steps") == 0)
      max_steps = strtoull(v, NULL, 0);
    else if (strcmp(a, "--collectives") == 0)
      max_coll = strtoull(v, NULL, 0);
    else if (strcmp(a, "--time") == 0)
      max_time = strtod(v, NULL);
    else
      usage();
  }
  if ((e = getenv("DIFF_WATCHDOG_S")) != NULL)
    watchdog_s = strtod(e, NULL);
  MR_CHECK(mmp_init(&argc, &argv) == 0, "mmp_init");
  P = mr_size();
  ME = mr_rank();
  MR_CHECK(P <= MAXP, "at most %d ranks", MAXP);
  setvbuf(stdout, NULL, _IOLBF, 0);
  algs_init();
  types_init();
  /* The network model once, on world: every communicator made from it
   * inherits it, so that AUTO measures nothing later. */
  {
    mmp_netmodel_t nm;
    MR_CHECK(mmp_comm_netmodel(mmp_comm_world(), &nm) == 0, "netmodel");
  }
  /* Multicast: switched off, or opened here by a first broadcast (the
   * payload is then known). */
  e = getenv("MINIMP_MCAST");
  mcast_ok =
      (e == NULL || strcmp(e, "off") != 0) && getenv("MINIMP_ENCRYPT") == NULL;
  if (mcast_ok && P > 1) {
    mmp_bcast_opts_t bo = MMP_BCAST_OPTS_INIT;
    uint8_t b[8] = {0};
    bo.algorithm = "multicast";
    mcast_ok = mmp_bcast_ex(b, sizeof(b), 0, mmp_comm_world(), &bo) == 0;
  }
  model_vars_init();
  if (verbose && ME == 0)
    printf("diff: model:%s\n", model_vars);
  sizes_init();
  if (!have_seed) {
    uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    MR_CHECK(mmp_bcast(&t, sizeof(t), 0, mmp_comm_world()) == 0, "seed");
    seed = mix(t, 1);
  }
  if (ME == 0 && have_replay)
    printf("diff: %d ranks, replaying step seed 0x%016llx\n", P,
           (unsigned long long)replay);
  else if (ME == 0)
    printf("diff: %d ranks, seed 0x%016llx\n", P, (unsigned long long)seed);
  MR_CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0, "watchdog");
  pthread_detach(wd);
  s = xmalloc(sizeof(*s));
  t0 = last = mmp_wtime();
  for (;;) {
    /* Rank 0 says whether to go on, and every rank checks it runs the
     * same step. */
    uint64_t msg[2];
    uint64_t step_seed = have_replay ? replay : mix(seed, done_steps);
    int go = !have_replay || done_steps == 0;
    if (max_steps > 0 && done_steps >= max_steps)
      go = 0;
    if (max_coll > 0 && done >= max_coll)
      go = 0;
    if (max_time > 0 && mmp_wtime() - t0 >= max_time)
      go = 0;
    msg[0] = go ? step_seed : 0;
    msg[1] = (uint64_t)go;
    MR_CHECK(mmp_bcast(msg, sizeof(msg), 0, mmp_comm_world()) == 0, "go");
    if (!msg[1])
      break;
    MR_CHECK(msg[0] == step_seed,
             "rank 0 runs step 0x%016llx, this rank "
             "0x%016llx",
             (unsigned long long)msg[0], (unsigned long long)step_seed);
    step_draw(s, step_seed);
    step_run(s);
    done_steps++;
    done += s->collectives;
    if (ME == 0 && mmp_wtime() - last >= 30) {
      last = mmp_wtime();
      printf("diff: %llu steps, %llu collectives, %.0f s\n", done_steps, done,
             last - t0);
    }
  }
  MR_CHECK(mmp_barrier(mmp_comm_world()) == 0, "barrier");
  if (ME == 0) {
    int k;
    printf("diff: passed: %llu steps, %llu collectives in %.1f s (seed "
           "0x%016llx); rank 0 ran:",
           done_steps, done, mmp_wtime() - t0,
           (unsigned long long)(have_replay ? replay : seed));
    for (k = 0; k < NKINDS; k++)
      printf(" %s %llu,", op_kind[k], tally.coll[k]);
    printf(" multicast %s, refused: multicast %llu, shm %llu, for order "
           "%llu\n",
           mcast_ok ? "drawn" : "unusable", tally.enotsup_mcast,
           tally.enotsup_shm, tally.einval_order);
  }
  free(s);
  mmp_type_free(&types[T_C3I16].t);
  mmp_type_free(&types[T_C4U64].t);
  mmp_op_free(&user_op[U_ADD16]);
  mmp_op_free(&user_op[U_MAT]);
  fflush(stdout);
  return mmp_finalize() == 0 ? 0 : 5;
}
