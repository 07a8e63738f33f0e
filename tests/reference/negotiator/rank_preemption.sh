#!/usr/bin/env bash
# Differential scenario for startd-rank preemption by a submitter over its limit: 4 claimed,
# busy slots. a1 and a2 run group_a.ann's jobs at CurrentRank 10; b1 and b2 run bob's at
# CurrentRank 0; every slot's Rank is 10 for group_a.ann's jobs. group_a has a static quota of
# 2 (no surplus, one allocation round), so ann, already using 2, has a submitter limit of 0 and
# negotiates in the first spin for startd rank only. ann has 3 identical idle jobs (one
# autocluster). PREEMPTION_REQUIREMENTS is False (no priority preemption).
# Prints MATCHES per submitter for the first cycle that saw ann.
# Aerie's expectation (core/tests/negotiator_startd_rank.rs
# `over_limit_first_spin_rank_preempts_once_per_autocluster`): ann 1 (a fresh scan for the
# autocluster's first job preempts b1 by rank; the next job, from the cached match list, is
# held to the submitter limit).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/rank_preemption.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
start_pool
: > "$ads"
for spec in a1:group_a.ann:ann:10 a2:group_a.ann:ann:10 b1:bob:bob:0 b2:bob:bob:0; do
  IFS=: read -r node acct user rank <<<"$spec"
  slot_ad "$node" "State = \"Claimed\"
Activity = \"Busy\"
RemoteUser = \"$user@ref.test\"
RemoteOwner = \"$user@ref.test\"
AccountingGroup = \"$acct@ref.test\"
CurrentRank = $rank
Rank = 10 * (TARGET.AccountingGroup =?= \"group_a.ann\")" >> "$ads"
done
cat > "$ROOT/srv/ref/pool/config.d/groups.conf" <<CFG
GROUP_NAMES = group_a
GROUP_QUOTA_group_a = 2
GROUP_ACCEPT_SURPLUS = False
GROUP_QUOTA_MAX_ALLOCATION_ROUNDS = 1
NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False
NEGOTIATOR_CONSIDER_PREEMPTION = True
PREEMPTION_REQUIREMENTS = False
CFG
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
{
  echo "executable = /bin/true"
  echo "accounting_group = group_a"
  echo "accounting_group_user = ann"
  echo "request_cpus = 1"
  echo "request_memory = 1"
  echo "request_disk = 1"
  echo "queue 3"
} > "$ROOT/home/ref/ann.sub"
$T tool condor_submit ann.sub >/dev/null
first_cycle_matches 1
grep -E "Matched|limit|Rejected|rank" "$ROOT/srv/ref/pool/log/NegotiatorLog" | tail -20 >&2 || true
$T pool-down
