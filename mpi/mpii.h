/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of libminimp-mpi: the objects behind MPI's handles
 * and what the files of mpi/ share. Every MPI call is a thin mapping onto
 * minimp.h: communicators wrap an mmp_comm_t, requests an mmp_request_t,
 * and data moves through libminimp in place when the datatype is
 * contiguous, or packed into a buffer of the request around the call
 * when it is not (docs/mpi.md).
 *
 * Locking: mmpi__mu guards what is shared between handles (keyvals, the
 * attributes of communicators, the attached buffer, the requests freed
 * while active, the element types of reductions). One object is used by
 * one thread at a time, as MPI requires of requests and of collectives on
 * one communicator.
 */
#ifndef MMPI_INTERNAL_H
#define MMPI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "minimp.h"
#include "mpi.h"

/* ---- Shared state (env.c) ---------------------------------------------- */

extern pthread_mutex_t mmpi__mu;
/* 0 before MPI_Init, 1 initialised, 2 finalized. */
extern atomic_int mmpi__state;
/* MPI_Init_thread's answer. */
extern int mmpi__thread_level;

/* ---- Errors (errors.c) -------------------------------------------------- */

struct mmpi_errh_s {
  int kind; /* MMPI__EH_* */
  MPI_Comm_errhandler_function *fn;
  atomic_int refs; /* user handlers: handles and communicators holding it */
};
enum { MMPI__EH_FATAL = 1, MMPI__EH_RETURN, MMPI__EH_USER };

/* The MPI error code of libminimp's `mmp` (< 0): its class, with the
 * libminimp code kept above it for MPI_Error_string. 0 stays 0. */
int mmpi__code(int mmp);
/* Hands error `code` of `fn` to `comm`'s error handler (MPI_COMM_WORLD's
 * when comm is NULL or invalid) and returns it; 0 returns 0 at once. */
int mmpi__raise(MPI_Comm comm, int code, const char *fn);
/* The same for a libminimp result. */
static inline int mmpi__fail(MPI_Comm comm, int mmp, const char *fn) {
  return mmp == 0 ? 0 : mmpi__raise(comm, mmpi__code(mmp), fn);
}
void mmpi__errh_retain(MPI_Errhandler eh);
void mmpi__errh_release(MPI_Errhandler eh);

/* ---- Groups and communicators (comm.c) ---------------------------------- */

struct mmpi_group_s {
  atomic_int refs;
  int predefined;
  int size;
  int rank;   /* this process's rank in it, or MPI_UNDEFINED */
  int *world; /* members' world ranks, in group order */
};

typedef struct mmpi__attr_s {
  struct mmpi__attr_s *next;
  int keyval;
  void *value;
} mmpi__attr_t;

struct mmpi_comm_s {
  mmp_comm_t *mc; /* NULL: not (or no longer) a communicator */
  int rank;
  int size;
  int predefined;
  MPI_Group group;
  MPI_Errhandler eh;
  mmpi__attr_t *attrs; /* in the order set (mmpi__mu) */
  char name[MPI_MAX_OBJECT_NAME];
  /* Made by this library: the handle until MPI_Comm_free, and each
   * request on the heap on it until freed. The object outlives the free
   * while requests use it (MPI_Comm_free is deferred). */
  atomic_int refs;
  int freed; /* MPI_Comm_free came: its requests raise on it still */
};

/* Sets up MPI_COMM_WORLD and MPI_COMM_SELF once libminimp runs. Returns
 * 0 or an MPI error code. */
int mmpi__comm_init(void);
/* Frees what they hold, deleting MPI_COMM_SELF's attributes first. */
void mmpi__comm_fini(void);
/* 1 if `c` is a communicator this library made and has not freed. */
static inline int mmpi__comm_ok(MPI_Comm c) {
  return c != MPI_COMM_NULL && c->mc != NULL;
}
/* A reference on `c` for a request (nothing for the predefined ones). */
void mmpi__comm_retain(MPI_Comm c);
void mmpi__comm_release(MPI_Comm c);
/* A group of n world ranks (copied). NULL when out of memory. */
MPI_Group mmpi__group_new(int n, const int *world);
void mmpi__group_release(MPI_Group g);

/* ---- Datatypes (datatype.c) --------------------------------------------- */

/* A run of `len` bytes at `disp` from an element's start, of basic
 * elements of `esize` bytes. */
typedef struct mmpi__block_s {
  MPI_Aint disp;
  size_t len;
  size_t esize;
} mmpi__block_t;

/* What a predefined type is, for the operations that apply to it. */
enum {
  MMPI__C_INT = 1, /* C integer (and the characters, leniently) */
  MMPI__C_FLOAT,   /* float, double */
  MMPI__C_LDOUBLE, /* long double: arithmetic here, not in libminimp */
  MMPI__C_COMPLEX,
  MMPI__C_BOOL,
  MMPI__C_BYTE,
  MMPI__C_PAIR, /* MINLOC and MAXLOC */
  MMPI__C_PACKED
};

