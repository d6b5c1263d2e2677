/* SPDX-License-Identifier: MIT */
/*
 * Segments: a message cut into pieces that a pipeline forwards one after
 * the other (segments.c).
 */
#ifndef MMP_COLLECTIVES_PATTERNS_SEGMENTS_H
#define MMP_COLLECTIVES_PATTERNS_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "minimp.h"

/* Number of segments of `len` in pieces of `seg` (1 when seg is 0 or len
 * fits); segment k's offset and length. */
size_t mmp__seg_count(size_t len, size_t seg);
void mmp__seg_range(size_t len, size_t seg, size_t k, size_t *off, size_t *n);

/* A segment size that cuts `len` bytes into equal parts of at least
 * `target` bytes (the last at most k - 1 bytes shorter, for k parts); 0
 * when that is one part. A cut at `target` exactly can leave a sliver
 * (4096 + 273 bytes), a message that costs a whole alpha for almost no
 * data. */
size_t mmp__even_seg(size_t len, double target);

/* Whether a rank that disagrees with its sender may rebuild its plan
 * from the sender's length `len` cut in `seg`-byte segments (0: whole):
 * at most MMP__POISON_MAX_SEGS segments, and a length this machine can
 * address. */
#define MMP__POISON_MAX_SEGS (1u << 20)
int mmp__poison_len_ok(uint64_t len, uint64_t seg);

/* The pipelined chain's segment under `nm`: the optimum X =
 * sqrt((p - 2) m beta / alpha) segments, each at least 4 KiB; 0 (the whole
 * message at once) when that is a single segment. AUTO and a pipeline
 * asked for without a segment use the same. */
size_t mmp__pipeline_seg(int p, size_t len, const mmp_netmodel_t *nm);

/* The segment of a segmented reduction: cuts of at least 8 KiB that
 * balance a segment's alpha against the arithmetic it hides, on element
 * boundaries; 0 for one segment. */
size_t mmp__coll_seg(int p, size_t len, size_t esize, const mmp_netmodel_t *nm);

#endif /* MMP_COLLECTIVES_PATTERNS_SEGMENTS_H */
