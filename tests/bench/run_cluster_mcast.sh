#!/bin/sh
# The multicast broadcast on the emulated cluster beside the best TCP
# algorithm, AUTO and the anchors (Open MPI, Gloo), in one run (issue 16,
# item 7). minimp-bench's barrier method, as run_cluster_bcast.sh: per-node
# time after a barrier, averaged over ranks; REPEATS rounds, medians.
#   1. broadcast at SIZES on N hosts: multicast, AUTO, every TCP algorithm
#      (the best is read off the table), Open MPI, MPICH, Gloo;
#   2. scaling: p = 4, 8, 16, 32 at 64 KiB and 1 MiB, multicast against the
#      pipelined chain;
#   3. 1 MiB under 1% and 10% loss (nftables on every receiver's host
#      dropping that share of the datagrams sent to 239.0.0.0/8; with
#      LOSS=udp, of every UDP datagram it receives, unicast repairs too);
#      with BASE=ANOTHER_BUILD_DIR, that build's multicast too, in the
#      same rounds (impl "base": a before/after comparison);
#   4. s-to-p at 64 KiB a source, s = 1, 4, 8, 16 of N, the equal
#      distribution: the multicast s-to-p, AUTO, the ring, and Open MPI's
#      MPI_Allgatherv (the anchors' run_s2p.sh).
# PARTS (default "sizes scaling loss s2p") picks which run, in that order;
# without "scaling" only N hosts are brought up.
#   tests/bench/run_cluster_mcast.sh BUILD_DIR [N] [SIZES] [ITERS] [REPEATS] [RATE]
# Needs root and nft; parts sizes and s2p need the anchors (MINIMP_ANCHORS:
# tests/bench/anchors.sh), which use hosts h0.., so run them with the
# default NETCLUSTER_PREFIX. Hold /tmp/minimp-bench.lock (flock) around it.
# Raw rows go to $OUT/mcast.csv; its column x is the loss in percent
# (part loss) or s (part s2p), else 0.
set -eu
b=${1:-build}
n=${2:-16}
sizes=${3:-"1024 65536 1048576"}
iters=${4:-10}
reps=${5:-3}
rate=${6:-100mbit}
here=$(cd "$(dirname "$0")" && pwd)
parts=${PARTS:-"sizes scaling loss s2p"}
. "$here/anchors.sh"
case " $parts " in
*" sizes "* | *" s2p "*)
  anchors_init
  anchors_bin bcast_ompi bcast_mpich bcast_gloo s2p_ompi
  ;;
esac
out=${OUT:-results/cluster_mcast}
prefix=${NETCLUSTER_PREFIX:-h}
mkdir -p "$out"
csv="$out/mcast.csv"
base=${BASE:-}
case ${LOSS:-group} in
udp) match="meta l4proto udp" ;;
*) match="ip daddr 239.0.0.0/8" ;;
esac
echo "part,impl,alg,chosen,p,x,rep,size,avg_us,max_us" > "$csv"

hosts_of() {
  i=0
  while [ $i -lt "$1" ]; do printf '%s%d,' "$prefix" $i; i=$((i + 1)); done
}

# minimp PART P LOSS REP ALGS SIZES(comma) [BUILD IMPL]
minimp() {
  hl=$(hosts_of "$2")
  bd=${7:-$b}
  ip netns exec "${prefix}0" "$bd/launcher/minimprun" --agent "ip netns exec" \
    --host "${hl%,}" --iface eth0 --timeout 1200 \
    "$bd/tests/bench/minimp-bench" bcast --algs "$5" --sizes "$6" \
    --iters "$iters" --method barrier --shuffle "$4" 2>/dev/null |
    awk -v part="$1" -v p="$2" -v loss="$3" -v r="$4" -v impl="${8:-minimp}" \
      '$1 == "barrier" {print part "," impl "," $2 "," $3 "," p "," loss "," r "," $5 "," $6 "," $7}' >> "$csv"
}

