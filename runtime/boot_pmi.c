/* SPDX-License-Identifier: MIT */
/*
 * What bootstrapping through PMIx and PMI-2 share (pmi.h): finding which
 * one started the process, the job identity, the job key, where to listen,
 * and the exchange of address records, put by every rank under
 * "mmp-addr-RANK", collected by one fence and read back in rank order,
 * the way MPI libraries exchange their business cards; and the rounds in
 * which the ranks of a node set up shared memory (runtime/local.c), among
 * themselves alone.
 *
 * The key. MINIMP_JOB_KEY, when set, is used as it is; srun copies it to
 * every node in its launch request, which Slurm authenticates but does not
 * encrypt. Otherwise rank 0 draws 16 random bytes, has munge seal them
 * (restricted to this user) and publishes the credential as "mmp-key-0";
 * every other rank opens it with its own host's munged. The credential is
 * encrypted under the cluster's munge key, so the job key never crosses
 * the network in clear, and a credential that another user or a host
 * without the munge key made does not open (docs/security.md). Several
 * ranks of a host open the same credential, which munge reports as a
 * replay: expected here, and accepted, since what matters is that the
 * credential is genuine and ours.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if MMP_HAVE_MUNGE
#include <munge.h>
#endif

#include "pmi.h"
#include "transport/auth.h"

static const mmp__pmi_ops_t *pmi_ops;

static int pmi_set(const char *name) {
  const char *v = getenv(name);

  return v != NULL && *v != '\0';
}

int mmp__pmi_detect(void) {
  /* minimprun's variables, or a rendezvous named by hand, rule. */
  if (pmi_set("MINIMP_RANK") || pmi_set("MINIMP_SIZE") ||
      pmi_set("MINIMP_BOOT_ADDR"))
    return MMP__PMI_NONE;
  if (pmi_set("PMIX_NAMESPACE") && pmi_set("PMIX_RANK"))
    return MMP__PMI_X;
  if (pmi_set("PMI_FD") && pmi_set("PMI_RANK") && pmi_set("PMI_SIZE"))
    return MMP__PMI_2;
  return MMP__PMI_NONE;
}

int mmp__pmi_identity(mmp__config_t *cfg) {
  const char *key = getenv("MINIMP_JOB_KEY"), *iface = getenv("MINIMP_IFACE");
  mmp__pmi_info_t info;
  int kind = mmp__pmi_detect(), rc;

  if (kind == MMP__PMI_X) {
#if MMP_HAVE_PMIX
    pmi_ops = &mmp__pmix_ops;
#else
    MMP__LOG(MMP__LOG_ERROR,
             "started by a PMIx launcher (PMIX_NAMESPACE is set), but this "
             "libminimp was built without PMIx (meson -Dpmix=enabled with "
             "libpmix-dev installed); run it under srun --mpi=pmi2, or with "
             "minimprun");
    return MMP_EENV;
#endif
  } else {
    pmi_ops = &mmp__pmi2_ops;
  }
  if (key != NULL && mmp__hex_decode(key, cfg->key, MMP__JOB_KEY_LEN) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "MINIMP_JOB_KEY must be %d hex digits",
             2 * MMP__JOB_KEY_LEN);
    return MMP_EENV;
  }
  if (iface != NULL && strlen(iface) >= sizeof(cfg->iface)) {
    MMP__LOG(MMP__LOG_ERROR, "MINIMP_IFACE is too long");
    return MMP_EENV;
  }
  rc = pmi_ops->init(&info);
  if (rc != 0)
    return rc;
  cfg->pmi = kind;
  cfg->pmi_key = key != NULL;
  cfg->rank = info.rank;
  cfg->size = info.size;
  cfg->local_rank = info.local_rank >= 0 ? info.local_rank : info.rank;
  cfg->local_size = info.local_size >= 1 ? info.local_size : info.size;
  if (iface != NULL)
    strcpy(cfg->iface, iface);
  snprintf(cfg->boot_addr, sizeof(cfg->boot_addr), "%s", pmi_ops->name);
  return 0;
}

