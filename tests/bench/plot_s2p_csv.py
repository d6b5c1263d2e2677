#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots minimp-bench s2p --csv files, one figure per sweep, one line per
algorithm (the slowest rank's time, max_us):
  PREFIX-s      time against s, one panel per length L per source;
  PREFIX-dist   time by source distribution at one s;
  PREFIX-total  time against s with the total s L fixed.
Each as .svg and .png (tests/bench/mmplot.py); a sweep missing from the
CSV is skipped. Several files or repeated rows of a point give its
median and a bar from the lowest to the highest.
usage: plot_s2p_csv.py S2P.CSV [S2P.CSV ...] PREFIX"""
import sys

import mmplot

YLABEL = "slowest rank's time (µs)"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = mmplot.read_rows(sys.argv[1:-1])
    prefix = sys.argv[-1]
    if not rows:
        sys.exit("plot_s2p_csv.py: no rows")
    p = rows[0]["p"]
    reps = 1
    y = lambda r: float(r["max_us"])
    alg = lambda r: r["alg"]
    s_rows = [r for r in rows if r["sweep"] == "s"]
    if s_rows:
        lens = sorted({int(r["len"]) for r in s_rows})
        panels = [(L, mmplot.collect([r for r in s_rows if int(r["len"]) == L],
                                     alg, lambda r: int(r["s"]), y))
                  for L in lens]
        st = mmplot.styles({n for _, d in panels for n in d})
        fig, axes = mmplot.figure(len(panels), "s-to-p, p = %s, %s "
                                  "distribution: time against the number of "
                                  "sources s" % (p, s_rows[0]["dist"]))
        for ax, (L, d) in zip(axes, panels):
            xs = sorted({x for v in d.values() for x in v})
            mmplot.panel(ax, d, st, "L = %s per source" % mmplot.size_label(L),
                         "sources s", YLABEL,
                         xticks=[(x, str(x)) for x in xs])
            reps = max([reps] + [len(v) for s in d.values() for v in s.values()])
        mmplot.save(fig, st, prefix + "-s.svg", note(reps))
    d_rows = [r for r in rows if r["sweep"] == "dist"]
    if d_rows:
        names = []
        for r in d_rows:
            if r["dist"] not in names:
                names.append(r["dist"])
        d = mmplot.collect(d_rows, alg, lambda r: names.index(r["dist"]) + 1, y)
        st = mmplot.styles(d)
        fig, (ax,) = mmplot.figure(1, "s-to-p, p = %s, s = %s, L = %s: by "
                                   "source distribution"
                                   % (p, d_rows[0]["s"],
                                      mmplot.size_label(int(d_rows[0]["len"]))))
        mmplot.panel(ax, d, st, "", "source distribution", YLABEL, logx=False,
                     xticks=[(i + 1, n) for i, n in enumerate(names)])
        mmplot.save(fig, st, prefix + "-dist.svg", note(reps))
    t_rows = [r for r in rows if r["sweep"] == "total"]
    if t_rows:
        d = mmplot.collect(t_rows, alg, lambda r: int(r["s"]), y)
        xs = sorted({x for v in d.values() for x in v})
        st = mmplot.styles(d)
        fig, (ax,) = mmplot.figure(1, "s-to-p, p = %s: total %s fixed (L = "
                                   "total / s)" % (p, mmplot.size_label(
                                       int(t_rows[0]["total"]))))
        mmplot.panel(ax, d, st, "", "sources s", YLABEL,
                     xticks=[(x, str(x)) for x in xs])
        mmplot.save(fig, st, prefix + "-total.svg", note(reps))


def note(reps):
    return ("median of %d repeats; bars: lowest to highest" % reps
            if reps > 1 else "one run per point (no bars)")


if __name__ == "__main__":
    main()
