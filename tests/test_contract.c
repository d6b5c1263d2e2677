/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the debug-build contract checks: the record of which thread
 * holds engine.lock (mmp__lock, mmp__cond_timedwait) and the record of which
 * thread runs a shared loop (mmp__loop_share, mmp__loop_enter). In a build with
 * NDEBUG nothing is recorded, and the tests skip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "runtime/internal.h"

/* Only its address matters to the checks. */
static uv_loop_t test_loop;

typedef struct other_s {
  mmp__engine_t *e;
  const uv_loop_t *loop;
  int held;     /* mmp__lock_held() as the other thread sees it */
  int in_loop;  /* mmp__loop_check() as the other thread sees it */
  uintptr_t id; /* its mmp__thread_self() */
} other_t;

static void other_main(void *arg) {
  other_t *o = arg;

  o->held = mmp__lock_held(o->e);
  o->in_loop = mmp__loop_check(o->loop);
  o->id = mmp__thread_self();
}

/* Runs other_main in a thread of its own and waits for it. */
static void run_other(other_t *o) {
  uv_thread_t t;

  assert_int_equal(uv_thread_create(&t, other_main, o), 0);
  assert_int_equal(uv_thread_join(&t), 0);
}

static int setup(void **state) {
  mmp__engine_t *e = calloc(1, sizeof(*e));

  if (e == NULL || uv_mutex_init(&e->lock) != 0 || uv_cond_init(&e->cv) != 0)
    return -1;
  atomic_init(&e->lock_owner, 0);
  *state = e;
  return 0;
}

static int teardown(void **state) {
  mmp__engine_t *e = *state;

  uv_cond_destroy(&e->cv);
  uv_mutex_destroy(&e->lock);
  free(e);
  return 0;
}

static void test_lock_owner_is_the_locking_thread(void **state) {
  mmp__engine_t *e = *state;
  other_t o = {e, NULL, -1, -1, 0};

#ifdef NDEBUG
  skip();
#endif
  assert_int_equal(mmp__lock_held(e), 0);
  mmp__lock(e);
  assert_int_equal(mmp__lock_held(e), 1);
  run_other(&o);
  assert_int_equal(o.held, 0); /* held, but not by that thread */
  assert_true(o.id != 0 && o.id != mmp__thread_self());
  mmp__unlock(e);
  assert_int_equal(mmp__lock_held(e), 0);
  assert_true(atomic_load(&e->lock_owner) == 0);
}

static void test_lock_cond_wait_restores_owner(void **state) {
  mmp__engine_t *e = *state;

#ifdef NDEBUG
  skip();
#endif
  mmp__lock(e);
  assert_int_equal(mmp__cond_timedwait(e, &e->cv, 1000 * 1000), UV_ETIMEDOUT);
  assert_true(atomic_load(&e->lock_owner) == mmp__thread_self());
  assert_int_equal(mmp__lock_held(e), 1);
  mmp__unlock(e);
}

static void test_loop_unshared_is_not_checked(void **state) {
  (void)state;

  /* minimprun and the unit tests run their loops in one thread. */
  assert_int_equal(mmp__loop_check(&test_loop), 1);
  assert_null(mmp__loop_current());
}

static void test_loop_shared_needs_the_turn(void **state) {
  mmp__engine_t *e = *state;
  other_t o = {e, &test_loop, -1, -1, 0};

  mmp__loop_share(&test_loop);
  assert_int_equal(mmp__loop_check(&test_loop), 0);
  mmp__loop_enter(&test_loop);
  assert_ptr_equal(mmp__loop_current(), &test_loop);
  assert_int_equal(mmp__loop_check(&test_loop), 1);
  run_other(&o);
  assert_int_equal(o.in_loop, 0); /* this thread has the turn, not that one */
  mmp__loop_leave(&test_loop);
  assert_int_equal(mmp__loop_check(&test_loop), 0);
  mmp__loop_share(NULL);
  assert_int_equal(mmp__loop_check(&test_loop), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lock_owner_is_the_locking_thread,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_lock_cond_wait_restores_owner, setup,
                                      teardown),
      cmocka_unit_test(test_loop_unshared_is_not_checked),
      cmocka_unit_test_setup_teardown(test_loop_shared_needs_the_turn, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
