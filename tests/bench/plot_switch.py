#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""AUTO following a change of arrival pattern, from minimp-bench's --raw
file of a `--pattern switch` run (balanced for the first half of the
iterations, rootearly for the second; tests/bench/run_auto_switch.sh).

For every algorithm, the per-node time of each iteration (the average of
e_i over the ranks, [Patarasuk & Yuan 2008] section 2.2); several raw files of the same
run shape are reduced to the per-iteration median. Writes one SVG with a
line per algorithm against the iteration number (mmplot.py: SVG and PNG;
with several files, the median and a bar from the lowest to the
highest), and prints per half the
best fixed algorithm, AUTO's median, and how many broadcasts after the
change AUTO first stays within 1.15 x that best (the target is 10).
usage: plot_switch.py OUT.svg RAW.csv [RAW.csv ...]"""
import csv
import statistics
import sys
from collections import defaultdict

import mmplot

SHOWN = ("auto", "pipeline", "binomial", "scatter_ring", "arrival_nb",
         "arrival_b")


def per_iteration(paths):
    """{alg: {iter: [avg e over ranks, one per file]}}, p, size."""
    acc = defaultdict(lambda: defaultdict(list))
    p = size = None
    for path in paths:
        e = defaultdict(list)
        for r in csv.DictReader(l for l in open(path) if l[0] != "#"):
            e[(r["alg"], int(r["iter"]))].append(float(r["e_us"]))
            p, size = int(r["p"]), int(r["size"])
        for (alg, k), v in e.items():
            acc[alg][k].append(sum(v) / len(v))
    return acc, p, size


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    acc, p, size = per_iteration(sys.argv[2:])
    med = {a: {k: statistics.median(v) / 1e3 for k, v in it.items()}
           for a, it in acc.items()}
    iters = max(len(v) for v in med.values())
    half = iters // 2
    for name, lo, hi in (("balanced", 0, half), ("rootearly", half, iters)):
        fixed = {a: statistics.median(v[k] for k in range(lo, hi))
                 for a, v in med.items() if a != "auto"}
        best = min(fixed, key=fixed.get)
        auto = [med["auto"][k] for k in range(lo, hi)]
        # The first broadcast from which AUTO stays within 1.15 x best
        # (a single noisy broadcast above it later counts: strict).
        settle = next((k for k in range(len(auto))
                       if all(a <= 1.15 * fixed[best] for a in auto[k:])),
                      None)
        print("%s (iterations %d-%d): best fixed %s %.3g ms, AUTO median "
              "%.3g ms (%.2f x); AUTO within 1.15 x from broadcast %s of "
              "the half on" % (name, lo, hi - 1, best, fixed[best],
                               statistics.median(auto),
                               statistics.median(auto) / fixed[best],
                               settle + 1 if settle is not None else "never"))
    d = {a: {k: [x / 1e3 for x in v] for k, v in it.items()}
         for a, it in acc.items() if a in SHOWN}
    st = mmplot.styles(d)
    fig, (ax,) = mmplot.figure(1, "AUTO after a change of pattern: balanced, "
                               "then rootearly (p = %d, %d KiB, %d file(s))"
                               % (p, size >> 10, len(sys.argv) - 2))
    mmplot.panel(ax, d, st, "", "broadcast number (the pattern changes at %d)"
                 % half, "per-node time, average over ranks (ms)", logx=False)
    mmplot.save(fig, st, sys.argv[1], "median over the files; bars: lowest "
                "to highest" if len(sys.argv) > 3 else "one run")


if __name__ == "__main__":
    main()