#if MMP_HAVE_MUNGE
/* Rank 0: a fresh key, sealed by munge for this user, published. */
static int pmi_key_publish(mmp__config_t *cfg) {
  munge_ctx_t ctx = munge_ctx_create();
  munge_err_t err = EMUNGE_NO_MEMORY;
  char *cred = NULL;
  int rc = MMP_EBOOT;

  if (uv_random(NULL, NULL, cfg->key, MMP__JOB_KEY_LEN, 0, NULL) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "cannot draw a job key");
    goto out;
  }
  if (ctx != NULL && (err = munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION,
                                          geteuid())) == EMUNGE_SUCCESS)
    err = munge_encode(&cred, ctx, cfg->key, MMP__JOB_KEY_LEN);
  if (err != EMUNGE_SUCCESS) {
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_JOB_KEY is not set and munge cannot seal a fresh job "
             "key: %s; run munged, or give every rank the same "
             "MINIMP_JOB_KEY (32 hex digits)",
             ctx != NULL ? munge_ctx_strerror(ctx) : munge_strerror(err));
    goto out;
  }
  rc = strlen(cred) < MMP__PMI_MAX_VALUE ? pmi_ops->put("mmp-key-0", cred)
                                         : MMP_EBOOT;
  if (rc == 0)
    rc = pmi_ops->commit();
out:
  free(cred);
  if (ctx != NULL)
    munge_ctx_destroy(ctx);
  return rc;
}

/* Every other rank: rank 0's credential, opened by this host's munged. */
static int pmi_key_open(mmp__config_t *cfg) {
  char cred[MMP__PMI_MAX_VALUE];
  void *buf = NULL;
  int len = 0, rc;
  uid_t uid = (uid_t)-1;
  gid_t gid;
  munge_err_t err;

  rc = pmi_ops->get(0, "mmp-key-0", cred, sizeof(cred));
  if (rc != 0)
    return rc;
  err = munge_decode(cred, NULL, &buf, &len, &uid, &gid);
  /* A replay is another rank of this host having opened it first. */
  if ((err != EMUNGE_SUCCESS && err != EMUNGE_CRED_REPLAYED) ||
      uid != geteuid() || len != MMP__JOB_KEY_LEN || buf == NULL) {
    MMP__LOG(MMP__LOG_ERROR, "cannot open the job key rank 0 published: %s",
             err != EMUNGE_SUCCESS && err != EMUNGE_CRED_REPLAYED
                 ? munge_strerror(err)
                 : "not a key of this user's");
    free(buf);
    return MMP_EBOOT;
  }
  memcpy(cfg->key, buf, MMP__JOB_KEY_LEN);
  mmp__auth_wipe(buf, (size_t)len);
  free(buf);
  return 0;
}
#endif

int mmp__pmi_key(mmp__config_t *cfg) {
  if (cfg->pmi_key)
    return 0;
#if MMP_HAVE_MUNGE
  int rc = cfg->rank == 0 ? pmi_key_publish(cfg) : 0;

  /* A fence of its own, before anyone listens: the transports take the
   * key when they are made. */
  if (rc == 0)
    rc = pmi_ops->fence(1);
  if (rc == 0 && cfg->rank != 0)
    rc = pmi_key_open(cfg);
  if (rc == 0)
    cfg->pmi_key = 1;
  return rc;
#else
  MMP__LOG(MMP__LOG_ERROR,
           "MINIMP_JOB_KEY is not set, and this libminimp was built without "
           "munge, which would let rank 0 hand a fresh key to the others "
           "sealed: set MINIMP_JOB_KEY (32 hex digits, the same for every "
           "rank), or rebuild with libmunge-dev");
  return MMP_EENV;
#endif
}

