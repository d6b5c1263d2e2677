/* SPDX-License-Identifier: MIT */
/*
 * The PMI-2 wire protocol, client side (pmi.h): what a process started by
 * `srun --mpi=pmi2` speaks on the descriptor its launcher passes in
 * PMI_FD, with PMI_RANK, PMI_SIZE and PMI_JOBID beside it. Spoken here
 * rather than through a libpmi2, so that every build has it.
 *
 * The first exchange is PMI-1's line "cmd=init pmi_version=2
 * pmi_subversion=0\n", answered by a line "cmd=response_to_init ... rc=0
 * ...". From then on every message, both ways, is a 6-character decimal
 * length (space padded) and that many bytes of "cmd=NAME;key=value;...;".
 * The server (Slurm's) has no escape for ';', so no value may hold one.
 * Replies are read with a bounded length and parsed without trusting
 * them: one that is malformed, too long or says rc != 0 fails the call
 * with MMP_EBOOT and a message naming the command.
 *
 * The ranks of a node are those the job attribute PMI_process_mapping
 * places there; their rounds go through node attributes
 * (info-putnodeattr, and info-getnodeattr with wait=TRUE), which the
 * node's own launcher (slurmstepd) serves without any other node.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmi.h"

/* Replies longer than this are refused: every one this layer asks for is
 * a value (at most MMP__PMI_MAX_VALUE) with a few fields around it. */
#define PMI2_MAX_REPLY 4096
#define PMI2_LEN_FIELD 6

static int pmi2_fd = -1;
static char pmi2_jobid[MMP__PMI_MAX_VALUE];
/* The ranks the launcher placed on this node, ascending; NULL when its
 * PMI_process_mapping did not say. */
static int *pmi2_local;
static int pmi2_nlocal;

static int pmi2_write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(pmi2_fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int pmi2_read_exact(char *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(pmi2_fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The value of `key` in a reply's "k=v;" fields, into out. Returns 0, or
 * -1 when absent or longer than cap - 1. */
static int pmi2_field(const char *reply, const char *key, char *out,
                      size_t cap) {
  size_t klen = strlen(key);
  const char *p = reply;

  while (*p != '\0') {
    const char *end = strchr(p, ';');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n > klen && memcmp(p, key, klen) == 0 && p[klen] == '=') {
      if (n - klen - 1 >= cap)
        return -1;
      memcpy(out, p + klen + 1, n - klen - 1);
      out[n - klen - 1] = '\0';
      return 0;
    }
    p += n + (end != NULL);
  }
  return -1;
}

/* Sends `req` and reads the reply, which must be "cmd=`want`;" with
 * rc=0. Returns 0 or MMP_EBOOT (logged, naming `what`). */
static int pmi2_call(const char *req, const char *want, char *reply,
                     const char *what) {
  char hdr[24], rc[16], cmd[64];
  size_t n = strlen(req), i;
  long len = 0;

  /* Requests are short: a key, a value and a few fields. */
  assert(n < 100000);
  snprintf(hdr, sizeof(hdr), "%-6zu", n);
  if (pmi2_write_all(hdr, PMI2_LEN_FIELD) != 0 || pmi2_write_all(req, n) != 0 ||
      pmi2_read_exact(hdr, PMI2_LEN_FIELD) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2 %s: the launcher's connection failed",
             what);
    return MMP_EBOOT;
  }
  for (i = 0; i < PMI2_LEN_FIELD; i++) {
    if (hdr[i] >= '0' && hdr[i] <= '9')
      len = len * 10 + (hdr[i] - '0');
    else if (hdr[i] != ' ')
      break;
  }
  if (i < PMI2_LEN_FIELD || len <= 0 || len >= PMI2_MAX_REPLY ||
      pmi2_read_exact(reply, (size_t)len) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2 %s: malformed reply from the launcher",
             what);
    return MMP_EBOOT;
  }
  reply[len] = '\0';
  if (memchr(reply, '\0', (size_t)len) != NULL ||
      pmi2_field(reply, "cmd", cmd, sizeof(cmd)) != 0 ||
      strcmp(cmd, want) != 0 || pmi2_field(reply, "rc", rc, sizeof(rc)) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2 %s: unexpected reply '%.80s'", what, reply);
    return MMP_EBOOT;
  }
  if (strcmp(rc, "0") != 0) {
    char msg[256] = "";
    pmi2_field(reply, "errmsg", msg, sizeof(msg));
    MMP__LOG(MMP__LOG_ERROR, "PMI-2 %s failed: rc=%s%s%s", what, rc,
             msg[0] ? ": " : "", msg);
    return MMP_EBOOT;
  }
  return 0;
}

