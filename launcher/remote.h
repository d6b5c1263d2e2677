/* SPDX-License-Identifier: MIT */
/*
 * minimprun's side of starting ranks on other hosts: the control server of
 * ctrl.h, one agent invocation per host ("AGENT... HOST LAUNCHER --daemon
 * ADDR INDEX", all hosts at once), the job key written on each agent's
 * standard input, and the forwarding of minimprun's standard input to rank
 * 0 when it runs elsewhere. What the daemons report comes back through
 * callbacks, so the job treats a remote rank like a local one.
 *
 * Everything runs on the job's libuv loop; every function here must be
 * called there, and callbacks run there, never from inside a call of this
 * interface.
 */
#ifndef MMP_LAUNCHER_REMOTE_H
#define MMP_LAUNCHER_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "transport/frame.h" /* MMP__JOB_KEY_LEN */

#define MMP__REMOTE_START_MS 60000 /* an agent's daemon must connect back */

typedef struct mmp__remote_s mmp__remote_t;

typedef struct mmp__remote_cb_s {
  void *ctx;
  /* A rank was started with `pid` (err 0), or could not be (err is the
   * libuv error; no exit follows). */
  void (*started)(void *ctx, int rank, int pid, int err);
  /* A rank wrote `n` bytes on its fd 1 or 2; n 0 is the end of it. */
  void (*output)(void *ctx, int rank, int fd, const char *data, size_t n);
  /* A rank ended: its exit status, or the signal that killed it. */
  void (*exited)(void *ctx, int rank, int64_t status, int signo);
  /* The host with this id is gone: it could not be started, or its daemon
   * went away before reporting every rank. `msg` is the one-line report,
   * or NULL when the job was being stopped anyway and nothing was started
   * there. Nothing more is reported about its ranks. */
  void (*host_lost)(void *ctx, int id, const char *msg);
  /* The agent of the host with this id wrote `n` bytes on its fd 1 or 2
   * (the agent's or the daemon's own diagnostics); n 0 is the end of it. */
  void (*agent_output)(void *ctx, int id, int fd, const char *data, size_t n);
} mmp__remote_cb_t;

/* A host to start ranks on. */
typedef struct mmp__remote_host_s {
  const char *name; /* given to the agent; borrowed until stop */
  int id;           /* reported back in callbacks */
  const int *ranks; /* the ranks placed there, ascending; copied */
  int nranks;
  uint8_t *launch; /* its LAUNCH message (mmp__ctrl_finish), taken over */
  size_t launch_len;
} mmp__remote_host_t;

typedef struct mmp__remote_opts_s {
  const struct sockaddr *addr; /* where the control server listens */
  const uint8_t *key;          /* MMP__JOB_KEY_LEN bytes, copied */
  char *const *agent;   /* the agent's words, NULL-terminated; borrowed */
  const char *launcher; /* path of minimprun on the hosts; borrowed */
  int stdin_rank;       /* the rank on a remote host that reads our standard
                           input, or -1 */
  int encrypt;          /* seal the control connections after their handshake */
} mmp__remote_opts_t;

/*
 * Starts the control server and every host's agent. The LAUNCH messages
 * are taken over in every case. Returns 0, or MMP_ENOMEM, MMP_EIO
 * (libsodium cannot start), MMP_EADDR (the server cannot listen) with
 * nothing started; a host whose agent cannot be started is reported
 * through host_lost later.
 */
int mmp__remote_start(uv_loop_t *loop, const mmp__remote_opts_t *o,
                      mmp__remote_host_t *hosts, int nhosts,
                      const mmp__remote_cb_t *cb, mmp__remote_t **out);

/* Stops every rank everywhere: KILL to each daemon (SIGTERM, then SIGKILL
 * after 1.5 s there). Hosts not yet started are given up (host_lost with a
 * NULL message). */
void mmp__remote_kill(mmp__remote_t *rm);

/* Forwards SIGINT, SIGTERM or SIGKILL to every rank on every host. */
void mmp__remote_signal(mmp__remote_t *rm, int signo);

/*
 * Closes the server and every connection (a daemon whose connection drops
 * stops its ranks and exits); no callback runs afterwards. Agents still
 * running after 2 s get SIGTERM, and SIGKILL 2 s later; the loop runs
 * until they are gone, and `rm` is freed after that. Safe on NULL.
 */
void mmp__remote_stop(mmp__remote_t *rm);

#endif /* MMP_LAUNCHER_REMOTE_H */
