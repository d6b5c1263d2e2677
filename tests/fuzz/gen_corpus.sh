#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes the seed inputs of every fuzz harness into its corpus:
#
#   tests/fuzz/gen_corpus.sh BUILD
#
# BUILD is a normal build directory (not -Dfuzz=true) whose replayers,
# tests/fuzz/replay_NAME, are built. Each writes the seeds its harness
# makes (fuzz_seeds() in fuzz_NAME.c) to tests/fuzz/corpus/NAME/seed-*,
# replacing the old seeds; the other files there (regress-*: inputs that
# once failed) stay.
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
found=0
for replay in "$1"/tests/fuzz/replay_*; do
  [ -f "$replay" ] && [ -x "$replay" ] || continue
  name=${replay##*/replay_}
  mkdir -p "$here/corpus/$name"
  rm -f "$here/corpus/$name"/seed-*
  "$replay" --seeds "$here/corpus/$name"
  echo "$name: $(ls "$here/corpus/$name" | grep -c '^seed-') seeds"
  found=$((found + 1))
done
if [ "$found" = 0 ]; then
  echo "$0: no replayers in $1/tests/fuzz (build it first)" >&2
  exit 1
fi
