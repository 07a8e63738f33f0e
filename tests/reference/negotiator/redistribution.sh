#!/usr/bin/env bash
# Differential scenario for the negotiator: 70 one-core slots; a, b, c with real priorities
# 5, 10, 20 (factor 1); a has 5 idle jobs, b and c 100 each. Prints the matches of the first
# cycle that saw all three submitters, as MATCHES <submitter> <count>.
# Aerie's expectation (core/tests/negotiator_seeds.rs `unused_share_is_redistributed_by_later_spins`):
# a 5, b 46, c 19.
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/redistribution.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-70}
start_pool
write_slots "$ads" "$N"
$T advertise "$ads"
for spec in a:5:5 b:10:100 c:20:100; do
  IFS=: read -r u prio n <<<"$spec"
  $T tool condor_userprio -setfactor "$u@ref.test" 1 >/dev/null
  $T tool condor_userprio -setprio "$u@ref.test" "$prio" >/dev/null
  cat > "$ROOT/home/ref/$u.sub" <<SUB
executable = /bin/true
accounting_group_user = $u
request_cpus = 1
request_memory = 1
request_disk = 1
queue $n
SUB
  $T tool condor_submit "$u.sub" >/dev/null
done
first_cycle_matches 3
if [ -n "${DUMP:-}" ]; then
  mkdir -p "$DUMP"
  $T tool condor_status -long > "$DUMP/slots.txt"
  $T tool condor_q -long > "$DUMP/jobs.txt"
  $T tool condor_userprio -l -allusers > "$DUMP/userprio.txt"
  $T tool condor_userprio -l -modular -allusers > "$DUMP/userprio-modular.txt" || true
fi
$T pool-down
