/* SPDX-License-Identifier: MIT */
/*
 * Error classes, codes and handlers. An error code is its class, with
 * libminimp's own code (when the failure came from libminimp) kept in the
 * bits above, so that MPI_Error_class gives the class the standard names
 * and MPI_Error_string also says what libminimp saw. A failed call hands
 * its code to the error handler of its communicator: MPI_ERRORS_ARE_FATAL
 * (the default) prints it and aborts the job through mmp_abort,
 * MPI_ERRORS_RETURN returns it, a user handler is called and it returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpii.h"

#define CLASS_BITS 7
#define CLASS_MASK ((1 << CLASS_BITS) - 1)

struct mmpi_errh_s mmpi_errors_are_fatal = {MMPI__EH_FATAL, NULL, 1};
struct mmpi_errh_s mmpi_errors_return = {MMPI__EH_RETURN, NULL, 1};

static const char *class_text(int cls) {
  switch (cls) {
  case MPI_SUCCESS:
    return "MPI_SUCCESS: no errors";
  case MPI_ERR_BUFFER:
    return "MPI_ERR_BUFFER: invalid buffer";
  case MPI_ERR_COUNT:
    return "MPI_ERR_COUNT: invalid count";
  case MPI_ERR_TYPE:
    return "MPI_ERR_TYPE: invalid datatype";
  case MPI_ERR_TAG:
    return "MPI_ERR_TAG: invalid tag";
  case MPI_ERR_COMM:
    return "MPI_ERR_COMM: invalid communicator";
  case MPI_ERR_RANK:
    return "MPI_ERR_RANK: invalid rank";
  case MPI_ERR_REQUEST:
    return "MPI_ERR_REQUEST: invalid request";
  case MPI_ERR_ROOT:
    return "MPI_ERR_ROOT: invalid root";
  case MPI_ERR_GROUP:
    return "MPI_ERR_GROUP: invalid group";
  case MPI_ERR_OP:
    return "MPI_ERR_OP: invalid reduction operation";
  case MPI_ERR_ARG:
    return "MPI_ERR_ARG: invalid argument";
  case MPI_ERR_UNKNOWN:
    return "MPI_ERR_UNKNOWN: unknown error";
  case MPI_ERR_TRUNCATE:
    return "MPI_ERR_TRUNCATE: message truncated";
  case MPI_ERR_OTHER:
    return "MPI_ERR_OTHER: other error";
  case MPI_ERR_INTERN:
    return "MPI_ERR_INTERN: internal error";
  case MPI_ERR_IN_STATUS:
    return "MPI_ERR_IN_STATUS: error code in status";
  case MPI_ERR_PENDING:
    return "MPI_ERR_PENDING: pending request";
  case MPI_ERR_INFO_KEY:
    return "MPI_ERR_INFO_KEY: invalid info key";
  case MPI_ERR_INFO_VALUE:
    return "MPI_ERR_INFO_VALUE: invalid info value";
  case MPI_ERR_INFO_NOKEY:
    return "MPI_ERR_INFO_NOKEY: no such info key";
  case MPI_ERR_INFO:
    return "MPI_ERR_INFO: invalid info object";
  case MPI_ERR_KEYVAL:
    return "MPI_ERR_KEYVAL: invalid attribute key";
  case MPI_ERR_NO_MEM:
    return "MPI_ERR_NO_MEM: out of memory";
  case MPI_ERR_UNSUPPORTED_OPERATION:
    return "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported";
  case MPIX_ERR_PROC_FAILED:
    return "MPIX_ERR_PROC_FAILED: a process was lost";
  case MPIX_ERR_TIMEOUT:
    return "MPIX_ERR_TIMEOUT: timed out";
  default:
    return cls > 0 && cls <= MPI_ERR_RMA_FLAVOR ? "error class of MPI-3.1"
                                                : NULL;
  }
}

int mmpi__code(int mmp) {
  int cls;

  switch (mmp) {
  case 0:
    return MPI_SUCCESS;
  case MMP_ETRUNC:
    cls = MPI_ERR_TRUNCATE;
    break;
  case MMP_ERANK:
    cls = MPI_ERR_RANK;
    break;
  case MMP_ETAG:
    cls = MPI_ERR_TAG;
    break;
  case MMP_ECOMM:
    cls = MPI_ERR_COMM;
    break;
  case MMP_ENOMEM:
    cls = MPI_ERR_NO_MEM;
    break;
  case MMP_EPEERLOST:
    cls = MPIX_ERR_PROC_FAILED;
    break;
  case MMP_ETIMEDOUT:
    cls = MPIX_ERR_TIMEOUT;
    break;
  case MMP_EINVAL:
  case MMP_EMISMATCH:
    cls = MPI_ERR_ARG;
    break;
  case MMP_ETOOBIG:
    cls = MPI_ERR_COUNT;
    break;
  case MMP_ENOTSUP:
    cls = MPI_ERR_UNSUPPORTED_OPERATION;
    break;
  case MMP_EINTERNAL:
    cls = MPI_ERR_INTERN;
    break;
  default:
    cls = MPI_ERR_OTHER;
    break;
  }
  return mmp < 0 && -mmp < (MPI_ERR_LASTCODE >> CLASS_BITS)
             ? cls | (-mmp << CLASS_BITS)
             : cls;
}

int MPI_Error_class(int errorcode, int *errorclass) {
  if (errorclass == NULL || errorcode < 0 || errorcode > MPI_ERR_LASTCODE ||
      class_text(errorcode & CLASS_MASK) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  *errorclass = errorcode & CLASS_MASK;
  return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen) {
  const char *text;
  int n, mmp;

  if (string == NULL || resultlen == NULL || errorcode < 0 ||
      errorcode > MPI_ERR_LASTCODE ||
      (text = class_text(errorcode & CLASS_MASK)) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  mmp = -(errorcode >> CLASS_BITS);
  if (mmp != 0)
    n = snprintf(string, MPI_MAX_ERROR_STRING, "%s; libminimp: %s (%s)", text,
                 mmp_strerror(mmp), mmp_err_name(mmp));
  else
    n = snprintf(string, MPI_MAX_ERROR_STRING, "%s", text);
  *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
  return MPI_SUCCESS;
}

/* The handler's action for a fatal error: the message, then the job's
 * end. */
