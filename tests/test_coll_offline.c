/* SPDX-License-Identifier: MIT */
/*
 * Schedules of reduce, allreduce, reduce-scatter, gather, scatter,
 * allgather and alltoall built offline, every rank's in this one process,
 * for every algorithm of their tables, then run against each other with
 * real bytes (mmp__sched_simulate_ex): every send must meet exactly one
 * receive of its length under rendezvous (the strictest order: no
 * deadlock), and every rank must end with the right result.
 *
 * Reductions are checked by their results, which see both a contribution
 * lost or counted twice and a wrong order:
 * - algorithms that keep rank order reduce 16-byte elements (a, b), the
 *   affine maps x -> a x + b mod 2^64, under composition: associative,
 *   not commutative, so anything but rank order gives another map;
 * - every algorithm also sums random 64-bit integers mod 2^64, where a
 *   lost or doubled contribution changes the sum.
 * The builders are those the library runs; the layouts (where each
 * rank's accumulator and blocks live) are the front-ends'.
 *
 * p = 1 .. 24, 31 .. 33 and 64 for every algorithm, with vectors of 0, 1,
 * p - 1, p + 3 and 3p + 1 elements, some in segments; 1000 ranks for the
 * algorithms whose op count grows as p log p, and 6142 for the
 * logarithmic reductions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/core/call.h"
#include "collectives/registry.h"
#include "collectives/select/auto.h"

/* The row of collective MMP_COLL_<coll> named `name`. */
#define R(coll, name) mmp__alg_find(mmp__family_of(MMP_COLL_##coll), #name)

static const mmp_netmodel_t net = {114e-6, 83.3e-9, 65536, 0, 0.3e-9};
static long messages_seen, runs;

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- The two test operations ------------------------------------------ */

enum { OP_SUM = 0, OP_AFFINE = 1 };

/* inout = in o inout (right: inout o in). An affine element (a, b) is
 * x -> a x + b; L o R applies L first. */
static void test_reduce(const void *in, void *inout, size_t n, int right,
                        void *arg) {
  size_t i;

  if (arg == NULL) {
    const uint64_t *x = in;
    uint64_t *io = inout;
    for (i = 0; i < n / 8; i++)
      io[i] += x[i];
    return;
  }
  for (i = 0; i < n / 16; i++) {
    const uint64_t *x = (const uint64_t *)in + 2 * i;
    uint64_t *io = (uint64_t *)inout + 2 * i, l0, l1, r0, r1;
    l0 = right ? io[0] : x[0];
    l1 = right ? io[1] : x[1];
    r0 = right ? x[0] : io[0];
    r1 = right ? x[1] : io[1];
    io[0] = l0 * r0;
    io[1] = l1 * r0 + r1;
  }
}

/* Element e of rank r's contribution. */
static void contribution(int op, int r, size_t e, uint64_t *out) {
  uint64_t k = mix((uint64_t)r * 1000003u + e);

  out[0] = op == OP_AFFINE ? k | 1 : k;
  if (op == OP_AFFINE)
    out[1] = mix(k);
}

/* The reduction over ranks 0 .. p - 1 of element e, in rank order. */
static void reduced(int op, int p, size_t e, uint64_t *out) {
  uint64_t x[2];
  int r;

  out[0] = op == OP_AFFINE ? 1 : 0;
  out[1] = 0;
  for (r = 0; r < p; r++) {
    contribution(op, r, e, x);
    if (op == OP_AFFINE) {
      out[1] = out[1] * x[0] + x[1];
      out[0] *= x[0];
    } else {
      out[0] += x[0];
    }
  }
}

/* Byte k of the block rank `from` gives rank `to`. */
static uint8_t block_byte(int from, int to, size_t k) {
  return (uint8_t)mix(((uint64_t)from << 40) ^ ((uint64_t)to << 20) ^ k);
}

static int reducing(int coll) {
  return coll <= MMP_COLL_REDUCE_SCATTER;
}

/* ---- One run: every rank's schedule ---------------------------------- */

