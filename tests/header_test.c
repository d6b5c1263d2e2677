/* SPDX-License-Identifier: MIT */
/* minimp.h must compile on its own, with nothing included before it, and
 * keep compiling the programs written before algorithms were chosen by
 * name (the deprecated macros). */
#undef MMP_NO_DEPRECATED
#include "minimp.h"

int main(void) {
  mmp_status_t st = {0};
  /* Options by field name; the former enumerators as names. */
  mmp_coll_opts_t named = {.algorithm = "knomial", .radix = 4};
  mmp_bcast_opts_t old = MMP_BCAST_OPTS_INIT;
  mmp_allreduce_opts_t red = MMP_ALLREDUCE_OPTS_INIT;

  old.algorithm = MMP_BCAST_HIERARCHICAL;
  old.inner = MMP_BCAST_BINARY;
  old.outer = MMP_BCAST_AUTO;
  red.algorithm = MMP_ALLREDUCE_RING;
  return st.error == MMP_OK && MMP_ETRUNC < 0 && named.radix == 4 &&
                 old.outer == 0 && red.algorithm[0] == 'r'
             ? 0
             : 1;
}
