/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the codec of the launcher's control protocol
 * (launcher/ctrl.c): the 16-byte header minimprun and its per-host daemons
 * check on every message, and the LAUNCH body a daemon decodes into the
 * program, the environment and the ranks it starts.
 *
 * Input: 16 bytes of header, then a LAUNCH body.
 *
 * Invariants:
 *  - the header decoder returns 0, MMP_EPROTO or MMP_ETOOBIG (only for a
 *    body over its type's cap: 64 MiB for LAUNCH, 1 MiB for the rest),
 *    with a reason; an accepted header has a known type (the v2
 *    handshake's CHALLENGE, PROOF and WELCOME included) and encodes back
 *    to the same 16 bytes; a version 1 header is refused as such;
 *  - a LAUNCH body decodes to at least one argument and one rank, ranks in
 *    0..2^24-1, NULL-terminated lists, and variables that have a name and
 *    '='; encoding the decoded form gives back the body byte for byte;
 *  - a refused body leaves nothing allocated and says why.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launcher/ctrl.h"
#include "minimp.h"
#include "transport/util.h"

static void ctrl_check_header(const uint8_t in[MMP__BOOT_HDR_SIZE]) {
  mmp__boot_hdr_t h;
  uint8_t out[MMP__BOOT_HDR_SIZE];
  const char *why = NULL;
  int rc = mmp__ctrl_hdr_decode(in, &h, &why);

  FUZZ_CHECK(rc == 0 || rc == MMP_EPROTO || rc == MMP_ETOOBIG);
  if (rc != 0) {
    FUZZ_CHECK(why != NULL && why[0] != '\0');
    if (mmp__get_u32(in) == MMP__CTRL_MAGIC && in[4] == 1)
      FUZZ_CHECK(strstr(why, "version 1") != NULL);
    if (rc == MMP_ETOOBIG)
      FUZZ_CHECK(
          mmp__get_u32(in + 12) >
          (in[5] == MMP__C_LAUNCH ? MMP__CTRL_MAX_LAUNCH : MMP__CTRL_MAX_BODY));
    return;
  }
  FUZZ_CHECK(h.type >= 1 && h.type <= MMP__C_TYPE_MAX);
  FUZZ_CHECK(h.len <= (h.type == MMP__C_LAUNCH ? MMP__CTRL_MAX_LAUNCH
                                               : MMP__CTRL_MAX_BODY));
  mmp__boot_hdr_encode(&h, out);
  mmp__put_u32(out, MMP__CTRL_MAGIC);
  out[4] = MMP__CTRL_VERSION;
  FUZZ_CHECK(memcmp(in, out, sizeof(out)) == 0);
}

static int ctrl_count(char *const *v) {
  int n = 0;

  while (v[n] != NULL)
    n++;
  return n;
}

static void ctrl_check_vars(char *const *v, int n) {
  int i;

  FUZZ_CHECK(ctrl_count(v) == n);
  for (i = 0; i < n; i++)
    FUZZ_CHECK(v[i][0] != '=' && strchr(v[i], '=') != NULL);
}

static void ctrl_check_launch(const uint8_t *body, size_t len) {
  mmp__ctrl_launch_t l;
  mmp__boot_wr_t w;
  const char *why = NULL;
  int rc = mmp__ctrl_launch_decode(body, len, &l, &why), i;

  FUZZ_CHECK(rc == 0 || rc == MMP_EPROTO);
  if (rc != 0) {
    FUZZ_CHECK(why != NULL && why[0] != '\0');
    FUZZ_CHECK(l.mem == NULL && l.argv == NULL && l.ranks == NULL);
    return;
  }
  FUZZ_CHECK(l.mem != NULL && l.cwd != NULL);
  FUZZ_CHECK(l.argc >= 1 && ctrl_count(l.argv) == l.argc);
  ctrl_check_vars(l.env, l.nenv);
  FUZZ_CHECK(l.nranks >= 1 && l.nranks <= MMP__CTRL_MAX_RANK);
  for (i = 0; i < l.nranks; i++) {
    FUZZ_CHECK(l.ranks[i].rank >= 0 && l.ranks[i].rank < MMP__CTRL_MAX_RANK);
    ctrl_check_vars(l.ranks[i].vars, l.ranks[i].nvars);
  }
  /* Encode what was decoded: the same body, byte for byte. */
  mmp__boot_wr_init(&w);
  mmp__ctrl_launch_begin(&w, l.flags, l.cwd, l.argv, l.env, l.nranks);
  for (i = 0; i < l.nranks; i++)
    mmp__ctrl_launch_rank(&w, l.ranks[i].rank, l.ranks[i].flags,
                          l.ranks[i].vars, l.ranks[i].nvars);
  FUZZ_CHECK(mmp__ctrl_finish(&w, MMP__C_LAUNCH) == 0);
  FUZZ_CHECK(w.len == MMP__BOOT_HDR_SIZE + len);
  FUZZ_CHECK(len == 0 || memcmp(w.buf + MMP__BOOT_HDR_SIZE, body, len) == 0);
  ctrl_check_header(w.buf);
  free(w.buf);
  mmp__ctrl_launch_free(&l);
  FUZZ_CHECK(l.mem == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t hdr[MMP__BOOT_HDR_SIZE] = {0};

  memcpy(hdr, data, size < sizeof(hdr) ? size : sizeof(hdr));
  ctrl_check_header(hdr);
  if (size >= sizeof(hdr))
    ctrl_check_launch(data + sizeof(hdr), size - sizeof(hdr));
  return 0;
}

/* ---- Seeds -----------------------------------------------------------------
 */

static void ctrl_seed(fuzz_emit_fn emit, const char *name, mmp__boot_wr_t *w,
                      uint8_t type) {
  if (mmp__ctrl_finish(w, type) != 0)
    abort();
  emit(name, w->buf, w->len);
  free(w->buf);
  mmp__boot_wr_init(w);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  char *argv[] = {"./prog", "--flag", "", NULL};
  char *env[] = {"FOO=1", "MINIMP_SIZE=3", "EMPTY=", NULL};
  char *vars0[] = {"MINIMP_RANK=0", "MINIMP_LOCAL_RANK=0",
                   "MINIMP_LOCAL_SIZE=2", NULL};
  char *vars2[] = {"MINIMP_RANK=2", "MINIMP_LOCAL_RANK=1",
                   "MINIMP_LOCAL_SIZE=2", NULL};
  char *noenv[] = {NULL};
  char *badvar[] = {"=x", NULL};
  mmp__boot_wr_t w;
  uint8_t hdr[MMP__BOOT_HDR_SIZE];

  mmp__boot_wr_init(&w);
  mmp__ctrl_launch_begin(&w, MMP__CTRL_LAUNCH_VERBOSE, "/home/u", argv, env, 2);
  mmp__ctrl_launch_rank(&w, 0, MMP__CTRL_RANK_STDIN, vars0, 3);
  mmp__ctrl_launch_rank(&w, 2, 0, vars2, 3);
  ctrl_seed(emit, "launch", &w, MMP__C_LAUNCH);
  mmp__ctrl_launch_begin(&w, 0, "", argv + 2, noenv, 1);
  mmp__ctrl_launch_rank(&w, (1 << 24) - 1, 0, noenv, 0);
  ctrl_seed(emit, "launch-minimal", &w, MMP__C_LAUNCH);
  mmp__ctrl_launch_begin(&w, 0, "/", argv, badvar, 1);
  mmp__ctrl_launch_rank(&w, 1 << 24, 0, noenv, 0);
  ctrl_seed(emit, "launch-bad-var-and-rank", &w, MMP__C_LAUNCH);
  mmp__ctrl_launch_begin(&w, 0, "/", argv + 3, noenv, 0);
  ctrl_seed(emit, "launch-nothing", &w, MMP__C_LAUNCH);
  mmp__boot_wr_u32(&w, 0);
  mmp__boot_wr_blob(&w, "/", 1);
  mmp__boot_wr_u32(&w, 0x40000000u); /* argc far beyond the body */
  ctrl_seed(emit, "launch-lying-argc", &w, MMP__C_LAUNCH);
  mmp__boot_wr_u32(&w, 7);
  mmp__boot_wr_u32(&w, 1234);
  mmp__boot_wr_u32(&w, 0);
  ctrl_seed(emit, "started", &w, MMP__C_STARTED);
  mmp__boot_wr_u32(&w, (uint32_t)MMP_EPROTO);
  mmp__boot_wr_str(&w, "bad job key", 11);
  ctrl_seed(emit, "error", &w, MMP__C_ERROR);
  /* The handshake: HELLO (nonce, host, pid, hostname), CHALLENGE (nonce,
   * flags: sealing), PROOF, WELCOME; and a version 1 HELLO. */
  {
    uint8_t nonce[MMP__NONCE_LEN];
    memset(nonce, 0x5a, sizeof(nonce));
    mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
    mmp__boot_wr_u32(&w, 1);
    mmp__boot_wr_u32(&w, 4321);
    mmp__boot_wr_str(&w, "node1", 5);
    if (mmp__ctrl_finish(&w, MMP__C_HELLO) != 0)
      abort();
    emit("hello", w.buf, w.len);
    w.buf[4] = 1;
    emit("hello-version-1", w.buf, w.len);
    free(w.buf);
    mmp__boot_wr_init(&w);
    mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
    mmp__boot_wr_u32(&w, MMP__CTRL_SEAL);
    ctrl_seed(emit, "challenge", &w, MMP__C_CHALLENGE);
    mmp__boot_wr_raw(&w, nonce, MMP__MAC_LEN);
    ctrl_seed(emit, "proof", &w, MMP__C_PROOF);
    mmp__boot_wr_raw(&w, nonce, MMP__MAC_LEN);
    ctrl_seed(emit, "welcome", &w, MMP__C_WELCOME);
  }
  mmp__boot_hdr_encode(
      &(mmp__boot_hdr_t){MMP__C_LAUNCH, 0, MMP__CTRL_MAX_LAUNCH + 1}, hdr);
  mmp__put_u32(hdr, MMP__CTRL_MAGIC);
  emit("launch-too-long", hdr, sizeof(hdr));
  mmp__boot_hdr_encode(
      &(mmp__boot_hdr_t){MMP__C_OUTPUT, 0, MMP__CTRL_MAX_BODY + 1}, hdr);
  mmp__put_u32(hdr, MMP__CTRL_MAGIC);
  emit("output-too-long", hdr, sizeof(hdr));
  hdr[5] = MMP__C_TYPE_MAX + 1;
  emit("type-past-max", hdr, sizeof(hdr));
  mmp__put_u32(hdr, MMP__BOOT_MAGIC);
  emit("bootstrap-magic", hdr, sizeof(hdr));
}
