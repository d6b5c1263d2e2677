/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the transport's frame header codec (transport/frame.c),
 * which validates every 64-byte header a peer sends before a byte of its
 * payload is read.
 *
 * Input: 8 bytes of the maximum payload the receiver accepts (little
 * endian; only its low 33 bits are used, so that limits around the
 * configured range are as common as the extremes), then the header bytes,
 * zero-padded to 64, then, if 48 more bytes follow, a v2 handshake
 * greeting (HELLO's and CHALLENGE's payload).
 *
 * Invariants:
 *  - decode returns 0, MMP_EPROTO or MMP_ETOOBIG, and a reason on error;
 *  - MMP_ETOOBIG only for an otherwise valid header whose len exceeds the
 *    limit; accepted headers have a known type and len <= the limit;
 *  - decode then encode gives back the 64 input bytes exactly;
 *  - the type's name is "?" exactly for types outside 1..MMP__F_TYPE_MAX;
 *  - exactly HELLO, CHALLENGE, PROOF, HELLO_ACK and HELLO_NACK belong to
 *    the handshake, greetings 48 bytes long and proofs 32; a version 1
 *    header is refused;
 *  - a greeting decodes only with flags this version knows, and then
 *    encodes back to the same 48 bytes.
 */
#include <string.h>

#include "fuzz.h"
#include "minimp.h"
#include "transport/frame.h"
#include "transport/util.h"

/* The greeting codec on 48 bytes. */
static void frame_check_greeting(const uint8_t *in) {
  uint8_t out[MMP__GREET_LEN];
  mmp__greet_t g;

  if (mmp__greet_decode(in, &g) != 0) {
    FUZZ_CHECK((mmp__get_u32(in + 44) & ~MMP__GREET_ENCRYPT) != 0);
    return;
  }
  FUZZ_CHECK((g.flags & ~MMP__GREET_ENCRYPT) == 0);
  mmp__greet_encode(&g, out);
  FUZZ_CHECK(memcmp(in, out, sizeof(out)) == 0);
}

static int frame_hs(unsigned type) {
  return type == MMP__F_HELLO || type == MMP__F_HELLO_ACK ||
         type == MMP__F_HELLO_NACK || type == MMP__F_CHALLENGE ||
         type == MMP__F_PROOF;
}

static int frame_known(unsigned type) {
  return type >= 1 && type <= MMP__F_TYPE_MAX;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t in[MMP__FRAME_HDR_SIZE] = {0}, out[MMP__FRAME_HDR_SIZE];
  uint64_t max_len = 0;
  mmp__frame_hdr_t h;
  const char *why = NULL;
  size_t n;
  int rc;

  if (size >= 8) {
    max_len = mmp__get_u64(data) & ((1ull << 33) - 1);
    data += 8;
    size -= 8;
  }
  n = size < sizeof(in) ? size : sizeof(in);
  memcpy(in, data, n);
  if (size >= sizeof(in) + MMP__GREET_LEN)
    frame_check_greeting(data + sizeof(in));
  FUZZ_CHECK(mmp__frame_is_handshake(in[5]) == frame_hs(in[5]));
  if (frame_hs(in[5]))
    FUZZ_CHECK(mmp__frame_hs_len(in[5]) ==
               (in[5] == MMP__F_HELLO || in[5] == MMP__F_CHALLENGE
                    ? MMP__GREET_LEN
                    : MMP__MAC_LEN));

  rc = mmp__frame_decode(in, max_len, &h, &why);
  FUZZ_CHECK(rc == 0 || rc == MMP_EPROTO || rc == MMP_ETOOBIG);
  FUZZ_CHECK((strcmp(mmp__frame_type_name(in[5]), "?") != 0) ==
             frame_known(in[5]));
  if (rc != 0) {
    FUZZ_CHECK(why != NULL && why[0] != '\0');
    /* Too big is the last check: everything else about it was valid. */
    if (rc == MMP_ETOOBIG) {
      FUZZ_CHECK(mmp__get_u32(in) == MMP__FRAME_MAGIC);
      FUZZ_CHECK(in[4] == MMP__FRAME_VERSION && frame_known(in[5]));
      FUZZ_CHECK(mmp__get_u32(in + 20) == 0);
      FUZZ_CHECK(mmp__get_u64(in + 32) > max_len);
    }
    return 0;
  }
  FUZZ_CHECK(frame_known(h.type) && h.version == MMP__FRAME_VERSION);
  FUZZ_CHECK(in[4] != 1);
  FUZZ_CHECK(h.len <= max_len);
  mmp__frame_encode(&h, out);
  FUZZ_CHECK(memcmp(in, out, sizeof(out)) == 0);
  return 0;
}

