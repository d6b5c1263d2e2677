#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The performance report: runs the benchmarks behind docs/performance.md's
tables beside the anchors, saves the raw results, and writes the tables.

  report.py run [--build DIR] [--quick] [--only NAME,...]
      `make report` (QUICK=1: --quick). Refuses, with exit status 2, when
      the anchors are missing (MINIMP_ANCHORS, tests/bench/anchors.sh) or
      the machine is not root. Then takes the bench lock once for the
      whole run (see `lock`) and, before each benchmark, waits until the
      machine is idle: the 1-minute load average at most REPORT_MAX_LOAD
      (default 1.0) or no other process runnable over 2 s; it refuses
      (exit status 3) when it is not after REPORT_WAIT seconds (default
      240). Prints each benchmark's wall time and the wait before it.
      Saves every row to docs/data/history/<date>-<commit>[-quick].json,
      then renders it.
  report.py lock CMD...
      Runs CMD holding the bench lock as `run` holds it: the lock files of
      benchlock and heavy (REPORT_LOCK_DIR, default /tmp), so that no heavy
      command starts and none runs, with the background runs of bgrun
      stopped (SIGSTOP) until CMD ends, and resumed (SIGCONT) however the
      lock is left, signals included. Unlike benchlock it does not wait
      for the load average to fall.
  report.py render RESULT.json [--doc FILE]...
      Rewrites the generated regions of each FILE (docs/performance.md and
      README.md by default) from a saved result; everything outside the
      regions is left as it is.

A generated region is the text between
  <!-- report:NAME begin ... -->  and  <!-- report:NAME end -->
