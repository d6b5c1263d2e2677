/* SPDX-License-Identifier: MIT */
/*
 * mpi.h - libminimp-mpi: a subset of MPI-3.1 for C programs, mapped onto
 * libminimp (minimp.h). Existing MPI programs recompile with minimpicc
 * and run under minimprun; docs/mpi.md lists the subset function by
 * function and what differs from the standard.
 *
 * Everything declared here is implemented. A function of MPI-3.1 that is
 * not declared is not in the subset: a program calling it fails to compile
 * or link, never at run time.
 *
 * Handles are pointers to objects of the library (as in Open MPI); the
 * predefined ones are the addresses of objects it exports, so they are
 * constants a program may use in initialisers. MPI_Status is a plain
 * struct with the public fields MPI_SOURCE, MPI_TAG and MPI_ERROR.
 */
#ifndef MINIMP_MPI_H
#define MINIMP_MPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MMPI_BUILDING_LIBRARY) && defined(__GNUC__)
#define MMPI_EXTERN __attribute__((visibility("default")))
#else
#define MMPI_EXTERN /* nothing */
#endif

#define MPI_VERSION 3
#define MPI_SUBVERSION 1
/* This library, for programs that must tell it apart. */
#define MINIMP_MPI 1

/* ---- Handles and basic types ------------------------------------------- */

typedef struct mmpi_comm_s *MPI_Comm;
typedef struct mmpi_group_s *MPI_Group;
typedef struct mmpi_type_s *MPI_Datatype;
typedef struct mmpi_op_s *MPI_Op;
typedef struct mmpi_req_s *MPI_Request;
typedef struct mmpi_errh_s *MPI_Errhandler;
typedef struct mmpi_info_s *MPI_Info;
typedef intptr_t MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;
typedef int MPI_Fint;

/* Completion information. MPI_ERROR is set only by the calls that
 * complete several requests (MPI_ERR_IN_STATUS); the other fields are
 * the library's (use MPI_Get_count, MPI_Get_elements, MPI_Test_cancelled). */
typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int mmpi_cancelled;
  size_t mmpi_bytes;
} MPI_Status;

#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)

/* ---- Constants ---------------------------------------------------------- */

#define MPI_SUCCESS 0
/* Error classes. MPI_ERR_UNSUPPORTED_OPERATION and the MPIX_ classes are
 * what libminimp's own failures map to (docs/mpi.md, "Errors"). */
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_REQUEST 7
#define MPI_ERR_ROOT 8
#define MPI_ERR_GROUP 9
#define MPI_ERR_OP 10
#define MPI_ERR_TOPOLOGY 11
#define MPI_ERR_DIMS 12
#define MPI_ERR_ARG 13
#define MPI_ERR_UNKNOWN 14
#define MPI_ERR_TRUNCATE 15
#define MPI_ERR_OTHER 16
#define MPI_ERR_INTERN 17
#define MPI_ERR_IN_STATUS 18
#define MPI_ERR_PENDING 19
#define MPI_ERR_ACCESS 20
#define MPI_ERR_AMODE 21
#define MPI_ERR_ASSERT 22
#define MPI_ERR_BAD_FILE 23
#define MPI_ERR_BASE 24
#define MPI_ERR_CONVERSION 25
#define MPI_ERR_DISP 26
#define MPI_ERR_DUP_DATAREP 27
#define MPI_ERR_FILE_EXISTS 28
#define MPI_ERR_FILE_IN_USE 29
#define MPI_ERR_FILE 30
#define MPI_ERR_INFO_KEY 31
#define MPI_ERR_INFO_NOKEY 32
#define MPI_ERR_INFO_VALUE 33
#define MPI_ERR_INFO 34
#define MPI_ERR_IO 35
#define MPI_ERR_KEYVAL 36
#define MPI_ERR_LOCKTYPE 37
#define MPI_ERR_NAME 38
#define MPI_ERR_NO_MEM 39
#define MPI_ERR_NOT_SAME 40
#define MPI_ERR_NO_SPACE 41
#define MPI_ERR_NO_SUCH_FILE 42
#define MPI_ERR_PORT 43
#define MPI_ERR_QUOTA 44
#define MPI_ERR_READ_ONLY 45
#define MPI_ERR_RMA_CONFLICT 46
#define MPI_ERR_RMA_SYNC 47
#define MPI_ERR_SERVICE 48
#define MPI_ERR_SIZE 49
#define MPI_ERR_SPAWN 50
#define MPI_ERR_UNSUPPORTED_DATAREP 51
#define MPI_ERR_UNSUPPORTED_OPERATION 52
#define MPI_ERR_WIN 53
#define MPI_ERR_RMA_RANGE 54
#define MPI_ERR_RMA_ATTACH 55
#define MPI_ERR_RMA_SHARED 56
#define MPI_ERR_RMA_FLAVOR 57
/* A process of the job was lost (ULFM's name). */
#define MPIX_ERR_PROC_FAILED 75
/* A timeout set on libminimp (MINIMP_COLL_TIMEOUT_MS) passed. */
#define MPIX_ERR_TIMEOUT 76
/* Error codes carry libminimp's own code above the class. */
#define MPI_ERR_LASTCODE 0x3fffffff

