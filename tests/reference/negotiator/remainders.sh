#!/usr/bin/env bash
# Differential scenario for group allocations without slot weights (NEGOTIATOR_USE_SLOT_WEIGHTS =
# False): N one-core slots (default 10); dynamic quotas from QUOTAS (default "a:0.45 b:0.35
# c:0.2", so 4.5, 3.5 and 2 of 10); SURPLUS is GROUP_ACCEPT_SURPLUS (default True); a user
# u<group> with 30 idle jobs in each group and NONE idle jobs (default 0) of nobody (no group),
# in one condor_submit; EXTRA_CONFIG adds configuration lines. Without slot weights HTCondor
# 23.9.6's hgq_recover_remainders takes the fractions off every allocation and hands them out
# again whole, round robin (groups whose last round robin is oldest first, then larger subtree
# quota, then larger request), so 4.5 + 3.5 become 5 + 3 rather than 4 + 3 and an idle slot.
# Prints MATCHES per submitter for the first cycle that saw them all, then UNMATCHED.
# Aerie's expectation (core/tests/negotiator_pie.rs `remainders_are_handed_out_round_robin`),
# as the real HTCondor 23.9.6 printed it (group users in QUOTAS order, nobody, idle slots):
#   defaults: 5 3 2 (0)                    QUOTAS="a:0.25 b:0.25 c:0.25 d:0.25": 3 3 2 2 (0)
#   SURPLUS=False NONE=10: 4 3 2 1 (0)      SURPLUS=False: 4 3 2 (1)
# Aerie before (no recovery; the second allocation round's surplus): 4 3 3, 2 2 2 2 (2 idle),
# 4 3 2 1, 4 3 2 (1 idle).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/remainders.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-10}
QUOTAS=${QUOTAS:-a:0.45 b:0.35 c:0.2}
SURPLUS=${SURPLUS:-True}
NONE=${NONE:-0}
start_pool
write_slots "$ads" "$N"
{
  group_quotas GROUP_QUOTA_DYNAMIC "$QUOTAS"
  echo "GROUP_ACCEPT_SURPLUS = $SURPLUS"
  echo "NEGOTIATOR_USE_SLOT_WEIGHTS = False"
  [ -n "${EXTRA_CONFIG:-}" ] && printf '%s\n' "$EXTRA_CONFIG"
} > "$ROOT/srv/ref/pool/config.d/groups.conf"
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
submit_groups "$QUOTAS" "$NONE" 30
first_cycle_matches "$nsub" | tee "$ROOT/srv/negotiator/matches.txt"
awk -v n="$N" '{m += $3} END {print "UNMATCHED", n - m}' "$ROOT/srv/negotiator/matches.txt"
$T pool-down
