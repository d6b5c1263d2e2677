/* SPDX-License-Identifier: MIT */
/*
 * minimprun's output forwarding. Each rank has two streams, its stdout and
 * stderr, fed from a pipe when the rank runs here and from the control
 * connection when it runs on another host; each agent has two as well.
 * Output is forwarded whole lines at a time, so lines of different ranks
 * never mix. Untagged output is passed through byte for byte; a line
 * longer than RUN_LINE_CAP (run_output.c) goes out in pieces, each ending
 * in a newline only with --tag-output, and an unfinished last line is
 * written when the stream ends.
 *
 * Writing to minimprun's stdout or stderr waits until it is done (with
 * poll if the descriptor is non-blocking), and output that nobody reads
 * any more is dropped. Without memory, held bytes are written at once
 * rather than lost.
 */
#ifndef MMP_LAUNCHER_RUN_OUTPUT_H
#define MMP_LAUNCHER_RUN_OUTPUT_H

#include <stddef.h>
#include <uv.h>

#include "run.h"

/* Sets up `o`, which is zeroed, as a stream of job `j` whose lines go to
 * `fd` (1 or 2), each after `tag` (borrowed; "" for none). For a local
 * rank the caller then sets up o->pipe and o->piped. */
void mmp__run_out_init(mmp__run_out_t *o, mmp__run_job_t *j, const char *tag,
                       int fd);

/* Sets up both streams of rank `r`, which go to minimprun's stdout and
 * stderr, or to the rank's files with --output-filename. */
void mmp__run_rank_outs_init(mmp__run_rank_t *r);

/*
 * With --output-filename DIR: creates DIR/1/rank.N for every rank and
 * opens (truncating) its files "stdout" and "stderr" there. Returns 0, or
 * 1 after a message naming the path that failed.
 */
int mmp__run_out_files(mmp__run_job_t *j);

/* Forwards `n` bytes that the stream's writer wrote: its complete lines
 * are written now, the rest is held until its line ends. */
void mmp__run_feed(mmp__run_out_t *o, const char *d, size_t n);

/*
 * Ends the stream: writes its unfinished line, then closes its pipe (the
 * held line is freed in mmp__run_out_on_close) or frees the held line at
 * once. Does nothing to a stream never set up or already ended. `counted`
 * is 1 for a rank's stream, which leaves j->open_pipes, and 0 for an
 * agent's. Whether the job can end now is the caller's question.
 */
void mmp__run_out_close(mmp__run_out_t *o, int counted);

/* The close callback of a stream's pipe (h->data is the stream): frees
 * the held line. */
void mmp__run_out_on_close(uv_handle_t *h);

#endif /* MMP_LAUNCHER_RUN_OUTPUT_H */
