/* SPDX-License-Identifier: MIT */
/*
 * The wire frame of libminimp's transport: a fixed 64-byte little-endian
 * header followed by `len` payload bytes. Every connection carries only
 * these frames, starting with a HELLO handshake. This file is pure codec: no
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

#define MMP__FRAME_MAGIC 0x46504d4du /* 'M' 'M' 'P' 'F' in memory order */
#define MMP__FRAME_VERSION 1
#define MMP__FRAME_HDR_SIZE 64

typedef enum mmp__frame_type {
  MMP__F_HELLO = 1,      /* handshake from the connecting side */
  MMP__F_HELLO_ACK = 2,  /* handshake reply: accepted */
  MMP__F_HELLO_NACK = 3, /* handshake reply: refused (a0 = reason) */
  MMP__F_EAGER = 4,      /* whole message inline; a0 = message length */
  MMP__F_RTS = 5,        /* a0 = sender cookie, a1 = message length */
  MMP__F_CTS = 6,        /* a0 = sender cookie, a1 = receiver cookie,
                            a2 = bytes the receiver accepts */
  MMP__F_DATA = 7,       /* a0 = receiver cookie, a1 = offset */
  MMP__F_CREDIT = 8,     /* a0 = eager bytes returned; flag REQ asks back */
  MMP__F_BYE = 9,        /* orderly close: no more frames follow */
  MMP__F_PING = 10,      /* liveness probe; flag REQ asks for a reply */
  MMP__F_TYPE_MAX = 10
} mmp__frame_type_t;

/* Flags. */
#define MMP__FF_REQ 0x0001u /* CREDIT/PING: the peer should answer */

/* HELLO payload: key[16], rank u32, size u32, reserved u64. */
#define MMP__HELLO_LEN 32
#define MMP__JOB_KEY_LEN 16

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

/* Encodes / decodes the HELLO payload. Decode returns 0 or MMP_EPROTO. */
void mmp__hello_encode(const uint8_t key[MMP__JOB_KEY_LEN], uint32_t rank,
                       uint32_t size, uint8_t out[MMP__HELLO_LEN]);
int mmp__hello_decode(const uint8_t in[MMP__HELLO_LEN],
                      uint8_t key[MMP__JOB_KEY_LEN], uint32_t *rank,
                      uint32_t *size);

#endif /* MMP_TRANSPORT_FRAME_H */
