/* SPDX-License-Identifier: MIT */
/*
 * Starting the ranks of minimprun's job on other hosts (see
 * run_remote.h): one LAUNCH message per host, with the program, the
 * environment every rank there shares and each rank's own three
 * variables, handed to remote.c with the agent and the launcher that start
 * the host's daemon. What the daemons report later goes to the job's
 * callbacks in minimprun.c, which treat a remote rank like a local one.
 */
#include "run_remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ctrl.h"
#include "hosts.h"
#include "minimp.h"
#include "run_env.h"
#include "run_opts.h"
#include "run_output.h"
#include "transport/boot.h"

/* The LAUNCH message of host h: the program, the shared environment and
 * its ranks. Returns 0 or MMP_ENOMEM. */
static int run_encode_launch(mmp__run_job_t *j, int h, char **shared,
                             const char *cwd, mmp__remote_host_t *rh) {
  char vars[3][48], *v[3];
  mmp__boot_wr_t w;
  int r;

  mmp__boot_wr_init(&w);
  unsigned flags = (j->verbose ? MMP__CTRL_LAUNCH_VERBOSE : 0) |
                   (j->bind_core ? MMP__CTRL_LAUNCH_BIND_CORE : 0) |
                   (j->report_bindings ? MMP__CTRL_LAUNCH_REPORT_BINDINGS : 0) |
                   (j->wdir != NULL ? MMP__CTRL_LAUNCH_WDIR : 0);

  mmp__ctrl_launch_begin(&w, flags, j->wdir != NULL ? j->wdir : cwd, j->argv,
                         shared, j->hl.hosts[h].nranks);
  for (r = 0; r < j->n; r++) {
    if (j->ranks[r].host != h)
      continue;
    mmp__run_rank_vars(&j->ranks[r], vars, v);
    mmp__ctrl_launch_rank(&w, r, r == 0 ? MMP__CTRL_RANK_STDIN : 0, v, 3);
  }
  if (mmp__ctrl_finish(&w, MMP__C_LAUNCH) != 0)
    return MMP_ENOMEM;
  rh->launch = w.buf;
  rh->launch_len = w.len;
  return 0;
}

/* Fills the host table of mmp__remote_start(): every other host with
 * ranks, its ranks (kept in `ranks`, which has room for all j->n) and its
 * LAUNCH message, whose shared environment is `env`. Returns the number
 * of hosts, or -1 without memory (the messages made so far are in `rh`). */
static int run_remote_hosts(mmp__run_job_t *j, mmp__remote_host_t *rh,
                            int *ranks, char **env, const char *cwd) {
  int h, r, nrh = 0, used = 0;

  for (h = 0; h < j->hl.n; h++) {
    mmp__host_t *host = &j->hl.hosts[h];
    if (host->local || host->nranks == 0)
      continue;
    rh[nrh].name = host->name;
    rh[nrh].id = h;
    rh[nrh].ranks = ranks + used;
    for (r = 0; r < j->n; r++)
      if (j->ranks[r].host == h)
        ranks[used++] = r;
    rh[nrh].nranks = host->nranks;
    if (run_encode_launch(j, h, env, cwd, &rh[nrh]) != 0)
      return -1;
    nrh++;
  }
  return nrh;
}

/* Starts the control server and one agent per remote host. Returns 0,
 * MMP_ENOMEM or MMP_EADDR. */
static int run_start_remote(mmp__run_job_t *j, char **agent,
                            const char *launcher, const mmp__remote_cb_t *cb) {
  mmp__remote_opts_t o;
  mmp__remote_host_t *rh = calloc((size_t)j->hl.n, sizeof(*rh));
  int *ranks = malloc((size_t)j->n * sizeof(*ranks));
  char **env = mmp__run_remote_env(j), cwd[4096];
  size_t cwdlen = sizeof(cwd);
  int nrh = -1, rc = MMP_ENOMEM, h, r, k;

  j->agent_out = calloc((size_t)j->hl.n * 2, sizeof(*j->agent_out));
  if (uv_cwd(cwd, &cwdlen) != 0)
    snprintf(cwd, sizeof(cwd), "/");
  if (rh != NULL && ranks != NULL && env != NULL && j->agent_out != NULL)
    nrh = run_remote_hosts(j, rh, ranks, env, cwd);
  memset(&o, 0, sizeof(o));
  o.addr = (const struct sockaddr *)&j->listen_addr;
  o.key = j->key;
  o.agent = agent;
  o.launcher = launcher;
  o.stdin_rank = j->ranks[0].remote ? 0 : -1;
  o.encrypt = j->encrypt;
  if (nrh >= 0)
    rc = mmp__remote_start(&j->loop, &o, rh, nrh, cb, &j->remote);
  else
    for (h = 0; h < j->hl.n; h++)
      free(rh != NULL ? rh[h].launch : NULL);
  free(rh);
  free(ranks);
  free(env);
  if (rc != 0)
    return rc;
  for (h = 0; h < j->hl.n; h++)
    for (k = 0; k < 2; k++)
      mmp__run_out_init(&j->agent_out[2 * h + k], j, "", k + 1);
  for (r = 0; r < j->n; r++) {
    if (!j->ranks[r].remote)
      continue;
    mmp__run_rank_outs_init(&j->ranks[r]);
    j->nrunning++;
    j->open_pipes += 2;
  }
  return 0;
}

int mmp__run_begin_remote(mmp__run_job_t *j, const mmp__remote_cb_t *cb,
                          char ***agentv) {
  size_t len = sizeof(j->exe);
  const char *launcher = j->launcher;
  int rc;

  *agentv = mmp__run_split_words(j->agent);
  if (launcher == NULL && uv_exepath(j->exe, &len) == 0)
    launcher = j->exe;
  if (*agentv == NULL || launcher == NULL) {
    mmp__say("cannot find minimprun's own path; give --launcher");
    return 1;
  }
  rc = run_start_remote(j, *agentv, launcher, cb);
  if (rc != 0) {
    mmp__say("cannot start the control service: %s", mmp__errstr(rc));
    return 1;
  }
  return 0;
}