#define MPI_PROC_NULL (-2)
#define MPI_ANY_SOURCE (-1)
#define MPI_ANY_TAG (-1)
#define MPI_ROOT (-3)
#define MPI_UNDEFINED (-32766)
#define MPI_KEYVAL_INVALID (-1)
#define MPI_BSEND_OVERHEAD 64

#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_ERROR_STRING 256
#define MPI_MAX_OBJECT_NAME 64
#define MPI_MAX_LIBRARY_VERSION_STRING 256
#define MPI_MAX_INFO_KEY 255
#define MPI_MAX_INFO_VAL 1024

/* MPI_Comm_compare and MPI_Group_compare. */
#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

/* Predefined attribute keys of every communicator. */
#define MPI_TAG_UB 1
#define MPI_HOST 2
#define MPI_IO 3
#define MPI_WTIME_IS_GLOBAL 4

#define MPI_BOTTOM ((void *)0)
#define MPI_IN_PLACE ((void *)1)
#define MPI_UNWEIGHTED ((int *)2)

/* Null handles. */
#define MPI_COMM_NULL ((MPI_Comm)0)
#define MPI_GROUP_NULL ((MPI_Group)0)
#define MPI_DATATYPE_NULL ((MPI_Datatype)0)
#define MPI_OP_NULL ((MPI_Op)0)
#define MPI_REQUEST_NULL ((MPI_Request)0)
#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0)
#define MPI_INFO_NULL ((MPI_Info)0)

/* ---- Predefined objects ------------------------------------------------- */

#define MMPI_PREDEF(kind, name) extern MMPI_EXTERN struct kind mmpi_##name

MMPI_PREDEF(mmpi_comm_s, comm_world);
MMPI_PREDEF(mmpi_comm_s, comm_self);
#define MPI_COMM_WORLD (&mmpi_comm_world)
#define MPI_COMM_SELF (&mmpi_comm_self)

MMPI_PREDEF(mmpi_group_s, group_empty);
#define MPI_GROUP_EMPTY (&mmpi_group_empty)

MMPI_PREDEF(mmpi_errh_s, errors_are_fatal);
MMPI_PREDEF(mmpi_errh_s, errors_return);
#define MPI_ERRORS_ARE_FATAL (&mmpi_errors_are_fatal)
#define MPI_ERRORS_RETURN (&mmpi_errors_return)

