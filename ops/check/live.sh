#!/usr/bin/env bash
# The live check: a real 3-CM cluster on loopback with a simulated pool (two accounting groups,
# three submitters) beside a real execute node and a real access point running real jobs,
# all scraped once a second by a real Prometheus running ops/prometheus's rules; then
# ops/check/check.py checks each CM's /metrics against the catalogue (names, types, HELP,
# labels) and the node's and access point's against the metrics their code records, runs
# every dashboard panel's query on Prometheus, expecting data, and every rule evaluating
# without error; `cmctl userprio -quotas` must show the quotas the last cycle computed (the
# metrics of its record); then it kills the leader and a follower and expects the no-leader,
# stalled-negotiation and CM-down alerts to fire. About a minute. Everything it starts is
# stopped on exit.
#   usage: AERIE_CM_BIN=target/debug/aerie-cm AERIE_NODE_BIN=target/debug/aerie-node \
#          AERIE_CMCTL_BIN=target/debug/cmctl ops/check/live.sh
#   (AERIE_CHECK_KEEP=1 keeps the work directory for a look at the logs)
set -euo pipefail
cd "$(dirname "$0")/../.."
ops=$PWD/ops
# AERIE_CM_SERVE_BIN: a binary that is `aerie-cm serve` itself (the tests' aerie-cm-node).
if [ -n "${AERIE_CM_SERVE_BIN:-}" ]; then
  serve=("$AERIE_CM_SERVE_BIN")
else
  : "${AERIE_CM_BIN:?set AERIE_CM_BIN to the aerie-cm binary}"
  serve=("$AERIE_CM_BIN" serve)
fi
: "${AERIE_NODE_BIN:?set AERIE_NODE_BIN to the aerie-node binary (simulate, execute, access-point)}"
: "${AERIE_CMCTL_BIN:?set AERIE_CMCTL_BIN to the cmctl binary}"
AERIE_CMCTL_BIN=$(realpath "$AERIE_CMCTL_BIN")
if ! command -v prometheus >/dev/null; then
  echo "prometheus not found: install Debian's prometheus package (scripts/deps.sh prometheus, or apt-get install prometheus)" >&2
  exit 1