on lines of their own. NAME is a table below (TABLES); a region whose
benchmark the result does not hold is left alone.
"""
import argparse
import csv
import datetime
import fcntl
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DOCS = ["docs/performance.md", "README.md"]
HISTORY = "docs/data/history"

# ---- The benchmarks ------------------------------------------------------

# Each: the script and its arguments (full, quick), extra environment, the
# CSV file it writes into $OUT, a line saying what it measures, and what
# must be built before the bench lock is taken ("prepare"). The
# 16-host broadcast needs the anchors' host names (h0...), which their
# run_bcast.sh hard-codes: it runs with NETCLUSTER_PREFIX=h.
BENCHES = {
    "pingpong": {
        "what": "2 ranks on loopback, TCP on both sides",
        "cmd": ["bash", "tests/bench/run_pingpong.sh", "{build}",
                "8 1024 65536 4194304", "{rounds}"],
        "rounds": (9, 3),
        "env": {},
        "csv": "pingpong.csv",
    },
    "onehost": {
        "what": "one host, shared memory beside Open MPI's defaults",
        "cmd": ["sh", "tests/bench/run_onehost.sh", "{build}", "{rounds}",
                "8"],
        "rounds": (7, 2),
        "env": {"PP_SIZES": "8 65536 1048576 4194304"},
        # Quick: what the tables show (AUTO's broadcast, ping-pong), no
        # allreduce, barrier or shm rows by name.
        "quick_env": {"BC_ITERS": "100", "AR_SIZES": "", "BARRIER": "0",
                      "SHM_ROWS": "0"},
        "csv": "onehost.csv",
        # coll_ompi from this tree's source (its barrier mode).
        "prepare": ["sh", "tests/bench/build_coll_anchors.sh"],
    },
    "bcast16": {
        "what": "broadcast on 16 emulated hosts, 100 Mbit/s links",
        "cmd": ["sh", "tests/bench/run_cluster_bcast.sh", "{build}", "16",
                "1024 65536 1048576", "10", "{rounds}", "100mbit"],
        "rounds": (3, 1),
        "env": {"NETCLUSTER_PREFIX": "h", "NETCLUSTER_SWITCH": "sw"},
        "csv": "bcast.csv",
        "root": True,
    },
    "coll16": {
        "what": "allreduce, reduce, alltoall and gather on 16 emulated hosts",
        "cmd": ["sh", "tests/bench/run_cluster_coll.sh", "{build}", "16",
                "5", "{rounds}", "100mbit"],
        "rounds": (3, 1),
        "env": {},
        "quick_env": {"AR_SIZES": "4096 1048576", "COLLS": "allreduce reduce"},
        "csv": "coll.csv",
        "root": True,
    },
    # The caller's NETCLUSTER_PREFIX: the script runs Open MPI itself.
    "hosts_ranks": {
        "what": "broadcast and allreduce on 4 emulated hosts x 4 ranks, "
                "100 Mbit/s links, beside Open MPI's defaults",
        "cmd": ["sh", "tests/bench/run_hosts_ranks.sh", "{build}", "4", "4",
                "1024 65536 1048576", "20", "{rounds}"],
        "rounds": (5, 1),
        "env": {"AR_SIZES": "8 65536 1048576"},
        "csv": "hosts_ranks.csv",
        "root": True,
        "prepare": ["sh", "tests/bench/build_coll_anchors.sh"],
    },
    "osu1": {
        "what": "OSU's osu_latency on libminimp-mpi beside minimp-bench",
        "cmd": ["sh", "tests/bench/run_osu.sh", "{build}", "onehost",
                "{rounds}"],
        "rounds": (9, 5),
        "env": {"OSU_BUILD": "results/osu"},
        "csv": "onehost.csv",
        "prepare": ["sh", "tests/bench/run_osu.sh", "{build}", "build"],
    },
    "osu16": {
        "what": "OSU's osu_bcast and osu_allreduce on 16 emulated hosts",
        "cmd": ["sh", "tests/bench/run_osu.sh", "{build}", "cluster",
                "{rounds}", "16", "100mbit", "osu_bcast osu_allreduce"],
        "rounds": (3, 1),
        "env": {"OSU_BUILD": "results/osu", "NETCLUSTER_PREFIX": "h",
                "NETCLUSTER_SWITCH": "sw"},
        "quick_env": {"OSU_ARGS": "-m 1024:1048576 -i 100 -x 10"},
        "csv": "cluster.csv",
        "root": True,
        "prepare": ["sh", "tests/bench/run_osu.sh", "{build}", "build"],
    },
    # Open MPI's side is Debian's mpirun (make test installs it), not the
    # anchors; the hosts are NETCLUSTER_PREFIX's, whatever the caller set.
    "startup": {
        "what": "start-up of 64 ranks on 8 emulated hosts through ssh, "
                "Slurm and PMIx",
        "cmd": ["sh", "tests/bench/run_startup_real.sh", "{build}",
                "{rounds}"],
        "rounds": (7, 3),
        "env": {},
        "csv": "startup.csv",
        "root": True,
        "anchors": False,
    },
}

ANCHOR_PROGRAMS = ["pp_ompi", "bcast_ompi", "bcast_mpich", "bcast_gloo",
                   "coll_ompi", "allreduce_gloo"]


def die(status, msg):
    print("report: " + msg, file=sys.stderr)
    sys.exit(status)


def check_anchors(names):
    """Refuses (exit 2) unless MINIMP_ANCHORS and the programs are there,
    where a benchmark of `names` runs beside them, and unless root, where
    one needs the emulated cluster."""
    if any(BENCHES[n].get("anchors", True) for n in names):
        anchors_there()
    if any(BENCHES[n].get("root") for n in names) and os.geteuid() != 0:
        die(2, "the emulated cluster needs root (tests/netcluster)")


def anchors_there():
    a = os.environ.get("MINIMP_ANCHORS", "")
    if a in ("", "none"):
        die(2, "MINIMP_ANCHORS is %s: the report measures beside the "
            "anchors; set it to their folder (the one with build.sh, "
            "run_bcast.sh and nsrsh; docs/testing.md)" %
            ("not set" if a == "" else "'none'"))
    for f in ("build.sh", "run_bcast.sh", "nsrsh"):
        if not os.path.isfile(os.path.join(a, f)):
            die(2, "MINIMP_ANCHORS='%s' is not the anchors' folder: it has "
                "no %s" % (a, f))
    abin = os.environ.get("ANCHORS", "/tmp/minimp-anchors")
    missing = [p for p in ANCHOR_PROGRAMS
               if not os.access(os.path.join(abin, p), os.X_OK)]
    if missing:
        die(2, "anchor programs missing in %s (ANCHORS): %s; build them with "
            "'sh %s/build.sh' and 'sh tests/bench/build_coll_anchors.sh'" %
            (abin, " ".join(missing), a))


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def runnable():
    """The most processes runnable at once over 2 s, this one excluded."""
    most = 0
    for _ in range(10):
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running"):
                    most = max(most, int(line.split()[1]) - 1)
        time.sleep(0.2)
    return most


def wait_idle(name):
    """Waits until the machine is idle: the 1-minute load average at most
    REPORT_MAX_LOAD, or nothing else runnable. The average lags a minute
    or more behind the machine, so after the previous benchmark's own
    ranks it would keep the next one waiting on an idle machine; the run
    queue tells at once. Refuses (exit 3) after REPORT_WAIT seconds.
    Returns the load average, the run queue and the seconds waited."""
    limit = float(os.environ.get("REPORT_MAX_LOAD", "1.0"))
    t0 = time.time()
    deadline = t0 + float(os.environ.get("REPORT_WAIT", "240"))
    while True:
        load, queue = loadavg(), runnable()
        if load[0] <= limit or queue == 0:
            return load, queue, time.time() - t0
        if time.time() >= deadline:
            die(3, "the machine is busy: %d other process%s runnable and "
                "the 1-minute load average %.2f above %.2f "
                "(REPORT_MAX_LOAD) after %s s (REPORT_WAIT); %s not "
                "measured. Run the report when nothing else runs" % (
                    queue, "" if queue == 1 else "es", load[0], limit,
                    os.environ.get("REPORT_WAIT", "240"), name))
        time.sleep(5)


def git(*args):
    return subprocess.run(["git", "-C", SRC] + list(args), check=True,
                          capture_output=True, text=True).stdout.strip()


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem_kib = int(f.readline().split()[1])
    except OSError:
        mem_kib = 0
    return {"cpus": os.cpu_count(), "cpu": model,
            "memory_gib": round(mem_kib / 1048576),
            "kernel": platform.release()}


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


# ---- The bench lock ------------------------------------------------------

# The lock files of benchlock and heavy (/usr/local/bin): a heavy command
# takes the gate, then the bench lock shared, and lets the gate go; a
# benchmark holds both alone. bgrun registers each background run's
# process group in minimp-bg/PGID.pgid for the benchmark to stop.
def lock_path(name):
    return os.path.join(os.environ.get("REPORT_LOCK_DIR", "/tmp"), name)


def processes():
    """{pid: (ppid, pgid)} of every process /proc shows now."""
    procs = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % e) as fh:
                # pid (comm) state ppid pgrp ...; comm may hold spaces.
                rest = fh.read().rsplit(")", 1)[1].split()
            procs[int(e)] = (int(rest[1]), int(rest[2]))
        except (OSError, IndexError, ValueError):
            pass  # it ended meanwhile
    return procs


def bg_signal(sig):
    """Sends `sig` to every registered background run, its process group
    and every descendant of it in groups of their own (meson test starts
    each test in a session of its own, which a signal to the group misses);
    how many runs it reached."""
    d = lock_path("minimp-bg")
    reached = 0
    procs = None
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        try:
            with open(os.path.join(d, f)) as fh:
                pgid = int(fh.read())
            if pgid <= 1:  # never our own group (0) or init's
                continue
            os.killpg(pgid, sig)
            reached += 1
        except (OSError, ValueError):
            continue  # the run ended meanwhile, or its file is half written
        procs = processes() if procs is None else procs
        group = {p for p, (_, g) in procs.items() if g == pgid}
        grown = True
        while grown:  # the descendants, level by level
            more = {p for p, (pp, _) in procs.items()
                    if pp in group and p not in group}
            group |= more
            grown = bool(more)
        for p in group:
            if procs[p][1] != pgid and p != os.getpid():
                try:
                    os.kill(p, sig)
                except OSError:
                    pass  # it ended meanwhile
    return reached


# A signal that ends the report while a child is being started waits until
# the child is known (run_child), so that the child is ended with it.
deferred = {"on": False, "signal": None}


def on_signal(signum, frame):
    if deferred["on"]:
        deferred["signal"] = signum
    else:
        raise SystemExit(128 + signum)


class BenchLock:
    """The bench lock as benchlock takes it, without its wait for the load
    average (wait_idle() checks the run queue instead): while it is held,
    no heavy command runs or starts and the background runs are stopped;
    leaving it, however (an exception, SIGINT, SIGTERM, SIGHUP), resumes
    them, and the kernel lets the locks go with the process."""

    def __enter__(self):
        self.saved = {s: signal.signal(s, on_signal) for s in (
            signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        t0 = time.time()
        self.fds = []
        for name in ("minimp-gate.lock", "minimp-bench.lock"):
            fd = os.open(lock_path(name), os.O_RDONLY | os.O_CREAT, 0o666)
            self.fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print("report: waiting for %s: a heavy command or a "
                      "benchmark holds it" % lock_path(name),
                      file=sys.stderr)
                fcntl.flock(fd, fcntl.LOCK_EX)
        self.taken = time.time()
        self.waited = round(self.taken - t0)
        print("report: bench lock taken (waited %d s), %d background "
              "run(s) stopped" % (self.waited, self.pause()),
              file=sys.stderr)
        return self

    def pause(self):
        """Stops the background runs again: one registered between the
        lock and now (bgrun checks the lock first, then registers) would
        otherwise run beside the benchmark."""
        return bg_signal(signal.SIGSTOP)

    def __exit__(self, *exc):
        bg_signal(signal.SIGCONT)
        for fd in self.fds:
            os.close(fd)
        for s, h in self.saved.items():
            signal.signal(s, h)
        print("report: bench lock released after %d s" %
              (time.time() - self.taken), file=sys.stderr)
        return False


def run_child(cmd, **kw):
    """Runs `cmd` to its end: (exit status, its stdout). If this process is
    stopped by a signal meanwhile, asks `cmd` to end too (SIGTERM: the
    scripts take their emulated cluster down) and waits a minute for it."""
    deferred["on"] = True
    try:
        p = subprocess.Popen(cmd, **kw)
    finally:
        deferred["on"] = False
    try:
        if deferred["signal"] is not None:
            raise SystemExit(128 + deferred["signal"])
        out, _ = p.communicate()
    except BaseException:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        raise
    return p.returncode, out


def lock_cmd(args):
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        die(2, "lock: no command")
    with BenchLock():
        rc, _ = run_child(cmd)
    sys.exit(rc if rc >= 0 else 128 - rc)


# ---- The run -------------------------------------------------------------

def section(name, build, out_dir, quick, lock):
    """One benchmark, the bench lock held: OUT_DIR/NAME.json."""
    b = BENCHES[name]
    quick = 1 if quick else 0
    lock.pause()
    before, queue, waited = wait_idle(name)
    out = os.path.join(out_dir, name)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, OUT=out, **b["env"])
    if quick:
        env.update(b.get("quick_env", {}))
    rounds = b["rounds"][quick]
    cmd = [c.format(build=build, rounds=rounds) for c in b["cmd"]]
    print("report: %s: %s (load average %s, %d other process(es) "
          "runnable; idle after %d s)" %
          (name, " ".join(cmd), " ".join("%.2f" % x for x in before),
           queue, waited), file=sys.stderr)
    t0 = time.time()
    rc, stdout = run_child(cmd, cwd=SRC, env=env, stdout=subprocess.PIPE,
                           text=True)
    t1 = time.time()
    after = loadavg()
    sys.stdout.write(stdout)
    print("report: %s: %d s" % (name, round(t1 - t0)), file=sys.stderr)
    rows = read_csv(os.path.join(out, b["csv"]))
    res = {"what": b["what"], "command": cmd,
           "env": {k: env[k] for k in list(b["env"]) +
                   list(b.get("quick_env", {}) if quick else [])},
           "rounds": rounds, "exit": rc,
           "started": datetime.datetime.utcfromtimestamp(t0).strftime(
               "%Y-%m-%dT%H:%M:%SZ"),
           "seconds": round(t1 - t0), "waited": round(waited),
           "load_before": before, "runnable_before": queue,
           "load_after": after, "rows": rows}
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(res, f)
    if rc != 0:
        die(1, "%s: %s exited with %d (rows missing: see above)" %
            (name, cmd[1], rc))
    return res


def minutes(sec):
    return "%d min %02d s" % (sec // 60, sec % 60)


def run(args):
    start = time.time()
    names = args.only.split(",") if args.only else list(BENCHES)
    for n in names:
        if n not in BENCHES:
            die(2, "no benchmark %s (there are: %s)" % (n, " ".join(BENCHES)))
    check_anchors(names)
    build = os.path.abspath(args.build)
    if not os.access(os.path.join(build, "tests/bench/minimp-bench"),
                     os.X_OK):
        die(2, "no release build in %s: make build first" % build)
    commit = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no") != ""
    date = datetime.datetime.utcnow()
    out = os.path.join(SRC, "results", "report")
    os.makedirs(out, exist_ok=True)
    result = {"commit": commit + ("+" if dirty else ""),
              "date": date.strftime("%Y-%m-%d"),
              "quick": bool(args.quick), "machine": machine(),
              "benches": {}}
    for cmd in {tuple(BENCHES[n]["prepare"]) for n in names
                if "prepare" in BENCHES[n]}:
        env = dict(os.environ, **{k: v for n in names
                                  for k, v in BENCHES[n]["env"].items()})
        p = subprocess.run([c.format(build=build) for c in cmd], cwd=SRC,
                           env=env)
        if p.returncode != 0:
            die(p.returncode, "%s failed; nothing measured" % " ".join(cmd))
    # One lock for the whole run: between benchmarks a heavy command would
    # get in and keep the next one waiting for as long as it runs.
    with BenchLock() as lock:
        for n in names:
            try:
                result["benches"][n] = section(n, build, out, args.quick,
                                               lock)
            except SystemExit as e:
                die(e.code or 1, "stopped at %s; nothing written to docs/"
                    % n)
    result["seconds"] = round(time.time() - start)
    result["lock_waited"] = lock.waited
    print("report: %s in all, %d s of it waiting for the bench lock; %s" % (
        minutes(result["seconds"]), lock.waited, ", ".join(
            "%s %d s (waited %d s)" % (n, b["seconds"], b["waited"])
            for n, b in result["benches"].items())), file=sys.stderr)
    os.makedirs(os.path.join(SRC, HISTORY), exist_ok=True)
    path = os.path.join(HISTORY, "%s-%s%s.json" % (
        result["date"], commit, "-quick" if args.quick else ""))
    with open(os.path.join(SRC, path), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print("report: rows saved in %s" % path, file=sys.stderr)
    for doc in DEFAULT_DOCS:
        render_file(os.path.join(SRC, doc), result, path)
        print("report: %s rewritten" % doc, file=sys.stderr)


# ---- The tables ----------------------------------------------------------

def size_name(n):
    n = int(n)
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return "%d %s" % (n // k, unit)
    return "%d B" % n


def fmt_us(us):
    """A time: in µs below 1 ms, in ms above; three figures or more."""
    if us is None:
        return ""
    if us >= 1000:
        ms = us / 1000
        return ("%.0f ms" if ms >= 100 else "%.1f ms" if ms >= 10
                else "%.2f ms") % ms
    return ("%.0f µs" if us >= 100 else "%.1f µs" if us >= 10
            else "%.2f µs") % us


def fmt_bw(mbps):
    if mbps is None:
        return ""
    return "%.2f GB/s" % (mbps / 1000) if mbps >= 1000 else "%.1f MB/s" % mbps


def ratio(a, b):
    return "" if a is None or b is None or b == 0 else "%.2f" % (a / b)


def med(rows, col, **match):
    sel = [float(r[col]) for r in rows
           if all(r.get(k) == str(v) for k, v in match.items())]
    return statistics.median(sel) if sel else None


def table(head, body):
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return lines


def sizes_of(rows, **match):
    return sorted({int(r["size"]) for r in rows
                   if all(r.get(k) == str(v) for k, v in match.items())})


def t_pingpong(b):
    rows = b["rows"]
    body = []
    for s in sizes_of(rows):
        ol = med(rows, "half_rtt_us", impl="openmpi", size=s)
        ml = med(rows, "half_rtt_us", impl="minimp_default", size=s)
        ob = med(rows, "stream_MBps", impl="openmpi", size=s)
        mb = med(rows, "stream_MBps", impl="minimp_default", size=s)
        body.append([size_name(s), fmt_us(ol), fmt_us(ml), ratio(ml, ol),
                     fmt_bw(ob), fmt_bw(mb), ratio(mb, ob)])
    return table(["size", "Open MPI half round trip",
                  "libminimp half round trip", "ratio", "Open MPI streaming",
                  "libminimp streaming", "ratio"], body)


def t_onehost_pp(b):
    rows = [r for r in b["rows"] if r["bench"] == "pingpong"]
    impls = ["openmpi_default", "minimp_shm_on", "minimp_shm_ring",
             "minimp_shm_off"]
    body = []
    for s in sizes_of(rows):
        lat = [med(rows, "value1", impl=i, size=s) for i in impls]
        bw = [med(rows, "value2", impl=i, size=s) for i in impls]
        body.append([size_name(s)] + [fmt_us(x) for x in lat] +
                    [ratio(lat[1], lat[0])] +
                    [fmt_bw(bw[0]), fmt_bw(bw[1]), ratio(bw[1], bw[0])])
    return table(["size", "Open MPI (defaults)", "libminimp (shared memory)",
                  "libminimp (rings only)", "libminimp (TCP loopback)",
                  "shared memory ÷ Open MPI", "Open MPI streaming",
                  "libminimp streaming (shared memory)", "ratio"], body)


def t_onehost_bcast(b):
    rows = [r for r in b["rows"] if r["bench"] == "bcast"]
    body = []
    for s in sizes_of(rows):
        o = med(rows, "value1", impl="openmpi_default", size=s)
        on = med(rows, "value1", impl="minimp_shm_on", size=s)
        off = med(rows, "value1", impl="minimp_shm_off", size=s)
        body.append([size_name(s), fmt_us(o), fmt_us(on), fmt_us(off),
                     ratio(on, o)])
    return table(["size", "Open MPI (defaults)", "libminimp (shared memory)",
                  "libminimp (TCP loopback)", "shared memory ÷ Open MPI"],
                 body)


def auto_and_best(rows, **match):
    """AUTO's median and pick, and the fastest algorithm's (name, median)."""
    mine = [r for r in rows if r["impl"] == "minimp" and
            all(r.get(k) == str(v) for k, v in match.items())]
    auto = med(mine, "avg_us", alg="auto")
    picks = sorted({r["chosen"] for r in mine
                    if r["alg"] == "auto" and r["chosen"] not in ("", "-")})
    best = None
    for alg in sorted({r["alg"] for r in mine} - {"auto"}):
        m = med(mine, "avg_us", alg=alg)
        if best is None or m < best[1]:
            best = (alg, m)
    return auto, ", ".join(picks), best


def t_bcast16(b):
    rows = b["rows"]
    body = []
    for s in sizes_of(rows):
        auto, pick, best = auto_and_best(rows, size=s)
        an = {a: med(rows, "avg_us", impl=a, size=s)
              for a in ("openmpi", "mpich", "gloo")}
        body.append([size_name(s),
                     fmt_us(auto) + (" (%s)" % pick if pick else ""),
                     "%s (%s)" % (fmt_us(best[1]), best[0]) if best else "",
                     fmt_us(an["openmpi"]), fmt_us(an["mpich"]),
                     fmt_us(an["gloo"]), ratio(auto, an["openmpi"])])
    return table(["size", "libminimp AUTO (its pick)", "best libminimp",
                  "Open MPI", "MPICH", "Gloo", "AUTO ÷ Open MPI"], body)


def t_coll16(b):
    rows = b["rows"]
    body = []
    for coll in ("allreduce", "reduce", "alltoall", "gather"):
        for s in sizes_of(rows, coll=coll):
            auto, pick, best = auto_and_best(rows, coll=coll, size=s)
            o = med(rows, "avg_us", impl="openmpi", coll=coll, size=s)
            gloo = None
            for g in sorted({r["alg"] for r in rows if r["impl"] == "gloo"}):
                m = med(rows, "avg_us", impl="gloo", coll=coll, size=s,
                        alg=g)
                if m is not None and (gloo is None or m < gloo[1]):
                    gloo = (g, m)
            body.append([coll, size_name(s),
                         fmt_us(auto) + (" (%s)" % pick if pick else ""),
                         "%s (%s)" % (fmt_us(best[1]), best[0])
                         if best else "",
                         fmt_us(o),
                         "%s (%s)" % (fmt_us(gloo[1]), gloo[0])
                         if gloo else "",
                         ratio(auto, o)])
    return table(["collective", "size", "libminimp AUTO (its pick)",
                  "best libminimp", "Open MPI", "best Gloo",
                  "AUTO ÷ Open MPI"], body)


def t_hosts(coll):
    """The 4 x 4 table of `coll`; rows of a CSV from before the allreduce
    was measured there have no `coll` and are the broadcast's. None where
    the result has no row of `coll`: its region is left as it is."""
    def t(b):
        rows = [dict(r, coll=r.get("coll", "bcast")) for r in b["rows"]]
        if not sizes_of(rows, coll=coll):
            return None
        body = []
        for s in sizes_of(rows, coll=coll):
            auto, pick, best = auto_and_best(rows, coll=coll, size=s)
            o = med(rows, "avg_us", impl="openmpi", coll=coll, size=s)
            body.append([size_name(s),
                         fmt_us(auto) + (" (%s)" % pick if pick else ""),
                         "%s (%s)" % (fmt_us(best[1]), best[0])
                         if best else "", fmt_us(o), ratio(auto, o)])
        return table(["size", "libminimp AUTO (its picks)", "best libminimp",
                      "Open MPI", "AUTO ÷ Open MPI"], body)
    return t


def t_osu1(b):
    rows = b["rows"]
    body = []
    for shm, path, o in (("on", "shared memory", "default"),
                         ("off", "TCP loopback", "tcp")):
        pp = med(rows, "value", row="minimp-bench_pingpong_shm=" + shm)
        osu = med(rows, "value", row="osu_latency_libminimp-mpi_shm=" + shm)
        om = med(rows, "value", row="osu_latency_openmpi_" + o)
        added = None if pp is None or osu is None else osu - pp
        body.append([path, fmt_us(pp), fmt_us(osu),
                     "" if added is None else "%+.2f µs" % added,
                     fmt_us(om), ratio(osu, om)])
    return table(["path", "minimp-bench pingpong", "osu_latency, libminimp-mpi",
                  "added by the MPI layer", "osu_latency, Open MPI",
                  "ratio"], body)


def t_osu16(b):
    rows = b["rows"]
    benches = ("osu_bcast", "osu_allreduce")
    body = []
    for s in sizes_of(rows):
        line = [size_name(s)]
        for bench in benches:
            m = med(rows, "value", impl="minimp", bench=bench, size=s)
            o = med(rows, "value", impl="openmpi", bench=bench, size=s)
            line += [fmt_us(m), fmt_us(o), ratio(m, o)]
        body.append(line)
    head = ["size"]
    for bench in benches:
        head += ["%s, libminimp-mpi" % bench, "%s, Open MPI" % bench,
                 "ratio"]
    return table(head, body)
def fmt_s(rows, case):
    """A start-up case's median and range in seconds, or ""."""
    sel = sorted(float(r["seconds"]) for r in rows if r["case"] == case)
    if not sel:
        return ""
    return "%.2f s (%.2f–%.2f)" % (statistics.median(sel), sel[0], sel[-1])


