#!/usr/bin/env bash
# Where the extender's CPU goes on one HTTP verb: server CPU time, system
# calls and instructions per request under wrk, every node offered by default.
#
#   bench/http/profile.sh [BUILD_DIR]
#
# Environment: MODES ("cpu strace callgrind"), CONNECTIONS (8), DURATION (10s), VERB (filter),
# NODES, ALLOCATED, OFFERED as for run.sh; KEEP=1 keeps the work directory (callgrind.out).
#   cpu:       utime and stime of the server over one wrk run, per request.
#   strace:    strace -c -f on the server over a 5 s wrk run: system calls per request.
#   callgrind: the server under valgrind, instrumented only after start-up and a 5 s warm-up,
#              then wrk -c2 for 20 s: instructions per request (repeatable on a loaded machine)
#              and the top functions.
set -euo pipefail

NODES=${NODES:-5000}
ALLOCATED=${ALLOCATED:-0.5}
OFFERED=${OFFERED:-$NODES}
MODES=${MODES:-"cpu strace callgrind"}
CONNECTIONS=${CONNECTIONS:-8}
DURATION=${DURATION:-10s}
VERB=${VERB:-filter}
EXTRA_FLAGS="--policy binpack --max-request-bytes $((256 * 1024 * 1024))"
source "$(dirname "$0")/common.sh"
generate_inputs >/dev/null 2>&1
body="$work/filter-names.json"

# wrk against $port; prints its RESULT line.
drive() {
  BODY_FILE="$body" wrk -t"$(( $1 < 2 ? $1 : 2 ))" -c"$1" -d"$2" --timeout 10s -s "$here/post.lua" \
    "http://127.0.0.1:$port/gpushare-scheduler/$VERB" | grep '^RESULT'
}
requests_of() { sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$1"; }
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }
hz=$(getconf CLK_TCK)

echo "# $VERB, $NODES nodes, $OFFERED offered ($(( $(stat -c %s "$body") / 1024 )) KiB body), load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $MODES; do
  case $mode in
    cpu)
      start_extender
      drive "$CONNECTIONS" 2s >/dev/null
      read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$server_pid/stat")
      line=$(drive "$CONNECTIONS" "$DURATION")
      read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$server_pid/stat")
      n=$(requests_of "$line")
      awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v n="$n" -v hz="$hz" -v c="$CONNECTIONS" \
        -v rps="$(sed 's/.*rps=\([0-9.]*\).*/\1/' <<<"$line")" 'BEGIN {
          printf "cpu: %d connections, %s req/s, server CPU %.3f ms/request (user %.3f, system %.3f)\n",
                 c, rps, (u + s) / hz * 1000 / n, u / hz * 1000 / n, s / hz * 1000 / n }'
      stop_server
      ;;
    strace)
      start_extender
      drive "$CONNECTIONS" 2s >/dev/null
      strace -c -f -p "$server_pid" -o "$work/strace.txt" 2>/dev/null &
      tracer=$!
      sleep 0.5
      line=$(drive "$CONNECTIONS" 5s)
      kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
      n=$(requests_of "$line")
      echo "strace: system calls per request ($n requests)"
      awk -v n="$n" '$1 ~ /^[0-9.]+$/ && $1 != "100.00" && NF >= 5 && $4 / n >= 0.01 { printf "  %-14s %.2f\n", $NF, $4 / n }
                     $1 == "100.00" { printf "  %-14s %.2f\n", "total", $4 / n }' "$work/strace.txt"
      stop_server
      ;;
    callgrind)
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
        "$build/gpushare-extender" --cluster-file "$work/cluster.json" --listen "127.0.0.1:$port" \
        --log-level warn $EXTRA_FLAGS >"$work/callgrind.log" 2>&1 &
      server_pid=$!
      for _ in $(seq 1 3000); do
        curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
        sleep 0.2
      done
      drive 1 5s >/dev/null
      callgrind_control -i on "$server_pid" >/dev/null
      line=$(drive 2 20s)
      callgrind_control -i off "$server_pid" >/dev/null
      stop_server
      n=$(requests_of "$line")
      total=$(callgrind_annotate "$work/callgrind.out" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
      awk -v t="$total" -v n="$n" 'BEGIN { printf "callgrind: %d requests, %.2fM instructions per request\n", n, t / n / 1e6 }'
      callgrind_annotate --inclusive=no "$work/callgrind.out" | grep -E '^ *[0-9,]+ \(' | sed -n '2,16p' |
        sed -E 's/ \[[^]]*\]$//; s/\([^()]*\)$//' | cut -c1-150
      ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
done
