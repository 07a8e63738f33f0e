#!/usr/bin/env bash
# Differential scenario for partitionable slots with a consumption policy: three slots shaped
# as a 23.9.6 startd with CONSUMPTION_POLICY = True advertises them (MachineResources,
# ConsumptionCpus/Memory/Disk, the CP form of WithinResourceLimits, SlotWeight = Cpus):
# slot1@pa (4 cpus, 4096 MB), slot1@pb (4 cpus, 3072 MB, ConsumptionMemory in steps of
# 1024 MB) and slot1@pc (2 cpus, 2048 MB); the other consumptions are the startd's defaults
# (cpus in steps of 1, memory of 128 MB, disk of 1024 KB). The negotiator's own configuration
# sets MODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory,{4096}), a startd knob: if
# the negotiator read it, nothing would fit slot1@pb. alice (real priority 1) has 10 jobs of
# 1 cpu and 600 MB, bob (real priority 2) 10 jobs of 1 cpu and 100 MB, factors 1: limits
# 6.7 and 3.3 of a pie of 10.
# Prints the matches of the first cycle that saw both submitters, in order, as
# `MATCH <job> <submitter> <slot>`, then `MATCHES <submitter> <count>`.
# The real negotiator 23.9.6 splits the slots within the cycle and charges what is consumed
# (1 cpu a match), with the consumption the slot ad states; it fills them in the order of its
# match list: the first request of an autocluster sorts every candidate (NEGOTIATOR_PRE_JOB_RANK
# prefers small slots), later requests pop that list and a split slot goes back in by
# MatchListType::insert_candidate, which moves it past the entries it outranks.
# Aerie's expectation (core/tests/negotiator_pslots.rs `consumption_policy_splits_in_list_order`).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/pslot_consumption.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
start_pool
cat > "$ROOT/srv/ref/pool/config.d/pslot.conf" <<CFG
MODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory,{4096})
CFG
$T tool condor_reconfig >/dev/null
sleep 3
{
  cp_pslot_ad pa 4 4096 128
  cp_pslot_ad pb 4 3072 1024
  cp_pslot_ad pc 2 2048 128
} > "$ads"
$T advertise "$ads"
submit_user alice 1 600 10
submit_user bob 2 100 10
first_cycle_match_lines_and_counts 2
grep -E "Matched|limit|Rejected" "$ROOT/srv/ref/pool/log/NegotiatorLog" | tail -40 >&2 || true
$T pool-down
