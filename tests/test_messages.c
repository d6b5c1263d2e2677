/* SPDX-License-Identifier: MIT */
/*
 * What libminimp tells a user who got something wrong: calls made after a
 * failed, unchecked mmp_init (MMP_ENOTINIT, logged once), a missing or
 * malformed MINIMP_JOB_KEY (named as such, the secret never printed),
 * the log prefix before the rank is known, and the line a rank logs
 * when the job is aborted by a rank or stopped by the launcher.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/internal.h"

static char err_path[] = "/tmp/mmp-messages-XXXXXX";
static int saved_err = -1;
static char err_text[8192];

/* Sends stderr to a file until err_end(), which reads it into err_text. */
static void err_begin(void) {
  int fd = mkstemp(err_path);

  assert_true(fd >= 0);
  fflush(stderr);
  saved_err = dup(2);
  assert_true(saved_err >= 0);
  assert_int_equal(dup2(fd, 2), 2);
  close(fd);
}

static void err_end(void) {
  FILE *f;
  size_t n;

  fflush(stderr);
  assert_int_equal(dup2(saved_err, 2), 2);
  close(saved_err);
  f = fopen(err_path, "r");
  assert_non_null(f);
  n = fread(err_text, 1, sizeof(err_text) - 1, f);
  err_text[n] = '\0';
  fclose(f);
  unlink(err_path);
  strcpy(err_path, "/tmp/mmp-messages-XXXXXX");
}

static int count(const char *hay, const char *needle) {
  int n = 0;

  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

static void job_env(const char *key) {
  setenv("MINIMP_RANK", "0", 1);
  setenv("MINIMP_SIZE", "2", 1);
  setenv("MINIMP_BOOT_ADDR", "127.0.0.1:1", 1);
  if (key != NULL)
    setenv("MINIMP_JOB_KEY", key, 1);
  else
    unsetenv("MINIMP_JOB_KEY");
}

static void test_init_key_missing_is_named(void **state) {
  (void)state;
  job_env(NULL);
  err_begin();
  assert_int_equal(mmp_init(NULL, NULL), MMP_EENV);
  err_end();
  assert_non_null(strstr(err_text, "MINIMP_JOB_KEY is not set"));
  assert_null(strstr(err_text, "hex digits"));
  /* The rank is not known yet: the process id stands in, never "[]". */
  assert_non_null(strstr(err_text, "minimp[pid "));
  assert_null(strstr(err_text, "minimp[]"));
}

static void test_init_key_malformed_gives_length_not_key(void **state) {
  const char *key = "0123456789abcdef0123456789abcdeZ"; /* 32, one not hex */

  (void)state;
  job_env("abc");
  err_begin();
  assert_int_equal(mmp_init(NULL, NULL), MMP_EENV);
  err_end();
  assert_non_null(strstr(err_text,
                         "MINIMP_JOB_KEY must be 32 hex digits (it has 3 "
                         "characters)"));
  job_env(key);
  err_begin();
  assert_int_equal(mmp_init(NULL, NULL), MMP_EENV);
  err_end();
  assert_non_null(strstr(err_text, "(it has 32 characters, not all hex)"));
  assert_null(strstr(err_text, key));
}

static void test_calls_before_init_are_enotinit_logged_once(void **state) {
  char b = 0;

  (void)state;
  assert_null(mmp_comm_world());
  err_begin();
  assert_int_equal(mmp_comm_rank(mmp_comm_world()), MMP_ENOTINIT);
  assert_int_equal(mmp_comm_size(mmp_comm_world()), MMP_ENOTINIT);
  assert_int_equal(mmp_send(&b, 1, 0, 0, mmp_comm_world()), MMP_ENOTINIT);
  assert_int_equal(mmp_bcast(&b, 1, 0, mmp_comm_world()), MMP_ENOTINIT);
  assert_int_equal(mmp_comm_rank(mmp_comm_world()), MMP_ENOTINIT);
  err_end();
  assert_int_equal(count(err_text, "before a successful mmp_init"), 1);
  assert_non_null(strstr(err_text, "mmp_comm_rank called before"));
}

static void test_abort_text_names_rank_or_launcher(void **state) {
  char t[128];

  (void)state;
  mmp__abort_text(t, sizeof(t), -1, 110, "job timed out after 1 s");
  assert_string_equal(t,
                      "job stopped by the launcher (code 110): job timed out "
                      "after 1 s");
  mmp__abort_text(t, sizeof(t), 3, 5, "");
  assert_string_equal(t, "job aborted by rank 3 (code 5)");
  mmp__abort_text(t, sizeof(t), 0, 2, "bad input");
  assert_string_equal(t, "job aborted by rank 0 (code 2): bad input");
  mmp__abort_text(t, 12, 3, 5, "long message");
  assert_string_equal(t, "job aborted");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_key_missing_is_named),
      cmocka_unit_test(test_init_key_malformed_gives_length_not_key),
      cmocka_unit_test(test_calls_before_init_are_enotinit_logged_once),
      cmocka_unit_test(test_abort_text_names_rank_or_launcher),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