struct mmpi_type_s {
  int predefined;
  int id;          /* predefined: its MMPI__T_* index; else -1 */
  int cls;         /* predefined: MMPI__C_* */
  atomic_int refs; /* derived: the handle, and requests using it */
  int committed;
  size_t size;       /* bytes of data in one element */
  MPI_Aint lb, ub;   /* extent = ub - lb */
  MPI_Aint tlb, tub; /* the true bounds of the data */
  size_t align;      /* the largest alignment of its basic types */
  int sticky;        /* bounds set by create_resized inside */
  int contig;        /* n elements are n * size bytes at tlb */
  size_t nblocks;
  mmpi__block_t *blocks; /* typemap, merged; `one` for predefined */
  mmpi__block_t one[2];
  size_t nelems; /* basic elements in one element */
  /* Reductions with predefined operations: the predefined type every
   * basic element belongs to (NULL when mixed), how many of it one
   * element holds, and whether they lie end to end from lb. */
  const struct mmpi_type_s *unit;
  size_t nunits;
  int unit_dense;
  mmp_type_t native; /* predefined: libminimp's type, or -1 */
  mmp_type_t elem;   /* libminimp's type of one element (extent bytes)
                        for user and local operations; -1 until made */
};

/* The predefined types (struct mmpi_type_s.id). */
enum {
  MMPI__T_CHAR = 0,
  MMPI__T_SIGNED_CHAR,
  MMPI__T_UNSIGNED_CHAR,
  MMPI__T_BYTE,
  MMPI__T_WCHAR,
  MMPI__T_SHORT,
  MMPI__T_UNSIGNED_SHORT,
  MMPI__T_INT,
  MMPI__T_UNSIGNED,
  MMPI__T_LONG,
  MMPI__T_UNSIGNED_LONG,
  MMPI__T_LONG_LONG,
  MMPI__T_UNSIGNED_LONG_LONG,
  MMPI__T_FLOAT,
  MMPI__T_DOUBLE,
  MMPI__T_LONG_DOUBLE,
  MMPI__T_INT8,
  MMPI__T_INT16,
  MMPI__T_INT32,
  MMPI__T_INT64,
  MMPI__T_UINT8,
  MMPI__T_UINT16,
  MMPI__T_UINT32,
  MMPI__T_UINT64,
  MMPI__T_BOOL,
  MMPI__T_FLOAT_COMPLEX,
  MMPI__T_DOUBLE_COMPLEX,
  MMPI__T_LONG_DOUBLE_COMPLEX,
  MMPI__T_AINT,
  MMPI__T_OFFSET,
  MMPI__T_COUNT,
  MMPI__T_PACKED,
  MMPI__T_FLOAT_INT,
  MMPI__T_DOUBLE_INT,
  MMPI__T_LONG_INT,
  MMPI__T_2INT,
  MMPI__T_SHORT_INT,
  MMPI__T_LONG_DOUBLE_INT,
  MMPI__T_NUM
};

/* The pair types' layouts, as C lays out MPI's definitions. */
typedef struct {
  float v;
  int i;
} mmpi__float_int_t;
typedef struct {
  double v;
  int i;
} mmpi__double_int_t;
typedef struct {
  long v;
  int i;
} mmpi__long_int_t;
typedef struct {
  int v;
  int i;
} mmpi__2int_t;
typedef struct {
  short v;
  int i;
} mmpi__short_int_t;
typedef struct {
  long double v;
  int i;
} mmpi__long_double_int_t;

/* Sets up the predefined types' typemaps (once). */
void mmpi__types_init(void);
/* Frees libminimp's element types made for reductions. */
void mmpi__types_fini(void);
/* MPI_SUCCESS if `t` may be used to communicate, else MPI_ERR_TYPE. */
static inline int mmpi__type_ok(MPI_Datatype t) {
  return t != MPI_DATATYPE_NULL && (t->predefined || t->committed)
             ? MPI_SUCCESS
             : MPI_ERR_TYPE;
}
static inline MPI_Aint mmpi__extent(const struct mmpi_type_s *t) {
  return t->ub - t->lb;
}
void mmpi__type_retain(MPI_Datatype t);
void mmpi__type_release(MPI_Datatype t);
/* Packs `count` elements at `buf` into `out` (count * size bytes). */
void mmpi__pack(const void *buf, size_t count, MPI_Datatype t, void *out);
/* Unpacks the first `bytes` bytes of `in` into `count` elements at
 * `buf`; a partial element is unpacked as far as it goes. */
void mmpi__unpack(const void *in, size_t bytes, void *buf, size_t count,
                  MPI_Datatype t);
/* libminimp's element type of `t` (made on first use). Returns 0 or an
 * MPI error code. */
int mmpi__type_elem(MPI_Datatype t, mmp_type_t *out);
/* The MPI type whose element type is `mt`, or NULL. */
MPI_Datatype mmpi__type_of_elem(mmp_type_t mt);

