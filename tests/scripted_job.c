/* SPDX-License-Identifier: MIT */
/*
 * A program for test_launcher to run under minimprun. Every rank writes its
 * pid to $TEST_PIDDIR/<rank>, initialises, and then does what argv says:
 *
 *   ok               say hello and finalize
 *   exit R CODE      rank R exits with CODE; the others wait forever
 *   signal R SIG     rank R raises SIG; the others wait forever
 *   abort R CODE     rank R calls mmp_abort(CODE); the others wait forever
 *   nofinalize R     rank R returns 0 without mmp_finalize; others wait
 *   stopped R        every rank exchanges a message with rank R, which then
 *                    stops (SIGSTOP); the others, SIGTERM ignored, wait
 *                    for a second message from R, print "rank N saw
 *                    ERROR" and exit with code 9 (rank 0 waits instead).
 *                    Rank 0 alone uses a peer timeout of 1 s, so that it
 *                    is the one that notices
 *   hang             every rank sleeps forever
 *   env VAR...       print each VAR's value, then finalize; a VAR that
 *                    the environment holds twice is printed twice
 *   stdin            rank 0 echoes its standard input, then finalize
 *   killparent R SIG rank R sends SIG to its parent (the daemon of its
 *                    host, when started through one); the others wait
 *   keycheck         print "key visible" if the job key appears on any
 *                    process's command line, else "key hidden"; finalize
 *   attackboot N     rank 0 opens connections to the job's rendezvous
 *                    (MINIMP_BOOT_ADDR): one sending garbage, one that
 *                    answers the CHALLENGE with a HELLO and a PROOF under
 *                    a wrong key, then N more sending garbage, each until
 *                    the server closes it; it prints the local
 *                    address of the first two ("garbage ADDR", "wrongkey
 *                    ADDR"); then every rank finalizes
 *
 * It is also a stand-in for an rsh-like agent, so that minimprun's remote
 * start runs without ssh or root:
 *
 *   scripted_job agent HOST CMD ARGS...
 *
 * runs CMD ARGS here with MMP_TEST_HOST=HOST in its environment, as
 * "ssh HOST CMD ARGS" would run it there.
 */
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "minimp.h"
#include "transport/auth.h"
#include "transport/boot.h"
#include "transport/util.h"

extern char **environ;

static void record_pid(int rank) {
  const char *dir = getenv("TEST_PIDDIR");
  char path[512];
  FILE *f;

  if (dir == NULL)
    return;
  snprintf(path, sizeof(path), "%s/%d", dir, rank);
  f = fopen(path, "w");
  if (f != NULL) {
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  }
}

static void wait_forever(void) {
  char c;
  /* A receive nobody answers: the launcher must stop us. */
  mmp_recv(&c, 1, MMP_ANY_SOURCE, 12345, mmp_comm_world(), NULL);
  for (;;)
    pause();
}

/* 1 if `needle` is in any process's command line (as `ps` shows it). */
static int on_a_command_line(const char *needle) {
  DIR *d = opendir("/proc");
  struct dirent *de;
  int found = 0;

  if (d == NULL)
    return 0;
  while (!found && (de = readdir(d)) != NULL) {
    char path[300], buf[65536];
    size_t n, i;
    FILE *f;
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
    f = fopen(path, "r");
    if (f == NULL)
      continue;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    for (i = 0; i < n; i++)
      if (buf[i] == '\0')
        buf[i] = ' ';
    buf[n] = '\0';
    found = strstr(buf, needle) != NULL;
  }
  closedir(d);
  return found;
}

/* Connects to "host:port" or "[v6]:port"; returns the socket or -1. */
static int dial(const char *hostport) {
  char host[128];
  const char *colon = strrchr(hostport, ':');
  struct addrinfo hints, *ai;
  size_t n;
  int fd;

  if (colon == NULL || (n = (size_t)(colon - hostport)) >= sizeof(host))
    return -1;
  memcpy(host, hostport, n);
  host[n] = '\0';
  if (host[0] == '[') {
    memmove(host, host + 1, n);
    host[strcspn(host, "]")] = '\0';
  }
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
    return -1;
  fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  return fd;
}

