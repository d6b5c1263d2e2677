#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make demo's verdict on AUTO (tests/bench/demo_auto.py) from saved rows,
without running a broadcast: a miss that is noise between AUTO's row and
the row of the algorithm it ran shows that row at 1.00 x the best, and a
re-measure within the bound counts as a hit at that size; a miss where
AUTO ran a slower algorithm stays a miss after the re-measure; the
re-measure runs AUTO, what it ran and the best rows at 64 KiB and 1 MiB.

  check_demo_auto.py SRC
"""
import os
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
TOOL = os.path.join(SRC, "tests", "bench", "demo_auto.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def write(d, prefix, rounds, rows):
    """rows: (alg, chosen, size, [max_us per round])."""
    for r in range(rounds):
        with open(os.path.join(d, "%s-%d.csv" % (prefix, r + 1)), "w") as f:
            f.write("# minimp-bench test\n"
                    "method,alg,chosen,p,size,avg_us,max_us\n")
            for alg, chosen, size, us in rows:
                f.write("ol,%s,%s,8,%d,%.1f,%.1f\n" %
                        (alg, chosen, size, us[r] / 2, us[r]))


def tool(*args):
    p = subprocess.run([sys.executable, TOOL] + list(args),
                       capture_output=True, text=True)
    check(p.returncode == 0, "demo_auto.py %s: %s" % (args[0], p.stderr))
    return p.stdout


def rows(auto_ran, auto64, check64):
    """A table: AUTO ran `auto_ran` everywhere; at 64 KiB AUTO's rounds
    are `auto64`; the re-measure's AUTO at 64 KiB is `check64`."""
    own = {"shm": 100, "knomial": 300}[auto_ran]
    table = []
    for size, k in ((1024, 0.5), (65536, 1), (1048576, 4)):
        a = auto64 if size == 65536 else [own * k] * 3
        table += [("auto", auto_ran, size, a),
                  ("shm", "", size, [100 * k, 90 * k, 110 * k]),
                  ("knomial", "", size, [300 * k] * 3),
                  ("chain", "", size, [900 * k] * 3)]
    again = [r for r in table if r[0] != "chain" and r[2] != 1024]
    again = [(a, c, s, check64 if (a, s) == ("auto", 65536) else u)
             for a, c, s, u in again]
    return table, again


with tempfile.TemporaryDirectory() as d:
    # Noise: AUTO ran shm, its 64 KiB rounds slower than shm's own row.
    table, again = rows("shm", [190, 200, 210], [105, 95, 100])
    write(d, "bcast", 3, table)
    out = tool("table", d, "3")
    check("64 KiB auto ran shm in 3 of 3 rounds: 200 us; best shm 100 us; "
          "2.00 x the best: NOT within 1.15 x (a miss)" in out,
          "the table's 64 KiB miss is not said:\n" + out)
    check("the row of shm itself: 100 us, 1.00 x the best; auto ÷ shm "
          "round by round: 1.91 x (median)" in out,
          "the row of what AUTO ran is not beside the miss:\n" + out)
    check("at 2 of 3 sizes." in out, "the table's count is wrong:\n" + out)
    with open(os.path.join(d, "check.args")) as f:
        args = f.read().split()
    check(args == ["--algs", "auto,knomial,shm", "--sizes", "65536,1048576",
                   "--iters", "50"],
          "the re-measure's options are wrong: %s" % args)
    write(d, "check", 2, again)
    out = tool("check", d, "2", "3")
    check("at 3 of 3 sizes: 1 KiB within (the table), 64 KiB within "
          "(re-measured), 1 MiB within (re-measured)." in out,
          "a re-measure within the bound is not counted:\n" + out)

with tempfile.TemporaryDirectory() as d:
    # A real miss: AUTO ran knomial, three times slower than shm.
    table, again = rows("knomial", [300] * 3, [300] * 3)
    write(d, "bcast", 3, table)
    out = tool("table", d, "3")
    check("the row of knomial itself: 300 us, 3.00 x the best" in out,
          "a slower algorithm's row is not shown as such:\n" + out)
    write(d, "check", 2, again)
    out = tool("check", d, "2", "3")
    check("at 0 of 3 sizes: 1 KiB a miss (the table), 64 KiB a miss "
          "(re-measured), 1 MiB a miss (re-measured)." in out,
          "a real miss was not kept after the re-measure:\n" + out)

for f in failures:
    print("FAIL: " + f)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
