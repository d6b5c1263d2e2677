/* SPDX-License-Identifier: MIT */
/*
 * Ranks on the same host.
 *
 * At init every rank publishes, beside its address, what identifies its
 * host: the kernel's boot id and its network, IPC and pid namespaces, and
 * whether it may use shared memory. From every rank's record each rank
 * numbers the nodes (ranks on one kernel in the same network and IPC
 * namespaces) the same way, and finds the ranks it shares its node with.
 * Processes in different network namespaces are different hosts even on
 * one kernel (the emulated cluster's hosts, containers): their traffic
 * must cross their own links.
 *
 * With the ranks of its node a rank sets up the shared-memory transport
 * (transport/shm.c) in rounds separated by the rendezvous: every rank
 * creates its segment and says whether it could; then maps the others'
 * and says which it could; then removes its names, which nobody needs any
 * more, and starts the pairs that both sides mapped. Any pair that fails
 * on the way stays on TCP, and the rendezvous only ever waits for ranks of
 * the same node. Ranks that a PMIx or PMI-2 launcher started make the same
 * rounds through it, again among the node's ranks alone (pmi.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "pmi.h"

void (*mmp__debug_init_hook)(const char *stage);

/* Automatic ring capacity (MINIMP_SHM_RING unset): LOCAL_RING_MAX, halved
 * while the node's n * (n - 1) rings would take more than
 * LOCAL_RING_BUDGET, down to LOCAL_RING_MIN. Every page is reserved at
 * init, so the budget bounds what a node gives up to shared memory;
 * docs/design/transport.md has the reasons behind the sizes. */
#define LOCAL_RING_MAX (256u * 1024)
#define LOCAL_RING_MIN (16u * 1024)
#define LOCAL_RING_BUDGET (64ull << 20)

/* Fields of a host identity: "BOOTID NET IPC PID SHM"; "-" is unknown. */
enum { ID_BOOT, ID_NET, ID_IPC, ID_PID, ID_SHM, ID_FIELDS };
#define ID_FIELD_MAX 48

typedef struct ident_s {
  char f[ID_FIELDS][ID_FIELD_MAX];
} ident_t;

/* ---- This rank's identity ----------------------------------------------- */

static void local_boot_id(char *out, size_t cap) {
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  size_t n = 0;
  int c;

  if (f != NULL) {
    while (n + 1 < cap && (c = fgetc(f)) != EOF && c != '\n')
      if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')
        out[n++] = (char)c;
    fclose(f);
  }
  out[n] = '\0';
  if (n == 0)
    snprintf(out, cap, "-");
}

