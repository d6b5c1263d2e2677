/* SPDX-License-Identifier: MIT */
/*
 * Where minimprun's job runs: the placement of its ranks on the hosts
 * (hosts.c does the mapping; this fills in the job's rank table from it)
 * and the address on which minimprun's own servers listen, the bootstrap
 * service and the control service of the daemons. Both are settled before
 * the job's loop exists; neither starts anything.
 */
#ifndef MMP_LAUNCHER_RUN_PLACE_H
#define MMP_LAUNCHER_RUN_PLACE_H

#include "run.h"

/*
 * Places the j->n ranks on j->hl: without --host or --hostfile, all on
 * this machine, which then has as many slots as ranks. Marks the hosts
 * that are this machine, allocates j->ranks (the caller frees it whatever
 * this returns) and sets each rank's host, local rank and size and tag,
 * and j->nremote. Returns 0, MMP__RUN_EXIT_USAGE when the ranks do not fit
 * the hosts (reported on stderr), or 1 without memory (not reported).
 */
int mmp__run_place(mmp__run_job_t *j);

/*
 * Chooses j->listen_addr, once the ranks are placed: the --iface address;
 * else, with ranks on other hosts, the local address that routes to the
 * first of those hosts; else 127.0.0.1. Returns 0, or MMP__RUN_EXIT_USAGE
 * when there is no such address or it would be a wildcard one (reported
 * on stderr).
 */
int mmp__run_listen_addr(mmp__run_job_t *j);

#endif /* MMP_LAUNCHER_RUN_PLACE_H */
