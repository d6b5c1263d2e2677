/* SPDX-License-Identifier: MIT */
/*
 * The bytes a process has allocated from the heap, now, and their peak
 * over a stretch of work, for the tests and benchmarks that bound what
 * a flood of messages may cost: glibc's count (mallinfo2) in plain
 * builds, the sanitizer allocator's where ASan or TSan replace malloc.
 * A sampling thread reads the count every 200 us while the work runs.
 */
#ifndef MMP_TESTS_HEAP_UTIL_H
#define MMP_TESTS_HEAP_UTIL_H

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEAP_SANITIZER 1
#endif
#endif

#ifdef HEAP_SANITIZER
/* The sanitizers' allocator interface (declared here: GCC ships no
 * sanitizer/allocator_interface.h). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

/* Bytes allocated and not freed, the whole process. */
static inline uint64_t heap_in_use(void) {
#ifdef HEAP_SANITIZER
  return (uint64_t)__sanitizer_get_current_allocated_bytes();
#else
  struct mallinfo2 mi = mallinfo2();
  return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
#endif
}

typedef struct heap_peak_s {
  pthread_t thread;
  atomic_int stop;
  _Atomic uint64_t peak;
} heap_peak_t;

static inline void heap_peak_note(heap_peak_t *h) {
  uint64_t v = heap_in_use(), p = atomic_load(&h->peak);
  while (v > p && !atomic_compare_exchange_weak(&h->peak, &p, v))
    ;
}

static inline void *heap_peak_main(void *arg) {
  heap_peak_t *h = arg;
  struct timespec ts = {0, 200 * 1000};

  while (!atomic_load(&h->stop)) {
    heap_peak_note(h);
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* Starts sampling; returns 0 or an error of pthread_create. */
static inline int heap_peak_start(heap_peak_t *h) {
  atomic_init(&h->stop, 0);
  atomic_init(&h->peak, heap_in_use());
  return pthread_create(&h->thread, NULL, heap_peak_main, h);
}

/* Stops sampling; returns the peak seen (the work's callers may also
 * note points of their own with heap_peak_note). */
static inline uint64_t heap_peak_stop(heap_peak_t *h) {
  atomic_store(&h->stop, 1);
  pthread_join(h->thread, NULL);
  heap_peak_note(h);
  return atomic_load(&h->peak);
}

#endif /* MMP_TESTS_HEAP_UTIL_H */
