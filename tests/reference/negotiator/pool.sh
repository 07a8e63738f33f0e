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
  $T pool-up
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

# first_cycle_matches NSUB: waits (up to 120 s) for a negotiation cycle that included NSUB
# submitters and finished, then prints that cycle's matches as `MATCHES <submitter> <count>`.
first_cycle_matches() {
  local n=$1 log="$ROOT/srv/ref/pool/log/NegotiatorLog"
  for _ in $(seq 1 120); do
    if awk '/Started Negotiation Cycle/{c++; seen=0} /include '"$n"' submitter/{seen=1} /Finished Negotiation Cycle/{if (seen) ok=1} END{exit !ok}' "$log" 2>/dev/null; then
      break
    fi
    sleep 1
  done
  awk '/Started Negotiation Cycle/{c++} /include '"$n"' submitter/{if (!want) want=c} c==want && want && /Matched/{print $5}' "$log" \
    | sort | uniq -c | awk '{print "MATCHES", $2, $1}'
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

# first_cycle_match_lines NSUB: like first_cycle_matches, but prints that cycle's matches one
# a line in the order the negotiator made them, as `MATCH <job> <submitter> <slot>`.
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
