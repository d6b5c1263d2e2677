#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots the scaling part of tests/bench/run_cluster_mcast.sh's CSV: time
against p for the multicast broadcast and the pipelined chain, one panel
per size, the per-node average and the last rank's time of each, with
the link time T(m) = m * 8 / 95 Mbit/s as a flat line (the issue's
target is 1.05 T(m) at every p). Written as PREFIX.svg and .png
(tests/bench/mmplot.py).
usage: plot_mcast_csv.py MCAST.CSV [MCAST.CSV ...] PREFIX"""
import sys

import mmplot

LINK_BPS = 95e6  # 100 Mbit/s less the frames' headers (performance.md)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [r for r in mmplot.read_rows(sys.argv[1:-1])
            if r["part"] == "scaling"]
    if not rows:
        sys.exit("plot_mcast_csv.py: no scaling rows")
    sizes = sorted({int(r["size"]) for r in rows})
    panels = []
    reps = 1
    for m in sizes:
        sel = [r for r in rows if int(r["size"]) == m]
        d = mmplot.collect(sel, lambda r: r["alg"] + ", average",
                           lambda r: int(r["p"]),
                           lambda r: float(r["avg_us"]) / 1000)
        d.update(mmplot.collect(sel, lambda r: r["alg"] + ", last rank",
                                lambda r: int(r["p"]),
                                lambda r: float(r["max_us"]) / 1000))
        ps = sorted({int(r["p"]) for r in sel})
        d["link time T(m)"] = {p: [m * 8 / LINK_BPS * 1000] for p in ps}
        reps = max([reps] + [len(v) for s in d.values() for v in s.values()])
        panels.append((m, d, ps))
    st = mmplot.styles({n for _, d, _ in panels for n in d})
    fig, axes = mmplot.figure(len(panels), "Broadcast on p emulated hosts "
                              "at 100 Mbit/s: multicast against the "
                              "pipelined chain")
    for ax, (m, d, ps) in zip(axes, panels):
        mmplot.panel(ax, d, st, mmplot.size_label(m), "hosts p", "time (ms)",
                     logy=False, xticks=[(p, str(p)) for p in ps])
        ax.set_ylim(bottom=0)
    mmplot.save(fig, st, sys.argv[-1] + ".svg",
                "median of %d rounds; bars: lowest to highest" % reps
                if reps > 1 else "one round per point (no bars)")


if __name__ == "__main__":
    main()
