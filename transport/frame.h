/* SPDX-License-Identifier: MIT */
/*
 * The wire frame of libminimp's transport: a fixed 64-byte little-endian
 * header followed by `len` payload bytes. Every connection carries only
 * these frames, starting with a handshake (HELLO, CHALLENGE, PROOF, then
 * HELLO_ACK or HELLO_NACK; docs/security.md). This file is pure codec: no
 * sockets, so it is unit-tested on its own.
 *
 *  off size field
 *    0    4 magic    "MMPF"
 *    4    1 version  MMP__FRAME_VERSION
 *    5    1 type     mmp__frame_type
 *    6    2 flags    type-specific
 *    8    4 comm     communicator context id
 *   12    4 tag      signed; user tags >= 0
 *   16    4 src      sender's world rank
 *   20    4 reserved must be zero
 *   24    8 seq      per-connection, per-direction frame counter
 *   32    8 len      payload bytes that follow the header
 *   40    8 a0 \
 *   48    8 a1  } type-specific arguments (cookies, sizes, credit)
 *   56    8 a2 /
 */
#ifndef MMP_TRANSPORT_FRAME_H
#define MMP_TRANSPORT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h" /* MMP__JOB_KEY_LEN, MMP__NONCE_LEN, MMP__MAC_LEN */

#define MMP__FRAME_MAGIC 0x46504d4du /* 'M' 'M' 'P' 'F' in memory order */
/* 2: the key never travels; a challenge-response handshake proves it. */
#define MMP__FRAME_VERSION 2
#define MMP__FRAME_HDR_SIZE 64

typedef enum mmp__frame_type {
  MMP__F_HELLO = 1,      /* the dialer's greeting (mmp__greet_t) */
  MMP__F_HELLO_ACK = 2,  /* the listener's proof: accepted */
  MMP__F_HELLO_NACK = 3, /* the listener's proof: refused (a0 = reason) */
  MMP__F_EAGER = 4,      /* whole message inline; a0 = message length */
  MMP__F_RTS = 5,        /* a0 = sender cookie, a1 = message length */
  MMP__F_CTS = 6,        /* a0 = sender cookie, a1 = receiver cookie,
                            a2 = bytes the receiver accepts */
  MMP__F_DATA = 7,       /* a0 = receiver cookie, a1 = offset */
  MMP__F_CREDIT = 8,     /* a0 = eager bytes returned; flag REQ asks back */
  MMP__F_BYE = 9,        /* orderly close: no more frames follow */
  MMP__F_PING = 10,      /* liveness probe; flag REQ asks for a reply */
  MMP__F_CHALLENGE = 11, /* the listener's greeting (mmp__greet_t) */
  MMP__F_PROOF = 12,     /* the dialer's proof */
  MMP__F_TYPE_MAX = 12
} mmp__frame_type_t;

/* Flags. */
#define MMP__FF_REQ 0x0001u /* CREDIT/PING: the peer should answer */

/*
 * The greeting each side sends first (HELLO from the dialer, CHALLENGE
 * from the listener), 48 bytes: nonce[32], rank u32, size u32, peer u32
 * (the rank the dialer means to reach; MMP__GREET_ANY from the listener),
 * flags u32 (MMP__GREET_*). PROOF, HELLO_ACK and HELLO_NACK carry a
 * MMP__MAC_LEN proof (auth.h).
 */
#define MMP__GREET_LEN 48
#define MMP__GREET_ANY 0xffffffffu
#define MMP__GREET_ENCRYPT 0x1u /* frames after the handshake are sealed */

typedef struct mmp__greet_s {
  uint8_t nonce[MMP__NONCE_LEN];
  uint32_t rank;
  uint32_t size;
  uint32_t peer;
  uint32_t flags;
} mmp__greet_t;

/* HELLO_NACK reasons (a0). */
enum {
  MMP__NACK_DUPLICATE = 1 /* both sides connected; the lower rank's wins */
};

typedef struct mmp__frame_hdr_s {
  uint8_t version;
  uint8_t type;
  uint16_t flags;
  uint32_t comm;
  int32_t tag;
  uint32_t src;
  uint64_t seq;
  uint64_t len;
  uint64_t a0;
  uint64_t a1;
  uint64_t a2;
} mmp__frame_hdr_t;

/* Writes the 64-byte wire form of `h` (magic and version filled in). */
void mmp__frame_encode(const mmp__frame_hdr_t *h,
                       uint8_t out[MMP__FRAME_HDR_SIZE]);

/*
 * Parses and validates 64 bytes. Checks magic, version, type, the reserved
 * word and that len <= max_len. On failure returns MMP_EPROTO or
 * MMP_ETOOBIG and points *why at a static description; *h is then
 * unspecified.
 */
int mmp__frame_decode(const uint8_t in[MMP__FRAME_HDR_SIZE], uint64_t max_len,
                      mmp__frame_hdr_t *h, const char **why);

/* Returns a static name for a frame type ("EAGER"), "?" if unknown. */
const char *mmp__frame_type_name(unsigned type);

/* 1 if frames of `type` belong to the handshake. */
int mmp__frame_is_handshake(unsigned type);

/* The payload length a handshake frame of `type` must have. */
uint64_t mmp__frame_hs_len(unsigned type);

/* Encodes / decodes a greeting. Decode returns 0, or MMP_EPROTO for flags
 * this version does not know. */
void mmp__greet_encode(const mmp__greet_t *g, uint8_t out[MMP__GREET_LEN]);
int mmp__greet_decode(const uint8_t in[MMP__GREET_LEN], mmp__greet_t *g);

#endif /* MMP_TRANSPORT_FRAME_H */
