/* SPDX-License-Identifier: MIT */
/*
 * minimprun's host lists and rank placement (launcher/hosts.c): --host
 * values, hostfiles with their exact error messages and line numbers,
 * slots that accumulate when a host is listed twice, --map-by slot and
 * node, local ranks per host, oversubscription, and which names mean this
 * machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/hosts.h"
#include "minimp.h"

static int setup(void **state) {
  mmp__hostlist_t *hl = malloc(sizeof(*hl));

  if (hl == NULL)
    return -1;
  mmp__hosts_init(hl);
  *state = hl;
  return 0;
}

static int teardown(void **state) {
  mmp__hostlist_t *hl = *state;

  mmp__hosts_fini(hl);
  assert_null(hl->hosts);
  assert_int_equal(hl->n, 0);
  free(hl);
  return 0;
}

static void assert_host(const mmp__hostlist_t *hl, int i, const char *name,
                        int slots) {
  assert_true(i < hl->n);
  assert_string_equal(hl->hosts[i].name, name);
  assert_int_equal(hl->hosts[i].slots, slots);
}

/* Parses hostfile text named "hosts.txt"; returns the code, err set. */
static int parse_text(mmp__hostlist_t *hl, const char *text, char *err,
                      size_t errlen) {
  err[0] = '\0';
  return mmp__hosts_parse_text(hl, "hosts.txt", text, strlen(text), err,
                               errlen);
}

static void test_hosts_list_parses_slots(void **state) {
  mmp__hostlist_t *hl = *state;
  char err[256];

  assert_int_equal(
      mmp__hosts_parse_list(hl, "h1:2,h2,ann@h3:16", err, sizeof(err)), 0);
  assert_int_equal(hl->n, 3);
  assert_host(hl, 0, "h1", 2);
  assert_host(hl, 1, "h2", 1);
  assert_host(hl, 2, "ann@h3", 16);
  /* IPv6 literals: slots only inside brackets. */
  assert_int_equal(
      mmp__hosts_parse_list(hl, "[::1]:3,fe80::1,[fd00::2]", err, sizeof(err)),
      0);
  assert_host(hl, 3, "::1", 3);
  assert_host(hl, 4, "fe80::1", 1);
  assert_host(hl, 5, "fd00::2", 1);
  assert_int_equal(mmp__hosts_slots(hl), 2 + 1 + 16 + 3 + 1 + 1);
}

static void test_hosts_list_accumulates_slots(void **state) {
  mmp__hostlist_t *hl = *state;
  char err[256];

  assert_int_equal(mmp__hosts_parse_list(hl, "a,b:2,a:3", err, sizeof(err)), 0);
  /* A second --host adds to the same table. */
  assert_int_equal(mmp__hosts_parse_list(hl, "b", err, sizeof(err)), 0);
  assert_int_equal(hl->n, 2);
  assert_host(hl, 0, "a", 4);
  assert_host(hl, 1, "b", 3);
}

static void check_list_error(const char *spec, const char *want) {
  mmp__hostlist_t hl;
  char err[256] = "";

  mmp__hosts_init(&hl);
  assert_int_equal(mmp__hosts_parse_list(&hl, spec, err, sizeof(err)),
                   MMP_EINVAL);
  if (strstr(err, want) == NULL)
    fail_msg("--host '%s': got '%s', want '%s'", spec, err, want);
  mmp__hosts_fini(&hl);
}

static void test_hosts_list_errors(void **state) {
  (void)state;
  check_list_error("a,,b", "--host: empty entry in 'a,,b'");
  check_list_error("a,", "--host: empty entry in 'a,'");
  check_list_error("", "--host: empty entry");
  check_list_error("a:0", "--host: bad slot count in 'a:0'");
  check_list_error("a:-1", "--host: bad slot count in 'a:-1'");
  check_list_error("a:x", "--host: bad slot count in 'a:x'");
  check_list_error("a:", "--host: bad slot count in 'a:'");
  check_list_error("a:+2", "--host: bad slot count in 'a:+2'");
  check_list_error("a:99999999", "--host: bad slot count in 'a:99999999'");
  check_list_error(":2", "--host: empty host name in ':2'");
  check_list_error("[::1", "--host: bad entry '[::1'");
  check_list_error("[::1]x", "--host: bad entry '[::1]x'");
  check_list_error("-oProxyCommand=x", "bad host name '-oProxyCommand=x'");
  check_list_error("a b", "bad host name 'a b'");
  check_list_error("a;reboot", "bad host name 'a;reboot'");
}