MMPI_PREDEF(mmpi_type_s, char);
MMPI_PREDEF(mmpi_type_s, signed_char);
MMPI_PREDEF(mmpi_type_s, unsigned_char);
MMPI_PREDEF(mmpi_type_s, byte);
MMPI_PREDEF(mmpi_type_s, wchar);
MMPI_PREDEF(mmpi_type_s, short);
MMPI_PREDEF(mmpi_type_s, unsigned_short);
MMPI_PREDEF(mmpi_type_s, int);
MMPI_PREDEF(mmpi_type_s, unsigned);
MMPI_PREDEF(mmpi_type_s, long);
MMPI_PREDEF(mmpi_type_s, unsigned_long);
MMPI_PREDEF(mmpi_type_s, long_long);
MMPI_PREDEF(mmpi_type_s, unsigned_long_long);
MMPI_PREDEF(mmpi_type_s, float);
MMPI_PREDEF(mmpi_type_s, double);
MMPI_PREDEF(mmpi_type_s, long_double);
MMPI_PREDEF(mmpi_type_s, int8_t);
MMPI_PREDEF(mmpi_type_s, int16_t);
MMPI_PREDEF(mmpi_type_s, int32_t);
MMPI_PREDEF(mmpi_type_s, int64_t);
MMPI_PREDEF(mmpi_type_s, uint8_t);
MMPI_PREDEF(mmpi_type_s, uint16_t);
MMPI_PREDEF(mmpi_type_s, uint32_t);
MMPI_PREDEF(mmpi_type_s, uint64_t);
MMPI_PREDEF(mmpi_type_s, c_bool);
MMPI_PREDEF(mmpi_type_s, c_float_complex);
MMPI_PREDEF(mmpi_type_s, c_double_complex);
MMPI_PREDEF(mmpi_type_s, c_long_double_complex);
MMPI_PREDEF(mmpi_type_s, aint);
MMPI_PREDEF(mmpi_type_s, offset);
MMPI_PREDEF(mmpi_type_s, count);
MMPI_PREDEF(mmpi_type_s, packed);
MMPI_PREDEF(mmpi_type_s, float_int);
MMPI_PREDEF(mmpi_type_s, double_int);
MMPI_PREDEF(mmpi_type_s, long_int);
MMPI_PREDEF(mmpi_type_s, 2int);
MMPI_PREDEF(mmpi_type_s, short_int);
MMPI_PREDEF(mmpi_type_s, long_double_int);

#define MPI_CHAR (&mmpi_char)
#define MPI_SIGNED_CHAR (&mmpi_signed_char)
#define MPI_UNSIGNED_CHAR (&mmpi_unsigned_char)
#define MPI_BYTE (&mmpi_byte)
#define MPI_WCHAR (&mmpi_wchar)
#define MPI_SHORT (&mmpi_short)
#define MPI_UNSIGNED_SHORT (&mmpi_unsigned_short)
#define MPI_INT (&mmpi_int)
#define MPI_UNSIGNED (&mmpi_unsigned)
#define MPI_LONG (&mmpi_long)
#define MPI_UNSIGNED_LONG (&mmpi_unsigned_long)
#define MPI_LONG_LONG_INT (&mmpi_long_long)
#define MPI_LONG_LONG (&mmpi_long_long)
#define MPI_UNSIGNED_LONG_LONG (&mmpi_unsigned_long_long)
#define MPI_FLOAT (&mmpi_float)
#define MPI_DOUBLE (&mmpi_double)
#define MPI_LONG_DOUBLE (&mmpi_long_double)
#define MPI_INT8_T (&mmpi_int8_t)
#define MPI_INT16_T (&mmpi_int16_t)
#define MPI_INT32_T (&mmpi_int32_t)
#define MPI_INT64_T (&mmpi_int64_t)
#define MPI_UINT8_T (&mmpi_uint8_t)
#define MPI_UINT16_T (&mmpi_uint16_t)
#define MPI_UINT32_T (&mmpi_uint32_t)
#define MPI_UINT64_T (&mmpi_uint64_t)
#define MPI_C_BOOL (&mmpi_c_bool)
#define MPI_C_COMPLEX (&mmpi_c_float_complex)
#define MPI_C_FLOAT_COMPLEX (&mmpi_c_float_complex)
#define MPI_C_DOUBLE_COMPLEX (&mmpi_c_double_complex)
#define MPI_C_LONG_DOUBLE_COMPLEX (&mmpi_c_long_double_complex)
#define MPI_AINT (&mmpi_aint)
#define MPI_OFFSET (&mmpi_offset)
#define MPI_COUNT (&mmpi_count)
#define MPI_PACKED (&mmpi_packed)
/* The pair types of MPI_MINLOC and MPI_MAXLOC: a value, then an int. */
#define MPI_FLOAT_INT (&mmpi_float_int)
#define MPI_DOUBLE_INT (&mmpi_double_int)
#define MPI_LONG_INT (&mmpi_long_int)
#define MPI_2INT (&mmpi_2int)
#define MPI_SHORT_INT (&mmpi_short_int)
#define MPI_LONG_DOUBLE_INT (&mmpi_long_double_int)