/* An environment variable as an integer in [lo, hi]. */
static int pmi2_env_int(const char *name, long lo, long hi, long *out) {
  const char *s = getenv(name);

  if (s == NULL || mmp__parse_long(s, lo, hi, out) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2: %s='%s' is not a number from %ld to %ld",
             name, s != NULL ? s : "", lo, hi);
    return MMP_EENV;
  }
  return 0;
}

/* The version handshake, PMI-1's one line each way. */
static int pmi2_hello(void) {
  static const char init[] = "cmd=init pmi_version=2 pmi_subversion=0\n";
  char line[256];
  size_t n = 0;

  if (pmi2_write_all(init, sizeof(init) - 1) != 0)
    goto fail;
  while (n + 1 < sizeof(line)) {
    if (pmi2_read_exact(line + n, 1) != 0)
      goto fail;
    if (line[n++] == '\n')
      break;
  }
  line[n] = '\0';
  if (strncmp(line, "cmd=response_to_init ", 21) != 0 ||
      strstr(line, " rc=0") == NULL || strstr(line, "pmi_version=2") == NULL) {
    MMP__LOG(MMP__LOG_ERROR,
             "PMI-2: the launcher refused version 2 of the protocol: '%.80s'",
             line);
    return MMP_EBOOT;
  }
  return 0;
fail:
  MMP__LOG(MMP__LOG_ERROR, "PMI-2: no answer on PMI_FD=%d", pmi2_fd);
  return MMP_EBOOT;
}

/* One block of PMI_process_mapping, "(START,NODES,PER)": nodes START to
 * START + NODES - 1 take PER consecutive ranks each. */
typedef struct pmi2_block_s {
  long start, nodes, per;
} pmi2_block_t;

/* The blocks hold at most a value's worth of text. */
#define PMI2_MAX_BLOCKS (MMP__PMI_MAX_VALUE / 8)

/* Parses "(vector,(S,N,P),...)" into b. Returns how many blocks, or -1
 * when it does not parse. */
static int pmi2_blocks(const char *map, pmi2_block_t *b) {
  const char *p;
  int n = 0, used;

  if (strncmp(map, "(vector", 7) != 0)
    return -1;
  for (p = map + 7; *p == ','; p += used) {
    long v[3];
    used = 0;
    if (n == PMI2_MAX_BLOCKS ||
        sscanf(p, ",(%ld,%ld,%ld)%n", &v[0], &v[1], &v[2], &used) != 3 ||
        used == 0 || v[0] < 0 || v[0] >= (1L << 24) || v[1] < 1 ||
        v[1] > (1L << 24) || v[2] < 1 || v[2] > (1L << 24))
      return -1;
    b[n].start = v[0];
    b[n].nodes = v[1];
    b[n++].per = v[2];
  }
  return n > 0 && strcmp(p, ")") == 0 ? n : -1;
}

/* Walks the ranks in order through the blocks, and through them again
 * from the first while ranks remain (a cyclic placement is one block of
 * PER 1): each call gives the next rank's node. */
typedef struct pmi2_walk_s {
  const pmi2_block_t *b;
  int nb, k; /* blocks, the current one */
  long j, t; /* node within it, rank within that node */
} pmi2_walk_t;

static long pmi2_next(pmi2_walk_t *w) {
  const pmi2_block_t *b = &w->b[w->k];
  long node = b->start + w->j;

  if (++w->t == b->per) {
    w->t = 0;
    if (++w->j == b->nodes) {
      w->j = 0;
      w->k = (w->k + 1) % w->nb;
    }
  }
  return node;
}

/* The ranks on the node of rank `rank` (pmi2_local, ascending), from
 * walks over `size` ranks. Returns how many, or -1 without memory. */
static int pmi2_local_ranks(const pmi2_block_t *b, int nb, long rank,
                            long size) {
  pmi2_walk_t w = {b, nb, 0, 0, 0};
  long r, node = -1, n = 0;

  for (r = 0; r <= rank; r++)
    node = pmi2_next(&w);
  memset(&w, 0, sizeof(w));
  w.b = b;
  w.nb = nb;
  for (r = 0; r < size; r++)
    n += pmi2_next(&w) == node;
  pmi2_local = malloc((size_t)n * sizeof(*pmi2_local));
  if (pmi2_local == NULL)
    return -1;
  memset(&w, 0, sizeof(w));
  w.b = b;
  w.nb = nb;
  for (r = 0, n = 0; r < size; r++)
    if (pmi2_next(&w) == node)
      pmi2_local[n++] = (int)r;
  pmi2_nlocal = (int)n;
  return pmi2_nlocal;
}

