/* SPDX-License-Identifier: MIT */
/*
 * Broadcast and communicators across ranks, run through minimprun for
 * p in {1, 2, 3, 5, 8, 13, 16}: every algorithm over several roots and the
 * sizes {0, 1, p-1, p, p+1, 64 KiB+3, 4 MiB}, byte for byte, in segmented,
 * hierarchical, eager and rendezvous variants; non-blocking broadcasts in
 * flight together; inconsistent sizes and roots that end in errors rather
 * than hangs; collective traffic that never matches user receives; and
 * dup, split and create.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "mr_common.h"
#include "runtime/internal.h" /* mmp__debug_config_reload */

static uint64_t seed_of(const char *alg, int root, size_t n, int variant) {
  return mr_hash(alg) * 1000003u + (uint64_t)root * 7919u + n * 31u +
         (uint64_t)variant;
}

/* Broadcasts n bytes with `o` from root; checks every byte on every rank. */
static void check_bcast(mmp_comm_t *c, const mmp_bcast_opts_t *o, int root,
                        size_t n, int variant) {
  uint8_t *buf = malloc(n + 1), *want = malloc(n + 1);
  uint64_t seed = seed_of(o->algorithm, root, n, variant);
  int rc;

  assert_non_null(buf);
  assert_non_null(want);
  mr_fill(want, n, seed);
  if (mmp_comm_rank(c) == root)
    memcpy(buf, want, n);
  else
    memset(buf, 0xa5, n);
  rc = mmp_bcast_ex(buf, n, root, c, o);
  /* Multicast datagrams are authenticated, not sealed: a sealed job
   * refuses the algorithm on every rank (docs/design/transport.md). */
  if (o->algorithm != NULL && strcmp(o->algorithm, "multicast") == 0 &&
      getenv("MINIMP_ENCRYPT") != NULL &&
      strcmp(getenv("MINIMP_ENCRYPT"), "1") == 0 && rc == MMP_ENOTSUP) {
    free(buf);
    free(want);
    return;
  }
  /* The node segment is shared memory: refused where it is off. */
  if (o->algorithm != NULL && strcmp(o->algorithm, "shm") == 0 &&
      mr_shm_off() && rc == MMP_ENOTSUP) {
    free(buf);
    free(want);
    return;
  }
  if (rc != 0 || memcmp(buf, want, n) != 0) {
    size_t i = 0;
    while (i < n && buf[i] == want[i])
      i++;
    fail_msg("%s root %d n %zu seg %zu mode %u G %d radix %d: rc %s, first "
             "bad byte %zu",
             o->algorithm ? o->algorithm : "auto", root, n, o->segment, o->mode,
             o->groups, o->radix, mmp_err_name(rc), i);
  }
  free(buf);
  free(want);
}

static void sizes_of(int p, size_t *out, int *count) {
  size_t s[] = {0,
                1,
                (size_t)p - 1 > 0 ? (size_t)p - 1 : 2,
                (size_t)p,
                (size_t)p + 1,
                65536 + 3,
                4u << 20};
  memcpy(out, s, sizeof(s));
  *count = (int)(sizeof(s) / sizeof(s[0]));
}

static void roots_of(int p, int *out, int *count) {
  int n = 0;
  out[n++] = 0;
  if (p > 2)
    out[n++] = p / 2;
  if (p > 1)
    out[n++] = p - 1;
  *count = n;
}

static void test_bcast_every_algorithm(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), roots[3], nroots, nsizes, i, r, k;
  const char *alg;
  size_t sizes[7];
  (void)state;

  sizes_of(p, sizes, &nsizes);
  roots_of(p, roots, &nroots);
  for (i = 0; (alg = mr_alg(MMP_COLL_BCAST, i, NULL)) != NULL; i++)
    for (r = 0; r < nroots; r++)
      for (k = 0; k < nsizes; k++) {
        mmp_bcast_opts_t o = {.algorithm = alg};
        check_bcast(w, &o, roots[r], sizes[k], 0);
      }
}

/* Every radix, including 2 (the binomial tree's shape) and radices above
 * p (a flat tree); the default radix runs in the every-algorithm test. */
