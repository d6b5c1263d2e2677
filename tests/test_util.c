/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the shared helpers: size and integer parsing used for every
 * MINIMP_* variable, hex keys, constant-time comparison, address parsing
 * and formatting, MINIMP_IFACE selection, and the error-code table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "minimp.h"
#include "transport/transport.h"
#include "transport/util.h"

static void test_parse_size_accepts_suffixes(void **state) {
  uint64_t v = 0;
  (void)state;

  assert_int_equal(mmp__parse_size("0", &v), 0);
  assert_true(v == 0);
  assert_int_equal(mmp__parse_size("65536", &v), 0);
  assert_true(v == 65536);
  assert_int_equal(mmp__parse_size("64k", &v), 0);
  assert_true(v == 65536);
  assert_int_equal(mmp__parse_size("2M", &v), 0);
  assert_true(v == 2u << 20);
  assert_int_equal(mmp__parse_size("1g", &v), 0);
  assert_true(v == 1u << 30);
}

static void test_parse_size_rejects_garbage(void **state) {
  uint64_t v = 42;
  (void)state;

  assert_int_equal(mmp__parse_size("", &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_size("-1", &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_size("12q", &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_size("1kk", &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_size(" 5", &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_size("99999999999999999999", &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_size("18014398509481984g", &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_size(NULL, &v), MMP_EINVAL);
  assert_true(v == 42); /* untouched on error */
}

static void test_parse_long_range(void **state) {
  long v = 0;
  (void)state;

  assert_int_equal(mmp__parse_long("17", 0, 20, &v), 0);
  assert_int_equal(v, 17);
  assert_int_equal(mmp__parse_long("21", 0, 20, &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_long("-1", 0, 20, &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_long("3x", 0, 20, &v), MMP_EINVAL);
  assert_int_equal(mmp__parse_long("", 0, 20, &v), MMP_EINVAL);
}

static void test_hex_round_trip_and_rejects(void **state) {
  uint8_t in[16], out[16];
  char hex[33];
  int i;
  (void)state;

  for (i = 0; i < 16; i++)
    in[i] = (uint8_t)(255 - i * 3);
  mmp__hex_encode(in, 16, hex);
  assert_int_equal(strlen(hex), 32);
  assert_int_equal(mmp__hex_decode(hex, out, 16), 0);
  assert_memory_equal(in, out, 16);
  hex[5] = 'g';
  assert_int_equal(mmp__hex_decode(hex, out, 16), MMP_EINVAL);
  assert_int_equal(mmp__hex_decode("abcd", out, 16), MMP_EINVAL);
  assert_true(mmp__ct_equal(in, in, 16));
  out[15] ^= 1;
  mmp__hex_decode("00000000000000000000000000000000", out, 16);
  assert_false(mmp__ct_equal(in, out, 16));
}

static void test_addr_parse_and_format(void **state) {
  struct sockaddr_storage ss;
  char buf[64];
  (void)state;

  assert_int_equal(mmp__addr_parse("127.0.0.1:4242", &ss), 0);
  assert_int_equal(ss.ss_family, AF_INET);
  assert_int_equal(mmp__addr_format((struct sockaddr *)&ss, buf, sizeof(buf)),
                   0);
  assert_string_equal(buf, "127.0.0.1:4242");
  assert_int_equal(mmp__addr_parse("[::1]:80", &ss), 0);
  assert_int_equal(ss.ss_family, AF_INET6);
  mmp__addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
  assert_string_equal(buf, "[::1]:80");
  assert_int_equal(mmp__addr_parse("::1:80", &ss), MMP_EINVAL);
  assert_int_equal(mmp__addr_parse("127.0.0.1", &ss), MMP_EINVAL);
  assert_int_equal(mmp__addr_parse("127.0.0.1:99999", &ss), MMP_EINVAL);
  assert_int_equal(mmp__addr_parse("127.0.0.1:x", &ss), MMP_EINVAL);
  assert_int_equal(mmp__addr_parse("[::1:80", &ss), MMP_EINVAL);
  assert_int_equal(mmp__addr_parse("", &ss), MMP_EINVAL);
}

static void test_addr_select_forms(void **state) {
  struct sockaddr_storage ss;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  (void)state;

  /* Default without a target: loopback. */
  assert_int_equal(mmp__addr_select(NULL, NULL, &ss), 0);
  assert_int_equal(a4->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  /* By interface name. */
  assert_int_equal(mmp__addr_select("lo", NULL, &ss), 0);
  assert_int_equal(ss.ss_family, AF_INET);
  assert_int_equal(a4->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  /* By CIDR and by literal. */
  assert_int_equal(mmp__addr_select("127.0.0.0/8", NULL, &ss), 0);
  assert_int_equal(a4->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  assert_int_equal(mmp__addr_select("127.0.0.1", NULL, &ss), 0);
  assert_int_equal(a4->sin_port, 0);
  /* Nothing matches, or malformed. */
  assert_int_equal(mmp__addr_select("no-such-if0", NULL, &ss), MMP_EADDR);
  assert_int_equal(mmp__addr_select("240.0.0.0/8", NULL, &ss), MMP_EADDR);
  assert_int_equal(mmp__addr_select("2001:db8:ffff::/48", NULL, &ss),
                   MMP_EADDR);
  assert_int_equal(mmp__addr_select("::1/128", NULL, &ss), 0);
  assert_int_equal(ss.ss_family, AF_INET6);
  assert_int_equal(mmp__addr_select("10.0.0.0/40", NULL, &ss), MMP_EINVAL);
  assert_int_equal(mmp__addr_select("1.2.3/8", NULL, &ss), MMP_EINVAL);
}

static void test_addr_select_route(void **state) {
  struct sockaddr_storage target, ss;
  (void)state;

  assert_int_equal(mmp__addr_parse("127.0.0.1:9", &target), 0);
  assert_int_equal(mmp__addr_select(NULL, (struct sockaddr *)&target, &ss), 0);
  assert_int_equal(((struct sockaddr_in *)&ss)->sin_addr.s_addr,
                   htonl(INADDR_LOOPBACK));
}

/* The log budget: 10 lines, then a count, which the next interval hands
 * back once. */
static void test_ratelog_budget(void **state) {
  mmp__ratelog_t rl = {0};
  uint64_t ended = 99;
  int i, shown = 0;
  (void)state;

  for (i = 0; i < 25; i++) {
    shown += mmp__ratelog_take(&rl, 1000 + (uint64_t)i, &ended);
    assert_int_equal(ended, 0);
  }
  assert_int_equal(shown, MMP__RATELOG_BURST);
  /* Still inside the interval: left out. */
  assert_int_equal(mmp__ratelog_take(&rl, 1000 + 9999, &ended), 0);
  assert_int_equal(ended, 0);
  /* The next interval logs again and reports the 16 left out. */
  assert_int_equal(mmp__ratelog_take(&rl, 1000 + 10000, &ended), 1);
  assert_int_equal(ended, 16);
  assert_int_equal(mmp__ratelog_end(&rl), 0);
}

static void test_errors_have_names_and_messages(void **state) {
  int seen = 0;
  (void)state;

#define CHECK(name, val, msg)                                                  \
  assert_true((val) < 0);                                                      \
  assert_string_equal(mmp_err_name(val), "MMP_" #name);                        \
  assert_string_equal(mmp_strerror(val), msg);                                 \
  seen++;
  MMP_ERRNO_MAP(CHECK)
#undef CHECK
  assert_true(seen >= 20);
  assert_string_equal(mmp_strerror(0), "success");
  assert_string_equal(mmp_strerror(-9999), "unknown error");
  assert_string_equal(mmp_err_name(-9999), "MMP_E?");
  assert_int_equal(mmp__err_from_uv(UV_ECONNRESET), MMP_EPEERLOST);
  assert_int_equal(mmp__err_from_uv(UV_ENOMEM), MMP_ENOMEM);
  assert_int_equal(mmp__err_from_uv(UV_EADDRINUSE), MMP_EADDRINUSE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_size_accepts_suffixes),
      cmocka_unit_test(test_parse_size_rejects_garbage),
      cmocka_unit_test(test_parse_long_range),
      cmocka_unit_test(test_hex_round_trip_and_rejects),
      cmocka_unit_test(test_addr_parse_and_format),
      cmocka_unit_test(test_addr_select_forms),
      cmocka_unit_test(test_addr_select_route),
      cmocka_unit_test(test_errors_have_names_and_messages),
      cmocka_unit_test(test_ratelog_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