typedef struct run_s {
  int coll, p, root, op, noncomm;
  const mmp__alg_t *alg;
  size_t count, esize, seg;
  mmp__sched_t **s;
  mmp__arg_t *a;
  size_t **lay; /* per rank: cnt, dsp, scnt, sdsp (4p) */
  uint8_t **mem;
  uint64_t *want; /* reductions: the reference, computed once */
} run_t;

static size_t esize_of(int op) {
  return op == OP_AFFINE ? 16 : 8;
}

static void fill_elems(uint8_t *at, int op, int r, size_t e0, size_t n) {
  size_t e;

  for (e = 0; e < n; e++) {
    uint64_t x[2];
    contribution(op, r, e0 + e, x);
    memcpy(at + e * esize_of(op), x, esize_of(op));
  }
}

/* Lays rank r out as its collective's front-end does, and fills its
 * data. */
static void setup_rank(run_t *w, int r) {
  int p = w->p, i, root = r == w->root;
  size_t len = w->count * w->esize, blk = len, *c = w->lay[r], at;
  mmp__arg_t *a = &w->a[r];
  mmp__sched_t *s = NULL;

  memset(a, 0, sizeof(*a));
  a->len = len;
  a->noncomm = w->noncomm;
  a->nm = &net;
  a->cnt = c;
  a->dsp = c + p;
  a->scnt = c + 2 * p;
  a->sdsp = c + 3 * p;
  switch (w->coll) {
  case MMP_COLL_ALLREDUCE:
    assert_int_equal(mmp__sched_offline(p, r, NULL, len, &s), 0);
    break;
  case MMP_COLL_REDUCE:
    assert_int_equal(mmp__sched_offline(p, r, NULL, root ? len : 0, &s), 0);
    a->off = root ? 0 : mmp__sched_scratch(s, len);
    break;
  case MMP_COLL_REDUCE_SCATTER:
    assert_int_equal(mmp__sched_offline(p, r, NULL, 0, &s), 0);
    a->len = len * (size_t)p;
    a->off = mmp__sched_scratch(s, a->len);
    for (i = 0; i < p; i++) {
      c[i] = blk;
      c[p + i] = a->off + (size_t)i * blk;
    }
    break;
  case MMP_COLL_GATHER:
  case MMP_COLL_SCATTER: {
    int gather = w->coll == MMP_COLL_GATHER;
    if (root) {
      assert_int_equal(mmp__sched_offline(p, r, NULL, gather ? blk * p : 0, &s),
                       0);
      at = gather ? 0 : mmp__sched_input(s, NULL, blk * p);
    } else if (strcmp(w->alg->name, "flat") == 0) {
      assert_int_equal(mmp__sched_offline(p, r, NULL, gather ? 0 : blk, &s), 0);
      at = gather ? mmp__sched_input(s, NULL, blk) : 0;
      c[r] = blk;
      c[p + r] = at;
      break;
    } else {
      assert_int_equal(mmp__sched_offline(p, r, NULL, 0, &s), 0);
      at = mmp__sched_scratch(s, blk * p);
    }
    for (i = 0; i < p; i++) {
      c[i] = blk;
      c[p + i] = at + (size_t)i * blk;
    }
    break;
  }
  case MMP_COLL_ALLGATHER:
    /* Uneven blocks with gaps, except where s-to-p needs them packed. */
    for (i = 0, at = 0; i < p; i++) {
      c[i] = w->alg == R(ALLGATHER, s2p) ? blk : blk + (size_t)(i % 3);
      c[p + i] = at;
      at += c[i] + (w->alg == R(ALLGATHER, s2p) ? 0 : (size_t)(i % 2));
    }
    assert_int_equal(mmp__sched_offline(p, r, NULL, at, &s), 0);
    break;
  case MMP_COLL_ALLTOALL:
    assert_int_equal(mmp__sched_offline(p, r, NULL, blk * p, &s), 0);
    at = mmp__sched_input(s, NULL, blk * p);
    for (i = 0; i < p; i++) {
      c[i] = c[2 * p + i] = blk;
      c[p + i] = (size_t)i * blk;
      c[3 * p + i] = at + (size_t)i * blk;
    }
    break;
  }
  s->reduce = test_reduce;
  s->reduce_arg = w->op == OP_AFFINE ? (void *)1 : NULL;
  w->s[r] = s;
}

