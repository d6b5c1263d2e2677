/* SPDX-License-Identifier: MIT */
/*
 * Error names and messages, generated from the one MMP_ERRNO_MAP list in
 * minimp.h so that codes, names and texts can never drift apart.
 */
#include "minimp.h"

const char *mmp_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
#define MMP__ERR_MSG(name, val, msg)                                           \
  case MMP_##name:                                                             \
    return msg;
    MMP_ERRNO_MAP(MMP__ERR_MSG)
#undef MMP__ERR_MSG
  default:
    return "unknown error";
  }
}

const char *mmp_err_name(int err) {
  switch (err) {
  case 0:
    return "MMP_OK";
#define MMP__ERR_NAME(name, val, msg)                                          \
  case MMP_##name:                                                             \
    return "MMP_" #name;
    MMP_ERRNO_MAP(MMP__ERR_NAME)
#undef MMP__ERR_NAME
  default:
    return "MMP_E?";
  }
}
