#!/usr/bin/env bash
# Slowloris benchmark: with SLOW (2000) connections trickling their headers,
# how fast /healthz and a filter (NodeNames, OFFERED names of NODES) answer on fresh connections.
#
#   bench/http/slow_clients.sh [BUILD_DIR]
#
# Environment: SLOW (2000), PROBES (50 of each), NODES (5000), OFFERED (500), EXTRA_FLAGS (default:
# --http-header-timeout 600s, so that the slow connections stay open while the probes run rather
# than being cut at the 10 s default).
set -euo pipefail
NODES=${NODES:-5000}
OFFERED=${OFFERED:-500}
EXTRA_FLAGS=${EXTRA_FLAGS:-"--policy binpack --http-header-timeout 600s"}
source "$(dirname "$0")/common.sh"
generate_inputs
start_extender
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); server threads: $(ls /proc/$server_pid/task | wc -l)"
python3 "$here/slow_clients.py" "$port" "$work/filter-names.json" --slow "${SLOW:-2000}" \
  --probes "${PROBES:-50}" --server-pid "$server_pid"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
