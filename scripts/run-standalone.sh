#!/usr/bin/env bash
# Installs what is missing, builds, and runs the extender standalone on the bundled sample
# cluster (deploy/samples/cluster.yaml) on port 39999. Extra arguments go to the extender.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DGPUSHARE_BUILD_TESTS=OFF -DGPUSHARE_BUILD_BENCH=OFF
exec "${GPUSHARE_BUILD_DIR:-build}/gpushare-extender" --cluster-file deploy/samples/cluster.yaml "$@"