static void test_bcast_knomial_radices(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), roots[3], nroots, r, k;
  (void)state;

  roots_of(p, roots, &nroots);
  for (k = 2; k <= 16; k++)
    for (r = 0; r < nroots; r++) {
      mmp_bcast_opts_t o = {.algorithm = "knomial", .radix = k};
      check_bcast(w, &o, roots[r], (size_t)p + 1, 0);
      o.segment = 4096; /* pipelined down the tree */
      check_bcast(w, &o, roots[r], 65536 + 3, 0);
    }
}

static void test_bcast_automatic_choice(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), nsizes, k;
  size_t sizes[7];
  (void)state;

  sizes_of(p, sizes, &nsizes);
  for (k = 0; k < nsizes; k++) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT; /* AUTO */
    check_bcast(w, &o, p - 1, sizes[k], 1);
  }
}

static void test_bcast_segmented_and_hierarchical(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), root = p > 1 ? 1 : 0;
  static const size_t segs[] = {4096, 65536};
  static const char *const inner[] = {"pipeline", "binomial", "flat",
                                      "scatter_ring"};
  size_t n = (1u << 20) + 17;
  unsigned i, j;
  (void)state;

  /* Segmented pipelines and trees. */
  for (i = 0; i < 2; i++) {
    mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
    o.segment = segs[i];
    o.algorithm = "pipeline";
    check_bcast(w, &o, root, n, 2);
    o.algorithm = "binomial";
    check_bcast(w, &o, root, n, 3);
    o.algorithm = "binary";
    check_bcast(w, &o, root, n, 4);
    o.algorithm = "split_binary";
    check_bcast(w, &o, root, n, 5);
  }
  /* Hierarchical: several G, any algorithm inside and between groups. */
  for (i = 0; i < 4; i++)
    for (j = 0; j < 4; j++) {
      mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
      o.algorithm = "hierarchical";
      o.inner = inner[i];
      o.outer = inner[j];
      o.groups = p >= 3 ? 1 + (int)((i + j) % (unsigned)p) : 1;
      o.segment = j % 2 ? 16384 : 0;
      check_bcast(w, &o, p - 1, 100003, 6);
    }
}

/* Every algorithm the hierarchical broadcast takes inside and between
 * groups (every pair of parts), and every sub-group broadcast of the
 * arrival-aware ones; the algorithms that are not parts are refused. */
static void test_bcast_every_composition(void **state) {
  static const char *const arrival[] = {"arrival_b", "arrival_nb"};
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), i, j, k;
  const char *in, *out;
  unsigned fin, fout;
  char c = 0;
  (void)state;

  for (i = 0; (in = mr_alg(MMP_COLL_BCAST, i, &fin)) != NULL; i++)
    for (j = 0; (out = mr_alg(MMP_COLL_BCAST, j, &fout)) != NULL; j++) {
      mmp_bcast_opts_t o = {.algorithm = "hierarchical",
                            .inner = in,
                            .outer = out,
                            .groups = 1 + (i + j) % p};
      if ((fin & fout & MMP_ALG_PART) != 0)
        check_bcast(w, &o, (i * 3 + j) % p, 20011, 9);
      else
        assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
    }
  for (k = 0; k < 2; k++)
    for (i = 0; (in = mr_alg(MMP_COLL_BCAST, i, &fin)) != NULL; i++) {
      mmp_bcast_opts_t o = {.algorithm = arrival[k], .inner = in};
      if (fin & MMP_ALG_PART)
        check_bcast(w, &o, i % p, 30011, 10);
      else
        assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
    }
}

static void test_bcast_modes(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), i;
  static const unsigned modes[] = {MMP_SEND_EAGER, MMP_SEND_RNDV};
  const char *alg;
  unsigned m;
  (void)state;

  for (m = 0; m < 2; m++)
    for (i = 0; (alg = mr_alg(MMP_COLL_BCAST, i, NULL)) != NULL; i++) {
      mmp_bcast_opts_t o = {.algorithm = alg, .mode = modes[m]};
      check_bcast(w, &o, p > 2 ? 2 : 0, 300000, 7);
      check_bcast(w, &o, 0, 10, 8);
    }
}

