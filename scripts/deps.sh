#!/usr/bin/env bash
# Installs the Debian packages that building and testing Aerie needs (fresh machine safe, idempotent).
#   usage: scripts/deps.sh [EXTRA_PACKAGE...]
set -euo pipefail
cd "$(dirname "$0")/.."
# prometheus: promtool and a real Prometheus for the ops/ checks (tests/tests/ops.rs).
# faketime: libfaketime, the per-CM clock faults of jepsen/ (jepsen/src/clock.rs).
pkgs=(libclang-dev librocksdb-dev protobuf-compiler pkg-config prometheus faketime "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Grafana's dashboard schema (@grafana/schema) and the TypeScript compiler that checks the
# dashboards against it (ops/check/grafana_schema.py), pinned by package-lock.json.
if [ ! -d ops/check/grafana-schema/node_modules/@grafana/schema ] ||
   [ ! -d ops/check/grafana-schema/node_modules/typescript ]; then
  command -v npm >/dev/null || { echo "deps: npm not found (install nodejs)" >&2; exit 1; }
  echo "deps: installing ops/check/grafana-schema (npm ci)"
  npm ci --prefix ops/check/grafana-schema --no-audit --no-fund --ignore-scripts >/dev/null
fi
