#!/usr/bin/env bash
# Differential scenario for group quotas (the manual's surplus example): 30 slots; physics 20
# (no surplus), physics.hep 15 and physics.lep 5 (surplus), chemistry 10; oversubscription off.
# DEMAND="hep:60" (default) or e.g. DEMAND="hep:60 lep:60 chemistry:60".
# Prints MATCHES per submitter for the first cycle that saw every submitter.
# Aerie's expectation (core/tests/negotiator_seeds.rs `surplus_hard_cap`): hep only -> 20;
# all three -> 15 / 5 / 10.
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/groups.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-30}
DEMAND=${DEMAND:-hep:60}
start_pool
write_slots "$ads" "$N"
cat > "$ROOT/srv/ref/pool/config.d/groups.conf" <<CFG
GROUP_NAMES = group_physics, group_physics.hep, group_physics.lep, group_chemistry
GROUP_QUOTA_group_physics = 20
GROUP_QUOTA_group_physics.hep = 15
GROUP_QUOTA_group_physics.lep = 5
GROUP_QUOTA_group_chemistry = 10
GROUP_ACCEPT_SURPLUS = False
GROUP_ACCEPT_SURPLUS_group_physics = False
GROUP_ACCEPT_SURPLUS_group_physics.hep = True
GROUP_ACCEPT_SURPLUS_group_physics.lep = True
NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False
CFG
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
nsub=0
for spec in $DEMAND; do
  IFS=: read -r g n <<<"$spec"
  case $g in hep|lep) grp=group_physics.$g ;; *) grp=group_$g ;; esac
  cat > "$ROOT/home/ref/$g.sub" <<SUB
executable = /bin/true
accounting_group = $grp
accounting_group_user = u$g
request_cpus = 1
request_memory = 1
request_disk = 1
queue $n
SUB
  $T tool condor_submit "$g.sub" >/dev/null
  nsub=$((nsub + 1))
done
first_cycle_matches "$nsub"
$T pool-down
