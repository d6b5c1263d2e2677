/* SPDX-License-Identifier: MIT */
/*
 * The handshake proofs and sealed records of auth.h, on libsodium:
 * BLAKE2b (crypto_generichash) derives keys and hashes transcripts,
 * HMAC-SHA-512-256 (crypto_auth) makes and checks proofs, crypto_kdf splits
 * a connection's secret into one key per direction, and ChaCha20-Poly1305
 * (IETF) seals records. Every label below starts with the protocol version,
 * so a later version derives different keys and cannot be confused with
 * this one.
 */
#include "auth.h"

#include <assert.h>
#include <sodium.h>
#include <string.h>

#include "minimp.h"
#include "util.h"

#define AUTH_VERSION_LABEL "libminimp/2 "

_Static_assert(MMP__MAC_LEN == crypto_auth_BYTES, "proof size");
_Static_assert(crypto_auth_KEYBYTES == 32, "proof key size");
_Static_assert(MMP__JOB_KEY_LEN >= crypto_generichash_KEYBYTES_MIN,
               "the job key is long enough to key BLAKE2b");
_Static_assert(MMP__SESSION_KEY_LEN ==
                   crypto_aead_chacha20poly1305_ietf_KEYBYTES,
               "session key size");
_Static_assert(MMP__REC_TAG == crypto_aead_chacha20poly1305_ietf_ABYTES,
               "record tag size");
_Static_assert(crypto_kdf_KEYBYTES == 32, "kdf master key size");

static const char *const auth_kind_name[] = {"tcp", "boot", "ctrl", "mcast"};

int mmp__auth_init(void) {
  return sodium_init() < 0 ? MMP_EIO : 0;
}

void mmp__auth_nonce(uint8_t out[MMP__NONCE_LEN]) {
  randombytes_buf(out, MMP__NONCE_LEN);
}

void mmp__auth_wipe(void *p, size_t n) {
  sodium_memzero(p, n);
}

/* BLAKE2b-256 of "libminimp/2 <what> <kind>" keyed with `key`. */
static void auth_derive(uint8_t out[32], const uint8_t *key, size_t keylen,
                        const char *what, int kind) {
  crypto_generichash_state st;

  crypto_generichash_init(&st, key, keylen, 32);
  crypto_generichash_update(&st, (const uint8_t *)AUTH_VERSION_LABEL,
                            strlen(AUTH_VERSION_LABEL));
  crypto_generichash_update(&st, (const uint8_t *)what, strlen(what));
  crypto_generichash_update(&st, (const uint8_t *)auth_kind_name[kind],
                            strlen(auth_kind_name[kind]));
  crypto_generichash_final(&st, out, 32);
  sodium_memzero(&st, sizeof(st));
}

static void auth_hash_part(crypto_generichash_state *st, const void *p,
                           size_t n) {
  uint8_t len[4];

  /* Each part is prefixed with its length, so no two transcripts that
   * split their bytes differently hash alike. */
  mmp__put_u32(len, (uint32_t)n);
  crypto_generichash_update(st, len, sizeof(len));
  crypto_generichash_update(st, p, n);
}

void mmp__auth_begin(mmp__auth_t *a, const uint8_t job_key[MMP__JOB_KEY_LEN],
                     int kind, const void *dialer_msg, size_t n1,
                     const void *listener_msg, size_t n2) {
  crypto_generichash_state st;

  assert(kind >= 0 && kind < (int)MMP__ARRAY_SIZE(auth_kind_name));
  a->kind = kind;
  auth_derive(a->key, job_key, MMP__JOB_KEY_LEN, "auth ", kind);
  crypto_generichash_init(&st, NULL, 0, sizeof(a->hash));
  crypto_generichash_update(&st, (const uint8_t *)AUTH_VERSION_LABEL,
                            strlen(AUTH_VERSION_LABEL));
  auth_hash_part(&st, auth_kind_name[kind], strlen(auth_kind_name[kind]));
  auth_hash_part(&st, dialer_msg, n1);
  auth_hash_part(&st, listener_msg, n2);
  crypto_generichash_final(&st, a->hash, sizeof(a->hash));
}