/*
 * Which ranks share this rank's node, its local rank and the local size,
 * from the job attribute PMI_process_mapping, "(vector,(START,NODES,PER),
 * ...)" as MPICH defines it. Left unknown (-1, no pmi2_local) where it
 * does not parse, which only costs shared memory (logged).
 */
static void pmi2_mapping(mmp__pmi_info_t *info) {
  char req[128], reply[PMI2_MAX_REPLY], map[MMP__PMI_MAX_VALUE];
  pmi2_block_t b[PMI2_MAX_BLOCKS];
  int nb, i;

  snprintf(req, sizeof(req), "cmd=info-getjobattr;key=PMI_process_mapping;");
  if (pmi2_call(req, "info-getjobattr-response", reply, "info-getjobattr") !=
          0 ||
      pmi2_field(reply, "value", map, sizeof(map)) != 0 ||
      (nb = pmi2_blocks(map, b)) < 0 ||
      pmi2_local_ranks(b, nb, info->rank, info->size) < 0) {
    MMP__LOG(MMP__LOG_INFO,
             "PMI-2: no usable PMI_process_mapping from the launcher: the "
             "ranks of this host use TCP");
    return;
  }
  for (i = 0; pmi2_local[i] != info->rank; i++)
    ;
  info->local_rank = i;
  info->local_size = pmi2_nlocal;
}

static int pmi2_init(mmp__pmi_info_t *info) {
  char req[256], reply[PMI2_MAX_REPLY], v[32];
  const char *jobid = getenv("PMI_JOBID");
  long fd, rank, size, r, s;
  int rc;

  if ((rc = pmi2_env_int("PMI_FD", 0, 1 << 20, &fd)) != 0 ||
      (rc = pmi2_env_int("PMI_RANK", 0, (1 << 24) - 1, &rank)) != 0 ||
      (rc = pmi2_env_int("PMI_SIZE", 1, 1 << 24, &size)) != 0)
    return rc;
  if (rank >= size) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2: PMI_RANK=%ld is not below PMI_SIZE=%ld",
             rank, size);
    return MMP_EENV;
  }
  pmi2_fd = (int)fd;
  if ((rc = pmi2_hello()) != 0)
    return rc;
  snprintf(req, sizeof(req),
           "cmd=fullinit;pmijobid=%.64s;pmirank=%ld;threaded=FALSE;",
           jobid != NULL && strchr(jobid, ';') == NULL ? jobid : "-1", rank);
  if ((rc = pmi2_call(req, "fullinit-response", reply, "fullinit")) != 0)
    return rc;
  if (pmi2_field(reply, "rank", v, sizeof(v)) != 0 ||
      mmp__parse_long(v, 0, size - 1, &r) != 0 ||
      pmi2_field(reply, "size", v, sizeof(v)) != 0 ||
      mmp__parse_long(v, 1, 1 << 24, &s) != 0 || r != rank || s != size) {
    MMP__LOG(MMP__LOG_ERROR,
             "PMI-2: the launcher's rank and size do not match PMI_RANK=%ld "
             "and PMI_SIZE=%ld",
             rank, size);
    return MMP_EBOOT;
  }
  if ((rc = pmi2_call("cmd=job-getid;", "job-getid-response", reply,
                      "job-getid")) != 0)
    return rc;
  if (pmi2_field(reply, "jobid", pmi2_jobid, sizeof(pmi2_jobid)) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2 job-getid: no job id in the reply");
    return MMP_EBOOT;
  }
  info->rank = (int)rank;
  info->size = (int)size;
  info->local_rank = info->local_size = -1;
  pmi2_mapping(info);
  return 0;
}

static int pmi2_put(const char *key, const char *value) {
  char req[MMP__PMI_MAX_KEY + MMP__PMI_MAX_VALUE + 64], reply[PMI2_MAX_REPLY];

  snprintf(req, sizeof(req), "cmd=kvs-put;key=%s;value=%s;", key, value);
  return pmi2_call(req, "kvs-put-response", reply, "kvs-put");
}

static int pmi2_commit(void) {
  return 0; /* a put is the server's as soon as it answered */
}

static int pmi2_fence(int collect) {
  char reply[PMI2_MAX_REPLY];
  (void)collect;

  return pmi2_call("cmd=kvs-fence;", "kvs-fence-response", reply, "kvs-fence");
}

