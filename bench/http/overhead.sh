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
# and prints, per verb, both p50 and mean latencies and their ratio, HTTP / in process. The
# target is a ratio of at most 1.3. A benchmark, not a test: run it on a quiet machine (timings on
# a shared one are noise).
#
#   bench/http/overhead.sh [BUILD_DIR]      (default: build-bench, then build; it needs
#                                            gpushare-extender, bench/bench_inputs and
#                                            bench/scheduling_bench)
#
# Environment: NODES (5000), DURATION (wrk's run per verb, 10s), REQUESTS (in-process
# repetitions, 2000), POLICY (the extender's --policy; fgd-plus, the in-process harness's
# core::kDefaultPolicy, so that prioritize scores the same way on both sides).
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

GPUSHARE_BENCH_REQUESTS=$REQUESTS "$build/bench/scheduling_bench" \
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
        http[cells[0]] = {"mean": float(cells[3]), "p50": float(cells[4])}

scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
local = {}
for b in json.load(open(sys.argv[2]))["benchmarks"]:
    verb = "filter" if b["run_name"].startswith("BM_FilterRequest") else "prioritize"
    stat = b.get("aggregate_name")
    if stat in ("mean", "p50"):
        local.setdefault(verb, {})[stat] = b["real_time"] * scale[b["time_unit"]]

print("| verb | HTTP p50 ms | in-process p50 ms | p50 ratio | HTTP mean ms | in-process mean ms | mean ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
worst = 0.0
for verb in ("filter", "prioritize"):
    if verb not in http or verb not in local:
        print(f"| {verb} | missing | | | | | |")
        continue
    h, l = http[verb], local[verb]
    p50, mean = h["p50"] / l["p50"], h["mean"] / l["mean"]
    worst = max(worst, p50)
    print(f"| {verb} | {h['p50']:.3f} | {l['p50']:.3f} | {p50:.2f} | {h['mean']:.3f} | {l['mean']:.3f} | {mean:.2f} |")
print()
print(f"ratio (worst p50, HTTP / in process): {worst:.2f} (target <= 1.30)")
PY
