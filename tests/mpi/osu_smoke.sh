#!/bin/sh
# SPDX-License-Identifier: MIT
# The OSU micro-benchmarks 5.3, unmodified, built with minimpicc through
# their own configure and make, then each benchmark libminimp-mpi is meant
# to run, at small sizes under minimprun: every one must run to its end.
# The sources are not part of this repository (docs/mpi.md says why): they
# are taken from $OSU_SRC, else from ../shared/peers beside the source
# tree; without them the test is skipped (exit 77) and says so.
#   osu_smoke.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
# A clone has shared/ beside it; a git worktree one level further up.
osu=${OSU_SRC:-$src/../shared/peers/osu-micro-benchmarks-5.3}
[ -n "${OSU_SRC:-}" ] || [ -d "$osu" ] ||
  osu=$src/../../shared/peers/osu-micro-benchmarks-5.3
if [ ! -f "$osu/configure" ] || [ ! -f "$osu/mpi/pt2pt/osu_latency.c" ]; then
  echo "osu_smoke: skipped: no OSU micro-benchmarks 5.3 sources at $osu" \
    "(set OSU_SRC to them)"
  exit 77
fi
run="$build/launcher/minimprun"
cc="$build/mpi/minimpicc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "osu_smoke: $*" >&2; exit 1; }

# A copy, with the autotools timestamps in order (git keeps none), so
# that make does not run aclocal again.
cp -r "$osu" "$tmp/osu" || fail "cannot copy $osu"
cd "$tmp/osu" || exit 1
touch aclocal.m4
sleep 1
touch configure
find . -name Makefile.in -exec touch {} +
sleep 1
# CXX too: OSU links its collective benchmarks with the C++ driver.
./configure CC="$cc" CXX="$cc" >configure.log 2>&1 ||
  { tail -20 configure.log; fail "configure failed"; }
make -j2 >make.log 2>&1 || { tail -30 make.log; fail "make failed"; }

# OSU's own allocations are not what this test checks.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
passed=0
failed=0
check() { # name ranks args...
  name=$1 n=$2
  shift 2
  dir=pt2pt
  [ -x "mpi/pt2pt/$name" ] || dir=collective
  if "$run" --timeout 120 -n "$n" "mpi/$dir/$name" "$@" >"$name.out" 2>&1 &&
    tail -1 "$name.out" | grep -Eq '^ *[0-9]'; then
    echo "ok: $name ($n ranks): $(tail -1 "$name.out" | tr -s ' ')"
    passed=$((passed + 1))
  else
    echo "FAILED: $name ($n ranks):"
    tail -15 "$name.out"
    failed=$((failed + 1))
  fi
}
for b in osu_latency osu_bw osu_bibw; do
  check $b 2 -i 10 -x 2
done
check osu_multi_lat 4 -i 10 -x 2
for b in osu_bcast osu_allgather osu_allgatherv osu_allreduce osu_reduce \
  osu_reduce_scatter osu_gather osu_scatter osu_alltoall osu_ibcast; do
  check $b 4 -m 4096 -i 10 -x 2
done
check osu_barrier 4 -i 10 -x 2
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
