/* SPDX-License-Identifier: MIT */
/*
 * Error names and messages, generated from the one MMP_ERRNO_MAP list in
 * minimp.h so that codes, names and texts can never drift apart; what an
 * error does (returned, or fatal to the job); and where log lines go.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "internal.h"

/* MINIMP_ERRORS=fatal / mmp_set_errors_fatal: read by every thread. */
static atomic_int errors_fatal;
/* Public calls this thread is inside; only the outermost one judges its
 * result, so that a fatal error names the call the program made. */
static _Thread_local int errors_depth;

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

int mmp_set_errors_fatal(int on) {
  return atomic_exchange(&errors_fatal, on != 0);
}

void mmp__api_enter(void) {
  errors_depth++;
}

int mmp__api_leave(int rc, const char *fn) {
  assert(errors_depth > 0); /* paired with mmp__api_enter */
  if (--errors_depth == 0 && rc < 0 && atomic_load(&errors_fatal)) {
    char why[160];
    snprintf(why, sizeof(why), "%s failed: %s (%s)", fn, mmp_err_name(rc),
             mmp_strerror(rc));
    MMP__LOG(MMP__LOG_ERROR, "%s; errors are fatal, aborting", why);
    mmp__abort_with(MMP_FATAL_EXIT, why);
  }
  return rc;
}

int mmp__api_wait(int rc, mmp_request_t **req, const char *fn) {
  return mmp__api_leave(rc != 0 ? rc : mmp_wait(req, MMP_STATUS_IGNORE), fn);
}

int mmp_set_log_fn(mmp_log_fn fn, void *userdata) {
  return mmp__log_set_sink((mmp__log_sink_fn)fn, userdata);
}

int mmp_set_log_level(int level) {
  if (level < MMP_LOG_ERROR || level > MMP_LOG_DEBUG)
    return MMP_EINVAL;
  mmp__log_level = level;
  return 0;
}
