#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The multicast broadcast over IPv4 against IPv6 on the emulated cluster,
# beside the pipelined chain (TCP over the same family): N hosts with
# IPv6 addresses too (tests/netcluster's NETCLUSTER_SUBNET6), one rank
# each, the job listening on eth0's IPv4 address or on its IPv6 one,
# alternating per round. minimp-bench's barrier method: per-node time
# after a barrier, averaged over ranks (and the last rank's).
#   tests/bench/run_mcast_family.sh BUILD_DIR [N] [REPEATS] [ITERS]
# Needs root. Uses the cluster named by NETCLUSTER_PREFIX / _SWITCH /
# _SUBNET (brings it up and down). Hold /tmp/minimp-bench.lock (flock)
# around it. Raw rows go to $OUT/mcast_family.csv.
set -eu
b=${1:-build}
n=${2:-8}
reps=${3:-7}
iters=${4:-10}
here=$(cd "$(dirname "$0")" && pwd)
nc=$here/../netcluster
out=${OUT:-results/mcast_family}
prefix=${NETCLUSTER_PREFIX:-h}
export NETCLUSTER_SUBNET6=${NETCLUSTER_SUBNET6:-fd00:77::}
mkdir -p "$out"
csv="$out/mcast_family.csv"
echo "family,rep,alg,size,avg_us,max_us" > "$csv"
"$nc" up "$n" 100mbit
hl=$("$nc" hostlist "$n" 1)
r=1
while [ "$r" -le "$reps" ]; do
  for fam in ipv4 ipv6; do
    if [ "$fam" = ipv4 ]; then ifc=eth0; else ifc="${NETCLUSTER_SUBNET6}/64"; fi
    ip netns exec "${prefix}0" "$b/launcher/minimprun" --agent "ip netns exec" \
      --host "$hl" --iface "$ifc" --timeout 600 \
      "$b/tests/bench/minimp-bench" bcast --algs multicast,pipeline \
      --sizes 65536,1048576 --iters "$iters" --method barrier --shuffle "$r" \
      2>/dev/null |
      awk -v f="$fam" -v r="$r" \
        '$1 == "barrier" {print f "," r "," $2 "," $5 "," $6 "," $7}' >> "$csv"
  done
  r=$((r + 1))
done
"$nc" down
# Medians per family, algorithm and size.
awk -F, 'NR > 1 {k = $1 " " $3 " " $4; n[k]++; a[k, n[k]] = $5; m[k, n[k]] = $6}
  END {
    for (k in n) {
      c = n[k]
      for (i = 1; i <= c; i++) { x[i] = a[k, i]; y[i] = m[k, i] }
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) {
        if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
        if (y[j] < y[i]) { t = y[i]; y[i] = y[j]; y[j] = t }
      }
      h = int((c + 1) / 2)
      printf "%s: median avg %.0f us, max %.0f us over %d rounds\n", k, x[h], y[h], c
    }
  }' "$csv" | sort
