/* SPDX-License-Identifier: MIT */
/* minimp.h must compile on its own, with nothing included before it. */
#include "minimp.h"

int main(void) {
  mmp_status_t st = {0};
  return st.error == MMP_OK && MMP_ETRUNC < 0 ? 0 : 1;
}
