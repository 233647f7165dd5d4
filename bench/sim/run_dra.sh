#!/usr/bin/env bash
# Reproduces docs/placement.md, "DRA clusters, as deployed": each openb trace's single-GPU and
# CPU-only pods through the model of kube-scheduler, three ways:
#   device plugin    gpushare as shipped (aliyun.com/gpu-mem; the extender filters and binds)
#   DRA native       GPUs as DRA devices shared by memory, pods' GPUs as ResourceClaims; kube's
#                    allocator takes the first device that fits, kube's default plugins pick the
#                    node (bench/sim/configs/kube-default.yaml: no extender)
#   DRA + gpushare   the same, with the shipped configuration: its prioritize-only entry scores
#                    every pod (DRA pods where kube's allocator will put their claims)
# Writes out/dra/<trace>-<way>.{csv,md}.
#
#   bench/sim/run_dra.sh                            # 3 traces, seeds 42..44
#   SEEDS=1 TRACES=default bench/sim/run_dra.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

# Any build with gpushare-sim will do (GPUSHARE_SIM_BUILD_DIR=build reuses the development one).
sim_dir="${GPUSHARE_SIM_BUILD_DIR:-build-sim}"
[[ -x "$sim_dir/gpushare-sim" ]] || {
  cmake -S . -B "$sim_dir" -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$sim_dir" -j "${JOBS:-2}" --target gpushare-sim >/dev/null
}
out="${OUT_DIR:-out/dra}"
mkdir -p "$out"
data=bench/data/openb
traces="${TRACES:-default multigpu20 gpushare100}"
sim() {
  "$sim_dir/gpushare-sim" --nodes "$data/openb_node_list_all_node.csv" --first-seed 42 \
    --seeds "${SEEDS:-3}" --jobs "${JOBS:-2}" --policy "${POLICY:-fgd-plus}" "$@"
}

for trace in $traces; do
  pods="$data/openb_pod_list_$trace.csv"
  echo "== $trace, device plugin (deploy/scheduler/kube-scheduler-config.yaml)"
  sim --pods "$pods" --scheduler-config deploy/scheduler/kube-scheduler-config.yaml \
    --out "$out/$trace-device-plugin.csv" | tee "$out/$trace-device-plugin.md"
  echo "== $trace, DRA native (bench/sim/configs/kube-default.yaml)"
  sim --pods "$pods" --scheduler-config bench/sim/configs/kube-default.yaml --dra \
    --out "$out/$trace-dra-native.csv" | tee "$out/$trace-dra-native.md"
  echo "== $trace, DRA + gpushare prioritize (deploy/scheduler/kube-scheduler-config.yaml)"
  sim --pods "$pods" --scheduler-config deploy/scheduler/kube-scheduler-config.yaml --dra \
    --out "$out/$trace-dra-gpushare.csv" | tee "$out/$trace-dra-gpushare.md"
done
