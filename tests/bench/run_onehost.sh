#!/bin/sh
# SPDX-License-Identifier: MIT
#
# One host, beside Open MPI with its defaults (shared memory between the
# ranks of a host, which is what a first-time user gets), in one run:
#  - ping-pong and streaming between 2 ranks, 8 B to 4 MiB: Open MPI's
#    defaults and Open MPI forced onto TCP; libminimp as shipped (shared
#    memory), with every byte through the rings (MINIMP_SHM=ring) and over
#    TCP loopback (MINIMP_SHM=off);
#  - broadcast and allreduce (floats, sum) on N ranks (8 by default):
#    per-node time after a barrier, Open MPI's defaults (with
#    mpi_yield_when_idle, as the ranks outnumber the cores) against
#    libminimp's AUTO, with shared memory and without, and its shm rows
#    (the node segment) by name;
#  - the barrier on N ranks, measured the same way.
# PP_SIZES, BC_SIZES and AR_SIZES (bytes; empty: skip that part) choose
# the sizes; BARRIER=0 leaves the barrier out, SHM_ROWS=0 the shm rows
# by name (AUTO's rows stay).
# The variants alternate within each round, so that drift in the machine
# hits them alike; medians over the rounds are printed at the end, and
# every value is in OUT/onehost.csv.
#   tests/bench/run_onehost.sh BUILD_DIR [ROUNDS [N]]
# Needs the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh).
set -eu
b=${1:-build}
rounds=${2:-5}
n=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin pp_ompi bcast_ompi coll_ompi
out=${OUT:-results/onehost}
pp_sizes=${PP_SIZES-"8 1024 16384 65536 1048576 4194304"}
bc_sizes=${BC_SIZES-"1024 65536 1048576"}
bc_iters=${BC_ITERS:-200}
ar_sizes=${AR_SIZES-"8 65536 1048576"}
barrier=${BARRIER:-1}
variants="on off shm_row"
# A coll_ompi built before its barrier mode runs a gather of 0 bytes for
# "barrier": refused here rather than measured as Open MPI's barrier.
if [ "$barrier" = 1 ] && ! grep -q 'allgather|barrier' "$abin/coll_ompi"; then
  anchors_fail "$abin/coll_ompi has no barrier mode: rebuild it with" \
    "'ANCHORS=$abin sh tests/bench/build_coll_anchors.sh' (or BARRIER=0)"
