#!/usr/bin/env bash
# Differential scenario for partitionable slots without a consumption policy: four static
# one-core slots (Memory 1024, 1040, 1056, 1072, so the default NEGOTIATOR_PRE_JOB_RANK orders
# them), slot1@mid (partitionable, 4 cpus, 1000 MB) and slot1@big (partitionable, 12 cpus,
# 12288 MB), both with the startd's WithinResourceLimits as Requirements and no
# MachineResources/Consumption* attributes. The pie is 4 + 4 + 12 = 20. alice (real priority
# 1) and bob (real priority 2), factor 1, have 10 idle jobs each of 1 cpu and 1000 MB (exactly
# slot1@mid's memory: the negotiator quantizes nothing).
# Prints the matches of the first cycle that saw both submitters, in order, as
# `MATCH <job> <submitter> <slot>`, then `MATCHES <submitter> <count>`.
# The real negotiator 23.9.6: a partitionable slot is matched once per cycle (the schedd, not
# the negotiator, carves more dynamic slots from the claim) and costs its whole SlotWeight:
# alice (limit 13.3) takes the four static slots and slot1@mid (8 used), slot1@big (12) is over
# her limit; bob (limit 6.7, nothing used) takes slot1@big, one slot larger than his limit.
# Aerie's expectation (core/tests/negotiator_pslots.rs `whole_pslot_once_per_cycle`).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/pslot_whole.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
start_pool
: > "$ads"
for i in 1 2 3 4; do
  slot_ad "node$i" "Memory = $((1024 + 16 * (i - 1)))" >> "$ads"
done
pslot_ad mid 4 1000 >> "$ads"
pslot_ad big 12 12288 >> "$ads"
$T advertise "$ads"
submit_user alice 1 1000 10
submit_user bob 2 1000 10
first_cycle_match_lines_and_counts 2
grep -E "Matched|limit|Rejected" "$ROOT/srv/ref/pool/log/NegotiatorLog" | tail -30 >&2 || true
$T pool-down