static void test_hostfile_parses_lines(void **state) {
  mmp__hostlist_t *hl = *state;
  char err[256];
  const char *text = "# the cluster\n"
                     "\n"
                     "node1 slots=4\n"
                     "   node2\t  slots=2   # trailing comment\n"
                     "node3#comment right after the name\n"
                     "\t\n"
                     "node1 slots=2\r\n" /* listed again: 4 + 2 */
                     "node4";            /* no final newline */

  assert_int_equal(parse_text(hl, text, err, sizeof(err)), 0);
  assert_int_equal(hl->n, 4);
  assert_host(hl, 0, "node1", 6);
  assert_host(hl, 1, "node2", 2);
  assert_host(hl, 2, "node3", 1);
  assert_host(hl, 3, "node4", 1);
}

static void check_file_error(const char *text, const char *want) {
  mmp__hostlist_t hl;
  char err[256];

  mmp__hosts_init(&hl);
  assert_int_equal(parse_text(&hl, text, err, sizeof(err)), MMP_EINVAL);
  if (strcmp(err, want) != 0)
    fail_msg("hostfile error: got '%s', want '%s'", err, want);
  mmp__hosts_fini(&hl);
}

/* A line with a NUL byte is named as such, not as what the NUL cuts a
 * token down to (it used to read "bad slot count '4'"). */
static void test_hostfile_nul_byte_is_named(void **state) {
  static const char text[] = "a slots=2\nb slots=4\0junk\nc\n";
  static const char bin[] = "\x7f"
                            "ELF\x02\x01\x01\0\0\0";
  mmp__hostlist_t hl;
  char err[256];
  (void)state;

  mmp__hosts_init(&hl);
  assert_int_equal(mmp__hosts_parse_text(&hl, "hosts.txt", text,
                                         sizeof(text) - 1, err, sizeof(err)),
                   MMP_EINVAL);
  assert_string_equal(err, "hosts.txt:2: a NUL byte at column 10 (binary "
                           "content, not a hostfile?)");
  mmp__hosts_fini(&hl);
  mmp__hosts_init(&hl);
  assert_int_equal(mmp__hosts_parse_text(&hl, "a.out", bin, sizeof(bin) - 1,
                                         err, sizeof(err)),
                   MMP_EINVAL);
  assert_string_equal(err, "a.out:1: a NUL byte at column 8 (binary content, "
                           "not a hostfile?)");
  mmp__hosts_fini(&hl);
}

static void test_hostfile_errors_name_the_line(void **state) {
  (void)state;
  check_file_error("a\n# c\nb slot=2\n",
                   "hosts.txt:3: expected 'slots=N', got 'slot=2'");
  check_file_error("a max_slots=3\n",
                   "hosts.txt:1: expected 'slots=N', got 'max_slots=3'");
  check_file_error("a slots=2 b\n", "hosts.txt:1: expected 'slots=N', got 'b'");
  check_file_error("\n\na slots=0\n",
                   "hosts.txt:3: bad slot count '0' (a whole number from 1 "
                   "to 1048576)");
  check_file_error("a slots=-2\n",
                   "hosts.txt:1: bad slot count '-2' (a whole number from 1 "
                   "to 1048576)");
  check_file_error("a slots=many\n",
                   "hosts.txt:1: bad slot count 'many' (a whole number from "
                   "1 to 1048576)");
  check_file_error("a slots=\n",
                   "hosts.txt:1: bad slot count '' (a whole number from 1 "
                   "to 1048576)");
  check_file_error("ok\na slots=1 slots=2\n",
                   "hosts.txt:2: 'slots=' given twice");
  check_file_error("good\n-evil\n", "hosts.txt:2: bad host name '-evil'");
  check_file_error("a slots=1048576\na slots=1\n",
                   "hosts.txt:2: host 'a' has more than 1048576 slots");
}