/* Prints "LABEL ADDR" with the local end of fd. */
static void print_local(int fd, const char *label) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  char host[64], port[16];

  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
      getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port,
                  sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
    printf("%s %s:%s\n", label, host, port);
}

/* Reads until the server closes fd, then closes it. */
static void drain_close(int fd) {
  char buf[256];

  while (recv(fd, buf, sizeof(buf), 0) > 0)
    continue;
  close(fd);
}

/* Sends `msg` on a new connection to the rendezvous and reads until the
 * server closes it. Prints "LABEL ADDR" (our end) unless label is NULL. */
static int attack_once(const char *boot, const void *msg, size_t n,
                       const char *label) {
  int fd = dial(boot);

  if (fd < 0)
    return -1;
  if (label != NULL)
    print_local(fd, label);
  if (send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n) {
    close(fd);
    return -1;
  }
  drain_close(fd);
  return 0;
}

/*
 * A client that speaks the rendezvous handshake (transport/boot.h) but
 * holds the wrong key: HELLO as rank 0 of 0, then, after the server's
 * CHALLENGE, a PROOF that is a genuine MAC over both bodies under a key
 * that is not the job's. Prints "LABEL ADDR".
 */
static int attack_wrong_key(const char *boot, const char *label) {
  uint8_t hello[MMP__BOOT_HDR_SIZE + MMP__NONCE_LEN + 12 + 2 + 3];
  uint8_t in[MMP__BOOT_HDR_SIZE + MMP__NONCE_LEN];
  uint8_t proof[MMP__BOOT_HDR_SIZE + MMP__MAC_LEN], bad[MMP__JOB_KEY_LEN];
  mmp__boot_hdr_t h = {MMP__B_HELLO, 0, sizeof(hello) - MMP__BOOT_HDR_SIZE};
  uint8_t *body = hello + MMP__BOOT_HDR_SIZE;
  mmp__auth_t a;
  size_t i;
  int fd;

  if (mmp__auth_init() != 0 || (fd = dial(boot)) < 0)
    return -1;
  print_local(fd, label);
  for (i = 0; i < sizeof(bad); i++)
    bad[i] = (uint8_t)(0x5a ^ i); /* not the job's key */
  mmp__boot_hdr_encode(&h, hello);
  mmp__auth_nonce(body);
  memset(body + MMP__NONCE_LEN, 0, 12); /* rank 0, size 0, pid 0 */
  mmp__put_u16(body + MMP__NONCE_LEN + 12, 3);
  memcpy(body + MMP__NONCE_LEN + 14, "bad", 3);
  if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello) ||
      recv(fd, in, sizeof(in), MSG_WAITALL) != (ssize_t)sizeof(in) ||
      in[5] != MMP__B_CHALLENGE) {
    close(fd);
    return -1;
  }
  mmp__auth_begin(&a, bad, MMP__AUTH_BOOT, body, h.len, in + MMP__BOOT_HDR_SIZE,
                  MMP__NONCE_LEN);
  h.type = MMP__B_PROOF;
  h.len = MMP__MAC_LEN;
  mmp__boot_hdr_encode(&h, proof);
  mmp__auth_mac(&a, MMP__AUTH_DIALER, MMP__AUTH_PROVE,
                proof + MMP__BOOT_HDR_SIZE);
  mmp__auth_end(&a);
  if (send(fd, proof, sizeof(proof), MSG_NOSIGNAL) != (ssize_t)sizeof(proof)) {
    close(fd);
    return -1;
  }
  drain_close(fd);
  return 0;
}

static int attack_boot(int count) {
  const char *boot = getenv("MINIMP_BOOT_ADDR");
  static const char junk[32] = "GET / HTTP/1.0\r\n\r\nnot a HELLO";
  int i;

  if (boot == NULL || attack_once(boot, junk, sizeof(junk), "garbage") != 0 ||
      attack_wrong_key(boot, "wrongkey") != 0)
    return -1;
  for (i = 0; i < count; i++)
    if (attack_once(boot, junk, sizeof(junk), NULL) != 0)
      return -1;
  return 0;
}

