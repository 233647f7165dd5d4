#!/usr/bin/env bash
# The default policy on workloads it was not tuned on (docs/placement.md, "Beyond the three
# traces"): bench/sim/make_variants.py's variants of the openb traces, every policy alone in the
# simulator (all 1523 nodes, seeds 42..44, to 130 % arrival), and the deployed path for the
# single-GPU variants. Prints, per variant, the table and the largest shortfall of fgd-plus
# against FGD at any arrival level.
#
#   bench/sim/run_variants.sh
#   SEEDS=10 VARIANTS=constrained30 bench/sim/run_variants.sh
#   COMBINED=1 bench/sim/run_variants.sh    # the combined variants, generated into out/
#   SWEEP=1 bench/sim/run_variants.sh       # the multi-GPU share sweep, generated into out/
set -euo pipefail
cd "$(dirname "$0")/../.."

build="${GPUSHARE_SIM_BUILD_DIR:-build-sim}"
jobs="${JOBS:-2}"
seeds="${SEEDS:-3}"
out="${OUT_DIR:-out/variants}"
nodes=bench/data/openb/openb_node_list_all_node.csv

if [[ "${SWEEP:-0}" == 1 ]]; then
  variant_dir="$out/data"
  python3 bench/sim/make_variants.py --multigpu-sweep --out "$variant_dir" >/dev/null
  all=$(cd "$variant_dir" && ls openb_pod_list_*.csv | sed 's/openb_pod_list_//; s/\.csv$//')
  variants="${VARIANTS:-$all}"
elif [[ "${COMBINED:-0}" == 1 ]]; then
  variant_dir="$out/data"
  python3 bench/sim/make_variants.py --combined --out "$variant_dir" >/dev/null
  all=$(cd "$variant_dir" && ls openb_pod_list_*.csv | sed 's/openb_pod_list_//; s/\.csv$//')
  variants="${VARIANTS:-$all}"
else
  variant_dir=bench/data/openb/variants
  python3 bench/sim/make_variants.py >/dev/null
  variants="${VARIANTS:-constrained10 constrained30 constrained60 halfshare multigpu40}"
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUSHARE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target gpushare-sim >/dev/null
mkdir -p "$out"

for variant in $variants; do
  pods="$variant_dir/openb_pod_list_$variant.csv"
  echo "== $variant: the policies alone"
  "$build/gpushare-sim" --nodes "$nodes" --pods "$pods" --seeds "$seeds" --jobs "$jobs" \
    --policy fgd-plus-online,fgd-online,fgd,binpack --out "$out/$variant.csv" | tail -n 6 |
    tee "$out/$variant.md"
  python3 - "$out/$variant.csv" <<'PY' | tee -a "$out/$variant.md"
import collections, csv, sys
curve = collections.defaultdict(lambda: collections.defaultdict(list))
for row in csv.DictReader(open(sys.argv[1])):
    curve[row["policy"]][int(row["arrived_pct"])].append(float(row["alloc_pct"]))
mean = {p: {a: sum(v) / len(v) for a, v in c.items()} for p, c in curve.items()}
for fgd in ("fgd", "fgd-online"):
    common = sorted(set(mean["fgd-plus-online"]) & set(mean[fgd]))
    worst = min(common, key=lambda a: mean["fgd-plus-online"][a] - mean[fgd][a])
    gap = mean["fgd-plus-online"][worst] - mean[fgd][worst]
    print(f"fgd-plus-online minus {fgd}: worst {gap:+.2f} points at {worst} % arrival")
PY
  if [[ "$variant" != multigpu* && "$variant" != mg* ]]; then
    echo "== $variant: as deployed (shipped configuration, single-GPU and CPU-only pods)"
    "$build/gpushare-sim" --nodes "$nodes" --pods "$pods" --seeds "$seeds" --jobs "$jobs" \
      --policy fgd-plus,binpack --with-ideal \
      --scheduler-config deploy/scheduler/kube-scheduler-config.yaml | tail -n 4 |
      tee -a "$out/$variant.md"
  fi
done
