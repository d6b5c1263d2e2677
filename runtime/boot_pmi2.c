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

/*
 * Local rank and size from the job attribute PMI_process_mapping,
 * "(vector,(START,NODES,PER),...)": blocks of NODES nodes with PER
 * consecutive ranks each, in rank order. Leaves -1 where it does not
 * parse or does not cover the rank.
 */
static void pmi2_mapping(mmp__pmi_info_t *info) {
  char req[128], reply[PMI2_MAX_REPLY], map[MMP__PMI_MAX_VALUE], *p;
  long first = 0;

  snprintf(req, sizeof(req), "cmd=info-getjobattr;key=PMI_process_mapping;");
  if (pmi2_call(req, "info-getjobattr-response", reply, "info-getjobattr") !=
          0 ||
      pmi2_field(reply, "value", map, sizeof(map)) != 0 ||
      strncmp(map, "(vector", 7) != 0)
    return;
  for (p = strchr(map, '('); (p = strchr(p + 1, '(')) != NULL;) {
    long start, nodes, per;
    if (sscanf(p, "(%ld,%ld,%ld)", &start, &nodes, &per) != 3 || nodes < 1 ||
        per < 1 || nodes > (1L << 24) || per > (1L << 24))
      return;
    if (info->rank < first + nodes * per) {
      info->local_rank = (int)((info->rank - first) % per);
      info->local_size = (int)per;
      return;
    }
    first += nodes * per;
  }
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
    .abort = pmi2_abort,
    .fini = pmi2_fini,
};