static void test_ibcast_several_in_flight(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), i;
  enum { K = 4 };
  mmp_request_t *q[K];
  uint8_t *b[K], *want = malloc(200000);
  mmp_bcast_opts_t o[K] = {MMP_BCAST_OPTS_INIT, MMP_BCAST_OPTS_INIT,
                           MMP_BCAST_OPTS_INIT, MMP_BCAST_OPTS_INIT};
  (void)state;

  /* Different roots and algorithms at once: sequence numbers keep them
   * apart. */
  o[0].algorithm = "pipeline";
  o[0].segment = 8192;
  o[1].algorithm = "binomial";
  o[2].algorithm = "scatter_ring";
  o[3].algorithm = "hierarchical";
  for (i = 0; i < K; i++) {
    int root = (i * 3) % p;
    b[i] = malloc(200000);
    mr_fill(want, 200000, 500 + (uint64_t)i);
    if (me == root)
      memcpy(b[i], want, 200000);
    else
      memset(b[i], 0, 200000);
    assert_int_equal(mmp_ibcast(b[i], 200000, root, w, &o[i], &q[i]), 0);
  }
  /* Poll one, wait for the rest. */
  {
    int flag = 0;
    while (!flag)
      assert_int_equal(mmp_test(&q[1], &flag, NULL), 0);
  }
  assert_int_equal(mmp_waitall(K, q, NULL), 0);
  for (i = 0; i < K; i++) {
    mr_fill(want, 200000, 500 + (uint64_t)i);
    assert_memory_equal(b[i], want, 200000);
    free(b[i]);
  }
  free(want);
}

/* After a broadcast in which rank `who` disagreed: it got MMP_EMISMATCH,
 * the root (0) succeeded, and the next collective works for everyone. */
static void assert_mismatch_only_at(int rc, int who) {
  if (mr_rank() == who)
    assert_int_equal(rc, MMP_EMISMATCH);
  if (mr_rank() == 0)
    assert_int_equal(rc, 0);
  assert_int_equal(mmp_barrier(mmp_comm_world()), 0);
}

static void test_bcast_inconsistent_size_is_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), rc, k;
  /* 200,007 bytes cut into as many 16 KiB segments as 200,000; 32,775
   * into one more than 32,768, which the disagreeing rank must still
   * receive and pass on as the root cut them. */
  static const size_t sizes[] = {200000, 32768};
  uint8_t *buf;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  (void)state;

  if (p < 2)
    skip();
  buf = calloc(200000 + 10, 1);
  for (k = 0; k < 2; k++) {
    size_t n = sizes[k];
    /* The last rank thinks the message is longer: it and whatever hangs
     * below it fail, nobody waits forever. */
    o.algorithm = "pipeline";
    o.segment = 16384;
    rc = mmp_bcast_ex(buf, me == p - 1 ? n + 7 : n, 0, w, &o);
    assert_mismatch_only_at(rc, p - 1);
    check_bcast(w, &o, 0, 5000, 9);
  }
  free(buf);
}

/* The algorithm a non-blocking AUTO broadcast of `n` bytes from rank 0
 * on `w` ran, checked. */
