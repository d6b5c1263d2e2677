#!/bin/sh
# SPDX-License-Identifier: MIT
#
# What sealing every TCP frame costs (minimprun --encrypt, MINIMP_ENCRYPT=1;
# docs/security.md), plain and sealed alternated in one run so that drift
# in the machine hits both alike:
#  1. loopback, 2 ranks over TCP (MINIMP_SHM=off: shared memory is never
#     sealed, so it would hide the cost): minimp-bench pingpong's half
#     round trip at 8 B, 1 KiB and 64 KiB, and its streaming rate at 4 MiB;
#  2. the emulated cluster, one rank on each of N hosts with RATE links:
#     minimp-bench's barrier method (per-node time after a barrier,
#     averaged over ranks) for a 1 MiB broadcast, AUTO and ALGS.
# REPEATS rounds of each; prints medians and the sealed/plain ratios, and
# writes the raw rows to $OUT/encrypt.csv.
#   tests/bench/run_encrypt.sh BUILD_DIR [REPEATS] [N] [ITERS] [RATE]
# The cluster part needs root; NETCLUSTER_PREFIX and NETCLUSTER_SWITCH keep
# it apart from another cluster on the same machine (tests/netcluster).
# PARTS=loopback or PARTS=cluster runs one part only. Each round also runs
# Open MPI over TCP, plain (it has no encryption of its own), as the
# reference: its ping-pong on loopback and its 1 MiB broadcast on the
# cluster, which then needs the anchors' host names, NETCLUSTER_PREFIX=h.
# The anchors come from MINIMP_ANCHORS (tests/bench/anchors.sh);
# MINIMP_ANCHORS=none leaves Open MPI out.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init optional
anchors_bin pp_ompi bcast_ompi
b=${1:-build}
reps=${2:-7}
n=${3:-16}
iters=${4:-10}
rate=${5:-100mbit}
parts=${PARTS:-loopback cluster}
algs=${ALGS:-auto,scatter_ring}
pfx=${NETCLUSTER_PREFIX:-h}
out=${OUT:-results/encrypt}
mkdir -p "$out"
csv="$out/encrypt.csv"
echo "part,seal,rep,what,size,value" > "$csv"

# The order of the two modes in round r: plain first in odd rounds.
modes() { if [ $(($1 % 2)) -eq 1 ]; then echo "plain sealed"; else echo "sealed plain"; fi; }

case " $parts " in *" loopback "*)
  r=1
  while [ "$r" -le "$reps" ]; do
    echo "loopback round $r of $reps" >&2
    for m in $(modes "$r"); do
      flag=; [ "$m" = sealed ] && flag=--encrypt
      env MINIMP_SHM=off "$b/launcher/minimprun" $flag -n 2 \
        "$b/tests/bench/minimp-bench" pingpong --sizes 8,1024,65536,4194304 |
        awk -v r="$r" -v m="$m" 'NF == 3 && $1 ~ /^[0-9]+$/ {
          print "loopback," m "," r ",half_rtt_us," $1 "," $2
          print "loopback," m "," r ",stream_MBps," $1 "," $3 }' >> "$csv"
    done
    if [ -n "$anchors" ]; then
      sh "$anchors/run_pingpong.sh" "8 1024 65536 4194304" 2>/dev/null |
        anchors_check "run_pingpong.sh, round $r" 4 |
        awk -v r="$r" 'NF == 3 && $1 ~ /^[0-9]+$/ {
          print "loopback,openmpi," r ",half_rtt_us," $1 "," $2
          print "loopback,openmpi," r ",stream_MBps," $1 "," $3 }' >> "$csv"
    fi
    r=$((r + 1))
  done
  ;;
esac

case " $parts " in *" cluster "*)
  trap '"$here/../netcluster" down >/dev/null 2>&1 || true' EXIT
  "$here/../netcluster" up "$n" "$rate" >/dev/null
  hosts=$(i=0; while [ $i -lt "$n" ]; do printf '%s%d,' "$pfx" $i; i=$((i + 1)); done)
  hosts=${hosts%,}
  r=1
  while [ "$r" -le "$reps" ]; do
    echo "cluster round $r of $reps" >&2
    for m in $(modes "$r"); do
      flag=; [ "$m" = sealed ] && flag=--encrypt
      ip netns exec "${pfx}0" "$b/launcher/minimprun" $flag \
        --agent "ip netns exec" --host "$hosts" --iface eth0 --timeout 600 \
        "$b/tests/bench/minimp-bench" bcast --algs "$algs" --sizes 1048576 \
        --iters "$iters" --method barrier --shuffle "$r" 2>/dev/null |
        awk -v r="$r" -v m="$m" '$1 == "barrier" {
          alg = ($3 == "-" || $3 == "") ? $2 : $2 "->" $3
          print "cluster," m "," r ",bcast_" alg "_avg_us," $5 "," $6 }' >> "$csv"
    done
    if [ -n "$anchors" ]; then
      hf=$(mktemp)
      i=0; while [ $i -lt "$n" ]; do echo "h$i slots=1" >> "$hf"; i=$((i + 1)); done
      ip netns exec h0 unshare --uts sh -c "hostname h0; mpirun.openmpi \
        --allow-run-as-root -np $n --hostfile $hf \
        --mca plm_rsh_agent $anchors/nsrsh --mca btl tcp,self \
        --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
        --mca mpi_yield_when_idle 1 $abin/bcast_ompi 1048576 $iters 0 all" \
        2>/dev/null | anchors_check "openmpi bcast, round $r" | awk -v r="$r" 'NF == 3 && $1 == 1048576 {
          print "cluster,openmpi," r ",bcast_avg_us," $1 "," $2 }' >> "$csv"
      rm -f "$hf"
    fi
    r=$((r + 1))
  done
  ;;
esac

python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["part"], r["what"], int(r["size"])) for r in rows})
print("%-9s %-24s %9s %12s %12s %7s %3s" %
      ("part", "metric", "size", "plain", "sealed", "ratio", "n"))
for part, what, size in keys:
    med = {}
    for seal in ("plain", "sealed"):
        v = [float(r["value"]) for r in rows
             if (r["part"], r["what"], int(r["size"]), r["seal"]) ==
             (part, what, size, seal)]
        med[seal] = (statistics.median(v), len(v)) if v else (float("nan"), 0)
    if med["plain"][1] == 0:  # an anchor's row: Open MPI alone
        continue
    ratio = med["sealed"][0] / med["plain"][0] if med["plain"][0] else float("nan")
    print("%-9s %-24s %9d %12.2f %12.2f %7.3f %3d" %
          (part, what, size, med["plain"][0], med["sealed"][0], ratio,
           min(med["plain"][1], med["sealed"][1])))
for part, what, size in keys:
    v = [float(r["value"]) for r in rows if r["seal"] == "openmpi" and
         (r["part"], r["what"], int(r["size"])) == (part, what, size)]
    if v:
        print("%-9s %-24s %9d %12.2f  (Open MPI, plain) %3d" %
              (part, what, size, statistics.median(v), len(v)))
PY
anchors_finish
