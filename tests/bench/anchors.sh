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
