# Shared by the negotiator scenarios (sourced, not run): where the reference HTCondor chroot and
# its tool are, and the slot ads they advertise.
ROOT=${ROOT:-/var/lib/aerie-reference/htcondor-root}
T=${AERIE_SHARED_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)/shared}/tools/reference-htcondor.sh
export ROOT

# write_slots FILE N: N unclaimed one-core slots slot1@node<i>.ref.test, old syntax, blank-line
# separated, with WantClaiming = false (see the tool's header) for `$T advertise FILE`.
write_slots() {
  : > "$1"
  for i in $(seq 1 "$2"); do
    cat >> "$1" <<AD
MyType = "Machine"
Name = "slot1@node$i.ref.test"
Machine = "node$i.ref.test"
MyAddress = "<127.0.0.1:40000?sock=node$i>"
StartdIpAddr = "<127.0.0.1:40000?sock=node$i>"
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
  done
}
