# Shared by the negotiator scenarios (sourced, not run): where the reference HTCondor chroot and
# its tool are, and the slot ads they advertise.
ROOT=${ROOT:-/var/lib/aerie-reference/htcondor-root}
T=${AERIE_SHARED_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)/shared}/tools/reference-htcondor.sh
export ROOT
# There is one reference pool per machine: a scenario holds this lock from the moment it
# sources this file until it exits, so two scenarios run one after the other, never mixed.
exec 9>/run/aerie-reference-pool.lock
flock 9
# Where the scenarios write their slot ads (inside the chroot's /srv).
ads="$ROOT/srv/negotiator/slots.ads"

# start_pool: starts the reference pool and makes room for the scenario's files.
start_pool() {
  # Not with the lock's descriptor: condor_master would inherit it and hold the lock for as
  # long as the pool runs, long after this scenario exits.
  $T pool-up 9>&-
  mkdir -p "$ROOT/srv/negotiator"
}

# slot_ad NODE [LINES]: one unclaimed one-core slot slot1@NODE.ref.test in old syntax, with
# WantClaiming = false (see the tool's header), then LINES (later lines replace earlier ones
# of the same name), then the blank line that ends the ad.
slot_ad() {
  cat <<AD
MyType = "Machine"
Name = "slot1@$1.ref.test"
Machine = "$1.ref.test"
MyAddress = "<127.0.0.1:40000?sock=$1>"
StartdIpAddr = "<127.0.0.1:40000?sock=$1>"
State = "Unclaimed"
Activity = "Idle"
Arch = "X86_64"
OpSys = "LINUX"
Cpus = 1
Memory = 1024
Disk = 1000000
SlotID = 1
SlotWeight = Cpus
Requirements = true
Rank = 0
WantClaiming = false
UidDomain = "ref.test"
FileSystemDomain = "ref.test"
AD
  [ -n "${2:-}" ] && printf '%s\n' "$2"
  echo
}

# write_slots FILE N: N such slots, node1..nodeN, for `$T advertise FILE`.
write_slots() {
  : > "$1"
  for i in $(seq 1 "$2"); do
    slot_ad "node$i" >> "$1"
  done
}

# group_quotas KNOB QUOTAS: configuration lines for the groups of QUOTAS ("a:20 b:10" is
# group_a and group_b): KNOB_group_a = 20 (KNOB GROUP_QUOTA or GROUP_QUOTA_DYNAMIC), ..., then
# GROUP_NAMES.
group_quotas() {
  local knob=$1 names="" spec g q
  for spec in $2; do
    IFS=: read -r g q <<<"$spec"
    names="$names${names:+, }group_$g"
    echo "${knob}_group_$g = $q"
  done
  echo "GROUP_NAMES = $names"
}

# submit_groups QUOTAS NONE JOBS: one condor_submit of NONE one-core jobs of nobody (no group),
# then JOBS of a user u<g> in each group group_<g> of QUOTAS; sets nsub to the submitters.
submit_groups() {
  local sub="$ROOT/home/ref/groups.sub" spec g q
  printf '%s\n' "executable = /bin/true" "request_cpus = 1" "request_memory = 1" "request_disk = 1" > "$sub"
  nsub=0
  if [ "$2" -gt 0 ]; then   # first: the group lines below stay set for later queue statements
    printf '%s\n' "accounting_group_user = nobody" "queue $2" >> "$sub"
    nsub=$((nsub + 1))
  fi
  for spec in $1; do
    IFS=: read -r g q <<<"$spec"
    printf '%s\n' "accounting_group = group_$g" "accounting_group_user = u$g" "queue $3" >> "$sub"
    nsub=$((nsub + 1))
  done
  $T tool condor_submit groups.sub >/dev/null
}

