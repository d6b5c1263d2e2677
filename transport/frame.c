/* SPDX-License-Identifier: MIT */
/*
 * Encoding and validation of transport frame headers and of the
 * handshake's greetings. All multi-byte fields are little-endian regardless of
 * the host.
 */
#include "frame.h"

#include "minimp.h"
#include "util.h"

void mmp__frame_encode(const mmp__frame_hdr_t *h,
                       uint8_t out[MMP__FRAME_HDR_SIZE]) {
  mmp__put_u32(out + 0, MMP__FRAME_MAGIC);
  out[4] = MMP__FRAME_VERSION;
  out[5] = h->type;
  mmp__put_u16(out + 6, h->flags);
  mmp__put_u32(out + 8, h->comm);
  mmp__put_u32(out + 12, (uint32_t)h->tag);
  mmp__put_u32(out + 16, h->src);
  mmp__put_u32(out + 20, 0);
  mmp__put_u64(out + 24, h->seq);
  mmp__put_u64(out + 32, h->len);
  mmp__put_u64(out + 40, h->a0);
  mmp__put_u64(out + 48, h->a1);
  mmp__put_u64(out + 56, h->a2);
}

int mmp__frame_decode(const uint8_t in[MMP__FRAME_HDR_SIZE], uint64_t max_len,
                      mmp__frame_hdr_t *h, const char **why) {
  if (mmp__get_u32(in) != MMP__FRAME_MAGIC) {
    *why = "bad magic";
    return MMP_EPROTO;
  }
  h->version = in[4];
  if (h->version == 1) {
    *why = "peer speaks protocol version 1, which sent the job key in clear "
           "(an older libminimp); this one speaks version 2";
    return MMP_EPROTO;
  }
  if (h->version != MMP__FRAME_VERSION) {
    *why = "unsupported protocol version";
    return MMP_EPROTO;
  }
  h->type = in[5];
  if (h->type == 0 || h->type > MMP__F_TYPE_MAX) {
    *why = "unknown frame type";
    return MMP_EPROTO;
  }
  if (mmp__get_u32(in + 20) != 0) {
    *why = "reserved header field is not zero";
    return MMP_EPROTO;
  }
  h->flags = mmp__get_u16(in + 6);
  h->comm = mmp__get_u32(in + 8);
  h->tag = (int32_t)mmp__get_u32(in + 12);
  h->src = mmp__get_u32(in + 16);
  h->seq = mmp__get_u64(in + 24);
  h->len = mmp__get_u64(in + 32);
  h->a0 = mmp__get_u64(in + 40);
  h->a1 = mmp__get_u64(in + 48);
  h->a2 = mmp__get_u64(in + 56);
  if (h->len > max_len) {
    *why = "payload length exceeds the configured maximum";
    return MMP_ETOOBIG;
  }
  return 0;
}

const char *mmp__frame_type_name(unsigned type) {
  static const char *const names[] = {
      "?",    "HELLO",  "HELLO_ACK", "HELLO_NACK", "EAGER",     "RTS",  "CTS",
      "DATA", "CREDIT", "BYE",       "PING",       "CHALLENGE", "PROOF"};
  return type < MMP__ARRAY_SIZE(names) ? names[type] : "?";
}

int mmp__frame_is_handshake(unsigned type) {
  return type == MMP__F_HELLO || type == MMP__F_HELLO_ACK ||
         type == MMP__F_HELLO_NACK || type == MMP__F_CHALLENGE ||
         type == MMP__F_PROOF;
}

uint64_t mmp__frame_hs_len(unsigned type) {
  return type == MMP__F_HELLO || type == MMP__F_CHALLENGE ? MMP__GREET_LEN
                                                          : MMP__MAC_LEN;
}

void mmp__greet_encode(const mmp__greet_t *g, uint8_t out[MMP__GREET_LEN]) {
  memcpy(out, g->nonce, MMP__NONCE_LEN);
  mmp__put_u32(out + 32, g->rank);
  mmp__put_u32(out + 36, g->size);
  mmp__put_u32(out + 40, g->peer);
  mmp__put_u32(out + 44, g->flags);
}

int mmp__greet_decode(const uint8_t in[MMP__GREET_LEN], mmp__greet_t *g) {
  memcpy(g->nonce, in, MMP__NONCE_LEN);
  g->rank = mmp__get_u32(in + 32);
  g->size = mmp__get_u32(in + 36);
  g->peer = mmp__get_u32(in + 40);
  g->flags = mmp__get_u32(in + 44);
  return (g->flags & ~MMP__GREET_ENCRYPT) != 0 ? MMP_EPROTO : 0;
}
