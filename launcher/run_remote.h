/* SPDX-License-Identifier: MIT */
/*
 * minimprun's start of the ranks placed on other hosts: one daemon per
 * such host, started through the agent (--agent, "ssh" by default)
 * running minimprun (--launcher, by default our own path) there, and told
 * its ranks over the control connection (remote.c). Nothing here judges
 * how those ranks end: the daemons' reports go to callbacks that the job
 * (minimprun.c) passes in, so this file never calls back into the job.
 */
#ifndef MMP_LAUNCHER_RUN_REMOTE_H
#define MMP_LAUNCHER_RUN_REMOTE_H

#include "remote.h"
#include "run.h"

/*
 * Starts the control service and the agent of every other host with
 * ranks. Call it once, on j->loop, with j->nremote > 0, after the ranks
 * are placed and mmp__run_job_env has run. `cb` (copied) receives what the
 * daemons report; its ctx is given back to every callback.
 *
 * On success the output streams of the remote ranks and of every agent
 * (j->agent_out, allocated here; the caller frees it whatever this
 * returns) are set up, and the remote ranks count in j->nrunning and
 * their streams in j->open_pipes. *agentv is set to the agent's words,
 * which the control service borrows until mmp__remote_stop: the caller
 * frees them after the loop has ended, whatever this returns.
 *
 * Returns 0, or 1 with nothing started (the reason reported on stderr).
 */
int mmp__run_begin_remote(mmp__run_job_t *j, const mmp__remote_cb_t *cb,
                          char ***agentv);

#endif /* MMP_LAUNCHER_RUN_REMOTE_H */
