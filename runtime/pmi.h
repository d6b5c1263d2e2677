/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap through the process manager that started the job, the way MPI
 * libraries bootstrap: PMIx (srun --mpi=pmix, Open MPI's mpirun, prterun)
 * or the PMI-2 wire protocol (srun --mpi=pmi2). Each rank puts its address
 * record in the launcher's key-value store, every rank fences, and each
 * gets the others' records; the launcher's own fence is the barrier of
 * mmp_finalize and its abort stops the job. No rendezvous service runs.
 * The ranks of a host that share memory set it up in rounds among
 * themselves alone (mmp__pmi_round): a PMIx fence over just those ranks,
 * or PMI-2's node attributes, which their node's launcher serves.
 *
 * The job key is MINIMP_JOB_KEY when the environment has it; otherwise
 * rank 0 draws one and publishes it sealed by munge (the credential
 * service of every Slurm cluster), so that it never crosses the network in
 * clear (docs/security.md). boot_pmi.c holds what both interfaces share,
 * boot_pmix.c and boot_pmi2.c one each, behind mmp__pmi_ops_t.
 */
#ifndef MMP_RUNTIME_PMI_H
#define MMP_RUNTIME_PMI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "internal.h"

/* Which process-management interface started this process. */
enum { MMP__PMI_NONE = 0, MMP__PMI_X = 1, MMP__PMI_2 = 2 };

/* The longest key and value the layer uses: within PMI-2's limits (64 and
 * 1024 bytes) and every PMIx server's. */
#define MMP__PMI_MAX_KEY 64
#define MMP__PMI_MAX_VALUE 1024

/* What the launcher says of this process. */
typedef struct mmp__pmi_info_s {
  int rank, size;             /* in the job */
  int local_rank, local_size; /* on this host; -1 where it does not say */
} mmp__pmi_info_t;

/*
 * One interface. Every call blocks (application thread, before the
 * progress engine runs or after it stopped) and logs its own failures.
 * Keys and values are NUL-terminated text; a value holds no ';' or '\n'.
 */
typedef struct mmp__pmi_ops_s {
  const char *name; /* "PMIx", "PMI-2": for messages */
  /* Connects to the launcher and fills *info. Returns 0 or MMP_EBOOT. */
  int (*init)(mmp__pmi_info_t *info);
  /* Publishes this rank's `value` under `key`. Returns 0 or MMP_EBOOT. */
  int (*put)(const char *key, const char *value);
  /* Makes what was put visible to direct gets. Returns 0 or MMP_EBOOT. */
  int (*commit)(void);
  /* Waits for every rank; `collect`: what every rank put and committed
   * before is here after. Returns 0 or MMP_EBOOT. */
  int (*fence)(int collect);
  /* Rank `rank`'s value of `key`, put before the last fence, into out
   * (cap bytes, NUL included). Returns 0, or MMP_EBOOT (missing, too long,
   * the launcher failed). */
  int (*get)(int rank, const char *key, char *out, size_t cap);
  /* A round among some ranks of this node (mmp__pmi_round): publishes
   * `value` under `key` for them. Returns 0 or MMP_EBOOT. */
  int (*node_put)(const char *key, const char *value);
  /* Waits until each of `ranks` (n of them, ascending, this rank
   * included) has put its value of this round. Returns 0 or MMP_EBOOT. */
  int (*node_fence)(const int *ranks, int n);
  /* Rank `rank`'s value of `key` from node_put, as get. */
  int (*node_get)(int rank, const char *key, char *out, size_t cap);
  /* 1 if node_put, node_fence and node_get serve a round among `ranks`,
   * 0 if not (they are not all on this node as the launcher sees it). */
  int (*node_ok)(const int *ranks, int n);
  /* Asks the launcher to stop the whole job with `code`. */
  void (*abort)(int code, const char *msg);
  /* Disconnects; the process keeps running. */
  void (*fini)(void);
} mmp__pmi_ops_t;

extern const mmp__pmi_ops_t mmp__pmi2_ops;
#if MMP_HAVE_PMIX
extern const mmp__pmi_ops_t mmp__pmix_ops;
#endif

/* Which interface the environment names (MMP__PMI_*), when minimprun's
 * variables and MINIMP_BOOT_ADDR are all unset; MMP__PMI_NONE otherwise. */
int mmp__pmi_detect(void);

/*
 * The job identity from the launcher: rank, size, local rank and size,
 * MINIMP_JOB_KEY if set (else the key comes with mmp__pmi_key) and
 * MINIMP_IFACE. Sets cfg->pmi. Returns 0, MMP_EENV (a malformed variable;
 * a PMIx launcher and a build without PMIx) or MMP_EBOOT; logged.
 */
int mmp__pmi_identity(mmp__config_t *cfg);

/* The job key into cfg->key, if the environment did not give it: drawn by
 * rank 0, sealed by munge and published; opened by every other rank.
 * Returns 0, MMP_EENV (no way to get a key) or MMP_EBOOT; logged. */
int mmp__pmi_key(mmp__config_t *cfg);

/* The address whose route chooses where a rank listens without
 * MINIMP_IFACE: the node srun ran on (SLURM_LAUNCH_NODE_IPADDR), else
 * this host's name's address, else 127.0.0.1 (port 0). */
void mmp__pmi_toward(struct sockaddr_storage *out);

/*
 * Publishes this rank's address record `rec`, fences, and gets every
 * rank's: on success *values and *lens (cfg->size entries, freed by
 * mmp__pmi_free_records) hold them in rank order. Returns 0, MMP_ENOMEM
 * or MMP_EBOOT; logged.
 */
int mmp__pmi_exchange(const mmp__config_t *cfg, const char *rec,
                      uint8_t ***values, size_t **lens);
void mmp__pmi_free_records(uint8_t **values, size_t *lens);

/*
 * A round among `ranks` (n >= 2 of them, ascending, this rank being
 * ranks[me]), which all make it with the same arguments but `value`: this
 * rank publishes `value` (text, shorter than MMP__PMI_MAX_VALUE) under
 * "NAME-RANK", waits for the others, and finds each other's value in
 * values + i * MMP__PMI_MAX_VALUE. Only those ranks take part: nobody else
 * waits. Returns 0, MMP_EINVAL (the launcher cannot serve a round among
 * these ranks: mmp__pmi_round_ok) or MMP_EBOOT; logged.
 */
int mmp__pmi_round(const char *name, const char *value, const int *ranks, int n,
                   int me, char *values);

/* 1 if mmp__pmi_round serves `ranks` (n of them, ascending), else 0. */
int mmp__pmi_round_ok(const int *ranks, int n);

/* mmp_finalize's barrier. Returns 0 or MMP_EBOOT. */
int mmp__pmi_fence(void);

/* mmp_abort: the launcher stops the job. */
void mmp__pmi_abort(int code, const char *msg);

/* Disconnects from the launcher (teardown). */
void mmp__pmi_fini(void);

#endif /* MMP_RUNTIME_PMI_H */
