#!/bin/sh
# Broadcast under process arrival patterns ([Patarasuk & Yuan 2008], section 5) on the
# emulated cluster, beside the anchors in the same run: for each PATTERN,
# the anchors' run_bcast.sh N SIZE ITERS MAXIF PATTERN, then
# minimp-bench bcast --method arrival with the same sleeps. Raw outputs go
# to $OUT; the tables are printed.
#   tests/bench/run_cluster_arrival.sh BUILD_DIR [N] [SIZE] [ITERS] [MAXIF_US] [PATTERNS] [ALGS]
# Needs root and the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh).
set -eu
b=${1:-build}
n=${2:-16}
size=${3:-1048576}
iters=${4:-6}
maxif=${5:-1400000}
patterns=${6:-"rootearly late20 all"}
algs=${7:-"binomial,pipeline,scatter_ring,symmetric,arrival_b,arrival_nb"}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi bcast_mpich bcast_gloo
out=${OUT:-results/cluster_arrival}
mkdir -p "$out"
"$here/../netcluster" up "$n" 100mbit >/dev/null
hosts=$(i=0; while [ $i -lt "$n" ]; do printf 'h%d,' $i; i=$((i + 1)); done)
hosts=${hosts%,}
for pat in $patterns; do
  echo "== $pat: anchors" | tee "$out/$pat.anchors"
  "$anchors/run_bcast.sh" "$n" "$size" "$iters" "$maxif" "$pat" 2>/dev/null |
    anchors_check "run_bcast.sh, $pat" 3 | tee -a "$out/$pat.anchors"
  echo "== $pat: libminimp"
  ip netns exec h0 "$b/launcher/minimprun" --agent "ip netns exec" \
    --host "$hosts" --iface eth0 --timeout 1200 "$b/tests/bench/minimp-bench" bcast \
    --method arrival --pattern "$pat" --algs "$algs" --sizes "$size" \
    --maxif "$maxif" --iters "$iters" --csv "$out/$pat.csv" 2>/dev/null |
    tee "$out/$pat.minimp"
done
"$here/../netcluster" down >/dev/null
anchors_finish
