#!/usr/bin/env bash
# The quick start: installs what is missing, builds the extender into its own directory
# (build-standalone/, or $GPUSHARE_BUILD_DIR: a developer's build/ is left alone), and runs it
# standalone on the bundled sample cluster (deploy/samples/cluster.yaml), listening on
# 127.0.0.1:39999, or on $GPUSHARE_LISTEN (e.g. GPUSHARE_LISTEN=0.0.0.0:39999 to serve other
# machines). Extra arguments go to the extender (a --listen among them wins).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export GPUSHARE_BUILD_DIR="${GPUSHARE_BUILD_DIR:-build-standalone}"
if [[ -f "$GPUSHARE_BUILD_DIR/CMakeCache.txt" ]]; then
  # A directory already configured (e.g. GPUSHARE_BUILD_DIR=build) keeps its options: turning its
  # tests off would drop the targets its owner built.
  scripts/build.sh --target gpushare-extender
else
  scripts/build.sh -DGPUSHARE_BUILD_TESTS=OFF -DGPUSHARE_BUILD_BENCH=OFF --target gpushare-extender
fi
exec "$GPUSHARE_BUILD_DIR/gpushare-extender" --cluster-file deploy/samples/cluster.yaml \
  --listen "${GPUSHARE_LISTEN:-127.0.0.1:39999}" "$@"