/* After the build, when the address space's size is known: the data. */
static void fill_rank(run_t *w, int r) {
  mmp__sched_t *s = w->s[r];
  size_t total = s->len + s->in_len + s->scratch_len, k, *c = w->lay[r];
  int p = w->p, i;
  uint8_t *m = calloc(total + 1, 1);

  assert_non_null(m);
  w->mem[r] = m;
  switch (w->coll) {
  case MMP_COLL_ALLREDUCE:
  case MMP_COLL_REDUCE:
  case MMP_COLL_REDUCE_SCATTER:
    fill_elems(m + w->a[r].off, w->op, r, 0, w->a[r].len / w->esize);
    break;
  case MMP_COLL_GATHER:
  case MMP_COLL_ALLGATHER:
    for (k = 0; k < c[r]; k++)
      m[c[p + r] + k] = block_byte(r, -1, k);
    break;
  case MMP_COLL_SCATTER:
    if (r == w->root)
      for (i = 0; i < p; i++)
        for (k = 0; k < c[i]; k++)
          m[c[p + i] + k] = block_byte(r, i, k);
    break;
  case MMP_COLL_ALLTOALL:
    for (i = 0; i < p; i++)
      for (k = 0; k < c[2 * p + i]; k++)
        m[c[3 * p + i] + k] = block_byte(r, i, k);
    memcpy(m + c[p + r], m + c[3 * p + r], c[r]);
    break;
  }
}

/* The reference of a reduction: every element of the whole vector. */
static void expect(run_t *w) {
  size_t n = w->count * (w->coll == MMP_COLL_REDUCE_SCATTER ? w->p : 1), e;

  w->want = calloc(2 * n + 2, sizeof(uint64_t));
  assert_non_null(w->want);
  for (e = 0; e < n; e++)
    reduced(w->op, w->p, e, w->want + 2 * e);
}

/* The result on rank r. */
static void check_rank(run_t *w, int r) {
  const uint8_t *m = w->mem[r];
  size_t *c = w->lay[r], e, k, n = w->count;
  int p = w->p, i;
  uint64_t x[2];

  switch (w->coll) {
  case MMP_COLL_REDUCE:
    if (r != w->root)
      return;
    /* fall through */
  case MMP_COLL_ALLREDUCE:
    for (e = 0; e < n; e++) {
      memcpy(x, w->want + 2 * e, sizeof(x));
      if (memcmp(m + w->a[r].off + e * w->esize, x, w->esize) != 0)
        fail_msg("%s p %d n %zu rank %d: element %zu is wrong", w->alg->name, p,
                 n, r, e);
    }
    return;
  case MMP_COLL_REDUCE_SCATTER:
    for (e = 0; e < n; e++) {
      memcpy(x, w->want + 2 * ((size_t)r * n + e), sizeof(x));
      if (memcmp(m + c[p + r] + e * w->esize, x, w->esize) != 0)
        fail_msg("%s p %d n %zu rank %d: element %zu is wrong", w->alg->name, p,
                 n, r, e);
    }
    return;
  case MMP_COLL_GATHER:
  case MMP_COLL_ALLGATHER:
    if (w->coll == MMP_COLL_GATHER && r != w->root)
      return;
    for (i = 0; i < p; i++)
      for (k = 0; k < c[i]; k++)
        if (m[c[p + i] + k] != block_byte(i, -1, k))
          fail_msg("%s %s p %d n %zu rank %d: block %d byte %zu is wrong",
                   mmp__family_of(w->coll)->name, w->alg->name, p, n, r, i, k);
    return;
  case MMP_COLL_SCATTER:
    if (r == w->root)
      return;
    for (k = 0; k < c[r]; k++)
      if (m[c[p + r] + k] != block_byte(w->root, r, k))
        fail_msg("scatter %s p %d n %zu rank %d: byte %zu is wrong",
                 w->alg->name, p, n, r, k);
    return;
  case MMP_COLL_ALLTOALL:
    for (i = 0; i < p; i++)
      for (k = 0; k < c[i]; k++)
        if (m[c[p + i] + k] != block_byte(i, r, k))
          fail_msg("alltoall %s p %d n %zu rank %d: block %d byte %zu",
                   w->alg->name, p, n, r, i, k);
    return;
  }
}

