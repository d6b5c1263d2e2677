#!/usr/bin/env python3
"""Plots run_cluster_bcast.sh's CSV (median over rounds of the per-node
average) as time against size, one line per libminimp algorithm and per
anchor, log-log, to an SVG with no dependencies.
usage: plot_bcast_csv.py BCAST.CSV OUT.SVG [TITLE]

chart() is the drawing, shared with plot_arrival_csv.py: import it rather
than drawing again."""
import csv, math, statistics, sys

ANCHORS = ("openmpi", "mpich", "gloo")
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
          "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aa6600",
          "#0044aa", "#66aa00"]


def _scale(vals, log, ticks):
    """(value -> 0..1, [(value, label)]). Log axes span whole decades unless
    ticks are given; linear ones start at 0 and step by 1, 2 or 5 x 10^k."""
    if ticks:
        vals = vals + [v for v, _ in ticks]
    if log:
        lo, hi = math.log10(min(vals)), math.log10(max(vals))
        if ticks:
            pad = (hi - lo) * 0.05 or 0.5
            lo, hi = lo - pad, hi + pad
        else:
            lo, hi = math.floor(lo), math.ceil(hi)
            hi = hi if hi > lo else lo + 1
            ticks = [(10**e, "1e%d" % e) for e in range(lo, hi + 1)]
        return (lambda v: (math.log10(v) - lo) / (hi - lo)), ticks
    lo, top = min(0, min(vals)), max(vals)
    raw = (top - lo) / 8 or 1
    step = min(m * 10**math.floor(math.log10(raw)) for m in (1, 2, 5, 10)
               if m * 10**math.floor(math.log10(raw)) >= raw)
    hi = math.ceil(top / step) * step if top > lo else lo + step
    if not ticks:
        ticks = [(lo + k * step, "%g" % (lo + k * step))
                 for k in range(int(round((hi - lo) / step)) + 1)]
    return (lambda v: (v - lo) / (hi - lo)), ticks


def chart(pts, path, title, xlabel, ylabel, logx=True, logy=True,
          xticks=None, yticks=None):
    """Writes one line per series to the SVG `path`. pts: {name: [(x, y)]}
    sorted by x. Anchors (ANCHORS) are dashed and listed last; "auto" and
    the anchors are drawn thicker. xticks, yticks: [(value, label)] to use
    instead of the default ones."""
    xs = [x for d in pts.values() for x, _ in d]
    ys = [y for d in pts.values() for _, y in d]
    fx, xticks = _scale(xs, logx, xticks)
    fy, yticks = _scale(ys, logy, yticks)
    W, H, L, R, T, B = 900, 560, 80, 200, 50, 60
    def px(x): return L + fx(x) * (W - L - R)
    def py(y): return H - B - fy(y) * (H - T - B)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="25" font-size="15">%s</text>' % (L, title)]
    for v, lab in xticks:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (px(v), T, px(v), H - B))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (px(v), H - B + 18, lab))
    for v, lab in yticks:
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, py(v), W - R, py(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, py(v) + 4, lab))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (L, T, W - L - R, H - T - B))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((L + W - R) // 2, H - 20, xlabel))
    out.append('<text x="18" y="%d" transform="rotate(-90 18 %d)" text-anchor="middle">%s</text>' % ((T + H - B) // 2, (T + H - B) // 2, ylabel))
    names = sorted(pts, key=lambda n: (n in ANCHORS, n))
    for i, n in enumerate(names):
        c = COLORS[i % len(COLORS)]
        dash = ' stroke-dasharray="6,4"' if n in ANCHORS else ""
        out.append('<polyline fill="none" stroke="%s" stroke-width="%s"%s points="%s"/>' % (
            c, "2.5" if n in ("auto",) + ANCHORS else "1.5", dash,
            " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts[n])))
        for x, y in pts[n]:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), c))
        ly = T + 10 + 18 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>' % (W - R + 15, ly, W - R + 40, ly, c, dash))
        out.append('<text x="%d" y="%d">%s</text>' % (W - R + 46, ly + 4, n + (" (anchor)" if n in ANCHORS else "")))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    title = sys.argv[3] if len(sys.argv) > 3 else "broadcast: per-node time against size"
    series = {}
    for r in rows:
        name = r["impl"] if r["impl"] != "minimp" else r["alg"]
        series.setdefault(name, {}).setdefault(int(r["size"]), []).append(float(r["avg_us"]))
    pts = {n: sorted((s, statistics.median(v)) for s, v in d.items()) for n, d in series.items()}
    chart(pts, sys.argv[2], title, "message size (bytes)",
          "per-node time, average over ranks (us)")


if __name__ == "__main__":
    main()
