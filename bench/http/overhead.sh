#!/usr/bin/env bash
# The HTTP path's overhead over the in-process cost of the same request (docs/benchmarks.md,
# "HTTP overhead"): filter and prioritize at NODES nodes x 8 GPUs, 50 % allocated, every node
# offered by name (nodeCacheCapable: true), measured
#
#   over HTTP:   bench/http/run.sh with one keep-alive connection (wrk; requests one after
#                another, so a request's latency is its cost), against gpushare-extender
#                standalone on the cluster bench/bench_inputs generates;
#   in process:  scheduling_bench's BM_FilterRequestLatency and BM_PrioritizeRequestLatency
#                (body text -> decode -> service -> encoded reply, one request per repetition),
#                on the same generated cluster and request body;
#
# and prints, per verb, both p50 and mean latencies and their ratio, HTTP / in process, and the
# server's CPU time per request against the in-process CPU time (the cost of the work). The
# target is a ratio of at most 1.3. A benchmark, not a test: run it on a quiet machine (timings on
# a shared one are noise).
#
#   bench/http/overhead.sh [BUILD_DIR]      (default: build-bench, then build; it needs
#                                            gpushare-extender, bench/bench_inputs and
#                                            bench/scheduling_bench)
#
# Environment: NODES (5000), DURATION (wrk's run per verb, 10s), REQUESTS (in-process
# repetitions, 2000), POLICY (the extender's --policy; fgd-plus, the in-process harness's
# core::kDefaultPolicy, so that prioritize scores the same way on both sides), SERVER_CPUS and
# CLIENT_CPUS (unset: taskset CPU lists for the extender and the in-process benchmark, and for
# wrk; on a machine with few cores they keep the client off the server's core).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-}
if [[ -z "$build" ]]; then
  for candidate in "$repo/build-bench" "$repo/build"; do
    if [[ -x "$candidate/bench/scheduling_bench" ]]; then build=$candidate; break; fi
  done
fi
[[ -n "$build" && -x "$build/bench/scheduling_bench" ]] || {
  echo "usage: $0 BUILD_DIR (with gpushare-extender, bench/bench_inputs and bench/scheduling_bench built)" >&2
  exit 2
}
NODES=${NODES:-5000}
REQUESTS=${REQUESTS:-2000}
out=$(mktemp -d /tmp/gpushare-http-overhead.XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "# HTTP overhead: $NODES nodes x 8 GPUs, 50 % allocated, every node offered by name"
echo
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

MS_DECIMALS=3 NODES=$NODES ALLOCATED=0.5 CONNECTIONS=1 VERBS="filter prioritize" BODY=names \
  POLICY=${POLICY:-fgd-plus} DURATION=${DURATION:-10s} \
  "$here/run.sh" "$build" | tee "$out/http.md"
echo

GPUSHARE_BENCH_REQUESTS=$REQUESTS ${SERVER_CPUS:+taskset -c "$SERVER_CPUS"} "$build/bench/scheduling_bench" \
  --benchmark_filter="^BM_(Filter|Prioritize)RequestLatency/nodes:$NODES/alloc%:50/" \
  --benchmark_format=json --benchmark_out="$out/inprocess.json" >/dev/null

python3 - "$out/http.md" "$out/inprocess.json" <<'PY'
import json
import sys

http = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    # | verb | connections | requests/s | mean ms | p50 ms | ...
    if len(cells) >= 5 and cells[0] in ("filter", "prioritize") and cells[1] == "1":
        http[cells[0]] = {"mean": float(cells[3]), "p50": float(cells[4]), "cpu": float(cells[9])}

scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
local = {}
for b in json.load(open(sys.argv[2]))["benchmarks"]:
    verb = "filter" if b["run_name"].startswith("BM_FilterRequest") else "prioritize"
    stat = b.get("aggregate_name")
    if stat in ("mean", "p50"):
        local.setdefault(verb, {})[stat] = b["real_time"] * scale[b["time_unit"]]
    if stat == "mean":
        local.setdefault(verb, {})["cpu"] = b["cpu_time"] * scale[b["time_unit"]]

print("| verb | HTTP p50 ms | in-process p50 ms | p50 ratio | HTTP mean ms | in-process mean ms | mean ratio | server CPU ms | in-process CPU ms | CPU ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
worst, worst_cpu = 0.0, 0.0
for verb in ("filter", "prioritize"):
    if verb not in http or verb not in local:
        print(f"| {verb} | missing | | | | | | | | |")
        continue
    h, l = http[verb], local[verb]
    p50, mean, cpu = h["p50"] / l["p50"], h["mean"] / l["mean"], h["cpu"] / l["cpu"]
    worst, worst_cpu = max(worst, p50), max(worst_cpu, cpu)
    print(f"| {verb} | {h['p50']:.3f} | {l['p50']:.3f} | {p50:.2f} | {h['mean']:.3f} | {l['mean']:.3f} | {mean:.2f} "
          f"| {h['cpu']:.3f} | {l['cpu']:.3f} | {cpu:.2f} |")
print()
# p50: one request at a time, so a request's latency, client included (on a machine with few
# cores the client shares them). CPU: the server's CPU time per request (user + system, over the
# whole run) against the in-process CPU time, which bounds the throughput of cores given to it.
print(f"ratio (worst p50, HTTP / in process): {worst:.2f} (target <= 1.30)")
print(f"ratio (worst CPU per request, server / in process): {worst_cpu:.2f}")
PY
