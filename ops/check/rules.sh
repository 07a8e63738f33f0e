#!/usr/bin/env bash
# Checks the Prometheus files with the real promtool: configuration and rule syntax, the alert
# rules' unit tests (ops/prometheus/tests/*.yml), then the static checks of ops/check/check.py
# (dashboard structure, metric and label names against cm/src/metrics/catalogue.rs, a firing
# test for every alert, the README's tables) and that the dashboards are what generate.py makes,
# then validates the dashboards against Grafana's own schema (ops/check/grafana_schema.py).
#   usage: ops/check/rules.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v promtool >/dev/null; then
  echo "promtool not found: install Debian's prometheus package (scripts/deps.sh prometheus, or apt-get install prometheus)" >&2
  exit 1
fi
promtool check config ops/prometheus/prometheus.yml
promtool check rules ops/prometheus/recording.yml ops/prometheus/alerts.yml
promtool test rules ops/prometheus/tests/*.yml
python3 ops/grafana/generate.py --check
python3 ops/check/check.py static
python3 ops/check/grafana_schema.py
