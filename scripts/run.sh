#!/usr/bin/env bash
# The main job: a local 3-node Aerie CM cluster on loopback (Raft over gRPC, RocksDB with fsync),
# on embedded defaults. It sets a few priority factors through Raft, shows the cluster and the
# replicated ledger, asks `cmctl what-if` what a negotiation cycle would do on a real HTCondor pool
# dump, then keeps the cluster running until Ctrl-C (metrics on :9101-9103/metrics).
#   usage: scripts/run.sh            (BASE port 7100 unless AERIE_BASE_PORT is set)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cargo build --release -q -p aerie-cm -p cmctl
bin=${CARGO_TARGET_DIR:-$PWD/target}/release
base=${AERIE_BASE_PORT:-7100}
data=$(mktemp -d /tmp/aerie-run.XXXXXX)
peers="1=127.0.0.1:$((base + 1)),2=127.0.0.1:$((base + 2)),3=127.0.0.1:$((base + 3))"
export AERIE_CMS="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT INT TERM
for id in 1 2 3; do
  "$bin/aerie-cm" serve --id "$id" --listen "127.0.0.1:$((base + id))" --peers "$peers" \
    --data-dir "$data/node$id" --metrics-listen "127.0.0.1:$((base + 2000 + id))" \
    >"$data/node$id.log" 2>&1 &
  pids+=($!)
  echo "CM $id: gRPC 127.0.0.1:$((base + id)), metrics http://127.0.0.1:$((base + 2000 + id))/metrics, log $data/node$id.log"
done
for _ in $(seq 1 50); do
  "$bin/cmctl" cluster status >/dev/null 2>&1 && break
  sleep 0.2
done
echo; "$bin/cmctl" cluster status
echo; echo "Priority factors set through Raft (any CM forwards to the leader):"
"$bin/cmctl" userprio -setfactor alice@pool.example 1000
"$bin/cmctl" userprio -setfactor bob@pool.example 2000
"$bin/cmctl" userprio -setfactor carol@pool.example 4000
echo; "$bin/cmctl" userprio -allusers
dumps=tests/reference/negotiator/dumps/redistribution
echo; echo "What a negotiation cycle would do on a real HTCondor 23.9.6 pool dump ($dumps):"
"$bin/cmctl" what-if --slots "$dumps/slots.txt" --jobs "$dumps/jobs.txt" --userprio "$dumps/userprio.txt" || true
echo; echo "export AERIE_CMS=$AERIE_CMS   # then: cmctl cluster status | cmctl userprio | cmctl quota ..."
echo "Cluster running; Ctrl-C stops it and removes $data."
wait
