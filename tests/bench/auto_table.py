#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""AUTO against the best fixed algorithm, per cell, from run_auto_patterns.sh.

Reads the CSV (pattern,load,p,impl,alg,size,maxif_us,avg_us,max_us; several
runs of a cell are reduced to their median) and prints one Markdown table:
AUTO's average per-node time, the best fixed libminimp algorithm's, their
ratio (the target is at most 1.15), and Open MPI's and Gloo's.
Usage: auto_table.py auto.csv
"""
import csv
import statistics
import sys
from collections import defaultdict


def main():
    cells = defaultdict(lambda: defaultdict(list))
    for r in csv.DictReader(open(sys.argv[1])):
        key = (r["pattern"], r["load"], int(r["p"]), int(r["size"]))
        name = r["alg"] if r["impl"] == "libminimp" else r["impl"]
        cells[key][name].append(float(r["avg_us"]))
    order = {"balanced": 0, "rootearly": 1, "late20": 2, "all": 3}
    print("| pattern | load | p | size | AUTO | best fixed | AUTO / best | "
          "Open MPI | Gloo |")
    print("|---|---|---|---|---|---|---|---|---|")
    misses = 0
    for key in sorted(cells, key=lambda k: (order.get(k[0], 9), k[1], k[2],
                                            k[3])):
        c = {n: statistics.median(v) for n, v in cells[key].items()}
        fixed = {n: v for n, v in c.items()
                 if n not in ("auto", "openmpi", "gloo")}
        if "auto" not in c or not fixed:
            continue
        best = min(fixed, key=fixed.get)
        ratio = c["auto"] / fixed[best]
        misses += ratio > 1.15
        ms = lambda v: "%.1f ms" % (v / 1e3) if v is not None else "—"
        print("| %s | %s | %d | %s | %s | %s (%s) | %.2f%s | %s | %s |" % (
            key[0], key[1], key[2], size_name(key[3]), ms(c["auto"]),
            ms(fixed[best]), best, ratio, " **miss**" if ratio > 1.15 else "",
            ms(c.get("openmpi")), ms(c.get("gloo"))))
    print("\ncells over 1.15: %d" % misses)


def size_name(n):
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10)


if __name__ == "__main__":
    main()
