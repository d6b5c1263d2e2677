/* SPDX-License-Identifier: MIT */
/*
 * Tests that talk to a rank's port by hand: the HELLO frame a connecting
 * rank sends first. Header-only; needs transport/frame.h.
 */
#ifndef MMP_TESTS_HELLO_UTIL_H
#define MMP_TESTS_HELLO_UTIL_H

#include <stdint.h>
#include <string.h>

#include "transport/frame.h"

/* Writes the HELLO of rank `rank` of a job of `size` holding `key`: a
 * frame header numbered 0 followed by its payload. */
static inline void hello_frame(uint8_t out[MMP__FRAME_HDR_SIZE +
                                           MMP__HELLO_LEN],
                               const uint8_t key[MMP__JOB_KEY_LEN],
                               uint32_t rank, uint32_t size) {
  mmp__frame_hdr_t h;

  memset(&h, 0, sizeof(h));
  h.type = MMP__F_HELLO;
  h.src = rank;
  h.len = MMP__HELLO_LEN;
  mmp__frame_encode(&h, out);
  mmp__hello_encode(key, rank, size, out + MMP__FRAME_HDR_SIZE);
}

#endif /* MMP_TESTS_HELLO_UTIL_H */
