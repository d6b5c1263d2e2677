#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Chaos on the emulated cluster: ROUNDS times, start the mixed workload
# (soak_prog chaos) with one rank on each of HOSTS hosts, and at a random
# moment kill (SIGKILL), stop (SIGSTOP) or cut off (eth0 down in its
# namespace) one random rank. A round passes when
#   - every survivor prints an error within 10 s of the event, and the error
#     names the cause: MMP_EPEERLOST or MMP_ETIMEDOUT (with CHAOS_STRICT=0,
#     MMP_EMISMATCH inside a collective too, counted apart);
#   - minimprun exits non-zero (not 110, its timeout) naming the rank;
#   - no wrong byte was seen ("FAILED") and nothing is left in any of our
#     namespaces (no process, no daemon) once the link is back.
#
#   tests/chaos.sh NETCLUSTER MINIMPRUN SOAK_PROG [ROUNDS [SEED]]
#
# Environment: NETCLUSTER_PREFIX / NETCLUSTER_SWITCH (as tests/netcluster),
# CHAOS_HOSTS (8), CHAOS_MAX_BYTES (1048576), CHAOS_PEER_TIMEOUT_MS (2000,
# the ranks' MINIMP_PEER_TIMEOUT_MS), CHAOS_STRICT (1), CHAOS_KEEP=1 leaves
# the cluster up, SOAK_CHAOS_MEASURE=0 starts the workload with a
# measurement of the network model (mmp_comm_netmodel_measure; mmp_init
# measured it before the chaos), SOAK_MCAST=1 draws the
# multicast broadcast and s-to-p too (with MINIMP_MCAST_TIMEOUT_MS 3000
# unless set, below the limit of 10 s), SOAK_ONLY=KIND makes every step of
# the workload one kind (bcast, s2p, allreduce, multicast, measure:
# tests/soak_prog.c). One line per round, then "chaos: P of N rounds
# passed" and the operations the losses hit.
# Exits 0 when every round passed, 1 otherwise, 77 without root or
# namespaces (the cluster cannot run here).
set -u

NETCLUSTER=$1 MINIMPRUN=$2 PROG=$3
ROUNDS=${4:-3}
SEED=${5:-$$}
HOSTS=${CHAOS_HOSTS:-8}
MAXB=${CHAOS_MAX_BYTES:-1048576}
PTO=${CHAOS_PEER_TIMEOUT_MS:-2000}
# A collective's poison carries its cause, so a survivor that reports a
# loss as MMP_EMISMATCH fails the round; CHAOS_STRICT=0 only counts it.
STRICT=${CHAOS_STRICT:-1}
PREFIX=${NETCLUSTER_PREFIX:-h}
LIMIT=10 # seconds from the event to every survivor's error

"$NETCLUSTER" check || exit $?
"$NETCLUSTER" up "$HOSTS" 100mbit || exit 1
TMP=$(mktemp -d)
trap '[ "${CHAOS_KEEP:-0}" = 1 ] || "$NETCLUSTER" down; rm -rf "$TMP"' EXIT
trap "exit 143" INT TERM

now() { date +%s.%N; }

# A small deterministic generator, so that SEED replays a run's choices.
RNG=$SEED
# rand N sets R to 0..N-1 (no subshell, which would lose the state).
rand() {
  RNG=$(((RNG * 1103515245 + 12345) % 2147483648))
  R=$(((RNG / 65536) % $1))
}

hostlist=$("$NETCLUSTER" hostlist "$HOSTS")
# minimprun passes every MINIMP_* variable on to the ranks.
if [ "${SOAK_MCAST:-0}" = 1 ]; then
  export MINIMP_MCAST_TIMEOUT_MS="${MINIMP_MCAST_TIMEOUT_MS:-3000}"
fi

# The pid of the workload's rank inside namespace $1: the program itself,
# not minimprun on host 0, whose arguments name it too.
rank_pid() {
  for p in $(ip netns pids "$1" 2>/dev/null); do
    case $(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | head -1) in
      */soak_prog | soak_prog) echo "$p"; return 0 ;;
    esac
  done
  return 1
}

