#!/bin/sh
# AUTO against every fixed algorithm under arrival patterns, on the
# emulated cluster, idle and loaded, with Open MPI and Gloo in the same
# run: for each p, load, pattern and size, the anchors
# (../shared/anchors: mpi_bcast_bench and gloo_bcast_bench, the same
# sleeps), then minimp-bench bcast --method arrival. MAX_IF is 16 T(m),
# T(m) the link time m 8 / 95 Mbit/s; "balanced" sleeps nothing. Loaded:
# stress-ng --cpu 2 beside the job. Rows go to $OUT/auto.csv; the table
# of AUTO against the best fixed algorithm is printed at the end
# (tests/bench/auto_table.py).
#   tests/bench/run_auto_patterns.sh BUILD_DIR [PS] [SIZES] [PATTERNS] [LOADS] [ITERS]
# Needs root, the anchors (MINIMP_ANCHORS: tests/bench/anchors.sh) and
# stress-ng.
set -eu
b=${1:-build}
ps=${2:-"8 16"}
sizes=${3:-"65536 262144 1048576 4194304"}
patterns=${4:-"balanced rootearly late20 all"}
loads=${5:-"idle loaded"}
iters=${6:-5}
algs=${ALGS:-auto,binomial,pipeline,scatter_ring,scatter_rd,symmetric,arrival_b,arrival_nb}
here=$(cd "$(dirname "$0")" && pwd)
# NETCLUSTER_PREFIX (and _SWITCH, _SUBNET) keep this cluster apart from
# another one on the same machine (tests/netcluster).
pfx=${NETCLUSTER_PREFIX:-h}
. "$here/anchors.sh"
anchors_init
anchors_bin bcast_ompi bcast_gloo
out=${OUT:-results/auto_patterns}
mkdir -p "$out"
csv="$out/auto.csv"
[ -f "$csv" ] || echo "pattern,load,p,impl,alg,size,maxif_us,avg_us,max_us" > "$csv"
stress=
trap '[ -n "$stress" ] && kill $stress 2>/dev/null; "$here/../netcluster" down >/dev/null 2>&1 || true' EXIT

for p in $ps; do
  "$here/../netcluster" up "$p" 100mbit >/dev/null
  hosts=$(i=0; while [ $i -lt "$p" ]; do printf '%s%d,' "$pfx" $i; i=$((i + 1)); done)
  hosts=${hosts%,}
  hf=$(mktemp)
  i=0; while [ $i -lt "$p" ]; do echo "$pfx$i slots=1" >> "$hf"; i=$((i + 1)); done
  for load in $loads; do
    if [ "$load" = loaded ]; then
      stress-ng --cpu 2 --timeout 0 >/dev/null 2>&1 &
      stress=$!
    fi
    for pat in $patterns; do
      for size in $sizes; do
        maxif=$(awk -v m="$size" -v pat="$pat" \
          'BEGIN { printf "%.0f", pat == "balanced" ? 0 : 16 * m * 8 / 95 }')
        apat=$pat; [ "$pat" = balanced ] && apat=all
        echo "p=$p $load $pat $size: anchors" >&2
        o=$(timeout 1200 ip netns exec ${pfx}0 unshare --uts sh -c "hostname ${pfx}0; \
          mpirun.openmpi --allow-run-as-root -np $p --hostfile $hf \
          --mca plm_rsh_agent $anchors/nsrsh --mca btl tcp,self \
          --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
          --mca mpi_yield_when_idle 1 $abin/bcast_ompi $size $iters $maxif $apat" \
          2>/dev/null | tail -1)
        echo "$o" | anchors_check "openmpi, p=$p $load $pat $size" |
          awk -v pat="$pat" -v l="$load" -v p="$p" -v mx="$maxif" \
          'NF == 3 { print pat "," l "," p ",openmpi,-," $1 "," mx "," $2 "," $3 }' >> "$csv"
        d=$(mktemp -d); g=$(mktemp); i=0; gp=
        while [ $i -lt "$p" ]; do
          timeout 1200 ip netns exec $pfx$i "$abin/bcast_gloo" $i "$p" "$d" eth0 \
            "$size" "$iters" "$maxif" "$apat" >> "$g" 2>/dev/null &
          gp="$gp $!"
          i=$((i + 1))
        done
        # Only Gloo's ranks: a bare wait would wait for stress-ng too.
        wait $gp
        anchors_check "gloo, p=$p $load $pat $size" < "$g" |
          awk -v pat="$pat" -v l="$load" -v p="$p" -v mx="$maxif" \
          'NF == 3 { print pat "," l "," p ",gloo,-," $1 "," mx "," $2 "," $3 }' >> "$csv"
        rm -rf "$d" "$g"
        echo "p=$p $load $pat $size: libminimp" >&2
        ip netns exec ${pfx}0 "$b/launcher/minimprun" --agent "ip netns exec" \
          --host "$hosts" --iface eth0 --timeout 3000 "$b/tests/bench/minimp-bench" \
          bcast --method arrival --pattern "$pat" --algs "$algs" \
          --sizes "$size" --maxif "$maxif" --iters "$iters" \
          --raw "$out/raw-$pat-$load-$p-$size.csv" 2>/dev/null |
          awk -F, -v l="$load" 'NR > 1 && NF >= 9 {
            print $1 "," l "," $3 ",libminimp," $2 "," $4 "," $5 "," $8 "," $9 }' >> "$csv"
      done
    done
    if [ -n "$stress" ]; then
      kill "$stress" 2>/dev/null || true
      wait "$stress" 2>/dev/null || true
      stress=
    fi
  done
  rm -f "$hf"
  "$here/../netcluster" down >/dev/null
done
python3 "$here/auto_table.py" "$csv"
anchors_finish
