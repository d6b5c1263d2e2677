#!/bin/bash
# Point-to-point benchmark beside the Open MPI anchor, in one run, on
# loopback. Prints both tables and a merged CSV for docs/performance.md.
# Like for like: the anchor forces Open MPI onto TCP, and libminimp runs
# with MINIMP_SHM=off; tests/bench/run_onehost.sh compares the defaults
# (shared memory on both sides).
#   tests/bench/run_pingpong.sh BUILD_DIR [SIZES] [REPEATS]
# The anchors come from MINIMP_ANCHORS (tests/bench/anchors.sh);
# MINIMP_ANCHORS=none measures libminimp alone and says so below the
# table. An anchor run that fails is named, its round has no openmpi rows,
# and the script exits 1 after the table.
set -euo pipefail
b=${1:-build}
sizes=${2:-"8 65536 4194304"}
reps=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init optional
anchors_bin pp_ompi
out=${OUT:-results/pingpong}
mkdir -p "$out"
csv="$out/pingpong.csv"
echo "impl,rep,size,half_rtt_us,stream_MBps" > "$csv"
commas=$(echo "$sizes" | tr ' ' ',')
missing=
failed=0
loud() { printf '\n*** %s ***\n\n' "$*" >&2; }
[ -n "$anchors" ] || missing="MINIMP_ANCHORS=none: the table has no openmpi rows"
i=1
while [ "$i" -le "$reps" ]; do
  # Alternate the two so that drift in the machine hits both alike.
  if [ -n "$anchors" ]; then
    if "$anchors/run_pingpong.sh" "$sizes" > "$out/openmpi-$i.txt" 2> "$out/openmpi-$i.err"; then
      anchors_check "run_pingpong.sh, round $i" "$(anchors_count $sizes)" \
        < "$out/openmpi-$i.txt" |
        awk -v r="$i" 'NF==3 {print "openmpi," r "," $1 "," $2 "," $3}' >> "$csv"
    else
      missing="the Open MPI anchor failed in round $i (see $out/openmpi-$i.err)"
      loud "$missing; that round has no openmpi rows"
      tail -5 "$out/openmpi-$i.err" >&2 || true
      failed=1
    fi
  fi
  # libminimp as shipped, and with polling turned off (pure sleep).
  for v in default sleep; do
    if [ $v = sleep ]; then spin=0; else spin=; fi
    env MINIMP_SHM=off ${spin:+MINIMP_SPIN_US=$spin} "$b/launcher/minimprun" -n 2 \
      "$b/tests/bench/minimp-bench" pingpong --sizes "$commas" |
      awk -v r="$i" -v s="$v" 'NF==3 && $1 ~ /^[0-9]+$/ {print "minimp_" s "," r "," $1 "," $2 "," $3}' >> "$csv"
  done
  i=$((i + 1))
done
# Medians per implementation and size.
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(r["impl"], int(r["size"])) for r in rows})
print("%-14s %10s %14s %14s %5s" % ("impl", "size", "half_rtt_us", "stream_MBps", "n"))
for impl, size in keys:
    sel = [r for r in rows if r["impl"] == impl and int(r["size"]) == size]
    lat = statistics.median(float(r["half_rtt_us"]) for r in sel)
    bw = statistics.median(float(r["stream_MBps"]) for r in sel)
    print("%-14s %10d %14.2f %14.1f %5d" % (impl, size, lat, bw, len(sel)))
PY
if [ -n "$missing" ]; then
  echo
  echo "NOTE: $missing."
fi
anchors_finish || failed=1
exit "$failed"
