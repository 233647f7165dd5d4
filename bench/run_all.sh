#!/usr/bin/env bash
# Regenerates the in-process and HTTP tables (docs/benchmarks-history.md) and the latency plot.
#
#   bench/run_all.sh                 build in build-bench/ (Release), run everything
#   QUICK=1 bench/run_all.sh         shorter runs (smoke test of the pipeline, not for the doc)
#   RT=1 bench/run_all.sh            also run the latency distributions under SCHED_FIFO
#                                    (chrt -f 1, needs root): on a machine shared with other
#                                    work this keeps other processes from preempting the
#                                    measured thread, so wall-clock p99 is the code's, not the
#                                    neighbours'. Costs one core for about a minute.
#
# Writes bench/results/ (raw Google Benchmark JSON and console text, the HTTP tables, machine
# facts with the load average before and after every step, tables.md built from the JSON) and
# docs/img/latency-vs-nodes.svg. The sync numbers (bench/sync/) are separate.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
build=${BUILD_DIR:-build-bench}
out=${OUT:-bench/results}
mkdir -p "$out" docs/img

if [[ "${QUICK:-0}" == 1 ]]; then
  min_time=0.1
  http_duration=3s
else
  min_time=0.5
  http_duration=10s
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
facts="$out/machine.txt"
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include bench || echo ' (+ uncommitted changes)')"
  echo "cpus: $(nproc); model: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "compiler: $(c++ --version | head -1); build type: Release (-O3 -DNDEBUG)"
  echo "kernel: $(uname -r)"
} >"$facts"
step() { echo "load before $1: $(load)" >>"$facts"; }

echo "== building in $build (Release)" >&2
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_BENCH=ON -DGPUSHARE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target scheduling_bench json_bench bench_inputs gpushare-extender
bin="$build/bench"

run_bench() {  # name exe filter [extra args...]
  local name=$1 exe=$2 filter=$3
  shift 3
  echo "== $name" >&2
  step "$name"
  "$bin/$exe" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
    --benchmark_out="$out/$name.json" --benchmark_out_format=json "$@" | tee "$out/$name.txt"
}

# Part 1: in-process. Throughput (mean per call) of the service calls, the bind's GPU choice
# per policy, and the whole request (decode + call + encode).
run_bench scheduling scheduling_bench '^BM_(Filter|Prioritize|PlaceOneNode|Bind|FilterRequest|PrioritizeRequest)/'
# Latency distributions: 2 000 single requests per point, p50/p90/p99/max of the wall-clock and
# CPU time of each one.
run_bench latency scheduling_bench 'Latency'
if [[ "${RT:-0}" == 1 ]]; then
  echo "== latency under SCHED_FIFO" >&2
  step "latency-rt"
  chrt -f 1 "$bin/scheduling_bench" --benchmark_filter='Latency' \
    --benchmark_out="$out/latency-rt.json" --benchmark_out_format=json | tee "$out/latency-rt.txt"
fi
run_bench json json_bench '.'
echo "load after the microbenchmarks: $(load)" >>"$facts"

# Part 2: HTTP load with wrk, 5 000 nodes. Every node offered (the worst case), the 500 nodes
# kube-scheduler offers by default at this size, and full Node objects (nodeCacheCapable: false).
echo "== HTTP" >&2
step "http"
DURATION=$http_duration bench/http/run.sh "$build" | tee "$out/http-names-all.md"
DURATION=$http_duration OFFERED=500 bench/http/run.sh "$build" | tee "$out/http-names-500.md"
DURATION=$http_duration VERBS=filter CONNECTIONS="1 2 8" BODY=nodes bench/http/run.sh "$build" \
  | tee "$out/http-nodes-all.md"
# kube-scheduler's Go client asks for gzip; the extender then compresses every reply.
DURATION=$http_duration VERBS=filter CONNECTIONS="1 2 8" ACCEPT_ENCODING=gzip bench/http/run.sh "$build" \
  | tee "$out/http-names-all-gzip.md"
DURATION=$http_duration VERBS=filter CONNECTIONS="1 2 8" OFFERED=500 ACCEPT_ENCODING=gzip bench/http/run.sh "$build" \
  | tee "$out/http-names-500-gzip.md"
echo "load after HTTP: $(load)" >>"$facts"

latency_json="$out/latency.json"
how=""
if [[ -f "$out/latency-rt.json" && "${RT:-0}" == 1 ]]; then latency_json="$out/latency-rt.json"; how="; SCHED_FIFO"; fi
python3 bench/plot_latency.py "$latency_json" -o docs/img/latency-vs-nodes.svg \
  --load "$(grep 'load before latency' "$facts" | tail -1 | cut -d: -f2 | sed 's/^ //')$how"
python3 bench/tables.py "$out" >"$out/tables.md"
echo "== done: $out/tables.md, $out/http-*.md, docs/img/latency-vs-nodes.svg" >&2
