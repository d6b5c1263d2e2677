/* SPDX-License-Identifier: MIT */
/*
 * minimprun's per-host daemon, "minimprun --daemon CTRLADDR INDEX", which
 * an agent (ssh, "ip netns exec") starts on every remote host of a job,
 * and the small shim it starts ranks through.
 */
#ifndef MMP_LAUNCHER_DAEMON_H
#define MMP_LAUNCHER_DAEMON_H

/*
 * Runs the daemon: reads the job key from the first line of standard input,
 * connects to minimprun's control server at CTRLADDR (argv[2]) as host
 * INDEX (argv[3]), starts the ranks it is given, and reports on them until
 * they are all gone. Returns the process's exit status: 0 after a clean
 * end, 1 if contact was lost or could not be made, 2 on bad arguments.
 */
int mmp__daemon_main(int argc, char **argv);

/*
 * "minimprun --exec-rank PID PROGRAM ARGS...": how the daemon (pid PID)
 * starts a rank. Arranges for SIGKILL should the daemon die, then executes
 * PROGRAM. Returns only on failure: 127 (not found), 126 (not executable),
 * 1 (the daemon is gone), 2 (bad arguments).
 */
int mmp__daemon_exec_rank(int argc, char **argv);

#endif /* MMP_LAUNCHER_DAEMON_H */
