#!/usr/bin/env bash
# Issue 15's access-point speed targets, end to end on real processes (wall time, median of
# RUNS; builds nothing: BIN=target/release must hold aerie-node and cmctl, and aerie-cm for
# `starts`):
#   submit  `cmctl submit` of one submit file with `queue SUBMIT_JOBS` (/bin/true) to a real
#           `aerie-node access-point`, until it prints "N job(s) submitted to cluster C."
#           (the access point acknowledges only once the cluster is synced in RocksDB). Each run
#           is a new cluster in the same queue. Target: 10,000 jobs in under 2 s.
#   q       `cmctl q` (the default batch view), `cmctl q -nobatch` and `cmctl q -af ClusterId
#           ProcId` over Q_JOBS queued jobs (clusters of 10,000, submitted first; the `submit`
#           runs' jobs count towards them), output discarded. Target: 100,000 jobs in under 1 s.
#   starts  real short jobs started per second: one CM (negotiating every NEGOTIATOR_INTERVAL
#           s), one execute node with SLOTS static 1-core slots (NUM_CPUS = SLOTS, overcommitted
#           as HTCondor allows), a fresh access point; START_JOBS jobs of /bin/true in one
#           cluster. Clocked from `cmctl submit` until the node's aerie_node_jobs_started_total
#           counter has grown by START_JOBS (polled every 50 ms), and from the first start to the
#           last; every run waits for its jobs to complete first. Target: >= 50 jobs/s.
#           It also prints the access point's counters (claims reused, released) and the CM's
#           negotiation cycles, which tell what bounds the rate.
# `submit` and `q` need no CM: the access point is given a closed loopback port as its CM (its
# ads are not delivered, which costs it a failed connection per update interval).
#
#   usage: tests/examples/ap_bench.sh [all|submit|q|starts] [RUNS]     (defaults all and 5)
#   env:   BIN=target/release; SUBMIT_JOBS (10000), Q_JOBS (100000), START_JOBS (300),
#          SLOTS (40), NEGOTIATOR_INTERVAL (1), PORT (first of the ports used, 7300);
#          KEEP=1 keeps the work directory (logs, spools); AERIE_INSECURE=1 runs the pool's
#          TCP links plaintext (default: mutual TLS, credentials made by `aerie-cm security
#          init`); OLD_BIN=another build's directory, timed beside for `submit` and `q`.
#   small sizes that check the script (seconds, not the targets):
#          SUBMIT_JOBS=1000 Q_JOBS=10000 START_JOBS=50 tests/examples/ap_bench.sh all 3
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${BIN:-$here/target/release}" && pwd)
what=${1:-all}
runs=${2:-5}
submit_jobs=${SUBMIT_JOBS:-10000}
q_jobs=${Q_JOBS:-100000}
start_jobs=${START_JOBS:-300}
slots=${SLOTS:-40}
interval=${NEGOTIATOR_INTERVAL:-1}
port=${PORT:-7300}
insecure=${AERIE_INSECURE:-}
case $what in all | submit | q | starts) ;; *)
  sed -n '/^#   usage:/,/^#          SUBMIT_JOBS=1000/p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
work=$(mktemp -d /tmp/aerie-ap-bench.XXXXXX)
# Jobs run as nobody (STARTER_ALLOW_RUNAS_OWNER = False when run as root): the work
# directory is theirs to enter.
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
# secs START END: END - START, three decimals.
secs() { echo "$2 - $1" | bc | awk '{printf "%.3f", $1}'; }
# med T...: the median of the numbers.
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'; }
source "$here/scripts/median.sh"