/* What a proof covers: the transcript, the protocol, who proves, and what
 * it says. */
static void auth_input(const mmp__auth_t *a, int role, int verdict,
                       uint8_t in[35]) {
  memcpy(in, a->hash, 32);
  in[32] = (uint8_t)a->kind;
  in[33] = (uint8_t)role;
  in[34] = (uint8_t)verdict;
}

void mmp__auth_mac(const mmp__auth_t *a, int role, int verdict,
                   uint8_t out[MMP__MAC_LEN]) {
  uint8_t in[35];

  auth_input(a, role, verdict, in);
  crypto_auth(out, in, sizeof(in), a->key);
}

int mmp__auth_check(const mmp__auth_t *a, int role, int verdict,
                    const uint8_t mac[MMP__MAC_LEN]) {
  uint8_t in[35];

  auth_input(a, role, verdict, in);
  return crypto_auth_verify(mac, in, sizeof(in), a->key) == 0;
}

void mmp__auth_session_keys(const mmp__auth_t *a,
                            const uint8_t job_key[MMP__JOB_KEY_LEN],
                            uint8_t d2l[MMP__SESSION_KEY_LEN],
                            uint8_t l2d[MMP__SESSION_KEY_LEN]) {
  crypto_generichash_state st;
  uint8_t master[crypto_kdf_KEYBYTES];

  assert(a->kind == MMP__AUTH_TCP || a->kind == MMP__AUTH_BOOT ||
         a->kind == MMP__AUTH_CTRL);
  /* A secret of this connection alone: the job key over the transcript,
   * which holds both fresh nonces. */
  crypto_generichash_init(&st, job_key, MMP__JOB_KEY_LEN, sizeof(master));
  crypto_generichash_update(&st, (const uint8_t *)AUTH_VERSION_LABEL,
                            strlen(AUTH_VERSION_LABEL));
  crypto_generichash_update(&st, (const uint8_t *)"data", 4);
  crypto_generichash_update(&st, a->hash, sizeof(a->hash));
  crypto_generichash_final(&st, master, sizeof(master));
  crypto_kdf_derive_from_key(d2l, MMP__SESSION_KEY_LEN, 1, "mmp2data", master);
  crypto_kdf_derive_from_key(l2d, MMP__SESSION_KEY_LEN, 2, "mmp2data", master);
  sodium_memzero(master, sizeof(master));
  sodium_memzero(&st, sizeof(st));
}

void mmp__auth_dgram_keys(const uint8_t job_key[MMP__JOB_KEY_LEN],
                          mmp__dgram_keys_t *out) {
  uint8_t id[32];

  auth_derive(out->mac_key, job_key, MMP__JOB_KEY_LEN, "dgram-mac ",
              MMP__AUTH_MCAST);
  /* The id and the group are public (they travel in clear and name the
   * group), so they come from a derivation of their own, never from the
   * MAC key. */
  auth_derive(id, job_key, MMP__JOB_KEY_LEN, "dgram-id ", MMP__AUTH_MCAST);
  out->job_id = mmp__get_u64(id);
  memcpy(out->group_bits, id + 8, sizeof(out->group_bits));
  sodium_memzero(id, sizeof(id));
}

static void dgram_mac(const mmp__dgram_keys_t *k, const void *hdr, size_t nhdr,
                      const void *payload, size_t n,
                      uint8_t out[MMP__DGRAM_MAC_LEN]) {
  crypto_generichash_state st;

  crypto_generichash_init(&st, k->mac_key, sizeof(k->mac_key),
                          MMP__DGRAM_MAC_LEN);
  crypto_generichash_update(&st, hdr, nhdr);
  if (n > 0)
    crypto_generichash_update(&st, payload, n);
  crypto_generichash_final(&st, out, MMP__DGRAM_MAC_LEN);
}

