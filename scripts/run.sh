#!/usr/bin/env bash
# The main job: a local Aerie pool on loopback, on embedded defaults, that runs real jobs:
#   - a 3-CM cluster (Raft over gRPC, RocksDB with fsync); the leader negotiates every 5 s;
#   - two execute nodes with real slots on this machine: exec1 with four static slots, exec2
#     with one partitionable slot (4 cores each, whatever the machine has);
#   - one access point with a durable job queue, on a Unix socket for cmctl;
#   - a small demo workload of real short jobs for alice, bob and carol (priority factors
#     1000, 2000 and 4000), so the pool is shared about 4:2:1 while they queue.
# It writes $AERIE_RUN_DIR/env: `. $AERIE_RUN_DIR/env; cmctl submit job.sub; cmctl q` works
# from another shell. Everything stops cleanly on Ctrl-C (or SIGTERM).
#   usage: scripts/run.sh [--simulated]
#     --simulated       the 200-slot simulated pool of earlier versions instead of real nodes
#   environment: AERIE_RUN_DIR (default: a new directory under /tmp, printed), AERIE_BASE_PORT
#     (7100), AERIE_DEMO=0 (no demo workload), AERIE_PROFILE=debug (use a debug build),
#     AERIE_SLOTS / AERIE_JOBS (the simulated pool's size, 200 / 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
simulated=0
[ "${1:-}" = "--simulated" ] && simulated=1
scripts/deps.sh
profile=${AERIE_PROFILE:-release}
if [ "$profile" = release ]; then
  cargo build --release -q -p aerie-cm -p cmctl -p aerie-node
else
  cargo build -q -p aerie-cm -p cmctl -p aerie-node
fi
bin=${CARGO_TARGET_DIR:-$PWD/target}/$profile
base=${AERIE_BASE_PORT:-7100}
run=${AERIE_RUN_DIR:-$(mktemp -d /tmp/aerie-run.XXXXXX)}
mkdir -p "$run"
# Readable by every user: the env file and the access point's socket are for them too.
chmod 755 "$run"
run=$(cd "$run" && pwd)
peers="1=127.0.0.1:$((base + 1)),2=127.0.0.1:$((base + 2)),3=127.0.0.1:$((base + 3))"
export AERIE_CMS="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
export AERIE_RUN_DIR=$run
export AERIE_AP_SOCKET=$run/ap.sock
# A demo pool wants to see cycles often (HTCondor's defaults are 60 s and 20 s).
export AERIE_NEGOTIATOR_INTERVAL=${AERIE_NEGOTIATOR_INTERVAL:-5}
export AERIE_NEGOTIATOR_CYCLE_DELAY=${AERIE_NEGOTIATOR_CYCLE_DELAY:-2}
# The pool's credentials: a CA, a certificate per CM, node and access point, and `admin` for
# cmctl (every connection is mutual TLS; see README "Security"). Kept across restarts.
creds=$run/credentials
if [ ! -f "$creds/ca.crt" ]; then
  "$bin/aerie-cm" security init "$creds" --pool local --cms 3 \
    --holder exec1.pool.example=execute --holder exec2.pool.example=execute \
    --holder ap.pool.example=access-point --holder sim=execute+access-point+admin >/dev/null
