#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The soak run on the emulated cluster: MESSAGES point-to-point messages
# of 0 to MAX bytes among HOSTS ranks, one per host, mixed with broadcasts,
# s-to-p broadcasts and allreduces of random algorithms, every byte
# checked, and each rank's resident set size compared between the first
# and the last quarter of the run (tests/soak_prog.c states the margin).
#
#   tests/soak.sh NETCLUSTER MINIMPRUN SOAK_PROG [MESSAGES [MAX [SEED]]]
#
# Defaults: 1000000 messages of up to 1048576 bytes, seed 1; SOAK_HOSTS
# (16) hosts at 100 Mbit/s with SOAK_PER (1) ranks each; SOAK_TIMEOUT (86400) seconds for minimprun.
# NETCLUSTER_PREFIX / NETCLUSTER_SWITCH name the cluster (tests/netcluster).
# SOAK_MCAST=1 draws the multicast broadcast and s-to-p too; every
# MINIMP_* variable (MINIMP_SHM=off, say) reaches the ranks.
# Prints every rank's line and the "soak total" line; exits as minimprun
# (0 when every byte and the RSS check passed), 77 without namespaces.
set -u

NETCLUSTER=$1 MINIMPRUN=$2 PROG=$3
MESSAGES=${4:-1000000}
MAXB=${5:-1048576}
SEED=${6:-1}
HOSTS=${SOAK_HOSTS:-16}
PER=${SOAK_PER:-1}
PREFIX=${NETCLUSTER_PREFIX:-h}

"$NETCLUSTER" check || exit $?
"$NETCLUSTER" up "$HOSTS" 100mbit || exit 1
trap '"$NETCLUSTER" down' EXIT
trap "exit 143" INT TERM
hostlist=$("$NETCLUSTER" hostlist "$HOSTS" "$PER")
ip netns exec "${PREFIX}0" "$MINIMPRUN" --agent "ip netns exec" \
  --host "$hostlist" --iface eth0 --timeout "${SOAK_TIMEOUT:-86400}" \
  ${ASAN_OPTIONS:+-x ASAN_OPTIONS} ${SOAK_MCAST:+-x SOAK_MCAST} \
  -n $((HOSTS * PER)) \
  "$PROG" soak "$MESSAGES" "$MAXB" "$SEED"
