#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Broadcast time against message size, one line per libminimp algorithm
and per anchor library, from either kind of CSV:
- run_cluster_bcast.sh's and run_hosts_ranks.sh's merged file (columns
  impl,alg,...,size,avg_us): the per-node time averaged over ranks;
- minimp-bench bcast --csv files (columns method,alg,...): one panel per
  method, max OL_i for ol and the per-node average for barrier.
Several files or repeated rows of a point give its median and a bar from
the lowest to the highest.
usage: plot_bcast_csv.py CSV [CSV ...] OUT.svg [TITLE]
writes OUT.svg and OUT.png (tests/bench/mmplot.py)."""
import sys

import mmplot


def main():
    csvs = [a for a in sys.argv[1:] if a.endswith(".csv")]
    rest = [a for a in sys.argv[1:] if not a.endswith(".csv")]
    if not csvs or not rest or len(rest) > 2:
        sys.exit(__doc__)
    rows = mmplot.read_rows(csvs)
    if not rows:
        sys.exit("plot_bcast_csv.py: %s: no rows" % ", ".join(csvs))
    title = rest[1] if len(rest) > 1 else "broadcast: time against size"
    x = lambda r: int(r["size"])
    if "impl" in rows[0]:
        panels = [("", "per-node time, average over ranks (µs)",
                   mmplot.collect(rows, lambda r: r["alg"] if r["impl"] == "minimp"
                                  else r["impl"], x, lambda r: float(r["avg_us"])))]
    else:
        panels = []
        for method, col, label in (("ol", "max_us", "max OL_i: latency to the "
                                    "slowest rank (µs)"),
                                   ("barrier", "avg_us", "per-node time after a "
                                    "barrier, average (µs)")):
            d = mmplot.collect(rows, lambda r: r["alg"] if r["method"] == method
                               else None, x, lambda r: float(r[col]))
            if d:
                panels.append(("--method " + method, label, d))
    reps = max(len(v) for _, _, d in panels for s in d.values() for v in s.values())
    st = mmplot.styles({n for _, _, d in panels for n in d})
    fig, axes = mmplot.figure(len(panels), title)
    for ax, (name, label, d) in zip(axes, panels):
        mmplot.panel(ax, d, st, name, "message size", label)
    mmplot.save(fig, st, rest[0],
                "median of %d repeats; bars: lowest to highest" % reps
                if reps > 1 else "one run")


if __name__ == "__main__":
    main()
