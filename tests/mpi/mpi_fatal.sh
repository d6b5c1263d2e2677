#!/bin/sh
# SPDX-License-Identifier: MIT
# MPI_ERRORS_ARE_FATAL and MPI_Abort end the whole job: minimprun exits
# with the code (70, libminimp's fatal exit, or MPI_Abort's), and a fatal
# error names the call and its class.
#   mpi_fatal.sh MINIMPRUN MPI_ENV_PROGRAM
set -u
run=$1
prog=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "mpi_fatal: $*" >&2; cat "$out" >&2; exit 1; }

"$run" --timeout 60 -n 3 "$prog" fatal >"$out" 2>&1
rc=$?
[ "$rc" = 70 ] || fail "a fatal error: exit $rc, not 70"
grep -q "MPI_Send" "$out" || fail "the message does not name MPI_Send"
grep -q "MPI_ERR_RANK" "$out" || fail "the message does not name MPI_ERR_RANK"

"$run" --timeout 60 -n 3 "$prog" abort >"$out" 2>&1
rc=$?
[ "$rc" = 42 ] || fail "MPI_Abort(42): exit $rc"
echo "fatal errors and MPI_Abort end the job with their codes"