void mmp__auth_dgram_mac(const mmp__dgram_keys_t *k, const void *hdr,
                         size_t nhdr, const void *payload, size_t n,
                         uint8_t out[MMP__DGRAM_MAC_LEN]) {
  dgram_mac(k, hdr, nhdr, payload, n, out);
}

int mmp__auth_dgram_check(const mmp__dgram_keys_t *k, const void *hdr,
                          size_t nhdr, const void *payload, size_t n,
                          const uint8_t mac[MMP__DGRAM_MAC_LEN]) {
  uint8_t want[MMP__DGRAM_MAC_LEN];

  dgram_mac(k, hdr, nhdr, payload, n, want);
  return sodium_memcmp(want, mac, MMP__DGRAM_MAC_LEN) == 0;
}

void mmp__auth_end(mmp__auth_t *a) {
  sodium_memzero(a, sizeof(*a));
}

/* ---- Records --------------------------------------------------------- */

uint64_t mmp__seal_size(uint64_t n) {
  uint64_t records = (n + MMP__REC_MAX - 1) / MMP__REC_MAX;

  assert(n > 0);
  return n + records * MMP__REC_OVERHEAD;
}

/* The nonce of record `number`: its number, little-endian, then zeros. */
static void
seal_nonce(uint64_t number,
           uint8_t out[crypto_aead_chacha20poly1305_ietf_NPUBBYTES]) {
  memset(out, 0, crypto_aead_chacha20poly1305_ietf_NPUBBYTES);
  mmp__put_u64(out, number);
}

void mmp__seal(mmp__seal_t *s, const struct iovec *iov, unsigned niov,
               uint64_t n, uint8_t *out, uint8_t *scratch) {
  uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
  unsigned piece = 0;
  size_t off = 0; /* into iov[piece] */

  while (n > 0) {
    size_t len = n < MMP__REC_MAX ? (size_t)n : MMP__REC_MAX;
    const uint8_t *plain;

    while (piece < niov && off == iov[piece].iov_len) {
      piece++;
      off = 0;
    }
    assert(piece < niov);
    if (iov[piece].iov_len - off >= len) {
      /* The common case for large payloads: no gathering copy. */
      plain = (const uint8_t *)iov[piece].iov_base + off;
      off += len;
    } else {
      size_t have = 0;
      while (have < len) {
        size_t take = iov[piece].iov_len - off;
        if (take > len - have)
          take = len - have;
        memcpy(scratch + have, (const uint8_t *)iov[piece].iov_base + off,
               take);
        have += take;
        off += take;
        if (off == iov[piece].iov_len && have < len) {
          piece++;
          off = 0;
          assert(piece < niov);
        }
      }
      plain = scratch;
    }
    mmp__put_u32(out, (uint32_t)len);
    seal_nonce(s->next++, nonce);
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(
        out + MMP__REC_HDR, out + MMP__REC_HDR + len, NULL, plain, len, out,
        MMP__REC_HDR, NULL, nonce, s->key);
    out += MMP__REC_OVERHEAD + len;
    n -= len;
  }
}

long mmp__open(mmp__seal_t *s, const uint8_t *in, size_t avail, uint8_t *out,
               size_t *plain, const char **why) {
  uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
  uint32_t len;

  if (avail < MMP__REC_HDR)
    return 0;
  len = mmp__get_u32(in);
  if (len == 0 || len > MMP__REC_MAX) {
    *why = "sealed record with a bad length";
    return MMP_EPROTO;
  }
  if (avail < (size_t)len + MMP__REC_OVERHEAD)
    return 0;
  seal_nonce(s->next, nonce);
  if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
          out, NULL, in + MMP__REC_HDR, len, in + MMP__REC_HDR + len, in,
          MMP__REC_HDR, nonce, s->key) != 0) {
    *why = "sealed record fails authentication (altered, replayed, "
           "reordered or foreign)";
    return MMP_EPROTO;
  }
  s->next++;
  *plain = len;
  return (long)len + MMP__REC_OVERHEAD;
}
