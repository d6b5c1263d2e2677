#!/bin/sh
# make demo: launch 8 ranks on this machine and compare the broadcast
# algorithms (seed 003's max OL_i, microseconds), then show point-to-point,
# through shared memory (the default between the ranks of a host) and over
# TCP loopback.
# Usage: tests/demo.sh BUILD_DIR
set -eu
b=${1:-build}
run="$b/launcher/minimprun"
out=${DEMO_OUT:-results/demo}
mkdir -p "$out"
echo "== 8 ranks on this machine: broadcast, max OL_i in microseconds"
echo "   (seed 003: per-destination latency, corrected for the ACK; lower is better)"
"$run" -n 8 "$b/tests/minimp-bench" bcast --method ol --sizes 1k,64k,1m \
  --dests 4 --csv "$out/bcast.csv" --svg "$out/bcast.svg" >/dev/null
awk -F, '
  NR == 1 { next }
  { key = $2; v[key, $5] = $7; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if ($2 == "auto") chosen[$5] = $3; sizes[$5] = 1 }
  END {
    printf "%-14s %12s %12s %12s\n", "algorithm", "1 KiB", "64 KiB", "1 MiB"
    for (i = 1; i <= n; i++) {
      a = order[i]
      printf "%-14s %12s %12s %12s\n", a, v[a, 1024], v[a, 65536], v[a, 1048576]
    }
    printf "\nautomatic choice: 1 KiB -> %s, 64 KiB -> %s, 1 MiB -> %s\n",
      chosen[1024], chosen[65536], chosen[1048576]
  }' "$out/bcast.csv"
echo "(CSV: $out/bcast.csv, plot: $out/bcast.svg)"
echo
echo "== 2 ranks: ping-pong latency and streaming bandwidth, through shared memory"
"$run" -n 2 "$b/tests/minimp-bench" pingpong --sizes 8,1k,64k,1m,4m
echo
echo "== the same over TCP loopback (MINIMP_SHM=off)"
MINIMP_SHM=off "$run" -n 2 "$b/tests/minimp-bench" pingpong --sizes 8,1k,64k,1m,4m
