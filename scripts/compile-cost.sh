#!/usr/bin/env bash
# The CPU time of each compile and link of a cold build (ccache off), to see what a build spends
# its time on (docs/benchmarks.md, "Build cost"):
#
#   scripts/compile-cost.sh BUILD_DIR [-DOPTION=VALUE ...] [--target NAME ...]
#
# BUILD_DIR must not exist (a cold build; delete it afterwards). -D options go to the
# configuration (RelWithDebInfo unless one says otherwise), the rest to the build. Prints the
# build's total CPU time (user+sys of every process it ran) and wall time, then the 20 dearest
# translation units and the 5 dearest links; BUILD_DIR/compile-cost.log has one line per step:
# "user_s sys_s max_rss_kb cc|ld file". CPU time, not wall time, is the figure to compare on a
# shared machine.
set -euo pipefail
if [[ "${1:-}" == --launch ]]; then
  # Compiler and linker launcher: runs the rest of the command line under /usr/bin/time.
  shift
  src="" out="" prev=""
  for arg in "$@"; do
    [[ "$prev" == -c ]] && src="$arg"
    [[ "$prev" == -o ]] && out="$arg"
    prev="$arg"
  done
  kind=cc
  if [[ -z "$src" ]]; then kind=ld src="$out"; fi
  times=$(mktemp)
  rc=0
  /usr/bin/time -f "%U %S %M" -o "$times" "$@" || rc=$?
  echo "$(tail -n 1 "$times") $kind $src" >>"${GPUSHARE_COMPILE_COST_LOG:?}"
  rm -f "$times"
  exit "$rc"
fi
cd "$(dirname "$0")/.."
build_dir="${1:?usage: scripts/compile-cost.sh BUILD_DIR [-DOPTION=VALUE ...] [--target NAME ...]}"
shift
if [[ -e "$build_dir" ]]; then
  echo "compile-cost.sh: $build_dir exists; the measure is of a cold build" >&2
  exit 2
fi
configure=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
build=()
for arg in "$@"; do
  if [[ "$arg" == -D* ]]; then configure+=("$arg"); else build+=("$arg"); fi
done
launcher="$PWD/scripts/compile-cost.sh;--launch"
cmake -S . -B "$build_dir" "${configure[@]}" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
  -DCMAKE_CXX_LINKER_LAUNCHER="$launcher" >/dev/null
log="$(cd "$build_dir" && pwd)/compile-cost.log"
: >"$log"
total=$(mktemp)
CCACHE_DISABLE=1 GPUSHARE_COMPILE_COST_LOG="$log" /usr/bin/time -f "%U %S %e" -o "$total" \
  cmake --build "$build_dir" -j "${GPUSHARE_JOBS:-$(nproc)}" "${build[@]}" >/dev/null
read -r user sys wall <"$total"
rm -f "$total"
echo "build: $(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", u + s }') s CPU (user+sys), ${wall} s wall, $(grep -c ' cc ' "$log") compiles, $(grep -c ' ld ' "$log") links; load now: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "dearest compiles (CPU s, max RSS MB, file):"
awk '$4 == "cc" { printf "%7.1f %6d %s\n", $1 + $2, $3 / 1024, $5 }' "$log" | sort -rn | head -n 20 | sed "s|$PWD/||"
echo "dearest links:"
awk '$4 == "ld" { printf "%7.1f %6d %s\n", $1 + $2, $3 / 1024, $5 }' "$log" | sort -rn | head -n 5 | sed "s|$PWD/||"