static void run(int coll, const mmp__alg_t *alg, int p, size_t count, int op,
                int root, size_t seg_elems) {
  run_t w;
  mmp__desc_t d;
  mmp__sim_report_t rep;
  size_t want = 0, *hold;
  int *who, r, rc;

  memset(&w, 0, sizeof(w));
  w.coll = coll;
  w.alg = alg;
  w.p = p;
  w.root = root;
  w.op = op;
  w.noncomm = op == OP_AFFINE;
  w.count = count;
  w.esize = esize_of(op);
  w.s = calloc((size_t)p, sizeof(*w.s));
  w.a = calloc((size_t)p, sizeof(*w.a));
  w.lay = calloc((size_t)p, sizeof(*w.lay));
  w.mem = calloc((size_t)p, sizeof(*w.mem));
  hold = calloc(2 * (size_t)p, sizeof(size_t));
  who = calloc((size_t)p, sizeof(int));
  assert_true(w.s && w.a && w.lay && w.mem && hold && who);
  memset(&d, 0, sizeof(d));
  d.coll = coll;
  d.alg = alg;
  d.root = root;
  d.esize = w.esize;
  d.seg = seg_elems * w.esize;
  /* Rows that take a radix run at several, by p and count. */
  if (alg->takes & MMP_OPT_RADIX) {
    static const int radices[] = {2, 3, 4, 5, 16};
    d.radix = radices[(p + (int)(count % 5)) % 5];
  }
  for (r = 0; r < p; r++) {
    w.lay[r] = calloc(4 * (size_t)p + 1, sizeof(size_t));
    assert_non_null(w.lay[r]);
    setup_rank(&w, r);
    rc = mmp__desc_build(w.s[r], &d, &w.a[r]);
    if (rc != 0)
      fail_msg("%s %s p %d n %zu: rank %d builds %s",
               mmp__family_of(coll)->name, alg->name, p, count, r,
               mmp_err_name(rc));
    fill_rank(&w, r);
    if (w.s[r]->len + w.s[r]->in_len + w.s[r]->scratch_len > want)
      want = w.s[r]->len + w.s[r]->in_len + w.s[r]->scratch_len;
  }
  /* Every rank holds its whole address space from the start: the data
   * check, not the holdings, decides. */
  for (r = 0; r < p; r++) {
    who[r] = r;
    hold[2 * r + 1] = want;
  }
  assert_int_equal(
      mmp__sched_simulate_ex(w.s, p, want, who, hold, p, w.mem, &rep), 0);
  if (!rep.ok)
    fail_msg("%s %s p %d n %zu root %d op %d seg %zu: %s",
             mmp__family_of(coll)->name, alg->name, p, count, root, op,
             seg_elems, rep.what);
  if (reducing(coll))
    expect(&w);
  for (r = 0; r < p; r++)
    check_rank(&w, r);
  free(w.want);
  messages_seen += rep.messages;
  runs++;
  for (r = 0; r < p; r++) {
    mmp__sched_free(w.s[r]);
    free(w.lay[r]);
    free(w.mem[r]);
  }
  free(w.s);
  free(w.a);
  free(w.lay);
  free(w.mem);
  free(hold);
  free(who);
}

/* The counts every algorithm runs at p. */
static void counts_of(int p, size_t out[5]) {
  out[0] = 0;
  out[1] = 1;
  out[2] = p > 1 ? (size_t)p - 1 : 2;
  out[3] = (size_t)p + 3;
  out[4] = 3 * (size_t)p + 1;
}

/* Every algorithm of `coll` at p: both operations where it keeps rank
 * order, every count, two roots, segments for some. A dynamic row (the
 * shm rows) builds no schedule to simulate: mr_node runs those. */
