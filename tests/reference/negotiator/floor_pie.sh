#!/usr/bin/env bash
# Differential scenario for the pie left in a floor round: 21 one-core slots, 8 of them claimed
# by a and 8 by b (busy, CurrentRank 0), 5 unclaimed. Real priorities (factor 1): a 1, b 1, c 2,
# d 0.5; floors: a 9, b 9, c 1, d none; each has 10 idle jobs, submitted in one condor_submit.
# The floor round (a, b, c: usage below floor) shares 21 among them: a and b get limits of about
# 0.4 (each rounds up to one slot), c about 4.2 held to its floor of 1. HTCondor's
# calculatePieLeft sums the limits without the floor cap (about 5.0), so c still finds pie left
# for its slot; summing the floor-capped limits (about 1.8) leaves c nothing after a and b round
# up, and d (best priority, no floor) takes c's slot in the main round.
# Prints MATCHES per submitter for the first cycle that saw all four, then UNMATCHED (of the 5
# unclaimed slots).
# Aerie's expectation (core/tests/negotiator_pie.rs `floor_round_pie_left_ignores_the_floor`),
# as the real HTCondor 23.9.6 printed it: a 1, b 1, c 1, d 2 (Aerie before: 1, 1, 0, 3).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/floor_pie.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
start_pool
: > "$ads"
for i in $(seq 1 16); do
  u=a; [ "$i" -gt 8 ] && u=b
  slot_ad "busy$i" "State = \"Claimed\"
Activity = \"Busy\"
RemoteUser = \"$u@ref.test\"
RemoteOwner = \"$u@ref.test\"
CurrentRank = 0" >> "$ads"
done
for i in $(seq 1 5); do slot_ad "idle$i" >> "$ads"; done
$T advertise "$ads"
sub="$ROOT/home/ref/floor.sub"
printf '%s\n' "executable = /bin/true" "request_cpus = 1" "request_memory = 1" "request_disk = 1" > "$sub"
for spec in a:1:9 b:1:9 c:2:1 d:0.5:0; do
  IFS=: read -r u prio floor <<<"$spec"
  $T tool condor_userprio -setfactor "$u@ref.test" 1 >/dev/null
  $T tool condor_userprio -setprio "$u@ref.test" "$prio" >/dev/null
  [ "$floor" -gt 0 ] && $T tool condor_userprio -setfloor "$u@ref.test" "$floor" >/dev/null
  printf '%s\n' "accounting_group_user = $u" "queue 10" >> "$sub"
done
$T tool condor_submit floor.sub >/dev/null
first_cycle_matches 4 | tee "$ROOT/srv/negotiator/matches.txt"
awk '{m += $3} END {print "UNMATCHED", 5 - m}' "$ROOT/srv/negotiator/matches.txt"
$T pool-down
