#!/usr/bin/env python3
"""Plots run_arrival_sweep.sh's merged CSV the way seed 000 draws Figures
7-10: the per-node broadcast time (average over ranks) against MAX_IF and
against the message size, one line per libminimp algorithm and one dashed
line per anchor library measured in the same run.
usage: plot_arrival_csv.py SWEEP.CSV PREFIX
writes PREFIX-maxif.svg (linear axes) and PREFIX-size.svg (log-log).

The CSV holds both sweeps, told apart by their shape: the MAX_IF sweep is
the size with the most MAX_IF values, the size sweep the MAX_IF (in
multiples of T(m)) found at the most sizes. T(m) = m * 8 / 100 Mbit/s,
the nominal link time the sweep scaled MAX_IF with. Standard library
only; the drawing is plot_bcast_csv.chart."""
import csv, math, statistics, sys

from plot_bcast_csv import chart

RATE = 100e6  # bit/s: the links run_arrival_sweep.sh brings up
YLABEL = "per-node time, average over ranks (ms)"


def t_us(size):
    return size * 8 / RATE * 1e6


def nice_size(size):
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit and size % unit == 0:
            return "%d %s" % (size // unit, name)
    return "%d B" % size


def series(rows, x):
    """{alg: [(x, median avg ms)]}: anchors' alg is the library's name."""
    d = {}
    for r in rows:
        d.setdefault(r["alg"], {}).setdefault(x(r), []).append(r["avg_us"] / 1e3)
    return {n: sorted((k, statistics.median(v)) for k, v in p.items())
            for n, p in d.items()}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_arrival_csv.py SWEEP.CSV PREFIX")
    rows = list(csv.DictReader(open(sys.argv[1])))
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
    chart(series([r for r in rows if r["size"] == m], lambda r: r["k"]),
          prefix + "-maxif.svg",
          "%s, %s: per-node time against MAX_IF" % (what, nice_size(m)),
          "MAX_IF (multiples of T = %.1f ms, the %s link time)" % (t_us(m) / 1e3, nice_size(m)), YLABEL,
          logx=False, logy=False)

    sizes = {}
    for r in rows:
        sizes.setdefault(r["k"], set()).add(r["size"])
    k = max(sizes, key=lambda k: (len(sizes[k]), k))
    sel = [r for r in rows if r["k"] == k]
    ys = [r["avg_us"] / 1e3 for r in sel]
    decades = range(math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys))) + 1)
    chart(series(sel, lambda r: r["size"]), prefix + "-size.svg",
          "%s, MAX_IF = %g T(m): per-node time against size" % (what, k),
          "message size", YLABEL,
          xticks=[(s, nice_size(s)) for s in sorted(sizes[k])],
          yticks=[(10.0**e, "%g" % 10.0**e) for e in decades])


if __name__ == "__main__":
    main()