static void every_alg_at(int coll, int p, int ncounts) {
  const mmp__family_t *t = mmp__family_of(coll);
  size_t counts[5];
  int i, k, op;

  counts_of(p, counts);
  for (i = 0; i < t->nrows; i++) {
    const mmp__alg_t *row = t->rows[i];
    if (row->flags & MMP__ALG_DYNAMIC)
      continue;
    for (k = 0; k < ncounts; k++)
      for (op = OP_SUM; op <= OP_AFFINE; op++) {
        int root = (k + op) % 2 ? p / 2 : p - 1;
        if (op == OP_AFFINE &&
            (!reducing(coll) || !(row->flags & MMP__ALG_ORDERED)))
          continue;
        if (!reducing(coll) && coll != MMP_COLL_GATHER &&
            coll != MMP_COLL_SCATTER)
          root = 0;
        run(coll, row, p, counts[k], op, root, 0);
        /* In segments of two elements. */
        if (reducing(coll) && k == 4 && p % 3 == 0)
          run(coll, row, p, counts[k], op, root, 2);
      }
  }
}

static void every_collective(int p_lo, int p_hi, int ncounts) {
  int coll, p;

  for (coll = MMP_COLL_ALLREDUCE; coll <= MMP_COLL_ALLTOALL; coll++)
    for (p = p_lo; p <= p_hi; p++)
      every_alg_at(coll, p, ncounts);
}

/* Algorithms at 1000 and 6142 ranks: at 1000 every one whose messages
 * grow as p log p with short vectors (the rings, pairwise exchanges and
 * the linear alltoall send p^2 messages: p = 64 covers them); the
 * logarithmic reductions and trees also at 6142. */
static void test_large_p(void **state) {
  static const struct {
    int coll;
    const char *alg;
    int p, op, root;
    size_t count;
  } runs_large[] = {
      {MMP_COLL_ALLREDUCE, "recursive_doubling", 1000, OP_SUM, 0, 3},
      {MMP_COLL_ALLREDUCE, "rabenseifner", 1000, OP_AFFINE, 0, 1100},
      {MMP_COLL_ALLREDUCE, "reduce_bcast", 1000, OP_AFFINE, 0, 3},
      {MMP_COLL_ALLREDUCE, "hierarchical", 1000, OP_AFFINE, 0, 3},
      {MMP_COLL_REDUCE, "binomial", 1000, OP_SUM, 17, 3},
      {MMP_COLL_REDUCE, "pipeline", 1000, OP_AFFINE, 17, 3},
      {MMP_COLL_REDUCE, "rabenseifner", 1000, OP_SUM, 17, 1100},
      {MMP_COLL_REDUCE, "hierarchical", 1000, OP_AFFINE, 17, 3},
      {MMP_COLL_REDUCE, "knomial", 1000, OP_SUM, 17, 3},
      {MMP_COLL_REDUCE_SCATTER, "halving", 1000, OP_SUM, 0, 1},
      {MMP_COLL_GATHER, "flat", 1000, OP_SUM, 17, 3},
      {MMP_COLL_GATHER, "binomial", 1000, OP_SUM, 17, 3},
      {MMP_COLL_SCATTER, "flat", 1000, OP_SUM, 17, 3},
      {MMP_COLL_SCATTER, "binomial", 1000, OP_SUM, 17, 3},
      {MMP_COLL_ALLGATHER, "bruck", 1000, OP_SUM, 0, 1},
      {MMP_COLL_ALLGATHER, "recursive_doubling", 1000, OP_SUM, 0, 1},
      {MMP_COLL_ALLTOALL, "bruck", 1000, OP_SUM, 0, 1},
      {MMP_COLL_ALLREDUCE, "recursive_doubling", 6142, OP_AFFINE, 0, 2},
      {MMP_COLL_ALLREDUCE, "rabenseifner", 6142, OP_AFFINE, 0, 4100},
      {MMP_COLL_REDUCE, "binomial", 6142, OP_AFFINE, 5000, 2},
      {MMP_COLL_REDUCE, "hierarchical", 6142, OP_SUM, 77, 2},
      {MMP_COLL_REDUCE, "knomial", 6142, OP_AFFINE, 5000, 2},
      {MMP_COLL_GATHER, "binomial", 6142, OP_SUM, 3, 1},
      {MMP_COLL_SCATTER, "binomial", 6142, OP_SUM, 6141, 1},
  };
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(runs_large) / sizeof(runs_large[0]); i++) {
    double t0 = mmp_wtime();
    const mmp__family_t *f = mmp__family_of(runs_large[i].coll);
    run(runs_large[i].coll, mmp__alg_find(f, runs_large[i].alg),
        runs_large[i].p, runs_large[i].count, runs_large[i].op,
        runs_large[i].root, 0);
    if (getenv("COLL_OFFLINE_TIMES") != NULL)
      printf("%s %s p %d: %.2f s\n", f->name, runs_large[i].alg,
             runs_large[i].p, mmp_wtime() - t0);
  }
}

