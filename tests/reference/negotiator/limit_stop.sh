#!/usr/bin/env bash
# Differential scenario for the end of a submitter's turn at its limit without slot weights or
# preemption: NEGOTIATOR_USE_SLOT_WEIGHTS = False and NEGOTIATOR_CONSIDER_PREEMPTION = False; N
# one-core slots (default 5); a and b, fresh and equal, each with 15 idle jobs in three
# autoclusters (request_memory 1, 2, 3; five jobs each, a cluster each). Each has a limit
# of 2.5: two matches, then a request the limit turns away. negotiate() then ends the turn
# (HTCondor 23.9.6 breaks out at the first submitter-limit rejection when neither preemption nor
# slot weights are on) instead of offering the other autoclusters, so each submitter has one
# rejection.
# Prints MATCHES per submitter for the first cycle that saw both, then TURNS per submitter: the
# requests it sent in that cycle (HTCondor's jobs considered) and how many were rejected.
# Aerie's expectation (core/tests/negotiator_pie.rs `limit_rejection_ends_the_turn_without_weights`),
# as the real HTCondor 23.9.6 printed it: a 2, b 2; TURNS a 3 requests 1 rejected, b 3 1 (the
# log says "Hit submitter limit: done negotiating"). Aerie before: the same matches, but 5
# requests and 3 rejections each (it went on to the other two autoclusters).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/limit_stop.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-5}
start_pool
write_slots "$ads" "$N"
printf '%s\n' "NEGOTIATOR_USE_SLOT_WEIGHTS = False" "NEGOTIATOR_CONSIDER_PREEMPTION = False" \
  > "$ROOT/srv/ref/pool/config.d/limits.conf"
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
# One cluster per autocluster (the schedd would otherwise skip the rest of a cluster whose job
# was rejected), submitted on hold and released together so that one cycle sees them all.
for u in a b; do
  for m in 1 2 3; do
    printf '%s\n' "executable = /bin/true" "hold = True" "request_cpus = 1" "request_disk = 1" \
      "accounting_group_user = $u" "request_memory = $m" "queue 5" > "$ROOT/home/ref/limit-$u$m.sub"
    $T tool condor_submit "limit-$u$m.sub" >/dev/null
  done
done
$T tool condor_release -all >/dev/null
first_cycle_matches 2
log="$ROOT/srv/ref/pool/log/NegotiatorLog"
awk '/Started Negotiation Cycle/{c++} /include 2 submitter/{if (!want) want=c}
     c==want && want && /Negotiating with /{s=$5} c==want && want && /Request [0-9]/{n[s]++}
     c==want && want && /Rejected/{r[$5]++} END{for (x in n) print "TURNS", x, n[x], r[x] + 0}' "$log" | sort
$T pool-down
