/* SPDX-License-Identifier: MIT */
/*
 * Slurm's host lists and task counts (transport/hostlist.c) and a Slurm
 * allocation read into minimprun's host table (launcher/hosts.c): ranges
 * with zero padding, several bracket groups, the order Slurm gives,
 * "N(xR)" counts, and every malformed input rejected with a message that
 * quotes the bad text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/hosts.h"
#include "minimp.h"
#include "transport/hostlist.h"

/* The expansion joined with spaces, or the error. */
typedef struct joined_s {
  char out[4096];
  size_t len;
  int count;
} joined_t;

static int join_one(void *ctx, const char *name, size_t len) {
  joined_t *j = ctx;

  int n = snprintf(j->out + j->len, sizeof(j->out) - j->len, "%s%.*s",
                   j->count++ ? " " : "", (int)len, name);

  /* A list too long for the buffer keeps its start (and its count). */
  if (n > 0 && j->len + (size_t)n < sizeof(j->out))
    j->len += (size_t)n;
  return 0;
}

static const char *expand(const char *spec, joined_t *j) {
  memset(j, 0, sizeof(*j));
  assert_int_equal(
      mmp__hostlist_expand(spec, join_one, j, j->out, sizeof(j->out)), 0);
  return j->out;
}

/* The error message of a spec that must be rejected. */
static const char *expand_err(const char *spec, joined_t *j) {
  char err[512] = "";

  memset(j, 0, sizeof(*j));
  assert_int_equal(mmp__hostlist_expand(spec, join_one, j, err, sizeof(err)),
                   MMP_EINVAL);
  snprintf(j->out, sizeof(j->out), "%s", err);
  return j->out;
}

static void test_hostlist_expands_ranges_and_padding(void **state) {
  joined_t j;
  (void)state;

  assert_string_equal(expand("node[01-04,07],gpu5", &j),
                      "node01 node02 node03 node04 node07 gpu5");
  assert_string_equal(expand("n[8-11]", &j), "n8 n9 n10 n11");
  assert_string_equal(expand("n[08-10]", &j), "n08 n09 n10");
  assert_string_equal(expand("n[098-101]x", &j), "n098x n099x n100x n101x");
  assert_string_equal(expand("single", &j), "single");
  assert_string_equal(expand("a,b,c", &j), "a b c");
  assert_string_equal(expand("h[3]", &j), "h3");
}

static void test_hostlist_several_bracket_groups(void **state) {
  joined_t j;
  (void)state;

  /* The first group varies slowest, as Slurm lists them. */
  assert_string_equal(expand("rack[1-2]-n[01-02]", &j),
                      "rack1-n01 rack1-n02 rack2-n01 rack2-n02");
  assert_string_equal(expand("a[1,3]b[7]c,d[0-1]", &j), "a1b7c a3b7c d0 d1");
}

static void test_hostlist_malformed_is_named(void **state) {
  joined_t j;
  (void)state;

  assert_string_equal(expand_err("", &j), "empty host list");
  assert_string_equal(expand_err("n[1-3", &j),
                      "unbalanced '[' at '[1-3' in host list 'n[1-3'");
  assert_string_equal(expand_err("n1-3]", &j),
                      "unbalanced ']' at 'n1-3]' in host list 'n1-3]'");
  assert_string_equal(
      expand_err("n[4-1]", &j),
      "bad range (end before start) at '4-1' in host list 'n[4-1]'");
  assert_string_equal(expand_err("n[a-3]", &j),
                      "bad range at 'a-3' in host list 'n[a-3]'");
  assert_string_equal(expand_err("n[1-]", &j),
                      "bad range at '1-' in host list 'n[1-]'");
  assert_string_equal(expand_err("n[]", &j),
                      "bad range at '' in host list 'n[]'");
  assert_string_equal(expand_err("n[1,,2]", &j),
                      "bad range at '' in host list 'n[1,,2]'");
  assert_string_equal(expand_err("n[[1]]", &j),
                      "nested '[' at '[[1]' in host list 'n[[1]]'");
  assert_string_equal(expand_err("a,,b", &j),
                      "empty entry at '' in host list 'a,,b'");
  assert_string_equal(expand_err("a,", &j),
                      "empty entry at '' in host list 'a,'");
  assert_string_equal(expand_err("n[1-1234567890]", &j),
                      "bad range at '1-1234567890' in host list "
                      "'n[1-1234567890]'");
  assert_string_equal(expand_err("n[0-99999]", &j),
                      "host list 'n[0-99999]' has more than 65536 hosts");
  /* The expansion streams: hosts before the fault were passed on (which
   * is why mmp__hosts_parse_slurm counts in a first pass). */
  expand_err("ok,n[2-1]", &j);
  assert_int_equal(j.count, 1);
}

