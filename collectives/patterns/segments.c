/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic of segments: a message cut into segments, even cuts,
 * the pipelined chain's optimal segment, and the reductions' segment that
 * hides their arithmetic.
 */
#include <math.h>

#include "collectives/patterns/segments.h"

int mmp__poison_len_ok(uint64_t len, uint64_t seg) {
  return len <= SIZE_MAX && (seg == 0 || len / seg < MMP__POISON_MAX_SEGS);
}

size_t mmp__even_seg(size_t len, double target) {
  size_t k;

  if (!(target > 0) || target >= (double)len)
    return 0;
  k = (size_t)((double)len / target); /* >= 1: each part at least target */
  return k <= 1 ? 0 : len / k + (len % k != 0);
}

size_t mmp__seg_count(size_t len, size_t seg) {
  if (seg == 0 || len <= seg)
    return 1;
  return (len + seg - 1) / seg;
}

void mmp__seg_range(size_t len, size_t seg, size_t k, size_t *off, size_t *n) {
  if (seg == 0 || len <= seg) {
    *off = 0;
    *n = len;
    return;
  }
  *off = k * seg;
  *n = len - *off < seg ? len - *off : seg;
}

#define SEG_MIN 4096.0

size_t mmp__pipeline_seg(int p, size_t len, const mmp_netmodel_t *nm) {
  double m = (double)len;
  double X = p > 2 && nm->alpha > 0
                 ? sqrt((double)(p - 2) * m * nm->beta / nm->alpha)
                 : 1;
  double seg = X > 1 ? m / X : m;

  /* Not cut evenly (mmp__even_seg): the segment would then depend on the
   * exact length, and ranks that disagree on it by a few bytes would cut
   * differently, so that the arrival-aware broadcasts, which run this
   * pipeline, waited instead of reporting the mismatch. With a fixed
   * 4 KiB floor both cut alike. */
  if (seg < SEG_MIN)
    seg = SEG_MIN;
  return seg >= m ? 0 : (size_t)seg;
}

size_t mmp__coll_seg(int p, size_t len, size_t esize,
                     const mmp_netmodel_t *nm) {
  double block = (double)len / (p > 1 ? p : 1), x;
  size_t seg;

  /* S segments per block cost (S - 1) alpha more and hide all but
   * block gamma / S of the arithmetic: S = sqrt(block gamma / alpha). */
  if (nm->gamma <= 0 || nm->alpha <= 0)
    return 0;
  x = sqrt(block * nm->gamma / nm->alpha);
  if (x < 2)
    return 0;
  seg = (size_t)(block / x);
  if (seg < 8192)
    seg = 8192;
  seg -= seg % esize;
  return seg >= block ? 0 : seg;
}
