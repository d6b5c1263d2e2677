/* SPDX-License-Identifier: MIT */
/*
 * Slurm's compressed host lists ("node[01-04,07],gpu5") and task counts
 * ("2(x3),1"), as Slurm writes them into SLURM_JOB_NODELIST and
 * SLURM_TASKS_PER_NODE. minimprun reads an allocation's hosts from them,
 * and a rank started by srun finds the first node of its step (where rank
 * 0 serves the rendezvous). Neither touches the environment itself, so
 * the unit tests drive them with any text.
 *
 * Bad input is reported as one line in `err` that quotes the offending
 * text ("bad range (end before start) at '4-1' in host list 'node[4-1]'").
 */
#ifndef MMP_TRANSPORT_HOSTLIST_H
#define MMP_TRANSPORT_HOSTLIST_H

#include <stddef.h>

#define MMP__HOSTLIST_MAX_HOSTS 65536 /* most hosts one list expands to */
#define MMP__HOSTLIST_MAX_NAME 255    /* longest expanded host name */

/* Called once per host, in Slurm's order; a non-zero return stops the
 * expansion and is returned by mmp__hostlist_expand. */
typedef int (*mmp__hostlist_cb)(void *ctx, const char *name, size_t len);

/*
 * Expands the host list `spec`: comma-separated entries, each a name with
 * any number of bracket groups "[a-b,c,...]" (every combination, the
 * first group varying slowest); a range keeps the zero padding of its
 * first number ("[08-10]" gives 08, 09, 10). Returns 0 once every host was
 * passed to `cb`, the callback's non-zero value, or MMP_EINVAL (an empty
 * list or entry, an unbalanced or nested bracket, a range that is not
 * "a-b" with a <= b of at most 9 digits each, a name longer than
 * MMP__HOSTLIST_MAX_NAME, or more than MMP__HOSTLIST_MAX_HOSTS hosts;
 * `err` set).
 */
int mmp__hostlist_expand(const char *spec, mmp__hostlist_cb cb, void *ctx,
                         char *err, size_t errlen);

/*
 * Parses a task count list, comma-separated "N" or "N(xR)" (N tasks on
 * each of R nodes), into counts[0..nnodes-1]. The list must cover exactly
 * `nnodes` nodes and every N be 1..1048576. Returns 0 or MMP_EINVAL (`err`
 * set).
 */
int mmp__hostlist_tasks(const char *spec, int *counts, int nnodes, char *err,
                        size_t errlen);

#endif /* MMP_TRANSPORT_HOSTLIST_H */
