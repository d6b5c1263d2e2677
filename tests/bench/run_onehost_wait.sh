#!/bin/sh
# SPDX-License-Identifier: MIT
#
# How ranks on one host wait, beside Open MPI with its defaults, in one
# run (docs/performance.md, "Waiting and memory on one host"):
#  - ring: an 8-byte token round N ranks (8 by default: more ranks than
#    this machine's CPUs), microseconds per hop; Open MPI with
#    mpi_yield_when_idle (its choice where ranks outnumber cores),
#    libminimp as shipped and with MINIMP_SPIN_YIELD=0 (sleeping waits);
#  - idle: the CPU seconds a rank blocked 5 s in a receive uses;
#  - flood: 10^6 8-byte messages, 500 in flight, to a peer on the host:
#    libminimp's heap above its size after mmp_init (minimp-flood).
# The variants alternate within each round; medians over the rounds are
# printed at the end, every value is in OUT/onehost_wait.csv. mpi_wait.c
# is built for Open MPI with mpicc.openmpi into OUT.
#   tests/bench/run_onehost_wait.sh BUILD_DIR [ROUNDS [N]]
# Needs the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh).
set -eu
b=${1:-build}
rounds=${2:-5}
n=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
out=${OUT:-results/onehost_wait}
ompi="mpirun.openmpi --allow-run-as-root"
mkdir -p "$out"
mpicc.openmpi -O2 -o "$out/mpi_wait_ompi" "$here/mpi_wait.c"
csv="$out/onehost_wait.csv"
echo "bench,impl,rep,value" > "$csv"
mm() { "$b/launcher/minimprun" "$@" 2>/dev/null; }
i=1
while [ "$i" -le "$rounds" ]; do
  $ompi --oversubscribe -np "$n" --mca mpi_yield_when_idle 1 \
    "$out/mpi_wait_ompi" ring 2000 2>/dev/null |
    anchors_check "openmpi ring, round $i" 1 |
    awk -v r="$i" '$1 == "ring" {print "ring,openmpi_default," r "," $3}' >> "$csv"
  mm -n "$n" "$b/tests/bench/mpi_wait" ring 2000 |
    awk -v r="$i" '$1 == "ring" {print "ring,minimp," r "," $3}' >> "$csv"
  MINIMP_SPIN_YIELD=0 mm -n "$n" "$b/tests/bench/mpi_wait" ring 2000 |
    awk -v r="$i" '$1 == "ring" {print "ring,minimp_spin_yield_0," r "," $3}' >> "$csv"
  $ompi -np 2 "$out/mpi_wait_ompi" idle 2>/dev/null |
    anchors_check "openmpi idle, round $i" 1 |
    awk -v r="$i" '$1 == "idle" {print "idle_cpu_s,openmpi_default," r "," $3}' >> "$csv"
  mm -n 2 "$b/tests/bench/mpi_wait" idle |
    awk -v r="$i" '$1 == "idle" {print "idle_cpu_s,minimp," r "," $3}' >> "$csv"
  mm -n 2 "$b/tests/bench/minimp-flood" 1000000 500 8 |
    sed -n 's/^rank \([01]\):.*peak +\([0-9.]*\) MiB.*/\1 \2/p' |
    awk -v r="$i" '{print "flood_heap_MiB,minimp_rank" $1 "," r "," $2}' >> "$csv"
  i=$((i + 1))
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["bench"], r["impl"]) for r in rows})
print("%-15s %-24s %10s %10s %10s %4s" % ("bench", "impl", "median", "min", "max", "n"))
for bench, impl in keys:
    v = [float(r["value"]) for r in rows if r["bench"] == bench and r["impl"] == impl]
    print("%-15s %-24s %10.3f %10.3f %10.3f %4d" % (bench, impl, statistics.median(v), min(v), max(v), len(v)))
PY
anchors_finish
