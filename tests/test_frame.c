/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the transport frame codec: the exact little-endian layout,
 * round trips, and every validation rule that protects the receiver.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "minimp.h"
#include "transport/frame.h"
#include "transport/util.h"

static mmp__frame_hdr_t sample(void) {
  mmp__frame_hdr_t h;

  memset(&h, 0, sizeof(h));
  h.type = MMP__F_RTS;
  h.flags = 0x0102;
  h.comm = 0x03040506;
  h.tag = -2;
  h.src = 0x0708090a;
  h.seq = 0x1122334455667788ull;
  h.len = 0x99;
  h.a0 = 1;
  h.a1 = 2;
  h.a2 = 0xffffffffffffffffull;
  return h;
}

static void test_frame_layout_is_little_endian(void **state) {
  mmp__frame_hdr_t h = sample();
  uint8_t b[MMP__FRAME_HDR_SIZE];
  (void)state;

  mmp__frame_encode(&h, b);
  assert_memory_equal(b, "MMPF", 4);
  assert_int_equal(b[4], MMP__FRAME_VERSION);
  assert_int_equal(b[5], MMP__F_RTS);
  assert_int_equal(b[6], 0x02);
  assert_int_equal(b[7], 0x01);
  assert_int_equal(b[8], 0x06);
  assert_int_equal(b[11], 0x03);
  assert_int_equal(b[12], 0xfe); /* -2 */
  assert_int_equal(b[15], 0xff);
  assert_int_equal(b[16], 0x0a);
  assert_int_equal(mmp__get_u32(b + 20), 0);
  assert_int_equal(b[24], 0x88);
  assert_int_equal(b[31], 0x11);
  assert_int_equal(b[32], 0x99);
  assert_int_equal(b[40], 1);
  assert_int_equal(b[48], 2);
  assert_int_equal(b[63], 0xff);
}

static void test_frame_round_trip(void **state) {
  mmp__frame_hdr_t h = sample(), d;
  uint8_t b[MMP__FRAME_HDR_SIZE];
  const char *why = NULL;
  (void)state;

  mmp__frame_encode(&h, b);
  assert_int_equal(mmp__frame_decode(b, 1000, &d, &why), 0);
  assert_int_equal(d.type, h.type);
  assert_int_equal(d.flags, h.flags);
  assert_int_equal(d.comm, h.comm);
  assert_int_equal(d.tag, h.tag);
  assert_int_equal(d.src, h.src);
  assert_true(d.seq == h.seq);
  assert_true(d.len == h.len);
  assert_true(d.a0 == h.a0 && d.a1 == h.a1 && d.a2 == h.a2);
}

static void expect_reject(uint8_t *b, uint64_t max, int code) {
  mmp__frame_hdr_t d;
  const char *why = NULL;

  assert_int_equal(mmp__frame_decode(b, max, &d, &why), code);
  assert_non_null(why);
}

static void test_frame_rejects_bad_magic(void **state) {
  mmp__frame_hdr_t h = sample();
  uint8_t b[MMP__FRAME_HDR_SIZE];
  (void)state;

  mmp__frame_encode(&h, b);
  b[0] = 'X';
  expect_reject(b, 1000, MMP_EPROTO);
}

static void test_frame_rejects_other_version(void **state) {
  mmp__frame_hdr_t h = sample();
  uint8_t b[MMP__FRAME_HDR_SIZE];
  (void)state;

  mmp__frame_encode(&h, b);
  b[4] = MMP__FRAME_VERSION + 1;
  expect_reject(b, 1000, MMP_EPROTO);
}

static void test_frame_rejects_unknown_type(void **state) {
  mmp__frame_hdr_t h = sample();
  uint8_t b[MMP__FRAME_HDR_SIZE];
  (void)state;

  mmp__frame_encode(&h, b);
  b[5] = 0;
  expect_reject(b, 1000, MMP_EPROTO);
  b[5] = MMP__F_TYPE_MAX + 1;
  expect_reject(b, 1000, MMP_EPROTO);
}

static void test_frame_rejects_nonzero_reserved(void **state) {
  mmp__frame_hdr_t h = sample();
  uint8_t b[MMP__FRAME_HDR_SIZE];
  (void)state;

  mmp__frame_encode(&h, b);
  b[22] = 1;
  expect_reject(b, 1000, MMP_EPROTO);
}

