#!/usr/bin/env bash
# Initial-sync benchmark: the extender against the fake API server seeded with a large cluster
# of realistic objects. Prints the extender's time from start to /readyz, its peak RSS (VmHWM)
# at that moment, the CPU seconds each process spent during the sync, and how long the fake
# alone takes to serve the pod list (rv=0, one piece, as the watch cache serves it) to curl.
#
#   bench/sync/run.sh [--build DIR] [--fake-build DIR] [--nodes N] [--pods M] [--runs K]
#                     [--port P] [--nice N]
#
# Defaults: build-sync (the fake from the same build), 5000 nodes, 50000 pods, 1 run,
# port 39997. Needs curl and bc.
# On a shared, busy machine the wall times mostly measure the load: the CPU seconds do not.
# --nice -10 (root only) runs both processes ahead of the other work, close to an idle machine.
set -euo pipefail

build=build-sync
fake_build=""
nodes=5000
pods=50000
runs=1
port=39997
nice_level=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --fake-build) fake_build="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --pods) pods="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --nice) nice_level="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/../.."
fake_bin="${fake_build:-$build}/gpushare-fake-apiserver"
extender_bin="$build/gpushare-extender"
for bin in "$fake_bin" "$extender_bin"; do
  [[ -x "$bin" ]] || { echo "missing $bin (cmake --build $build --target $(basename "$bin"))" >&2; exit 1; }
done

work=$(mktemp -d /tmp/gpushare-sync-bench.XXXXXX)
fake_pid=""
extender_pid=""
cleanup() {
  [[ -n "$extender_pid" ]] && kill "$extender_pid" 2>/dev/null && wait "$extender_pid" 2>/dev/null
  [[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# CPU seconds (user+system) a process has used so far.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}
now() { date +%s.%N; }

echo "seeding the fake with $nodes nodes and $pods pods..."
"$fake_bin" --kubeconfig-out "$work/kubeconfig" --nodes "$nodes" --pods "$pods" >"$work/fake.log" 2>&1 &
fake_pid=$!
for _ in $(seq 1 1200); do
  grep -q "fake API server on" "$work/fake.log" && break
  kill -0 "$fake_pid" 2>/dev/null || { cat "$work/fake.log" >&2; exit 1; }
  sleep 0.5
done
grep -q "fake API server on" "$work/fake.log" || { echo "the fake did not come up" >&2; exit 1; }
server=$(awk '/server:/ { print $2; exit }' "$work/kubeconfig")
# Seeding ran at normal priority; the measured part runs at --nice.
[[ "$nice_level" != 0 ]] && renice -n "$nice_level" -p "$fake_pid" >/dev/null
echo "$(cat "$work/fake.log")"

# The fake alone: the pod list as the extender's first list asks for it, into /dev/null. The
# first request serialises every pod; the fake keeps the serialised items, so later lists (the
# extender's) only copy them: the second line is the fake's share of the runs below.
for pass in cold warm; do
  fake_cpu0=$(cpu_seconds "$fake_pid")
  serve=$(curl -s -k -o /dev/null -w '%{time_total} %{size_download}' \
    "$server/api/v1/pods?resourceVersion=0&limit=500")
  fake_cpu1=$(cpu_seconds "$fake_pid")
  echo "fake serves the pod list to curl ($pass): ${serve% *} s, $(( ${serve#* } / 1000000 )) MB," \
       "fake CPU $(echo "$fake_cpu1 - $fake_cpu0" | bc | sed 's/^\./0./') s"
done

for run in $(seq 1 "$runs"); do
  fake_cpu0=$(cpu_seconds "$fake_pid")
  start=$(now)
  nice -n "$nice_level" "$extender_bin" --kubeconfig "$work/kubeconfig" --listen "127.0.0.1:$port" --log-level info \
    >"$work/extender.log" 2>&1 &
  extender_pid=$!
  ready=""
  for _ in $(seq 1 60000); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)
    if [[ "$code" == "200" ]]; then ready=$(now); break; fi
    kill -0 "$extender_pid" 2>/dev/null || { cat "$work/extender.log" >&2; exit 1; }
    sleep 0.02
  done
  [[ -n "$ready" ]] || { echo "the extender never became ready" >&2; exit 1; }
  hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$extender_pid/status")
  rss=$(awk '/VmRSS/ { print $2 }' "/proc/$extender_pid/status")
  ext_cpu=$(cpu_seconds "$extender_pid")
  fake_cpu1=$(cpu_seconds "$fake_pid")
  echo "run $run: time to ready $(echo "$ready - $start" | bc | sed 's/^\./0./') s," \
       "peak RSS $(( hwm / 1024 )) MB (RSS now $(( rss / 1024 )) MB)," \
       "CPU extender $ext_cpu s, fake $(echo "$fake_cpu1 - $fake_cpu0" | bc | sed 's/^\./0./') s"
  grep -E "nodes listed|pods listed" "$work/extender.log" | sed 's/^/    /' || true
  kill "$extender_pid"
  wait "$extender_pid" 2>/dev/null || true
  extender_pid=""
done
echo "nice $nice_level; load: $(uptime)"