static const char *auto_ibcast_ran(mmp_comm_t *w, size_t n) {
  uint8_t *buf = malloc(n);
  mmp_request_t *r = NULL;
  const char *alg = NULL;
  size_t i;

  assert_non_null(buf);
  for (i = 0; i < n; i++)
    buf[i] = mr_rank() == 0 ? (uint8_t)(i * 7 + 1) : 0;
  assert_int_equal(mmp_ibcast(buf, n, 0, w, NULL, &r), 0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  for (i = 0; i < n; i++)
    assert_int_equal(buf[i], (uint8_t)(i * 7 + 1));
  free(buf);
  assert_int_equal(mmp_bcast_last(w, &alg), 0);
  return alg;
}

/* AUTO's symmetric pick, on a saved profile of the emulated cluster (a
 * 64 KiB burst allowance) where it prices below the pipeline, keeps its
 * shape whatever MINIMP_BCAST_SYM_MIN says: that threshold is for asked-for
 * symmetric broadcasts and would turn this one into the flat tree. */
static void test_auto_symmetric_pick_ignores_its_threshold(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  const char *ran, *again;
  int p = mr_size();
  (void)state;

  if (p < 3)
    skip();
  setenv("MINIMP_NET_ALPHA_US", "80", 1);
  setenv("MINIMP_NET_BETA_NS", "84", 1);
  setenv("MINIMP_NET_BURST_BYTES", "65536", 1);
  setenv("MINIMP_NET_SHARED_CPUS", "1", 1);
  assert_int_equal(mmp__debug_config_reload(), 0); /* read at init only */
  /* (2q - 1) alpha against (X + p - 2) alpha, X = 15: clearly below up
   * to p = 13. What a non-blocking broadcast runs: on one host a blocking
   * one (and mmp_bcast_select, which tells what that runs) takes the shm
   * row; below 64 KiB AUTO's static choice runs as chosen. */
  ran = auto_ibcast_ran(w, 60000);
  if (p <= 13)
    assert_string_equal(ran, "symmetric");
  setenv("MINIMP_BCAST_SYM_MIN", "128k", 1);
  assert_int_equal(mmp__debug_config_reload(), 0);
  again = auto_ibcast_ran(w, 60000);
  assert_string_equal(again, ran);
  check_bcast(w, &o, 1 % p, 60000, 3);
  unsetenv("MINIMP_BCAST_SYM_MIN");
  unsetenv("MINIMP_NET_ALPHA_US");
  unsetenv("MINIMP_NET_BETA_NS");
  unsetenv("MINIMP_NET_BURST_BYTES");
  unsetenv("MINIMP_NET_SHARED_CPUS");
  assert_int_equal(mmp__debug_config_reload(), 0);
}

/* mmp_bcast_last names what the latest broadcast ran, on every rank:
 * the algorithm asked for, and for AUTO an algorithm, never AUTO. */
static void test_bcast_last_names_what_ran(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *c;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  const char *alg = NULL;
  char b[64] = {0};
  (void)state;

  if (mr_size() < 2)
    skip(); /* one rank sends nothing: no algorithm runs */
  assert_int_equal(mmp_comm_dup(w, &c), 0);
  assert_int_equal(mmp_bcast_last(c, &alg), MMP_EINVAL); /* none yet */
  assert_int_equal(mmp_bcast_last(c, NULL), MMP_EINVAL);
  assert_int_equal(mmp_bcast_last(NULL, &alg), MMP_ECOMM);
  o.algorithm = "binary";
  assert_int_equal(mmp_bcast_ex(b, sizeof(b), 0, c, &o), 0);
  assert_int_equal(mmp_bcast_last(c, &alg), 0);
  assert_string_equal(alg, "binary");
  o.algorithm = "flat";
  assert_int_equal(mmp_bcast_ex(b, sizeof(b), mr_size() - 1, c, &o), 0);
  assert_int_equal(mmp_bcast_last(c, &alg), 0);
  assert_string_equal(alg, "flat");
  assert_int_equal(mmp_bcast(b, sizeof(b), 0, c), 0);
  assert_int_equal(mmp_bcast_last(c, &alg), 0);
  {
    int i, found = 0;
    const char *name;
    for (i = 0; (name = mr_alg(MMP_COLL_BCAST, i, NULL)) != NULL; i++)
      found += strcmp(name, alg) == 0;
    assert_int_equal(found, 1); /* an algorithm of the list, never AUTO */
  }
  assert_int_equal(mmp_comm_free(&c), 0);
}

/* Sets MINIMP_<name> to `value` (NULL: unsets it) and has the library
 * read the collectives' variables again; returns what that gave. */
static int env_reload(const char *name, const char *value) {
  if (value != NULL)
    setenv(name, value, 1);
  else
    unsetenv(name);
  return mmp__debug_config_reload();
}

/* MINIMP_BCAST_ALG and MINIMP_ALLREDUCE_ALG replace AUTO, with their
 * options, for calls that leave the choice to AUTO, and only for them;
 * a name or option the library does not have is refused as it reads
 * them. */
static void test_algorithm_from_the_environment(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t sel, o = MMP_BCAST_OPTS_INIT;
  mmp_coll_opts_t co;
  const char *ran = NULL;
  char b[100] = {0};
  (void)state;

  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "knomial,radix=5"), 0);
  assert_int_equal(mmp_bcast_select(w, sizeof(b), &sel), 0);
  assert_string_equal(sel.algorithm, "knomial");
  assert_int_equal(sel.radix, 5);
  /* Above AUTO's adaptive size too: the named algorithm runs as named. */
  assert_int_equal(mmp_bcast_select(w, 1u << 20, &sel), 0);
  assert_string_equal(sel.algorithm, "knomial");
  check_bcast(w, &o, 0, sizeof(b), 13);
  if (mr_size() > 1) {
    assert_int_equal(mmp_bcast_last(w, &ran), 0);
    assert_string_equal(ran, "knomial");
  }
  o.algorithm = "flat"; /* asked for by name: the variable does not apply */
  check_bcast(w, &o, 0, sizeof(b), 14);
  if (mr_size() > 1) {
    assert_int_equal(mmp_bcast_last(w, &ran), 0);
    assert_string_equal(ran, "flat");
  }
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "hierarchical,groups=2,"
                                                  "inner=binary,outer=flat"),
                   0);
  assert_int_equal(mmp_bcast_select(w, sizeof(b), &sel), 0);
  assert_string_equal(sel.algorithm, "hierarchical");
  assert_string_equal(sel.inner, "binary");
  assert_string_equal(sel.outer, "flat");
  assert_int_equal(sel.groups, mr_size() >= 2 ? 2 : 1);
  assert_int_equal(env_reload("MINIMP_ALLREDUCE_ALG", "ring"), 0);
  assert_int_equal(
      mmp_coll_select(w, MMP_COLL_ALLREDUCE, 1000, MMP_FLOAT, MMP_SUM, &co), 0);
  assert_string_equal(co.algorithm, "ring");
  /* Refused, and the variables read before stay. */
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "nope"), MMP_EENV);
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "flat,radix=3"), MMP_EENV);
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "knomial,radix=1"), MMP_EENV);
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "hierarchical,inner=knomial"),
                   MMP_EENV);
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "knomial,radix=4,radix=4"),
                   MMP_EENV);
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "knomial,colour=4"),
                   MMP_EENV);
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "binary"), 0);
  assert_int_equal(env_reload("MINIMP_BCST_ALG", "binary"), MMP_EENV);
  assert_int_equal(env_reload("MINIMP_BCST_ALG", NULL), 0);
  assert_int_equal(mmp_bcast_select(w, sizeof(b), &sel), 0);
  assert_string_equal(sel.algorithm, "binary");
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", "auto"), 0);
  assert_int_equal(env_reload("MINIMP_ALLREDUCE_ALG", NULL), 0);
  assert_int_equal(env_reload("MINIMP_BCAST_ALG", NULL), 0);
}