STARTUP_PATHS = [
    ("over ssh, a hostfile: `minimprun --hostfile H` / "
     "`mpirun --hostfile H -np 64`", "mmp_ssh", "ompi_ssh"),
    ("in an allocation: `salloc -N 8 --ntasks-per-node=8 minimprun` / "
     "`... mpirun`", "mmp_salloc", "ompi_salloc"),
    ("`srun --mpi=pmix -N 8 --ntasks-per-node=8` alone", "mmp_srun_pmix",
     "ompi_srun_pmix"),
    ("`srun --mpi=pmi2 -N 8 --ntasks-per-node=8` alone", "mmp_srun_pmi2",
     None),
]
SLURM_ALONE = [
    ("`--mpi=none /bin/true`", "true_srun_none"),
    ("`--mpi=pmi2 /bin/true`", "true_srun_pmi2"),
    ("`--mpi=pmix /bin/true`", "true_srun_pmix"),
    ("`--mpi=pmix` of a program that calls `PMIx_Init` and "
     "`PMIx_Finalize` alone (`tests/bench/pmix_hello.c`)", "pmix_srun_init"),
]


def t_startup(b):
    rows = b["rows"]
    lines = table(["64 ranks, 8 hosts × 8", "libminimp", "Open MPI 4.1"],
                  [[what, fmt_s(rows, m), fmt_s(rows, o) if o else ""]
                   for what, m, o in STARTUP_PATHS])
    lines += ["", "What Slurm costs before any library of ranks runs, in "
              "the same rounds:", ""]
    lines += table(["64 tasks, 8 hosts × 8, "
                    "`srun -N 8 --ntasks-per-node=8`", "time"],
                   [[what, fmt_s(rows, c)] for what, c in SLURM_ALONE])
    return lines


