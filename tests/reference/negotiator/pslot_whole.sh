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
mem=1024
for i in 1 2 3 4; do
  slot_ad "node$i" "Memory = $mem" >> "$ads"
  mem=$((mem + 16))
done
for spec in mid:4:1000 big:12:12288; do
  IFS=: read -r node cpus memory <<<"$spec"
  slot_ad "$node" "PartitionableSlot = true
SlotType = \"Partitionable\"
Cpus = $cpus
Memory = $memory
TotalSlotCpus = $cpus
TotalSlotMemory = $memory
Start = true
WithinResourceLimits = (MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 && TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk)
Requirements = START && (WithinResourceLimits)" >> "$ads"
done
$T advertise "$ads"
for spec in alice:1 bob:2; do
  IFS=: read -r u prio <<<"$spec"
  $T tool condor_userprio -setfactor "$u@ref.test" 1 >/dev/null
  $T tool condor_userprio -setprio "$u@ref.test" "$prio" >/dev/null
  cat > "$ROOT/home/ref/$u.sub" <<SUB
executable = /bin/true
accounting_group_user = $u
request_cpus = 1
request_memory = 1000
request_disk = 1
queue 10
SUB
  $T tool condor_submit "$u.sub" >/dev/null
done
first_cycle_match_lines 2 | tee "$ROOT/srv/matches.txt"
awk '{print $3}' "$ROOT/srv/matches.txt" | sort | uniq -c | awk '{print "MATCHES", $2, $1}'
grep -E "Matched|limit|Rejected|match cost" "$ROOT/srv/ref/pool/log/NegotiatorLog" | tail -30 >&2 || true
$T pool-down
