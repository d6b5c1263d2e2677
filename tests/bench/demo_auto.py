#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make demo's broadcast table and its verdict on AUTO (tests/demo.sh).

  demo_auto.py table OUT ROUNDS
      The table of every algorithm from OUT/bcast-1.csv ... bcast-ROUNDS.csv
      (minimp-bench bcast --method ol --csv): per size the median of the
      rounds [lowest-highest]; then AUTO's median against the best row's.
      Writes OUT/check.args: the minimp-bench options of the re-measure
      (AUTO, the algorithm it ran and the best rows, at CHECK_SIZES).
  demo_auto.py check OUT ROUNDS TABLE_ROUNDS
      The verdict again from the re-measure, OUT/check-1.csv ...; the
      verdict counted per size: the re-measure's, or the table's where
      the re-measure did not run.

Rows of one algorithm differ by noise, most where a broadcast takes tens
of microseconds and a row few calls: AUTO's row and the row of the
algorithm AUTO ran are two such rows. So beside AUTO ÷ the best row, each
verdict gives the row of what AUTO ran ÷ the best row, and AUTO ÷ that
row paired round by round (both in the same run): a miss that is noise
between two rows of one algorithm shows as such, and stays a miss. The
re-measure runs only those rows, with more calls each, alternating in
shuffled rounds, at the sizes where the table has fewest calls per row;
where it ran, its verdict is the one counted. A miss is said plainly; it
does not fail the demo.
"""
import csv
import statistics
import sys

BOUND = 1.15
SIZES = ((1024, "1 KiB"), (65536, "64 KiB"), (1048576, "1 MiB"))
# The sizes re-measured: minimp-bench's ol method times 20 calls per row
# at 64 KiB and 5 at 1 MiB against 100 at 1 KiB (default_iters).
CHECK_SIZES = (65536, 1048576)
CHECK_ITERS = 50


def load(out, prefix, rounds):
    """Rows of every round, each with its round number."""
    rows = []
    for r in range(1, rounds + 1):
        # The first line of each file is a '#' comment: version, commit, host.
        with open("%s/%s-%d.csv" % (out, prefix, r)) as f:
            for row in csv.DictReader(l for l in f if l[0] != "#"):
                row["round"] = r
                rows.append(row)
    return rows


def values(rows, alg, size):
    return [float(x["max_us"]) for x in rows
            if x["alg"] == alg and int(x["size"]) == size]


def med(rows, alg, size):
    v = values(rows, alg, size)
    return statistics.median(v) if v else None


def paired(rows, a, b, size):
    """The median over rounds of a's row ÷ b's row of the same round."""
    by = {}
    for x in rows:
        if int(x["size"]) == size and x["alg"] in (a, b):
            by.setdefault(x["round"], {})[x["alg"]] = float(x["max_us"])
    q = [v[a] / v[b] for v in by.values() if a in v and b in v and v[b] > 0]
    return statistics.median(q) if q else None


def ranked(rows, size):
    """(median, algorithm) of every row but AUTO's, fastest first."""
    algs = sorted({x["alg"] for x in rows} - {"auto"})
    return sorted((m, a) for a in algs
                  for m in [med(rows, a, size)] if m is not None)


def verdict(rows, size, label, say=print):
    """Prints AUTO's verdict at `size` through `say`: None if there is
    none, else (within the bound, what AUTO ran, the ranked rows)."""
    ran = [x["chosen"] for x in rows
           if x["alg"] == "auto" and int(x["size"]) == size]
    others = ranked(rows, size)
    auto = med(rows, "auto", size)
    if not ran or not others or auto is None:
        return None
    top = max(set(ran), key=ran.count)
    best, best_alg = others[0]
    ratio = auto / best if best > 0 else float("inf")
    ok = ratio <= BOUND
    say("  %-6s auto ran %s in %d of %d rounds: %.0f us; best %s %.0f us; "
          "%.2f x the best: %s" %
          (label, top, ran.count(top), len(ran), auto, best_alg, best, ratio,
           "within %.2f x" % BOUND if ok else
           "NOT within %.2f x (a miss)" % BOUND))
    own = med(rows, top, size)
    if own is not None and best > 0:
        pr = paired(rows, "auto", top, size)
        say("         the row of %s itself: %.0f us, %.2f x the best; auto "
              "÷ %s round by round: %s" %
              (top, own, own / best, top,
               "%.2f x (median)" % pr if pr is not None else "-"))
    return ok, top, others