fi
work=$(mktemp -d /tmp/aerie-ops-check.XXXXXX)
# The real jobs run as nobody (root's jobs do, STARTER_ALLOW_RUNAS_OWNER = False) and write
# their output under it.
chmod 755 "$work"
pids=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" != 0 ] || [ -n "${AERIE_CHECK_KEEP:-}" ]; then
    for f in "$work"/*.log; do echo "--- $f (last lines)"; tail -n 15 "$f"; done
    echo "work directory kept: $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT INT TERM

# Eleven free loopback ports: 3 gRPC, 3 metrics, 1 Prometheus, the execute node's and the
# access point's gRPC and metrics.
read -r -a port <<<"$(python3 -c '
import socket
ss = [socket.socket() for _ in range(11)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')"
peers="1=127.0.0.1:${port[0]},2=127.0.0.1:${port[1]},3=127.0.0.1:${port[2]}"
cms="127.0.0.1:${port[0]},127.0.0.1:${port[1]},127.0.0.1:${port[2]}"
cat >"$work/aerie.conf" <<CONF
GROUP_NAMES = group_a, group_b
GROUP_QUOTA_group_a = 20
GROUP_QUOTA_group_b = 10
GROUP_ACCEPT_SURPLUS = true
CONF
# Cycles every second, and a snapshot every 20 entries so the snapshot panels have data too.
export AERIE_NEGOTIATOR_INTERVAL=1 AERIE_NEGOTIATOR_CYCLE_DELAY=1 AERIE_ELECTION_TIMEOUT=800-1600
export AERIE_SNAPSHOT_LOGS=20
export AERIE_LOG=${AERIE_LOG:-warn}
# Mutual TLS: the caller's credentials (the tests pass theirs), else a pool made here.
if [ -z "${AERIE_CREDENTIALS:-}" ]; then
  : "${AERIE_CM_BIN:?set AERIE_CM_BIN (to make credentials) or AERIE_CREDENTIALS}"
  "$AERIE_CM_BIN" security init "$work/credentials" --cms 3 --holder sim=execute+access-point+admin \
    --holder exec1=execute --holder ap=access-point >/dev/null
  export AERIE_CREDENTIALS=$work/credentials
fi
for id in 1 2 3; do
  "${serve[@]}" --id "$id" --listen "127.0.0.1:${port[$((id - 1))]}" --bootstrap \
    --peers "$peers" --data-dir "$work/cm$id" --config "$work/aerie.conf" \
    --metrics-listen "127.0.0.1:${port[$((id + 2))]}" >"$work/cm$id.log" 2>&1 &
  pids+=($!)
done
metrics_urls=()
for id in 1 2 3; do metrics_urls+=("http://127.0.0.1:${port[$((id + 2))]}/metrics"); done

# Until one CM leads.
leader=
for _ in $(seq 1 150); do
  for u in "${metrics_urls[@]}"; do
    if curl -fsS "$u" 2>/dev/null | grep -q '^aerie_raft_is_leader 1'; then leader=$u; fi
  done
  [ -n "$leader" ] && break
  sleep 0.2
done
[ -n "$leader" ] || { echo "no CM became leader within 30 s" >&2; exit 1; }
echo "leader: $leader"

"$AERIE_NODE_BIN" simulate --cms "$cms" --slots 40 --jobs 400 --users alice,bob,carol \
  --groups group_a,group_b --domain pool.example --jobs-forever --runtime uniform:2:5 --seed 7 \
  --claims-log "$work/claims.log" >"$work/simulate.log" 2>&1 &
pids+=($!)

# A real execute node (two static slots that start only the real access point's jobs, so the
# simulator's jobs stay on simulated slots) and a real access point with a queue of short real
# jobs that run on it, pinned to it.
cat >"$work/exec1.conf" <<CONF
NUM_CPUS = 2
MEMORY = 2048
NUM_SLOTS_TYPE_1 = 2
SLOT_TYPE_1 = cpus=1
SLOT_TYPE_1_PARTITIONABLE = False
UID_DOMAIN = pool.example
STARTER_ALLOW_RUNAS_OWNER = False
UPDATE_INTERVAL = 2
START = TARGET.AerieLiveCheck =?= True
CONF
"$AERIE_NODE_BIN" execute --cms "$cms" --config "$work/exec1.conf" --name exec1 \
  --state-dir "$work/exec1" --listen "127.0.0.1:${port[7]}" \
  --metrics-listen "127.0.0.1:${port[8]}" >"$work/exec1.log" 2>&1 &
pids+=($!)
"$AERIE_NODE_BIN" access-point --cms "$cms" --spool "$work/spool" --socket "$work/ap.sock" \
  --listen "127.0.0.1:${port[9]}" --name ap --domain pool.example \
  --metrics-listen "127.0.0.1:${port[10]}" >"$work/ap.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [ -S "$work/ap.sock" ] && break; sleep 0.2; done
[ -S "$work/ap.sock" ] || { echo "the access point did not open $work/ap.sock within 20 s" >&2; exit 1; }
mkdir -p "$work/jobs"
chmod 777 "$work/jobs"
cat >"$work/jobs/job.sub" <<SUB
executable = /bin/sh
transfer_executable = false
arguments = "-c 'sleep 2; echo done'"
initialdir = $work/jobs
output = out.\$(Process)
error = err.\$(Process)
requirements = Machine == "exec1"
+AerieLiveCheck = True
request_cpus = 1
request_memory = 64
queue 30
SUB
(cd "$work/jobs" && AERIE_AP_SOCKET=$work/ap.sock "$AERIE_CMCTL_BIN" submit job.sub) >"$work/submit.log" 2>&1 ||
  { cat "$work/submit.log" >&2; echo "cmctl submit failed" >&2; exit 1; }

# Prometheus: the shipped configuration with a 1 s scrape and the test's targets.
mkdir -p "$work/prom/targets"
cp "$ops/prometheus/recording.yml" "$work/prom/"
# The alert rules as shipped, but with every `for:` at 2 s and the stall threshold at 8 s, so
# the faults injected below make them fire within seconds.
sed -E -e 's/for: [0-9]+[smh]/for: 2s/' -e 's/end_timestamp_seconds\{job="aerie-cm"\}\) > 600/end_timestamp_seconds{job="aerie-cm"}) > 8/' \
  "$ops/prometheus/alerts.yml" >"$work/prom/alerts.yml"
grep -q 'end_timestamp_seconds{job="aerie-cm"}) > 8' "$work/prom/alerts.yml" || { echo "alerts.yml: the stall rule changed; update live.sh" >&2; exit 1; }
sed -e 's/scrape_interval: 15s/scrape_interval: 1s/' -e 's/evaluation_interval: 15s/evaluation_interval: 1s/' \
  -e 's/refresh_interval: 1m/refresh_interval: 5s/' "$ops/prometheus/prometheus.yml" >"$work/prom/prometheus.yml"
printf '[{"targets": ["127.0.0.1:%s", "127.0.0.1:%s", "127.0.0.1:%s"], "labels": {"pool": "check"}}]\n' \
  "${port[3]}" "${port[4]}" "${port[5]}" >"$work/prom/targets/cm.json"
printf '[{"targets": ["127.0.0.1:%s"], "labels": {"pool": "check"}}]\n' "${port[8]}" >"$work/prom/targets/node.json"
printf '[{"targets": ["127.0.0.1:%s"], "labels": {"pool": "check"}}]\n' "${port[10]}" >"$work/prom/targets/ap.json"
promtool check config "$work/prom/prometheus.yml" >/dev/null
prometheus --config.file="$work/prom/prometheus.yml" --storage.tsdb.path="$work/prom/data" \
  --web.listen-address="127.0.0.1:${port[6]}" >"$work/prometheus.log" 2>&1 &
pids+=($!)
prom="http://127.0.0.1:${port[6]}"

# Until a cycle has matched jobs for every submitter, and Prometheus has 20 s of samples
# (rate() over 30 s windows needs several).
q() { curl -fsS --get "$prom/api/v1/query" --data-urlencode "query=$1" 2>/dev/null || true; }
# await SECONDS QUERY WHAT: until QUERY returns a series, else fail saying WHAT did not happen.
await() {
  for _ in $(seq 1 "$1"); do
    q "$2" | grep -q '"result":\[{' && return 0
    sleep 1
  done
  echo "$3 within $1 s" >&2
  exit 1
}
await 60 'count(max by (submitter) (aerie_accountant_resources_in_use) > 0) >= 3' \
  "the pool did not run jobs of all three submitters"
# Until the real execute node has completed real jobs (rate() needs samples before and after).
await 90 'sum(aerie_node_jobs_completed_total) >= 4' "the real execute node did not complete 4 jobs"
for _ in $(seq 1 40); do
  q 'count_over_time(up{job="aerie-cm"}[60s]) >= 20' | grep -q '"result":\[{' && break
  sleep 1
done

python3 "$ops/check/check.py" exposition "${metrics_urls[@]}"
python3 "$ops/check/check.py" node-exposition "http://127.0.0.1:${port[8]}/metrics" "http://127.0.0.1:${port[10]}/metrics"
python3 "$ops/check/check.py" live "$prom"

# `cmctl userprio -quotas` shows the quotas the last cycle computed (its record). Cycles run
# every second, so compare with a record that was the last one both before and after cmctl ran.
export AERIE_CMS=$cms
ok=
for _ in $(seq 1 20); do
  "$AERIE_CMCTL_BIN" negotiator status --json >"$work/cycles-before.json"
  "$AERIE_CMCTL_BIN" userprio -quotas >"$work/userprio-quotas.txt"
  "$AERIE_CMCTL_BIN" negotiator status --json >"$work/cycles-after.json"
  python3 "$ops/check/check.py" quotas "$work/userprio-quotas.txt" "$work/cycles-before.json" \
    "$work/cycles-after.json" && { ok=1; break; }
done
[ -n "$ok" ] || { echo "FAIL: cmctl userprio -quotas never agreed with the last cycle record" >&2; exit 1; }

# Faults: nothing critical fires on the healthy pool; then kill the leader and one follower
# (kill -9): the last CM has no leader and no cycle completes, so AerieNoLeader,
# AerieNegotiationStalled and AerieCMDown must fire.
firing() { curl -fsS "$prom/api/v1/alerts" | python3 -c '
import json, sys
print(" ".join(sorted({a["labels"]["alertname"] for a in json.load(sys.stdin)["data"]["alerts"] if a["state"] == "firing"})))'; }
now=$(firing)
for a in AerieNoLeader AerieNegotiationStalled AerieQuorumAtRisk AerieAllCMsDown AerieCMDown; do
  case " $now " in *" $a "*) echo "FAIL: $a fires on the healthy pool (firing: $now)" >&2; exit 1 ;; esac
done
leader_idx=
for i in 0 1 2; do [ "${metrics_urls[$i]}" = "$leader" ] && leader_idx=$i; done
other_idx=$(( (leader_idx + 1) % 3 ))
{
  kill -KILL "${pids[$leader_idx]}" "${pids[$other_idx]}"
  wait "${pids[$leader_idx]}" "${pids[$other_idx]}" || true
} 2>/dev/null
echo "killed CMs $((leader_idx + 1)) (the leader) and $((other_idx + 1))"
want="AerieNoLeader AerieNegotiationStalled AerieCMDown"
for _ in $(seq 1 60); do
  now=$(firing)
  missing=
  for a in $want; do case " $now " in *" $a "*) ;; *) missing="$missing $a" ;; esac; done
  [ -z "$missing" ] && break
  sleep 1
done
[ -z "$missing" ] || { echo "FAIL: not firing 60 s after the fault:$missing (firing: $now)" >&2; exit 1; }
echo "fault: firing $now"
echo "live check passed"
