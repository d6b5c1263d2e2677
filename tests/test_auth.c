/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of transport/auth.c without sockets: the handshake proofs
 * verify only for the same key, protocol, transcript, role and verdict (so
 * a reflected or replayed proof fails), session keys differ per direction
 * and per connection, and sealed records round-trip at every size and
 * split while an altered, replayed, reordered, truncated or foreign record
 * never opens.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "transport/auth.h"
#include "transport/util.h"

static uint8_t key[MMP__JOB_KEY_LEN];
static uint8_t hello[48], challenge[48];

static int setup(void **state) {
  (void)state;
  for (int i = 0; i < MMP__JOB_KEY_LEN; i++)
    key[i] = (uint8_t)(i * 11 + 3);
  for (int i = 0; i < 48; i++) {
    hello[i] = (uint8_t)(i * 5);
    challenge[i] = (uint8_t)(255 - i);
  }
  return mmp__auth_init();
}

static void test_auth_proofs_verify_only_as_made(void **state) {
  mmp__auth_t d, l, other;
  uint8_t pd[MMP__MAC_LEN], pl[MMP__MAC_LEN], k2[MMP__JOB_KEY_LEN];
  (void)state;

  /* Both sides build the same transcript. */
  mmp__auth_begin(&d, key, MMP__AUTH_TCP, hello, 48, challenge, 48);
  mmp__auth_begin(&l, key, MMP__AUTH_TCP, hello, 48, challenge, 48);
  mmp__auth_mac(&d, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pd);
  mmp__auth_mac(&l, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, pl);
  assert_true(mmp__auth_check(&l, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pd));
  assert_true(mmp__auth_check(&d, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, pl));
  /* Reflection: the listener's proof sent back as the dialer's. */
  assert_false(mmp__auth_check(&l, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pl));
  assert_false(mmp__auth_check(&d, MMP__AUTH_LISTENER, MMP__AUTH_ACCEPT, pd));
  /* A verdict cannot be turned into another. */
  assert_false(mmp__auth_check(&d, MMP__AUTH_LISTENER, MMP__AUTH_REFUSE, pl));
  /* Another protocol's handshake with the same bytes. */
  mmp__auth_begin(&other, key, MMP__AUTH_BOOT, hello, 48, challenge, 48);
  assert_false(mmp__auth_check(&other, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pd));
  /* Replay: the same hello, a fresh challenge. */
  challenge[0] ^= 1;
  mmp__auth_begin(&other, key, MMP__AUTH_TCP, hello, 48, challenge, 48);
  challenge[0] ^= 1;
  assert_false(mmp__auth_check(&other, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pd));
  /* The greetings swapped (the listener's taken for the dialer's). */
  mmp__auth_begin(&other, key, MMP__AUTH_TCP, challenge, 48, hello, 48);
  assert_false(mmp__auth_check(&other, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pd));
  /* The same bytes split differently between the two messages. */
  {
    uint8_t both[96];
    memcpy(both, hello, 48);
    memcpy(both + 48, challenge, 48);
    mmp__auth_begin(&other, key, MMP__AUTH_TCP, both, 47, both + 47, 49);
    assert_false(
        mmp__auth_check(&other, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pd));
  }
  /* A wrong key, one bit off. */
  memcpy(k2, key, sizeof(k2));
  k2[9] ^= 0x10;
  mmp__auth_begin(&other, k2, MMP__AUTH_TCP, hello, 48, challenge, 48);
  assert_false(mmp__auth_check(&other, MMP__AUTH_DIALER, MMP__AUTH_PROVE, pd));
  /* Neither the key nor anything of it shows in a proof. */
  assert_null(memmem(pd, sizeof(pd), key, 8));
  mmp__auth_end(&d);
  mmp__auth_end(&l);
  mmp__auth_end(&other);
  for (size_t i = 0; i < sizeof(d); i++)
    assert_int_equal(((uint8_t *)&d)[i], 0);
}

