/* SPDX-License-Identifier: MIT */
/*
 * A free TCP port on the loopback, for tests that host a rendezvous
 * themselves (mmp_init_ex). Header-only; include it after cmocka.h.
 */
#ifndef MMP_TESTS_PORT_UTIL_H
#define MMP_TESTS_PORT_UTIL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
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

#endif /* MMP_TESTS_PORT_UTIL_H */
