#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Broadcast and allreduce on H emulated hosts of R ranks each (4 x 4 by
# default), beside Open MPI with its defaults (shared memory within a
# host, TCP between, which is what its users get), in one run: ROUNDS
# alternating rounds, each
#  - the broadcast: Open MPI's bcast_ompi at every size, then
#    minimp-bench's barrier method (the anchors' metric: per-node time
#    after a barrier, averaged over ranks) for AUTO, the node broadcast
#    and the flat shapes (ALGS), in an order shuffled afresh each round;
#  - the allreduce (floats, sum) at AR_SIZES (8 B, 64 KiB and 1 MiB by
#    default; empty: no allreduce): Open MPI's MPI_Allreduce (coll_ompi)
#    at every size, then AUTO and the rows AUTO can pick on a job of
#    several hosts (AR_ALGS), measured the same way, in an order shuffled
#    afresh each round.
# Ranks are placed by slot (R to a host, consecutive ranks together)
# unless MAP=node (round robin). Prints medians over the rounds; the raw
# rows go to $OUT/hosts_ranks.csv, a column `coll` saying which collective.
#   tests/bench/run_hosts_ranks.sh BUILD_DIR [H] [R] [SIZES] [ITERS] [ROUNDS]
# ITERS is the calls per size and row of both collectives (AR_ITERS: the
# allreduce's alone). Needs root and the anchors (MINIMP_ANCHORS:
# tests/bench/anchors.sh; coll_ompi: tests/bench/build_coll_anchors.sh).
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
ar_sizes=${AR_SIZES-"8 65536 1048576"}
ar_iters=${AR_ITERS:-$iters}
# AUTO's candidates for an allreduce across hosts (collectives/allreduce/
# table.c): the rows it prices, and the hierarchical one its rule for
# ranks that share CPUs picks; shm serves one host only.
ar_algs=${AR_ALGS:-auto,recursive_doubling,ring,ring_segmented,rabenseifner,reduce_bcast,hierarchical}
map=${MAP:-slot}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi
[ -z "$ar_sizes" ] || anchors_bin coll_ompi
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
ar_commas=$(echo "$ar_sizes" | tr ' ' ',')
ompi_map=; minimp_map=
[ "$map" = node ] && ompi_map="--map-by node" && minimp_map="--map-by node"
# Open MPI on the cluster: mpirun from host 0 with its defaults.
ompi_run() {
  timeout 600 ip netns exec "${pfx}0" unshare --uts sh -c "hostname ${pfx}0; \
    mpirun.openmpi --allow-run-as-root -np $np --hostfile $hf $ompi_map \
    --mca plm_rsh_agent $anchors/nsrsh --mca btl_tcp_if_include eth0 \
    --mca oob_tcp_if_include eth0 --mca mpi_yield_when_idle 1 $*" \
    2>/dev/null | tail -1
}
minimp_run() {
  ip netns exec "${pfx}0" "$b/launcher/minimprun" --agent "ip netns exec" \
    --host "$hosts" $minimp_map --iface eth0 --timeout 1200 \
    "$b/tests/bench/minimp-bench" "$@" 2>/dev/null
}
# The comma list $1 in an order drawn from the seed $2.
shuffled() {
  python3 -c 'import random, sys
a = sys.argv[1].split(","); random.Random(int(sys.argv[2])).shuffle(a)
print(",".join(a))' "$1" "$2"
}
echo "coll,impl,alg,chosen,round,size,avg_us,max_us" > "$csv"
r=1
while [ "$r" -le "$rounds" ]; do
  echo "round $r of $rounds" >&2
  for s in $sizes; do
    ompi_run "$abin/bcast_ompi $s $iters" |
      anchors_check "openmpi, $s B, round $r" | awk -v r="$r" 'NF == 3 {print "bcast,openmpi,-,-," r "," $1 "," $2 "," $3}' >> "$csv"
  done
  minimp_run bcast --algs "$algs" --sizes "$commas" \
    --iters "$iters" --method barrier --shuffle "$r" |
    awk -v r="$r" '$1 == "barrier" {print "bcast,minimp," $2 "," $3 "," r "," $5 "," $6 "," $7}' >> "$csv"
  for s in $ar_sizes; do
    ompi_run "$abin/coll_ompi allreduce $s $ar_iters" |
      anchors_check "openmpi allreduce, $s B, round $r" | awk -v r="$r" 'NF == 4 {print "allreduce,openmpi,-,-," r "," $2 "," $3 "," $4}' >> "$csv"
  done
  if [ -n "$ar_sizes" ]; then
    minimp_run allreduce --algs "$(shuffled "$ar_algs" "$r")" \
      --sizes "$ar_commas" --iters "$ar_iters" </dev/null |
      awk -F, -v r="$r" '$1 == "coll" {print "allreduce,minimp," $3 "," $4 "," r "," $6 "," $7 "," $8}' >> "$csv"
  fi
  r=$((r + 1))
done
rm -f "$hf"
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def key(r):
    return (r["coll"], r["impl"], r["alg"], int(r["size"]))
keys = sorted({key(r) for r in rows},
              key=lambda k: (k[0] != "bcast", k[0], k[3], k[1] != "minimp",
                             k[1], k[2]))
ompi = {}
for coll, impl, alg, size in keys:
    if impl == "openmpi":
        ompi[coll, size] = statistics.median(
            float(r["avg_us"]) for r in rows if key(r) == (coll, impl, alg, size))
print("%-9s %-8s %-18s %-18s %9s %12s %12s %8s %3s" %
      ("coll", "impl", "algorithm", "auto picked", "size", "avg_us", "range",
       "/ompi", "n"))
for k in keys:
    coll, impl, alg, size = k
    sel = [float(r["avg_us"]) for r in rows if key(r) == k]
    picked = ",".join(sorted({r["chosen"] for r in rows if key(r) == k
                              and r["chosen"] not in ("-", "")}))
    med = statistics.median(sel)
    o = ompi.get((coll, size))
    print("%-9s %-8s %-18s %-18s %9d %12.1f %12s %8s %3d" % (
        coll, impl, alg, picked or "-", size, med,
        "%.0f-%.0f" % (min(sel), max(sel)),
        "%.2f" % (med / o) if o else "-", len(sel)))
PY
anchors_finish