# s2p REP: part 4 at N hosts, the anchor first.
s2p() {
  "$anchors/run_s2p.sh" "$n" 65536 "1 4 8 16" "$iters" 2>/dev/null |
    anchors_check "run_s2p.sh, round $1" 4 |
    awk -v r="$1" -v p="$n" 'NF == 6 {print "s2p,openmpi,allgatherv,-," p "," $4 "," r "," $3 "," $5 "," $6}' >> "$csv"
  hl=$(hosts_of "$n")
  ip netns exec "${prefix}0" "$b/launcher/minimprun" --agent "ip netns exec" \
    --host "${hl%,}" --iface eth0 --timeout 1200 \
    "$b/tests/bench/minimp-bench" s2p --algs multicast,auto,ring \
    --dists equal --sources 1,4,8,16 --sizes 64k --sweep s \
    --iters "$iters" 2>/dev/null |
    awk -v r="$1" '$1 == "s" && NF == 10 {print "s2p,minimp," $2 "," $3 "," $5 "," $6 "," r "," $7 "," $9 "," $10}' >> "$csv"
}

loss_on() {
  i=1
  while [ $i -lt "$n" ]; do
    ip netns exec "$prefix$i" sh -c "nft add table inet mmpbench && nft add chain inet mmpbench in '{ type filter hook input priority 0; }' && nft add rule inet mmpbench in $match numgen random mod 100 '<' $1 drop"
    i=$((i + 1))
  done
}

loss_off() {
  i=1
  while [ $i -lt "$n" ]; do
    ip netns exec "$prefix$i" nft delete table inet mmpbench 2>/dev/null || true
    i=$((i + 1))
  done
}

commas=$(echo "$sizes" | tr ' ' ',')
case " $parts " in
*" scaling "*) "$here/../netcluster" up 32 "$rate" >/dev/null ;;
*) "$here/../netcluster" up "$n" "$rate" >/dev/null ;;
esac
r=1
while [ "$r" -le "$reps" ]; do
  echo "round $r of $reps" >&2
  for part in $parts; do
    case $part in
    sizes) # 1. Everything at N hosts, anchors first.
      "$anchors/run_bcast.sh" "$n" "$sizes" "$iters" 2>/dev/null |
        anchors_check "run_bcast.sh, round $r" $((3 * $(anchors_count $sizes))) |
        awk -v r="$r" -v p="$n" '$2 == "p='"$n"'" && NF == 7 {print "sizes," $1 ",-,-," p ",0," r "," $5 "," $6 "," $7}' >> "$csv"
      minimp sizes "$n" 0 "$r" all "$commas" ;;
    scaling) # 2. Scaling in p.
      for p in 4 8 16 32; do
        minimp scaling "$p" 0 "$r" multicast,pipeline 65536,1048576
      done ;;
    loss) # 3. Loss at the receivers.
      for pct in 1 10; do
        loss_on "$pct"
        minimp loss "$n" "$pct" "$r" multicast,auto 1048576
        if [ -n "$base" ]; then
          minimp loss "$n" "$pct" "$r" multicast 1048576 "$base" base
        fi
        loss_off
      done ;;
    s2p) s2p "$r" ;;
    esac
  done
  r=$((r + 1))
done
"$here/../netcluster" down >/dev/null
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["part"], r["impl"], r["alg"], int(r["p"]), r["x"],
                int(r["size"])) for r in rows},
              key=lambda k: (k[0], k[3], k[4], k[5], k[1] != "minimp", k[2]))
print("%-8s %-8s %-13s %-13s %3s %4s %9s %12s %12s %3s" %
      ("part", "impl", "algorithm", "auto picked", "p", "x", "size",
       "avg_us", "max_us", "n"))
for part, impl, alg, p, loss, size in keys:
    sel = [r for r in rows if (r["part"], r["impl"], r["alg"], int(r["p"]),
                               r["x"], int(r["size"])) ==
           (part, impl, alg, p, loss, size)]
    picked = ",".join(sorted({r["chosen"] for r in sel
                              if r["chosen"] not in ("-", "")}))
    print("%-8s %-8s %-13s %-13s %3d %4s %9d %12.1f %12.1f %3d" % (
        part, impl, alg, picked or "-", p, loss, size,
        statistics.median(float(r["avg_us"]) for r in sel),
        statistics.median(float(r["max_us"]) for r in sel), len(sel)))
PY
anchors_finish
