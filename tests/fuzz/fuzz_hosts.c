/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: minimprun's host lists (launcher/hosts.c): the --host
 * parser, the hostfile parser, the marking of this machine's entries and
 * the slot and node mappers.
 *
 * Input: a flags byte (bit 0: the text is a hostfile, else a --host value;
 * bit 1: map by node; bit 2: oversubscribe; bits 3-4: which name this
 * machine has), two bytes of the number of ranks to map (1..1024), then
 * the text (a --host value ends at its first NUL, as on a command line).
 *
 * Invariants:
 *  - parsing returns 0 or MMP_EINVAL with a message, one line unless it
 *    quotes a --host value with a newline; a hostfile's message names the
 *    file and a line that exists; a hostfile with a NUL byte fails;
 *  - every host accepted has a valid name (1..255 bytes of letters,
 *    digits and ".-_:@%", not starting with '-'), appears once, and has
 *    1..MMP__HOST_MAX_SLOTS slots;
 *  - the list written back as a hostfile, and as a --host value, parses
 *    to the same list (names, slots, order);
 *  - an entry is local exactly when it is a loopback name, this machine's
 *    name or its first label;
 *  - mapping fails exactly when there are more ranks than slots without
 *    oversubscription; otherwise every rank is placed, each host's local
 *    ranks count 0, 1, ... in rank order, no host takes more than its slots
 *    unless oversubscribed, and mapping by slot fills the hosts in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launcher/hosts.h"
#include "minimp.h"

#define HOSTS_MAX_RANKS 1024

static int hosts_name_ok(const char *s) {
  size_t n = strlen(s), i;

  if (n == 0 || n > MMP__HOST_MAX_NAME || s[0] == '-')
    return 0;
  for (i = 0; i < n; i++)
    if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
               "0123456789.-_:@%",
               s[i]) == NULL)
      return 0;
  return 1;
}

static void hosts_check_list(const mmp__hostlist_t *hl) {
  int i, k;

  FUZZ_CHECK(hl->n >= 0 && hl->n <= hl->cap);
  for (i = 0; i < hl->n; i++) {
    FUZZ_CHECK(hosts_name_ok(hl->hosts[i].name));
    FUZZ_CHECK(hl->hosts[i].slots >= 1 &&
               hl->hosts[i].slots <= MMP__HOST_MAX_SLOTS);
    for (k = 0; k < i; k++)
      FUZZ_CHECK(strcmp(hl->hosts[i].name, hl->hosts[k].name) != 0);
  }
}

static int hosts_same(const mmp__hostlist_t *a, const mmp__hostlist_t *b) {
  int i;

  if (a->n != b->n)
    return 0;
  for (i = 0; i < a->n; i++)
    if (strcmp(a->hosts[i].name, b->hosts[i].name) != 0 ||
        a->hosts[i].slots != b->hosts[i].slots)
      return 0;
  return 1;
}

/* Writes the list back in both syntaxes and parses each again. */
static void hosts_round_trip(const mmp__hostlist_t *hl) {
  fuzz_buf_t file = {0}, list = {0};
  mmp__hostlist_t again;
  char line[MMP__HOST_MAX_NAME + 32], err[512];
  int i, rc;

  for (i = 0; i < hl->n; i++) {
    snprintf(line, sizeof(line), "%s slots=%d\n", hl->hosts[i].name,
             hl->hosts[i].slots);
    fuzz_buf_put(&file, line, strlen(line));
    snprintf(line, sizeof(line), "%s[%s]:%d", i > 0 ? "," : "",
             hl->hosts[i].name, hl->hosts[i].slots);
    fuzz_buf_put(&list, line, strlen(line));
  }
  fuzz_buf_u8(&list, 0);

  mmp__hosts_init(&again);
  rc = mmp__hosts_parse_text(&again, "again",
                             file.p != NULL ? (const char *)file.p : "",
                             file.len, err, sizeof(err));
  FUZZ_CHECK(rc == 0 && hosts_same(hl, &again));
  mmp__hosts_fini(&again);
  if (hl->n > 0) {
    rc = mmp__hosts_parse_list(&again, (const char *)list.p, err, sizeof(err));
    FUZZ_CHECK(rc == 0 && hosts_same(hl, &again));
    mmp__hosts_fini(&again);
  }
  fuzz_buf_free(&file);
  fuzz_buf_free(&list);
}

static void hosts_check_local(const mmp__hostlist_t *hl, const char *self) {
  int i;

  for (i = 0; i < hl->n; i++) {
    const char *name = hl->hosts[i].name;
    int want = strcmp(name, "localhost") == 0 ||
               strcmp(name, "127.0.0.1") == 0 || strcmp(name, "::1") == 0;
    if (self != NULL && *self != '\0')
      want |=
          strcmp(name, self) == 0 || (strlen(name) == strcspn(self, ".") &&
                                      strncmp(name, self, strlen(name)) == 0);
    FUZZ_CHECK(hl->hosts[i].local == want);
  }
}