def table(out, rounds):
    rows = load(out, "bcast", rounds)
    algs, seen = [], set()
    for row in rows:
        if row["alg"] not in seen:
            seen.add(row["alg"])
            algs.append(row["alg"])
    algs.sort(key=lambda a: (a != "auto", a))

    def cell(alg, size):
        v = values(rows, alg, size)
        if not v:
            return "-"
        return "%.0f [%.0f-%.0f]" % (statistics.median(v), min(v), max(v))
    print("%-14s %22s %22s %22s" % ("algorithm", "1 KiB", "64 KiB", "1 MiB"))
    for a in algs:
        print("%-14s %22s %22s %22s" % (a, cell(a, 1024), cell(a, 65536),
                                        cell(a, 1048576)))
    print()
    print("AUTO against the best algorithm of this run (median of the "
          "rounds):")
    check, sizes = {"auto"}, []
    hits = total = 0
    for size, label in SIZES:
        v = verdict(rows, size, label)
        if v is None:
            continue
        ok, top, others = v
        total += 1
        hits += ok
        if size in CHECK_SIZES:
            # What AUTO ran, the best row, and the best row of another
            # algorithm than AUTO's: the re-measure's verdict can then
            # name a faster algorithm, if there is one.
            sizes.append(str(size))
            rest = [a for _, a in others if a != top]
            check |= {top, others[0][1]} | set(rest[:1])
    print("AUTO was within %.2f x of the best row at %d of %d sizes." %
          (BOUND, hits, total))
    with open("%s/check.args" % out, "w") as f:
        if sizes:
            f.write("--algs %s --sizes %s --iters %d\n" % (
                ",".join(sorted(check)), ",".join(sizes), CHECK_ITERS))


def check(out, rounds, table_rounds):
    """The re-measure's verdicts; the verdict counted at each size is the
    re-measure's where it ran, the table's elsewhere."""
    rows = load(out, "check", rounds)
    first = load(out, "bcast", table_rounds)
    with open("%s/check-1.csv" % out) as f:
        head = f.readline()
    # What ran: the options in the CSV's comment, DEMO_BENCH_ARGS included.
    ran = head.split(" args ", 1)[1].strip() if " args " in head else "?"
    print("AUTO re-measured against the best rows above, %d rounds, order "
          "shuffled each round: minimp-bench %s" % (rounds, ran))
    hits, counted = 0, []
    for size, label in SIZES:
        v = verdict(rows, size, label)
        how = "re-measured"
        if v is None:
            v = verdict(first, size, label, say=lambda *a: None)
            how = "the table"
        if v is not None:
            hits += v[0]
            counted.append("%s %s (%s)" % (
                label, "within" if v[0] else "a miss", how))
    print("AUTO was within %.2f x of the best row at %d of %d sizes: %s." %
          (BOUND, hits, len(counted), ", ".join(counted)))


def main():
    a = sys.argv[1:]
    if a[:1] == ["table"] and len(a) == 3:
        table(a[1], int(a[2]))
    elif a[:1] == ["check"] and len(a) == 4:
        check(a[1], int(a[2]), int(a[3]))
    else:
        sys.exit("usage: demo_auto.py table OUT ROUNDS | "
                 "check OUT ROUNDS TABLE_ROUNDS")


if __name__ == "__main__":
    main()
