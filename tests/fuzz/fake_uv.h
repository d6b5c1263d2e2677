/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the part of libuv that the rendezvous server and client,
 * the launcher's control connections and the TCP transport use, so that a
 * harness drives their per-connection state machines without a socket, a
 * process or a clock. fake_uv.c defines uv_tcp_init(), uv_write(), uv_close(),
 * uv_timer_start(), uv_spawn() and the rest under libuv's own names; an
 * executable that links it uses those instead of the shared library's
 * (libuv still supplies uv_strerror(), uv_buf_init() and the like).
 *
 * What it keeps of libuv's contract:
 *  - no callback runs inside the call that causes it: writes, closes,
 *    connects and accepted connections complete from fuv_run();
 *  - a closed handle gets no callback but its close callback, which comes
 *    after every callback queued before the close; writes on a closing
 *    stream fail with UV_EBADF, timers on a closing handle with UV_EINVAL;
 *  - reading stops after EOF or an error; a listener whose callback does
 *    not accept offers nothing more until uv_accept() takes the connection;
 *  - time moves only when the harness says (fuv_advance); a timer due now
 *    (a zero timeout) fires from fuv_run().
 * Misuse that libuv would assert on (closing a handle twice, closing one
 * it never initialised, more than FUV_MAX_HANDLES open) fails the input.
 *
 * The other end of each connection is a "peer", numbered from 0: what the
 * harness sends it, what the code wrote to it, whether the code closed it.
 */
#ifndef MMP_TESTS_FUZZ_FAKE_UV_H
#define MMP_TESTS_FUZZ_FAKE_UV_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "fuzz.h"

#define FUV_MAX_HANDLES 512
#define FUV_MAX_PEERS 64

/* Forgets everything; the previous input must have closed every handle.
 * `loop` is the loop the code is given; its memory is cleared. */
void fuv_reset(uv_loop_t *loop);

/* Delivers every pending callback: completions, accepted connections,
 * data and EOF for reading streams, timers due now. Fails the input if
 * the code keeps the loop busy for ever. */
void fuv_run(void);

/* Moves the clock `ms` forward, firing the timers that fall due. */
void fuv_advance(uint64_t ms);

/* Handles initialised and not yet closed (close callback run). */
size_t fuv_open_handles(void);

/* A new connection to the (most recent) listener; returns its peer, or
 * -1 when nothing listens or there are too many. */
int fuv_incoming(void);

/* The peer that the last uv_tcp_connect() is connected to; -1 if none. */
int fuv_last_connect(void);

/* The status the next connects / spawns complete with (0: success). */
void fuv_set_connect_status(int status);
void fuv_set_spawn_status(int status);

/* The next `n` write completions report UV_EPIPE. */
void fuv_fail_writes(unsigned n);

/* What the peer sends: bytes, delivered in reads of at most `chunk`
 * bytes (0: as large as the reader's buffer); its EOF; a reset. */
void fuv_send(int peer, const void *data, size_t n, size_t chunk);
void fuv_eof(int peer);
void fuv_reset_peer(int peer);

/* What the code wrote to the peer, and whether it closed its end or shut
 * down its side (uv_shutdown). */
const fuzz_buf_t *fuv_output(int peer);
int fuv_closed(int peer);
int fuv_shut(int peer);
int fuv_npeers(void);

/* The processes uv_spawn() started, in order: how many, the peer at the
 * other end of a process's pipe on `fd` (0, 1, 2; -1 if none), and ending
 * one (its exit callback runs from fuv_run()). The last signal
 * uv_process_kill() sent it, or 0. */
int fuv_nprocs(void);
int fuv_proc_pipe(int proc, int fd);
void fuv_exit(int proc, int64_t status, int signo);
int fuv_killed(int proc);

#endif /* MMP_TESTS_FUZZ_FAKE_UV_H */
