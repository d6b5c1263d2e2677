#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs one libFuzzer harness (tests/fuzz/meson.build registers one test per
# harness that calls this; `make fuzz` runs them one at a time).
#
#   run.sh FUZZER NAME CORPUS WORKDIR
#
# FUZZER starts from the inputs of CORPUS (read only) and of
# WORKDIR/NAME/corpus, where what it finds goes; a crash leaves its input in
# WORKDIR/NAME/artifacts/. The full output is WORKDIR/NAME/log; the last
# line printed is the summary that docs/testing.md quotes.
#
# Environment:
#   FUZZ_RUNS  executions (default 20000; -1: until FUZZ_TIME)
#   FUZZ_TIME  seconds at most (default 0: no limit)
#   FUZZ_SEED  libFuzzer's random seed (default 1, so runs repeat)
#   FUZZ_KEEP  1: keep WORKDIR/NAME/corpus from an earlier run (default:
#              start again from CORPUS alone)
#   FUZZ_ARGS  more libFuzzer options, e.g. "-max_len=8192"
set -u

if [ $# -ne 4 ]; then
  echo "usage: $0 FUZZER NAME CORPUS WORKDIR" >&2
  exit 2
fi
fuzzer=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
name=$2 seeds=$3 work=$4/$2
runs=${FUZZ_RUNS:-20000}
secs=${FUZZ_TIME:-0}
seed=${FUZZ_SEED:-1}

[ "${FUZZ_KEEP:-0}" = 1 ] || rm -rf "$work/corpus"
rm -rf "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts" || exit 1

# A sanitizer report is a crash; leaks are checked after every input. What
# the code under test prints is dropped (-close_fd_mask=3); libFuzzer's and
# the sanitizers' reports, and failed invariants (fuzz_fail), still show.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS UBSAN_OPTIONS

start=$(date +%s)
# shellcheck disable=SC2086 # FUZZ_ARGS is a list of options
"$fuzzer" -runs="$runs" -max_total_time="$secs" -seed="$seed" \
  -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 -close_fd_mask=3 \
  -artifact_prefix="$work/artifacts/" ${FUZZ_ARGS:-} \
  "$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?
end=$(date +%s)

# "#123456 DONE cov: 321 ft: 654 corp: 78/9Kb ..." and the final stats.
last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' \
  "$work/log" | tail -n 1)
cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
execs=$(sed -n "s/^stat::number_of_executed_units: *//p" "$work/log")
rate=$(sed -n "s/^stat::average_exec_per_sec: *//p" "$work/log")
found=$(find "$work/corpus" -type f | wc -l)
# libFuzzer rounds the rate of a run shorter than a second down to 0.
if [ "${rate:-0}" = 0 ] && [ -n "${execs:-}" ]; then
  rate=$((execs / (end - start > 0 ? end - start : 1)))
fi

if [ "$rc" -ne 0 ]; then
  tail -n 60 "$work/log"
  echo "fuzz $name: FAILED (exit $rc) after $((end - start)) s; input:"
  ls "$work/artifacts"/* 2>/dev/null
  echo "reproduce: $fuzzer $work/artifacts/<file>"
  exit 1
fi
echo "fuzz $name: ${execs:-?} executions in $((end - start)) s" \
  "(${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, $found new input(s)," \
  "seed $seed"