def t_headline(res):
    """README's table: one figure per benchmark the result holds."""
    B = res["benches"]
    body = []
    if "pingpong" in B:
        r = B["pingpong"]["rows"]
        for col, s, what, f in (
                ("half_rtt_us", 8, "8 B half round trip, TCP loopback",
                 fmt_us),
                ("stream_MBps", 4194304, "4 MiB streaming, TCP loopback",
                 fmt_bw)):
            m = med(r, col, impl="minimp_default", size=s)
            o = med(r, col, impl="openmpi", size=s)
            if m is not None:
                body.append([what, f(m), f(o), ratio(m, o)])
    if "onehost" in B:
        r = B["onehost"]["rows"]
        m = med(r, "value1", bench="pingpong", impl="minimp_shm_on", size=8)
        o = med(r, "value1", bench="pingpong", impl="openmpi_default", size=8)
        if m is not None:
            body.append(["8 B half round trip, shared memory", fmt_us(m),
                         fmt_us(o), ratio(m, o)])
    if "bcast16" in B:
        r = B["bcast16"]["rows"]
        for s in sizes_of(r):
            auto, _, _ = auto_and_best(r, size=s)
            o = med(r, "avg_us", impl="openmpi", size=s)
            body.append(["broadcast %s, 16 hosts (AUTO)" % size_name(s),
                         fmt_us(auto), fmt_us(o), ratio(auto, o)])
    if "coll16" in B:
        r = B["coll16"]["rows"]
        for s in sizes_of(r, coll="allreduce"):
            auto, _, _ = auto_and_best(r, coll="allreduce", size=s)
            o = med(r, "avg_us", impl="openmpi", coll="allreduce", size=s)
            body.append(["allreduce %s, 16 hosts (AUTO)" % size_name(s),
                         fmt_us(auto), fmt_us(o), ratio(auto, o)])
    return table(["", "libminimp", "Open MPI 4.1", "ratio"], body)


