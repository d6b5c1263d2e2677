/* SPDX-License-Identifier: MIT */
/*
 * Helpers for tests that fork the ranks of an embedded job themselves
 * (mmp_init_ex): a free port for the rendezvous, and a child's exit code.
 * Header-only; include it after cmocka.h.
 */
#ifndef MMP_TESTS_EMBED_UTIL_H
#define MMP_TESTS_EMBED_UTIL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Binds port 0 on 127.0.0.1, notes the port the kernel chose, closes. The
 * port may be taken again before it is used; the tests accept that race. */
static inline int free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;

  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  getsockname(fd, (struct sockaddr *)&a, &len);
  port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* Reaps `pid`: its exit status, or 100 + the signal that killed it. */
static inline int exit_code(pid_t pid) {
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

#endif /* MMP_TESTS_EMBED_UTIL_H */
