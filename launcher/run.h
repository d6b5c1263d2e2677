/* SPDX-License-Identifier: MIT */
/*
 * The state of one minimprun job, shared by the files that make up the
 * launcher's front end: minimprun.c (starting, judging and ending the job),
 * run_opts.c (the command line), run_place.c (placement and the listen
 * address), run_remote.c (starting the other hosts' daemons), run_env.c
 * (what the ranks' environment adds) and run_output.c (forwarding the
 * ranks' output). The per-host daemon (daemon.c) does not use it.
 */
#ifndef MMP_LAUNCHER_RUN_H
#define MMP_LAUNCHER_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "hosts.h"
#include "remote.h"
#include "transport/boot.h"
#include "transport/frame.h" /* MMP__JOB_KEY_LEN */

#define MMP__RUN_EXIT_USAGE 2 /* a bad command line or host list */

typedef struct mmp__run_job_s mmp__run_job_t;
typedef struct mmp__run_rank_s mmp__run_rank_t;

/* One forwarded output stream: a rank's, or an agent's. */
typedef struct mmp__run_out_s {
  uv_pipe_t pipe; /* a local rank's pipe */
  mmp__run_job_t *job;
  const char *tag; /* put before every line */
  int fd;          /* 1 or 2: where the lines go */
  int piped;       /* uv_pipe_init ran on `pipe` */
  int inited;      /* the stream exists */
  int closed;      /* ended (and uv_close ran on a pipe) */
  char *buf;       /* the unfinished line */
  size_t len;
  size_t cap;
} mmp__run_out_t;

struct mmp__run_rank_s {
  mmp__run_job_t *job;
  int rank;
  int host;   /* index into job->hl */
  int remote; /* started by the daemon of its host */
  int local_rank;
  int local_size;
  uv_process_t proc;
  int spawned;
  int exited;
  int pid;
  int64_t status;
  int signo;
  int joined; /* completed the bootstrap HELLO */
  int lost;   /* its bootstrap connection ended without BYE */
  char lost_reason[128];
  char tag[24]; /* "[3] " with --tag-output, else "" */
  int outfd[2]; /* --output-filename: its stdout and stderr files, or 0 */
  mmp__run_out_t out[2];
};

struct mmp__run_job_s {
  uv_loop_t loop;
  /* Options. */
  int n;
  int tag_output;
  long timeout_s;
  int verbose;
  char **exports; /* -x arguments */
  int nexports;
  char **argv; /* program and its arguments */
  int map_policy;
  int oversubscribe;
  int have_hosts;       /* --host or --hostfile was given */
  const char *hostfile; /* --hostfile */
  const char *agent;    /* --agent, as given */
  const char *launcher; /* --launcher */
  const char *iface;    /* --iface */
  int encrypt;          /* --encrypt */
  int ignore_alloc;     /* --ignore-allocation */
  const char *alloc;    /* "Slurm" or "PBS": the hosts came from it */
  int npernode;         /* -N: ranks per host, 0 if not given */
  int bind_core;        /* --bind-to core */
  int report_bindings;  /* --report-bindings */
  const char *wdir;     /* --wdir, made absolute; NULL: ours */
  char *wdir_abs;       /* owned copy of an absolute --wdir */
  const char *outdir;   /* --output-filename */
  char exe[4096];       /* our own path, the default --launcher */
  /* Placement. */
  mmp__hostlist_t hl;
  mmp__run_rank_t *ranks;
  int nremote; /* ranks on remote hosts */
  /* The environment added to every rank: -x, then ours. */
  char **xenv; /* "NAME=VALUE", borrowed */
  int nxenv;
  char jobvars[5][160]; /* MINIMP_SIZE, _BOOT_ADDR, _JOB_KEY, _IFACE,
                           _ENCRYPT */
  int njobvars;
  char *libpath; /* "LD_LIBRARY_PATH=...", owned, or NULL (run_env.c) */
  /* Bootstrap. */
  uint8_t key[MMP__JOB_KEY_LEN];
  char keyhex[2 * MMP__JOB_KEY_LEN + 1];
  struct sockaddr_storage listen_addr;
  char boot_addr[64];
  mmp__boot_server_t *boot;
  int all_done;
  int njoined;        /* ranks that completed HELLO */
  int unjoined_exits; /* ranks that exited 0 without HELLO */
  /* Other hosts. */
  mmp__remote_t *remote;
  mmp__run_out_t *agent_out; /* [2 * hosts]: each agent's stdout and stderr */
  /* Handles of the job itself. */
  uv_signal_t sigint;
  uv_signal_t sigterm;
  uv_timer_t timeout_timer;
  uv_timer_t kill_timer;
  uv_timer_t grace_timer;
  uv_timer_t unjoined_timer;
  uv_timer_t end_timer;
  uv_timer_t remote_timer; /* give up hosts that do not report */
  int nsignals;
  int nrunning;    /* started (or handed to a daemon) and not yet ended */
  int open_pipes;  /* rank output streams not yet at EOF */
  int end_started; /* the drain timer runs */
  int end_expired;
  int finishing;
  /* Failure. */
  int failed;
  int exit_code;
  mmp__run_rank_t *first_lost; /* waiting RUN_LOST_GRACE_MS for its exit */
  int deferred;                /* a failure seen during that wait */
  int deferred_code;
  int deferred_rank;
  char deferred_msg[512];
  /* Output. */
  char *scratch;
  size_t scratch_len;
  size_t scratch_cap;
  char rbuf[65536];
};

#endif /* MMP_LAUNCHER_RUN_H */
