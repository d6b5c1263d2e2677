#!/bin/sh
# SPDX-License-Identifier: MIT
# The benchmark scripts find the anchors only through MINIMP_ANCHORS (and
# the anchors' own ANCHORS), tests/bench/anchors.sh: every script that
# runs an anchor sources it, none finds them by a path of its own, and
# each stops with a message naming the variable and exit status 2 when it
# is unset or wrong, before it starts anything. Needs no anchors: the
# checks come first, so a script that got past them would fail here on
# the build directory that does not exist (and a timeout).
#   check_anchors.sh SOURCE_DIR
set -u
src=$1
bench="$src/tests/bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

# Code lines (not comments) of a script.
code() { grep -v '^[[:space:]]*#' "$1"; }

# 1. No script finds the anchors by a path of its own, and every script
# that runs one (an anchor program such as bcast_ompi, or one of the
# anchors' scripts) sources anchors.sh and calls anchors_init. A script
# that builds its own MPI program (run_startup_real.sh) needs no anchors.
scripts=
for f in "$bench"/*.sh; do
  name=${f##*/}
  case $name in anchors.sh | build_coll_anchors.sh) continue ;; esac
  if code "$f" | grep -q 'shared/anchors\|minimp-anchors\|ANCHORS_DIR'; then
    fail "$name finds the anchors by a path of its own (use anchors.sh)"
  fi
  if code "$f" | grep -q '_ompi\b\|_gloo\b\|_mpich\b\|run_bcast\.sh\|run_s2p\.sh\|run_pingpong\.sh\|nsrsh\|\$anchors\|\$abin'; then
    if code "$f" | grep -q 'anchors_init'; then
      scripts="$scripts $name"
    else
      fail "$name runs an anchor without anchors_init (tests/bench/anchors.sh)"
    fi
  fi
done
[ -n "$scripts" ] || fail "no script calls anchors_init"

# A fake anchors' folder with the files anchors_init looks for, and an
# empty directory for their programs.
mkdir -p "$tmp/fake" "$tmp/bin" "$tmp/empty"
for f in build.sh run_bcast.sh run_s2p.sh run_pingpong.sh nsrsh; do
  printf '#!/bin/sh\nexit 99\n' > "$tmp/fake/$f"
  chmod +x "$tmp/fake/$f"
done

# expect NAME CASE PATTERN [VAR=VALUE...]: the script run with the
# variables given (and MINIMP_ANCHORS unset unless given) exits 2, and its
# stderr names it and matches PATTERN.
expect() {
  name=$1 what=$2 pat=$3
  shift 3
  env -u MINIMP_ANCHORS -u ANCHORS NETCLUSTER_PREFIX=zq NETCLUSTER_SWITCH=zqsw \
    OUT="$tmp/out" "$@" timeout 30 "$bench/$name" "$tmp/nobuild" 2 1024 1 1 \
    none:-:auto >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
  rc=$?
  if [ "$rc" -ne 2 ]; then
    fail "$name, $what: exit status $rc, not 2; stderr: $(head -c 400 "$tmp/stderr")"
  elif ! grep -q "^$name: .*$pat" "$tmp/stderr"; then
    fail "$name, $what: stderr does not say '$pat': $(head -c 400 "$tmp/stderr")"
  fi
}

for name in $scripts; do
  expect "$name" unset "MINIMP_ANCHORS is not set"
  expect "$name" "not a directory" "MINIMP_ANCHORS='$tmp/nowhere' is not a directory" \
    MINIMP_ANCHORS="$tmp/nowhere"
  expect "$name" "not the anchors" "is not the anchors' folder: it has no build.sh" \
    MINIMP_ANCHORS="$tmp/empty"
  # Scripts that run only the system's Open MPI (run_osu.sh) have no
  # anchor programs to miss.
  if code "$bench/$name" | grep -q 'anchors_bin'; then
    expect "$name" "programs missing" "no anchor program $tmp/bin/" \
      MINIMP_ANCHORS="$tmp/fake" ANCHORS="$tmp/bin"
  fi
  if ! code "$bench/$name" | grep -q 'anchors_init optional'; then
    expect "$name" none "cannot run without them" MINIMP_ANCHORS=none
  fi
done

# 2. anchors_check counts rows and names a run that gave too few;
# anchors_finish then fails.
(
  . "$bench/anchors.sh"
  MINIMP_ANCHORS="$tmp/fake" ANCHORS="$tmp/bin" anchors_init
  printf 'openmpi p=4 maxif_us=0 all: 1024 306 570\n' |
    anchors_check good 1 >/dev/null 2>"$tmp/check1"
  anchors_finish 2>>"$tmp/check1" || exit 3
  printf 'openmpi p=4 maxif_us=0 all: 1024 306 570\nmpich p=4: mpiexec failed\n' |
    anchors_check "run_bcast.sh, round 1" 2 >"$tmp/passed" 2>"$tmp/check2"
  anchors_finish 2>>"$tmp/check2" && exit 4
  exit 0
)
rc=$?
[ "$rc" -eq 0 ] || fail "anchors_check/anchors_finish: status $rc (3: a full run failed; 4: a short run passed)"
grep -q 'anchor run_bcast.sh, round 1 gave 1 of 2 rows' "$tmp/check2" ||
  fail "anchors_check does not name the short run: $(cat "$tmp/check2")"
grep -q 'mpiexec failed' "$tmp/check2" ||
  fail "anchors_check does not show the line that is no row"
grep -q '1 anchor run(s) gave fewer rows' "$tmp/check2" ||
  fail "anchors_finish does not count the miss"
[ "$(wc -l < "$tmp/passed")" -eq 2 ] ||
  fail "anchors_check does not pass its input on"
[ ! -s "$tmp/check1" ] || fail "a full run was reported: $(cat "$tmp/check1")"

[ "$fails" -eq 0 ] || exit 1
echo "ok: $(echo $scripts | wc -w) scripts find the anchors through MINIMP_ANCHORS"
