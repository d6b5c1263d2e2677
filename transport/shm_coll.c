/* SPDX-License-Identifier: MIT */
/*
 * Node segments: the shared mappings a communicator's ranks on one host
 * use for collectives that read and write shared memory instead of
 * sending messages (runtime/node_coll.c). This file only creates, maps,
 * checks and removes them; what is inside is the runtime's.
 *
 * A segment is a POSIX shared-memory object of mode 0600. Its name
 * travels in a message, so the mapping side refuses any name that is not
 * of the form this file makes and any object that is not this user's,
 * of that mode and of exactly the size the layout implies: a rank never
 * maps memory another user could write, or less than it will touch.
 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "minimp.h"
#include "util.h"

#define MAP_PREFIX "/mmp-node-"

/* 1 if `name` is one this file could have made: the prefix, then hex
 * digits and dashes only, NUL-terminated within MMP__SHM_MAP_NAME. */
static int map_name_ok(const char *name) {
  size_t n = strnlen(name, MMP__SHM_MAP_NAME), k = strlen(MAP_PREFIX);

  if (n == MMP__SHM_MAP_NAME || n <= k || strncmp(name, MAP_PREFIX, k) != 0)
    return 0;
  for (; k < n; k++)
    if (!((name[k] >= '0' && name[k] <= '9') ||
          (name[k] >= 'a' && name[k] <= 'f') || name[k] == '-'))
      return 0;
  return 1;
}

static int map_fd(int fd, size_t bytes, mmp__shm_map_t *out) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

  close(fd);
  if (p == MAP_FAILED) {
    MMP__LOG(MMP__LOG_WARN, "node segment: mmap of %zu bytes: %s", bytes,
             strerror(errno));
    return MMP_ENOMEM;
  }
  out->base = p;
  out->bytes = bytes;
  return 0;
}

int mmp__shm_map_create(const char *tag, size_t bytes, mmp__shm_map_t *out,
                        char name[MMP__SHM_MAP_NAME]) {
  uint64_t r = 0;
  int fd;

  memset(out, 0, sizeof(*out));
  if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
    r ^= (uint64_t)getpid() << 20 ^ (uint64_t)(uintptr_t)out;
  snprintf(name, MMP__SHM_MAP_NAME, MAP_PREFIX "%.24s-%016llx", tag,
           (unsigned long long)r);
  if (!map_name_ok(name))
    return MMP_EIO;
  fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    MMP__LOG(MMP__LOG_WARN, "node segment %s: %s", name, strerror(errno));
    return MMP_EIO;
  }
  /* fchmod: the umask must not widen or narrow it. */
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)bytes) != 0) {
    MMP__LOG(MMP__LOG_WARN, "node segment %s: %s", name, strerror(errno));
    close(fd);
    shm_unlink(name);
    return MMP_EIO;
  }
  if (map_fd(fd, bytes, out) != 0) {
    shm_unlink(name);
    return MMP_ENOMEM;
  }
  return 0;
}

int mmp__shm_map_attach(const char *name, size_t bytes, mmp__shm_map_t *out) {
  struct stat st;
  int fd;

  memset(out, 0, sizeof(*out));
  if (!map_name_ok(name))
    return MMP_EINVAL;
  fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    MMP__LOG(MMP__LOG_WARN, "node segment %s: %s", name, strerror(errno));
    return MMP_EIO;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 0777) != 0600 || (uint64_t)st.st_size != bytes) {
    MMP__LOG(MMP__LOG_WARN,
             "node segment %s: not this user's, not mode 0600 or not %zu "
             "bytes; ignored",
             name, bytes);
    close(fd);
    return MMP_EIO;
  }
  return map_fd(fd, bytes, out) == 0 ? 0 : MMP_EIO;
}

void mmp__shm_map_unlink(const char *name) {
  if (name[0] != '\0')
    shm_unlink(name);
}

void mmp__shm_map_free(mmp__shm_map_t *m) {
  if (m->base != NULL)
    munmap(m->base, m->bytes);
  m->base = NULL;
  m->bytes = 0;
}
