/* SPDX-License-Identifier: MIT */
/*
 * Forwarding of the ranks' and the agents' output (see run_output.h):
 * complete lines are gathered in the job's scratch buffer and written with
 * as few write(2) calls as possible, each holding whole lines only; the
 * unfinished line of each stream waits in the stream's own buffer.
 */
#include "run_output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define RUN_LINE_CAP 65536 /* a longer line is forwarded in chunks */

/* Writes all of p to fd, waiting if fd is non-blocking; drops the output
 * if the reader went away. */
static void run_write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pfd = {fd, POLLOUT, 0};
      poll(&pfd, 1, -1);
    } else {
      return;
    }
  }
}

/* Appends to the job's scratch buffer; on OOM writes through at once. */
static void run_scratch_add(mmp__run_job_t *j, int fd, const char *p,
                            size_t n) {
  if (n == 0)
    return;
  if (j->scratch_len + n > j->scratch_cap) {
    size_t cap = j->scratch_cap != 0 ? j->scratch_cap : 4096;
    char *nb;
    while (cap < j->scratch_len + n)
      cap *= 2;
    nb = realloc(j->scratch, cap);
    if (nb == NULL) {
      run_write_all(fd, j->scratch, j->scratch_len);
      j->scratch_len = 0;
      run_write_all(fd, p, n);
      return;
    }
    j->scratch = nb;
    j->scratch_cap = cap;
  }
  memcpy(j->scratch + j->scratch_len, p, n);
  j->scratch_len += n;
}

/* Queues one output line (or a chunk of a long one, or a last unfinished
 * line): tag + a + b, and a newline if tagged output needs one. */
static void run_emit(mmp__run_out_t *o, const char *a, size_t na, const char *b,
                     size_t nb) {
  mmp__run_job_t *j = o->job;
  const char *last = nb > 0 ? b + nb - 1 : na > 0 ? a + na - 1 : NULL;

  run_scratch_add(j, o->fd, o->tag, strlen(o->tag));
  run_scratch_add(j, o->fd, a, na);
  run_scratch_add(j, o->fd, b, nb);
  /* Untagged output is passed through byte for byte. */
  if (j->tag_output && (last == NULL || *last != '\n'))
    run_scratch_add(j, o->fd, "\n", 1);
}

static void run_scratch_flush(mmp__run_job_t *j, int fd) {
  run_write_all(fd, j->scratch, j->scratch_len);
  j->scratch_len = 0;
}

/* Holds bytes of an unfinished line, emitting a chunk when the cap fills. */
static void run_hold(mmp__run_out_t *o, const char *d, size_t n) {
  while (n > 0) {
    size_t take = RUN_LINE_CAP - o->len;
    take = take < n ? take : n;
    if (o->len + take > o->cap) {
      size_t cap = o->cap != 0 ? o->cap : 256;
      char *nb;
      while (cap < o->len + take)
        cap *= 2;
      cap = cap < RUN_LINE_CAP ? cap : RUN_LINE_CAP;
      nb = realloc(o->buf, cap);
      if (nb == NULL) {
        /* Without memory, forward what we have rather than lose it. */
        run_emit(o, o->buf, o->len, d, n);
        o->len = 0;
        return;
      }
      o->buf = nb;
      o->cap = cap;
    }
    memcpy(o->buf + o->len, d, take);
    o->len += take;
    d += take;
    n -= take;
    if (o->len == RUN_LINE_CAP) {
      run_emit(o, o->buf, o->len, NULL, 0);
      o->len = 0;
    }
  }
}

void mmp__run_feed(mmp__run_out_t *o, const char *d, size_t n) {
  mmp__run_job_t *j = o->job;

  while (n > 0) {
    const char *nl = memchr(d, '\n', n);
    size_t seg;
    if (nl == NULL) {
      run_hold(o, d, n);
      break;
    }
    seg = (size_t)(nl - d) + 1;
    if (o->len > 0 || j->tag_output) {
      run_emit(o, o->buf, o->len, d, seg);
      o->len = 0;
    } else {
      /* Untagged: every complete line of this read in one piece. */
      const char *end = d + n;
      while (end[-1] != '\n')
        end--;
      seg = (size_t)(end - d);
      run_scratch_add(j, o->fd, d, seg);
    }
    d += seg;
    n -= seg;
  }
  run_scratch_flush(j, o->fd);
}

void mmp__run_out_on_close(uv_handle_t *h) {
  mmp__run_out_t *o = h->data;

  free(o->buf);
  o->buf = NULL;
  o->cap = o->len = 0;
}

void mmp__run_out_init(mmp__run_out_t *o, mmp__run_job_t *j, const char *tag,
                       int fd) {
  o->job = j;
  o->tag = tag;
  o->fd = fd;
  o->inited = 1;
}

void mmp__run_out_close(mmp__run_out_t *o, int counted) {
  mmp__run_job_t *j;

  if (!o->inited || o->closed)
    return;
  j = o->job;
  if (o->len > 0) {
    run_emit(o, o->buf, o->len, NULL, 0);
    run_scratch_flush(j, o->fd);
    o->len = 0;
  }
  o->closed = 1;
  if (counted)
    j->open_pipes--;
  if (o->piped) {
    uv_close((uv_handle_t *)&o->pipe, mmp__run_out_on_close);
  } else {
    free(o->buf);
    o->buf = NULL;
    o->cap = 0;
  }
}

void mmp__run_rank_outs_init(mmp__run_rank_t *r) {
  int k;

  for (k = 0; k < 2; k++)
    mmp__run_out_init(&r->out[k], r->job, r->tag,
                      r->outfd[k] > 0 ? r->outfd[k] : k + 1);
}

/* mkdir of `path`, which may exist already; 0 or -1 (errno set). */
static int run_mkdir(const char *path) {
  return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

int mmp__run_out_files(mmp__run_job_t *j) {
  static const char *const names[2] = {"stdout", "stderr"};
  char path[4096];
  int r, k, n;

  /* Open MPI's layout, DIR/1/rank.N/stdout: "1" is the job's number. */
  n = snprintf(path, sizeof(path), "%s/1", j->outdir);
  if (n <= 0 || (size_t)n >= sizeof(path) - 32) {
    mmp__say("--output-filename '%s': path too long", j->outdir);
    return 1;
  }
  path[n - 2] = '\0';
  if (run_mkdir(path) != 0 || (path[n - 2] = '/', run_mkdir(path)) != 0)
    goto fail;
  for (r = 0; r < j->n; r++) {
    for (k = 0; k < 2; k++) {
      snprintf(path + n, sizeof(path) - (size_t)n, "/rank.%d", r);
      if (k == 0 && run_mkdir(path) != 0)
        goto fail;
      snprintf(path + n, sizeof(path) - (size_t)n, "/rank.%d/%s", r, names[k]);
      j->ranks[r].outfd[k] =
          open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (j->ranks[r].outfd[k] < 0) {
        j->ranks[r].outfd[k] = 0;
        goto fail;
      }
    }
  }
  return 0;
fail:
  mmp__say("--output-filename: cannot create '%s': %s", path, strerror(errno));
  return 1;
}
