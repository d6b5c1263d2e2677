/* SPDX-License-Identifier: MIT */
/*
 * What minimprun adds to its ranks' environment. Every local rank gets the
 * parent's environment plus MINIMP_RANK, MINIMP_SIZE, MINIMP_LOCAL_RANK,
 * MINIMP_LOCAL_SIZE, MINIMP_BOOT_ADDR, MINIMP_JOB_KEY, MINIMP_IFACE (with
 * --iface), MINIMP_ENCRYPT=1 (with --encrypt) and the -x variables, and,
 * when minimprun runs from an installed tree, LD_LIBRARY_PATH led by that
 * tree's library directory (unless -x sets it), so that programs linked
 * without a run path find the libminimp minimprun belongs to; a remote
 * rank gets its daemon's environment plus those and every other MINIMP_*
 * variable of ours (Open MPI forwards only its own variables and -x ones
 * too), except the key, which its daemon adds: the daemon got it through
 * the agent. The last -x of a name wins. -x cannot set the variables that
 * minimprun sets itself: the command line naming one is refused
 * (mmp__run_env_owned), since a rank would otherwise get two entries of the
 * name, or a MINIMP_SIZE that does not match the job.
 */
#ifndef MMP_LAUNCHER_RUN_ENV_H
#define MMP_LAUNCHER_RUN_ENV_H

#include <stddef.h>

#include "run.h"

/*
 * Fills j->xenv with the -x variables as "NAME=VALUE" entries (an -x NAME
 * that is not set here is left out, with a warning on stderr) and
 * j->jobvars with MINIMP_SIZE, MINIMP_BOOT_ADDR, MINIMP_JOB_KEY, with
 * --iface MINIMP_IFACE and with --encrypt MINIMP_ENCRYPT=1, and
 * j->libpath. Call it once j->boot_addr and j->keyhex are set. The caller frees
 * j->xenv (the array only) and j->libpath. Returns 0 or MMP_ENOMEM.
 */
int mmp__run_job_env(mmp__run_job_t *j);

/* Writes rank r's MINIMP_RANK, MINIMP_LOCAL_RANK and MINIMP_LOCAL_SIZE
 * entries into `vars` and points v[0..2] at them. */
void mmp__run_rank_vars(const mmp__run_rank_t *r, char vars[3][48], char *v[3]);

/*
 * If the -x entry `entry` ("NAME" or "NAME=VALUE") names a variable that
 * minimprun sets itself in the ranks of job `j` (MINIMP_RANK, MINIMP_SIZE,
 * MINIMP_LOCAL_RANK, MINIMP_LOCAL_SIZE, MINIMP_BOOT_ADDR, MINIMP_JOB_KEY,
 * MINIMP_IFACE with --iface and MINIMP_ENCRYPT with --encrypt), returns
 * that name (a static string);
 * else NULL. Needs only the options of `j`.
 */
const char *mmp__run_env_owned(const mmp__run_job_t *j, const char *entry);

/*
 * Every entry added to a rank's environment but its own three: the -x
 * entries, then the job's variables and j->libpath, where no -x sets
 * them. Returns a
 * NULL-terminated array of borrowed strings and its length in *count; the
 * caller frees the array only. Returns NULL without memory.
 */
char **mmp__run_shared_env(mmp__run_job_t *j, size_t *count);

/*
 * What a remote rank's environment adds to its daemon's: every MINIMP_*
 * variable of ours that neither the shared entries nor the per-rank three
 * set, then the shared entries, all but MINIMP_JOB_KEY, which the daemon
 * adds itself (it never travels on the control connection). Returns a
 * NULL-terminated array of borrowed strings, which the caller frees (the array
 * only), or NULL without memory.
 */
char **mmp__run_remote_env(mmp__run_job_t *j);

#endif /* MMP_LAUNCHER_RUN_ENV_H */
