#!/usr/bin/env bash
# Differential scenario for what a ceiling leaves with fractional slot weights: N one-core slots
# (default 20) weighing WEIGHT each (default 0.5, SlotWeight = 0.5), one of them claimed by a
# (busy, so a uses 0.5 at the start); a has ceiling CEILING (default 3) and 20 idle jobs.
# negotiateWithGroup takes the ceiling and the usage as ints (GetCeiling, and
# `submitterCeiling -= (int) usage`), so a's room is 3 - 0 = 3, not 2.5: a matches until it has
# used 3, six slots of 0.5.
# Prints MATCHES per submitter for the first cycle that saw a.
# Aerie's expectation (core/tests/negotiator_pie.rs `ceiling_room_is_whole`), as the real
# HTCondor 23.9.6 printed it: a 6 (Aerie before: 5).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/ceiling_left.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-20}
WEIGHT=${WEIGHT:-0.5}
CEILING=${CEILING:-3}
start_pool
: > "$ads"
slot_ad "busy1" "SlotWeight = $WEIGHT
State = \"Claimed\"
Activity = \"Busy\"
RemoteUser = \"a@ref.test\"
RemoteOwner = \"a@ref.test\"
CurrentRank = 0" >> "$ads"
for i in $(seq 2 "$N"); do slot_ad "node$i" "SlotWeight = $WEIGHT" >> "$ads"; done
$T advertise "$ads"
$T tool condor_userprio -setceiling a@ref.test "$CEILING" >/dev/null
printf '%s\n' "executable = /bin/true" "request_cpus = 1" "request_memory = 1" "request_disk = 1" \
  "accounting_group_user = a" "queue 20" > "$ROOT/home/ref/ceiling.sub"
$T tool condor_submit ceiling.sub >/dev/null
first_cycle_matches 1
$T pool-down
