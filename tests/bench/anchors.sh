# SPDX-License-Identifier: MIT
#
# Sourced by the benchmark scripts that measure the anchors (Open MPI,
# MPICH, Gloo) beside libminimp. They find them through two variables
# (docs/testing.md, "Benchmarks beside the anchors"):
#   MINIMP_ANCHORS  the anchors' folder: the one with build.sh,
#                   run_bcast.sh and nsrsh (../shared/anchors in the
#                   project's workspace). Required; "none" runs a script
#                   that can do without the anchors with libminimp alone.
#   ANCHORS         where the anchors' build.sh put their programs; as
#                   for build.sh itself, /tmp/minimp-anchors if unset.
# A variable that is unset or wrong stops the script, with a message
# naming it and exit status 2, before it starts anything. An anchor run
# that gives fewer rows than it should is named on stderr, and
# anchors_finish then fails the script (status 1) after its tables, so
# that no row goes missing silently.
#
#   here=$(cd "$(dirname "$0")" && pwd)
#   . "$here/anchors.sh"
#   anchors_init [optional]       sets $anchors (the folder, "" for none)
#                                 and $abin (the programs)
#   anchors_bin bcast_ompi ...    each program must be built in $abin
#   ... | anchors_check WHAT [N]  passes its input on; fewer than N rows
#                                 (lines ending in two numbers) is a miss
#   anchors_count $sizes          how many words (rows to expect)
#   anchors_finish                at the end: 1 if anything was missed
#   anchors_hosts N               "P0,P1,...": the cluster's first N hosts
#   anchors_bcast N SIZES ITERS [MAXIF [PATTERN]]
#   anchors_s2p N L SOURCES ITERS
#                                 the anchors' run_bcast.sh and run_s2p.sh,
#                                 on the hosts of this cluster
#
# The emulated cluster's hosts are named by NETCLUSTER_PREFIX (P above, h
# by default) as tests/netcluster names them, so that two clusters on one
# machine stay apart; the anchors' own run_*.sh know only h0... The
# broadcast anchors are those of ANCHOR_LIBS ("openmpi mpich gloo" by
# default); anchors_libs says how many that is.

anchors_me=${0##*/}

anchors_fail() {
  echo "$anchors_me: $*" >&2
  exit 2
}

anchors_init() {
  abin=${ANCHORS:-/tmp/minimp-anchors}
  ANCHORS=$abin
  export ANCHORS
  case ${MINIMP_ANCHORS-} in
  "")
    or=
    [ "${1-}" = optional ] && or=", or to 'none' to measure libminimp alone"
    anchors_fail "MINIMP_ANCHORS is not set: set it to the anchors' folder" \
      "(the one with build.sh, run_bcast.sh and nsrsh)$or; docs/testing.md"
    ;;
  none)
    [ "${1-}" = optional ] ||
      anchors_fail "MINIMP_ANCHORS=none, but this script measures beside" \
        "the anchors and cannot run without them"
    anchors=
    echo "$anchors_me: MINIMP_ANCHORS=none: libminimp alone, no anchor rows" >&2
    ;;
  *)
    [ -d "$MINIMP_ANCHORS" ] ||
      anchors_fail "MINIMP_ANCHORS='$MINIMP_ANCHORS' is not a directory"
    for f in build.sh run_bcast.sh nsrsh; do
      [ -f "$MINIMP_ANCHORS/$f" ] ||
        anchors_fail "MINIMP_ANCHORS='$MINIMP_ANCHORS' is not the anchors'" \
          "folder: it has no $f"
    done
    anchors=$(cd "$MINIMP_ANCHORS" && pwd)
    ;;
  esac
  # Created by the first miss, in a pipeline's subshell.
  anchors_missed=${TMPDIR:-/tmp}/minimp-anchor-misses.$$
  rm -f "$anchors_missed"
}

# The programs this script runs, built by the anchors' build.sh (or, for
# the collectives', by tests/bench/build_coll_anchors.sh) into $abin.
anchors_bin() {
  [ -n "$anchors" ] || return 0
  for f in "$@"; do
    [ -x "$abin/$f" ] && continue
    case $f in
    coll_ompi | allreduce_gloo) how="sh tests/bench/build_coll_anchors.sh" ;;
    *) how="sh $anchors/build.sh" ;;
    esac
    anchors_fail "no anchor program $abin/$f (ANCHORS='$abin'): build it" \
      "with 'ANCHORS=$abin $how'"
  done
}

