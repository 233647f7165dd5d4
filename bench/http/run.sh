#!/usr/bin/env bash
# HTTP load test of gpushare-extender's filter and prioritize (docs/benchmarks.md, "Over HTTP").
#
# Generates a cluster (default 5 000 nodes x 8 GPUs, 50 % of GPU memory allocated), starts the
# extender standalone on it (loopback only), and drives filter and prioritize with wrk posting
# kube-scheduler-shaped ExtenderArgs (NodeNames, nodeCacheCapable: true) over 1, 2, 8 and 64
# keep-alive connections. Prints a Markdown table of throughput, latency percentiles and the
# server's CPU time per request, and stops everything it started.
#
#   bench/http/run.sh [BUILD_DIR]          (default: build-bench, then build)
#
# Environment: NODES (5000), ALLOCATED (0.5), OFFERED (nodes per request: all; kube-scheduler's
# default percentageOfNodesToScore offers 500 at 5 000 nodes), DURATION (10s per run), CONNECTIONS ("1 2 8 64"),
# VERBS ("filter prioritize"), BODY (names | nodes: full Node objects), POLICY (binpack),
# HTTP_THREADS (0 = the server's default), WRK_THREADS (2), KEEP (1: keep the work directory),
# ACCEPT_ENCODING (unset; "gzip" asks for compressed replies, as kube-scheduler's Go client does),
# MS_DECIMALS (2: decimals of the millisecond columns), SERVER_CPUS and CLIENT_CPUS (unset: CPU
# lists for taskset, to keep the extender and wrk off each other's cores).
set -euo pipefail

NODES=${NODES:-5000}
ALLOCATED=${ALLOCATED:-0.5}
OFFERED=${OFFERED:-$NODES}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-"1 2 8 64"}
VERBS=${VERBS:-"filter prioritize"}
BODY=${BODY:-names}
POLICY=${POLICY:-binpack}
HTTP_THREADS=${HTTP_THREADS:-0}
WRK_THREADS=${WRK_THREADS:-2}
EXTRA_FLAGS="--policy $POLICY --http-threads $HTTP_THREADS --max-request-bytes $((256 * 1024 * 1024)) ${EXTRA_FLAGS:-}"
source "$(dirname "$0")/common.sh"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
body_file="$work/filter-$BODY.json"
generate_inputs
start_ns=$(date +%s%N)
start_extender
ready_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status")

cpu_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
ticks_per_second=$(getconf CLK_TCK)

echo "# gpushare-extender HTTP load: $NODES nodes x 8 GPUs, $ALLOCATED allocated, $OFFERED nodes offered per request, body=$BODY ($(( $(stat -c %s "$body_file") / 1024 )) KiB), policy=$POLICY${ACCEPT_ENCODING:+, Accept-Encoding: $ACCEPT_ENCODING}"
echo
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server: ready in ${ready_ms} ms (cluster file $(( $(stat -c %s "$work/cluster.json") / 1048576 )) MiB), RSS ${rss_kb} KiB; wrk -t min(c,$WRK_THREADS) -d $DURATION"
echo
echo "| verb | connections | requests/s | mean ms | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | server CPU ms/req | errors |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for verb in $VERBS; do
  for c in $CONNECTIONS; do
    threads=$(( c < WRK_THREADS ? c : WRK_THREADS ))
    before=$(cpu_ticks)
    line=$(BODY_FILE="$body_file" ${CLIENT_CPUS:+taskset -c "$CLIENT_CPUS"} wrk -t"$threads" -c"$c" -d"$DURATION" --timeout 5s -s "$here/post.lua" \
             "http://127.0.0.1:$port/gpushare-scheduler/$verb" | grep '^RESULT' || true)
    after=$(cpu_ticks)
    if [[ -z "$line" ]]; then echo "| $verb | $c | wrk failed | | | | | | | | |"; continue; fi
    declare -A r=()
    for kv in ${line#RESULT }; do r[${kv%%=*}]=${kv#*=}; done
    ms() { awk -v us="$1" -v d="${MS_DECIMALS:-2}" 'BEGIN { printf "%.*f", d, us / 1000 }'; }
    cpu_ms=$(awk -v t=$((after - before)) -v hz="$ticks_per_second" -v n="${r[requests]}" \
               'BEGIN { if (n > 0) printf "%.3f", t / hz * 1000 / n; else print "-" }')
    errors=$(( r[non2xx] + r[socket_errors] + r[timeouts] ))
    echo "| $verb | $c | ${r[rps]} | $(ms "${r[mean_us]}") | $(ms "${r[p50_us]}") | $(ms "${r[p90_us]}") | $(ms "${r[p99_us]}") | $(ms "${r[p999_us]}") | $(ms "${r[max_us]}") | $cpu_ms | $errors |"
    unset r
  done
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); server RSS after: $(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status") KiB"
