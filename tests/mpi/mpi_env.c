/* SPDX-License-Identifier: MIT */
/*
 * The environment through libminimp-mpi (MPI-3.1 chapters 8 and 9): init
 * and finalize, versions, names, clocks, memory, info objects, and error
 * handling: classes and strings, MPI_ERRORS_RETURN, user handlers,
 * inheritance by dup. MPI_COMM_SELF's attributes are deleted at
 * MPI_Finalize, before anything else. With "fatal" as its argument the
 * program makes an error under MPI_ERRORS_ARE_FATAL instead, and the job
 * must end (tests/mpi/mpi_fatal.sh); with "abort", MPI_Abort.
 */
#include <pthread.h>
#include <unistd.h>

#include "mpi_test.h"

static void test_environment(void **state) {
  int flag, v, sv, len, provided;
  char name[MPI_MAX_PROCESSOR_NAME], host[MPI_MAX_PROCESSOR_NAME];
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  double t0, t1;
  (void)state;

  assert_int_equal(MPI_Initialized(&flag), 0);
  assert_int_equal(flag, 1);
  assert_int_equal(MPI_Finalized(&flag), 0);
  assert_int_equal(flag, 0);
  assert_int_equal(MPI_Get_version(&v, &sv), 0);
  assert_int_equal(v, 3);
  assert_int_equal(sv, 1);
  assert_int_equal(MPI_Get_library_version(lib, &len), 0);
  assert_int_equal(len, (int)strlen(lib));
  assert_non_null(strstr(lib, "libminimp"));
  assert_int_equal(MPI_Get_processor_name(name, &len), 0);
  gethostname(host, sizeof(host));
  assert_string_equal(name, host);
  assert_int_equal(len, (int)strlen(host));
  assert_int_equal(MPI_Query_thread(&provided), 0);
  assert_int_equal(provided, MPI_THREAD_MULTIPLE);
  assert_int_equal(MPI_Is_thread_main(&flag), 0);
  assert_int_equal(flag, 1);
  t0 = MPI_Wtime();
  usleep(20000);
  t1 = MPI_Wtime();
  assert_true(t1 - t0 >= 0.019 && t1 - t0 < 5);
  assert_true(MPI_Wtick() > 0 && MPI_Wtick() <= 1e-6);
  {
    double *mem = NULL;
    assert_int_equal(MPI_Alloc_mem(1024, MPI_INFO_NULL, &mem), 0);
    assert_non_null(mem);
    mem[127] = 1;
    assert_int_equal(MPI_Free_mem(mem), 0);
  }
}

/* Another thread may call MPI at any time (MPI_THREAD_MULTIPLE). */
static void *other_thread(void *arg) {
  int me = mt_rank(), p = mt_size(), v = me, got = -1;
  MPI_Comm *c = arg;

  MPI_Sendrecv(&v, 1, MPI_INT, (me + 1) % p, 3, &got, 1, MPI_INT,
               (me + p - 1) % p, 3, *c, MPI_STATUS_IGNORE);
  return (void *)(intptr_t)got;
}

static void *is_main(void *flag) {
  MPI_Is_thread_main(flag);
  return NULL;
}

static void test_threads(void **state) {
  int me = mt_rank(), p = mt_size(), flag = 1;
  pthread_t t;
  void *got;
  MPI_Comm c;
  (void)state;

  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  assert_int_equal(pthread_create(&t, NULL, other_thread, &c), 0);
  MPI_Barrier(MPI_COMM_WORLD); /* meanwhile, on this thread */
  pthread_join(t, &got);
  assert_int_equal((int)(intptr_t)got, (me + p - 1) % p);
  pthread_create(&t, NULL, is_main, &flag);
  pthread_join(t, NULL);
  assert_int_equal(flag, 0);
  MPI_Comm_free(&c);
}

