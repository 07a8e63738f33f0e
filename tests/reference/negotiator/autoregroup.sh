#!/usr/bin/env bash
# Differential scenario for GROUP_AUTOREGROUP: 20 slots; group_a has a static quota of 5, no
# surplus, autoregroup on; ann (group_a) has 30 jobs, nobody (no group) has 2.
# Prints MATCHES per submitter for the first cycle that saw both submitters.
# Aerie's expectation (core/tests/negotiator_seeds.rs
# `autoregroup_lets_a_group_past_its_quota_in_the_none_round`): ann 18, nobody 2 (as the real one).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/autoregroup.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-20}
start_pool
write_slots "$ads" "$N"
cat > "$ROOT/srv/ref/pool/config.d/groups.conf" <<CFG
GROUP_NAMES = group_a
GROUP_QUOTA_group_a = 5
GROUP_ACCEPT_SURPLUS = False
GROUP_AUTOREGROUP_group_a = True
NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False
CFG
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
for spec in ann:group_a:30 nobody::2; do
  IFS=: read -r u grp n <<<"$spec"
  {
    echo "executable = /bin/true"
    [ -n "$grp" ] && echo "accounting_group = $grp" && echo "accounting_group_user = $u"
    echo "request_cpus = 1"
    echo "request_memory = 1"
    echo "request_disk = 1"
    echo "queue $n"
  } > "$ROOT/home/ref/$u.sub"
  $T tool condor_submit "$u.sub" >/dev/null
done
first_cycle_matches 2
$T pool-down
