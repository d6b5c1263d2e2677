/* SPDX-License-Identifier: MIT */
/*
 * Reading minimprun's standard input on its libuv loop, whatever it is: a
 * terminal, a pipe or socket, or a regular file (which epoll cannot watch,
 * so it is read through libuv's thread pool). Used to forward the input to
 * rank 0 when rank 0 runs on another host; a local rank 0 simply inherits
 * the descriptor.
 *
 * The descriptor is duplicated, so closing the reader leaves fd 0 alone,
 * and the file status flags libuv changes (O_NONBLOCK, shared with
 * whoever else holds the pipe) are put back on stop.
 */
#ifndef MMP_LAUNCHER_INPUT_H
#define MMP_LAUNCHER_INPUT_H

#include <stddef.h>
#include <uv.h>

typedef struct mmp__input_s mmp__input_t;

/* `n` bytes of input; n 0 is the end (or a read error). The end may be
 * reported from inside mmp__input_start() or mmp__input_resume() when the
 * input cannot be read at all. */
typedef void (*mmp__input_cb)(void *ctx, const char *data, size_t n);

/* Loop context. Starts reading `fd`. Returns 0, MMP_ENOMEM or MMP_EIO
 * (fd cannot be duplicated). */
int mmp__input_start(uv_loop_t *loop, int fd, mmp__input_cb cb, void *ctx,
                     mmp__input_t **out);

/* Loop context. Stop delivering data for now / go on. */
void mmp__input_pause(mmp__input_t *in);
void mmp__input_resume(mmp__input_t *in);

/* Loop context. No callback runs afterwards; the reader is freed once its
 * handle (or a read in flight) is done. Safe on NULL. */
void mmp__input_stop(mmp__input_t *in);

#endif /* MMP_LAUNCHER_INPUT_H */