static void test_info(void **state) {
  MPI_Info info, dup;
  char value[MPI_MAX_INFO_VAL + 1], key[MPI_MAX_INFO_KEY + 1];
  int flag, n, len;
  (void)state;

  assert_int_equal(MPI_Info_create(&info), 0);
  assert_int_equal(MPI_Info_set(info, "alpha", "one"), 0);
  assert_int_equal(MPI_Info_set(info, "beta", "two"), 0);
  assert_int_equal(MPI_Info_set(info, "alpha", "uno"), 0); /* replaces */
  assert_int_equal(MPI_Info_get_nkeys(info, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, value, &flag),
                   0);
  assert_int_equal(flag, 1);
  assert_string_equal(value, "uno");
  /* valuelen counts the characters without the terminating NUL. */
  assert_int_equal(MPI_Info_get(info, "beta", 2, value, &flag), 0);
  assert_string_equal(value, "tw");
  assert_int_equal(MPI_Info_get_valuelen(info, "beta", &len, &flag), 0);
  assert_int_equal(len, 3);
  assert_int_equal(MPI_Info_get(info, "gamma", 10, value, &flag), 0);
  assert_int_equal(flag, 0);
  assert_int_equal(MPI_Info_get_nthkey(info, 1, key), 0);
  assert_string_equal(key, "beta");
  assert_int_equal(MPI_Info_dup(info, &dup), 0);
  assert_int_equal(MPI_Info_delete(info, "alpha"), 0);
  assert_int_equal(MPI_Info_get_nkeys(info, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(MPI_Info_get_nkeys(dup, &n), 0);
  assert_int_equal(n, 2);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  assert_int_equal(mt_class(MPI_Info_delete(info, "alpha")),
                   MPI_ERR_INFO_NOKEY);
  assert_int_equal(mt_class(MPI_Info_set(info, "", "x")), MPI_ERR_INFO_KEY);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  assert_int_equal(MPI_Info_free(&info), 0);
  assert_ptr_equal(info, MPI_INFO_NULL);
  assert_int_equal(MPI_Info_free(&dup), 0);
}

static MPI_Comm handled_comm;
static int handled_code, handled_calls;

static void handler(MPI_Comm *comm, int *code, ...) {
  handled_comm = *comm;
  handled_code = *code;
  handled_calls++;
}

static void test_error_handlers(void **state) {
  int p = mt_size(), v = 0, cls, len;
  char text[MPI_MAX_ERROR_STRING];
  MPI_Errhandler eh, got;
  MPI_Comm dup;
  (void)state;

  /* The default is MPI_ERRORS_ARE_FATAL. */
  assert_int_equal(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got), 0);
  assert_ptr_equal(got, MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&got);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  /* Errors come back with their classes. */
  assert_int_equal(mt_class(MPI_Send(&v, 1, MPI_INT, p, 0, dup)), MPI_ERR_RANK);
  assert_int_equal(mt_class(MPI_Send(&v, 1, MPI_INT, 0, -5, dup)), MPI_ERR_TAG);
  assert_int_equal(mt_class(MPI_Send(&v, -1, MPI_INT, 0, 0, dup)),
                   MPI_ERR_COUNT);
  assert_int_equal(mt_class(MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, dup)),
                   MPI_ERR_TYPE);
  /* A user handler sees the communicator and the code. */
  assert_int_equal(MPI_Comm_create_errhandler(handler, &eh), 0);
  assert_int_equal(MPI_Comm_set_errhandler(dup, eh), 0);
  assert_int_equal(MPI_Comm_get_errhandler(dup, &got), 0);
  assert_ptr_equal(got, eh);
  MPI_Errhandler_free(&got);
  handled_calls = 0;
  assert_int_equal(
      mt_class(MPI_Recv(&v, 1, MPI_INT, p + 3, 0, dup, MPI_STATUS_IGNORE)),
      MPI_ERR_RANK);
  assert_int_equal(handled_calls, 1);
  assert_ptr_equal(handled_comm, dup);
  assert_int_equal(mt_class(handled_code), MPI_ERR_RANK);
  assert_int_equal(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER), 0);
  assert_int_equal(handled_calls, 2);
  assert_int_equal(handled_code, MPI_ERR_OTHER);
  /* A dup inherits it, even after the handle is freed. */
  assert_int_equal(MPI_Errhandler_free(&eh), 0);
  {
    MPI_Comm dup2;
    MPI_Comm_dup(dup, &dup2);
    handled_calls = 0;
    MPI_Comm_call_errhandler(dup2, MPI_ERR_ARG);
    assert_int_equal(handled_calls, 1);
    assert_ptr_equal(handled_comm, dup2);
    MPI_Comm_free(&dup2);
  }
  MPI_Comm_free(&dup);
  /* Classes and strings. */
  assert_int_equal(MPI_Error_class(MPI_ERR_TRUNCATE, &cls), 0);
  assert_int_equal(cls, MPI_ERR_TRUNCATE);
  assert_int_equal(MPI_Error_string(MPI_ERR_TRUNCATE, text, &len), 0);
  assert_non_null(strstr(text, "MPI_ERR_TRUNCATE"));
  assert_int_equal(len, (int)strlen(text));
  assert_int_equal(MPI_Error_string(MPI_SUCCESS, text, &len), 0);
  /* A truncation's code carries libminimp's reason. */
  {
    int big[4] = {0}, small, code;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Send(big, 4, MPI_INT, mt_rank(), 9, MPI_COMM_WORLD);
    code = MPI_Recv(&small, 1, MPI_INT, mt_rank(), 9, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
    assert_int_equal(mt_class(code), MPI_ERR_TRUNCATE);
    assert_int_equal(MPI_Error_string(code, text, &len), 0);
    assert_non_null(strstr(text, "MMP_ETRUNC"));
    assert_int_equal(mt_class(MPI_Error_class(-4, &cls)), MPI_ERR_ARG);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  }
}

static int self_deleted;

static int self_delete(MPI_Comm comm, int keyval, void *value, void *extra) {
  int flag;

  (void)keyval, (void)value, (void)extra;
  /* MPI is still fully usable here. */
  MPI_Finalized(&flag);
  if (comm == MPI_COMM_SELF && !flag)
    self_deleted = 1;
  return MPI_SUCCESS;
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_environment),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_info),
      cmocka_unit_test(test_error_handlers),
  };
  int rc, key, provided = -1, flag;

  MPI_Initialized(&flag);
  if (flag)
    return 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided != MPI_THREAD_MULTIPLE)
    return 1;
  if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
    int v = 0;
    /* An invalid rank under MPI_ERRORS_ARE_FATAL: the job ends here. */
    MPI_Send(&v, 1, MPI_INT, mt_size(), 0, MPI_COMM_WORLD);
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "abort") == 0) {
    if (mt_rank() == mt_size() - 1)
      MPI_Abort(MPI_COMM_WORLD, 42);
    MPI_Barrier(MPI_COMM_WORLD); /* the others wait to be ended */
    return 0;
  }
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &key, NULL);
  MPI_Comm_set_attr(MPI_COMM_SELF, key, &key);
  if (MPI_Finalize() != MPI_SUCCESS || !self_deleted) {
    fprintf(stderr, "MPI_COMM_SELF's attribute was not deleted first\n");
    return 1;
  }
  MPI_Finalized(&flag);
  return flag ? rc : 1;
}