MMPI_PREDEF(mmpi_op_s, op_max);
MMPI_PREDEF(mmpi_op_s, op_min);
MMPI_PREDEF(mmpi_op_s, op_sum);
MMPI_PREDEF(mmpi_op_s, op_prod);
MMPI_PREDEF(mmpi_op_s, op_land);
MMPI_PREDEF(mmpi_op_s, op_band);
MMPI_PREDEF(mmpi_op_s, op_lor);
MMPI_PREDEF(mmpi_op_s, op_bor);
MMPI_PREDEF(mmpi_op_s, op_lxor);
MMPI_PREDEF(mmpi_op_s, op_bxor);
MMPI_PREDEF(mmpi_op_s, op_minloc);
MMPI_PREDEF(mmpi_op_s, op_maxloc);
#define MPI_MAX (&mmpi_op_max)
#define MPI_MIN (&mmpi_op_min)
#define MPI_SUM (&mmpi_op_sum)
#define MPI_PROD (&mmpi_op_prod)
#define MPI_LAND (&mmpi_op_land)
#define MPI_BAND (&mmpi_op_band)
#define MPI_LOR (&mmpi_op_lor)
#define MPI_BOR (&mmpi_op_bor)
#define MPI_LXOR (&mmpi_op_lxor)
#define MPI_BXOR (&mmpi_op_bxor)
#define MPI_MINLOC (&mmpi_op_minloc)
#define MPI_MAXLOC (&mmpi_op_maxloc)

#undef MMPI_PREDEF

/* ---- Callbacks ---------------------------------------------------------- */

typedef void MPI_User_function(void *invec, void *inoutvec, int *len,
                               MPI_Datatype *datatype);
typedef void MPI_Comm_errhandler_function(MPI_Comm *comm, int *error, ...);
typedef int MPI_Comm_copy_attr_function(MPI_Comm oldcomm, int comm_keyval,
                                        void *extra_state,
                                        void *attribute_val_in,
                                        void *attribute_val_out, int *flag);
typedef int MPI_Comm_delete_attr_function(MPI_Comm comm, int comm_keyval,
                                          void *attribute_val,
                                          void *extra_state);

/* The predefined attribute callbacks: copy nothing, copy the value,
 * delete nothing. */
MMPI_EXTERN int mmpi_comm_null_copy_fn(MPI_Comm, int, void *, void *, void *,
                                       int *);
MMPI_EXTERN int mmpi_comm_dup_fn(MPI_Comm, int, void *, void *, void *, int *);
MMPI_EXTERN int mmpi_comm_null_delete_fn(MPI_Comm, int, void *, void *);
#define MPI_COMM_NULL_COPY_FN mmpi_comm_null_copy_fn
#define MPI_COMM_DUP_FN mmpi_comm_dup_fn
#define MPI_COMM_NULL_DELETE_FN mmpi_comm_null_delete_fn

/* ---- Environment -------------------------------------------------------- */

MMPI_EXTERN int MPI_Init(int *argc, char ***argv);
MMPI_EXTERN int MPI_Init_thread(int *argc, char ***argv, int required,
                                int *provided);
