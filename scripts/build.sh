#!/usr/bin/env bash
# Configures and builds gpushare into build/ (or $GPUSHARE_BUILD_DIR).
#
#   scripts/build.sh [-DOPTION=VALUE ...] [--target NAME ...]
#
# -D options go to the configuration, the rest to the build (default: every target). A build
# directory that is already configured keeps its build type unless $CMAKE_BUILD_TYPE says
# otherwise (first time: RelWithDebInfo), so running this on a developer's tree changes nothing
# it was not asked to.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${GPUSHARE_BUILD_DIR:-build}"
jobs="${GPUSHARE_JOBS:-$(nproc)}"
configure=()
build=()
for arg in "$@"; do
  if [[ "$arg" == -D* ]]; then configure+=("$arg"); else build+=("$arg"); fi
done
if [[ -n "${CMAKE_BUILD_TYPE:-}" || ! -f "$build_dir/CMakeCache.txt" ]]; then
  configure+=("-DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo}")
fi
cmake -S . -B "$build_dir" "${configure[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs" "${build[@]}"
