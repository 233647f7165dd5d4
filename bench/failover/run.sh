#!/usr/bin/env bash
# Failover time with two extender processes: both run --leader-elect against the fake
# API server as a process; the leader is killed (SIGKILL: a crash, the Lease must expire) or
# stopped (SIGTERM: it gives the Lease up), and the time until the other replica answers /readyz
# with 200 (leader, caught up) is measured. The killed replica is restarted as the new follower
# before the next round.
#
#   bench/failover/run.sh [--build DIR] [--rounds N] [--lease 15s --renew 10s --retry 2s]
#
# Defaults: build, 3 rounds of each kind, kube-scheduler's lease timings. Needs curl and bc.
set -euo pipefail

build=build
rounds=3
lease=15s
renew=10s
retry=2s
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --lease) lease="$2"; shift 2 ;;
    --renew) renew="$2"; shift 2 ;;
    --retry) retry="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/../.."
fake_bin="$build/gpushare-fake-apiserver"
extender_bin="$build/gpushare-extender"
for bin in "$fake_bin" "$extender_bin"; do
  [[ -x "$bin" ]] || { echo "missing $bin (cmake --build $build --target $(basename "$bin"))" >&2; exit 1; }
done

work=$(mktemp -d /tmp/gpushare-failover.XXXXXX)
fake_pid=""
declare -a pids=("" "")
# Free ports, picked now: httplib sets SO_REUSEPORT, so a second listener on a busy port would
# not fail but share the connections.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ports=("$(free_port)" "$(free_port)")
cleanup() {
  for pid in "${pids[@]}" "$fake_pid"; do
    if [[ -n "$pid" ]]; then
      kill -9 "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  if [[ "${KEEP:-0}" == 1 ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
seconds_since() { echo "$(now) - $1" | bc | sed 's/^\./0./' | xargs printf '%.2f'; }
readyz() { curl -s -o /dev/null -m 1 -w '%{http_code}' "http://127.0.0.1:${ports[$1]}/readyz" || true; }

start_replica() {  # index
  local i=$1
  "$extender_bin" --kubeconfig "$work/kubeconfig" --listen "127.0.0.1:${ports[$i]}" --log-level info \
    --leader-elect --leader-elect-lease-duration "$lease" --leader-elect-renew-deadline "$renew" \
    --leader-elect-retry-period "$retry" --shutdown-grace-period 5s >>"$work/replica-$i.log" 2>&1 &
  pids[$i]=$!
}

# Waits until replica i answers /readyz with 200; prints the seconds since $2.
wait_ready() {  # index since
  for _ in $(seq 1 6000); do
    [[ "$(readyz "$1")" == 200 ]] && { seconds_since "$2"; return 0; }
    sleep 0.01
  done
  echo "replica $1 never became ready" >&2
  return 1
}

# Waits until replica i has synced (a follower: /readyz names the leader).
wait_follower() {  # index
  for _ in $(seq 1 3000); do
    curl -s -m 1 "http://127.0.0.1:${ports[$1]}/readyz" | grep -q "not the leader" && return 0
    sleep 0.02
  done
  echo "replica $1 never became a synced follower" >&2
  return 1
}

"$fake_bin" --kubeconfig-out "$work/kubeconfig" --nodes 200 --pods 1000 >"$work/fake.log" 2>&1 &
fake_pid=$!
for _ in $(seq 1 600); do
  grep -q "fake API server on" "$work/fake.log" && break
  sleep 0.1
done
grep -q "fake API server on" "$work/fake.log" || { cat "$work/fake.log" >&2; exit 1; }

t0=$(now)
start_replica 0
leader_ready=$(wait_ready 0 "$t0")
start_replica 1
wait_follower 1
echo "# Failover with two gpushare-extender processes: lease $lease, renew deadline $renew, retry $retry"
echo
echo "machine: $(nproc) CPUs, load before: $(cut -d' ' -f1-3 /proc/loadavg); fake API server with 200 nodes and 1 000 pods; first leader ready ${leader_ready} s after start"
echo
echo "| round | how the leader stopped | other replica ready after |"
echo "|---:|---|---:|"
leader=0
round=0
for kind in SIGKILL SIGTERM; do
  for _ in $(seq 1 "$rounds"); do
    round=$((round + 1))
    follower=$((1 - leader))
    stopped=$(now)
    kill -s "${kind#SIG}" "${pids[$leader]}"
    took=$(wait_ready "$follower" "$stopped")
    wait "${pids[$leader]}" 2>/dev/null || true
    echo "| $round | $kind | $took s |"
    start_replica "$leader"
    wait_follower "$leader"
    leader=$follower
  done
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