static void test_frame_rejects_oversized_length(void **state) {
  mmp__frame_hdr_t h = sample();
  uint8_t b[MMP__FRAME_HDR_SIZE];
  (void)state;

  h.len = 1001;
  mmp__frame_encode(&h, b);
  expect_reject(b, 1000, MMP_ETOOBIG);
  h.len = UINT64_MAX;
  mmp__frame_encode(&h, b);
  expect_reject(b, 1000, MMP_ETOOBIG);
  h.len = 1000; /* the limit itself is allowed */
  mmp__frame_encode(&h, b);
  {
    mmp__frame_hdr_t d;
    const char *why;
    assert_int_equal(mmp__frame_decode(b, 1000, &d, &why), 0);
  }
}

static void test_frame_version_1_is_named(void **state) {
  mmp__frame_hdr_t h = sample(), d;
  uint8_t b[MMP__FRAME_HDR_SIZE];
  const char *why = NULL;
  (void)state;

  /* A peer of the version that sent the key in clear gets a reason that
   * says so, not a bare "unsupported". */
  mmp__frame_encode(&h, b);
  b[4] = 1;
  assert_int_equal(mmp__frame_decode(b, 1000, &d, &why), MMP_EPROTO);
  assert_non_null(strstr(why, "version 1"));
  assert_non_null(strstr(why, "version 2"));
}

static void test_greeting_round_trip_and_flags(void **state) {
  mmp__greet_t g, d;
  uint8_t b[MMP__GREET_LEN];
  int i;
  (void)state;

  for (i = 0; i < MMP__NONCE_LEN; i++)
    g.nonce[i] = (uint8_t)(i * 17);
  g.rank = 7;
  g.size = 9;
  g.peer = MMP__GREET_ANY;
  g.flags = MMP__GREET_ENCRYPT;
  mmp__greet_encode(&g, b);
  assert_memory_equal(b, g.nonce, MMP__NONCE_LEN);
  assert_int_equal(mmp__get_u32(b + 32), 7);
  assert_int_equal(mmp__get_u32(b + 36), 9);
  assert_int_equal(mmp__get_u32(b + 40), 0xffffffffu);
  assert_int_equal(mmp__get_u32(b + 44), 1);
  assert_int_equal(mmp__greet_decode(b, &d), 0);
  assert_memory_equal(d.nonce, g.nonce, MMP__NONCE_LEN);
  assert_int_equal(d.rank, 7);
  assert_int_equal(d.size, 9);
  assert_int_equal(d.peer, MMP__GREET_ANY);
  assert_int_equal(d.flags, MMP__GREET_ENCRYPT);
  /* A flag this version does not know is refused. */
  b[45] = 1;
  assert_int_equal(mmp__greet_decode(b, &d), MMP_EPROTO);
}

static void test_frame_handshake_types(void **state) {
  (void)state;
  assert_true(mmp__frame_is_handshake(MMP__F_HELLO));
  assert_true(mmp__frame_is_handshake(MMP__F_CHALLENGE));
  assert_true(mmp__frame_is_handshake(MMP__F_PROOF));
  assert_true(mmp__frame_is_handshake(MMP__F_HELLO_ACK));
  assert_true(mmp__frame_is_handshake(MMP__F_HELLO_NACK));
  assert_false(mmp__frame_is_handshake(MMP__F_EAGER));
  assert_false(mmp__frame_is_handshake(MMP__F_PING));
  assert_int_equal(mmp__frame_hs_len(MMP__F_HELLO), MMP__GREET_LEN);
  assert_int_equal(mmp__frame_hs_len(MMP__F_CHALLENGE), MMP__GREET_LEN);
  assert_int_equal(mmp__frame_hs_len(MMP__F_PROOF), MMP__MAC_LEN);
  assert_int_equal(mmp__frame_hs_len(MMP__F_HELLO_ACK), MMP__MAC_LEN);
}

static void test_frame_type_names(void **state) {
  (void)state;
  assert_string_equal(mmp__frame_type_name(MMP__F_EAGER), "EAGER");
  assert_string_equal(mmp__frame_type_name(MMP__F_PING), "PING");
  assert_string_equal(mmp__frame_type_name(MMP__F_CHALLENGE), "CHALLENGE");
  assert_string_equal(mmp__frame_type_name(MMP__F_PROOF), "PROOF");
  assert_string_equal(mmp__frame_type_name(200), "?");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_frame_layout_is_little_endian),
      cmocka_unit_test(test_frame_round_trip),
      cmocka_unit_test(test_frame_rejects_bad_magic),
      cmocka_unit_test(test_frame_rejects_other_version),
      cmocka_unit_test(test_frame_rejects_unknown_type),
      cmocka_unit_test(test_frame_rejects_nonzero_reserved),
      cmocka_unit_test(test_frame_rejects_oversized_length),
      cmocka_unit_test(test_frame_version_1_is_named),
      cmocka_unit_test(test_greeting_round_trip_and_flags),
      cmocka_unit_test(test_frame_handshake_types),
      cmocka_unit_test(test_frame_type_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
