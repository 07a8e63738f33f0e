#!/usr/bin/env bash
# Starts a local 3-node Aerie CM cluster by hand (loopback, ports 7101-7103, metrics 9101-9103).
#   usage: scripts/cluster.sh start|stop|status|clean   [DATA_ROOT, default /tmp/aerie-cluster]
# Build first: cargo build -p aerie-cm -p cmctl (uses target/debug unless AERIE_BIN_DIR is set).
# Then: export AERIE_CMS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
#       export AERIE_CREDENTIALS=DATA_ROOT/credentials; cmctl cluster status
# Every connection is mutual TLS: `start` makes the pool's credentials in DATA_ROOT/credentials
# on first use (aerie-cm security init).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${AERIE_BIN_DIR:-${CARGO_TARGET_DIR:-$here/target}/debug}
root=${2:-/tmp/aerie-cluster}
peers="1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103"
case "${1:-}" in
  start)
    [ -x "$bin/aerie-cm" ] || { echo "no $bin/aerie-cm: run cargo build -p aerie-cm -p cmctl" >&2; exit 1; }
    mkdir -p "$root"
    [ -f "$root/credentials/ca.crt" ] || "$bin/aerie-cm" security init "$root/credentials" --cms 3 >/dev/null
    export AERIE_CREDENTIALS=$root/credentials
    for id in 1 2 3; do
      if [ -f "$root/node$id.pid" ] && kill -0 "$(cat "$root/node$id.pid")" 2>/dev/null; then
        echo "node $id already running (pid $(cat "$root/node$id.pid"))"; continue
      fi
      "$bin/aerie-cm" serve --id "$id" --listen "127.0.0.1:710$id" --bootstrap --peers "$peers" \
        --data-dir "$root/node$id" --metrics-listen "127.0.0.1:910$id" \
        >>"$root/node$id.log" 2>&1 &
      echo $! >"$root/node$id.pid"
      echo "node $id: pid $!, gRPC 127.0.0.1:710$id, metrics http://127.0.0.1:910$id/metrics, log $root/node$id.log"
    done
    echo "export AERIE_CMS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 AERIE_CREDENTIALS=$root/credentials"
    ;;
  stop)
    for id in 1 2 3; do
      if [ -f "$root/node$id.pid" ]; then
        kill "$(cat "$root/node$id.pid")" 2>/dev/null || true
        rm -f "$root/node$id.pid"
      fi
    done
    ;;
  status)
    AERIE_CMS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 AERIE_CREDENTIALS=$root/credentials \
      "$bin/cmctl" cluster status
    ;;
  clean)
    "$0" stop "$root"
    rm -rf "$root"
    ;;
  *) sed -n '2,5p' "$0"; exit 2 ;;
esac