static void test_every_algorithm_p1_to_24(void **state) {
  double t0 = mmp_wtime();
  (void)state;
  every_collective(1, 24, 5);
  if (getenv("COLL_OFFLINE_TIMES") != NULL)
    printf("p 1..24: %.2f s\n", mmp_wtime() - t0);
}

static void test_every_algorithm_around_32_and_64(void **state) {
  double t0 = mmp_wtime();
  (void)state;
  every_collective(31, 33, 5);
  every_collective(64, 64, 3);
  if (getenv("COLL_OFFLINE_TIMES") != NULL)
    printf("p 31..33, 64: %.2f s\n", mmp_wtime() - t0);
}

/* Every table passes its check, and the public list (mmp_coll_algs,
 * mmp_coll_name) says what it has: its rows in order, their options and
 * flags. */
static void test_tables(void **state) {
  mmp_alg_info_t info;
  int coll, i;
  (void)state;

  for (coll = 1; mmp__family_of(coll) != NULL; coll++) {
    const mmp__family_t *f = mmp__family_of(coll);
    assert_int_equal(mmp__family_check(f), 0);
    assert_string_equal(mmp_coll_name(coll), f->name);
    for (i = 0; i < f->nrows; i++) {
      const mmp__alg_t *a = f->rows[i];
      assert_int_equal(mmp_coll_algs(coll, i, &info), 0);
      assert_string_equal(info.name, a->name);
      assert_string_equal(info.summary, a->summary);
      assert_int_equal(info.options, a->takes);
      assert_int_equal(!!(info.flags & MMP_ALG_AUTO),
                       !!(a->flags & MMP__ALG_AUTO));
      assert_int_equal(!!(info.flags & MMP_ALG_ORDERED),
                       !!(a->flags & MMP__ALG_ORDERED));
      assert_int_equal(!!(info.flags & MMP_ALG_PART),
                       !!(a->flags & MMP__ALG_PART));
      assert_ptr_equal(mmp__alg_find(f, a->name), a);
    }
    assert_int_equal(mmp_coll_algs(coll, f->nrows, &info), MMP_EINVAL);
    assert_int_equal(mmp_coll_algs(coll, -1, &info), MMP_EINVAL);
    assert_int_equal(mmp_coll_algs(coll, 0, NULL), MMP_EINVAL);
  }
  assert_int_equal(coll, MMP_COLL_EXSCAN + 1);
  assert_null(mmp_coll_name(coll));
  assert_null(mmp_coll_name(0));
  assert_int_equal(mmp_coll_algs(coll, 0, &info), MMP_EINVAL);
  assert_null(mmp__alg_find(mmp__family_of(MMP_COLL_ALLREDUCE), "nope"));
  assert_null(mmp__alg_find(mmp__family_of(MMP_COLL_ALLREDUCE), "auto"));
}

/* The receives of rank 0, the root, in a k-nomial reduce of one element
 * over p ranks at `radix`. */
static int knomial_root_receives(int p, int radix) {
  mmp__sched_t *s;
  mmp__desc_t d;
  mmp__arg_t a;
  int i, n = 0;

  assert_int_equal(mmp__sched_offline(p, 0, NULL, 8, &s), 0);
  memset(&d, 0, sizeof(d));
  d.coll = MMP_COLL_REDUCE;
  d.alg = R(REDUCE, knomial);
  d.esize = 8;
  d.count = 1;
  d.radix = radix;
  memset(&a, 0, sizeof(a));
  a.len = 8;
  assert_int_equal(mmp__desc_build(s, &d, &a), 0);
  for (i = 0; i < s->nops; i++)
    n += s->ops[i].kind == MMP__SOP_RECV;
  mmp__sched_free(s);
  return n;
}

