/* SPDX-License-Identifier: MIT */
/*
 * Builds the transport's handshake frames by hand, for tests that play a
 * peer over a raw socket (test_tcp, mr_badinput): a frame with any header
 * fields, a greeting, and the dialer's proof over two greetings.
 */
#ifndef MMP_TESTS_HS_UTIL_H
#define MMP_TESTS_HS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "transport/auth.h"
#include "transport/frame.h"

/* A frame: header (type, seq, src, the length field `len`, `version`)
 * and `n` payload bytes. Returns its size. */
static inline size_t hs_frame(uint8_t *out, uint8_t type, uint64_t seq,
                              uint32_t src, uint64_t len, uint8_t version,
                              const uint8_t *payload, size_t n) {
  mmp__frame_hdr_t h;

  memset(&h, 0, sizeof(h));
  h.type = type;
  h.seq = seq;
  h.src = src;
  h.len = len;
  mmp__frame_encode(&h, out);
  out[4] = version;
  memcpy(out + MMP__FRAME_HDR_SIZE, payload, n);
  return MMP__FRAME_HDR_SIZE + n;
}

/* A greeting with a fresh nonce. */
static inline void hs_greeting(uint8_t out[MMP__GREET_LEN], uint32_t rank,
                               uint32_t size, uint32_t peer, uint32_t flags) {
  mmp__greet_t g;

  mmp__auth_nonce(g.nonce);
  g.rank = rank;
  g.size = size;
  g.peer = peer;
  g.flags = flags;
  mmp__greet_encode(&g, out);
}

/* The dialer's proof under `key` over its HELLO and the CHALLENGE. */
static inline void hs_proof(uint8_t mac[MMP__MAC_LEN], const uint8_t *key,
                            const uint8_t *hello, const uint8_t *challenge) {
  mmp__auth_t a;

  mmp__auth_begin(&a, key, MMP__AUTH_TCP, hello, MMP__GREET_LEN, challenge,
                  MMP__GREET_LEN);
  mmp__auth_mac(&a, MMP__AUTH_DIALER, MMP__AUTH_PROVE, mac);
  mmp__auth_end(&a);
}

#endif /* MMP_TESTS_HS_UTIL_H */
