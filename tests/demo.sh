#!/bin/sh
# make demo: what libminimp does, on this machine. A real broadcast among
# 8 ranks, checked on every rank, with what the automatic choice ran and
# why; then every broadcast algorithm compared over a few rounds, each
# algorithm warmed up and the order shuffled each round, with the median
# and the range, and AUTO's median against the best algorithm's per size,
# re-measured with more calls at the sizes where the table has fewest
# (tests/bench/demo_auto.py); then point-to-point between 2 ranks,
# through shared memory (the default between the ranks of a host) and
# over TCP loopback.
# Usage: tests/demo.sh BUILD_DIR
# DEMO_ROUNDS and DEMO_CHECK_ROUNDS set the rounds of the table and of the
# re-measure; DEMO_BENCH_ARGS adds minimp-bench options to both, last (a
# quick try: DEMO_BENCH_ARGS="--iters 2").
set -eu
b=${1:-build}
run="$b/launcher/minimprun"
out=${DEMO_OUT:-results/demo}
# Five rounds: the medians AUTO is judged by are those of five shuffled
# runs, so that one disturbed round does not decide the verdict.
rounds=${DEMO_ROUNDS:-5}
check_rounds=${DEMO_CHECK_ROUNDS:-5}
mkdir -p "$out"
echo "libminimp: message passing over TCP sockets and, between the ranks of"
echo "one host, shared memory; no MPI underneath."
echo
echo "== A broadcast among 8 ranks on this machine (examples/bcast.c)"
"$run" -n 8 "$b/examples/bcast"
echo
echo "== Every broadcast algorithm, 8 ranks, $rounds rounds, order shuffled each round"
echo "   Microseconds until the data reaches a rank, the slowest of 4 ranks"
echo "   measured (each measured alone, its acknowledgement's time taken off:"
echo "   'max OL_i' of [de Supinski & Karonis 1999], docs/references.md;"
echo "   docs/performance.md). Median of the rounds [lowest-highest]."
rm -f "$out"/bcast-*.csv "$out"/check-*.csv "$out/check.args"
# Rounds of minimp-bench's ol method: PREFIX ROUNDS SEED0 [OPTION]...;
# round r shuffles with SEED0 + r and writes $out/PREFIX-r.csv.
bench_rounds() {
  pre=$1 n=$2 seed=$3
  shift 3
  r=1
  while [ "$r" -le "$n" ]; do
    printf '   round %d of %d...\n' "$r" "$n"
    # Its progress, a line per algorithm, goes to a log; its warnings follow.
    # shellcheck disable=SC2086 # DEMO_BENCH_ARGS: options, a word each
    "$run" -n 8 "$b/tests/bench/minimp-bench" bcast --method ol --dests 4 \
      --shuffle $((seed + r)) --csv "$out/$pre-$r.csv" "$@" \
      ${DEMO_BENCH_ARGS-} >/dev/null \
      2>"$out/$pre-$r.log"
    grep -v '^\[' "$out/$pre-$r.log" | sed 's/^/   /' || true
    r=$((r + 1))
  done
}
bench_rounds bcast "$rounds" 0 --sizes 1k,64k,1m
python3 tests/bench/demo_auto.py table "$out" "$rounds"
# The rows AUTO is judged by again, with more calls each, where the table
# times fewest (tests/bench/demo_auto.py).
if [ -s "$out/check.args" ]; then
  echo
  echo "== AUTO, the algorithm it ran and the best rows again, $check_rounds rounds"
  # shellcheck disable=SC2046 # the options, one word each
  bench_rounds check "$check_rounds" 100 $(cat "$out/check.args")
  python3 tests/bench/demo_auto.py check "$out" "$check_rounds" "$rounds"
fi
# The plot needs matplotlib (make demo installs python3-matplotlib).
if ${PYTHON:-python3} tests/bench/plot_bcast_csv.py "$out"/bcast-*.csv \
    "$out/bcast.svg" "make demo: broadcast among 8 ranks on this machine" \
    2>"$out/plot.err"; then
  echo "(CSV: $out/bcast-*.csv; plot: $out/bcast.svg and .png)"
else
  echo "(CSV: $out/bcast-*.csv; no plot: $(tail -1 "$out/plot.err"))"
fi
echo
echo "== 2 ranks: ping-pong latency and streaming bandwidth, through shared memory"
"$run" -n 2 "$b/tests/bench/minimp-bench" pingpong --sizes 8,1k,64k,1m,4m
echo
echo "== the same over TCP loopback (MINIMP_SHM=off)"
MINIMP_SHM=off "$run" -n 2 "$b/tests/bench/minimp-bench" pingpong --sizes 8,1k,64k,1m,4m
