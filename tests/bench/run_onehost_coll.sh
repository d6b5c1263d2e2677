#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Short collectives on one host (loopback), beside Open MPI: alltoall and
# allgather of 1 KiB per rank and allreduce of 4 B, on N ranks (8 by
# default), every algorithm and AUTO, per-node time after a barrier.
# Open MPI runs with its defaults (shared memory, mpi_yield_when_idle as
# the ranks outnumber the cores) and forced onto TCP loopback; libminimp
# as shipped (shared memory) and with MINIMP_SHM=off. With BASE=DIR, the
# build in DIR runs too (label "base"), to compare two builds in one run.
# The variants alternate within each round; medians over the rounds are
# printed at the end, every value is in OUT/onehost_coll.csv.
#   [BASE=DIR] tests/bench/run_onehost_coll.sh BUILD_DIR [ROUNDS [N]]
# Needs the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh); build this
# one first: tests/bench/build_coll_anchors.sh.
set -eu
b=${1:-build}
rounds=${2:-5}
n=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin coll_ompi
out=${OUT:-results/onehost_coll}
iters=${ITERS:-200}
ompi="mpirun.openmpi --allow-run-as-root --oversubscribe -np $n --mca mpi_yield_when_idle 1"
mkdir -p "$out"
csv="$out/onehost_coll.csv"
echo "impl,coll,alg,chosen,size,rep,avg_us,max_us" > "$csv"
jobs="alltoall:1024 allgather:1024 allreduce:4"
i=1
while [ "$i" -le "$rounds" ]; do
  echo "round $i of $rounds" >&2
  for j in $jobs; do
    c=${j%%:*}
    s=${j#*:}
    for v in default tcp; do
      extra=""
      [ $v = tcp ] && extra="--mca btl tcp,self --mca btl_tcp_if_include lo"
      # shellcheck disable=SC2086
      $ompi $extra "$abin/coll_ompi" "$c" "$s" "$iters" 2>/dev/null |
        tail -1 | anchors_check "openmpi_$v $c, round $i" | awk -v r="$i" -v v="$v" \
        'NF == 4 {print "openmpi_" v "," $1 ",-,-," $2 "," r "," $3 "," $4}' >> "$csv"
    done
    for bd in $b ${BASE:-}; do
      label=new
      [ "$bd" = "${BASE:-}" ] && label=base
      for shm in on off; do
        MINIMP_SHM=$shm "$bd/launcher/minimprun" -n "$n" \
          "$bd/tests/bench/minimp-bench" "$c" --algs all --sizes "$s" \
          --iters "$iters" 2>/dev/null |
          awk -F, -v r="$i" -v l="${label}_shm_$shm" \
          '$1 == "coll" {print "minimp_" l "," $2 "," $3 "," $4 "," $6 "," r "," $7 "," $8}' >> "$csv"
      done
    done
  done
  i=$((i + 1))
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["coll"], int(r["size"]), r["impl"], r["alg"]) for r in rows})
print("%-10s %6s %-22s %-10s %-10s %9s %9s %3s" %
      ("coll", "size", "impl", "algorithm", "picked", "avg_us", "max_us", "n"))
for coll, size, impl, alg in keys:
    sel = [r for r in rows if (r["coll"], int(r["size"]), r["impl"], r["alg"]) == (coll, size, impl, alg)]
    picked = ",".join(sorted({r["chosen"] for r in sel if r["chosen"] not in ("-", "")}))
    print("%-10s %6d %-22s %-10s %-10s %9.1f %9.1f %3d" % (
        coll, size, impl, alg, picked or "-",
        statistics.median(float(r["avg_us"]) for r in sel),
        statistics.median(float(r["max_us"]) for r in sel), len(sel)))
PY
anchors_finish
