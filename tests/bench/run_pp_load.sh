#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The 8-byte ping-pong on one host, idle and then with the CPUs loaded
# (stress-ng --cpu 2 beside the job), in rounds that alternate Open MPI
# with its defaults and libminimp over shared memory and over TCP
# loopback; with a second build directory, that build's two variants too
# (a before/after comparison in the same rounds). Prints the half round
# trip's median per load and variant, over ROUNDS rounds.
#   tests/bench/run_pp_load.sh BUILD_DIR [ROUNDS [OTHER_BUILD_DIR]]
# Run it under flock /tmp/minimp-bench.lock, at normal priority. Needs the
# anchors (MINIMP_ANCHORS: tests/bench/anchors.sh).
set -eu
b=${1:-build}
rounds=${2:-5}
other=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin pp_ompi
out=$(mktemp)
stress=
trap '[ -n "$stress" ] && kill $stress 2>/dev/null; rm -f "$out"' EXIT
for load in idle loaded; do
  if [ "$load" = loaded ]; then
    stress-ng --cpu 2 --timeout 0 >/dev/null 2>&1 &
    stress=$!
    sleep 1
  fi
  i=1
  while [ "$i" -le "$rounds" ]; do
    timeout 60 mpirun.openmpi --allow-run-as-root -np 2 "$abin/pp_ompi" 8 4000 \
      2>/dev/null | anchors_check "openmpi pingpong, $load, round $i" | awk -v l=$load 'NF==3 {print l, "openmpi", $2}' >> "$out"
    for d in "$b" $other; do
      n=this
      [ "$d" = "$b" ] || n=other
      for v in on off; do
        MINIMP_SHM=$v timeout 60 "$d/launcher/minimprun" -n 2 \
          "$d/tests/bench/minimp-bench" pingpong --sizes 8 2>/dev/null |
          awk -v l=$load -v n="$n" -v v=$v \
            'NF==3 && $1 ~ /^[0-9]+$/ {print l, n "_shm_" v, $2}' >> "$out"
      done
    done
    i=$((i + 1))
  done
  if [ -n "$stress" ]; then
    kill $stress
    stress=
  fi
done
python3 - "$out" <<'PY'
import collections, statistics, sys
d = collections.OrderedDict()
for line in open(sys.argv[1]):
    load, impl, v = line.split()
    d.setdefault((load, impl), []).append(float(v))
print("%-7s %-16s %10s %5s" % ("load", "impl", "median_us", "n"))
for (load, impl), v in d.items():
    print("%-7s %-16s %10.2f %5d" % (load, impl, statistics.median(v), len(v)))
PY
anchors_finish
