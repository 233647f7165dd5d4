#!/usr/bin/env bash
# Reproduces the numbers and plots of docs/placement.md: every placement policy, 10 seeds
# (42..51), on the three openb traces, up to 130 % arrival (the method of Weng et al.,
# USENIX ATC'23). Writes out/placement/<trace>.{csv,md} and docs/img/placement-<trace>.svg.
#
#   bench/sim/run_placement.sh                 # everything (~10 min on 2 idle cores)
#   SEEDS=1 TRACES=default bench/sim/run_placement.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

build="${GPUSHARE_SIM_BUILD_DIR:-build-sim}"
jobs="${JOBS:-2}"
seeds="${SEEDS:-10}"
traces="${TRACES:-default multigpu20 gpushare100}"
out="${OUT_DIR:-out/placement}"
data=bench/data/openb

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target gpushare-sim >/dev/null
mkdir -p "$out" docs/img

# The paper's baselines, FGD with the trace's target (as in the paper) and learning it online
# (as the service does), fgd-plus likewise, what the Go extender gets (gpushare-original), and
# this project's older policies.
policies=random,dot-product,gpu-clustering,gpu-packing,best-fit,fgd,fgd-online,fgd-plus
policies+=,fgd-plus-online,gpushare-original,binpack,spread
# As the extender scores today: it does not see CPU or memory (kube-scheduler filters on them).
policies+=,binpack/gpu-only,fgd-online/gpu-only,fgd-plus-online/gpu-only
plotted=random,gpu-packing,best-fit,fgd,fgd-plus-online,gpushare-original,binpack

for trace in $traces; do
  echo "== $trace"
  "$build/gpushare-sim" \
    --nodes "$data/openb_node_list_gpu_node.csv" \
    --pods "$data/openb_pod_list_$trace.csv" \
    --policy "$policies" --seeds "$seeds" --jobs "$jobs" --max-arrival 1.3 \
    --out "$out/$trace.csv" \
    --plot "docs/img/placement-$trace.svg" --plot-policy "$plotted" \
    --title "openb $trace trace, $seeds seeds (Weng et al., USENIX ATC'23)" |
    tee "$out/$trace.md"
done

# How few GPUs could any policy leave idle at 100 % arrival if it placed every sharing pod?
# (LP bound of bin packing; see the script.)
for trace in $traces; do
  echo "== packing bound, $trace"
  "$build/gpushare-sim" --nodes "$data/openb_node_list_gpu_node.csv" \
    --pods "$data/openb_pod_list_$trace.csv" --seeds "$seeds" --max-arrival 1.0 \
    --dump-arrivals "$out/arrivals-$trace.csv" --arrivals-only >/dev/null
  python3 bench/sim/packing_bound.py "$out/arrivals-$trace.csv" | tail -n 1 |
    tee "$out/bound-$trace.txt"
done

# Speed: one policy, one seed, the default trace to 130 %, one process at a time (the table's
# last column is the run's CPU time; `time` adds reading the trace).
echo "== one policy, one seed, default trace to 130 %"
for policy in random best-fit fgd fgd-online fgd-plus fgd-plus-online; do
  /usr/bin/env time -f "$policy: %e s wall, %U s user (whole process)" \
    "$build/gpushare-sim" --nodes "$data/openb_node_list_gpu_node.csv" \
    --pods "$data/openb_pod_list_default.csv" --policy "$policy" --seeds 1 --jobs 1 |
    tail -n 1
done 2>&1 | tee "$out/timing.md"
