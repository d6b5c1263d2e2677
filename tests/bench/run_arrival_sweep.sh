#!/bin/sh
# SPDX-License-Identifier: MIT
#
# [Patarasuk & Yuan 2008]'s Figures 7-10 on the emulated cluster, the anchors (Open MPI,
# MPICH, Gloo) measured in the same run: for one arrival PATTERN, the
# per-node broadcast time against MAX_IF at MAXIF_SIZE, and against the
# size at MAX_IF = SIZE_MAXIF x T(m), so that MAX_IF scales with the
# message as in the paper. T(m) = m * 8 / 100 Mbit/s, the nominal link
# time; both sides get the same microseconds (not minimp-bench's "16T",
# which would scale with its own measured T).
#   tests/bench/run_arrival_sweep.sh BUILD_DIR [N] [PATTERN] [ITERS]
#   env: MAXIFS="0 1 2 4 8 16" (x T)  MAXIF_SIZE=1048576
#        SIZES="65536 262144 1048576 4194304"  SIZE_MAXIF=16 (x T)
#        ALGS=binomial,pipeline,...,auto  OUT=results/arrival_sweep
# Writes $OUT/sweep-PATTERN.csv (lib,alg,pattern,p,size,maxif_us,avg_us,
# max_us; an anchor's alg is its library), the raw outputs beside it, and
# $OUT/sweep-PATTERN-{maxif,size}.svg (plot_arrival_csv.py). Progress on
# stderr. One cluster for the whole sweep, taken down on any exit, all
# under flock /tmp/minimp-cluster.lock so that two cluster users never
# overlap (MINIMP_CLUSTER_LOCKED=1: the caller holds it). The point at
# MAXIF_SIZE and SIZE_MAXIF, if in both sweeps, is measured once.
# Needs root and the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi bcast_mpich bcast_gloo
lock=/tmp/minimp-cluster.lock
if [ -z "${MINIMP_CLUSTER_LOCKED:-}" ]; then
  echo "waiting for $lock" >&2
  export MINIMP_CLUSTER_LOCKED=1
  exec flock "$lock" sh "$0" "$@"
fi
b=${1:-build}
n=${2:-16}
pat=${3:-rootearly}
iters=${4:-6}
maxifs=${MAXIFS:-"0 1 2 4 8 16"}
msize=${MAXIF_SIZE:-1048576}
sizes=${SIZES:-"65536 262144 1048576 4194304"}
sk=${SIZE_MAXIF:-16}
algs=${ALGS:-"binomial,pipeline,scatter_ring,symmetric,arrival_b,arrival_nb,auto"}
out=${OUT:-results/arrival_sweep}
csv="$out/sweep-$pat.csv"
mkdir -p "$out"
hosts=$(i=0; while [ $i -lt "$n" ]; do printf 'h%d,' $i; i=$((i + 1)); done)
hosts=${hosts%,}
failed=0
log() { echo "[$(date +%T)] $*" >&2; }
# K x T(SIZE) in whole microseconds.
us() { awk -v k="$1" -v m="$2" 'BEGIN { printf "%.0f", k * m * 8 / 100e6 * 1e6 }'; }

trap '"$here/../netcluster" down >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
log "cluster: $n hosts at 100mbit"
"$here/../netcluster" up "$n" 100mbit >/dev/null
echo "lib,alg,pattern,p,size,maxif_us,avg_us,max_us" > "$csv"

# SIZE "US ..." TAG: the anchors at each MAX_IF, then libminimp at all of
# them in one minimprun; appends the rows, keeps the raw outputs as TAG.*.
# (sh has no local variables: mlist, so as not to overwrite the caller's
# list.)
points() {
  size=$1 mlist=$2 raw="$out/$pat-$3" before=$(wc -l < "$csv")
  : > "$raw.anchors"
  for m in $mlist; do
    log "$3: anchors, $size B, MAX_IF $m us"
    "$anchors/run_bcast.sh" "$n" "$size" "$iters" "$m" "$pat" 2>&1 |
      anchors_check "run_bcast.sh, $size B, MAX_IF $m us" 3 |
      tee -a "$raw.anchors" >&2
  done
  # Only complete rows: a failed anchor prints its error after the colon.
  awk -v pat="$pat" '$2 ~ /^p=/ && $4 == pat ":" && NF == 7 && $7 + 0 > 0 {
      sub("p=", "", $2); sub("maxif_us=", "", $3)
      print $1 "," $1 "," pat "," $2 "," $5 "," $3 "," $6 "," $7 }' \
    "$raw.anchors" >> "$csv"
  log "$3: libminimp $algs, $size B, MAX_IF $mlist us"
  rm -f "$raw.csv"
  ip netns exec h0 "$b/launcher/minimprun" --agent "ip netns exec" \
    --host "$hosts" --iface eth0 --timeout 7200 "$b/tests/bench/minimp-bench" \
    bcast --method arrival --pattern "$pat" --algs "$algs" --sizes "$size" \
    --maxif "$(echo $mlist | tr ' ' ,)" --iters "$iters" --csv "$raw.csv" \
    >&2 2>"$raw.err" || { log "$3: minimprun failed, see $raw.err"; failed=1; }
  # minimp-bench's CSV starts with a '#' line (version, commit, date,
  # host) and the column names.
  [ -f "$raw.csv" ] && awk -F, '/^#/ { next } ++n > 1 {
      print "libminimp," $2 "," $1 "," $3 "," $4 "," $5 "," $8 "," $9 }' \
    "$raw.csv" >> "$csv"
  want=$(($(echo $mlist | wc -w) * ($(echo "$algs" | tr , ' ' | wc -w) + 3)))
  got=$(($(wc -l < "$csv") - before))
  [ "$got" -ge "$want" ] || { log "$3: $got of $want rows"; failed=1; }
}

list=
for k in $maxifs; do list="$list $(us "$k" "$msize")"; done
points "$msize" "$list" maxif
for s in $sizes; do
  m=$(us "$sk" "$s")
  if [ "$s" = "$msize" ] && echo " $list " | grep -q " $m "; then
    log "size $s: measured in the MAX_IF sweep"
    continue
  fi
  points "$s" "$m" "size-$s"
done
${PYTHON:-python3} "$here/plot_arrival_csv.py" "$csv" "$out/sweep-$pat"
log "done: $csv, $out/sweep-$pat-maxif.svg, $out/sweep-$pat-size.svg"
anchors_finish || failed=1
exit "$failed"