fi
[ "${SHM_ROWS:-1}" = 1 ] || variants="on off"
ompi="mpirun.openmpi --allow-run-as-root"
mkdir -p "$out"
csv="$out/onehost.csv"
echo "bench,impl,rep,size,value1,value2" > "$csv"
commas=$(echo "$pp_sizes" | tr ' ' ',')
bcommas=$(echo "$bc_sizes" | tr ' ' ',')
# A libminimp variant's algorithm and MINIMP_SHM: AUTO with shared memory
# on or off, or the shm row by name (shm_row).
variant() {
  algs=auto
  shm=${1%_row}
  if [ "$1" = shm_row ]; then algs=shm; shm=on; fi
}
i=1
while [ "$i" -le "$rounds" ]; do
  for s in $pp_sizes; do
    it=4000
    [ "$s" -gt 100000 ] && it=200
    $ompi -np 2 "$abin/pp_ompi" "$s" "$it" 2>/dev/null |
      anchors_check "openmpi pingpong, $s B, round $i" | awk -v r="$i" 'NF==3 {print "pingpong,openmpi_default," r "," $1 "," $2 "," $3}' >> "$csv"
    $ompi -np 2 --mca btl tcp,self --mca btl_tcp_if_include lo \
      "$abin/pp_ompi" "$s" "$it" 2>/dev/null |
      anchors_check "openmpi pingpong over TCP, $s B, round $i" | awk -v r="$i" 'NF==3 {print "pingpong,openmpi_tcp," r "," $1 "," $2 "," $3}' >> "$csv"
  done
  for v in on ring off; do
    [ -n "$pp_sizes" ] || break
    MINIMP_SHM=$v "$b/launcher/minimprun" -n 2 "$b/tests/bench/minimp-bench" \
      pingpong --sizes "$commas" 2>/dev/null |
      awk -v r="$i" -v s="$v" 'NF==3 && $1 ~ /^[0-9]+$/ {print "pingpong,minimp_shm_" s "," r "," $1 "," $2 "," $3}' >> "$csv"
  done
  for s in $bc_sizes; do
    $ompi --oversubscribe -np "$n" --mca mpi_yield_when_idle 1 \
      "$abin/bcast_ompi" "$s" "$bc_iters" 2>/dev/null | tail -1 |
      anchors_check "openmpi bcast, $s B, round $i" | awk -v r="$i" 'NF==3 {print "bcast,openmpi_default," r "," $1 "," $2 "," $3}' >> "$csv"
  done
  for v in $variants; do
    [ -n "$bc_sizes" ] || break
    variant "$v"
    MINIMP_SHM=$shm "$b/launcher/minimprun" -n "$n" \
      "$b/tests/bench/minimp-bench" \
      bcast --algs $algs --method barrier --sizes "$bcommas" \
      --iters "$bc_iters" 2>/dev/null |
      awk -v r="$i" -v s="$v" '$1 == "barrier" {print "bcast,minimp_shm_" s "," r "," $5 "," $6 "," $7}' >> "$csv"
  done
  for s in $ar_sizes; do
    $ompi --oversubscribe -np "$n" --mca mpi_yield_when_idle 1 \
      "$abin/coll_ompi" allreduce "$s" "$bc_iters" 2>/dev/null | tail -1 |
      anchors_check "openmpi allreduce, $s B, round $i" | awk -v r="$i" 'NF==4 {print "allreduce,openmpi_default," r "," $2 "," $3 "," $4}' >> "$csv"
  done
  for v in $variants; do
    [ -n "$ar_sizes" ] || break
    variant "$v"
    MINIMP_SHM=$shm "$b/launcher/minimprun" -n "$n" \
      "$b/tests/bench/minimp-bench" allreduce --algs $algs \
      --sizes "$(echo "$ar_sizes" | tr ' ' ',')" --iters "$bc_iters" 2>/dev/null |
      awk -F, -v r="$i" -v s="$v" '$1 == "coll" {print "allreduce,minimp_shm_" s "," r "," $6 "," $7 "," $8}' >> "$csv"
  done
  if [ "$barrier" = 1 ]; then
    $ompi --oversubscribe -np "$n" --mca mpi_yield_when_idle 1 \
      "$abin/coll_ompi" barrier 0 "$bc_iters" 2>/dev/null | tail -1 |
      anchors_check "openmpi barrier, round $i" | awk -v r="$i" 'NF==4 {print "barrier,openmpi_default," r ",0," $3 "," $4}' >> "$csv"
    for v in $variants; do
      variant "$v" # the barrier takes no options: the row by its variable
      row=""
      [ "$algs" = shm ] && row=shm
      env MINIMP_SHM=$shm ${row:+MINIMP_BARRIER_ALG=$row} \
        "$b/launcher/minimprun" -n "$n" \
        "$b/tests/bench/minimp-bench" barrier --iters "$bc_iters" 2>/dev/null |
        awk -F, -v r="$i" -v s="$v" '$1 == "coll" {print "barrier,minimp_shm_" s "," r "," $6 "," $7 "," $8}' >> "$csv"
    done
  fi
  i=$((i + 1))
done
# Medians per benchmark, implementation and size.
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["bench"], r["impl"], int(r["size"])) for r in rows})
heads = {"pingpong": ("half_rtt_us", "stream_MBps"),
         "bcast": ("avg_node_us", "max_node_us"),
         "allreduce": ("avg_node_us", "max_node_us"),
         "barrier": ("avg_node_us", "max_node_us")}
for bench in ("pingpong", "bcast", "allreduce", "barrier"):
    h1, h2 = heads[bench]
    print("%-9s %-20s %10s %14s %14s %5s" % (bench, "impl", "size", h1, h2, "n"))
    for b_, impl, size in keys:
        if b_ != bench:
            continue
        sel = [r for r in rows
               if r["bench"] == bench and r["impl"] == impl and int(r["size"]) == size]
        v1 = statistics.median(float(r["value1"]) for r in sel)
        v2 = statistics.median(float(r["value2"]) for r in sel)
        print("%-9s %-20s %10d %14.2f %14.1f %5d" % (bench, impl, size, v1, v2, len(sel)))
PY
anchors_finish