/* "agent HOST CMD ARGS...": what ssh would do, on this machine. */
static int be_agent(int argc, char **argv) {
  if (argc < 4)
    return 255;
  setenv("MMP_TEST_HOST", argv[2], 1);
  execvp(argv[3], argv + 3);
  fprintf(stderr, "scripted_job agent: cannot run %s: %s\n", argv[3],
          strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

int main(int argc, char **argv) {
  const char *env_rank = getenv("MINIMP_RANK");
  int rank, size, who;

  if (argc > 1 && strcmp(argv[1], "agent") == 0)
    return be_agent(argc, argv);
  record_pid(env_rank ? atoi(env_rank) : 0);
  if (argc > 1 && strcmp(argv[1], "stopped") == 0) {
    signal(SIGTERM, SIG_IGN); /* it must still report after the stop */
    if (env_rank != NULL && atoi(env_rank) == 0)
      setenv("MINIMP_PEER_TIMEOUT_MS", "1000", 1);
  }
  if (argc < 2 || mmp_init(&argc, &argv) != 0)
    return 3;
  rank = mmp_comm_rank(mmp_comm_world());
  size = mmp_comm_size(mmp_comm_world());
  who = argc > 2 ? atoi(argv[2]) : -1;

  if (strcmp(argv[1], "ok") == 0) {
    printf("hello from %d of %d\n", rank, size);
  } else if (strcmp(argv[1], "exit") == 0) {
    if (rank == who)
      exit(atoi(argv[3]));
    wait_forever();
  } else if (strcmp(argv[1], "signal") == 0) {
    if (rank == who)
      raise(atoi(argv[3]));
    wait_forever();
  } else if (strcmp(argv[1], "abort") == 0) {
    if (rank == who)
      mmp_abort(atoi(argv[3]));
    wait_forever();
  } else if (strcmp(argv[1], "nofinalize") == 0) {
    if (rank == who)
      return 0;
    wait_forever();
  } else if (strcmp(argv[1], "stopped") == 0) {
    mmp_comm_t *w = mmp_comm_world();
    int v = 0, i, rc;
    if (rank == who) {
      for (i = 0; i < size; i++)
        if (i != who && (mmp_recv(&v, sizeof(v), i, 8, w, NULL) != 0 ||
                         mmp_send(&v, sizeof(v), i, 8, w) != 0))
          return 7;
      raise(SIGSTOP);
      wait_forever();
    }
    if (mmp_send(&v, sizeof(v), who, 8, w) != 0 ||
        mmp_recv(&v, sizeof(v), who, 8, w, NULL) != 0)
      return 7;
    rc = mmp_recv(&v, sizeof(v), who, 9, w, NULL);
    printf("rank %d saw %s\n", rank, mmp_err_name(rc));
    fflush(stdout);
    if (rank == 0) /* its going would tell the others */
      wait_forever();
    exit(9);
  } else if (strcmp(argv[1], "killparent") == 0) {
    if (rank == who)
      kill(getppid(), atoi(argv[3]));
    wait_forever();
  } else if (strcmp(argv[1], "keycheck") == 0) {
    const char *key = getenv("MINIMP_JOB_KEY");
    printf("%d key %s\n", rank,
           key != NULL && on_a_command_line(key) ? "visible" : "hidden");
  } else if (strcmp(argv[1], "attackboot") == 0) {
    if (rank == 0 && attack_boot(who) != 0)
      return 6;
  } else if (strcmp(argv[1], "hang") == 0) {
    for (;;)
      pause();
  } else if (strcmp(argv[1], "env") == 0) {
    for (int i = 2; i < argc; i++) {
      size_t len = strlen(argv[i]);
      int found = 0;
      /* Every entry, not getenv's first: a duplicate is a launcher bug. */
      for (char **e = environ; *e != NULL; e++)
        if (strncmp(*e, argv[i], len) == 0 && (*e)[len] == '=') {
          printf("%d %s\n", rank, *e);
          found = 1;
        }
      if (!found)
        printf("%d %s=(unset)\n", rank, argv[i]);
    }
  } else if (strcmp(argv[1], "stdin") == 0) {
    if (rank == 0) {
      char line[256];
      while (fgets(line, sizeof(line), stdin) != NULL)
        printf("got: %s", line);
    }
  } else {
    return 4;
  }
  fflush(stdout);
  return mmp_finalize() == 0 ? 0 : 5;
}
