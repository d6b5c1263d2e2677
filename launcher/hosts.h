/* SPDX-License-Identifier: MIT */
/*
 * The hosts of a job and the placement of its ranks on them: the parsers
 * of minimprun's --host list ("h1:2,h2") and of hostfiles ("h1 slots=2"),
 * and the mappers of --map-by slot and --map-by node. They follow Open
 * MPI's rules (a host listed twice accumulates slots; asking for more ranks
 * than slots needs --oversubscribe) and touch neither processes nor
 * sockets, so the unit tests drive them directly.
 *
 * Every parser reports bad input as one line in `err` that names what is
 * wrong and where ("hosts.txt:3: expected 'slots=N', got 'slot=2'"); the
 * caller prefixes it with "minimprun: ".
 */
#ifndef MMP_LAUNCHER_HOSTS_H
#define MMP_LAUNCHER_HOSTS_H

#include <stddef.h>

#define MMP__HOST_MAX_NAME 255        /* longest host name */
#define MMP__HOST_MAX_SLOTS (1 << 20) /* slots of one entry / one host */
#define MMP__HOSTFILE_MAX (16u << 20) /* largest hostfile read */

/* One machine of the job. */
typedef struct mmp__host_s {
  char *name; /* owned; as the user wrote it, e.g. "node3" or "ann@node3" */
  int slots;  /* ranks it takes before it is oversubscribed */
  int local;  /* 1: this machine, started without an agent */
  int nranks; /* ranks placed on it by mmp__hosts_map() */
} mmp__host_t;

/* The hosts in the order they were first listed. */
typedef struct mmp__hostlist_s {
  mmp__host_t *hosts;
  int n;
  int cap;
} mmp__hostlist_t;

/* Where one rank runs. */
typedef struct mmp__place_s {
  int host;       /* index into the host list */
  int local_rank; /* 0.. among the ranks of that host, in rank order */
} mmp__place_t;

typedef enum mmp__map_policy {
  MMP__MAP_SLOT = 0, /* fill each host's slots before the next host */
  MMP__MAP_NODE = 1  /* one rank per host per round, round-robin */
} mmp__map_policy_t;

void mmp__hosts_init(mmp__hostlist_t *hl);
/* Frees every name and the table; the list is empty afterwards. */
void mmp__hosts_fini(mmp__hostlist_t *hl);

/*
 * Adds `slots` to the host named by the `len` bytes at `name`, appending it
 * when it is new. Returns 0, MMP_EINVAL (a bad name, or more than
 * MMP__HOST_MAX_SLOTS in all; `err` says which) or MMP_ENOMEM.
 */
int mmp__hosts_add(mmp__hostlist_t *hl, const char *name, size_t len, int slots,
                   char *err, size_t errlen);

/*
 * Parses a --host value: comma-separated entries "name" (1 slot) or
 * "name:N"; an IPv6 literal takes slots only in brackets, "[::1]:2".
 * Appends to `hl`. Returns 0, MMP_EINVAL (`err` set) or MMP_ENOMEM.
 */
int mmp__hosts_parse_list(mmp__hostlist_t *hl, const char *spec, char *err,
                          size_t errlen);

/*
 * Parses hostfile text: one host per line, "name [slots=N]"; '#' starts a
 * comment (whole-line or trailing); blank lines and surrounding white space
 * are ignored. `fname` names the file in messages. Appends to `hl`.
 * Returns 0, MMP_EINVAL (`err` has "FNAME:LINE: ...") or MMP_ENOMEM.
 */
int mmp__hosts_parse_text(mmp__hostlist_t *hl, const char *fname,
                          const char *text, size_t len, char *err,
                          size_t errlen);

/*
 * Reads and parses the hostfile at `path`. A missing, unreadable or empty
 * (no host) file is an error too. Returns 0, MMP_EINVAL (`err` set) or
 * MMP_ENOMEM.
 */
int mmp__hosts_parse_file(mmp__hostlist_t *hl, const char *path, char *err,
                          size_t errlen);

/*
 * Adds the hosts of a Slurm allocation: `nodelist` in Slurm's host-list
 * syntax (SLURM_JOB_NODELIST, e.g. "node[01-04],gpu5"), each with the
 * slots `tasks` gives it (SLURM_TASKS_PER_NODE, e.g. "2(x3),1"). Returns 0,
 * MMP_EINVAL (`err` says which value is bad and why) or MMP_ENOMEM.
 */
int mmp__hosts_parse_slurm(mmp__hostlist_t *hl, const char *nodelist,
                           const char *tasks, char *err, size_t errlen);

/* Sets `local` on every host that names this machine: "localhost",
 * "127.0.0.1", "::1", or `self` (this machine's host name; its first label
 * matches too). `self` may be NULL. */
void mmp__hosts_mark_local(mmp__hostlist_t *hl, const char *self);

/* The sum of every host's slots. */
long mmp__hosts_slots(const mmp__hostlist_t *hl);

/*
 * Places ranks 0..n-1 on the hosts by `policy`, writing place[0..n-1] and
 * every host's nranks. Once every slot is taken, further ranks go round
 * again (slot: host by host, node: rank by rank), which is allowed only
 * with `oversubscribe`. Returns 0 or MMP_EINVAL (too few slots, or no
 * host; `err` set).
 */
int mmp__hosts_map(mmp__hostlist_t *hl, int n, mmp__map_policy_t policy,
                   int oversubscribe, mmp__place_t *place, char *err,
                   size_t errlen);

#endif /* MMP_LAUNCHER_HOSTS_H */
