#!/bin/sh
# The measurement behind MINIMP_EAGER_LIMIT: eager against rendezvous
# ping-pong and streaming over sizes, 2 ranks on loopback, medians.
#   tests/bench/run_threshold.sh BUILD_DIR [REPEATS]
# Over TCP loopback, where the limit was measured; SHM=on (or ring) runs
# the same through shared memory.
set -eu
b=${1:-build}
shm=${SHM:-off}
reps=${2:-3}
sizes=1k,4k,16k,32k,48k,60k,63k,64k,96k,128k,256k,1m
out=${OUT:-results/threshold}
mkdir -p "$out"
csv="$out/threshold.csv"
echo "mode,rep,size,half_rtt_us,stream_MBps" > "$csv"
i=1
while [ "$i" -le "$reps" ]; do
  for m in eager rndv; do
    # A large eager buffer so that eager is never refused for lack of credit.
    MINIMP_SHM=$shm MINIMP_EAGER_BUFFER=64m "$b/launcher/minimprun" -n 2 \
      "$b/tests/bench/minimp-bench" pingpong --mode $m --sizes $sizes |
      awk -v m=$m -v r=$i '$1 ~ /^[0-9]+$/ {print m "," r "," $1 "," $2 "," $3}' >> "$csv"
  done
  i=$((i + 1))
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sizes = sorted({int(r["size"]) for r in rows})
def med(mode, size, col):
    return statistics.median(float(r[col]) for r in rows
                             if r["mode"] == mode and int(r["size"]) == size)
print("| size | eager half RTT (us) | rndv half RTT (us) | eager MB/s | rndv MB/s |")
print("|---|---|---|---|---|")
for s in sizes:
    print("| %d | %.1f | %.1f | %.0f | %.0f |" % (s, med("eager", s, "half_rtt_us"),
          med("rndv", s, "half_rtt_us"), med("eager", s, "stream_MBps"),
          med("rndv", s, "stream_MBps")))
PY