# first_cycle_match_lines NSUB: waits (up to 120 s) for a negotiation cycle that included NSUB
# submitters and finished, then prints that cycle's matches one a line in the order the
# negotiator made them, as `MATCH <job> <submitter> <slot>`.
first_cycle_match_lines() {
  local n=$1 log="$ROOT/srv/ref/pool/log/NegotiatorLog"
  for _ in $(seq 1 120); do
    if awk '/Started Negotiation Cycle/{c++; seen=0} /include '"$n"' submitter/{seen=1} /Finished Negotiation Cycle/{if (seen) ok=1} END{exit !ok}' "$log" 2>/dev/null; then
      break
    fi
    sleep 1
  done
  awk '/Started Negotiation Cycle/{c++} /include '"$n"' submitter/{if (!want) want=c} c==want && want && /Matched/{print "MATCH", $4, $5, $NF}' "$log"
}

# first_cycle_matches NSUB: the same cycle's matches per submitter, as
# `MATCHES <submitter> <count>`.
first_cycle_matches() {
  first_cycle_match_lines "$1" | awk '{print $3}' | sort | uniq -c | awk '{print "MATCHES", $2, $1}'
}

# first_cycle_match_lines_and_counts NSUB: both, the lines first.
first_cycle_match_lines_and_counts() {
  local lines
  lines=$(first_cycle_match_lines "$1")
  printf '%s\n' "$lines"
  printf '%s\n' "$lines" | awk '{print $3}' | sort | uniq -c | awk '{print "MATCHES", $2, $1}'
}

# pslot_ad NODE CPUS MEMORY [LINES]: an unclaimed partitionable slot slot1@NODE without a
# consumption policy: CPUS cores, MEMORY MB and, as Requirements, the startd's
# WithinResourceLimits (Reqexp.cpp's form without one), then LINES.
pslot_ad() {
  slot_ad "$1" "PartitionableSlot = true
SlotType = \"Partitionable\"
Cpus = $2
Memory = $3
TotalSlotCpus = $2
TotalSlotMemory = $3
Start = true
WithinResourceLimits = (MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 && TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk)
Requirements = START && (WithinResourceLimits)${4:+
$4}"
}

# cp_pslot_ad NODE CPUS MEMORY STEP: the same slot shaped as a 23.9.6 startd with
# CONSUMPTION_POLICY = True advertises it (MachineResources, ConsumptionCpus/Memory/Disk, the
# consumption-policy form of WithinResourceLimits), its memory consumed in steps of STEP MB (the
# startd's default is 128).
cp_pslot_ad() {
  pslot_ad "$1" "$2" "$3" "MachineResources = \"Cpus Memory Disk Swap\"
ConsumptionCpus = quantize(target.RequestCpus,{ 1 })
ConsumptionMemory = quantize(target.RequestMemory,{ $4 })
ConsumptionDisk = quantize(target.RequestDisk,{ 1024 })
WithinResourceLimits = (ifThenElse(TARGET._cp_orig_RequestCpus =!= undefined,TARGET.RequestCpus <= MY.Cpus,MY.ConsumptionCpus <= MY.Cpus) && ifThenElse(TARGET._cp_orig_RequestDisk =!= undefined,TARGET.RequestDisk <= MY.Disk,MY.ConsumptionDisk <= MY.Disk) && ifThenElse(TARGET._cp_orig_RequestMemory =!= undefined,TARGET.RequestMemory <= MY.Memory,MY.ConsumptionMemory <= MY.Memory))"
}

# submit_user USER PRIO MEMORY COUNT [LINES]: gives USER@ref.test factor 1 and real priority
# PRIO, then submits COUNT jobs of 1 cpu, MEMORY MB and 1 KB of disk charged to it
# (accounting_group_user), LINES added to the submit file.
submit_user() {
  $T tool condor_userprio -setfactor "$1@ref.test" 1 >/dev/null
  $T tool condor_userprio -setprio "$1@ref.test" "$2" >/dev/null
  {
    echo "executable = /bin/true"
    echo "accounting_group_user = $1"
    echo "request_cpus = 1"
    echo "request_memory = $3"
    echo "request_disk = 1"
    [ -n "${5:-}" ] && printf '%s\n' "$5"
    echo "queue $4"
  } > "$ROOT/home/ref/$1.sub"
  $T tool condor_submit "$1.sub" >/dev/null
}
