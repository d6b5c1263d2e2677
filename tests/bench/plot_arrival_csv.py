#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots run_arrival_sweep.sh's merged CSV the way Patarasuk and Yuan
(docs/references.md) draw their Figures 7-10: the per-node broadcast time
(average over ranks) against MAX_IF and against the message size, one
line per libminimp algorithm and one dashed line per anchor library
measured in the same run.
usage: plot_arrival_csv.py SWEEP.CSV PREFIX
writes PREFIX-maxif.{svg,png} (linear axes) and PREFIX-size.{svg,png}
(log-log), through tests/bench/mmplot.py.

The CSV holds both sweeps, told apart by their shape: the MAX_IF sweep is
the size with the most MAX_IF values, the size sweep the MAX_IF (in
multiples of T(m)) found at the most sizes. T(m) = m * 8 / 100 Mbit/s,
the nominal link time the sweep scaled MAX_IF with. Repeated rows of a
point give its median and a bar from the lowest to the highest."""
import sys

import mmplot

RATE = 100e6  # bit/s: the links run_arrival_sweep.sh brings up
YLABEL = "per-node time, average over ranks (ms)"
NOTE = "median of the repeats; bars: lowest to highest"


def t_us(size):
    return size * 8 / RATE * 1e6


def one(rows, x, path, title, xlabel, logx, logy):
    d = mmplot.collect(rows, lambda r: r["alg"], x, lambda r: r["avg_us"] / 1e3)
    st = mmplot.styles(d)
    fig, (ax,) = mmplot.figure(1, title)
    mmplot.panel(ax, d, st, "", xlabel, YLABEL, logx=logx, logy=logy)
    mmplot.save(fig, st, path, NOTE)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_arrival_csv.py SWEEP.CSV PREFIX")
    rows = mmplot.read_rows([sys.argv[1]])
    if not rows:
        sys.exit("plot_arrival_csv.py: %s has no rows" % sys.argv[1])
    for r in rows:
        r["size"], r["avg_us"] = int(r["size"]), float(r["avg_us"])
        r["k"] = round(float(r["maxif_us"]) / t_us(r["size"]), 2)
    what = "broadcast, p = %s, %s" % (rows[0]["p"], rows[0]["pattern"])
    prefix = sys.argv[2]

    ks = {}
    for r in rows:
        ks.setdefault(r["size"], set()).add(r["k"])
    m = max(ks, key=lambda s: (len(ks[s]), s))
    one([r for r in rows if r["size"] == m], lambda r: r["k"],
        prefix + "-maxif.svg",
        "%s, %s: per-node time against MAX_IF" % (what, mmplot.size_label(m)),
        "MAX_IF (multiples of T = %.1f ms, the %s link time)"
        % (t_us(m) / 1e3, mmplot.size_label(m)), False, False)

    sizes = {}
    for r in rows:
        sizes.setdefault(r["k"], set()).add(r["size"])
    k = max(sizes, key=lambda k: (len(sizes[k]), k))
    one([r for r in rows if r["k"] == k], lambda r: r["size"],
        prefix + "-size.svg",
        "%s, MAX_IF = %g T(m): per-node time against size" % (what, k),
        "message size", True, True)


if __name__ == "__main__":
    main()
