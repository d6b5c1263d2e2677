# SPDX-License-Identifier: MIT
"""The one plotting path of libminimp's benchmarks, on matplotlib (Debian's
python3-matplotlib; `make plots` installs it). The plot_*.py scripts read
their CSV and hand this module {series: {x: [values]}} per panel.

Rules every figure follows, so that a reader can tell the lines apart and
trust the axes:
- every series has its own colour, line style and marker, the same in
  every panel of a figure; the anchors (Open MPI, MPICH, Gloo) are dashed
  and thick, AUTO is thick;
- a point is the median of its repeats, with an error bar from the
  lowest to the highest (no bar where there was one run);
- log axes span the data with a small margin, not whole decades;
- every figure is written as SVG and as PNG, side by side.
"""
import csv
import statistics
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    # The same data gives the same SVG bytes, so that docs/img diffs mean
    # something.
    matplotlib.rcParams["svg.hashsalt"] = "libminimp"
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
except ImportError:
    sys.exit("matplotlib is missing: install Debian's python3-matplotlib "
             "(make plots does, as root) and run the script with the "
             "system's /usr/bin/python3")

ANCHORS = ("openmpi", "mpich", "gloo")
# The anchors keep their colours in every figure, none of them in tab20.
ANCHOR_COLOURS = {"openmpi": "#000000", "mpich": "#8c6d31", "gloo": "#393b79"}
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = "os^vDP<>hX*dp8"


def read_rows(paths):
    """Every row of the CSV files, as dicts; '#' lines (minimp-bench's
    provenance line) are skipped."""
    rows = []
    for path in paths:
        with open(path) as f:
            rows += list(csv.DictReader(l for l in f if not l.startswith("#")))
    return rows


def collect(rows, key, x, y):
    """{key(r): {x(r): [y(r), ...]}} over rows, skipping rows where key
    gives None."""
    out = {}
    for r in rows:
        k = key(r)
        if k is not None:
            out.setdefault(k, {}).setdefault(x(r), []).append(y(r))
    return out


def _colours(n):
    """n distinct colours: tab20's dark shades, then its light ones, then
    evenly spaced hues beyond 20."""
    tab = plt.get_cmap("tab20").colors
    base = [tab[i] for i in range(0, 20, 2)] + [tab[i] for i in range(1, 20, 2)]
    if n <= len(base):
        return base[:n]
    hsv = plt.get_cmap("hsv")
    return base + [hsv(k / (n - len(base) + 1)) for k in range(n - len(base))]


def order(names):
    """auto first, then the libminimp algorithms by name, anchors last."""
    return sorted(names, key=lambda n: (n in ANCHORS, n != "auto", n))


def styles(names):
    """{name: matplotlib keyword arguments}, distinct per series."""
    names = order(names)
    cols = _colours(len([n for n in names if n not in ANCHORS]))
    st = {}
    for i, n in enumerate(names):
        anchor = n in ANCHORS
        st[n] = dict(color=ANCHOR_COLOURS[n] if anchor else cols[i],
                     linestyle="--" if anchor else LINESTYLES[i % 4],
                     marker=MARKERS[i % len(MARKERS)], markersize=5,
                     linewidth=2.6 if anchor or n == "auto" else 1.4,
                     label=n + (" (anchor)" if anchor else ""))
    return st


def _fit_log(ax_set, lo, hi):
    """A log axis from a little below lo to a little above hi."""
    if lo > 0 and hi > 0:
        pad = (hi / lo) ** 0.04 if hi > lo else 1.5
        ax_set(lo / pad, hi * pad)


def _plain(v, _pos=None):
    return ("%.0f" if v >= 10 else "%g") % v


def panel(ax, data, st, title="", xlabel="", ylabel="", logx=True, logy=True,
          xticks=None):
    """Draws one panel: data is {series: {x: [values]}}; st from styles().
    xticks: [(x, label)] to use on the x axis."""
    ys_all, xs_all = [], []
    for name in order(data):
        pts = sorted(data[name].items())
        xs = [x for x, _ in pts]
        med = [statistics.median(v) for _, v in pts]
        lo = [min(v) for _, v in pts]
        hi = [max(v) for _, v in pts]
        bars = any(len(v) > 1 for _, v in pts)
        err = [[m - l for m, l in zip(med, lo)],
               [h - m for m, h in zip(med, hi)]] if bars else None
        ax.errorbar(xs, med, yerr=err, capsize=3 if bars else 0,
                    elinewidth=1, **st[name])
        xs_all += xs
        ys_all += lo + hi
    if logx:
        ax.set_xscale("log", base=2 if xticks is None else 10)
        _fit_log(ax.set_xlim, min(xs_all), max(xs_all))
    if logy:
        ax.set_yscale("log")
        _fit_log(ax.set_ylim, min(ys_all), max(ys_all))
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))
        ax.yaxis.set_minor_locator(LogLocator(subs=(2, 3, 5)))
        ax.yaxis.set_minor_formatter(FuncFormatter(_plain))
    if xticks is not None:
        ax.set_xticks([x for x, _ in xticks])
        ax.set_xticklabels([l for _, l in xticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
    elif logx:
        # Ticks at the measured sizes, when there are few.
        xs = sorted(set(xs_all))
        if len(xs) <= 12:
            ax.set_xticks(xs)
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: size_label(v)))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", color="#cccccc", linewidth=0.6)
    ax.grid(True, which="minor", color="#eeeeee", linewidth=0.4)


def size_label(v):
    """1024 -> "1 KiB"; other numbers as they are."""
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if v >= unit and abs(v / unit - round(v / unit)) < 1e-9:
            return "%d %s" % (round(v / unit), name)
    return "%g" % v


def figure(panels, title, ncols=None):
    """A figure of `panels` panels in one row (or ncols columns), room on
    the right for one legend. Returns (fig, [axes])."""
    ncols = ncols or panels
    nrows = (panels + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.6 * ncols + 2.4,
                                                    4.4 * nrows + 0.6),
                             squeeze=False)
    fig.suptitle(title, fontsize=12)
    flat = [a for row in axes for a in row]
    for a in flat[panels:]:
        a.set_visible(False)
    return fig, flat[:panels]


def save(fig, st, path, note=""):
    """Adds the legend (every series of st) and writes path's stem as .svg
    and .png. note: a line under the figure (e.g. what the bars are)."""
    handles = [plt.Line2D([], [], **{k: v for k, v in s.items()})
               for _, s in sorted(st.items(), key=lambda kv: order(st).index(kv[0]))]
    fig.legend(handles=handles, loc="center right", fontsize=8,
               frameon=False)
    if note:
        fig.text(0.01, 0.01, note, fontsize=8, color="#444444")
    fig.tight_layout(rect=(0, 0.03 if note else 0, 0.84, 0.95))
    stem = path[:-4] if path.endswith((".svg", ".png")) else path
    fig.savefig(stem + ".svg", metadata={"Date": None})
    fig.savefig(stem + ".png", dpi=90, metadata={"Software": None})
    plt.close(fig)
    return stem