void mmp__pmi_toward(struct sockaddr_storage *out) {
  const char *ip = getenv("SLURM_LAUNCH_NODE_IPADDR");
  struct sockaddr_in *in4 = (struct sockaddr_in *)out;
  struct addrinfo hints, *res = NULL;
  char host[256] = "";

  memset(out, 0, sizeof(*out));
  if (ip != NULL && strlen(ip) < 64) {
    char addr[80];
    snprintf(addr, sizeof(addr), strchr(ip, ':') != NULL ? "[%s]:0" : "%s:0",
             ip);
    if (mmp__addr_parse(addr, out) == 0)
      return;
  }
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  if (gethostname(host, sizeof(host) - 1) == 0 &&
      getaddrinfo(host, NULL, &hints, &res) == 0 && res != NULL &&
      res->ai_addrlen <= sizeof(*out)) {
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return;
  }
  if (res != NULL)
    freeaddrinfo(res);
  in4->sin_family = AF_INET;
  in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int mmp__pmi_exchange(const mmp__config_t *cfg, const char *rec,
                      uint8_t ***values, size_t **lens) {
  char key[MMP__PMI_MAX_KEY];
  uint8_t **v = calloc((size_t)cfg->size, sizeof(*v));
  size_t *l = calloc((size_t)cfg->size, sizeof(*l));
  char *block = malloc((size_t)cfg->size * MMP__PMI_MAX_VALUE);
  int rc, i;

  if (v == NULL || l == NULL || block == NULL) {
    free(block);
    free(v);
    free(l);
    return MMP_ENOMEM;
  }
  for (i = 0; i < cfg->size; i++)
    v[i] = (uint8_t *)block + (size_t)i * MMP__PMI_MAX_VALUE;
  snprintf(key, sizeof(key), "mmp-addr-%d", cfg->rank);
  rc = pmi_ops->put(key, rec);
  if (rc == 0)
    rc = pmi_ops->commit();
  if (rc == 0)
    rc = pmi_ops->fence(1);
  for (i = 0; rc == 0 && i < cfg->size; i++) {
    snprintf(key, sizeof(key), "mmp-addr-%d", i);
    rc = pmi_ops->get(i, key, (char *)v[i], MMP__PMI_MAX_VALUE);
    l[i] = strlen((char *)v[i]);
  }
  if (rc != 0) {
    mmp__pmi_free_records(v, l);
    return rc;
  }
  *values = v;
  *lens = l;
  return 0;
}

void mmp__pmi_free_records(uint8_t **values, size_t *lens) {
  if (values != NULL)
    free(values[0]); /* the block */
  free(values);
  free(lens);
}

int mmp__pmi_round_ok(const int *ranks, int n) {
  /* Round 2's value is a character per rank (runtime/local.c). */
  return pmi_ops != NULL && n >= 2 && n < MMP__PMI_MAX_VALUE &&
         pmi_ops->node_ok(ranks, n);
}

int mmp__pmi_round(const char *name, const char *value, const int *ranks, int n,
                   int me, char *values) {
  char key[MMP__PMI_MAX_KEY];
  int rc, i;

  assert(me >= 0 && me < n && strlen(value) < MMP__PMI_MAX_VALUE);
  if (!mmp__pmi_round_ok(ranks, n))
    return MMP_EINVAL;
  snprintf(key, sizeof(key), "%s-%d", name, ranks[me]);
  rc = pmi_ops->node_put(key, value);
  if (rc == 0)
    rc = pmi_ops->node_fence(ranks, n);
  for (i = 0; rc == 0 && i < n; i++) {
    char *out = values + (size_t)i * MMP__PMI_MAX_VALUE;
    if (i == me) {
      strcpy(out, value);
      continue;
    }
    snprintf(key, sizeof(key), "%s-%d", name, ranks[i]);
    rc = pmi_ops->node_get(ranks[i], key, out, MMP__PMI_MAX_VALUE);
  }
  return rc;
}

int mmp__pmi_fence(void) {
  return pmi_ops != NULL ? pmi_ops->fence(0) : MMP_EBOOT;
}

void mmp__pmi_abort(int code, const char *msg) {
  if (pmi_ops != NULL)
    pmi_ops->abort(code, msg);
}

void mmp__pmi_fini(void) {
  if (pmi_ops != NULL)
    pmi_ops->fini();
  pmi_ops = NULL;
}
