#!/bin/sh
# Broadcast on the emulated cluster beside the anchors (Open MPI, MPICH,
# Gloo), in one run: N hosts with RATE links (tests/netcluster), REPEATS
# alternating rounds, each round the anchors' broadcasts (anchors_bcast)
# and then minimp-bench's barrier method (the anchors' metric: per-node
# time after a barrier, averaged over ranks) for every algorithm ($ALGS
# chooses: "auto,pipeline,two_tree", say) and AUTO, in an order shuffled
# afresh each round (--shuffle), after 3 warm-up broadcasts each. Prints
# medians over the rounds; writes the raw rows to $OUT/bcast.csv.
#   tests/bench/run_cluster_bcast.sh BUILD_DIR [N] [SIZES] [ITERS] [REPEATS] [RATE]
# Needs root and the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh;
# ANCHOR_LIBS chooses among them). NETCLUSTER_PREFIX (and _SWITCH,
# _SUBNET) keep this cluster apart from another one on the same machine
# (tests/netcluster).
set -eu
b=${1:-build}
n=${2:-16}
sizes=${3:-"1024 65536 1048576"}
iters=${4:-10}
reps=${5:-3}
rate=${6:-100mbit}
algs=${ALGS:-all}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi bcast_mpich bcast_gloo
out=${OUT:-results/cluster_bcast}
mkdir -p "$out"
csv="$out/bcast.csv"
"$here/../netcluster" up "$n" "$rate" >/dev/null
trap '"$here/../netcluster" down >/dev/null 2>&1 || true' EXIT
hosts=$(anchors_hosts "$n")
commas=$(echo "$sizes" | tr ' ' ',')
echo "impl,alg,chosen,rep,size,avg_us,max_us" > "$csv"
i=1
while [ "$i" -le "$reps" ]; do
  echo "round $i of $reps" >&2
  anchors_bcast "$n" "$sizes" "$iters" 2>/dev/null |
    anchors_check "broadcast, round $i" $(($(anchors_libs) * $(anchors_count $sizes))) |
    awk -v r="$i" '$2 == "p='"$n"'" && NF == 7 {print $1 ",-,-," r "," $5 "," $6 "," $7}' >> "$csv"
  ip netns exec "${anchors_pfx}0" "$b/launcher/minimprun" --agent "ip netns exec" \
    --host "$hosts" --iface eth0 --timeout 1200 "$b/tests/bench/minimp-bench" bcast \
    --algs "$algs" --sizes "$commas" --iters "$iters" --method barrier \
    --shuffle "$i" 2>/dev/null |
    awk -v r="$i" '$1 == "barrier" {print "minimp," $2 "," $3 "," r "," $5 "," $6 "," $7}' >> "$csv"
  i=$((i + 1))
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["impl"], r["alg"], int(r["size"])) for r in rows},
              key=lambda k: (k[2], k[0] != "minimp", k[0], k[1]))
print("%-8s %-13s %-13s %9s %12s %12s %3s" %
      ("impl", "algorithm", "auto picked", "size", "avg_us", "max_us", "n"))
for impl, alg, size in keys:
    sel = [r for r in rows if (r["impl"], r["alg"], int(r["size"])) == (impl, alg, size)]
    picked = ",".join(sorted({r["chosen"] for r in sel if r["chosen"] not in ("-", "")}))
    print("%-8s %-13s %-13s %9d %12.1f %12.1f %3d" % (
        impl, alg, picked or "-", size,
        statistics.median(float(r["avg_us"]) for r in sel),
        statistics.median(float(r["max_us"]) for r in sel), len(sel)))
# AUTO's row against the row of the algorithm it ran most: their ranges
# over the rounds (per-node average) overlap or not, as make demo says.
print()
for size in sorted({int(r["size"]) for r in rows}):
    def vals(alg):
        return [float(r["avg_us"]) for r in rows if r["impl"] == "minimp"
                and r["alg"] == alg and int(r["size"]) == size]
    ran = [r["chosen"] for r in rows if r["impl"] == "minimp"
           and r["alg"] == "auto" and int(r["size"]) == size]
    if not ran or not vals(max(set(ran), key=ran.count)):
        continue
    top = max(set(ran), key=ran.count)
    a, b = vals("auto"), vals(top)
    same = min(a) <= max(b) and min(b) <= max(a)
    print("auto at %d B ran %s in %d of %d rounds: %.1f [%.1f-%.1f] against "
          "%.1f [%.1f-%.1f] us, %s" % (
              size, top, ran.count(top), len(ran), statistics.median(a),
              min(a), max(a), statistics.median(b), min(b), max(b),
              "overlap" if same else "do NOT overlap"))
PY
anchors_finish
