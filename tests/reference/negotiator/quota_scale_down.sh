#!/usr/bin/env bash
# Differential scenario for static group quotas that add up to more than the pool, scaled down
# (NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False) with no surplus anywhere: N one-core slots
# (default 16); groups and static quotas from QUOTAS (default "a:20 b:10", so scaled to 10.67 and
# 5.33 of 16), a user u<group> with JOBS idle jobs (default 30) in each, and NONE idle jobs
# (default 10) of a user nobody in no group, all in one condor_submit; EXTRA_CONFIG adds lines to
# the configuration (e.g. "NEGOTIATOR_DEBUG = D_FULLDEBUG" to see the limits in NegotiatorLog).
# Prints MATCHES per submitter for the first cycle that saw them all, then UNMATCHED.
# Each group negotiates for the whole slots of its scaled quota (hgq_negotiate_with_all_groups
# passes the limit to its callback as an int); the next allocation round gives the remainders
# to <none>, negotiated last, also as an int (0.67 + 0.33 adds up to 0.9999999: nothing).
# Aerie's expectation (core/tests/negotiator_pie.rs `scaled_static_quotas_leave_leftovers_to_none`),
# as the real HTCondor 23.9.6 printed it (group users in QUOTAS order, nobody, idle slots):
#   N=16 (defaults): 10 5 0 (1)      N=17: 11 5 0 (1)      N=9 QUOTAS="a:6 b:6": 4 4 1 (0)
#   N=9 QUOTAS="a:6 b:6" NONE=0: 4 4 (1)      N=20 QUOTAS="a:20 b:10 c:7": 10 5 3 2 (0)
# Aerie before (fractional limits, "round up once" in the next round): 11 5 0, 11 6 0, 5 4 0,
# 5 4, 11 5 4 0.
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/quota_scale_down.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-16}
QUOTAS=${QUOTAS:-a:20 b:10}
JOBS=${JOBS:-30}
NONE=${NONE:-10}
start_pool
write_slots "$ads" "$N"
{
  group_quotas GROUP_QUOTA "$QUOTAS"
  echo "GROUP_ACCEPT_SURPLUS = False"
  echo "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False"
  [ -n "${EXTRA_CONFIG:-}" ] && printf '%s\n' "$EXTRA_CONFIG"
} > "$ROOT/srv/ref/pool/config.d/groups.conf"
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
submit_groups "$QUOTAS" "$NONE" "$JOBS"
first_cycle_matches "$nsub" | tee "$ROOT/srv/negotiator/matches.txt"
awk -v n="$N" '{m += $3} END {print "UNMATCHED", n - m}' "$ROOT/srv/negotiator/matches.txt"
$T pool-down