MMPI_EXTERN int MPI_Finalize(void);
MMPI_EXTERN int MPI_Initialized(int *flag);
MMPI_EXTERN int MPI_Finalized(int *flag);
MMPI_EXTERN int MPI_Abort(MPI_Comm comm, int errorcode);
MMPI_EXTERN double MPI_Wtime(void);
MMPI_EXTERN double MPI_Wtick(void);
MMPI_EXTERN int MPI_Get_processor_name(char *name, int *resultlen);
MMPI_EXTERN int MPI_Get_version(int *version, int *subversion);
MMPI_EXTERN int MPI_Get_library_version(char *version, int *resultlen);
MMPI_EXTERN int MPI_Query_thread(int *provided);
MMPI_EXTERN int MPI_Is_thread_main(int *flag);
MMPI_EXTERN int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
MMPI_EXTERN int MPI_Free_mem(void *base);

MMPI_EXTERN int MPI_Info_create(MPI_Info *info);
MMPI_EXTERN int MPI_Info_set(MPI_Info info, const char *key, const char *value);
MMPI_EXTERN int MPI_Info_get(MPI_Info info, const char *key, int valuelen,
                             char *value, int *flag);
MMPI_EXTERN int MPI_Info_get_valuelen(MPI_Info info, const char *key,
                                      int *valuelen, int *flag);
MMPI_EXTERN int MPI_Info_delete(MPI_Info info, const char *key);
MMPI_EXTERN int MPI_Info_get_nkeys(MPI_Info info, int *nkeys);
MMPI_EXTERN int MPI_Info_get_nthkey(MPI_Info info, int n, char *key);
MMPI_EXTERN int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
MMPI_EXTERN int MPI_Info_free(MPI_Info *info);

/* ---- Errors ------------------------------------------------------------- */

MMPI_EXTERN int MPI_Error_string(int errorcode, char *string, int *resultlen);
MMPI_EXTERN int MPI_Error_class(int errorcode, int *errorclass);
MMPI_EXTERN int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn,
                                           MPI_Errhandler *errhandler);
MMPI_EXTERN int MPI_Comm_set_errhandler(MPI_Comm comm,
                                        MPI_Errhandler errhandler);
MMPI_EXTERN int MPI_Comm_get_errhandler(MPI_Comm comm,
                                        MPI_Errhandler *errhandler);
MMPI_EXTERN int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
MMPI_EXTERN int MPI_Errhandler_free(MPI_Errhandler *errhandler);

/* ---- Communicators and groups ------------------------------------------- */

MMPI_EXTERN int MPI_Comm_rank(MPI_Comm comm, int *rank);
MMPI_EXTERN int MPI_Comm_size(MPI_Comm comm, int *size);
MMPI_EXTERN int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
MMPI_EXTERN int MPI_Comm_split(MPI_Comm comm, int color, int key,
                               MPI_Comm *newcomm);
MMPI_EXTERN int MPI_Comm_create(MPI_Comm comm, MPI_Group group,
                                MPI_Comm *newcomm);
MMPI_EXTERN int MPI_Comm_free(MPI_Comm *comm);
MMPI_EXTERN int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
MMPI_EXTERN int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
MMPI_EXTERN int MPI_Comm_get_name(MPI_Comm comm, char *comm_name,
                                  int *resultlen);
MMPI_EXTERN int MPI_Comm_test_inter(MPI_Comm comm, int *flag);
MMPI_EXTERN int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);

MMPI_EXTERN int
MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                       MPI_Comm_delete_attr_function *comm_delete_attr_fn,
                       int *comm_keyval, void *extra_state);
MMPI_EXTERN int MPI_Comm_free_keyval(int *comm_keyval);
MMPI_EXTERN int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval,
                                  void *attribute_val);
MMPI_EXTERN int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval,
                                  void *attribute_val, int *flag);
MMPI_EXTERN int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);

MMPI_EXTERN int MPI_Group_size(MPI_Group group, int *size);
MMPI_EXTERN int MPI_Group_rank(MPI_Group group, int *rank);
MMPI_EXTERN int MPI_Group_translate_ranks(MPI_Group group1, int n,
                                          const int ranks1[], MPI_Group group2,
                                          int ranks2[]);