static void test_bcast_inconsistent_root_is_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), rc;
  uint8_t buf[4096];
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  (void)state;

  if (p < 3)
    skip();
  memset(buf, 1, sizeof(buf));
  o.algorithm = "binomial";
  /* Rank 1 thinks rank 2 is the root; it learns otherwise from the header
   * of the message it gets. */
  rc = mmp_bcast_ex(buf, sizeof(buf), me == 1 ? 2 : 0, w, &o);
  assert_mismatch_only_at(rc, 1);
}

static void test_bcast_inconsistent_radix_is_an_error(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), rc;
  uint8_t buf[3000];
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  (void)state;

  if (p < 2)
    skip();
  memset(buf, me == 0 ? 5 : 0, sizeof(buf));
  o.algorithm = "knomial";
  /* The last rank asks for another tree: the header from its parent says
   * otherwise. It learns the mismatch and still ends; nobody hangs. */
  o.radix = me == p - 1 ? 4 : 3;
  rc = mmp_bcast_ex(buf, sizeof(buf), 0, w, &o);
  assert_mismatch_only_at(rc, p - 1);
}

static void test_user_messages_never_match_collectives(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  int p = mr_size(), me = mr_rank(), flag = 1, got = -1;
  mmp_request_t *r;
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  (void)state;

  /* A wildcard receive waits through several collectives untouched. */
  assert_int_equal(
      mmp_irecv(&got, sizeof(got), MMP_ANY_SOURCE, MMP_ANY_TAG, w, &r), 0);
  for (int i = 0; (o.algorithm = mr_alg(MMP_COLL_BCAST, i, NULL)) != NULL;
       i++) {
    check_bcast(w, &o, 0, 1000, 10);
  }
  {
    /* Nobody can have sent the user message yet: that happens after the
     * barrier, which this rank has not entered. */
    mmp_status_t st;
    assert_int_equal(mmp_test(&r, &flag, &st), 0);
    if (flag)
      fail_msg("the wildcard receive matched: source %d tag %d bytes %zu "
               "error %s",
               st.source, st.tag, st.bytes, mmp_err_name(st.error));
  }
  assert_int_equal(mmp_barrier(w), 0);
  /* The user message it was meant for. */
  assert_int_equal(mmp_send(&me, sizeof(me), (me + 1) % p, 77, w), 0);
  assert_int_equal(mmp_wait(&r, NULL), 0);
  assert_int_equal(got, (me + p - 1) % p);
}