def load_text(b):
    """The load average before and after, and the run queue before: the
    average still counts the previous benchmark's ranks a minute after
    they end, the run queue says whether anything else ran."""
    q = b.get("runnable_before")
    return "%s before%s, %s after" % (
        " ".join("%.2f" % x for x in b["load_before"]),
        "" if q is None else " (nothing else runnable)" if q == 0 else
        " (%d other process%s runnable)" % (q, "" if q == 1 else "es"),
        " ".join("%.2f" % x for x in b["load_after"]))


def provenance(res, names, path):
    """The line above a table: when, what, how idle the machine was."""
    benches = [res["benches"][n] for n in names]
    def nr(b):
        return "%d round%s" % (b["rounds"], "" if b["rounds"] == 1 else "s")
    rounds = ", ".join(nr(b) if len(names) == 1 else "%s %s" % (n, nr(b))
                       for n, b in zip(names, benches))
    loads = "; ".join(load_text(b) if len(names) == 1 else
                      "%s %s" % (n, load_text(b))
                      for n, b in zip(names, benches))
    return ("Measured %s at `%s`%s, %s, medians; load average (1, 5, "
            "15 min) %s. Rows: `%s`." % (
                res["date"], res["commit"],
                " (`make report QUICK=1`)" if res["quick"] else
                " (`make report`)", rounds, loads, path))