/* A namespace is known by the device and inode of its /proc file. */
static void local_ns(const char *what, char *out, size_t cap) {
  char path[64];
  struct stat st;

  snprintf(path, sizeof(path), "/proc/self/ns/%s", what);
  if (stat(path, &st) == 0)
    snprintf(out, cap, "%llx:%llx", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
  else
    snprintf(out, cap, "-");
}

void mmp__local_identity(const mmp__engine_t *e, char *out, size_t cap) {
  char boot[ID_FIELD_MAX], net[ID_FIELD_MAX], ipc[ID_FIELD_MAX],
      pid[ID_FIELD_MAX];

  local_boot_id(boot, sizeof(boot));
  local_ns("net", net, sizeof(net));
  local_ns("ipc", ipc, sizeof(ipc));
  local_ns("pid", pid, sizeof(pid));
  snprintf(out, cap, "%s %s %s %s %d", boot, net, ipc, pid,
           e->cfg.shm != MMP__SHM_OFF);
}

/* Splits a published identity; missing or overlong fields are unknown. */
static void local_parse(const char *s, ident_t *id) {
  for (int k = 0; k < ID_FIELDS; k++) {
    size_t n = 0;
    while (*s == ' ')
      s++;
    while (s[n] != '\0' && s[n] != ' ')
      n++;
    if (n == 0 || n >= ID_FIELD_MAX)
      snprintf(id->f[k], ID_FIELD_MAX, "-");
    else
      snprintf(id->f[k], ID_FIELD_MAX, "%.*s", (int)n, s);
    s += n;
  }
}

static int local_known(const ident_t *a, int k) {
  return strcmp(a->f[k], "-") != 0;
}

static int local_same(const ident_t *a, const ident_t *b, int k) {
  return local_known(a, k) && strcmp(a->f[k], b->f[k]) == 0;
}

/* One node: one kernel, one network and one IPC namespace. */
static int local_same_node(const ident_t *a, const ident_t *b) {
  return local_same(a, b, ID_BOOT) && local_same(a, b, ID_NET) &&
         local_same(a, b, ID_IPC);
}

/* ---- Node numbers ------------------------------------------------------- */

typedef struct node_key_s {
  const ident_t *id;
  int rank;
} node_key_t;

static int local_key_cmp(const void *pa, const void *pb) {
  const node_key_t *a = pa, *b = pb;
  int c;

  for (int k = ID_BOOT; k <= ID_IPC; k++)
    if ((c = strcmp(a->id->f[k], b->id->f[k])) != 0)
      return c;
  return a->rank - b->rank;
}

/* Numbers the world's nodes: sorting groups the ranks of a node, each
 * group is named by its lowest rank, and nodes are counted in rank order,
 * so every rank computes the same numbers. Returns 0 or MMP_ENOMEM. */
static int local_number_nodes(mmp__engine_t *e, const ident_t *ids) {
  int p = e->cfg.size, i, n = 0;
  node_key_t *keys = malloc((size_t)p * sizeof(*keys));
  int *first = malloc((size_t)p * sizeof(*first));
  int *node = malloc((size_t)p * sizeof(*node));

  if (keys == NULL || first == NULL || node == NULL) {
    free(keys);
    free(first);
    free(node);
    return MMP_ENOMEM;
  }
  for (i = 0; i < p; i++) {
    keys[i].id = &ids[i];
    keys[i].rank = i;
  }
  qsort(keys, (size_t)p, sizeof(*keys), local_key_cmp);
  for (i = 0; i < p; i++) {
    int r = keys[i].rank;
    int joins = i > 0 && local_same_node(keys[i - 1].id, keys[i].id);
    first[r] = joins ? first[keys[i - 1].rank] : r;
  }
  for (i = 0; i < p; i++)
    node[i] = first[i] == i ? n++ : node[first[i]];
  free(keys);
  free(first);
  e->world.node_of = node;
  e->world.nnodes = n;
  return 0;
}

int mmp__comm_nodes_from(mmp_comm_t *c, const mmp_comm_t *parent,
                         const int *members, int n) {
  int *renum, i, count = 0;

  c->node_of = NULL;
  c->nnodes = 0;
  if (parent->node_of == NULL)
    return 0;
  c->node_of = malloc((size_t)n * sizeof(*c->node_of));
  renum = malloc((size_t)parent->nnodes * sizeof(*renum));
  if (c->node_of == NULL || renum == NULL) {
    free(c->node_of);
    free(renum);
    c->node_of = NULL;
    return MMP_ENOMEM;
  }
  for (i = 0; i < parent->nnodes; i++)
    renum[i] = -1;
  for (i = 0; i < n; i++) {
    int pn = parent->node_of[members[i]];
    if (renum[pn] < 0)
      renum[pn] = count++;
    c->node_of[i] = renum[pn];
  }
  c->nnodes = count;
  free(renum);
  return 0;
}

/* ---- Shared-memory set-up ----------------------------------------------- */

typedef struct local_s local_t;

typedef struct local_get_s {
  local_t *l;
  int i; /* member index */
} local_get_t;

struct local_s {
  mmp__engine_t *e;
  void (*done)(void *arg, int rc);
  void *arg;
  int n;         /* ranks of this node that use shared memory */
  int me;        /* our index among them */
  int *group;    /* their world ranks, ascending */
  char *samepid; /* member shares our pid namespace */
  char *created; /* member made its segment (round 1) */
  char *mapped;  /* we mapped member's segment */
  char *theirs;  /* member mapped ours (round 2) */
  char *put;     /* what we publish in round 2 */
  local_get_t *gets;
  int waits;
  int failed;
};

static void local_free(local_t *l) {
  free(l->group);
  free(l->samepid);
  free(l->created);
  free(l->mapped);
  free(l->theirs);
  free(l->put);
  free(l->gets);
  free(l);
}

static void local_hook(const char *stage) {
  if (mmp__debug_init_hook != NULL)
    mmp__debug_init_hook(stage);
}

/* Loop context. The set-up failed (`why`): every member's names go,
 * since a dead member cannot remove its own. */
static void local_abandon(local_t *l, const char *why) {
  mmp__engine_t *e = l->e;
  void (*done)(void *, int) = l->done;
  void *arg = l->arg;

  for (int i = 0; i < l->n; i++)
    mmp__shm_remove(e->cfg.key, l->group[i]);
  if (e->shm.tp != NULL)
    mmp__shm_unlink(e->shm.tp);
  MMP__LOG(MMP__LOG_ERROR, "setting up shared memory failed: %s", why);
  local_free(l);
  done(arg, MMP_EBOOT);
}

/* Loop context. Every member has mapped what it could: choose the
 * transports and start the pairs both sides mapped. */
static void local_finish(local_t *l) {
  mmp__engine_t *e = l->e;
  void (*done)(void *, int) = l->done;
  void *arg = l->arg;
  int i, pairs = 0;

  MMP__ASSERT_LOOP(e);
  /* Every member mapped what it could before it published round 2, so no
   * name is needed any more: each rank removes them all, and a member
   * killed before it removed its own leaves nothing behind. */
  if (e->shm.tp != NULL)
    mmp__shm_unlink(e->shm.tp);
  for (i = 0; i < l->n; i++)
    if (i != l->me)
      mmp__shm_remove(e->cfg.key, l->group[i]);
  mmp__lock(e);
  for (i = 0; i < l->n; i++) {
    l->theirs[i] = l->theirs[i] && l->mapped[i];
    if (i != l->me && l->theirs[i]) {
      mmp__peer_t *p = &e->peers[l->group[i]];
      p->via = &e->shm;
      /* Both ends of the pair choose the same. */
      p->eager_over = MMP__EAGER_OVERHEAD_SHM;
      pairs++;
    }
  }
  e->shm_pairs = pairs;
  mmp__unlock(e);
  for (i = 0; i < l->n; i++) {
    if (i == l->me || !l->mapped[i])
      continue;
    if (!l->theirs[i]) {
      MMP__LOG(MMP__LOG_INFO, "rank %d stays on TCP", l->group[i]);
      mmp__shm_detach(e->shm.tp, l->group[i]);
    } else if (mmp__shm_start(e->shm.tp, l->group[i]) != 0) {
      /* Both sides attached, so this cannot fail. */
      MMP__LOG(MMP__LOG_ERROR, "cannot start shared memory with rank %d",
               l->group[i]);
    }
  }
  MMP__LOG(MMP__LOG_DEBUG, "%d of %d ranks on this host use shared memory",
           pairs, l->n - 1);
  local_free(l);
  done(arg, 0);
}

/* Round 1: make our segment (created[me]). */
static void local_create(local_t *l) {
  mmp__engine_t *e = l->e;
  mmp__tp_callbacks_t cb;
  mmp__tp_config_t tc;
  int rc;

  mmp__p2p_tp_init(e, &e->shm, &tc, &cb);
  tc.local = l->group;
  tc.nlocal = l->n;
  tc.ring_bytes = e->cfg.shm_ring;
  if (tc.ring_bytes == 0) {
    uint64_t rings = (uint64_t)l->n * (uint64_t)(l->n - 1);
    tc.ring_bytes = LOCAL_RING_MAX;
    while (tc.ring_bytes > LOCAL_RING_MIN &&
           rings * tc.ring_bytes > LOCAL_RING_BUDGET)
      tc.ring_bytes /= 2;
  }
  tc.single_copy = e->cfg.shm == MMP__SHM_ON;
  rc = e->shm.ops->create(&e->loop, &tc, &cb, &e->shm.tp);
  if (rc != 0)
    MMP__LOG(MMP__LOG_WARN,
             "no shared memory (%s): ranks of this host use "
             "TCP",
             mmp_strerror(rc));
  l->created[l->me] = rc == 0;
  local_hook("shm-created");
}

/* Round 1 is in (created[]): map the segments of the members that made
 * one, and say which we mapped (put, one character per member). */
static void local_attach(local_t *l) {
  mmp__engine_t *e = l->e;

  for (int i = 0; i < l->n; i++) {
    l->mapped[i] = i == l->me ? l->created[i]
                              : l->created[l->me] && l->created[i] &&
                                    mmp__shm_attach(e->shm.tp, l->group[i],
                                                    l->samepid[i]) == 0;
    l->put[i] = l->mapped[i] ? '1' : '0';
  }
  local_hook("shm-attached");
}

/* What member i published in round 1 and 2. */
static int local_said_created(const uint8_t *v, size_t len) {
  return len == 1 && v[0] == '1';
}

static int local_said_mapped(const local_t *l, const uint8_t *v, size_t len) {
  return len == (size_t)l->n && v[l->me] == '1';
}

/* ---- Rounds through the rendezvous (minimprun, mmp_init_ex) ------------- */

static void local_put_done(void *arg, int status, size_t count,
                           const uint8_t *const *values, const size_t *lens) {
  (void)count;
  (void)values;
  (void)lens;
  if (status < 0)
    ((local_t *)arg)->failed = 1;
}

static void local_got2(void *arg, int status, size_t count,
                       const uint8_t *const *values, const size_t *lens) {
  local_get_t *g = arg;
  local_t *l = g->l;

  if (status < 0 || count != 1)
    l->failed = 1;
  else
    l->theirs[g->i] = local_said_mapped(l, values[0], lens[0]);
  if (--l->waits > 0)
    return;
  if (l->failed)
    local_abandon(l, "a rank of this host left the job");
  else
    local_finish(l);
}

/* Issues one GET of `name` per other member; `cb` counts them in. */
static int local_gather(local_t *l, const char *name, mmp__boot_done_cb cb) {
  mmp__engine_t *e = l->e;

  l->waits = l->n - 1;
  for (int i = 0; i < l->n; i++) {
    if (i == l->me)
      continue;
    l->gets[i].l = l;
    l->gets[i].i = i;
    if (mmp__boot_get(e->boot, l->group[i], name, cb, &l->gets[i]) != 0)
      return MMP_EBOOT;
  }
  return 0;
}

static void local_got1(void *arg, int status, size_t count,
                       const uint8_t *const *values, const size_t *lens) {
  local_get_t *g = arg;
  local_t *l = g->l;
  mmp__engine_t *e = l->e;

  if (status < 0 || count != 1)
    l->failed = 1;
  else
    l->created[g->i] = local_said_created(values[0], lens[0]);
  if (--l->waits > 0)
    return;
  if (l->failed) {
    local_abandon(l, "a rank of this host left the job");
    return;
  }
  local_attach(l);
  if (mmp__boot_put(e->boot, "shm2", l->put, (size_t)l->n, local_put_done, l) !=
          0 ||
      local_gather(l, "shm2", local_got2) != 0)
    local_abandon(l, "the rendezvous failed");
}

static void local_boot_rounds(local_t *l) {
  local_create(l);
  if (mmp__boot_put(l->e->boot, "shm1", l->created[l->me] ? "1" : "0", 1,
                    local_put_done, l) != 0 ||
      local_gather(l, "shm1", local_got1) != 0)
    local_abandon(l, "the rendezvous failed");
}

/* ---- Rounds through the launcher (srun --mpi=pmix or pmi2) -------------- */

/*
 * The same two rounds through the launcher's key-value store among this
 * node's members alone (mmp__pmi_round), blocking this thread, which runs
 * the loop during init. A member that fails here makes its init fail,
 * which stops the job through the launcher, so none waits for ever.
 */
static void local_pmi_rounds(local_t *l) {
  char *v = malloc((size_t)l->n * MMP__PMI_MAX_VALUE);
  int i, rc = MMP_ENOMEM;

  if (v != NULL) {
    local_create(l);
    rc = mmp__pmi_round("mmp-shm1", l->created[l->me] ? "1" : "0", l->group,
                        l->n, l->me, v);
  }
  for (i = 0; rc == 0 && i < l->n; i++) {
    const char *s = v + (size_t)i * MMP__PMI_MAX_VALUE;
    l->created[i] = local_said_created((const uint8_t *)s, strlen(s));
  }
  if (rc == 0) {
    local_attach(l);
    rc = mmp__pmi_round("mmp-shm2", l->put, l->group, l->n, l->me, v);
  }
  for (i = 0; rc == 0 && i < l->n; i++) {
    const char *s = v + (size_t)i * MMP__PMI_MAX_VALUE;
    l->theirs[i] = local_said_mapped(l, (const uint8_t *)s, strlen(s));
  }
  free(v);
  if (rc == 0)
    local_finish(l);
  else
    local_abandon(l, "the launcher's rounds among this host's ranks failed");
}

/* ---- Set-up ------------------------------------------------------------- */

/* Our node's members that use shared memory, into *out (a new set-up), or
 * NULL when we are alone. Returns 0 or MMP_ENOMEM: a member that cannot
 * take part must make init fail, not leave the others waiting for it. */
static int local_group(mmp__engine_t *e, const ident_t *ids, local_t **out) {
  const ident_t *mine = &ids[e->cfg.rank];
  local_t *l;
  int i, n = 0;

  *out = NULL;
  if (e->cfg.shm == MMP__SHM_OFF)
    return 0;
  for (i = 0; i < e->cfg.size; i++)
    n += local_same_node(mine, &ids[i]) && strcmp(ids[i].f[ID_SHM], "1") == 0;
  if (n < 2)
    return 0;
  if ((l = calloc(1, sizeof(*l))) == NULL)
    return MMP_ENOMEM;
  l->group = malloc((size_t)n * sizeof(*l->group));
  l->samepid = calloc((size_t)n, 1);
  l->created = calloc((size_t)n, 1);
  l->mapped = calloc((size_t)n, 1);
  l->theirs = calloc((size_t)n, 1);
  /* NUL-terminated: the launcher's rounds take text. */
  l->put = calloc((size_t)n + 1, 1);
  l->gets = calloc((size_t)n, sizeof(*l->gets));
  if (l->group == NULL || l->samepid == NULL || l->created == NULL ||
      l->mapped == NULL || l->theirs == NULL || l->put == NULL ||
      l->gets == NULL) {
    local_free(l);
    return MMP_ENOMEM;
  }
  for (i = 0; i < e->cfg.size; i++) {
    if (!local_same_node(mine, &ids[i]) || strcmp(ids[i].f[ID_SHM], "1") != 0)
      continue;
    if (i == e->cfg.rank)
      l->me = l->n;
    l->samepid[l->n] = local_same(mine, &ids[i], ID_PID);
    l->group[l->n++] = i;
  }
  l->e = e;
  *out = l;
  return 0;
}

/*
 * Lock held. When more ranks than CPUs share this kernel, whatever their
 * namespaces, an automatic spin budget switches to polling that yields
 * (as MINIMP_LOCAL_SIZE would do when one machine is the whole job).
 */
static void local_cpus(mmp__engine_t *e, const ident_t *ids) {
  int ncpu = uv_available_parallelism(), same = 0;

  MMP__ASSERT_LOCKED(e);
  for (int i = 0; i < e->cfg.size; i++)
    same += i == e->cfg.rank || local_same(&ids[e->cfg.rank], &ids[i], ID_BOOT);
  if (same > ncpu)
    MMP__LOG(MMP__LOG_DEBUG,
             "%d ranks share this machine's %d CPUs: waits poll and yield",
             same, ncpu);
  mmp__config_shared(&e->cfg, same > ncpu);
}

void mmp__local_setup(mmp__engine_t *e, const char *const *ident,
                      void (*done)(void *arg, int rc), void *arg) {
  ident_t *ids = malloc((size_t)e->cfg.size * sizeof(*ids));
  local_t *l = NULL;
  int rc;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  if (ids == NULL) {
    done(arg, MMP_ENOMEM);
    return;
  }
  for (int i = 0; i < e->cfg.size; i++)
    local_parse(ident[i], &ids[i]);
  mmp__lock(e);
  local_cpus(e, ids);
  rc = local_number_nodes(e, ids);
  mmp__unlock(e);
  if (rc == 0)
    rc = local_group(e, ids, &l);
  free(ids);
  /* Every member sees the same records, hence the same group, and so
   * makes the same choice here: all take part in the rounds, or none. */
  if (l != NULL && e->cfg.pmi && !mmp__pmi_round_ok(l->group, l->n)) {
    MMP__LOG(MMP__LOG_INFO,
             "the launcher does not place this host's %d ranks on one of its "
             "nodes (or does not say where it places them): they use TCP",
             l->n);
    local_free(l);
    l = NULL;
  }
  if (l == NULL) {
    done(arg, rc);
    return;
  }
  l->done = done;
  l->arg = arg;
  if (e->cfg.pmi)
    local_pmi_rounds(l);
  else
    local_boot_rounds(l);
}