MMPI_EXTERN int MPI_Group_compare(MPI_Group group1, MPI_Group group2,
                                  int *result);
MMPI_EXTERN int MPI_Group_incl(MPI_Group group, int n, const int ranks[],
                               MPI_Group *newgroup);
MMPI_EXTERN int MPI_Group_excl(MPI_Group group, int n, const int ranks[],
                               MPI_Group *newgroup);
MMPI_EXTERN int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3],
                                     MPI_Group *newgroup);
MMPI_EXTERN int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3],
                                     MPI_Group *newgroup);
MMPI_EXTERN int MPI_Group_union(MPI_Group group1, MPI_Group group2,
                                MPI_Group *newgroup);
MMPI_EXTERN int MPI_Group_intersection(MPI_Group group1, MPI_Group group2,
                                       MPI_Group *newgroup);
MMPI_EXTERN int MPI_Group_difference(MPI_Group group1, MPI_Group group2,
                                     MPI_Group *newgroup);
MMPI_EXTERN int MPI_Group_free(MPI_Group *group);

/* ---- Datatypes ---------------------------------------------------------- */

MMPI_EXTERN int MPI_Type_contiguous(int count, MPI_Datatype oldtype,
                                    MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_vector(int count, int blocklength, int stride,
                                MPI_Datatype oldtype, MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_create_hvector(int count, int blocklength,
                                        MPI_Aint stride, MPI_Datatype oldtype,
                                        MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_indexed(int count, const int blocklengths[],
                                 const int displacements[],
                                 MPI_Datatype oldtype, MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_create_hindexed(int count, const int blocklengths[],
                                         const MPI_Aint displacements[],
                                         MPI_Datatype oldtype,
                                         MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_create_indexed_block(int count, int blocklength,
                                              const int displacements[],
                                              MPI_Datatype oldtype,
                                              MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_create_hindexed_block(int count, int blocklength,
                                               const MPI_Aint displacements[],
                                               MPI_Datatype oldtype,
                                               MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_create_struct(int count, const int blocklengths[],
                                       const MPI_Aint displacements[],
                                       const MPI_Datatype types[],
                                       MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb,
                                        MPI_Aint extent, MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype);
MMPI_EXTERN int MPI_Type_commit(MPI_Datatype *datatype);
MMPI_EXTERN int MPI_Type_free(MPI_Datatype *datatype);
MMPI_EXTERN int MPI_Type_size(MPI_Datatype datatype, int *size);
MMPI_EXTERN int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb,
                                    MPI_Aint *extent);
MMPI_EXTERN int MPI_Type_get_true_extent(MPI_Datatype datatype,
                                         MPI_Aint *true_lb,
                                         MPI_Aint *true_extent);
MMPI_EXTERN int MPI_Get_address(const void *location, MPI_Aint *address);
MMPI_EXTERN int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype,
                              int *count);
MMPI_EXTERN int MPI_Get_elements(const MPI_Status *status,
                                 MPI_Datatype datatype, int *count);
MMPI_EXTERN int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype,
                         void *outbuf, int outsize, int *position,
                         MPI_Comm comm);
MMPI_EXTERN int MPI_Unpack(const void *inbuf, int insize, int *position,
                           void *outbuf, int outcount, MPI_Datatype datatype,
                           MPI_Comm comm);
MMPI_EXTERN int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm,
                              int *size);

/* ---- Point-to-point ----------------------------------------------------- */

MMPI_EXTERN int MPI_Send(const void *buf, int count, MPI_Datatype datatype,
                         int dest, int tag, MPI_Comm comm);
MMPI_EXTERN int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm);
MMPI_EXTERN int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm);
MMPI_EXTERN int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm);
MMPI_EXTERN int MPI_Buffer_attach(void *buffer, int size);
MMPI_EXTERN int MPI_Buffer_detach(void *buffer_addr, int *size);
MMPI_EXTERN int MPI_Recv(void *buf, int count, MPI_Datatype datatype,
                         int source, int tag, MPI_Comm comm,
                         MPI_Status *status);