static void test_hostfile_from_disk(void **state) {
  mmp__hostlist_t *hl = *state;
  char path[] = "/tmp/mmp-hosts-XXXXXX", err[512];
  const char *text = "h0 slots=2\nh1\n";
  int fd = mkstemp(path);

  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (int)strlen(text));
  close(fd);
  assert_int_equal(mmp__hosts_parse_file(hl, path, err, sizeof(err)), 0);
  assert_int_equal(hl->n, 2);
  assert_host(hl, 0, "h0", 2);
  /* Only comments: no hosts is an error too. */
  fd = open(path, O_WRONLY | O_TRUNC);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "# empty\n\n", 9), 9);
  close(fd);
  mmp__hosts_fini(hl);
  assert_int_equal(mmp__hosts_parse_file(hl, path, err, sizeof(err)),
                   MMP_EINVAL);
  assert_non_null(strstr(err, ": no hosts listed"));
  assert_non_null(strstr(err, path));
  unlink(path);
  assert_int_equal(mmp__hosts_parse_file(hl, path, err, sizeof(err)),
                   MMP_EINVAL);
  assert_non_null(strstr(err, "cannot read hostfile"));
  assert_non_null(strstr(err, "No such file"));
}

/* Maps n ranks on `spec` and checks "host:local_rank" per rank. */
static void check_map(const char *spec, int n, mmp__map_policy_t policy,
                      int oversubscribe, const char *const *want) {
  mmp__hostlist_t hl;
  mmp__place_t place[32];
  char err[256];
  int r;

  mmp__hosts_init(&hl);
  assert_int_equal(mmp__hosts_parse_list(&hl, spec, err, sizeof(err)), 0);
  assert_int_equal(
      mmp__hosts_map(&hl, n, policy, oversubscribe, place, err, sizeof(err)),
      0);
  for (r = 0; r < n; r++) {
    char got[64];
    snprintf(got, sizeof(got), "%s:%d", hl.hosts[place[r].host].name,
             place[r].local_rank);
    if (strcmp(got, want[r]) != 0)
      fail_msg("%s -n %d: rank %d on %s, want %s", spec, n, r, got, want[r]);
  }
  mmp__hosts_fini(&hl);
}

static void test_map_by_slot_fills_hosts_in_turn(void **state) {
  static const char *const want[] = {"a:0", "a:1", "b:0", "b:1", "b:2"};
  static const char *const fewer[] = {"a:0", "a:1", "b:0"};
  mmp__hostlist_t *hl = *state;
  mmp__place_t place[5];
  char err[256];

  check_map("a:2,b:3", 5, MMP__MAP_SLOT, 0, want);
  check_map("a:2,b:3,c:4", 3, MMP__MAP_SLOT, 0, fewer);
  /* Local sizes are the ranks placed, not the slots. */
  assert_int_equal(mmp__hosts_parse_list(hl, "a:2,b:3,c", err, sizeof(err)), 0);
  assert_int_equal(
      mmp__hosts_map(hl, 3, MMP__MAP_SLOT, 0, place, err, sizeof(err)), 0);
  assert_int_equal(hl->hosts[0].nranks, 2);
  assert_int_equal(hl->hosts[1].nranks, 1);
  assert_int_equal(hl->hosts[2].nranks, 0);
}

static void test_map_by_node_round_robin(void **state) {
  static const char *const want[] = {"a:0", "b:0", "c:0", "a:1",
                                     "b:1", "c:1", "b:2"};
  static const char *const two[] = {"a:0", "b:0", "a:1", "b:1"};
  (void)state;

  /* A host whose slots are full is skipped in later rounds. */
  check_map("a:2,b:3,c:2", 7, MMP__MAP_NODE, 0, want);
  check_map("a:2,b:2", 4, MMP__MAP_NODE, 0, two);
}