/* One seed: a limit, then a header. */
static void frame_seed(fuzz_emit_fn emit, const char *name, uint64_t max_len,
                       const mmp__frame_hdr_t *h, int corrupt_at,
                       uint8_t value) {
  uint8_t b[8 + MMP__FRAME_HDR_SIZE];

  mmp__put_u64(b, max_len);
  mmp__frame_encode(h, b + 8);
  if (corrupt_at >= 0)
    b[8 + corrupt_at] = value;
  emit(name, b, sizeof(b));
}

/* A handshake frame of `type` whose payload is a greeting with `flags`. */
static void frame_seed_greet(fuzz_emit_fn emit, const char *name, uint8_t type,
                             uint32_t rank, uint32_t peer, uint32_t flags) {
  uint8_t b[8 + MMP__FRAME_HDR_SIZE + MMP__GREET_LEN];
  mmp__frame_hdr_t h;
  mmp__greet_t g;

  memset(&h, 0, sizeof(h));
  h.type = type;
  h.src = rank;
  h.len = mmp__frame_hs_len(type);
  mmp__put_u64(b, 64u << 20);
  mmp__frame_encode(&h, b + 8);
  memset(g.nonce, 0xa5, sizeof(g.nonce));
  g.rank = rank;
  g.size = 4;
  g.peer = peer;
  g.flags = 0;
  mmp__greet_encode(&g, b + 8 + MMP__FRAME_HDR_SIZE);
  mmp__put_u32(b + 8 + MMP__FRAME_HDR_SIZE + 44, flags);
  emit(name, b, sizeof(b));
}

void fuzz_seeds(fuzz_emit_fn emit) {
  mmp__frame_hdr_t h;
  uint8_t empty[8] = {0};

  /* The v2 handshake: greetings (sealed or not, an unknown flag), proofs. */
  frame_seed_greet(emit, "hello", MMP__F_HELLO, 1, 0, 0);
  frame_seed_greet(emit, "hello-sealed", MMP__F_HELLO, 1, 0,
                   MMP__GREET_ENCRYPT);
  frame_seed_greet(emit, "challenge", MMP__F_CHALLENGE, 0, MMP__GREET_ANY, 0);
  frame_seed_greet(emit, "greeting-unknown-flag", MMP__F_HELLO, 1, 0, 0x80);
  frame_seed_greet(emit, "proof", MMP__F_PROOF, 1, 0, 0);
  frame_seed_greet(emit, "hello-ack", MMP__F_HELLO_ACK, 0, 0, 0);

  memset(&h, 0, sizeof(h));
  h.type = MMP__F_EAGER;
  h.comm = 1;
  h.tag = 7;
  h.src = 3;
  h.seq = 42;
  h.len = 100;
  h.a0 = 100;
  frame_seed(emit, "eager", 64u << 20, &h, -1, 0);
  h.len = 64u << 20;
  frame_seed(emit, "eager-at-limit", 64u << 20, &h, -1, 0);
  h.len = (64u << 20) + 1;
  frame_seed(emit, "eager-over-limit", 64u << 20, &h, -1, 0);
  h.len = UINT64_MAX;
  frame_seed(emit, "len-max", 64u << 20, &h, -1, 0);
  h.type = MMP__F_RTS;
  h.len = 0;
  h.a0 = 0x1122334455667788ull;
  h.a1 = 1u << 30;
  frame_seed(emit, "rts", 4096, &h, -1, 0);
  h.type = MMP__F_CTS;
  h.a2 = 12345;
  frame_seed(emit, "cts", 4096, &h, -1, 0);
  h.type = MMP__F_DATA;
  h.len = 512u * 1024;
  h.a1 = 1u << 20;
  frame_seed(emit, "data", 64u << 20, &h, -1, 0);
  h.type = MMP__F_CREDIT;
  h.flags = MMP__FF_REQ;
  h.len = 0;
  frame_seed(emit, "credit-req", 4096, &h, -1, 0);
  h.type = MMP__F_PING;
  frame_seed(emit, "ping-req", 4096, &h, -1, 0);
  h.type = MMP__F_BYE;
  h.flags = 0;
  h.tag = -1;
  frame_seed(emit, "bye", 0, &h, -1, 0);
  frame_seed(emit, "bad-magic", 4096, &h, 0, 'X');
  frame_seed(emit, "version-1", 4096, &h, 4, 1);
  frame_seed(emit, "bad-version", 4096, &h, 4, 3);
  frame_seed(emit, "type-zero", 4096, &h, 5, 0);
  frame_seed(emit, "type-past-max", 4096, &h, 5, MMP__F_TYPE_MAX + 1);
  frame_seed(emit, "reserved-set", 4096, &h, 23, 0x80);
  emit("short", empty, sizeof(empty));
}