MMPI_EXTERN int MPI_Isend(const void *buf, int count, MPI_Datatype datatype,
                          int dest, int tag, MPI_Comm comm,
                          MPI_Request *request);
MMPI_EXTERN int MPI_Issend(const void *buf, int count, MPI_Datatype datatype,
                           int dest, int tag, MPI_Comm comm,
                           MPI_Request *request);
MMPI_EXTERN int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype,
                           int dest, int tag, MPI_Comm comm,
                           MPI_Request *request);
MMPI_EXTERN int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype,
                           int dest, int tag, MPI_Comm comm,
                           MPI_Request *request);
MMPI_EXTERN int MPI_Irecv(void *buf, int count, MPI_Datatype datatype,
                          int source, int tag, MPI_Comm comm,
                          MPI_Request *request);
MMPI_EXTERN int MPI_Sendrecv(const void *sendbuf, int sendcount,
                             MPI_Datatype sendtype, int dest, int sendtag,
                             void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int source, int recvtag,
                             MPI_Comm comm, MPI_Status *status);
MMPI_EXTERN int MPI_Sendrecv_replace(void *buf, int count,
                                     MPI_Datatype datatype, int dest,
                                     int sendtag, int source, int recvtag,
                                     MPI_Comm comm, MPI_Status *status);
MMPI_EXTERN int MPI_Wait(MPI_Request *request, MPI_Status *status);
MMPI_EXTERN int MPI_Waitall(int count, MPI_Request array_of_requests[],
                            MPI_Status array_of_statuses[]);
MMPI_EXTERN int MPI_Waitany(int count, MPI_Request array_of_requests[],
                            int *index, MPI_Status *status);
MMPI_EXTERN int MPI_Waitsome(int incount, MPI_Request array_of_requests[],
                             int *outcount, int array_of_indices[],
                             MPI_Status array_of_statuses[]);
MMPI_EXTERN int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
MMPI_EXTERN int MPI_Testall(int count, MPI_Request array_of_requests[],
                            int *flag, MPI_Status array_of_statuses[]);
MMPI_EXTERN int MPI_Testany(int count, MPI_Request array_of_requests[],
                            int *index, int *flag, MPI_Status *status);
MMPI_EXTERN int MPI_Testsome(int incount, MPI_Request array_of_requests[],
                             int *outcount, int array_of_indices[],
                             MPI_Status array_of_statuses[]);
MMPI_EXTERN int MPI_Probe(int source, int tag, MPI_Comm comm,
                          MPI_Status *status);
MMPI_EXTERN int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag,
                           MPI_Status *status);
MMPI_EXTERN int MPI_Cancel(MPI_Request *request);
MMPI_EXTERN int MPI_Test_cancelled(const MPI_Status *status, int *flag);
MMPI_EXTERN int MPI_Request_free(MPI_Request *request);
MMPI_EXTERN int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype,
                              int dest, int tag, MPI_Comm comm,
                              MPI_Request *request);
MMPI_EXTERN int MPI_Ssend_init(const void *buf, int count,
                               MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Rsend_init(const void *buf, int count,
                               MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Bsend_init(const void *buf, int count,
                               MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype,
                              int source, int tag, MPI_Comm comm,
                              MPI_Request *request);
MMPI_EXTERN int MPI_Start(MPI_Request *request);
MMPI_EXTERN int MPI_Startall(int count, MPI_Request array_of_requests[]);

/* ---- Collectives -------------------------------------------------------- */

MMPI_EXTERN int MPI_Op_create(MPI_User_function *user_fn, int commute,
                              MPI_Op *op);
MMPI_EXTERN int MPI_Op_free(MPI_Op *op);
MMPI_EXTERN int MPI_Op_commutative(MPI_Op op, int *commute);

MMPI_EXTERN int MPI_Barrier(MPI_Comm comm);
MMPI_EXTERN int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype,
                          int root, MPI_Comm comm);
MMPI_EXTERN int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
                           MPI_Datatype datatype, MPI_Op op, int root,
                           MPI_Comm comm);
