/* SPDX-License-Identifier: MIT */
/*
 * A pausable reader of minimprun's standard input (see input.h). Streams
 * (terminals, pipes, sockets) are read with uv_read_start; anything else
 * with one uv_fs_read at a time, the next issued only while not paused.
 */
#include "input.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "minimp.h"

#define INPUT_BUF 65536

enum {
  INPUT_FILE = 0, /* read with uv_fs_read */
  INPUT_HANDLE,   /* a libuv stream handle reads it */
  INPUT_NONE      /* cannot be read: the end was reported */
};

struct mmp__input_s {
  int kind;
  int fd;    /* our duplicate of the input */
  int owned; /* the handle closes fd */
  int flags; /* its file status flags before libuv changed them */
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tty_t tty;
  } h;
  uv_fs_t req;
  uv_loop_t *loop;
  mmp__input_cb cb;
  void *ctx;
  int paused;
  int in_flight; /* a uv_fs_read is pending */
  int done;      /* the end was delivered */
  int stopped;
  char buf[INPUT_BUF];
};

static void input_read_file(mmp__input_t *in);

static void input_free(mmp__input_t *in) {
  if (!in->owned)
    close(in->fd);
  free(in);
}

static void input_on_close(uv_handle_t *h) {
  input_free(h->data);
}

static void input_end(mmp__input_t *in) {
  in->done = 1;
  in->cb(in->ctx, NULL, 0);
}

static void input_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  mmp__input_t *in = h->data;

  (void)hint;
  *buf = uv_buf_init(in->buf, sizeof(in->buf));
}

static void input_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  mmp__input_t *in = st->data;

  if (nread > 0) {
    in->cb(in->ctx, buf->base, (size_t)nread);
  } else if (nread < 0) {
    uv_read_stop(st);
    input_end(in);
  }
}

static void input_on_fs(uv_fs_t *req) {
  mmp__input_t *in = req->data;
  ssize_t n = req->result;

  uv_fs_req_cleanup(req);
  in->in_flight = 0;
  if (in->stopped) {
    input_free(in);
    return;
  }
  if (n > 0) {
    in->cb(in->ctx, in->buf, (size_t)n);
    input_read_file(in);
  } else {
    input_end(in);
  }
}

static void input_read_file(mmp__input_t *in) {
  uv_buf_t b = uv_buf_init(in->buf, sizeof(in->buf));

  if (in->paused || in->in_flight || in->done || in->stopped)
    return;
  in->req.data = in;
  if (uv_fs_read(in->loop, &in->req, in->fd, &b, 1, -1, input_on_fs) != 0)
    input_end(in);
  else
    in->in_flight = 1;
}

/* Reads in->fd through a libuv stream handle. */
static void input_open_stream(mmp__input_t *in, uv_handle_type type) {
  uv_os_fd_t f = -1;

  if (type == UV_TTY) {
    /* libuv reopens the terminal, so fd 0 keeps its blocking mode. */
    if (uv_tty_init(in->loop, &in->h.tty, in->fd, 1) != 0) {
      in->kind = INPUT_NONE;
      input_end(in);
      return;
    }
  } else {
    uv_pipe_init(in->loop, &in->h.pipe, 0);
    if (uv_pipe_open(&in->h.pipe, in->fd) != 0) {
      in->kind = INPUT_HANDLE;
      in->h.handle.data = in;
      input_end(in);
      return;
    }
  }
  in->kind = INPUT_HANDLE;
  in->h.handle.data = in;
  /* A reopened terminal leaves our duplicate to us. */
  in->owned = uv_fileno(&in->h.handle, &f) == 0 && f == in->fd;
  if (uv_read_start(&in->h.stream, input_alloc, input_on_read) != 0)
    input_end(in);
}

int mmp__input_start(uv_loop_t *loop, int fd, mmp__input_cb cb, void *ctx,
                     mmp__input_t **out) {
  mmp__input_t *in = calloc(1, sizeof(*in));
  uv_handle_type type;

  if (in == NULL)
    return MMP_ENOMEM;
  in->loop = loop;
  in->cb = cb;
  in->ctx = ctx;
  in->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (in->fd < 0) {
    free(in);
    return MMP_EIO;
  }
  in->flags = fcntl(in->fd, F_GETFL);
  type = uv_guess_handle(in->fd);
  in->kind = INPUT_FILE;
  if (type == UV_TTY || type == UV_NAMED_PIPE || type == UV_TCP)
    input_open_stream(in, type);
  else
    input_read_file(in);
  *out = in;
  return 0;
}

void mmp__input_pause(mmp__input_t *in) {
  if (in->paused || in->done)
    return;
  in->paused = 1;
  if (in->kind == INPUT_HANDLE)
    uv_read_stop(&in->h.stream);
}

void mmp__input_resume(mmp__input_t *in) {
  if (!in->paused || in->done)
    return;
  in->paused = 0;
  if (in->kind == INPUT_FILE)
    input_read_file(in);
  else if (uv_read_start(&in->h.stream, input_alloc, input_on_read) != 0)
    input_end(in);
}

void mmp__input_stop(mmp__input_t *in) {
  if (in == NULL || in->stopped)
    return;
  in->stopped = 1;
  if (in->kind != INPUT_HANDLE) {
    if (!in->in_flight)
      input_free(in);
    return;
  }
  /* The pipe's open file description may be shared with our parent. */
  if (in->flags >= 0)
    fcntl(in->fd, F_SETFL, in->flags);
  uv_close(&in->h.handle, input_on_close);
}