/* ---- Operations (op.c) -------------------------------------------------- */

struct mmpi_op_s {
  int id; /* MMPI__OP_*; 0 for a user operation */
  int commute;
  MPI_User_function *fn; /* user operations */
  mmp_op_t native;       /* libminimp's operation of the same name, or 0 */
  mmp_op_t mop;          /* user operations: libminimp's handle */
  atomic_int refs;       /* user operations: the handle, and reductions
                            under way with it (MPI_Op_free is deferred) */
};
enum {
  MMPI__OP_MAX = 1,
  MMPI__OP_MIN,
  MMPI__OP_SUM,
  MMPI__OP_PROD,
  MMPI__OP_LAND,
  MMPI__OP_BAND,
  MMPI__OP_LOR,
  MMPI__OP_BOR,
  MMPI__OP_LXOR,
  MMPI__OP_BXOR,
  MMPI__OP_MINLOC,
  MMPI__OP_MAXLOC,
  MMPI__OP_COUNT
};

/* Creates libminimp's operations for the predefined ones it lacks, in
 * the same order on every rank. Returns 0 or an MPI error code. */
int mmpi__ops_init(void);
void mmpi__ops_fini(void);
/* A reference on a user operation for a reduction under way (nothing for
 * the predefined ones). */
void mmpi__op_retain(MPI_Op op);
void mmpi__op_release(MPI_Op op);

/* How a reduction runs on libminimp: `count` elements of `type` with
 * `op`, at the caller's buffers offset by `shift` bytes, or packed into
 * buffers of basic elements first (`pack`). */
typedef struct mmpi__red_s {
  mmp_type_t type;
  mmp_op_t op;
  size_t count;
  MPI_Aint shift;
  int pack;
} mmpi__red_t;
/* Plans a reduction of `count` elements of `t` with `op`. Returns 0,
 * MPI_ERR_OP, MPI_ERR_TYPE or MPI_ERR_COUNT. */
int mmpi__red_plan(MPI_Datatype t, int count, MPI_Op op, mmpi__red_t *out);

/* ---- Requests (p2p.c) --------------------------------------------------- */

enum {
  MMPI__RQ_INACTIVE = 0, /* persistent, not started; or freed */
  MMPI__RQ_ACTIVE,       /* libminimp's request (mr) runs */
  MMPI__RQ_COMPLETE      /* completed, its status kept until returned */
};
enum { MMPI__K_SEND = 1, MMPI__K_RECV, MMPI__K_COLL };

struct mmpi_req_s {
  mmp_request_t *mr;
  int state;
  int kind;
  int persistent;
  int on_heap;
  int cancel; /* MPI_Cancel asked */
  MPI_Comm comm;
  int code;      /* the completed operation's MPI error code */
  MPI_Status st; /* the completed operation's status */
  void *tmp;     /* packed data the request owns */
  void *tmp2;    /* a second buffer (collectives) */
  /* Where a packed receive lands when it completes. */
  void *ubuf;
  size_t ucount;
  MPI_Datatype utype;
  /* A collective's own completion (unpacking in place of the whole
   * unpack above), and what it keeps, freed by arg_free. */
  void (*finish)(struct mmpi_req_s *r);
  void *arg;
  void (*arg_free)(void *arg);
  /* What a reduction under way uses, referenced until it completes: the
   * type (libminimp's element type of a derived one) and operation. */
  MPI_Datatype rtype;
  MPI_Op rop;
  int comm_ref; /* holds a reference on comm (heap requests) */
  /* Persistent operations: the arguments of each start. */
  const void *pbuf;
  int pcount;
  MPI_Datatype ptype;
  int peer;
  int tag;
  int mode; /* MMPI__M_* */
};
enum { MMPI__M_STD = 0, MMPI__M_SYNC, MMPI__M_READY, MMPI__M_BUF };

/* A request on the heap, zeroed, kind `kind` on `comm`; NULL when out of
 * memory. */
struct mmpi_req_s *mmpi__req_new(int kind, MPI_Comm comm);
/* Initialises a request that lives on the caller's stack. */
void mmpi__req_init(struct mmpi_req_s *r, int kind, MPI_Comm comm);
/* Waits for an active request (a blocking call's, on the stack), then
 * frees what it owns. Returns its MPI error code, raised on its
 * communicator. */
int mmpi__req_wait_local(struct mmpi_req_s *r, MPI_Status *st, const char *fn);
/* Frees what a request owns (packed buffers, type references). */
void mmpi__req_release(struct mmpi_req_s *r);
/* Frees a heap request (what it owns released) and its reference on its
 * communicator. */
void mmpi__req_free(struct mmpi_req_s *r);
/* Waits for every request freed while active (MPI_Request_free) and
 * every buffered send: at MPI_Finalize. */
void mmpi__p2p_fini(void);

#endif /* MMPI_INTERNAL_H */
