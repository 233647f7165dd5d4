#!/usr/bin/env bash
# Installs what is missing, builds everything with warnings as errors, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Optional: headless Chromium for the web view's browser tests, which skip without it.
scripts/install-browser.sh || echo "gpushare: no browser installed; the browser tests will skip" >&2
# Optional: promtool for the monitoring rules' test, which skips without it.
scripts/install-promtool.sh || echo "gpushare: no promtool installed; the monitoring rules' test will skip" >&2
# C++ formatting as .clang-format says (about 15 s of CPU); lists the files that differ.
scripts/check-format.sh
# $GPUSHARE_DEBUG_INFO (full, lines or lines-in-tests; CMakeLists.txt), when set, chooses how much
# debug information the build carries; .ci/run asks for lines.
scripts/build.sh -DGPUSHARE_WERROR=ON -DGPUSHARE_BUILD_TESTS=ON ${GPUSHARE_DEBUG_INFO:+"-DGPUSHARE_DEBUG_INFO=$GPUSHARE_DEBUG_INFO"}
cd "${GPUSHARE_BUILD_DIR:-build}"
ctest --output-on-failure -j "${GPUSHARE_JOBS:-$(nproc)}" --timeout 600