# Every process left in our hosts, or a daemon of ours anywhere.
leftovers() {
  i=0
  while [ "$i" -lt "$HOSTS" ]; do
    for p in $(ip netns pids "$PREFIX$i" 2>/dev/null); do
      echo "$PREFIX$i:$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
    done
    i=$((i + 1))
  done
}

passed=0 mismatches=0 mismatch_rounds=0 total_time=0
round=1
while [ "$round" -le "$ROUNDS" ]; do
  t0=$(now)
  rand 3
  act=$R
  rand "$HOSTS"
  victim=$R
  case $act in
    0) action="kill" ;;
    1) action="stop" ;;
    # minimprun runs on host 0: cutting that host off would cut minimprun
    # off from every rank, which is another test.
    2) action="cut"; rand $((HOSTS - 1)); victim=$((1 + R)) ;;
  esac
  rand 3000
  delay_ms=$((500 + R))
  out=$TMP/out err=$TMP/err
  ip netns exec "${PREFIX}0" "$MINIMPRUN" --agent "ip netns exec" \
    --host "$hostlist" --iface eth0 --timeout 60 \
    -x MINIMP_PEER_TIMEOUT_MS="$PTO" -x MINIMP_CONNECT=eager \
    ${ASAN_OPTIONS:+-x ASAN_OPTIONS} \
    ${SOAK_CHAOS_MEASURE:+-x SOAK_CHAOS_MEASURE} \
    ${SOAK_MCAST:+-x SOAK_MCAST} ${SOAK_ONLY:+-x SOAK_ONLY} -n "$HOSTS" \
    "$PROG" chaos 0 "$MAXB" "$((SEED + round))" >"$out" 2>"$err" &
  job=$!
  tstart=$(now)
  # Wait for every rank to be in the workload.
  w=0
  while [ "$(grep -c 'chaos ready' "$out")" -lt "$HOSTS" ] && [ "$w" -lt 600 ]; do
    sleep 0.05
    w=$((w + 1))
  done
  tready=$(now)
  sleep "$(echo "$delay_ms" | awk '{printf "%.3f", $1 / 1000}')"
  host=$PREFIX$victim
  pid=$(rank_pid "$host")
  tev=$(now)
  case $action in
    kill) kill -KILL "$pid" ;;
    stop) kill -STOP "$pid" ;;
    cut) ip netns exec "$host" ip link set eth0 down ;;
  esac
  wait "$job"
  rc=$?
  tend=$(now)
  [ "$action" = cut ] && ip netns exec "$host" ip link set eth0 up
  # Nothing may be left once the link is back (the cut host's daemon
  # learns then that minimprun is gone); wait up to 5 s for it.
  w=0
  while [ -n "$(leftovers)" ] && [ "$w" -lt 100 ]; do
    sleep 0.05
    w=$((w + 1))
  done
  left=$(leftovers)

  why=""
  [ "$rc" -ne 0 ] && [ "$rc" -ne 110 ] || why="$why minimprun exited $rc;"
  # The first line minimprun writes is its verdict.
  grep -m1 '^minimprun: ' "$err" |
    grep -Eq "^minimprun: (rank $victim |lost contact with host $host )" ||
    why="$why minimprun did not name rank $victim;"
  grep -q FAILED "$out" && why="$why wrong data: $(grep FAILED "$out" | head -1);"
  [ -n "$left" ] && why="$why left behind: $(echo "$left" | tr '\n' ' ');"
  codes="" late=0 mm=0 worst=0 byop=0
  r=0
  while [ "$r" -lt "$HOSTS" ]; do
    if [ "$r" -ne "$victim" ]; then
      line=$(grep "^rank $r: error " "$out" | head -1)
      if [ -z "$line" ]; then
        # What it was blocked in when minimprun's SIGTERM came, if it said.
        where=$(grep "^rank $r: stopped while " "$out" | head -1 |
          sed 's/^rank [0-9]*: stopped while //')
        why="$why rank $r reported no error${where:+ (stopped while $where)};"
      else
        # rank R: error NAME in OP at T (step S, VIA); OP may be two words.
        name=$(echo "$line" | awk '{print $4}')
        op=$(echo "$line" | sed 's/.* in \(.*\) at [0-9.]* (.*/\1/')
        t=$(echo "$line" | sed 's/.* at \([0-9.]*\) (.*/\1/')
        dt=$(echo "$t $tev" | awk '{printf "%.2f", $1 - $2}')
        worst=$(echo "$dt $worst" | awk '{print ($1 > $2) ? $1 : $2}')
        codes="$codes $name"
        case $line in
          *", operation)"* | *", call)"*)
            byop=$((byop + 1))
            # What the loss hit, for the summary: a broadcast's op is its
            # algorithm's name, the others' start with their kind.
            case $op in
              s2p\ multicast | multicast) echo "${op%% *}" | sed 's/^multicast$/bcast/;s/$/ multicast/' ;;
              s2p* | allreduce* | p2p* | "network model") echo "${op%% *}" | sed 's/^network$/network model/' ;;
              *) echo bcast ;;
            esac >>"$TMP/hit"
            ;;
        esac
        case $name in
          MMP_EPEERLOST | MMP_ETIMEDOUT) ;;
          MMP_EMISMATCH)
            mm=$((mm + 1))
            if [ "$STRICT" = 1 ] || [ "$op" = p2p ]; then
              why="$why rank $r: $name in $op;"
            fi
            ;;
          *) why="$why rank $r: $name in $op;" ;;
        esac
        if echo "$dt $LIMIT" | awk '{exit !($1 > $2)}'; then
          late=$((late + 1))
          why="$why rank $r reported after $dt s;"
        fi
      fi
    fi
    r=$((r + 1))
  done
  secs=$(echo "$tend $t0" | awk '{printf "%.1f", $1 - $2}')
  total_time=$(echo "$total_time $secs" | awk '{print $1 + $2}')
  mismatches=$((mismatches + mm))
  [ "$mm" -gt 0 ] && mismatch_rounds=$((mismatch_rounds + 1))
  summary=$(echo "$codes" | tr ' ' '\n' | grep . | sort | uniq -c |
    awk '{printf "%s%s x%d", (NR > 1 ? ", " : ""), $2, $1}')
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    verdict=ok
  else
    verdict="FAILED:$why"
    echo "--- round $round stdout" >&2
    cat "$out" >&2
    echo "--- round $round stderr" >&2
    cat "$err" >&2
  fi
  echo "round $round: $action rank $victim after ${delay_ms} ms: $verdict" \
    "survivors: $summary ($byop from the operation itself, the rest from" \
    "the any-source receive); last error ${worst} s after the event;" \
    "minimprun rc $rc; start $(echo "$tready $tstart" | awk '{printf "%.1f", $1 - $2}') s," \
    "end $(echo "$tend $tev" | awk '{printf "%.1f", $1 - $2}') s after the event; round ${secs} s"
  # A failed round may leave something: clear it for the next one.
  [ -n "$left" ] && "$NETCLUSTER" up "$HOSTS" 100mbit
  round=$((round + 1))
done

echo "chaos: $passed of $ROUNDS rounds passed (seed $SEED, $HOSTS hosts," \
  "peer timeout $PTO ms, strict $STRICT); MMP_EMISMATCH in $mismatches" \
  "survivor reports over $mismatch_rounds rounds;" \
  "$(echo "$total_time $ROUNDS" | awk '{printf "%.1f", $1 / $2}') s per round"
# Where the survivors that learnt of a loss from their own operation were.
[ -s "$TMP/hit" ] && echo "chaos: operations the losses hit:" \
  "$(sort "$TMP/hit" | uniq -c | sort -rn |
    awk '{n = $1; $1 = ""; sub(/^ /, ""); printf "%s%s x%d", (NR > 1 ? ", " : ""), $0, n}')"
[ "$passed" -eq "$ROUNDS" ]