# A filter: passes its input on, and when fewer than N (default 1) of its
# lines are rows (ending in two numbers), names WHAT and the other lines
# on stderr and records the miss.
anchors_check() {
  awk -v what="$1" -v want="${2:-1}" -v missed="$anchors_missed" \
    -v me="$anchors_me" '
    { print }
    NF >= 2 && $(NF - 1) ~ /^[0-9.]+$/ && $NF ~ /^[0-9.]+$/ { rows++; next }
    NF > 0 { other = other "\n    " $0 }
    END {
      if (rows + 0 >= want + 0)
        exit 0
      printf "%s: anchor %s gave %d of %d rows%s\n", me, what, rows, want,
        other == "" ? " (no output)" : ":" other > "/dev/stderr"
      print what >> missed
    }'
}

# How many words: the rows to expect of an anchor run over a list.
anchors_count() {
  echo $#
}

# At the end of the script: says how many anchor runs missed rows and
# returns 1 if any did.
anchors_finish() {
  [ -f "${anchors_missed-}" ] || return 0
  n=$(wc -l < "$anchors_missed")
  rm -f "$anchors_missed"
  echo "$anchors_me: $n anchor run(s) gave fewer rows than asked for (named" \
    "above on stderr); their rows are missing from the tables" >&2
  return 1
}

anchors_pfx=${NETCLUSTER_PREFIX:-h}
anchor_libs=${ANCHOR_LIBS:-openmpi mpich gloo}

anchors_hosts() {
  a_i=0
  while [ "$a_i" -lt "$1" ]; do
    [ "$a_i" -gt 0 ] && printf ','
    printf '%s%d' "$anchors_pfx" "$a_i"
    a_i=$((a_i + 1))
  done
}

anchors_libs() {
  anchors_count $anchor_libs
}

# Sets $ompi to Open MPI's mpirun over the first N hosts, forced onto TCP
# on eth0, with the hostfile $anchors_hf (the caller removes it).
anchors_ompi() {
  anchors_hf=$(mktemp)
  a_i=0
  while [ "$a_i" -lt "$1" ]; do
    echo "$anchors_pfx$a_i slots=1" >> "$anchors_hf"
    a_i=$((a_i + 1))
  done
  ompi="mpirun.openmpi --allow-run-as-root -np $1 --hostfile $anchors_hf \
--mca plm_rsh_agent $anchors/nsrsh --mca btl tcp,self \
--mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
--mca mpi_yield_when_idle 1"
}

# CMD on the cluster's first host under its own host name, as nsrsh runs
# the others.
anchors_on0() {
  timeout 300 ip netns exec "${anchors_pfx}0" unshare --uts sh -c \
    "hostname ${anchors_pfx}0; $*" </dev/null 2>&1 | tail -1
}

# The lines run_bcast.sh prints: "LIB p=N maxif_us=MAXIF PATTERN: SIZE
# AVG_US MAX_US" for each size and library of ANCHOR_LIBS.
anchors_bcast() {
  a_n=$1 a_maxif=${4:-0} a_pat=${5:-all}
  anchors_ompi "$a_n"
  a_hfm=$(mktemp)
  cut -d' ' -f1 "$anchors_hf" > "$a_hfm"
  for a_s in $2; do
    for a_lib in $anchor_libs; do
      case $a_lib in
      openmpi) a_o=$(anchors_on0 "$ompi $abin/bcast_ompi $a_s $3 $a_maxif $a_pat") ;;
      mpich)
        a_o=$(anchors_on0 "mpiexec.mpich -launcher ssh -launcher-exec" \
          "$anchors/nsrsh -f $a_hfm -n $a_n -iface eth0" \
          "$abin/bcast_mpich $a_s $3 $a_maxif $a_pat")
        ;;
      gloo)
        a_d=$(mktemp -d) a_g=$(mktemp) a_i=0
        while [ "$a_i" -lt "$a_n" ]; do
          timeout 300 ip netns exec "$anchors_pfx$a_i" "$abin/bcast_gloo" $a_i \
            "$a_n" "$a_d" eth0 "$a_s" "$3" "$a_maxif" "$a_pat" </dev/null >> "$a_g" 2>&1 &
          a_i=$((a_i + 1))
        done
        wait
        a_o=$(cat "$a_g")
        rm -rf "$a_d" "$a_g"
        ;;
      *) anchors_fail "ANCHOR_LIBS: no anchor '$a_lib' (openmpi, mpich, gloo)" ;;
      esac
      echo "$a_lib p=$a_n maxif_us=$a_maxif $a_pat: $a_o"
    done
  done
  rm -f "$anchors_hf" "$a_hfm"
}

# The lines run_s2p.sh prints: "openmpi-allgatherv p=N: L S AVG_US MAX_US"
# for each number of sources S.
anchors_s2p() {
  anchors_ompi "$1"
  for a_s in $3; do
    echo "openmpi-allgatherv p=$1: $(anchors_on0 "$ompi $abin/s2p_ompi $2 $a_s $4")"
  done
  rm -f "$anchors_hf"
}