MMPI_EXTERN int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
MMPI_EXTERN int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf,
                                   const int recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op,
                                   MPI_Comm comm);
MMPI_EXTERN int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf,
                                         int recvcount, MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm);
MMPI_EXTERN int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op);
MMPI_EXTERN int MPI_Gather(const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm);
MMPI_EXTERN int MPI_Gatherv(const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, int root, MPI_Comm comm);
MMPI_EXTERN int MPI_Scatter(const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm);
MMPI_EXTERN int MPI_Scatterv(const void *sendbuf, const int sendcounts[],
                             const int displs[], MPI_Datatype sendtype,
                             void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm);
MMPI_EXTERN int MPI_Allgather(const void *sendbuf, int sendcount,
                              MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm);
MMPI_EXTERN int MPI_Allgatherv(const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, void *recvbuf,
                               const int recvcounts[], const int displs[],
                               MPI_Datatype recvtype, MPI_Comm comm);
MMPI_EXTERN int MPI_Alltoall(const void *sendbuf, int sendcount,
                             MPI_Datatype sendtype, void *recvbuf,
                             int recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm);
MMPI_EXTERN int MPI_Alltoallv(const void *sendbuf, const int sendcounts[],
                              const int sdispls[], MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype,
                              MPI_Comm comm);
MMPI_EXTERN int MPI_Alltoallw(const void *sendbuf, const int sendcounts[],
                              const int sdispls[],
                              const MPI_Datatype sendtypes[], void *recvbuf,
                              const int recvcounts[], const int rdispls[],
                              const MPI_Datatype recvtypes[], MPI_Comm comm);

MMPI_EXTERN int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype,
                           int root, MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, int root,
                            MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               MPI_Request *request);
MMPI_EXTERN int MPI_Scan(const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
MMPI_EXTERN int MPI_Exscan(const void *sendbuf, void *recvbuf, int count,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
MMPI_EXTERN int MPI_Iscan(const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          MPI_Request *request);
MMPI_EXTERN int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                            MPI_Request *request);
MMPI_EXTERN int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf,
                                    const int recvcounts[],
                                    MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf,
                                          int recvcount, MPI_Datatype datatype,
                                          MPI_Op op, MPI_Comm comm,
                                          MPI_Request *request);
MMPI_EXTERN int MPI_Igather(const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm,
                            MPI_Request *request);
MMPI_EXTERN int MPI_Igatherv(const void *sendbuf, int sendcount,
                             MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, int root, MPI_Comm comm,
                             MPI_Request *request);
MMPI_EXTERN int MPI_Iscatter(const void *sendbuf, int sendcount,
                             MPI_Datatype sendtype, void *recvbuf,
                             int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Iscatterv(const void *sendbuf, const int sendcounts[],
                              const int displs[], MPI_Datatype sendtype,
                              void *recvbuf, int recvcount,
                              MPI_Datatype recvtype, int root, MPI_Comm comm,
                              MPI_Request *request);
MMPI_EXTERN int MPI_Iallgather(const void *sendbuf, int sendcount,
                               MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype,
                               MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Iallgatherv(const void *sendbuf, int sendcount,
                                MPI_Datatype sendtype, void *recvbuf,
                                const int recvcounts[], const int displs[],
                                MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Request *request);
MMPI_EXTERN int MPI_Ialltoall(const void *sendbuf, int sendcount,
                              MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[],
                               const int sdispls[], MPI_Datatype sendtype,
                               void *recvbuf, const int recvcounts[],
                               const int rdispls[], MPI_Datatype recvtype,
                               MPI_Comm comm, MPI_Request *request);
MMPI_EXTERN int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[],
                               const int sdispls[],
                               const MPI_Datatype sendtypes[], void *recvbuf,
                               const int recvcounts[], const int rdispls[],
                               const MPI_Datatype recvtypes[], MPI_Comm comm,
                               MPI_Request *request);

#ifdef __cplusplus
}
#endif
#endif /* MINIMP_MPI_H */
