#!/usr/bin/env bash
# Differential scenario for what a rejected job takes with it: N one-core slots (default 5); one
# user, one cluster of JOBS jobs (default 5) whose proc 0 asks for more memory than any slot
# has (request_memory 4096, its own autocluster) and the others for 1 MB;
# NEGOTIATE_ALL_JOBS_IN_CLUSTER is ALL (default unset, i.e. False). The 23.9.6 schedd offers
# its jobs autocluster by autocluster (ScheddNegotiate) and, after a rejection, skips the
# rejected autocluster only, not the rest of the cluster as the manual's older text says;
# NEGOTIATE_ALL_JOBS_IN_CLUSTER gives every job an autocluster of its own.
# Prints MATCHES per submitter for the first cycle that saw it, then the rejected jobs of that
# cycle as REJECTED <job>.
# Aerie's expectation (core/tests/negotiator_pie.rs `rejection_skips_the_autocluster_not_the_cluster`),
# as the real HTCondor 23.9.6 printed it: solo 4, REJECTED 1.0, with and without ALL=True
# (Aerie before: 0 without, the rest of the cluster skipped).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/cluster_skip.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-5}
JOBS=${JOBS:-5}
start_pool
write_slots "$ads" "$N"
[ -n "${ALL:-}" ] && echo "NEGOTIATE_ALL_JOBS_IN_CLUSTER = $ALL" > "$ROOT/srv/ref/pool/config.d/cluster.conf"
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
printf '%s\n' "executable = /bin/true" "request_cpus = 1" "request_disk = 1" \
  "accounting_group_user = solo" "request_memory = 4096" "queue 1" \
  "request_memory = 1" "queue $((JOBS - 1))" > "$ROOT/home/ref/skip.sub"
$T tool condor_submit skip.sub >/dev/null
first_cycle_matches 1
awk '/Started Negotiation Cycle/{c++} /include 1 submitter/{if (!want) want=c} c==want && want && /Rejected/{print "REJECTED", $4}' \
  "$ROOT/srv/ref/pool/log/NegotiatorLog"
$T pool-down