static void test_auth_session_keys_per_direction_and_connection(void **state) {
  mmp__auth_t a;
  uint8_t d2l[32], l2d[32], d2l_b[32], l2d_b[32];
  (void)state;

  mmp__auth_begin(&a, key, MMP__AUTH_TCP, hello, 48, challenge, 48);
  mmp__auth_session_keys(&a, key, d2l, l2d);
  assert_memory_not_equal(d2l, l2d, 32);
  assert_null(memmem(d2l, 32, key, 4));
  assert_memory_not_equal(d2l, a.key, 32);
  /* Another connection (another nonce): other keys. */
  hello[5] ^= 0x80;
  mmp__auth_begin(&a, key, MMP__AUTH_TCP, hello, 48, challenge, 48);
  hello[5] ^= 0x80;
  mmp__auth_session_keys(&a, key, d2l_b, l2d_b);
  assert_memory_not_equal(d2l, d2l_b, 32);
  assert_memory_not_equal(l2d, l2d_b, 32);
  mmp__auth_end(&a);
}

/* Seals `n` bytes split into pieces at `cuts`, opens them all and checks
 * the plaintext and the sizes. */
static void round_trip(uint64_t n, const size_t *cuts, unsigned ncuts) {
  uint8_t *plain = malloc(n), *back = malloc(n + MMP__REC_MAX);
  uint8_t *ct = malloc(mmp__seal_size(n)), *scratch = malloc(MMP__REC_MAX);
  struct iovec iov[8];
  mmp__seal_t tx, rx;
  size_t at = 0, got = 0, pos = 0;
  unsigned k;

  assert_true(ncuts < 8);
  for (uint64_t i = 0; i < n; i++)
    plain[i] = (uint8_t)(i * 31 + 7);
  for (k = 0; k <= ncuts; k++) {
    size_t end = k < ncuts ? cuts[k] : (size_t)n;
    iov[k].iov_base = plain + at;
    iov[k].iov_len = end - at;
    at = end;
  }
  memset(&tx, 0, sizeof(tx));
  for (int i = 0; i < 32; i++)
    tx.key[i] = (uint8_t)i;
  rx = tx;
  mmp__seal(&tx, iov, ncuts + 1, n, ct, scratch);
  assert_true(tx.next == (n + MMP__REC_MAX - 1) / MMP__REC_MAX);
  while (pos < mmp__seal_size(n)) {
    size_t len = 0;
    const char *why = NULL;
    long r = mmp__open(&rx, ct + pos, mmp__seal_size(n) - pos, back + got, &len,
                       &why);
    assert_true(r > 0);
    assert_true(len <= MMP__REC_MAX);
    pos += (size_t)r;
    got += len;
  }
  assert_int_equal(got, n);
  assert_memory_equal(back, plain, n);
  /* No plaintext run of any length shows through. */
  if (n >= 16)
    assert_null(memmem(ct, mmp__seal_size(n), plain + n / 2, 16));
  free(plain);
  free(back);
  free(ct);
  free(scratch);
}

static void test_seal_round_trip_sizes_and_splits(void **state) {
  const uint64_t R = MMP__REC_MAX;
  (void)state;

  round_trip(1, NULL, 0);
  round_trip(64, NULL, 0);
  round_trip(72, (size_t[]){64}, 1); /* a header and 8 bytes of payload */
  round_trip(R - 1, (size_t[]){64}, 1);
  round_trip(R, (size_t[]){64}, 1);
  round_trip(R + 1, (size_t[]){64}, 1);
  round_trip(3 * R + 5, (size_t[]){64, 1000, 2 * R + 3}, 3);
  round_trip(2 * R, (size_t[]){R, R + 1, R + 2}, 3); /* tiny pieces */
  round_trip(600000, (size_t[]){64, 64 + 1000}, 2);
}

