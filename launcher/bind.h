/* SPDX-License-Identifier: MIT */
/*
 * --bind-to core and --report-bindings, for minimprun's own ranks and for
 * each daemon's: which CPUs make up a host's k-th core, and the line that
 * reports a rank's binding in Open MPI's words. A rank is bound from its
 * first instruction on, because mmp__spawn (common.c) sets the CPU set on
 * the spawning thread around the fork, and the child inherits it.
 */
#ifndef MMP_LAUNCHER_BIND_H
#define MMP_LAUNCHER_BIND_H

#include <sched.h>

/*
 * Sets `set` to the CPUs of core number k modulo the number of cores
 * among the CPUs this process may run on, in the order of each core's
 * lowest CPU; hardware threads of one core (sysfs thread_siblings_list)
 * count as one core. Sets *core to the core's number. Returns 0, or -1 if
 * the CPUs cannot be read.
 */
int mmp__bind_core(int k, cpu_set_t *set, int *core);

/* For starting the rank with local rank `local_rank`: with `bind_core`,
 * fills `set` and *core (mmp__bind_core) and returns `set`; otherwise, or
 * if the CPUs cannot be read, returns NULL (the rank is not bound). */
const cpu_set_t *mmp__bind_for(int bind_core, int local_rank, cpu_set_t *set,
                               int *core);

/*
 * Writes to stderr, in one write, Open MPI's report of a rank's binding:
 * "[HOST:PID] MCW rank R bound to core C: [./B/./.]" (one mark per CPU up
 * to the highest this process may use, B for the rank's), or, with `set`
 * NULL, "... is not bound (or bound to all available processors)".
 */
void mmp__bind_report(int pid, int rank, int core, const cpu_set_t *set);

#endif /* MMP_LAUNCHER_BIND_H */
