#!/usr/bin/env bash
# Installs promtool (Debian 12 package prometheus) for the monitoring rules' test
# (tests/monitoring/check_monitoring.sh). Optional: without it that test skips. The package also
# brings the Prometheus server and its systemd unit, which stays stopped where systemd does not run
# (containers, CI). Idempotent: a machine that has it pays nothing.
set -euo pipefail
"$(dirname "$0")/apt-install-missing.sh" "for the monitoring rules' test (promtool)" prometheus
