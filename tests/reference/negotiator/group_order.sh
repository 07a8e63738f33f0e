#!/usr/bin/env bash
# Differential scenario for the order of groups whose GROUP_SORT_EXPR values tie: N one-core
# slots (default 20); GROUP_NAMES = NAMES (default "group_b, group_a, group_c"); static quotas
# from QUOTAS (default "group_a:20 group_b:20", group_c none); oversubscription allowed
# (HTCondor's default), no surplus; a user u<group> with the idle jobs of JOBS (default
# "group_b:30 group_a:30") in each group, in one condor_submit; BUSY adds claimed slots running
# a user's jobs (e.g. "group_a.ua:1 group_b.ub:2"). Every group starts at
# GroupResourcesInUse / GroupQuota = 0, so the first one takes the whole pool. HTCondor 23.9.6's
# hgq_construct_tree sorts GROUP_NAMES (case-insensitively) before it builds the tree, and ties
# keep that order, so group_a goes first whatever order GROUP_NAMES gives; it also makes
# group_c, which has no quota, a dynamic group of quota 0 (static N in the log's table).
# Prints MATCHES per submitter for the first cycle that saw them all, then GROUP lines: the
# negotiator log's quota table of that cycle (name, computed quota, config quota, static).
# Aerie's expectation (core/tests/negotiator_pie.rs `tied_groups_negotiate_in_name_order`),
# as the real HTCondor 23.9.6 printed it:
#   defaults: group_a.ua 20, group_b.ub 0; group_c static N
#   NAMES="group_a, group_b, group_c": the same
#   the manual's strict-priority recipe, NAMES="group_physics, group_chemistry"
#   QUOTAS="group_physics:1000000 group_chemistry:100" JOBS="group_physics:25 group_chemistry:25"
#   (core/tests/negotiator_seeds.rs `strict_priority_recipe`): on a fresh pool (N=30) both
#   groups are at 0 of their quota and chemistry goes first by name: chemistry 25, physics 5;
#   with one job of each running (N=28 BUSY="group_physics.uphysics:1
#   group_chemistry.uchemistry:1") physics goes first: physics 25, chemistry 3; with 40 jobs
#   of physics (JOBS="group_physics:40 group_chemistry:25"): physics 28, chemistry 0.
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/group_order.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-20}
NAMES=${NAMES:-group_b, group_a, group_c}
QUOTAS=${QUOTAS:-group_a:20 group_b:20}
JOBS=${JOBS:-group_b:30 group_a:30}
start_pool
write_slots "$ads" "$N"
for spec in ${BUSY:-}; do   # group.user:count claimed, busy slots running that user's jobs
  IFS=: read -r who count <<<"$spec"
  for i in $(seq 1 "$count"); do
    slot_ad "busy-$who-$i" "State = \"Claimed\"
Activity = \"Busy\"
RemoteUser = \"$who@ref.test\"
RemoteOwner = \"$who@ref.test\"
AccountingGroup = \"$who@ref.test\"
CurrentRank = 0" >> "$ads"
  done
done
{
  echo "GROUP_NAMES = $NAMES"
  for spec in $QUOTAS; do IFS=: read -r g q <<<"$spec"; echo "GROUP_QUOTA_$g = $q"; done
  echo "GROUP_ACCEPT_SURPLUS = False"
} > "$ROOT/srv/ref/pool/config.d/groups.conf"
$T tool condor_reconfig >/dev/null
sleep 3
$T advertise "$ads"
sub="$ROOT/home/ref/order.sub"
printf '%s\n' "executable = /bin/true" "request_cpus = 1" "request_memory = 1" "request_disk = 1" > "$sub"
nsub=0
for spec in $JOBS; do
  IFS=: read -r g n <<<"$spec"
  printf '%s\n' "accounting_group = $g" "accounting_group_user = u${g#group_}" "queue $n" >> "$sub"
  nsub=$((nsub + 1))
done
$T tool condor_submit order.sub >/dev/null
first_cycle_matches "$nsub"
awk -v n="$nsub" '/Started Negotiation Cycle/{c++} $0 ~ "include " n " submitter"{if (!want) want=c}
     c==want && want && /Quotas have been assigned/{t=1; next}
     t && $3 ~ /^group_/{print "GROUP", $3, $4, $5, $6} t && /allocation round/{t=0}' \
  "$ROOT/srv/ref/pool/log/NegotiatorLog"
$T pool-down