static void fatal(MPI_Comm comm, int code, const char *fn) {
  char text[MPI_MAX_ERROR_STRING];
  int n, rank = mmpi_comm_world.rank;

  if (MPI_Error_string(code, text, &n) != MPI_SUCCESS)
    snprintf(text, sizeof(text), "error code %d", code);
  fprintf(stderr,
          "MPI error on rank %d in %s (communicator %s): %s; "
          "MPI_ERRORS_ARE_FATAL: aborting the job\n",
          rank, fn, comm->name[0] ? comm->name : "unnamed", text);
  fflush(stderr);
  if (mmp_initialized())
    mmp_abort(MMP_FATAL_EXIT);
  exit(MMP_FATAL_EXIT);
}

int mmpi__raise(MPI_Comm comm, int code, const char *fn) {
  MPI_Errhandler eh;

  if (code == MPI_SUCCESS)
    return code;
  /* A freed communicator's requests still raise on it. */
  if (!mmpi__comm_ok(comm) && (comm == MPI_COMM_NULL || !comm->freed))
    comm = MPI_COMM_WORLD;
  eh = comm->eh != NULL ? comm->eh : MPI_ERRORS_ARE_FATAL;
  if (eh->kind == MMPI__EH_FATAL)
    fatal(comm, code, fn);
  if (eh->kind == MMPI__EH_USER) {
    MPI_Comm c = comm;
    int e = code;
    eh->fn(&c, &e);
  }
  return code;
}

void mmpi__errh_retain(MPI_Errhandler eh) {
  if (eh->kind == MMPI__EH_USER)
    atomic_fetch_add(&eh->refs, 1);
}

void mmpi__errh_release(MPI_Errhandler eh) {
  if (eh->kind == MMPI__EH_USER && atomic_fetch_sub(&eh->refs, 1) == 1)
    free(eh);
}

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn,
                               MPI_Errhandler *errhandler) {
  MPI_Errhandler eh;

  if (fn == NULL || errhandler == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  if ((eh = calloc(1, sizeof(*eh))) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  eh->kind = MMPI__EH_USER;
  eh->fn = fn;
  atomic_init(&eh->refs, 1);
  *errhandler = eh;
  return MPI_SUCCESS;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  MPI_Errhandler old;

  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (errhandler == MPI_ERRHANDLER_NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  mmpi__errh_retain(errhandler);
  pthread_mutex_lock(&mmpi__mu);
  old = comm->eh;
  comm->eh = errhandler;
  pthread_mutex_unlock(&mmpi__mu);
  if (old != NULL)
    mmpi__errh_release(old);
  return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (errhandler == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  pthread_mutex_lock(&mmpi__mu);
  *errhandler = comm->eh;
  mmpi__errh_retain(comm->eh);
  pthread_mutex_unlock(&mmpi__mu);
  return MPI_SUCCESS;
}

int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  (void)mmpi__raise(comm, errorcode, __func__);
  return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *errhandler) {
  if (errhandler == NULL || *errhandler == MPI_ERRHANDLER_NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  mmpi__errh_release(*errhandler);
  *errhandler = MPI_ERRHANDLER_NULL;
  return MPI_SUCCESS;
}
