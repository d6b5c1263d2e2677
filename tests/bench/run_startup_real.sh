#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Start-up of 64 ranks on 8 emulated hosts through each path a cluster
# offers (docs/performance.md, "Start-up through ssh, Slurm and PMIx"),
# beside Open MPI's mpirun through the same ssh and the same Slurm:
#
#   mmp_ssh         minimprun --hostfile (8 hosts x 8 slots), over ssh
#   ompi_ssh        mpirun.openmpi --hostfile, over the same ssh
#   mmp_salloc      salloc -N 8 --ntasks-per-node=8 minimprun (srun agent)
#   ompi_salloc     salloc -N 8 --ntasks-per-node=8 mpirun.openmpi
#   mmp_srun_pmix   srun --mpi=pmix -N 8 --ntasks-per-node=8, no minimprun
#   mmp_srun_pmi2   srun --mpi=pmi2 -N 8 --ntasks-per-node=8, no minimprun
#   ompi_srun_pmix  srun --mpi=pmix -N 8 --ntasks-per-node=8 of Open MPI
#
# and what Slurm costs before any library of ranks runs, for the breakdown:
#
#   true_srun_none  srun --mpi=none ... /bin/true
#   true_srun_pmi2  srun --mpi=pmi2 ... /bin/true
#   true_srun_pmix  srun --mpi=pmix ... /bin/true
#   pmix_srun_init  srun --mpi=pmix ... of tests/bench/pmix_hello.c:
#                   PMIx_Init, a line, PMIx_Finalize
#
# Each is examples/hello (tests/bench/mpi_hello.c for Open MPI): every rank
# prints a line and sends one message to rank 0. The wall time of the
# whole command run on host 0, cases alternating in every round; medians
# over ROUNDS (default 7). With OUT set, every run is also a row of
# $OUT/startup.csv (case,round,seconds), which `make report` reads. Run it
# under benchlock:
#
#   benchlock sh tests/bench/run_startup_real.sh build [ROUNDS]
#
# It brings tests/realcluster up with 8 hosts (unshaped links would be
# no different at this size: 100 Mbit/s) and takes it down at the end.
set -eu

BUILD=$(cd "${1:?usage: $0 BUILD [ROUNDS]}" && pwd)
ROUNDS=${2:-7}
HERE=$(cd "$(dirname "$0")/.." && pwd)
RC="$HERE/realcluster"
D=$(mktemp -d /tmp/mmp-startup-XXXXXX)
trap '"$RC" down; rm -rf "$D"' EXIT INT TERM

"$RC" up 8 100mbit
mpicc -O2 -o "$D/mpi_hello" "$HERE/bench/mpi_hello.c"
# shellcheck disable=SC2046
cc -O2 -o "$D/pmix_hello" "$HERE/bench/pmix_hello.c" $(pkg-config --cflags --libs pmix)
P=${NETCLUSTER_PREFIX:-h}
: >"$D/hosts"
i=0
while [ $i -lt 8 ]; do
  echo "$P$i slots=8" >>"$D/hosts"
  i=$((i + 1))
done
HELLO="$BUILD/examples/hello"
MMPRUN="$BUILD/launcher/minimprun"
OMPI="mpirun.openmpi --allow-run-as-root"
S8="-N 8 --ntasks-per-node=8"

# S8 and OMPI are split into words on purpose.
# shellcheck disable=SC2086
run_case() { # NAME
  name=$1
  case $1 in
    mmp_ssh) set -- "$MMPRUN" --hostfile "$D/hosts" "$HELLO" ;;
    ompi_ssh) set -- $OMPI --hostfile "$D/hosts" -np 64 "$D/mpi_hello" ;;
    mmp_salloc) set -- salloc $S8 "$MMPRUN" "$HELLO" ;;
    ompi_salloc) set -- salloc $S8 $OMPI "$D/mpi_hello" ;;
    mmp_srun_pmix) set -- srun --mpi=pmix $S8 "$HELLO" ;;
    mmp_srun_pmi2) set -- srun --mpi=pmi2 $S8 "$HELLO" ;;
    ompi_srun_pmix) set -- srun --mpi=pmix $S8 "$D/mpi_hello" ;;
    true_srun_*) set -- srun --mpi="${1#true_srun_}" $S8 /bin/true ;;
    pmix_srun_init) set -- srun --mpi=pmix $S8 "$D/pmix_hello" ;;
  esac
  t0=$(date +%s.%N)
  "$RC" exec "${P}0" "$@" >"$D/out" 2>"$D/err" || {
    echo "$name failed:" >&2
    cat "$D/err" >&2
    exit 1
  }
  t1=$(date +%s.%N)
  n=$(grep -c '^hello from rank' "$D/out" || true)
  case $name in true_*) want=0 ;; *) want=64 ;; esac
  [ "$n" = "$want" ] || { echo "$name: $n ranks said hello" >&2; exit 1; }
  echo "$name $t0 $t1" | awk '{printf "%s %.3f\n", $1, $3 - $2}'
}

CASES="mmp_ssh ompi_ssh mmp_salloc ompi_salloc mmp_srun_pmix mmp_srun_pmi2 ompi_srun_pmix
true_srun_none true_srun_pmi2 true_srun_pmix pmix_srun_init"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${OUT:-}" ] || { mkdir -p "$OUT" && echo case,round,seconds >"$OUT/startup.csv"; }
r=0
while [ $r -lt "$ROUNDS" ]; do
  for c in $CASES; do
    run_case "$c" >"$D/one"
    cat "$D/one" >>"$D/times"
    [ -z "${OUT:-}" ] || awk -v r=$((r + 1)) '{print $1 "," r "," $2}' "$D/one" >>"$OUT/startup.csv"
  done
  r=$((r + 1))
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in $CASES; do
  grep "^$c " "$D/times" | awk '{print $2}' | sort -n |
    awk -v c="$c" '{v[NR] = $1} END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%-15s median %.3f s  (min %.3f, max %.3f, %d runs)\n", c, m, v[1], v[NR], NR }'
done
