#!/usr/bin/env bash
# The Prometheus rules and the Grafana dashboard of deploy/monitoring/ through promtool:
#   - every rule file passes `promtool check rules` (PromQL parses, names and labels are valid);
#   - the reserved-vs-used rules give what tests/monitoring/*_test.yaml expects
#     (`promtool test rules`: recorded values, and which alerts fire when);
#   - every dashboard query parses as PromQL once Grafana's variables are filled in.
# Exits 77 (ctest: skipped) without promtool, from Debian's prometheus package
# (scripts/install-promtool.sh; scripts/test.sh installs it).
#
#   tests/monitoring/check_monitoring.sh SOURCE_DIR
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
if ! command -v promtool >/dev/null; then
  echo "check_monitoring: promtool is not installed (scripts/install-promtool.sh); skipped"
  exit 77
fi
promtool check rules deploy/monitoring/*.yaml
promtool test rules tests/monitoring/*_test.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Each dashboard query as a recording rule, so that promtool parses it.
python3 - deploy/monitoring/gpushare-dashboard.json >"$work/dashboard-queries.yaml" <<'PY'
import json, sys

def queries(value):
    if isinstance(value, dict):
        for key, child in value.items():
            if key == "expr" and isinstance(child, str):
                yield child
            else:
                yield from queries(child)
    elif isinstance(value, list):
        for child in value:
            yield from queries(child)

variables = {"$__rate_interval": "5m", "$job": ".+", "$node": ".+"}
print("groups:\n- name: dashboard-queries\n  rules:")
for n, expr in enumerate(queries(json.load(open(sys.argv[1])))):
    for name, value in variables.items():
        expr = expr.replace(name, value)
    print(f"  - record: dashboard_query_{n}\n    expr: {json.dumps(expr)}")
PY
promtool check rules "$work/dashboard-queries.yaml"
