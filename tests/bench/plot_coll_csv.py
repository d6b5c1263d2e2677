#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Allreduce time against vector size from run_cluster_coll.sh's CSV
(columns impl,coll,alg,chosen,rep,size,avg_us,max_us): one line per
libminimp algorithm, Open MPI's, and one per Gloo algorithm (dashed, as
anchors are), the per-node time averaged over ranks. A point is the
median of its rounds, with a bar from the lowest to the highest.
usage: plot_coll_csv.py CSV [CSV ...] OUT.svg [TITLE]
writes OUT.svg and OUT.png (tests/bench/mmplot.py)."""
import sys

import mmplot


def series(r):
    if r["coll"] != "allreduce":
        return None
    if r["impl"] == "minimp":
        return r["alg"]
    if r["impl"] == "gloo":
        return "gloo " + r["alg"]
    return r["impl"]


def main():
    csvs = [a for a in sys.argv[1:] if a.endswith(".csv")]
    rest = [a for a in sys.argv[1:] if not a.endswith(".csv")]
    if not csvs or not rest or len(rest) > 2:
        sys.exit(__doc__)
    rows = mmplot.read_rows(csvs)
    d = mmplot.collect(rows, series, lambda r: int(r["size"]),
                       lambda r: float(r["avg_us"]) / 1000.0)
    if not d:
        sys.exit("plot_coll_csv.py: %s: no allreduce rows" % ", ".join(csvs))
    title = rest[1] if len(rest) > 1 else "allreduce of floats: time against size"
    st = mmplot.styles(set(d))
    # Gloo's algorithms are anchors too: dashed and thick like the others.
    for n in st:
        if n.startswith("gloo "):
            st[n].update(linestyle="--", linewidth=2.0, label=n + " (anchor)")
    reps = max(len(v) for s in d.values() for v in s.values())
    fig, axes = mmplot.figure(1, title)
    mmplot.panel(axes[0], d, st, "", "vector size",
                 "per-node time after a barrier, average (ms)")
    mmplot.save(fig, st, rest[0],
                "median of %d rounds; bars: lowest to highest" % reps
                if reps > 1 else "one round")


if __name__ == "__main__":
    main()