# start_ap NAME CMS: an access point with its spool, socket and metrics in $work; sets
# $ap_sock and $ap_metrics.
start_ap() {
  ap_sock=$work/$1.sock
  ap_metrics=127.0.0.1:$((port + 50 + ${#pids[@]}))
  "$bin/aerie-node" access-point --cms "$2" --spool "$work/$1.spool" --socket "$ap_sock" \
    --name "$1.bench" --domain bench.example --update-interval 1 \
    --metrics-listen "$ap_metrics" >"$work/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 150); do [ -S "$ap_sock" ] && return 0; sleep 0.1; done
  echo "the access point $1 did not open its socket; its log:" >&2
  tail -n 20 "$work/$1.log" >&2
  exit 1
}

# subfile FILE N: a submit file of N jobs running /bin/true.
subfile() {
  mkdir -p "$work/jobs"
  chmod 777 "$work/jobs"
  cat >"$1" <<EOF
executable = /bin/true
transfer_executable = false
initialdir = $work/jobs
request_cpus = 1
request_memory = 64
queue $2
EOF
}

# submit CMCTL FILE: submits, checks the acknowledgement; prints the wall time.
submit() {
  local s e out
  s=$(now)
  out=$(AERIE_AP_SOCKET=$ap_sock "$1" submit "$2")
  e=$(now)
  grep -q 'job(s) submitted to cluster' <<<"$out" || {
    echo "cmctl submit $2 did not acknowledge: $out" >&2
    exit 1
  }
  secs "$s" "$e"
}

# metric HOST:PORT NAME: the value of the Prometheus sample NAME (0 when absent).
metric() {
  curl -sf "http://$1/metrics" | awk -v n="$2" '$1 == n {v = $2} END {printf "%d", v + 0}'
}

echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $bin"

if [ "$what" = all ] || [ "$what" = submit ] || [ "$what" = q ]; then
  # A closed port as the CM: nothing listens on $port until `starts`.
  export AERIE_INSECURE=${AERIE_INSECURE:-1}
  start_ap ap 127.0.0.1:$((port + 99))
  queued=0
  if [ "$what" != q ]; then
    subfile "$work/submit.sub" "$submit_jobs"
    for b in "$bin" ${OLD_BIN:+"$OLD_BIN"}; do
      t=()
      for _ in $(seq "$runs"); do
        t+=("$(submit "$b/cmctl" "$work/submit.sub")")
        queued=$((queued + submit_jobs))
      done
      echo "| cmctl submit, queue $submit_jobs ($b) | median $(med "${t[@]}") s (runs: ${t[*]}) |"
    done
  fi
  if [ "$what" != submit ]; then
    subfile "$work/fill.sub" 10000
    s=$(now)
    while [ "$queued" -lt "$q_jobs" ]; do
      left=$((q_jobs - queued))
      if [ "$left" -lt 10000 ]; then subfile "$work/fill.sub" "$left"; fi
      submit "$bin/cmctl" "$work/fill.sub" >/dev/null
      queued=$((queued + (left < 10000 ? left : 10000)))
    done
    echo "queued $queued jobs (filled in $(secs "$s" "$(now)") s)"
    export AERIE_AP_SOCKET=$ap_sock
    n=$("$bin/cmctl" q -af ClusterId | wc -l)
    [ "$n" -eq "$queued" ] || { echo "cmctl q -af ClusterId shows $n jobs, not $queued" >&2; exit 1; }
    while IFS='|' read -r label args; do
      read -ra a <<<"$args"
      line="| cmctl q $label, $queued jobs | $(median "$bin/cmctl" q "${a[@]}") s"
      [ -z "${OLD_BIN:-}" ] || line="$line | $(median "$OLD_BIN/cmctl" q "${a[@]}") s (OLD_BIN)"
      echo "$line |"
    done <<'CMDS'
(batch view)|
-nobatch|-nobatch
-af ClusterId ProcId|-af ClusterId ProcId
CMDS
    unset AERIE_AP_SOCKET
  fi
  # This access point and its queue are done: it would only take CPU from `starts`.
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
fi

if [ "$what" = all ] || [ "$what" = starts ]; then
  cm=127.0.0.1:$port
  exec_metrics=127.0.0.1:$((port + 40))
  if [ "$insecure" = 1 ]; then
    export AERIE_INSECURE=1
  elif [ -z "${AERIE_CREDENTIALS:-}" ]; then
    unset AERIE_INSECURE
    "$bin/aerie-cm" security init "$work/credentials" --pool bench --cms 1 \
      --holder exec1.bench=execute --holder ap2.bench=access-point >/dev/null
    export AERIE_CREDENTIALS=$work/credentials
  fi
  AERIE_NEGOTIATOR_INTERVAL=$interval AERIE_NEGOTIATOR_CYCLE_DELAY=$interval \
    "$bin/aerie-cm" serve --id 1 --listen "$cm" --bootstrap --peers "1=$cm" \
    --data-dir "$work/cm" >"$work/cm.log" 2>&1 &
  pids+=($!)
  export AERIE_CMS=$cm
  for _ in $(seq 150); do
    "$bin/cmctl" cluster status 2>/dev/null | grep -q '^Leader: node' && break
    sleep 0.2
  done
  cat >"$work/exec1.conf" <<EOF
NUM_CPUS = $slots
MEMORY = $((slots * 1024))
NUM_SLOTS_TYPE_1 = $slots
SLOT_TYPE_1 = cpus=1
SLOT_TYPE_1_PARTITIONABLE = False
UPDATE_INTERVAL = 2
UID_DOMAIN = bench.example
STARTER_ALLOW_RUNAS_OWNER = False
EOF
  "$bin/aerie-node" execute --cms "$cm" --config "$work/exec1.conf" --name exec1.bench \
    --state-dir "$work/exec1" --listen "127.0.0.1:$((port + 10))" \
    --metrics-listen "$exec_metrics" >"$work/exec1.log" 2>&1 &
  pids+=($!)
  start_ap ap2 "$cm"
  export AERIE_AP_SOCKET=$ap_sock
  for _ in $(seq 150); do
    n=$("$bin/cmctl" status -af Name 2>/dev/null | grep -c 'exec1.bench' || true)
    [ "$n" -ge "$slots" ] && break
    sleep 0.2
  done
  echo "pool: 1 CM (negotiator interval $interval s), exec1.bench with $n static slots, access point ap2.bench"
  subfile "$work/starts.sub" "$start_jobs"
  rates=()
  steady=()
  for r in $(seq "$runs"); do
    base=$(metric "$exec_metrics" aerie_node_jobs_started_total)
    done0=$(metric "$exec_metrics" aerie_node_jobs_completed_total)
    s=$(now)
    "$bin/cmctl" submit "$work/starts.sub" >/dev/null
    first=
    deadline=$(($(date +%s) + 60 + start_jobs))
    while :; do
      got=$(($(metric "$exec_metrics" aerie_node_jobs_started_total) - base))
      t=$(now)
      [ -z "$first" ] && [ "$got" -gt 0 ] && first=$t
      [ "$got" -ge "$start_jobs" ] && break
      if [ "$(date +%s)" -gt "$deadline" ]; then
        echo "run $r: only $got of $start_jobs jobs started in time; logs in $work (KEEP=1 keeps them)" >&2
        exit 1
      fi
      sleep 0.05
    done
    total=$(secs "$s" "$t")
    rates+=("$(echo "$start_jobs / $total" | bc -l)")
    spread=$(secs "$first" "$t")
    if [ "$start_jobs" -gt 1 ] && [ "$(echo "$spread > 0" | bc)" = 1 ]; then
      steady+=("$(echo "($start_jobs - 1) / $spread" | bc -l)")
    fi
    echo "run $r: $start_jobs jobs started $total s after the submit (first start after $(secs "$s" "$first") s)"
    # Until this run's jobs have left the queue (completed), so runs do not overlap.
    for _ in $(seq 600); do
      c=$(($(metric "$exec_metrics" aerie_node_jobs_completed_total) - done0))
      [ "$c" -ge "$start_jobs" ] && [ -z "$("$bin/cmctl" q -af ClusterId 2>/dev/null)" ] && break
      sleep 0.1
    done
  done
  echo "| jobs started per second, $start_jobs x /bin/true on $slots slots, from the submit | median $(med "${rates[@]}") /s |"
  [ ${#steady[@]} -eq 0 ] ||
    echo "| same, from the first start to the last | median $(med "${steady[@]}") /s |"
  echo "access point: $(curl -sf "http://$ap_metrics/metrics" | grep -E '^aerie_ap_(job_starts|claims_reused|claims_released|job_completions)_total' | tr '\n' ' ')"
  "$bin/cmctl" negotiator status 2>/dev/null | head -n 12 || true
fi
