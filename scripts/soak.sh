#!/usr/bin/env bash
# Builds gpushare-soak and runs a bounded soak: the live extender against the in-process fake API
# server with pod, node, ConfigMap and watch churn, then the model is compared with the API
# server's truth (must be identical) and RSS growth is reported.
#
#   scripts/soak.sh [seconds] [extra gpushare-soak flags, e.g. --ha --seed 7]    (default 120 s)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-120}"
shift || true
build_dir="${GPUSHARE_BUILD_DIR:-build}"
scripts/install-deps.sh
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$build_dir" -j "${GPUSHARE_JOBS:-$(nproc)}" --target gpushare-soak
"$build_dir/gpushare-soak" --seconds "$seconds" "$@"