static void test_map_oversubscription(void **state) {
  static const char *const slot[] = {"a:0", "b:0", "b:1", "a:1", "b:2"};
  static const char *const node[] = {"a:0", "b:0", "b:1", "a:1", "b:2"};
  mmp__hostlist_t *hl = *state;
  mmp__place_t place[8];
  char err[256];

  assert_int_equal(mmp__hosts_parse_list(hl, "a,b:2", err, sizeof(err)), 0);
  assert_int_equal(
      mmp__hosts_map(hl, 4, MMP__MAP_SLOT, 0, place, err, sizeof(err)),
      MMP_EINVAL);
  assert_string_equal(err, "not enough slots: 4 rank(s) requested, 3 slot(s) "
                           "on 2 host(s) (use --oversubscribe to allow more)");
  assert_int_equal(
      mmp__hosts_map(hl, 4, MMP__MAP_NODE, 0, place, err, sizeof(err)),
      MMP_EINVAL);
  assert_int_equal(
      mmp__hosts_map(hl, 3, MMP__MAP_NODE, 0, place, err, sizeof(err)), 0);
  /* Allowed: slot mapping starts another pass over the slots, node mapping
   * goes on round-robin over every host. */
  check_map("a,b:2", 5, MMP__MAP_SLOT, 1, slot);
  check_map("a,b:2", 5, MMP__MAP_NODE, 1, node);
}

static void test_map_without_hosts_is_an_error(void **state) {
  mmp__hostlist_t *hl = *state;
  mmp__place_t place[1];
  char err[256];

  assert_int_equal(
      mmp__hosts_map(hl, 1, MMP__MAP_SLOT, 1, place, err, sizeof(err)),
      MMP_EINVAL);
  assert_string_equal(err, "no hosts to run on");
}

static void test_mark_local_names(void **state) {
  mmp__hostlist_t *hl = *state;
  char err[256];

  assert_int_equal(
      mmp__hosts_parse_list(hl,
                            "localhost,127.0.0.1,::1,node7,node7.example.org,"
                            "h0,node70,ann@localhost",
                            err, sizeof(err)),
      0);
  mmp__hosts_mark_local(hl, "node7.example.org");
  assert_int_equal(hl->hosts[0].local, 1);
  assert_int_equal(hl->hosts[1].local, 1);
  assert_int_equal(hl->hosts[2].local, 1);
  assert_int_equal(hl->hosts[3].local, 1); /* the short name */
  assert_int_equal(hl->hosts[4].local, 1);
  /* Namespace names and user@host are remote, as is a longer name. */
  assert_int_equal(hl->hosts[5].local, 0);
  assert_int_equal(hl->hosts[6].local, 0);
  assert_int_equal(hl->hosts[7].local, 0);
  mmp__hosts_mark_local(hl, NULL);
  assert_int_equal(hl->hosts[3].local, 0);
  assert_int_equal(hl->hosts[0].local, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_hosts_list_parses_slots, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_hosts_list_accumulates_slots, setup,
                                      teardown),
      cmocka_unit_test(test_hosts_list_errors),
      cmocka_unit_test_setup_teardown(test_hostfile_parses_lines, setup,
                                      teardown),
      cmocka_unit_test(test_hostfile_errors_name_the_line),
      cmocka_unit_test(test_hostfile_nul_byte_is_named),
      cmocka_unit_test_setup_teardown(test_hostfile_from_disk, setup, teardown),
      cmocka_unit_test_setup_teardown(test_map_by_slot_fills_hosts_in_turn,
                                      setup, teardown),
      cmocka_unit_test(test_map_by_node_round_robin),
      cmocka_unit_test_setup_teardown(test_map_oversubscription, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_map_without_hosts_is_an_error, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_mark_local_names, setup, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
