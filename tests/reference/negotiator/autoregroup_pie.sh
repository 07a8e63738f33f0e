#!/usr/bin/env bash
# Differential scenario for the `<none>` round with GROUP_AUTOREGROUP: N one-core slots (default
# 20); group_a has a static quota of QUOTA (default 5), autoregroup on, no surplus; ann (group_a)
# has ANN idle jobs (default 30) and nobody (no group) NOBODY (default 30), in one condor_submit.
# SORT, if set, is the GROUP_SORT_EXPR (e.g. one that puts <none> first).
# Prints MATCHES per submitter for the first cycle that saw both, then UNMATCHED.
# HTCondor 23.9.6 gives the root group the whole pool as quota and allocation in every
# allocation round when autoregroup is on, and negotiates it last whatever GROUP_SORT_EXPR says.
# Aerie's expectation (core/tests/negotiator_pie.rs `autoregroup_none_round_shares_the_whole_pool`),
# as the real HTCondor 23.9.6 printed it:
#   defaults: ann 10, nobody 10             SORT='ifThenElse(AccountingGroup =?= "<none>", 0, 1)': ann 10, nobody 10
#   NOBODY=4: ann 16, nobody 4
# Aerie before (the root's fair-share allocation of 15 as the pie, the regrouped user's usage
# from her own group's round set aside): 13 / 7, 13 / 7, 16 / 4.
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/autoregroup_pie.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-20}
QUOTA=${QUOTA:-5}
ANN=${ANN:-30}
NOBODY=${NOBODY:-30}
start_pool
write_slots "$ads" "$N"
{
  echo "GROUP_NAMES = group_a"
  echo "GROUP_QUOTA_group_a = $QUOTA"
  echo "GROUP_ACCEPT_SURPLUS = False"
  echo "GROUP_AUTOREGROUP_group_a = True"
  echo "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False"
  [ -n "${SORT:-}" ] && echo "GROUP_SORT_EXPR = $SORT"
  [ -n "${EXTRA_CONFIG:-}" ] && printf '%s\n' "$EXTRA_CONFIG"
} > "$ROOT/srv/ref/pool/config.d/groups.conf"
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
printf '%s\n' "executable = /bin/true" "request_cpus = 1" "request_memory = 1" "request_disk = 1" \
  "accounting_group_user = nobody" "queue $NOBODY" \
  "accounting_group = group_a" "accounting_group_user = ann" "queue $ANN" > "$ROOT/home/ref/regroup.sub"
$T tool condor_submit regroup.sub >/dev/null
first_cycle_matches 2 | tee "$ROOT/srv/negotiator/matches.txt"
awk -v n="$N" '{m += $3} END {print "UNMATCHED", n - m}' "$ROOT/srv/negotiator/matches.txt"
$T pool-down