static void test_communicators(void **state) {
  mmp_comm_t *w = mmp_comm_world(), *half = NULL, *dup = NULL, *rev = NULL;
  int p = mr_size(), me = mr_rank(), i;
  int *ranks = malloc((size_t)(p > 2 ? p : 2) * sizeof(int));
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  (void)state;

  /* Split by parity, ordered by descending rank. */
  assert_int_equal(mmp_comm_split(w, me % 2, -me, &half), 0);
  assert_non_null(half);
  assert_int_equal(mmp_comm_size(half), (p + 1 - me % 2) / 2);
  assert_int_equal(mmp_comm_rank(half), mmp_comm_size(half) - 1 - me / 2);
  /* Its ranks' world ranks: descending, of this rank's parity. */
  for (i = 0; i < mmp_comm_size(half); i++)
    assert_int_equal(mmp_comm_world_rank(half, i),
                     me % 2 + 2 * (mmp_comm_size(half) - 1 - i));
  assert_int_equal(mmp_comm_world_rank(half, mmp_comm_size(half)), MMP_ERANK);
  assert_int_equal(mmp_comm_world_rank(half, -1), MMP_ERANK);
  assert_int_equal(mmp_comm_world_rank(NULL, 0), MMP_ECOMM);
  assert_int_equal(mmp_comm_world_rank(w, me), me);
  check_bcast(half, &o, 0, 70000, 11);
  /* A duplicate keeps its messages apart from the original's. */
  assert_int_equal(mmp_comm_dup(w, &dup), 0);
  assert_int_equal(mmp_comm_rank(dup), me);
  if (p > 1) {
    int a = -1, b = -1;
    mmp_request_t *ra, *rb;
    assert_int_equal(mmp_irecv(&a, 4, MMP_ANY_SOURCE, 5, w, &ra), 0);
    assert_int_equal(mmp_irecv(&b, 4, MMP_ANY_SOURCE, 5, dup, &rb), 0);
    i = 1000 + me;
    assert_int_equal(mmp_send(&i, 4, (me + 1) % p, 5, dup), 0);
    i = 2000 + me;
    assert_int_equal(mmp_send(&i, 4, (me + 1) % p, 5, w), 0);
    assert_int_equal(mmp_wait(&ra, NULL), 0);
    assert_int_equal(mmp_wait(&rb, NULL), 0);
    assert_int_equal(a, 2000 + (me + p - 1) % p);
    assert_int_equal(b, 1000 + (me + p - 1) % p);
  }
  /* From an explicit list: every other rank, in reverse order. */
  {
    int n = 0;
    for (i = p - 1; i >= 0; i -= 2)
      ranks[n++] = i;
    assert_int_equal(mmp_comm_create(w, n, ranks, &rev), 0);
    if ((p - 1 - me) % 2 == 0) {
      assert_non_null(rev);
      assert_int_equal(mmp_comm_rank(rev), (p - 1 - me) / 2);
      check_bcast(rev, &o, n - 1, 3000, 12);
      assert_int_equal(mmp_comm_free(&rev), 0);
      assert_null(rev);
    } else {
      assert_null(rev);
    }
    ranks[0] = 0;
    ranks[1] = 0;
    assert_int_equal(mmp_comm_create(w, 2, ranks, &rev), MMP_EINVAL);
  }
  /* MMP_UNDEFINED joins nothing. */
  {
    mmp_comm_t *none = (mmp_comm_t *)w;
    assert_int_equal(mmp_comm_split(w, me == 0 ? MMP_UNDEFINED : 1, 0, &none),
                     0);
    if (me == 0)
      assert_null(none);
    else
      assert_int_equal(mmp_comm_free(&none), 0);
  }
  assert_int_equal(mmp_comm_free(&w), MMP_ECOMM);
  assert_int_equal(mmp_comm_free(&half), 0);
  assert_int_equal(mmp_comm_free(&dup), 0);
  free(ranks);
}

