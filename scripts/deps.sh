#!/usr/bin/env bash
# Installs the Debian packages that building and testing Aerie needs (fresh machine safe, idempotent).
#   usage: scripts/deps.sh [EXTRA_PACKAGE...]
set -euo pipefail
# prometheus: promtool and a real Prometheus for the ops/ checks (tests/tests/ops.rs).
pkgs=(libclang-dev librocksdb-dev protobuf-compiler pkg-config prometheus "$@")
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
