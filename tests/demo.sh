#!/bin/sh
# make demo: launch ranks locally and show what the runtime does.
# Usage: tests/demo.sh BUILD_DIR
set -eu
b=${1:-build}
run="$b/launcher/minimprun"
echo "== 8 ranks pass a token around a ring (examples/ring.c)"
"$run" -n 8 "$b/examples/ring" 200
echo
echo "== ping-pong latency and streaming bandwidth between 2 ranks"
"$run" -n 2 "$b/tests/minimp-bench" pingpong --sizes 8,1k,64k,1m,4m
