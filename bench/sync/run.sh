#!/usr/bin/env bash
# Initial-sync benchmark: the extender against the fake API server seeded with a large cluster
# of realistic objects. Prints the extender's time from start to /readyz, its peak RSS (VmHWM)
# at that moment, the CPU seconds each process spent during the sync, and how long the fake
# alone takes to serve the pod list (rv=0, one piece, as the watch cache serves it) to curl.
#
#   bench/sync/run.sh [--build DIR] [--fake-build DIR] [--nodes N] [--pods M] [--runs K]
#                     [--port P] [--nice N] [--relist R [--filter-rate HZ]]
#
# Defaults: build-sync (the fake from the same build), 5000 nodes, 50000 pods, 1 run,
# port 39997. Needs curl and bc (and python3 for --relist).
# On a shared, busy machine the wall times mostly measure the load: the CPU seconds do not.
# --nice -10 (root only) runs both processes ahead of the other work, close to an idle machine.
# --relist R: after each run's sync, R times: expire the fake's watches (SIGUSR1: every watch
# ends with an ERROR 410) while filter_load.py sends filters, and report the time until the
# extender has relisted nodes and pods, its CPU and peak RSS meanwhile, and the filters' answers.
set -euo pipefail

build=build-sync
fake_build=""
nodes=5000
pods=50000
runs=1
port=39997
nice_level=0
relists=0
filter_rate=200
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --fake-build) fake_build="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --pods) pods="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --nice) nice_level="$2"; shift 2 ;;
    --relist) relists="$2"; shift 2 ;;
    --filter-rate) filter_rate="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
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
load_pid=""
cleanup() {
  [[ -n "$load_pid" ]] && kill "$load_pid" 2>/dev/null && wait "$load_pid" 2>/dev/null
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
seconds() { printf '%.3f' "$(echo "$1" | bc)"; }
# Unix time of the extender log's last line matching $1 (its stamps are local time, ms).
log_time() {
  local stamp
  stamp=$(grep -E "$1" "$work/extender.log" | tail -1 | cut -d' ' -f1)
  [[ -n "$stamp" ]] && date -d "${stamp/T/ }" +%s.%N
}

# One relist under filter load: the fake expires every watch; waits until the extender has
# relisted nodes and pods, and reports what it took.
relist_once() {
  local index=$1 listed_nodes listed_pods expiries expired_at ext_cpu0 fake_cpu0 caught_up=""
  # Peak RSS of the relist alone: reset VmHWM to the current RSS (Linux clear_refs 5).
  echo 5 >"/proc/$extender_pid/clear_refs" 2>/dev/null || echo "    (cannot reset VmHWM: peak is since start)"
  python3 bench/sync/filter_load.py load "$port" "$work/filters.$index" --nodes "$nodes" \
    --rate "$filter_rate" &
  load_pid=$!
  sleep 1  # filters answered before the 410, for comparison
  listed_nodes=$(grep -c "nodes listed" "$work/extender.log" || true)
  listed_pods=$(grep -c "pods listed" "$work/extender.log" || true)
  expiries=$(grep -c "expired watches at" "$work/fake.log" || true)
  ext_cpu0=$(cpu_seconds "$extender_pid")
  fake_cpu0=$(cpu_seconds "$fake_pid")
  kill -USR1 "$fake_pid"
  for _ in $(seq 1 6000); do
    if (( $(grep -c "nodes listed" "$work/extender.log" || true) > listed_nodes &&
          $(grep -c "pods listed" "$work/extender.log" || true) > listed_pods )); then
      caught_up=$(now); break
    fi
    sleep 0.01
  done
  [[ -n "$caught_up" ]] || { echo "the extender did not relist within 60 s" >&2; tail "$work/extender.log" >&2; exit 1; }
  local ext_cpu1 fake_cpu1 hwm
  ext_cpu1=$(cpu_seconds "$extender_pid")
  fake_cpu1=$(cpu_seconds "$fake_pid")
  hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$extender_pid/status")
  sleep 1  # and after
  kill "$load_pid"; wait "$load_pid" 2>/dev/null || true; load_pid=""
  (( $(grep -c "expired watches at" "$work/fake.log") > expiries )) || { echo "the fake did not expire" >&2; exit 1; }
  expired_at=$(grep "expired watches at" "$work/fake.log" | tail -1 | awk '{ print $4 }' | tr -d :)
  local pods_seen pods_start pods_done nodes_done
  pods_seen=$(log_time "reflector pods: watch at resourceVersion .* expired")
  pods_start=$(log_time "reflector pods: relisting")
  pods_done=$(log_time "pods listed")
  nodes_done=$(log_time "nodes listed")
  echo "relist $index: 410 -> nodes listed $(seconds "$nodes_done - $expired_at") s," \
       "pods listed $(seconds "$pods_done - $expired_at") s (410 seen $(seconds "$pods_seen - $expired_at") s," \
       "relist started $(seconds "$pods_start - $expired_at") s after the back-off," \
       "list + model $(seconds "$pods_done - $pods_start") s), peak RSS $(( hwm / 1024 )) MB," \
       "CPU extender $(seconds "$ext_cpu1 - $ext_cpu0") s, fake $(seconds "$fake_cpu1 - $fake_cpu0") s"
  grep -E "relisting|nodes listed|pods listed" "$work/extender.log" | tail -4 | sed 's/^/    /'
  echo -n "    during the relist (410 to caught up): "
  python3 bench/sync/filter_load.py summary "$work/filters.$index" "$expired_at" "$caught_up"
  echo -n "    list + model only (relist start to pods listed): "
  python3 bench/sync/filter_load.py summary "$work/filters.$index" "$pods_start" "$pods_done"
  echo -n "    whole load (1 s before to 1 s after): "
  python3 bench/sync/filter_load.py summary "$work/filters.$index" 0 1e12
}

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
  for relist in $(seq 1 "$relists"); do
    sleep 2  # out of the initial sync's tail (malloc_trim, first watches)
    relist_once "$run.$relist"
  done
  kill "$extender_pid"
  wait "$extender_pid" 2>/dev/null || true
  extender_pid=""
done
echo "nice $nice_level; load: $(uptime)"
