#!/bin/sh
# Builds the collectives' anchor benchmarks (Open MPI's MPI_Allreduce,
# MPI_Reduce, MPI_Alltoall, MPI_Gather; Gloo's allreduce_ring,
# allreduce_ring_chunked, allreduce_halving_doubling, allreduce_bcube)
# into $ANCHORS (default /tmp/minimp-anchors), as ../shared/anchors/
# build.sh builds the broadcast ones; installs the Debian packages first
# if missing (root).
set -eu
here=$(cd "$(dirname "$0")" && pwd); out=${ANCHORS:-/tmp/minimp-anchors}; mkdir -p "$out"
need=""
for p in openmpi-bin libopenmpi-dev libgloo-dev; do
  dpkg -s $p >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need >/dev/null; fi
mpicc.openmpi -O2 -o "$out/coll_ompi" "$here/mpi_coll_bench.c"
g++ -O2 -std=c++17 -o "$out/allreduce_gloo" "$here/gloo_allreduce_bench.cc" -lgloo -lpthread
echo "collective anchors built in $out"