# The benchmarks README's headline table takes a figure from (t_headline).
HEADLINE = ("pingpong", "onehost", "bcast16", "coll16")

# Region name: (benchmarks it needs, the function making its lines).
TABLES = {
    "pingpong": (["pingpong"], t_pingpong),
    "onehost-pingpong": (["onehost"], t_onehost_pp),
    "onehost-bcast": (["onehost"], t_onehost_bcast),
    "bcast16": (["bcast16"], t_bcast16),
    "coll16": (["coll16"], t_coll16),
    "hosts-bcast": (["hosts_ranks"], t_hosts("bcast")),
    "hosts-allreduce": (["hosts_ranks"], t_hosts("allreduce")),
    "osu1": (["osu1"], t_osu1),
    "osu16": (["osu16"], t_osu16),
    "startup": (["startup"], t_startup),
    "headline": (None, None),
    "machine": (None, None),
}


def region_lines(name, res, path):
    if name == "machine":
        # A result of the start-up alone (--only startup) leaves it, as
        # it leaves README's headline: its table has its own line.
        if not any(n != "startup" for n in res["benches"]):
            return None
        m = res["machine"]
        return ["The machine: %d CPUs (%s), %d GiB, Linux %s. Commit `%s`, "
                "%s." % (m["cpus"], m["cpu"] or "unknown model",
                         m["memory_gib"], m["kernel"], res["commit"],
                         res["date"])]
    if name == "headline":
        names = [n for n in HEADLINE if n in res["benches"]]
        if not names:
            return None
        return [provenance(res, names, path), ""] + t_headline(res)
    needs, fn = TABLES[name]
    if not all(n in res["benches"] for n in needs):
        return None
    lines = fn(res["benches"][needs[0]])
    return None if lines is None else [provenance(res, needs, path), ""] + lines


