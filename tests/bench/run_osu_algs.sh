#!/bin/sh
# osu_bcast or osu_allreduce (OSU 5.3, unmodified) on N emulated hosts with
# each of libminimp's algorithms forced in turn (MINIMP_BCAST_ALG,
# MINIMP_ALLREDUCE_ALG; "auto" is AUTO), beside Open MPI's build of the
# same sources in every round; medians per size for docs/performance.md
# ("The OSU micro-benchmarks").
#   tests/bench/run_osu_algs.sh BUILD_DIR BENCH ALGS [REPEATS] [RANGE] [N] [RATE]
# ALGS is a space-separated list of algorithm settings (e.g.
# "auto knomial,radix=4 binary"), RANGE OSU's -m (default 1024:16384).
# Both OSU trees must have been built by run_osu.sh in $OUT (default
# results/osu); rows go to $OUT/algs-BENCH.csv. Needs root; honours
# NETCLUSTER_PREFIX and NETCLUSTER_SWITCH and MINIMP_ANCHORS as run_osu.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
b=$(cd "$1" && pwd)
bench=$2
algs=$3
reps=${4:-3}
range=${5:-1024:16384}
n=${6:-16}
rate=${7:-100mbit}
case $bench in
osu_bcast) var=MINIMP_BCAST_ALG ;;
osu_allreduce) var=MINIMP_ALLREDUCE_ALG ;;
*) echo "run_osu_algs: BENCH is osu_bcast or osu_allreduce" >&2; exit 2 ;;
esac
out=$(cd "${OUT:-results/osu}" && pwd)
M=$out/minimp/mpi/collective/$bench
O=$out/openmpi/mpi/collective/$bench
[ -x "$M" ] && [ -x "$O" ] || { echo "run_osu_algs: build OSU with run_osu.sh first" >&2; exit 1; }
pfx=${NETCLUSTER_PREFIX:-h}
"$here/../netcluster" up "$n" "$rate" >/dev/null
hf=$(mktemp)
trap '"$here/../netcluster" down >/dev/null; rm -f "$hf"' EXIT
hosts=$(i=0; while [ $i -lt "$n" ]; do printf '%s%d,' "$pfx" $i; i=$((i + 1)); done)
hosts=${hosts%,}
i=0; while [ $i -lt "$n" ]; do echo "$pfx$i slots=1" >>"$hf"; i=$((i + 1)); done
ompi="mpirun.openmpi --allow-run-as-root --hostfile $hf --mca plm_rsh_agent $anchors/nsrsh --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --mca mpi_yield_when_idle 1"
args="-m $range -i 200 -x 20"
csv=$out/algs-$bench.csv
echo "impl,bench,rep,size,value" >"$csv"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ "$r" -le "$reps" ]; do
  for impl in openmpi $algs; do
    if [ "$impl" = openmpi ]; then
      o=$(timeout 600 ip netns exec "${pfx}0" unshare --uts sh -c \
        "hostname ${pfx}0; $ompi -np $n $O $args" </dev/null 2>/dev/null) || true
    else
      o=$(env "$var=$impl" ip netns exec "${pfx}0" "$b/launcher/minimprun" \
        --agent "ip netns exec" --host "$hosts" --iface eth0 --timeout 600 \
        "$M" $args </dev/null) || true
    fi
    # The label has no commas: "knomial,radix=4" becomes "knomial;radix=4".
    echo "$o" | awk -v i="$(echo "$impl" | tr , ';')" -v b="$bench" -v r="$r" \
      '$1 ~ /^[0-9]+$/ && NF >= 2 {print i "," b "," r "," $1 "," $2}' >>"$csv"
  done
  r=$((r + 1))
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
impls = list(dict.fromkeys(r["impl"] for r in rows))
print("%8s" % "bytes" + "".join("%16s" % i for i in impls))
for s in sorted({int(r["size"]) for r in rows}):
    v = [[float(r["value"]) for r in rows if r["impl"] == i and int(r["size"]) == s] for i in impls]
    print("%8d" % s + "".join("%16.1f" % statistics.median(x) if x else "%16s" % "-" for x in v))
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
