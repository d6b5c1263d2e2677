#!/bin/bash
# Paired rounds on the emulated cluster: each round runs the anchors'
# run_bcast.sh (Open MPI, MPICH and Gloo: per-node time after a barrier)
# and then every given libminimp variant with minimp-bench's barrier
# method; prints medians over the rounds and every round's value. Long
# runs (hundreds of broadcasts) and many rounds are what make
# small-message figures on 2 shared cores comparable.
#   tests/bench/run_paired.sh BUILD_DIR N SIZE ITERS ROUNDS LABEL:ENV:ALG...
# ENV is VAR=value[,VAR=value] or -. Example:
#   tests/bench/run_paired.sh build 16 1024 500 9 \
#     sleep:MINIMP_SPIN_YIELD=0:auto yield:-:auto
# Needs root, the cluster up (tests/netcluster up N 100mbit) and the
# anchors (MINIMP_ANCHORS: tests/bench/anchors.sh).
# METHOD=ol measures [de Supinski & Karonis 1999]'s max OL_i instead (minimp-bench --method ol,
# default gap), against Open MPI only, through mpi_ol_bench.c, which this
# script compiles into BUILD_DIR/tests with mpicc.openmpi.
set -eu
b=$1 n=$2 size=$3 iters=$4 rounds=$5
shift 5
method=${METHOD:-barrier}
case $method in barrier | ol) ;; *) echo "METHOD must be barrier or ol" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi bcast_mpich bcast_gloo
hosts=$(seq -s, -f 'h%g' 0 $((n - 1)))
out=$(mktemp)
hf=$(mktemp)
trap 'rm -f "$out" "$hf"' EXIT
seq -f 'h%g slots=1' 0 $((n - 1)) > "$hf"
olb=$(cd "$b" && pwd)/tests/mpi_ol_bench
if [ "$method" = ol ]; then
  mpicc.openmpi -O2 -o "$olb" "$here/mpi_ol_bench.c" -lm
fi
# Open MPI's max OL_i, with run_bcast.sh's options.
ompi_ol() {
  timeout 600 ip netns exec h0 unshare --uts sh -c "hostname h0; \
    mpirun.openmpi --allow-run-as-root -np $n --hostfile '$hf' \
    --mca plm_rsh_agent '$anchors/nsrsh' --mca btl tcp,self \
    --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
    --mca mpi_yield_when_idle 1 '$olb' $size $iters" 2>&1 |
    anchors_check "openmpi max OL_i, round $r" | awk -v s="$size" 'NF == 3 && $1 == s {print "openmpi", $3}'
}
for r in $(seq 1 "$rounds"); do
  if [ "$method" = ol ]; then
    ompi_ol >> "$out"
  else
    "$anchors/run_bcast.sh" "$n" "$size" "$iters" 2>/dev/null |
      anchors_check "run_bcast.sh, round $r" 3 | awk '$2 == "p='"$n"'" && NF == 7 {print $1, $6}' >> "$out"
  fi
  for spec in "$@"; do
    label=${spec%%:*} rest=${spec#*:}
    envs=${rest%%:*} alg=${rest#*:}
    [ "$envs" = "-" ] && envs="" || envs=$(echo "$envs" | tr , ' ')
    v=$(env $envs ip netns exec h0 "$b/launcher/minimprun" --agent "ip netns exec" \
        --host "$hosts" --iface eth0 --timeout 600 "$b/tests/bench/minimp-bench" bcast \
        --method "$method" --algs "$alg" --sizes "$size" --iters "$iters" 2>/dev/null |
        awk -v m="$method" '$1 == m {print (m == "ol" ? $7 : $6)}')
    echo "$label ${v:-nan}" >> "$out"
  done
  echo "round $r of $rounds" >&2
done
python3 - "$out" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    if v != "nan":
        vals.setdefault(k, []).append(float(v))
ref = statistics.median(vals["openmpi"]) if "openmpi" in vals else None
for k, v in vals.items():
    m = statistics.median(v)
    ratio = " (%.2f x Open MPI)" % (m / ref) if ref else ""
    print("%-14s median %9.1f us%s  rounds: %s" %
          (k, m, ratio, " ".join("%.0f" % x for x in v)))
PY
anchors_finish