fi
export AERIE_CREDENTIALS=$creds
cm_pids=()
pool_pids=()
cleanup() {
  trap - EXIT INT TERM
  # The pool first, so it can invalidate its ads while the CMs still listen.
  for p in "${pool_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pool_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  kill -TERM "${cm_pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "Stopped. Logs, queue and job outputs stay in $run."
}
trap cleanup EXIT INT TERM

for id in 1 2 3; do
  "$bin/aerie-cm" serve --id "$id" --listen "127.0.0.1:$((base + id))" --bootstrap --peers "$peers" \
    --data-dir "$run/cm$id" --metrics-listen "127.0.0.1:$((base + 2000 + id))" \
    >"$run/cm$id.log" 2>&1 &
  cm_pids+=($!)
done
# Until the CMs have formed the cluster and elected a leader.
for _ in $(seq 1 150); do
  "$bin/cmctl" cluster status 2>/dev/null | grep -q '^Leader: node' && break
  sleep 0.2
done
"$bin/cmctl" cluster status
echo
for uf in alice:1000 bob:2000 carol:4000; do
  "$bin/cmctl" userprio -setfactor "${uf%%:*}@pool.example" "${uf##*:}"
done

cat >"$run/env" <<EOF
export AERIE_CMS=$AERIE_CMS
export AERIE_RUN_DIR=$run
export AERIE_AP_SOCKET=$run/ap.sock
export AERIE_CREDENTIALS=$creds
export PATH=$bin:\$PATH
EOF

if [ "$simulated" = 1 ]; then
  "$bin/aerie-node" simulate --cms "$AERIE_CMS" --slots "${AERIE_SLOTS:-200}" \
    --jobs "${AERIE_JOBS:-2000}" --users alice,bob,carol --domain pool.example --jobs-forever \
    --runtime uniform:20:60 --claims-log "$run/claims.log" >"$run/simulate.log" 2>&1 &
  pool_pids+=($!)
  echo "Simulated pool: ${AERIE_SLOTS:-200} slots, ${AERIE_JOBS:-2000} jobs (log $run/simulate.log)."
else
  # Two execute nodes, configured as an admin would with HTCondor's own knobs. Run as root,
  # a job runs as its owner's account, never as root: root's own jobs (the demo's) run as
  # nobody here (STARTER_ALLOW_RUNAS_OWNER = False).
  cat >"$run/exec1.conf" <<EOF
NUM_CPUS = 4
MEMORY = 4096
NUM_SLOTS_TYPE_1 = 4
SLOT_TYPE_1 = cpus=1
SLOT_TYPE_1_PARTITIONABLE = False
UID_DOMAIN = pool.example
STARTER_ALLOW_RUNAS_OWNER = False
EOF
  cat >"$run/exec2.conf" <<EOF
NUM_CPUS = 4
MEMORY = 4096
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = True
UID_DOMAIN = pool.example
STARTER_ALLOW_RUNAS_OWNER = False
EOF
  for n in 1 2; do
    "$bin/aerie-node" execute --cms "$AERIE_CMS" --config "$run/exec$n.conf" --name "exec$n.pool.example" \
      --state-dir "$run/exec$n" --listen "127.0.0.1:$((base + 10 + n))" \
      --metrics-listen "127.0.0.1:$((base + 2010 + n))" >"$run/exec$n.log" 2>&1 &
    pool_pids+=($!)
  done
  "$bin/aerie-node" access-point --cms "$AERIE_CMS" --spool "$run/spool" --socket "$run/ap.sock" \
    --listen "127.0.0.1:$((base + 20))" --name ap.pool.example --domain pool.example \
    --metrics-listen "127.0.0.1:$((base + 2020))" >"$run/ap.log" 2>&1 &
  pool_pids+=($!)
  for _ in $(seq 1 100); do [ -S "$run/ap.sock" ] && break; sleep 0.2; done
  echo "Pool: 2 execute nodes (exec1: 4 static slots, exec2: 1 partitionable slot of 4 cores),"
  echo "      access point ap.pool.example (socket $run/ap.sock)."
  if [ "${AERIE_DEMO:-1}" != 0 ]; then
    # The demo workload: short real jobs, each writing a line into its output file.
    for u in alice bob carol; do
      mkdir -p "$run/demo/$u"
      cat >"$run/demo/$u/job.sub" <<EOF
executable = /bin/sh
transfer_executable = false
arguments = "-c 'sleep 15; echo job \$(Cluster).\$(Process) of $u done'"
initialdir = $run/demo/$u
output = out.\$(Process)
error = err.\$(Process)
accounting_group_user = $u
request_cpus = 1
request_memory = 128
queue 12
EOF
      (cd "$run/demo/$u" && "$bin/cmctl" submit job.sub)
    done
  fi
fi

echo "Waiting for the first negotiation cycles..."
sleep $((AERIE_NEGOTIATOR_INTERVAL * 2 + 2))
echo; "$bin/cmctl" status || true
echo; "$bin/cmctl" status -submitters || true
[ "$simulated" = 1 ] || { echo; "$bin/cmctl" q -allusers || true; }
echo; "$bin/cmctl" userprio -allusers || true
echo; "$bin/cmctl" negotiator status || true
cat <<EOF

Where to look (the pool keeps running until Ctrl-C):
  . $run/env                        # then, from any shell:
  cmctl submit job.sub; cmctl q     # your own jobs, on this pool's access point
  cmctl q -allusers -nobatch; cmctl history
  cmctl status                      # slots, as condor_status shows them (any CM answers)
  cmctl userprio -allusers          # the replicated fair-share ledger
  cmctl negotiator status           # the leader's last cycles
  cmctl cluster status              # Raft members, leader, log indexes
  cmctl drain -graceful exec1.pool.example; cmctl drain -cancel exec1.pool.example
  metrics: http://127.0.0.1:$((base + 2001))/metrics (CMs $((base + 2001))-$((base + 2003)), execute nodes $((base + 2011))-$((base + 2012)), access point $((base + 2020)))
  logs:    $run/cm{1,2,3}.log $run/exec{1,2}.log $run/ap.log; demo outputs in $run/demo/*/out.*
EOF
wait "${pool_pids[0]}"
