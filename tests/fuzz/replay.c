/* SPDX-License-Identifier: MIT */
/*
 * A main for a fuzz harness without libFuzzer: every build (gcc, ASan,
 * TSan) links each harness with this file and runs its corpus as a
 * regression test, so a decoder change that breaks an invariant on a
 * stored input fails `meson test` everywhere, not only where clang is.
 *
 *   replay_NAME PATH...      runs every file given, and every file of every
 *                            directory given (in name order); fails when
 *                            none was found
 *   replay_NAME --seeds DIR  writes the harness's seeds to DIR/seed-NAME
 *                            (tests/fuzz/gen_corpus.sh)
 *
 * A failed invariant aborts, so does a sanitizer report: either way the
 * process ends abnormally and the test fails, naming the input on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static const char *replay_dir;

static void replay_emit(const char *name, const void *data, size_t len) {
  char path[4096];
  FILE *f;

  snprintf(path, sizeof(path), "%s/seed-%s", replay_dir, name);
  f = fopen(path, "wb");
  if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "replay: cannot write %s: %s\n", path, strerror(errno));
    exit(1);
  }
}

/* Runs one file; returns 1 if it was one, 0 if it is not a regular file. */
static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0, got;

  if (f == NULL) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    exit(1);
  }
  do {
    if (len == cap) {
      cap = cap != 0 ? 2 * cap : 4096;
      buf = realloc(buf, cap);
      if (buf == NULL)
        abort();
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  fclose(f);
  /* Naming the input first makes a crash report point at it. */
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
  LLVMFuzzerTestOneInput(buf, len);
  free(buf);
  return 1;
}

static int replay_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of a directory, in name order. */
static int replay_dir_files(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char **names = NULL, path[4096];
  size_t n = 0, cap = 0, i;
  int count = 0;
  struct stat st;

  if (d == NULL) {
    fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
    exit(1);
  }
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap != 0 ? 2 * cap : 64;
      names = realloc(names, cap * sizeof(*names));
      if (names == NULL)
        abort();
    }
    names[n] = strdup(e->d_name);
    if (names[n++] == NULL)
      abort();
  }
  closedir(d);
  qsort(names, n, sizeof(*names), replay_cmp);
  for (i = 0; i < n; i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
      count += replay_file(path);
    free(names[i]);
  }
  free(names);
  return count;
}

int main(int argc, char **argv) {
  struct stat st;
  int i, count = 0;

  if (argc == 3 && strcmp(argv[1], "--seeds") == 0) {
    replay_dir = argv[2];
    fuzz_seeds(replay_emit);
    return 0;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH... | --seeds DIR\n", argv[0]);
    return 2;
  }
  for (i = 1; i < argc; i++) {
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    count +=
        S_ISDIR(st.st_mode) ? replay_dir_files(argv[i]) : replay_file(argv[i]);
  }
  if (count == 0) {
    fprintf(stderr, "replay: no input found\n");
    return 1;
  }
  printf("replayed %d input(s)\n", count);
  return 0;
}
