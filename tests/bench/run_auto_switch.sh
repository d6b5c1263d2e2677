#!/bin/sh
# AUTO following a change of arrival pattern on the emulated cluster:
# minimp-bench bcast --method arrival --pattern switch (balanced for the
# first half of ITERS broadcasts, rootearly for the second, MAX_IF =
# 16 T(m)), RUNS times per load, idle and under stress-ng --cpu 2. Each
# run's raw times go to $OUT/switch-LOAD-P-SIZE-RUN.csv; the plot of the
# per-iteration medians to $OUT/switch-LOAD-P-SIZE.svg, with the summary
# of tests/bench/plot_switch.py printed.
#   tests/bench/run_auto_switch.sh BUILD_DIR [P] [SIZE] [ITERS] [RUNS] [LOADS]
# Needs root and stress-ng.
set -eu
b=${1:-build}
p=${2:-16}
size=${3:-1048576}
iters=${4:-40}
runs=${5:-3}
loads=${6:-"idle loaded"}
algs=${ALGS:-auto,binomial,pipeline,scatter_ring,arrival_b,arrival_nb}
here=$(cd "$(dirname "$0")" && pwd)
# NETCLUSTER_PREFIX (and _SWITCH, _SUBNET) keep this cluster apart from
# another one on the same machine (tests/netcluster).
pfx=${NETCLUSTER_PREFIX:-h}
out=${OUT:-results/auto_switch}
mkdir -p "$out"
stress=
trap '[ -n "$stress" ] && kill $stress 2>/dev/null; "$here/../netcluster" down >/dev/null 2>&1 || true' EXIT
"$here/../netcluster" up "$p" 100mbit >/dev/null
hosts=$(i=0; while [ $i -lt "$p" ]; do printf '%s%d,' "$pfx" $i; i=$((i + 1)); done)
hosts=${hosts%,}
maxif=$(awk -v m="$size" 'BEGIN { printf "%.0f", 16 * m * 8 / 95 }')
for load in $loads; do
  if [ "$load" = loaded ]; then
    stress-ng --cpu 2 --timeout 0 >/dev/null 2>&1 &
    stress=$!
  fi
  r=1
  while [ $r -le "$runs" ]; do
    echo "switch $load p=$p $size run $r" >&2
    ip netns exec ${pfx}0 "$b/launcher/minimprun" --agent "ip netns exec" \
      --host "$hosts" --iface eth0 --timeout 3000 "$b/tests/bench/minimp-bench" \
      bcast --method arrival --pattern switch --algs "$algs" \
      --sizes "$size" --maxif "$maxif" --iters "$iters" --shuffle "$r" \
      --raw "$out/switch-$load-$p-$size-$r.csv" >/dev/null
    r=$((r + 1))
  done
  if [ -n "$stress" ]; then
    kill "$stress" 2>/dev/null || true
    wait "$stress" 2>/dev/null || true
    stress=
  fi
  echo "== $load, p = $p, $size bytes"
  ${PYTHON:-python3} "$here/plot_switch.py" "$out/switch-$load-$p-$size.svg" \
    "$out"/switch-"$load-$p-$size"-*.csv
done
