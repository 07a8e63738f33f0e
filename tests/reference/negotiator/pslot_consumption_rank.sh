#!/usr/bin/env bash
# Differential scenario for the order a consumption policy's split slots are filled in when the
# job's Rank orders them: NEGOTIATOR_PRE_JOB_RANK and NEGOTIATOR_POST_JOB_RANK are 0 and every
# job has Rank = TARGET.Memory. Slots: slot1@node1 (static, 1 cpu, 5000 MB) and three
# partitionable slots with the startd's default consumption policy, slot1@pa (4 cpus,
# 4096 MB), slot1@pb (4 cpus, 3072 MB) and slot1@pc (2 cpus, 8192 MB): a pie of 11. carol (real
# priority 1) has 10 jobs of 1 cpu and 1000 MB, dave (real priority 4) 5 jobs of 1 cpu and
# 100 MB, factors 1: limits 8.8 and 2.2.
# Prints the matches of the first cycle that saw both submitters, in order, as
# `MATCH <job> <submitter> <slot>`, then `MATCHES <submitter> <count>`.
# In the real negotiator 23.9.6 a split slot goes back into the match list at its head and
# moves toward the tail only past the entries it outranks (MatchListType::insert_candidate):
# slot1@pc, still the best after a split, goes to the tail; a split slot ranked equal to or
# below the next entry stays at the head and is taken again, although the next entry ranks
# higher (a fresh scan would take that one).
# Aerie's expectation (core/tests/negotiator_pslots.rs `split_slot_stays_at_the_head_unless_it_outranks_the_next`).
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/pslot_consumption_rank.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
start_pool
cat > "$ROOT/srv/ref/pool/config.d/pslot.conf" <<CFG
NEGOTIATOR_PRE_JOB_RANK = 0
NEGOTIATOR_POST_JOB_RANK = 0
CFG
$T tool condor_reconfig >/dev/null
sleep 3
{
  slot_ad node1 "Memory = 5000"
  cp_pslot_ad pa 4 4096 128
  cp_pslot_ad pb 4 3072 128
  cp_pslot_ad pc 2 8192 128
} > "$ads"
$T advertise "$ads"
submit_user carol 1 1000 10 "rank = TARGET.Memory"
submit_user dave 4 100 5 "rank = TARGET.Memory"
first_cycle_match_lines_and_counts 2
grep -E "limit|Rejected" "$ROOT/srv/ref/pool/log/NegotiatorLog" | tail -20 >&2 || true
$T pool-down
