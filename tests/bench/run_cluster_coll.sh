#!/bin/sh
# The collectives on the emulated cluster beside their anchors, in one
# run: N hosts with RATE links (tests/netcluster), REPEATS alternating
# rounds, each round Open MPI (MPI_Allreduce, MPI_Reduce, MPI_Alltoall,
# MPI_Gather, forced onto TCP), Gloo's four allreduce algorithms, and
# minimp-bench for every algorithm and AUTO, all with the same metric
# (per-node time after a barrier, averaged over ranks, and the worst
# rank's). The issue's sizes: allreduce 4 B, 4 KiB, 64 KiB, 1 MiB and
# 16 MiB of floats; reduce 1 MiB; alltoall 1 KiB and 64 KiB per pair;
# gather 64 KiB per rank ($COLLS and $AR_SIZES choose). Prints medians over the rounds; the raw rows
# go to $OUT/coll.csv.
#   tests/bench/run_cluster_coll.sh BUILD_DIR [N] [ITERS] [REPEATS] [RATE]
# Needs root and the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh);
# build these first: tests/bench/build_coll_anchors.sh.
# NETCLUSTER_PREFIX (and _SWITCH, _SUBNET) keep this cluster apart from
# another one on the same machine (tests/netcluster).
set -eu
b=${1:-build}
n=${2:-16}
iters=${3:-10}
reps=${4:-3}
rate=${5:-100mbit}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin coll_ompi allreduce_gloo
out=${OUT:-results/cluster_coll}
ar_sizes=${AR_SIZES:-"4 4096 65536 1048576 16777216"}
pfx=${NETCLUSTER_PREFIX:-h}
mkdir -p "$out"
csv="$out/coll.csv"
"$here/../netcluster" up "$n" "$rate" >/dev/null
trap '"$here/../netcluster" down >/dev/null' EXIT
hosts=$(i=0; while [ $i -lt "$n" ]; do printf '%s%d,' "$pfx" $i; i=$((i + 1)); done)
hosts=${hosts%,}
hf=$(mktemp)
i=0; while [ $i -lt "$n" ]; do echo "$pfx$i slots=1" >> "$hf"; i=$((i + 1)); done
ompi="mpirun.openmpi --allow-run-as-root -np $n --hostfile $hf --mca plm_rsh_agent $anchors/nsrsh --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --mca mpi_yield_when_idle 1"
echo "impl,coll,alg,chosen,rep,size,avg_us,max_us" > "$csv"

colls=${COLLS:-"allreduce reduce alltoall gather"}
# "collective sizes": the issue's, for the collectives in $COLLS.
jobs() {
  for c in $colls; do
    case $c in
    allreduce) echo "allreduce $ar_sizes" ;;
    reduce) echo "reduce 1048576" ;;
    alltoall) echo "alltoall 1024 65536" ;;
    gather) echo "gather 65536" ;;
    esac
  done
}

r=1
while [ "$r" -le "$reps" ]; do
  echo "round $r of $reps" >&2
  jobs | while read -r coll sizes; do
    for s in $sizes; do
      o=$(timeout 600 ip netns exec "${pfx}0" unshare --uts sh -c \
        "hostname ${pfx}0; $ompi $abin/coll_ompi $coll $s $iters" </dev/null 2>/dev/null | tail -1)
      echo "$o" | anchors_check "openmpi $coll, $s B, round $r" | awk -v r="$r" 'NF == 4 {print "openmpi," $1 ",-,-," r "," $2 "," $3 "," $4}' >> "$csv"
      if [ "$coll" = allreduce ]; then
        for g in ring ring_chunked halving_doubling bcube; do
          d=$(mktemp -d); f=$(mktemp); i=0
          while [ $i -lt "$n" ]; do
            timeout 600 ip netns exec "$pfx$i" "$abin/allreduce_gloo" $i "$n" "$d" eth0 $g "$s" "$iters" </dev/null >> "$f" 2>/dev/null &
            i=$((i + 1))
          done
          wait
          anchors_check "gloo $g, $s B, round $r" < "$f" |
            awk -v r="$r" 'NF == 4 {print "gloo,allreduce," $1 ",-," r "," $2 "," $3 "," $4}' >> "$csv"
          rm -rf "$d" "$f"
        done
      fi
    done
    commas=$(echo "$sizes" | tr ' ' ',')
    ip netns exec "${pfx}0" "$b/launcher/minimprun" --agent "ip netns exec" \
      --host "$hosts" --iface eth0 --timeout 1800 "$b/tests/bench/minimp-bench" "$coll" \
      --algs all --sizes "$commas" --iters "$iters" </dev/null 2>/dev/null |
      awk -F, -v r="$r" '$1 == "coll" {print "minimp," $2 "," $3 "," $4 "," r "," $6 "," $7 "," $8}' >> "$csv"
  done
  r=$((r + 1))
done
rm -f "$hf"
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["coll"], int(r["size"]), r["impl"], r["alg"]) for r in rows})
print("%-10s %9s %-8s %-18s %-18s %12s %12s %3s" %
      ("coll", "size", "impl", "algorithm", "auto picked", "avg_us", "max_us", "n"))
for coll, size, impl, alg in keys:
    sel = [r for r in rows if (r["coll"], int(r["size"]), r["impl"], r["alg"]) == (coll, size, impl, alg)]
    picked = ",".join(sorted({r["chosen"] for r in sel if r["chosen"] not in ("-", "")}))
    print("%-10s %9d %-8s %-18s %-18s %12.1f %12.1f %3d" % (
        coll, size, impl, alg, picked or "-",
        statistics.median(float(r["avg_us"]) for r in sel),
        statistics.median(float(r["max_us"]) for r in sel), len(sel)))
PY
anchors_finish
