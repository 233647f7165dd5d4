#!/usr/bin/env bash
# Configures and builds gpushare into build/ (or $GPUSHARE_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${GPUSHARE_BUILD_DIR:-build}"
jobs="${GPUSHARE_JOBS:-$(nproc)}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
