#!/bin/sh
# The OSU micro-benchmarks 5.3, unmodified, on libminimp-mpi beside Open
# MPI, in alternating rounds; medians for docs/performance.md ("The OSU
# micro-benchmarks").
#   tests/bench/run_osu.sh BUILD_DIR build
#     only builds OSU for both libraries (in $OSU_BUILD), so that a
#     measured run does not build.
#   tests/bench/run_osu.sh BUILD_DIR onehost [REPEATS]
#     osu_latency (8 B) on libminimp-mpi beside minimp-bench pingpong in
#     the same round, with shared memory and over TCP loopback
#     (MINIMP_SHM=off), and Open MPI's osu_latency (its defaults, and
#     forced onto TCP). Rows in $OUT/onehost.csv (row,rep,value).
#   tests/bench/run_osu.sh BUILD_DIR cluster [REPEATS] [N] [RATE] [BENCHES]
#     osu_bcast and osu_allreduce (BENCHES) from 1 KiB to 1 MiB on N
#     emulated hosts (tests/netcluster, default 16 at 100mbit), each
#     library's build of the same sources on the same cluster. BENCHES
#     may name any of OSU_ALL below, or be "all": the collectives and
#     osu_multi_lat run on the N hosts, osu_latency, osu_bw and osu_bibw
#     (two processes by definition) on the first two. OSU_ARGS are the
#     collectives' options (default -m 1024:1048576 -i 200 -x 20),
#     OSU_PT2PT_ARGS the point-to-point ones (-i and -x only; default
#     none), OSU_TIMEOUT the seconds one program may take (1200). Each
#     program's completion is reported per library; the script fails if
#     one did not complete. Rows in $OUT/cluster.csv.
# OSU_SRC names the sources (default ../shared/peers beside the tree);
# both builds go to $OSU_BUILD (default $OUT, itself by default
# results/osu) once. Open MPI is the
# system's (mpicc.openmpi); the cluster runs reach its hosts through the
# anchors' nsrsh, found through MINIMP_ANCHORS (tests/bench/anchors.sh).
# Needs root for the cluster; honours NETCLUSTER_PREFIX and
# NETCLUSTER_SWITCH.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/anchors.sh"
anchors_init
b=$(cd "${1:-build}" && pwd)
mode=${2:-onehost}
reps=${3:-5}
osu=${OSU_SRC:-$here/../../../shared/peers/osu-micro-benchmarks-5.3}
[ -d "$osu" ] || osu=$here/../../../../shared/peers/osu-micro-benchmarks-5.3
out=$(mkdir -p "${OUT:-results/osu}" && cd "${OUT:-results/osu}" && pwd)
run="$b/launcher/minimprun"
bld=$(mkdir -p "${OSU_BUILD:-$out}" && cd "${OSU_BUILD:-$out}" && pwd)

# Builds OSU in $out/$1 with C compiler $2 and C++ driver $3.
build_osu() {
  [ -x "$bld/$1/mpi/collective/osu_bcast" ] && return 0
  rm -rf "${bld:?}/$1"
  cp -r "$osu" "$bld/$1"
  (cd "$bld/$1" && touch aclocal.m4 && sleep 1 && touch configure &&
    find . -name Makefile.in -exec touch {} + && sleep 1 &&
    ./configure CC="$2" CXX="$3" >configure.log 2>&1 &&
    make -j2 >make.log 2>&1) || { echo "run_osu: building $1 failed" >&2; exit 1; }
}
build_osu minimp "$b/mpi/minimpicc" "$b/mpi/minimpicc"
build_osu openmpi mpicc.openmpi mpicxx.openmpi
[ "$mode" = build ] && exit 0
M=$bld/minimp/mpi
O=$bld/openmpi/mpi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# The value of OSU's row for size $1 (column 2) in the output on stdin.
row() { awk -v s="$1" '$1 == s {print $2; exit}'; }

median() { # label file: medians per key (column 1) of column 2
  python3 - "$@" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    k, v = line.split()[:2]
    rows.setdefault(k, []).append(float(v))
for k, v in rows.items():
    print("%-34s %10.2f  (n=%d: %s)" % (k, statistics.median(v), len(v),
          " ".join("%.2f" % x for x in v)))
PY
}

if [ "$mode" = onehost ]; then
  res="$out/onehost.txt"
  : >"$res"
  csv="$out/onehost.csv"
  echo "row,rep,value" >"$csv"
  # One measurement of round $r: row name $1, value $2.
  put() { echo "$1 $2" >>"$res" && echo "$1,$r,$2" >>"$csv"; }
  r=1
  while [ "$r" -le "$reps" ]; do
    echo "round $r of $reps" >&2
    # Both libminimp rows bind each rank to a core, as mpirun does by
    # default for two processes, so that both libraries' ranks are placed
    # alike (docs/performance.md, the OSU section).
    for shm in on off; do
      e="MINIMP_SHM=$shm"
      v=$(env $e "$run" -n 2 --bind-to core "$b/tests/bench/minimp-bench" \
        pingpong --sizes 8 | awk '$1 == 8 {print $2}')
      put "minimp-bench_pingpong_shm=$shm" "$v"
      v=$(env $e "$run" -n 2 --bind-to core "$M/pt2pt/osu_latency" | row 8)
      put "osu_latency_libminimp-mpi_shm=$shm" "$v"
    done
    v=$(mpirun.openmpi --allow-run-as-root -np 2 "$O/pt2pt/osu_latency" | row 8)
    put "osu_latency_openmpi_default" "$v"
    v=$(mpirun.openmpi --allow-run-as-root -np 2 --mca btl tcp,self \
      "$O/pt2pt/osu_latency" | row 8)
    put "osu_latency_openmpi_tcp" "$v"
    r=$((r + 1))
  done
  echo "8-byte latency, us (half round trip), medians over $reps rounds:"
  median "$res"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