static void test_bcast_bad_arguments(void **state) {
  mmp_comm_t *w = mmp_comm_world();
  mmp_bcast_opts_t o = MMP_BCAST_OPTS_INIT;
  mmp_request_t *r = (mmp_request_t *)w;
  char c;
  (void)state;

  assert_int_equal(mmp_bcast(&c, 1, -1, w), MMP_ERANK);
  assert_int_equal(mmp_bcast(&c, 1, mr_size(), w), MMP_ERANK);
  assert_int_equal(mmp_bcast(NULL, 1, 0, w), MMP_EINVAL);
  assert_int_equal(mmp_bcast(&c, 1, 0, NULL), MMP_ECOMM);
  o.algorithm = "nope";
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
  o.algorithm = "hierarchical";
  o.inner = "hierarchical";
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
  o.inner = "binomal"; /* misspelt */
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
  o.inner = NULL;
  o.mode = 9;
  assert_int_equal(mmp_ibcast(&c, 1, 0, w, &o, &r), MMP_EINVAL);
  assert_null(r);
  o.mode = 0;
  o.algorithm = "knomial";
  o.radix = 1; /* a tree of radix 1 is a chain; asked for, it is an error */
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
  o.radix = 17;
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
  o.radix = -2;
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
  o.radix = 0;
  o.algorithm = "hierarchical";
  o.outer = "knomial"; /* has no radix of its own there */
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), MMP_EINVAL);
  o.outer = NULL;
  /* "auto" is AUTO, as NULL is. */
  o.algorithm = "auto";
  assert_int_equal(mmp_bcast_ex(&c, 1, 0, w, &o), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bcast_bad_arguments),
      cmocka_unit_test(test_bcast_every_algorithm),
      cmocka_unit_test(test_bcast_knomial_radices),
      cmocka_unit_test(test_bcast_automatic_choice),
      cmocka_unit_test(test_bcast_segmented_and_hierarchical),
      cmocka_unit_test(test_bcast_every_composition),
      cmocka_unit_test(test_bcast_modes),
      cmocka_unit_test(test_ibcast_several_in_flight),
      cmocka_unit_test(test_bcast_inconsistent_size_is_an_error),
      cmocka_unit_test(test_bcast_inconsistent_root_is_an_error),
      cmocka_unit_test(test_bcast_last_names_what_ran),
      cmocka_unit_test(test_algorithm_from_the_environment),
      cmocka_unit_test(test_bcast_inconsistent_radix_is_an_error),
      cmocka_unit_test(test_auto_symmetric_pick_ignores_its_threshold),
      cmocka_unit_test(test_user_messages_never_match_collectives),
      cmocka_unit_test(test_communicators),
  };
  return cmocka_run_group_tests(tests, mr_setup, mr_teardown);
}
