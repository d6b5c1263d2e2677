#!/usr/bin/env python3
"""Plots run_cluster_bcast.sh's CSV (median over rounds of the per-node
average) as time against size, one line per libminimp algorithm and per
anchor, log-log, to an SVG with no dependencies.
usage: plot_bcast_csv.py BCAST.CSV OUT.SVG [TITLE]"""
import csv, math, statistics, sys

rows = list(csv.DictReader(open(sys.argv[1])))
title = sys.argv[3] if len(sys.argv) > 3 else "broadcast: per-node time against size"
series = {}
for r in rows:
    name = r["impl"] if r["impl"] != "minimp" else r["alg"]
    series.setdefault(name, {}).setdefault(int(r["size"]), []).append(float(r["avg_us"]))
pts = {n: sorted((s, statistics.median(v)) for s, v in d.items()) for n, d in series.items()}
xs = [s for d in pts.values() for s, _ in d]
ys = [t for d in pts.values() for _, t in d]
lx0, lx1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
W, H, L, R, T, B = 900, 560, 80, 200, 50, 60
def px(x): return L + (math.log10(x) - lx0) / (lx1 - lx0) * (W - L - R)
def py(y): return H - B - (math.log10(y) - ly0) / (ly1 - ly0) * (H - T - B)
colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
          "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aa6600",
          "#0044aa", "#66aa00"]
out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
       'font-family="sans-serif" font-size="12">' % (W, H),
       '<rect width="100%" height="100%" fill="white"/>',
       '<text x="%d" y="25" font-size="15">%s</text>' % (L, title)]
for e in range(lx0, lx1 + 1):
    out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (px(10**e), T, px(10**e), H - B))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">1e%d</text>' % (px(10**e), H - B + 18, e))
for e in range(ly0, ly1 + 1):
    out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, py(10**e), W - R, py(10**e)))
    out.append('<text x="%d" y="%.1f" text-anchor="end">1e%d</text>' % (L - 6, py(10**e) + 4, e))
out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (L, T, W - L - R, H - T - B))
out.append('<text x="%d" y="%d" text-anchor="middle">message size (bytes)</text>' % ((L + W - R) // 2, H - 20))
out.append('<text x="18" y="%d" transform="rotate(-90 18 %d)" text-anchor="middle">per-node time, average over ranks (us)</text>' % ((T + H - B) // 2, (T + H - B) // 2))
anchors = ("openmpi", "mpich", "gloo")
names = sorted(pts, key=lambda n: (n in anchors, n))
for i, n in enumerate(names):
    c = colors[i % len(colors)]
    dash = ' stroke-dasharray="6,4"' if n in anchors else ""
    out.append('<polyline fill="none" stroke="%s" stroke-width="%s"%s points="%s"/>' % (
        c, "2.5" if n in ("auto",) + anchors else "1.5", dash,
        " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts[n])))
    for x, y in pts[n]:
        out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), c))
    ly = T + 10 + 18 * i
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>' % (W - R + 15, ly, W - R + 40, ly, c, dash))
    out.append('<text x="%d" y="%d">%s</text>' % (W - R + 46, ly + 4, n + (" (anchor)" if n in anchors else "")))
out.append("</svg>")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