n=${4:-16}
rate=${5:-100mbit}
benches=${6:-"osu_bcast osu_allreduce"}
# Every program of OSU 5.3 the layer is checked with (5.3 has no
# osu_iallreduce: that came with 5.4).
OSU_ALL="osu_latency osu_bw osu_bibw osu_multi_lat osu_bcast osu_allgather
 osu_allgatherv osu_allreduce osu_reduce osu_reduce_scatter osu_gather
 osu_scatter osu_alltoall osu_barrier osu_ibcast"
[ "$benches" = all ] && benches=$OSU_ALL
for bench in $benches; do
  case " $(echo $OSU_ALL) " in
  *" $bench "*) ;;
  *) echo "run_osu: $bench is not one of: $(echo $OSU_ALL)" >&2; exit 2 ;;
  esac
done
tmo=${OSU_TIMEOUT:-1200}
pfx=${NETCLUSTER_PREFIX:-h}
"$here/../netcluster" up "$n" "$rate" >/dev/null
trap '"$here/../netcluster" down >/dev/null' EXIT
hosts=$(i=0; while [ $i -lt "$n" ]; do printf '%s%d,' "$pfx" $i; i=$((i + 1)); done)
hosts=${hosts%,}
hf=$(mktemp)
i=0; while [ $i -lt "$n" ]; do echo "$pfx$i slots=1" >>"$hf"; i=$((i + 1)); done
ompi="mpirun.openmpi --allow-run-as-root --hostfile $hf --mca plm_rsh_agent $anchors/nsrsh --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --mca mpi_yield_when_idle 1"
cargs=${OSU_ARGS:-"-m 1024:1048576 -i 200 -x 20"}
pargs=${OSU_PT2PT_ARGS:-}
csv="$out/cluster.csv"
done_txt="$out/cluster-completion.txt"
echo "impl,bench,rep,size,value" >"$csv"
: >"$done_txt"
r=1
while [ "$r" -le "$reps" ]; do
  echo "round $r of $reps" >&2
  for bench in $benches; do
    # Where it is, its options, and on how many hosts it runs.
    case $bench in
    osu_latency | osu_bw | osu_bibw) dir=pt2pt args=$pargs np=2 ;;
    osu_multi_lat) dir=pt2pt args=$pargs np=$n ;;
    *) dir=collective args=$cargs np=$n ;;
    esac
    hl=$(echo "$hosts" | cut -d, -f1-"$np")
    # Alternate which library goes first.
    for impl in $(if [ $((r % 2)) = 1 ]; then echo openmpi minimp; else echo minimp openmpi; fi); do
      echo "  $bench $impl" >&2
      err="$out/last-$impl-$bench.err"
      if [ "$impl" = openmpi ]; then
        if o=$(timeout "$tmo" ip netns exec "${pfx}0" unshare --uts sh -c \
          "hostname ${pfx}0; $ompi -np $np $O/$dir/$bench $args" \
          </dev/null 2>"$err"); then rc=0; else rc=$?; fi
      else
        if o=$(ip netns exec "${pfx}0" "$run" --agent "ip netns exec" \
          --host "$hl" --iface eth0 --timeout "$tmo" \
          "$M/$dir/$bench" $args </dev/null 2>"$err"); then rc=0; else rc=$?; fi
      fi
      # Rows: size and value; osu_barrier's one row has no size (0).
      rows=$(echo "$o" | awk -v i="$impl" -v b="$bench" -v r="$r" '
        $1 ~ /^[0-9]+$/ && NF >= 2 {print i "," b "," r "," $1 "," $2}
        b == "osu_barrier" && NF == 1 && $1 ~ /^[0-9.]+$/ {print i "," b "," r ",0," $1}')
      [ -z "$rows" ] || echo "$rows" >>"$csv"
      echo "$bench $impl $r rc=$rc rows=$(echo "$rows" | grep -c . || true)" >>"$done_txt"
    done
  done
  r=$((r + 1))
done
rm -f "$hf"
echo "Completion on $n hosts (rounds that exited 0 with OSU's rows, of all):"
failed=0
for bench in $benches; do
  for impl in minimp openmpi; do
    ok=$(awk -v b="$bench" -v i="$impl" '$1 == b && $2 == i && $4 == "rc=0" && $5 != "rows=0"' "$done_txt" | grep -c . || true)
    all=$(awk -v b="$bench" -v i="$impl" '$1 == b && $2 == i' "$done_txt" | grep -c . || true)
    [ "$ok" = "$all" ] || failed=1
    printf '  %-20s %-8s %s/%s\n' "$bench" "$impl" "$ok" "$all"
  done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for bench in sorted({r["bench"] for r in rows}):
    what = "MB/s" if bench in ("osu_bw", "osu_bibw") else "avg us per call"
    print("\n%s (%s, medians over rounds)" % (bench, what))
    print("%10s %14s %14s %8s" % ("size", "libminimp-mpi", "openmpi", "ratio"))
    sizes = sorted({int(r["size"]) for r in rows if r["bench"] == bench})
    for s in sizes:
        med = {}
        for impl in ("minimp", "openmpi"):
            v = [float(r["value"]) for r in rows if r["bench"] == bench
                 and r["impl"] == impl and int(r["size"]) == s]
            med[impl] = statistics.median(v) if v else float("nan")
        print("%10d %14.1f %14.1f %8.2f" % (s, med["minimp"], med["openmpi"],
              med["minimp"] / med["openmpi"]))
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
