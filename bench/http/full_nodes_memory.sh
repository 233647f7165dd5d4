#!/usr/bin/env bash
# Memory of full-Node filters (issue 13, item 10): kube-scheduler with nodeCacheCapable false sends
# whole Node objects, 38 MB at 5 000 nodes. Measures the extender's resident memory (VmRSS) before,
# its peak (VmHWM, reset through /proc/PID/clear_refs) while answering such filters one at a time
# and CONCURRENT at once, and VmRSS while idle afterwards.
#
#   bench/http/full_nodes_memory.sh [BUILD_DIR]
#
# Environment: NODES (5000), SEQUENTIAL (5), CONCURRENT (8), ROUNDS (2), EXTRA_FLAGS.
set -euo pipefail
NODES=${NODES:-5000}
EXTRA_FLAGS=${EXTRA_FLAGS:-"--max-request-bytes $((256 * 1024 * 1024))"}
source "$(dirname "$0")/common.sh"
generate_inputs
start_extender
body="$work/filter-nodes.json"
body_mb=$(awk -v b="$(stat -c %s "$body")" 'BEGIN { printf "%.1f", b / 1048576 }')
status() { awk -v k="$1:" '$1 == k {print int($2 / 1024)}' "/proc/$server_pid/status"; }
post() {
  curl -sS -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' --data-binary @"$body" \
    "http://127.0.0.1:$port/gpushare-scheduler/filter"
}
sleep 2
baseline=$(status VmRSS)
echo "# full-Node filter memory: $NODES nodes, body $body_mb MiB"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); RSS at start: $baseline MiB"
echo 5 >"/proc/$server_pid/clear_refs"
for _ in $(seq 1 "${SEQUENTIAL:-5}"); do post >>"$work/codes"; done
sequential_peak=$(status VmHWM)
after_sequential=$(status VmRSS)
echo 5 >"/proc/$server_pid/clear_refs"
for _ in $(seq 1 "${ROUNDS:-2}"); do
  pids=()
  for _ in $(seq 1 "${CONCURRENT:-8}"); do post >>"$work/codes" & pids+=($!); done
  wait "${pids[@]}"  # not the extender
done
concurrent_peak=$(status VmHWM)
codes=$(sort "$work/codes" | uniq -c | tr -s ' ' | tr '\n' ',')
samples=""
for t in 0 5 10 30; do
  while (( $(date +%s) < ${idle_start:=$(date +%s)} + t )); do sleep 0.5; done
  samples+="$t s: $(status VmRSS) MiB; "
done
echo
echo "| phase | RSS MiB | growth over start MiB | growth / body |"
echo "|---|---:|---:|---:|"
ratio() { awk -v g="$1" -v b="$body_mb" 'BEGIN { printf "%.2f", g / b }'; }
echo "| start (idle) | $baseline | | |"
echo "| peak, ${SEQUENTIAL:-5} filters one at a time | $sequential_peak | $((sequential_peak - baseline)) | $(ratio $((sequential_peak - baseline))) |"
echo "| after them | $after_sequential | $((after_sequential - baseline)) | |"
echo "| peak, ${ROUNDS:-2} x ${CONCURRENT:-8} filters at once | $concurrent_peak | $((concurrent_peak - baseline)) | $(ratio $((concurrent_peak - baseline))) |"
echo
echo "idle after the load: $samples"
echo "HTTP statuses: $codes load after: $(cut -d' ' -f1-3 /proc/loadavg)"
