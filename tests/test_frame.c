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

static void test_hello_round_trip_and_reserved(void **state) {
  uint8_t key[MMP__JOB_KEY_LEN], k2[MMP__JOB_KEY_LEN];
  uint8_t b[MMP__HELLO_LEN];
  uint32_t rank, size;
  int i;
  (void)state;

  for (i = 0; i < MMP__JOB_KEY_LEN; i++)
    key[i] = (uint8_t)(i * 17);
  mmp__hello_encode(key, 7, 9, b);
  assert_int_equal(mmp__hello_decode(b, k2, &rank, &size), 0);
  assert_memory_equal(k2, key, sizeof(key));
  assert_int_equal(rank, 7);
  assert_int_equal(size, 9);
  b[30] = 1;
  assert_int_equal(mmp__hello_decode(b, k2, &rank, &size), MMP_EPROTO);
}

static void test_frame_type_names(void **state) {
  (void)state;
  assert_string_equal(mmp__frame_type_name(MMP__F_EAGER), "EAGER");
  assert_string_equal(mmp__frame_type_name(MMP__F_PING), "PING");
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
      cmocka_unit_test(test_hello_round_trip_and_reserved),
      cmocka_unit_test(test_frame_type_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