/* Two records of 100 and 200 bytes, sealed in `ct`. */
static size_t two_records(mmp__seal_t *rx, uint8_t *ct) {
  uint8_t plain[300], scratch[MMP__REC_MAX];
  struct iovec iov;
  mmp__seal_t tx;
  size_t n1;

  for (int i = 0; i < 300; i++)
    plain[i] = (uint8_t)i;
  memset(&tx, 0, sizeof(tx));
  tx.key[0] = 42;
  *rx = tx;
  iov.iov_base = plain;
  iov.iov_len = 100;
  mmp__seal(&tx, &iov, 1, 100, ct, scratch);
  n1 = (size_t)mmp__seal_size(100);
  iov.iov_base = plain + 100;
  iov.iov_len = 200;
  mmp__seal(&tx, &iov, 1, 200, ct + n1, scratch);
  return n1;
}

static void expect_fail(mmp__seal_t *rx, const uint8_t *in, size_t avail) {
  uint8_t out[MMP__REC_MAX];
  const char *why = NULL;
  size_t len = 0;
  uint64_t before = rx->next;

  assert_int_equal(mmp__open(rx, in, avail, out, &len, &why), MMP_EPROTO);
  assert_non_null(why);
  assert_true(rx->next == before);
}

static void test_seal_rejects_tampering(void **state) {
  uint8_t ct[1024], out[MMP__REC_MAX];
  size_t n1, len;
  const char *why;
  mmp__seal_t rx;
  (void)state;

  n1 = two_records(&rx, ct);
  /* One flipped bit anywhere in the record: length, body or tag. */
  for (size_t bit = 0; bit < n1 * 8; bit += 13) {
    ct[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    if (bit / 8 < MMP__REC_HDR) {
      /* A changed length is either out of range, or the record is now
       * incomplete or fails; never accepted. */
      long r = mmp__open(&rx, ct, n1, out, &len, &why);
      assert_true(r <= 0);
      assert_true(rx.next == 0);
    } else {
      expect_fail(&rx, ct, n1);
    }
    ct[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  }
  /* Intact, it opens. */
  assert_int_equal(mmp__open(&rx, ct, n1, out, &len, &why), (long)n1);
  assert_int_equal(len, 100);
}

static void test_seal_rejects_replay_reorder_and_foreign(void **state) {
  uint8_t ct[1024], out[MMP__REC_MAX];
  size_t n1, len;
  const char *why;
  mmp__seal_t rx, other;
  (void)state;

  n1 = two_records(&rx, ct);
  other = rx;
  /* Reordered: the second record first. */
  expect_fail(&rx, ct + n1, 1024 - n1);
  assert_int_equal(mmp__open(&rx, ct, n1, out, &len, &why), (long)n1);
  /* Replayed: the first again. */
  expect_fail(&rx, ct, n1);
  assert_true(mmp__open(&rx, ct + n1, 1024 - n1, out, &len, &why) > 0);
  assert_int_equal(len, 200);
  /* Sealed under another connection's key. */
  other.key[0] ^= 1;
  expect_fail(&other, ct, n1);
}

static void test_seal_incomplete_and_bad_lengths(void **state) {
  uint8_t ct[1024], out[MMP__REC_MAX];
  size_t n1, len;
  const char *why = NULL;
  mmp__seal_t rx;
  (void)state;

  n1 = two_records(&rx, ct);
  /* Truncated: every prefix waits for more and opens nothing. */
  for (size_t k = 0; k < n1; k++)
    assert_int_equal(mmp__open(&rx, ct, k, out, &len, &why), 0);
  /* Length 0 and beyond a record's maximum. */
  mmp__put_u32(ct, 0);
  expect_fail(&rx, ct, n1);
  mmp__put_u32(ct, MMP__REC_MAX + 1);
  expect_fail(&rx, ct, n1);
  mmp__put_u32(ct, 0xffffffffu);
  expect_fail(&rx, ct, n1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_auth_proofs_verify_only_as_made),
      cmocka_unit_test(test_auth_session_keys_per_direction_and_connection),
      cmocka_unit_test(test_seal_round_trip_sizes_and_splits),
      cmocka_unit_test(test_seal_rejects_tampering),
      cmocka_unit_test(test_seal_rejects_replay_reorder_and_foreign),
      cmocka_unit_test(test_seal_incomplete_and_bad_lengths),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
