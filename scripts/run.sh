#!/usr/bin/env bash
# The main job: a local 3-CM Aerie cluster on loopback (Raft over gRPC, RocksDB with fsync) and
# a simulated pool streaming its ads to it, on embedded defaults. The Raft leader negotiates
# every few seconds; the simulated startds and access points claim, run and release slots.
# Three submitters with priority factors 1000, 2000 and 4000 share the pool about 4:2:1.
# Everything stops cleanly on Ctrl-C.
#   usage: scripts/run.sh     (ports from 7100 unless AERIE_BASE_PORT is set;
#                              AERIE_SLOTS / AERIE_JOBS size the pool, default 200 / 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cargo build --release -q -p aerie-cm -p cmctl -p aerie-node
bin=${CARGO_TARGET_DIR:-$PWD/target}/release
base=${AERIE_BASE_PORT:-7100}
slots=${AERIE_SLOTS:-200}
jobs=${AERIE_JOBS:-2000}
data=$(mktemp -d /tmp/aerie-run.XXXXXX)
peers="1=127.0.0.1:$((base + 1)),2=127.0.0.1:$((base + 2)),3=127.0.0.1:$((base + 3))"
export AERIE_CMS="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
# A demo pool wants to see cycles often (HTCondor's defaults are 60 s and 20 s).
export AERIE_NEGOTIATOR_INTERVAL=${AERIE_NEGOTIATOR_INTERVAL:-5}
export AERIE_NEGOTIATOR_CYCLE_DELAY=${AERIE_NEGOTIATOR_CYCLE_DELAY:-2}
cm_pids=()
sim_pid=
cleanup() {
  trap - EXIT INT TERM
  # The simulator first, so it can invalidate its ads while the CMs still listen.
  if [ -n "$sim_pid" ]; then kill -TERM "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; fi
  kill -TERM "${cm_pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$data"
  echo "Stopped; removed $data."
}
trap cleanup EXIT INT TERM
for id in 1 2 3; do
  "$bin/aerie-cm" serve --id "$id" --listen "127.0.0.1:$((base + id))" --bootstrap --peers "$peers" \
    --data-dir "$data/node$id" --metrics-listen "127.0.0.1:$((base + 2000 + id))" \
    >"$data/node$id.log" 2>&1 &
  cm_pids+=($!)
done
# Until the CMs have formed the cluster and elected a leader.
for _ in $(seq 1 100); do
  "$bin/cmctl" cluster status 2>/dev/null | grep -q '^Leader: node' && break
  sleep 0.2
done
"$bin/cmctl" cluster status
echo
"$bin/cmctl" userprio -setfactor alice@pool.example 1000
"$bin/cmctl" userprio -setfactor bob@pool.example 2000
"$bin/cmctl" userprio -setfactor carol@pool.example 4000
"$bin/aerie-node" simulate --cms "$AERIE_CMS" --slots "$slots" --jobs "$jobs" \
  --users alice,bob,carol --domain pool.example --jobs-forever --runtime uniform:20:60 \
  --claims-log "$data/claims.log" >"$data/simulate.log" 2>&1 &
sim_pid=$!
echo
echo "Simulated pool: $slots slots, $jobs jobs of alice, bob and carol (log $data/simulate.log)."
echo "Waiting for the first negotiation cycles..."
sleep $((AERIE_NEGOTIATOR_INTERVAL * 2 + 2))
echo; "$bin/cmctl" status -total || true
echo; "$bin/cmctl" status -submitters || true
echo; "$bin/cmctl" userprio -allusers || true
echo; "$bin/cmctl" negotiator status || true
cat <<EOF

Where to look (the cluster keeps running until Ctrl-C):
  export AERIE_CMS=$AERIE_CMS
  $bin/cmctl status                 # slots, as condor_status shows them (any CM answers)
  $bin/cmctl status -af RemoteUser -constraint 'State == "Claimed"' | sort | uniq -c
  $bin/cmctl userprio -allusers     # the replicated fair-share ledger
  $bin/cmctl negotiator status      # the leader's last cycles
  $bin/cmctl cluster status         # Raft members, leader, log indexes
  metrics: http://127.0.0.1:$((base + 2001))/metrics  http://127.0.0.1:$((base + 2002))/metrics  http://127.0.0.1:$((base + 2003))/metrics
  logs:    $data/node{1,2,3}.log  $data/simulate.log; claims log $data/claims.log
           ($bin/aerie-node check-claims $data/claims.log checks that no slot was claimed twice)
EOF
wait "$sim_pid"
