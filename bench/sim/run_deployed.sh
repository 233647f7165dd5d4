#!/usr/bin/env bash
# Reproduces docs/placement.md, "As deployed": the single-GPU and CPU-only pods of each openb
# trace placed through a model of kube-scheduler configured by the scheduler configuration
# files the project ships, with the extender's own service in process, next to the same policy
# alone on the same pods (the simulator's ideal). Cluster: all 1523 nodes of the trace (the 310
# CPU-only nodes included). Writes out/deployed/<trace>-<config>.{csv,md} and
# docs/img/deployed-<trace>.svg.
#
#   bench/sim/run_deployed.sh                        # 3 traces x shipped configs, seeds 42..44
#   SEEDS=10 TRACES=default bench/sim/run_deployed.sh
#   CALIBRATE=1 bench/sim/run_deployed.sh            # only the kube 1.20 calibration table
set -euo pipefail
cd "$(dirname "$0")/../.."

build="${GPUSHARE_SIM_BUILD_DIR:-build-sim}"
jobs="${JOBS:-2}"
seeds="${SEEDS:-3}"
traces="${TRACES:-default multigpu20 gpushare100}"
out="${OUT_DIR:-out/deployed}"
data=bench/data/openb
nodes="$data/openb_node_list_all_node.csv"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target gpushare-sim >/dev/null
mkdir -p "$out" docs/img
sim() { "$build/gpushare-sim" --nodes "$nodes" --seeds "$seeds" --first-seed 42 --jobs "$jobs" "$@"; }

# Calibration: the configurations a real kube-scheduler 1.20.5 was measured with,
# the service as it was then (binpack, min-max scores).
calibrate() {
  # Allocation % where the arrived GPU demand reaches 100 %, per seed (the table's column).
  per_seed() {
    python3 -c '
import collections, csv, sys
at = collections.defaultdict(dict)
for row in csv.DictReader(open(sys.argv[1])):
    if row["arrived_pct"] == "100":
        at[row["policy"]][int(row["seed"])] = float(row["alloc_pct"])
for policy, seeds in at.items():
    print(policy, " / ".join(f"{seeds[s]:.2f}" for s in sorted(seeds)), "(seeds", ", ".join(map(str, sorted(seeds))) + ")")
' "$1"
  }
  for config in shipped filter-bind-only most-allocated rtcr-gpu-mem; do
    echo "== kube 1.20, $config"
    sim --pods "$data/openb_pod_list_default.csv" --policy binpack --score-mapping minmax \
      --kube-version 1.20 --scheduler-config "bench/sim/kube-1.20/$config.yaml" \
      --out "$out/calibration-$config.csv" >/dev/null
    per_seed "$out/calibration-$config.csv" | tee "$out/calibration-$config.md"
  done
  echo "== kube 1.20, shipped, without CPU-only pods"
  sim --pods "$data/openb_pod_list_default.csv" --policy binpack --score-mapping minmax \
    --kube-version 1.20 --scheduler-config bench/sim/kube-1.20/shipped.yaml --gpu-pods-only \
    --out "$out/calibration-no-cpu-only.csv" >/dev/null
  per_seed "$out/calibration-no-cpu-only.csv" | tee "$out/calibration-no-cpu-only.md"
  echo "== the same pods alone in the simulator (binpack)"
  sim --pods "$data/openb_pod_list_default.csv" --policy binpack --single-gpu-only \
    --out "$out/calibration-ideal.csv" >/dev/null
  per_seed "$out/calibration-ideal.csv" | tee "$out/calibration-ideal.md"
}
if [[ -n "${CALIBRATE:-}" ]]; then
  calibrate
  exit 0
fi

# The shipped configurations, Kubernetes 1.25+ (the v1beta3 and v1beta2 files carry the same
# fields), with the service's default policy and binpack; the second-scheduler set-up leaves
# CPU-only pods to the default scheduler, as it does in a cluster.
for trace in $traces; do
  for config in deploy/scheduler/kube-scheduler-config.yaml \
                deploy/overlays/second-scheduler/gpushare-scheduler-config.yaml \
                bench/sim/configs/gpu-pods-only.yaml; do
    name="$(basename "$config" .yaml)"
    echo "== $trace, $config"
    sim --pods "$data/openb_pod_list_$trace.csv" --policy fgd-plus,binpack --with-ideal \
      --scheduler-config "$config" --out "$out/$trace-$name.csv" \
      --plot "docs/img/deployed-$trace-$name.svg" \
      --title "openb $trace trace as deployed ($config), seeds 42..$((41 + seeds))" |
      tee "$out/$trace-$name.md"
  done
done