static void hosts_check_map(mmp__hostlist_t *hl, int n, int policy, int over) {
  mmp__place_t place[HOSTS_MAX_RANKS];
  int next[64], i, r, rc, h = 0;
  long slots = mmp__hosts_slots(hl);
  char err[512];

  if (hl->n > 64)
    return;
  rc = mmp__hosts_map(hl, n, policy, over, place, err, sizeof(err));
  if (hl->n == 0 || (n > slots && !over)) {
    FUZZ_CHECK(rc == MMP_EINVAL && err[0] != '\0');
    return;
  }
  FUZZ_CHECK(rc == 0);
  memset(next, 0, sizeof(next));
  for (r = 0; r < n; r++) {
    FUZZ_CHECK(place[r].host >= 0 && place[r].host < hl->n);
    FUZZ_CHECK(place[r].local_rank == next[place[r].host]++);
    if (policy == MMP__MAP_SLOT && r < slots) {
      /* The first pass goes host by host, each filled to its slots. */
      FUZZ_CHECK(place[r].host >= h);
      h = place[r].host;
    }
  }
  for (i = 0; i < hl->n; i++) {
    FUZZ_CHECK(hl->hosts[i].nranks == next[i]);
    if (n <= slots)
      FUZZ_CHECK(next[i] <= hl->hosts[i].slots);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const selves[4] = {NULL, "node1", "node1.example.org",
                                        "localhost"};
  mmp__hostlist_t hl;
  char err[512], *text;
  int flags, n, rc, lines = 1;
  const char *nul;
  size_t i;

  if (size < 3)
    return 0;
  flags = data[0];
  n = 1 + (data[1] | data[2] << 8) % HOSTS_MAX_RANKS;
  data += 3;
  size -= 3;
  text = malloc(size + 1);
  if (text == NULL)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  for (i = 0; i < size; i++)
    lines += text[i] == '\n';

  mmp__hosts_init(&hl);
  err[0] = '\0';
  if (flags & 1)
    rc = mmp__hosts_parse_text(&hl, "hf", text, size, err, sizeof(err));
  else
    rc = mmp__hosts_parse_list(&hl, text, err, sizeof(err));
  FUZZ_CHECK(rc == 0 || rc == MMP_EINVAL);
  /* A hostfile with a NUL byte is refused, at its line at the latest, and
   * there said so (not as a bad count cut at the NUL). */
  nul = flags & 1 ? memchr(text, '\0', size) : NULL;
  FUZZ_CHECK(nul == NULL || rc != 0);
  if (rc != 0) {
    long line = 0;
    /* One line; but a --host value is quoted as given, newlines and all
     * (docs/testing.md, "Fuzzing": left as it is). */
    FUZZ_CHECK(err[0] != '\0');
    FUZZ_CHECK(strchr(err, '\n') == NULL || (!(flags & 1) && lines > 1));
    if (flags & 1) {
      FUZZ_CHECK(sscanf(err, "hf:%ld: ", &line) == 1);
      FUZZ_CHECK(line >= 1 && line <= lines);
      if (nul != NULL) {
        long at = 1;
        for (i = 0; text + i < nul; i++)
          at += text[i] == '\n';
        FUZZ_CHECK(line <= at);
        FUZZ_CHECK(line < at || strstr(err, "NUL byte") != NULL);
      }
    }
  } else {
    hosts_check_list(&hl);
    hosts_round_trip(&hl);
    mmp__hosts_mark_local(&hl, selves[(flags >> 3) & 3]);
    hosts_check_local(&hl, selves[(flags >> 3) & 3]);
    hosts_check_map(&hl, n, flags & 2 ? MMP__MAP_NODE : MMP__MAP_SLOT,
                    (flags & 4) != 0);
  }
  mmp__hosts_fini(&hl);
  free(text);
  return 0;
}

static void hosts_seed(fuzz_emit_fn emit, const char *name, int flags, int n,
                       const char *text, size_t len) {
  fuzz_buf_t b = {0};

  fuzz_buf_u8(&b, (uint8_t)flags);
  fuzz_buf_u16(&b, (uint16_t)(n - 1));
  fuzz_buf_put(&b, text, len);
  emit(name, b.p, b.len);
  fuzz_buf_free(&b);
}

#define HOSTS_SEED(name, flags, n, text)                                       \
  hosts_seed(emit, name, flags, n, text, sizeof(text) - 1)

void fuzz_seeds(fuzz_emit_fn emit) {
  HOSTS_SEED("list", 0, 4, "node1:2,node2");
  HOSTS_SEED("list-ipv6", 2, 5, "[::1]:2,fe80::1%eth0,localhost:3");
  HOSTS_SEED("list-repeat", 4 | 8, 9, "node1,node2:2,node1:3");
  HOSTS_SEED("list-bad-slots", 0, 1, "node1:0,node2:x");
  HOSTS_SEED("list-empty-entry", 0, 1, "node1,,node2");
  HOSTS_SEED("list-bracket", 0, 1, "[::1]x");
  HOSTS_SEED("list-max-slots", 4, 1024, "a:1048576,b:1");
  HOSTS_SEED("file", 1, 6,
             "# the cluster\nnode1 slots=2\n\n  node2\tslots=4 # fast\n"
             "node3\n");
  HOSTS_SEED("file-by-node", 1 | 2 | 16, 7,
             "node1.example.org slots=2\nnode1\nann@node3 slots=3\r\n");
  HOSTS_SEED("file-oversubscribed", 1 | 4, 100, "a\nb slots=2\n");
  HOSTS_SEED("file-slots-twice", 1, 1, "a slots=2 slots=3\n");
  HOSTS_SEED("file-slot-typo", 1, 1, "a\nb slot=2\n");
  HOSTS_SEED("file-nul", 1, 1, "a slots=2\0\nb\n");
  HOSTS_SEED("file-dash", 1, 1, "-oProxyCommand=x\n");
  HOSTS_SEED("file-too-many-slots", 1, 1, "a slots=1048576\na slots=1\n");
}