/* The k-nomial reduce's root takes k - 1 children per digit of p - 1 in
 * base k, fewer at the top: the radix shapes the tree. */
static void test_knomial_shape(void **state) {
  (void)state;
  assert_int_equal(knomial_root_receives(16, 2), 4);
  assert_int_equal(knomial_root_receives(16, 4), 6);
  assert_int_equal(knomial_root_receives(16, 16), 15);
  assert_int_equal(knomial_root_receives(13, 3), 5); /* 1, 2, 3, 6, 9 */
}

/* The two-tree rows' trees (collectives/patterns/two_tree.c). */
int mmp__two_tree_links(int t, int v, int n, int *parent, int kids[2]);

/* Sanders, Speck and Traeff's two trees over virtual ranks 1 .. n below
 * rank 0: in each, every rank has one parent that lists it among its
 * children, and lies at most ceil(log2 (n + 1)) hops below rank 0; no
 * rank is inner (has children) in both trees, so none sends more than m
 * bytes. */
static void test_two_tree_shape(void **state) {
  enum { NMAX = 200 };
  int n, t, v, i, d, depth;
  (void)state;
  for (n = 1; n <= NMAX; n++) {
    int inner[2][NMAX + 1], parent[NMAX + 1];
    for (depth = 0; (1 << depth) < n + 1; depth++)
      ;
    for (t = 0; t < 2; t++) {
      int seen[NMAX + 1] = {0};
      for (v = 0; v <= n; v++) {
        int kids[2], par, nk = mmp__two_tree_links(t, v, n, &par, kids);
        parent[v] = par;
        inner[t][v] = nk > 0;
        for (i = 0; i < nk; i++) {
          int k2[2], p2;
          assert_true(kids[i] >= 1 && kids[i] <= n);
          mmp__two_tree_links(t, kids[i], n, &p2, k2);
          assert_int_equal(p2, v);
          seen[kids[i]]++;
        }
      }
      assert_int_equal(parent[0], -1);
      for (v = 1; v <= n; v++) {
        assert_int_equal(seen[v], 1);
        for (d = 0, i = v; i != 0 && d <= depth; d++)
          i = parent[i];
        if (i != 0 || d > depth)
          fail_msg("n %d tree %d: rank %d is %d hops deep (at most %d)", n, t,
                   v, d, depth);
      }
    }
    for (v = 1; v <= n; v++)
      if (inner[0][v] && inner[1][v])
        fail_msg("n %d: rank %d is inner in both trees", n, v);
  }
}

/* The segment the two-tree rows settle for p ranks and m bytes in
 * elements of `esize` under `nm`, without one asked for: their own
 * segment hook, which mmp__resolve runs for a SEGMENTED row named
 * without a segment. */
static size_t two_tree_seg(const mmp__alg_t *a, int p, size_t m, size_t esize,
                           const mmp_netmodel_t *nm) {
  assert_true(a->flags & MMP__ALG_SEGMENTED);
  assert_non_null(a->segment);
  return a->segment(p, m, esize, nm);
}

/* Both two-tree rows are pipelined where the caller gives no segment: a
 * whole half would be stored and forwarded at every level. */
static void test_two_tree_segment(void **state) {
  size_t b, a;
  (void)state;
  b = two_tree_seg(R(BCAST, two_tree), 16, 1 << 20, 1, &net);
  a = two_tree_seg(R(ALLREDUCE, two_tree), 16, 1 << 20, 4, &net);
  assert_true(b >= 4096 && b < (1 << 19));
  assert_true(a >= 4096 && a < (1 << 19));
  assert_int_equal(a % 4, 0);
}

/* AUTO's pick of MMP_COLL_<coll> for p ranks and m bytes under `nm`. */
static const mmp__alg_t *choose(int coll, int p, size_t m, int noncomm,
                                const mmp_netmodel_t *nm) {
  const mmp__family_t *f = mmp__family_of(coll);
  mmp__query_t q;
  mmp__desc_t d;

  memset(&q, 0, sizeof(q));
  q.p = p;
  q.len = m;
  q.esize = 1;
  q.noncomm = noncomm;
  q.nm = nm;
  memset(&d, 0, sizeof(d));
  f->pick(f, &q, &d);
  return d.alg;
}