static int pmi2_get(int rank, const char *key, char *out, size_t cap) {
  char req[MMP__PMI_MAX_KEY + MMP__PMI_MAX_VALUE + 64], reply[PMI2_MAX_REPLY];
  char found[8];
  int rc;

  snprintf(req, sizeof(req), "cmd=kvs-get;jobid=%s;srcid=-1;key=%s;",
           pmi2_jobid, key);
  rc = pmi2_call(req, "kvs-get-response", reply, "kvs-get");
  if (rc == 0 && (pmi2_field(reply, "found", found, sizeof(found)) != 0 ||
                  strcmp(found, "TRUE") != 0 ||
                  pmi2_field(reply, "value", out, cap) != 0)) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2: rank %d published no valid '%s'", rank,
             key);
    rc = MMP_EBOOT;
  }
  return rc;
}

static int pmi2_node_put(const char *key, const char *value) {
  char req[MMP__PMI_MAX_KEY + MMP__PMI_MAX_VALUE + 64], reply[PMI2_MAX_REPLY];

  snprintf(req, sizeof(req), "cmd=info-putnodeattr;key=%s;value=%s;", key,
           value);
  return pmi2_call(req, "info-putnodeattr-response", reply, "info-putnodeattr");
}

/* Nothing to wait for here: each node_get waits for its value. */
static int pmi2_node_fence(const int *ranks, int n) {
  (void)ranks;
  (void)n;
  return 0;
}

/* A node attribute, waiting until its rank has put it: the node's own
 * launcher (one slurmstepd per node) answers, and nobody else waits. */
static int pmi2_node_get(int rank, const char *key, char *out, size_t cap) {
  char req[MMP__PMI_MAX_KEY + 64], reply[PMI2_MAX_REPLY], found[8];
  int rc;

  snprintf(req, sizeof(req), "cmd=info-getnodeattr;key=%s;wait=TRUE;", key);
  rc = pmi2_call(req, "info-getnodeattr-response", reply, "info-getnodeattr");
  if (rc == 0 && (pmi2_field(reply, "found", found, sizeof(found)) != 0 ||
                  strcmp(found, "TRUE") != 0 ||
                  pmi2_field(reply, "value", out, cap) != 0)) {
    MMP__LOG(MMP__LOG_ERROR, "PMI-2: rank %d put no valid '%s' on this node",
             rank, key);
    rc = MMP_EBOOT;
  }
  return rc;
}

/* Node attributes reach only the ranks the launcher placed on this node:
 * every one of `ranks` must be one of them. */
static int pmi2_node_ok(const int *ranks, int n) {
  int i, j = 0;

  if (pmi2_local == NULL)
    return 0;
  for (i = 0; i < n; i++) {
    while (j < pmi2_nlocal && pmi2_local[j] < ranks[i])
      j++;
    if (j == pmi2_nlocal || pmi2_local[j] != ranks[i])
      return 0;
  }
  return 1;
}

static void pmi2_abort(int code, const char *msg) {
  char req[512], clean[256];
  size_t i;
  (void)code;

  /* The message travels as a value: no ';' in it. */
  snprintf(clean, sizeof(clean), "%s", msg != NULL && *msg ? msg : "aborted");
  for (i = 0; clean[i] != '\0'; i++)
    if (clean[i] == ';' || clean[i] == '\n')
      clean[i] = ' ';
  snprintf(req, sizeof(req), "%-6zucmd=abort;isworld=TRUE;msg=%s;",
           strlen("cmd=abort;isworld=TRUE;msg=;") + strlen(clean), clean);
  /* No reply comes: the launcher kills the job. */
  (void)pmi2_write_all(req, strlen(req));
}

static void pmi2_fini(void) {
  char reply[PMI2_MAX_REPLY];

  free(pmi2_local);
  pmi2_local = NULL;
  pmi2_nlocal = 0;
  if (pmi2_fd < 0)
    return;
  (void)pmi2_call("cmd=finalize;", "finalize-response", reply, "finalize");
  close(pmi2_fd);
  pmi2_fd = -1;
}

const mmp__pmi_ops_t mmp__pmi2_ops = {
    .name = "PMI-2",
    .init = pmi2_init,
    .put = pmi2_put,
    .commit = pmi2_commit,
    .fence = pmi2_fence,
    .get = pmi2_get,
    .node_put = pmi2_node_put,
    .node_fence = pmi2_node_fence,
    .node_get = pmi2_node_get,
    .node_ok = pmi2_node_ok,
    .abort = pmi2_abort,
    .fini = pmi2_fini,
};
