# Shared by bench/http/*.sh: finds the build, generates a cluster, starts and stops the extender.
# Sets: build, work, port, server_pid. Callers set NODES, ALLOCATED, OFFERED, EXTRA_FLAGS first.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-}
if [[ -z "$build" ]]; then
  for candidate in "$repo/build-bench" "$repo/build"; do
    if [[ -x "$candidate/gpushare-extender" ]]; then build=$candidate; break; fi
  done
fi
[[ -n "$build" && -x "$build/gpushare-extender" && -x "$build/bench/bench_inputs" ]] || {
  echo "usage: $0 BUILD_DIR (with gpushare-extender and bench/bench_inputs built)" >&2; exit 2; }

work=$(mktemp -d /tmp/gpushare-http-bench.XXXXXX)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT INT TERM

generate_inputs() {
  echo "generating ${NODES:-5000} nodes at ${ALLOCATED:-0.5} allocated in $work" >&2
  "$build/bench/bench_inputs" --nodes "${NODES:-5000}" --allocated "${ALLOCATED:-0.5}" \
    --offered "${OFFERED:-${NODES:-5000}}" --out "$work"
}

# Starts the extender on the generated cluster (generate_inputs first) and waits until it answers.
start_extender() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # shellcheck disable=SC2086
  ${SERVER_CPUS:+taskset -c "$SERVER_CPUS"} "$build/gpushare-extender" --cluster-file "$work/cluster.json" --listen "127.0.0.1:$port" \
    --log-level warn ${EXTRA_FLAGS:---policy binpack} >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 1200); do
    if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || { echo "extender exited:" >&2; cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "extender not ready" >&2; exit 1
}
