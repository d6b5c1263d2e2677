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
 * the same node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

void (*mmp__debug_init_hook)(const char *stage);

/* Automatic ring capacity (MINIMP_SHM_RING unset): LOCAL_RING_MAX, halved
 * while the node's n * (n - 1) rings would take more than
 * LOCAL_RING_BUDGET, down to LOCAL_RING_MIN. Every page is reserved at
 * init, so the budget bounds what a node gives up to shared memory;
 * docs/transport.md has the measurements behind the sizes. */
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

/* Loop context. The set-up failed (the rendezvous lost a rank of ours):
 * every member's names go, since a dead member cannot remove its own. */
static void local_abandon(local_t *l) {
  mmp__engine_t *e = l->e;
  void (*done)(void *, int) = l->done;
  void *arg = l->arg;

  for (int i = 0; i < l->n; i++)
    mmp__shm_remove(e->cfg.key, l->group[i]);
  if (e->shm.tp != NULL)
    mmp__shm_unlink(e->shm.tp);
  MMP__LOG(MMP__LOG_ERROR, "setting up shared memory failed: a rank of this "
                           "host left the job");
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
      e->peers[l->group[i]].via = &e->shm;
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
    l->theirs[g->i] = lens[0] == (size_t)l->n && values[0][l->me] == '1';
  if (--l->waits > 0)
    return;
  if (l->failed)
    local_abandon(l);
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

/* Round 1 is in: map the segments of the members that made one, then say
 * which we mapped. */
static void local_got1(void *arg, int status, size_t count,
                       const uint8_t *const *values, const size_t *lens) {
  local_get_t *g = arg;
  local_t *l = g->l;
  mmp__engine_t *e = l->e;
  int i;

  if (status < 0 || count != 1)
    l->failed = 1;
  else
    l->created[g->i] = lens[0] == 1 && values[0][0] == '1';
  if (--l->waits > 0)
    return;
  if (l->failed) {
    local_abandon(l);
    return;
  }
  for (i = 0; i < l->n; i++) {
    l->mapped[i] = i == l->me ? l->created[i]
                              : l->created[l->me] && l->created[i] &&
                                    mmp__shm_attach(e->shm.tp, l->group[i],
                                                    l->samepid[i]) == 0;
    l->put[i] = l->mapped[i] ? '1' : '0';
  }
  local_hook("shm-attached");
  if (mmp__boot_put(e->boot, "shm2", l->put, (size_t)l->n, local_put_done, l) !=
          0 ||
      local_gather(l, "shm2", local_got2) != 0)
    local_abandon(l);
}

/* Round 1: make our segment and say whether we could. */
static void local_shm_begin(local_t *l) {
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
  if (mmp__boot_put(e->boot, "shm1", rc == 0 ? "1" : "0", 1, local_put_done,
                    l) != 0 ||
      local_gather(l, "shm1", local_got1) != 0)
    local_abandon(l);
}

/* Our node's members that use shared memory, into a new set-up; NULL when
 * we are alone (or out of memory, which then costs only the speed-up). */
static local_t *local_group(mmp__engine_t *e, const ident_t *ids) {
  const ident_t *mine = &ids[e->cfg.rank];
  local_t *l;
  int i, n = 0;

  if (e->cfg.shm == MMP__SHM_OFF)
    return NULL;
  for (i = 0; i < e->cfg.size; i++)
    n += local_same_node(mine, &ids[i]) && strcmp(ids[i].f[ID_SHM], "1") == 0;
  if (n < 2 || (l = calloc(1, sizeof(*l))) == NULL)
    return NULL;
  l->group = malloc((size_t)n * sizeof(*l->group));
  l->samepid = calloc((size_t)n, 1);
  l->created = calloc((size_t)n, 1);
  l->mapped = calloc((size_t)n, 1);
  l->theirs = calloc((size_t)n, 1);
  l->put = calloc((size_t)n, 1);
  l->gets = calloc((size_t)n, sizeof(*l->gets));
  if (l->group == NULL || l->samepid == NULL || l->created == NULL ||
      l->mapped == NULL || l->theirs == NULL || l->put == NULL ||
      l->gets == NULL) {
    local_free(l);
    return NULL;
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
  return l;
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
  local_t *l;
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
  l = rc == 0 ? local_group(e, ids) : NULL;
  free(ids);
  if (l == NULL) {
    done(arg, rc);
    return;
  }
  l->done = done;
  l->arg = arg;
  local_shm_begin(l);
}