/* The radix the k-nomial reduce's resolve settles for p ranks and m
 * bytes under `nm`, without one asked for. */
static int knomial_radix(int p, double m, const mmp_netmodel_t *nm) {
  mmp__env_t env;
  mmp__desc_t d;

  memset(&env, 0, sizeof(env));
  env.nm = nm;
  env.p = p;
  env.m = m;
  env.auto_pick = 1;
  memset(&d, 0, sizeof(d));
  d.alg = R(REDUCE, knomial);
  assert_int_equal(d.alg->resolve(&d, &env), 0);
  return d.radix;
}

/* AUTO under the emulated cluster's model: what docs/design/auto.md
 * says it picks. */
static void test_auto_choices(void **state) {
  (void)state;
  assert_ptr_equal(choose(MMP_COLL_ALLREDUCE, 16, 4, 0, &net),
                   R(ALLREDUCE, recursive_doubling));
  assert_ptr_equal(choose(MMP_COLL_ALLREDUCE, 16, 16 << 20, 0, &net),
                   R(ALLREDUCE, ring));
  /* Non-commutative: rank order only. */
  assert_ptr_equal(choose(MMP_COLL_ALLREDUCE, 16, 16 << 20, 1, &net),
                   R(ALLREDUCE, rabenseifner));
  assert_ptr_equal(choose(MMP_COLL_REDUCE, 16, 4, 0, &net),
                   R(REDUCE, binomial));
  assert_ptr_equal(choose(MMP_COLL_REDUCE, 16, 1 << 20, 0, &net),
                   R(REDUCE, pipeline));
  /* Where a message behind another costs a gap well below the latency,
   * the k-nomial reduce for short vectors, at its widest radix at p = 16
   * (one level: alpha + 14 g), also for non-commutative operations. */
  {
    mmp_netmodel_t gapped = net;
    gapped.gap = 10e-6;
    assert_ptr_equal(choose(MMP_COLL_REDUCE, 16, 4, 0, &gapped),
                     R(REDUCE, knomial));
    assert_ptr_equal(choose(MMP_COLL_REDUCE, 16, 4, 1, &gapped),
                     R(REDUCE, knomial));
    assert_int_equal(knomial_radix(16, 4, &gapped), 16);
    /* Without a measured gap the tree is the binomial one at best. */
    assert_int_equal(knomial_radix(16, 4, &net), 2);
    assert_ptr_equal(choose(MMP_COLL_REDUCE, 16, 1 << 20, 0, &gapped),
                     R(REDUCE, pipeline));
  }
  assert_ptr_equal(choose(MMP_COLL_REDUCE_SCATTER, 16, 1 << 20, 1, &net),
                   R(REDUCE_SCATTER, pairwise));
  assert_ptr_equal(choose(MMP_COLL_GATHER, 16, 64, 0, &net),
                   R(GATHER, binomial));
  assert_ptr_equal(choose(MMP_COLL_ALLTOALL, 16, 16, 0, &net),
                   R(ALLTOALL, bruck));
  assert_ptr_equal(choose(MMP_COLL_ALLTOALL, 16, 4096, 0, &net),
                   R(ALLTOALL, linear));
  assert_ptr_equal(choose(MMP_COLL_ALLTOALL, 16, 65536, 0, &net),
                   R(ALLTOALL, pairwise));
}

static int report(void **state) {
  (void)state;
  printf("%ld runs matched %ld messages\n", runs, messages_seen);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables),
      cmocka_unit_test(test_auto_choices),
      cmocka_unit_test(test_knomial_shape),
      cmocka_unit_test(test_two_tree_shape),
      cmocka_unit_test(test_two_tree_segment),
      cmocka_unit_test(test_every_algorithm_p1_to_24),
      cmocka_unit_test(test_every_algorithm_around_32_and_64),
      cmocka_unit_test(test_large_p),
  };
  return cmocka_run_group_tests(tests, NULL, report);
}
