#!/usr/bin/env bash
# Reproduces the "Over time" figures of docs/placement.md: the time mode of gpushare-sim on two
# openb traces with lifetimes, fgd-plus and FGD, at 100 % offered load without and with the
# consolidation planner at a few move budgets, and at 90 % and 110 % without; and on the PAI 2020
# trace (bench/data/pai) at 90, 100 and 110 % without and with the planner, plus the deployed
# path (kube-scheduler's cycle around the extender, the shipped configuration) at 100 %. Seeds
# 42-44. Writes out/churn/<trace>*.{csv,md}.
#
#   bench/sim/run_churn.sh                     # default and gpushare100: ~20 CPU-minutes
#   TRACES=pai JOBS=2 bench/sim/run_churn.sh   # the PAI trace alone
#   TRACES=default BUDGETS=0,0.02 bench/sim/run_churn.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

build="${GPUSHARE_SIM_BUILD_DIR:-build-sim}"
jobs="${JOBS:-1}"
seeds="${SEEDS:-3}"
traces="${TRACES:-default gpushare100}"
out="${OUT_DIR:-out/churn}"
data=bench/data/openb
if [[ -z "${GPUSHARE_SIM_BINARY:-}" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "$jobs" --target gpushare-sim >/dev/null
fi
sim="${GPUSHARE_SIM_BINARY:-$build/gpushare-sim}"
mkdir -p "$out"

# Lifetimes cut at 6 h (the trace's longest run for months: steady state would take as long),
# 6 h of warm-up, 12 h measured (6 h on gpushare100, twice the pods per hour); the planner every
# 5 min, at most 2 moves per GPU freed.
common=(--churn --seeds "$seeds" --jobs "$jobs" --max-lifetime 21600 --warmup 21600
  --give-up-after 3600 --consolidate-every 300 --consolidate-max-moves 64
  --consolidate-per-gpu 2 -v)
nodes="$data/openb_node_list_gpu_node.csv"
if [[ " $traces " == *" default "* ]]; then
  pods="$data/openb_pod_list_default.csv"
  echo "== default"
  nice -n 5 "$sim" "${common[@]}" --duration 43200 --nodes "$nodes" --pods "$pods" \
    --policy fgd-plus,fgd --load 1.0 --consolidate "${BUDGETS:-0,0.005,0.02}" \
    --out "$out/default.csv" | tee "$out/default.md"
  echo "== default, 90 % and 110 %"
  nice -n 5 "$sim" "${common[@]}" --duration 43200 --nodes "$nodes" --pods "$pods" \
    --policy fgd-plus,fgd --load 0.9,1.1 --sample-every 0 | tee "$out/default-loads.md"
  echo "== default, larger budgets"
  nice -n 5 "$sim" "${common[@]}" --duration 43200 --nodes "$nodes" --pods "$pods" \
    --policy fgd-plus --load 1.0 --consolidate 0.1,0.5 --sample-every 0 |
    tee "$out/default-budgets.md"
  echo "== default, 90 %, consolidation"
  nice -n 5 "$sim" "${common[@]}" --duration 43200 --nodes "$nodes" --pods "$pods" \
    --policy fgd-plus --load 0.9 --consolidate 0.02 --sample-every 0 |
    tee "$out/default-90-consolidate.md"
fi
if [[ " $traces " == *" gpushare100 "* ]]; then
  echo "== gpushare100"
  nice -n 5 "$sim" "${common[@]}" --duration 21600 --nodes "$nodes" \
    --pods "$data/openb_pod_list_gpushare100.csv" --policy fgd-plus,fgd --load 1.0 \
    --consolidate "${BUDGETS:-0,0.02}" --out "$out/gpushare100.csv" | tee "$out/gpushare100.md"
fi
if [[ " $traces " == *" pai "* ]]; then
  # No PAI machine list in the data: openb's 1523 nodes (6212 GPUs, 310 CPU-only nodes for the
  # CPU-only tasks). ${PAI_DURATION} s measured after the same 6 h warm-up.
  pai=(--nodes "$data/openb_node_list_all_node.csv" --pods bench/data/pai/task.csv
    --duration "${PAI_DURATION:-43200}")
  echo "== pai, 90/100/110 %, without and with consolidation"
  nice -n 5 "$sim" "${common[@]}" "${pai[@]}" --policy fgd-plus,fgd --load 0.9,1.0,1.1 \
    --consolidate "${BUDGETS:-0,0.005,0.02}" --out "$out/pai.csv" | tee "$out/pai.md"
  echo "== pai, the deployed path (shipped configuration), 100 %, and the policy alone"
  nice -n 5 "$sim" "${common[@]}" "${pai[@]}" --policy fgd-plus --load 1.0 \
    --scheduler-config deploy/scheduler/kube-scheduler-config.yaml --with-ideal \
    --sample-every 0 | tee "$out/pai-deployed.md"
fi
