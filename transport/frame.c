/* SPDX-License-Identifier: MIT */
/*
 * Encoding and validation of transport frame headers and of the HELLO
 * payload. All multi-byte fields are little-endian regardless of the host.
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
      "?",   "HELLO", "HELLO_ACK", "HELLO_NACK", "EAGER", "RTS",
      "CTS", "DATA",  "CREDIT",    "BYE",        "PING"};
  return type < MMP__ARRAY_SIZE(names) ? names[type] : "?";
}

void mmp__hello_encode(const uint8_t key[MMP__JOB_KEY_LEN], uint32_t rank,
                       uint32_t size, uint8_t out[MMP__HELLO_LEN]) {
  memcpy(out, key, MMP__JOB_KEY_LEN);
  mmp__put_u32(out + 16, rank);
  mmp__put_u32(out + 20, size);
  mmp__put_u64(out + 24, 0);
}

int mmp__hello_decode(const uint8_t in[MMP__HELLO_LEN],
                      uint8_t key[MMP__JOB_KEY_LEN], uint32_t *rank,
                      uint32_t *size) {
  if (mmp__get_u64(in + 24) != 0)
    return MMP_EPROTO;
  memcpy(key, in, MMP__JOB_KEY_LEN);
  *rank = mmp__get_u32(in + 16);
  *size = mmp__get_u32(in + 20);
  return 0;
}
