#!/usr/bin/env bash
# Memory and time of full-Node filters: kube-scheduler with
# nodeCacheCapable false sends whole Node objects, 38 MB at 5 000 nodes. Measures the extender's
# resident memory (VmRSS) before, its peak (VmHWM, reset through /proc/PID/clear_refs) while
# answering such filters one at a time and CONCURRENT at once, and VmRSS while idle afterwards;
# and for the filters one at a time, each one's time as curl sees it (sending 38 MB and receiving
# the reply over loopback included) and the extender's CPU per filter.
#
#   bench/http/full_nodes_memory.sh [BUILD_DIR]
#
# Environment: NODES (5000), SEQUENTIAL (5), CONCURRENT (8), ROUNDS (2), EXTRA_FLAGS.
#
# SEQUENCE="N1 N2 ..." measures bodies of different sizes instead: a filter offering N1 nodes,
# then N2 ... (the cluster has the largest count; 5 200 nodes make ~40 MB, 3 900 ~30 MB), one at
# a time, then CONCURRENT clients each sending the whole sequence at once. Growth is divided by
# the largest body: a parser or buffer grown by a large body and kept for smaller ones shows here.
set -euo pipefail
if [[ -n "${SEQUENCE:-}" ]]; then
  read -ra sequence <<<"$SEQUENCE"
  NODES=$(printf '%s\n' "${sequence[@]}" | sort -n | tail -1)
fi
NODES=${NODES:-5000}
EXTRA_FLAGS=${EXTRA_FLAGS:-"--max-request-bytes $((256 * 1024 * 1024))"}
source "$(dirname "$0")/common.sh"
generate_inputs
start_extender
body="$work/filter-nodes.json"
mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }
body_mb=$(mib "$body")
status() { awk -v k="$1:" '$1 == k {print int($2 / 1024)}' "/proc/$server_pid/status"; }
# Without "Expect: 100-continue" (curl's default for large bodies), as kube-scheduler's Go client
# sends them: the body arrives with the headers and is buffered by the reactor before a worker
# reads it (with the Expect header, the worker reads it from the socket itself).
post() {
  curl -sS -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' -H 'Expect:' \
    --data-binary @"${1:-$body}" "http://127.0.0.1:$port/gpushare-scheduler/filter"
}
# One filter, timed: "STATUS SECONDS".
timed_post() {
  curl -sS -o /dev/null -w '%{http_code} %{time_total}\n' -H 'Content-Type: application/json' \
    -H 'Expect:' --data-binary @"$body" "http://127.0.0.1:$port/gpushare-scheduler/filter"
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
ratio() { awk -v g="$1" -v b="$body_mb" 'BEGIN { printf "%.2f", g / b }'; }

if [[ -n "${SEQUENCE:-}" ]]; then
  # One body per distinct count, offering that many of the cluster's nodes.
  declare -A body_of
  for count in "${sequence[@]}"; do
    [[ -n "${body_of[$count]:-}" ]] && continue
    if (( count == NODES )); then
      body_of[$count]=$body
    else
      mkdir -p "$work/offered-$count"
      "$build/bench/bench_inputs" --nodes "$NODES" --allocated "${ALLOCATED:-0.5}" \
        --offered "$count" --out "$work/offered-$count" 2>/dev/null
      body_of[$count]="$work/offered-$count/filter-nodes.json"
    fi
  done
  run_sequence() { for count in "${sequence[@]}"; do post "${body_of[$count]}"; done; }
  sleep 2
  baseline=$(status VmRSS)
  sizes=""
  for count in "${sequence[@]}"; do sizes+="$(mib "${body_of[$count]}") "; done
  echo "# full-Node filter memory: bodies of ${sizes% } MiB in turn; largest $body_mb MiB"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); RSS at start: $baseline MiB"
  echo 5 >"/proc/$server_pid/clear_refs"
  run_sequence >>"$work/codes"
  sequential_peak=$(status VmHWM)
  after_sequential=$(status VmRSS)
  echo 5 >"/proc/$server_pid/clear_refs"
  pids=()
  for _ in $(seq 1 "${CONCURRENT:-8}"); do run_sequence >>"$work/codes" & pids+=($!); done
  wait "${pids[@]}"  # not the extender
  concurrent_peak=$(status VmHWM)
  echo
  echo "| phase | RSS MiB | growth over start MiB | growth / largest body |"
  echo "|---|---:|---:|---:|"
  echo "| start (idle) | $baseline | | |"
  echo "| peak, the sequence one at a time | $sequential_peak | $((sequential_peak - baseline)) | $(ratio $((sequential_peak - baseline))) |"
  echo "| after it | $after_sequential | $((after_sequential - baseline)) | |"
  echo "| peak, ${CONCURRENT:-8} clients each sending the sequence | $concurrent_peak | $((concurrent_peak - baseline)) | $(ratio $((concurrent_peak - baseline))) |"
  echo
  echo "replies: $(sort "$work/codes" | uniq -c | tr -s ' ' | tr '\n' ',')"
  exit 0
fi

sleep 2
baseline=$(status VmRSS)
echo "# full-Node filter memory: $NODES nodes, body $body_mb MiB"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); RSS at start: $baseline MiB"
echo 5 >"/proc/$server_pid/clear_refs"
post >>"$work/codes"  # warms the model's caches; its time is not counted
ticks_before=$(cpu_ticks)
for _ in $(seq 1 "${SEQUENTIAL:-5}"); do timed_post >>"$work/timed"; done
ticks_after=$(cpu_ticks)
cut -d' ' -f1 "$work/timed" >>"$work/codes"
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
echo "| start (idle) | $baseline | | |"
echo "| peak, ${SEQUENTIAL:-5} filters one at a time | $sequential_peak | $((sequential_peak - baseline)) | $(ratio $((sequential_peak - baseline))) |"
echo "| after them | $after_sequential | $((after_sequential - baseline)) | |"
echo "| peak, ${ROUNDS:-2} x ${CONCURRENT:-8} filters at once | $concurrent_peak | $((concurrent_peak - baseline)) | $(ratio $((concurrent_peak - baseline))) |"
echo
echo "idle after the load: $samples"
times=$(cut -d' ' -f2 "$work/timed" | sort -n | awk '{ t[NR] = $1 * 1000 } END {
  printf "min %.1f, median %.1f, max %.1f", t[1], t[int((NR + 1) / 2)], t[NR] }')
cpu_per_filter=$(awk -v d=$((ticks_after - ticks_before)) -v hz="$(getconf CLK_TCK)" \
  -v n="${SEQUENTIAL:-5}" 'BEGIN { printf "%.1f", d * 1000 / hz / n }')
echo "one at a time, ${SEQUENTIAL:-5} filters, ms as curl sees them: $times;" \
  "extender CPU $cpu_per_filter ms per filter"
