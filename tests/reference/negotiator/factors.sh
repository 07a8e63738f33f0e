#!/usr/bin/env bash
# Differential scenario for priority-factor shares that do not divide the pool into whole slots:
# N one-core slots (default 10; CPUS="1 2" makes them 1- and 2-core static slots in turn,
# SlotWeight = Cpus); fresh submitters (real priority 0.5) with the priority factors of FACTORS
# (default "a:1000 b:2000 c:5000", so effective priorities 500, 1000, 2500 and shares 10/17,
# 5/17, 2/17 of the pool), JOBS idle jobs each (default 100) unless FACTORS gives a third
# field (name:factor:jobs), all submitted in one condor_submit so the first cycle sees every
# submitter at its fresh priority. condor_userprio sends a factor as CEDAR encodes a double (the
# frexp mantissa times 2^31-1, truncated), so 5000 arrives as 4999.9999985.
# Prints MATCHES per submitter for the first cycle that saw them all, then UNMATCHED (slots the
# cycle left idle).
# Aerie's expectation (core/tests/negotiator_pie.rs `factor_shares_hand_out_whole_slots`, which
# has every run), as the real HTCondor 23.9.6 printed it (matches in FACTORS order, idle slots):
#   "a:1000 b:2000 c:5000"          N=5: 2 1 1 (1)  N=7: 4 2 1 (0)  N=10: 5 2 1 (2)  N=11: 6 3 1 (1)
#                                   N=13: 7 3 1 (2)  N=17: 9 4 2 (2)  N=23: 13 6 2 (2)  N=29: 17 8 3 (1)
#                                   N=31: 18 9 3 (1)  N=37: 21 10 4 (2)
#   "a:1000 b:3000 c:7000"          N=5: 3 1 1 (0)  N=7: 4 1 1 (1)  N=10: 6 2 1 (1)  N=11: 7 2 1 (1)
#                                   N=13: 8 2 1 (2)  N=17: 11 3 1 (2)  N=23: 15 5 2 (1)  N=29: 19 6 2 (2)
#                                   N=31: 20 7 3 (1)  N=37: 25 8 3 (1)
#   "a:1000 b:1500 c:4000 d:10000"  N=5: 2 1 1 1 (0)  N=7: 3 2 1 1 (0)  N=10: 4 3 1 1 (1)
#                                   N=11: 5 3 1 1 (1)  N=13: 6 4 1 1 (1)  N=17: 8 5 2 1 (1)
#                                   N=23: 11 7 2 1 (2)  N=29: 14 9 3 1 (2)  N=31: 15 10 3 1 (2)
#                                   N=37: 18 12 4 1 (2)
#   "a:1000:3 b:2000 c:5000" N=20: 3 14 3 (0)     "a:1000:2 b:3000:4 c:7000" N=23: 2 4 17 (0)
#   "a:1000:4 b:1500:3 c:4000 d:10000" N=19: 4 3 11 1 (0)
#   CPUS="1 2": "a:1000 b:2000 c:5000" N=10: 7 2 1, N=13: 9 3 1; "a:1000:2 b:2000 c:5000" N=11: 2 7 2
#   CPUS="2 1 1": "a:1000 b:3000 c:7000" N=12: 9 2 1 (every slot matched)
# Run as root: ROOT=/var/lib/aerie-reference/htcondor-root tests/reference/negotiator/factors.sh
set -euo pipefail
. "$(dirname "$0")/pool.sh"
N=${N:-10}
FACTORS=${FACTORS:-a:1000 b:2000 c:5000}
JOBS=${JOBS:-100}
start_pool
if [ -n "${CPUS:-}" ]; then   # static slots of these sizes, in turn (SlotWeight = Cpus)
  read -r -a sizes <<<"$CPUS"
  : > "$ads"
  for i in $(seq 1 "$N"); do
    slot_ad "node$i" "Cpus = ${sizes[$(( (i - 1) % ${#sizes[@]} ))]}" >> "$ads"
  done
else
  write_slots "$ads" "$N"
fi
$T advertise "$ads"
sub="$ROOT/home/ref/factors.sub"
printf '%s\n' "executable = /bin/true" "request_cpus = 1" "request_memory = 1" "request_disk = 1" > "$sub"
nsub=0
for spec in $FACTORS; do
  IFS=: read -r u f n <<<"$spec"
  $T tool condor_userprio -setfactor "$u@ref.test" "$f" >/dev/null
  printf '%s\n' "accounting_group_user = $u" "queue ${n:-$JOBS}" >> "$sub"
  nsub=$((nsub + 1))
done
$T tool condor_submit factors.sub >/dev/null
first_cycle_matches "$nsub" | tee "$ROOT/srv/negotiator/matches.txt"
awk -v n="$N" '{m += $3} END {print "UNMATCHED", n - m}' "$ROOT/srv/negotiator/matches.txt"
[ -n "${CPUS:-}" ] && grep -h "Matched" "$ROOT/srv/ref/pool/log/NegotiatorLog" | awk '{print $5, $NF}' | sort | uniq -c >&2
$T pool-down
