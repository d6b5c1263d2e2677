#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Broadcast on H emulated hosts of R ranks each (4 x 4 by default), beside
# Open MPI with its defaults (shared memory within a host, TCP between,
# which is what its users get), in one run: ROUNDS alternating rounds,
# each Open MPI's bcast_ompi at every size, then minimp-bench's barrier
# method (the anchors' metric: per-node time after a barrier, averaged
# over ranks) for AUTO, the node broadcast and the flat shapes, in an
# order shuffled afresh each round. Ranks are placed by slot (R to a
# host, consecutive ranks together) unless MAP=node (round robin).
# Prints medians over the rounds; the raw rows go to $OUT/hosts_ranks.csv.
#   tests/bench/run_hosts_ranks.sh BUILD_DIR [H] [R] [SIZES] [ITERS] [ROUNDS]
# Needs root and the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh).
# NETCLUSTER_PREFIX (and _SWITCH) keep this cluster apart from another one
# on the same machine (tests/netcluster).
set -eu
b=${1:-build}
nh=${2:-4}
per=${3:-4}
sizes=${4:-"1024 65536 1048576"}
iters=${5:-20}
rounds=${6:-5}
algs=${ALGS:-auto,node,pipeline,binomial,hierarchical,scatter_ring}
map=${MAP:-slot}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi
pfx=${NETCLUSTER_PREFIX:-h}
out=${OUT:-results/hosts_ranks}
mkdir -p "$out"
csv="$out/hosts_ranks.csv"
np=$((nh * per))
trap '"$here/../netcluster" down >/dev/null 2>&1 || true' EXIT
"$here/../netcluster" up "$nh" 100mbit >/dev/null
hosts=$(i=0; while [ $i -lt "$nh" ]; do printf '%s%d:%d,' "$pfx" $i "$per"; i=$((i + 1)); done)
hosts=${hosts%,}
hf=$(mktemp)
i=0; while [ $i -lt "$nh" ]; do echo "$pfx$i slots=$per" >> "$hf"; i=$((i + 1)); done
commas=$(echo "$sizes" | tr ' ' ',')
ompi_map=; minimp_map=
[ "$map" = node ] && ompi_map="--map-by node" && minimp_map="--map-by node"
echo "impl,alg,chosen,round,size,avg_us,max_us" > "$csv"
r=1
while [ "$r" -le "$rounds" ]; do
  echo "round $r of $rounds" >&2
  for s in $sizes; do
    timeout 600 ip netns exec "${pfx}0" unshare --uts sh -c "hostname ${pfx}0; \
      mpirun.openmpi --allow-run-as-root -np $np --hostfile $hf $ompi_map \
      --mca plm_rsh_agent $anchors/nsrsh --mca btl_tcp_if_include eth0 \
      --mca oob_tcp_if_include eth0 --mca mpi_yield_when_idle 1 \
      $abin/bcast_ompi $s $iters" 2>/dev/null | tail -1 |
      anchors_check "openmpi, $s B, round $r" | awk -v r="$r" 'NF == 3 {print "openmpi,-,-," r "," $1 "," $2 "," $3}' >> "$csv"
  done
  ip netns exec "${pfx}0" "$b/launcher/minimprun" --agent "ip netns exec" \
    --host "$hosts" $minimp_map --iface eth0 --timeout 1200 \
    "$b/tests/bench/minimp-bench" bcast --algs "$algs" --sizes "$commas" \
    --iters "$iters" --method barrier --shuffle "$r" 2>/dev/null |
    awk -v r="$r" '$1 == "barrier" {print "minimp," $2 "," $3 "," r "," $5 "," $6 "," $7}' >> "$csv"
  r=$((r + 1))
done
rm -f "$hf"
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["impl"], r["alg"], int(r["size"])) for r in rows},
              key=lambda k: (k[2], k[0] != "minimp", k[0], k[1]))
ompi = {}
for impl, alg, size in keys:
    if impl == "openmpi":
        ompi[size] = statistics.median(float(r["avg_us"]) for r in rows
                                       if r["impl"] == impl and int(r["size"]) == size)
print("%-8s %-13s %-13s %9s %12s %12s %8s %3s" %
      ("impl", "algorithm", "auto picked", "size", "avg_us", "range", "/ompi", "n"))
for impl, alg, size in keys:
    sel = [float(r["avg_us"]) for r in rows
           if (r["impl"], r["alg"], int(r["size"])) == (impl, alg, size)]
    picked = ",".join(sorted({r["chosen"] for r in rows
                              if (r["impl"], r["alg"], int(r["size"])) == (impl, alg, size)
                              and r["chosen"] not in ("-", "")}))
    med = statistics.median(sel)
    print("%-8s %-13s %-13s %9d %12.1f %12s %8s %3d" % (
        impl, alg, picked or "-", size, med,
        "%.0f-%.0f" % (min(sel), max(sel)),
        "%.2f" % (med / ompi[size]) if size in ompi else "-", len(sel)))
PY
anchors_finish