static void test_hostlist_long_name_is_rejected(void **state) {
  char spec[600], err[1024] = "";
  joined_t j;
  (void)state;

  memset(spec, 'a', 300);
  strcpy(spec + 300, "[1-2]");
  memset(&j, 0, sizeof(j));
  assert_int_equal(mmp__hostlist_expand(spec, join_one, &j, err, sizeof(err)),
                   MMP_EINVAL);
  assert_non_null(strstr(err, "host name too long"));
}

static void test_tasks_per_node(void **state) {
  int c[6];
  char err[256];
  (void)state;

  assert_int_equal(mmp__hostlist_tasks("2(x3),1", c, 4, err, sizeof(err)), 0);
  assert_int_equal(c[0], 2);
  assert_int_equal(c[2], 2);
  assert_int_equal(c[3], 1);
  assert_int_equal(mmp__hostlist_tasks("16", c, 1, err, sizeof(err)), 0);
  assert_int_equal(c[0], 16);
  assert_int_equal(mmp__hostlist_tasks("1,4(x2),3(x1)", c, 4, err, sizeof(err)),
                   0);
  assert_int_equal(c[1], 4);
  assert_int_equal(c[3], 3);
}

static void test_tasks_per_node_malformed(void **state) {
  static const char *const bad[][2] = {
      {"", "bad task count '' in '' (N or N(xR))"},
      {"2(3)", "bad task count '2(3)' in '2(3)' (N or N(xR))"},
      {"2(x3", "bad task count '2(x3' in '2(x3' (N or N(xR))"},
      {"2(x)", "bad task count '2(x)' in '2(x)' (N or N(xR))"},
      {"0,1", "bad task count '0' in '0,1' (N or N(xR))"},
      {"x", "bad task count 'x' in 'x' (N or N(xR))"},
      {"1,", "bad task count '' in '1,' (N or N(xR))"},
      {"-1", "bad task count '-1' in '-1' (N or N(xR))"},
      {"2(x0)", "bad task count '2(x0)' in '2(x0)' (N or N(xR))"},
  };
  int c[4];
  char err[256];
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    assert_int_equal(mmp__hostlist_tasks(bad[i][0], c, 2, err, sizeof(err)),
                     MMP_EINVAL);
    assert_string_equal(err, bad[i][1]);
  }
  /* Too few and too many nodes. */
  assert_int_equal(mmp__hostlist_tasks("2(x3)", c, 4, err, sizeof(err)),
                   MMP_EINVAL);
  assert_string_equal(err, "task counts '2(x3)' do not match the 4 node(s) "
                           "of the host list");
  assert_int_equal(mmp__hostlist_tasks("1,2(x3)", c, 2, err, sizeof(err)),
                   MMP_EINVAL);
  assert_string_equal(err, "task counts '1,2(x3)' do not match the 2 "
                           "node(s) of the host list");
}

static void test_slurm_allocation_fills_hosts(void **state) {
  mmp__hostlist_t hl;
  char err[512];
  (void)state;

  mmp__hosts_init(&hl);
  assert_int_equal(mmp__hosts_parse_slurm(&hl, "node[01-03],gpu5", "4(x3),2",
                                          err, sizeof(err)),
                   0);
  assert_int_equal(hl.n, 4);
  assert_string_equal(hl.hosts[0].name, "node01");
  assert_int_equal(hl.hosts[0].slots, 4);
  assert_string_equal(hl.hosts[2].name, "node03");
  assert_string_equal(hl.hosts[3].name, "gpu5");
  assert_int_equal(hl.hosts[3].slots, 2);
  assert_int_equal(mmp__hosts_slots(&hl), 14);
  mmp__hosts_fini(&hl);

  /* Each variable is named with its fault. */
  assert_int_equal(
      mmp__hosts_parse_slurm(&hl, "node[01-03", "1", err, sizeof(err)),
      MMP_EINVAL);
  assert_string_equal(err, "SLURM_JOB_NODELIST: unbalanced '[' at '[01-03' "
                           "in host list 'node[01-03'");
  assert_int_equal(hl.n, 0);
  assert_int_equal(
      mmp__hosts_parse_slurm(&hl, "n[1-2]", "1(x3)", err, sizeof(err)),
      MMP_EINVAL);
  assert_string_equal(err, "SLURM_TASKS_PER_NODE: task counts '1(x3)' do not "
                           "match the 2 node(s) of the host list");
  assert_int_equal(hl.n, 0);
  assert_int_equal(
      mmp__hosts_parse_slurm(&hl, "ok,-oProxy", "1(x2)", err, sizeof(err)),
      MMP_EINVAL);
  assert_string_equal(err, "SLURM_JOB_NODELIST: bad host name '-oProxy'");
  mmp__hosts_fini(&hl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hostlist_expands_ranges_and_padding),
      cmocka_unit_test(test_hostlist_several_bracket_groups),
      cmocka_unit_test(test_hostlist_malformed_is_named),
      cmocka_unit_test(test_hostlist_long_name_is_rejected),
      cmocka_unit_test(test_tasks_per_node),
      cmocka_unit_test(test_tasks_per_node_malformed),
      cmocka_unit_test(test_slurm_allocation_fills_hosts),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
