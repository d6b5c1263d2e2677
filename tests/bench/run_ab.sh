#!/bin/sh
# Two builds of libminimp side by side with Open MPI on the emulated
# cluster, in alternating rounds: for a change that must not change
# performance (a refactor), the new build's rows must sit within the
# spread of the old one's, Open MPI's row in the same rounds showing how
# much the machine itself drifted. Each round runs Open MPI's broadcast
# and s-to-p anchors, then each build (in alternating order) with
# minimp-bench's barrier method: AUTO and the pipelined chain at
# BCAST_SIZES, AUTO and the ring allreduce at AR_SIZES (none: "") and the
# s-to-p ring and AUTO at S2P_LEN bytes from S2P_S sources (equal
# distribution). Prints medians and ranges over the rounds; writes the
# raw rows to $OUT/ab.csv.
#   tests/bench/run_ab.sh OLD_BUILD NEW_BUILD [ROUNDS] [ITERS]
# Needs root and the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh;
# ANCHOR_LIBS chooses the broadcast's). NETCLUSTER_PREFIX (and _SWITCH,
# _SUBNET) keep this cluster apart from another one on the same machine.
set -eu
old=$1
new=$2
rounds=${3:-5}
iters=${4:-10}
n=${N:-16}
sizes=${BCAST_SIZES:-"65536 1048576"}
ar_sizes=${AR_SIZES-1048576}
s2p_len=${S2P_LEN:-65536}
s2p_s=${S2P_S:-16}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi bcast_mpich bcast_gloo s2p_ompi
out=${OUT:-results/ab}
mkdir -p "$out"
csv="$out/ab.csv"
"$here/../netcluster" up "$n" 100mbit >/dev/null
trap '"$here/../netcluster" down >/dev/null 2>&1 || true' EXIT
hosts=$(anchors_hosts "$n")
commas=$(echo "$sizes" | tr ' ' ',')
echo "impl,what,alg,round,size,avg_us,max_us" > "$csv"

# One build's rows: bench NAME BUILD ROUND
bench() {
  ip netns exec "${anchors_pfx}0" "$2/launcher/minimprun" --agent "ip netns exec" \
    --host "$hosts" --iface eth0 --timeout 1200 "$2/tests/bench/minimp-bench" \
    bcast --algs auto,pipeline --sizes "$commas" --iters "$iters" \
    --method barrier 2>/dev/null |
    awk -v n="$1" -v r="$3" '$1 == "barrier" {
      print n ",bcast," $2 "," r "," $5 "," $6 "," $7 }' >> "$csv"
  [ -z "$ar_sizes" ] ||
    ip netns exec "${anchors_pfx}0" "$2/launcher/minimprun" --agent "ip netns exec" \
      --host "$hosts" --iface eth0 --timeout 1200 "$2/tests/bench/minimp-bench" \
      allreduce --algs auto,ring --sizes "$(echo "$ar_sizes" | tr ' ' ',')" \
      --iters "$iters" 2>/dev/null |
    awk -F, -v n="$1" -v r="$3" '$1 == "coll" {
        print n ",allreduce," $3 "," r "," $6 "," $7 "," $8 }' >> "$csv"
  ip netns exec "${anchors_pfx}0" "$2/launcher/minimprun" --agent "ip netns exec" \
    --host "$hosts" --iface eth0 --timeout 1200 "$2/tests/bench/minimp-bench" \
    s2p --algs auto,ring --dists equal --sources "$s2p_s" \
    --sizes "$s2p_len" --sweep s --iters "$iters" 2>/dev/null |
    awk -v n="$1" -v r="$3" '$1 == "s" {
      print n ",s2p," $2 "," r "," $7 "," $9 "," $10 }' >> "$csv"
}

r=1
while [ "$r" -le "$rounds" ]; do
  echo "round $r of $rounds" >&2
  anchors_bcast "$n" "$sizes" "$iters" 2>/dev/null |
    anchors_check "broadcast, round $r" $(($(anchors_libs) * $(anchors_count $sizes))) |
    awk -v r="$r" '$2 == "p='"$n"'" && NF == 7 && $1 == "openmpi" {
      print "openmpi,bcast,-," r "," $5 "," $6 "," $7 }' >> "$csv"
  anchors_s2p "$n" "$s2p_len" "$s2p_s" "$iters" 2>/dev/null |
    anchors_check "s-to-p, round $r" "$(anchors_count $s2p_s)" |
    awk -v r="$r" -v L="$s2p_len" '$NF ~ /^[0-9.]+$/ { print "openmpi,s2p,-," r "," L "," $(NF-1) "," $NF }' >> "$csv"
  if [ $((r % 2)) -eq 1 ]; then
    bench old "$old" "$r"
    bench new "$new" "$r"
  else
    bench new "$new" "$r"
    bench old "$old" "$r"
  fi
  r=$((r + 1))
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["what"], int(r["size"]), r["alg"], r["impl"]) for r in rows})
print("%-5s %9s %-9s %-8s %11s %23s %3s" %
      ("what", "size", "alg", "impl", "median_us", "range_us", "n"))
for what, size, alg, impl in keys:
    v = [float(r["avg_us"]) for r in rows
         if (r["what"], int(r["size"]), r["alg"], r["impl"]) == (what, size, alg, impl)]
    print("%-5s %9d %-9s %-8s %11.1f %11.1f-%11.1f %3d" % (
        what, size, alg, impl, statistics.median(v), min(v), max(v), len(v)))
PY
anchors_finish