BEGIN = re.compile(r"^<!-- report:([a-z0-9-]+) begin\b.*-->$")
END = "<!-- report:%s end -->"


def render(text, res, path):
    """The text with every region that `res` has figures for rewritten."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        name = m.group(1)
        if name not in TABLES:
            raise ValueError("unknown generated region %s" % name)
        j = i
        while j < len(lines) and lines[j] != END % name:
            j += 1
        if j == len(lines):
            raise ValueError("region %s has no end line" % name)
        new = region_lines(name, res, path)
        out += lines[i:j] if new is None else new
        i = j
    return "\n".join(out)


def render_file(doc, res, path):
    with open(doc) as f:
        text = f.read()
    new = render(text, res, path)
    if new != text:
        with open(doc, "w") as f:
            f.write(new)


def main():
    ap = argparse.ArgumentParser(prog="report.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--build", default="build")
    r.add_argument("--quick", action="store_true")
    r.add_argument("--only", default="")
    k = sub.add_parser("lock")
    k.add_argument("command", nargs=argparse.REMAINDER)
    g = sub.add_parser("render")
    g.add_argument("result")
    g.add_argument("--doc", action="append")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args)
    elif args.cmd == "lock":
        lock_cmd(args)
    else:
        with open(args.result) as f:
            res = json.load(f)
        rel = os.path.relpath(os.path.abspath(args.result), SRC)
        for doc in args.doc or [os.path.join(SRC, d) for d in DEFAULT_DOCS]:
            try:
                render_file(doc, res, rel)
            except ValueError as e:
                die(1, "%s: %s" % (doc, e))


if __name__ == "__main__":
    main()
