#!/usr/bin/env bash
# Differential scenario for the negotiator: 33 one-core slots, two submitters with equal
# (fresh) priorities and 50 idle jobs each. Runs the real HTCondor 23.9.6 pool in the chroot
# and prints the matches of its first negotiation cycle per submitter, as
#   MATCHES <submitter> <count>
# Aerie's expectation (core/tests/negotiator_seeds.rs `deterministic`): 16 + 16, the 33rd slot
# is a crumb below the minimum slot weight and stays unmatched in that cycle.
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/crumbs.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-33}
start_pool
write_slots "$ads" "$N"
$T advertise "$ads"
for u in alice bob; do
  cat > "$ROOT/home/ref/$u.sub" <<SUB
executable = /bin/true
accounting_group_user = $u
request_cpus = 1
request_memory = 1
request_disk = 1
queue 50
SUB
  $T tool condor_submit "$u.sub" >/dev/null
done
first_cycle_matches 2
$T pool-down
