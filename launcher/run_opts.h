/* SPDX-License-Identifier: MIT */
/*
 * minimprun's command line: the options of a job (the number of ranks,
 * the hosts and how ranks are mapped onto them, the agent, output tagging,
 * the timeout, -x variables), checked and stored in the job before
 * anything is started. A bad command line is reported on stderr with a
 * message naming what is wrong, and minimprun exits with
 * MMP__RUN_EXIT_USAGE.
 */
#ifndef MMP_LAUNCHER_RUN_OPTS_H
#define MMP_LAUNCHER_RUN_OPTS_H

#include "run.h"

/*
 * Parses the command line argv[0..argc-1] into `j`, which is zeroed but
 * for an initialised host list. Sets the options, the hosts of --host or
 * --hostfile (the hostfile is read once the command line is complete),
 * the number of ranks (without -n, every slot of the hosts) and j->argv,
 * the program and its arguments. j->argv and every option value point
 * into `argv`; j->exports is allocated here and the caller frees it
 * whatever this returns.
 *
 * Returns -1 to go on, or the exit status to leave with: 0 after --help or
 * --version (printed on stdout), MMP__RUN_EXIT_USAGE on a bad command line
 * or host list (reported on stderr), or 1 without memory (not reported).
 */
int mmp__run_parse(mmp__run_job_t *j, int argc, char **argv);

/*
 * Splits `s` (the --agent value) on white space into a NULL-terminated
 * list of words. The list and the words are one allocation, which the
 * caller frees. Returns NULL without memory.
 */
char **mmp__run_split_words(const char *s);

#endif /* MMP_LAUNCHER_RUN_OPTS_H */
