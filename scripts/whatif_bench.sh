#!/usr/bin/env bash
# `cmctl what-if` end to end on the anchor pools of DESIGN.md's performance table: writes a
# `condor_status -long` dump and a `condor_q -long` dump of the pool (by Python, so no Rust
# example has to be built), then times `cmctl what-if` on them (wall time, median of RUNS, output
# discarded) and prints the command's own split (`--timings`: reading the dumps, the cycle).
#
# The pool is negotiator_scale's (core/examples/negotiator_scale.rs), written out as the
# HTCondor tools print it: machines of 8 static 1-core slots of four kinds (Memory, KFlops);
# each submitter has 6 kinds of idle job (request memory x requirements, Rank = TARGET.KFlops
# on half), about 6 x submitters autoclusters. Slot ads carry the attributes a 23.9.6 startd
# and the collector add (about 50, 1.2 KB); job ads those condor_q -long prints for an idle
# vanilla job (about 40, 0.6 KB). 10k x 50k x 50 is 39 MB of dumps.
#
#   usage: scripts/whatif_bench.sh [SLOTS JOBS SUBMITTERS [RUNS]]   (one pool; RUNS default 3)
#          scripts/whatif_bench.sh anchors [RUNS]                    (the three anchor pools)
#   env:   HETERO=1: every slot advertises its own Disk, KFlops, Mips, LoadAvg and KeyboardIdle,
#          as real startds do (negotiator_scale's --heterogeneous distributions; machine types and
#          the KFlops band stay), so slots no longer collapse into a few classes;
#          BIN=target/release (cmctl); OLD_CMCTL=path of another cmctl to time beside (and whose
#          output must be byte-identical); KEEP=DIR keeps the dumps there (default: a temporary
#          directory, removed at exit; dumps already in DIR are reused).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/target/release}
work=${KEEP:-$(mktemp -d /tmp/aerie-whatif-bench.XXXXXX)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# gen SLOTS JOBS SUBMITTERS DIR: writes DIR/slots.txt and DIR/jobs.txt unless present.
gen() {
  [ -s "$4/slots.txt" ] && [ -s "$4/jobs.txt" ] && return 0
  mkdir -p "$4"
  HETERO=${HETERO:-} python3 - "$@" <<'PY'
import os, random, sys
n_slots, n_jobs, n_subs, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
hetero = os.environ.get("HETERO") == "1"
rng = random.Random(1)
now = 1_700_100_000
with open(f"{out}/slots.txt", "w") as f:
    for i in range(n_slots):
        m = i // 8; kind = m % 4; sid = i % 8 + 1
        host = f"node{m:05d}.example.org"
        ip = f"10.{m // 62500 % 250}.{m // 250 % 250}.{m % 250}"
        mem = [2048, 4096, 2048, 8192][kind]
        kflops = [900_000, 1_100_000, 1_300_000, 1_500_000][kind]
        disk, mips, load, kbd = 10_000_000, 45123, 0.0, 3600
        if hetero:
            disk = 5_000_000 + rng.randrange(10_000_000)
            kflops = kflops - 50_000 + rng.randrange(100_000)
            mips = 20_000 + rng.randrange(20_000)
            load = rng.randrange(1000) / 1000
            kbd = rng.randrange(1_000_000)
        f.write(f'''MyType = "Machine"
TargetType = "Job"
Name = "slot{sid}@{host}"
Machine = "{host}"
SlotID = {sid}
SlotType = "Static"
Arch = "X86_64"
OpSys = "LINUX"
OpSysAndVer = "AlmaLinux9"
OpSysMajorVer = 9
UidDomain = "example.org"
FileSystemDomain = "example.org"
Cpus = 1
Memory = {mem}
Disk = {disk}
TotalCpus = 8.0
TotalMemory = {mem * 8}
TotalSlots = 8
KFlops = {kflops}
Mips = {mips}
LoadAvg = {load}
KeyboardIdle = {kbd}
HasFileTransfer = true
HasJobDeferral = true
HasSingularity = true
TotalJobRuntime = 0
State = "Unclaimed"
Activity = "Idle"
EnteredCurrentState = {now - 3600}
EnteredCurrentActivity = {now - 3600}
Start = true
Requirements = START && (TARGET.RequestMemory <= MY.Memory)
Rank = 0
CurrentRank = 0.0
SlotWeight = Cpus
IsOwner = false
MachineResources = "Cpus Memory Disk Swap"
CondorVersion = "$CondorVersion: 23.9.6 2024-08-08 BuildID: 745139 PackageID: 23.9.6-1 $"
CondorPlatform = "$CondorPlatform: X86_64-AlmaLinux_9.4 $"
MyAddress = "<{ip}:9618?addrs={ip}-9618&alias={host}&noUDP&sock=startd_1234_abcd>"
StartdIpAddr = "<{ip}:9618>"
PublicClaimId = "<{ip}:9618>#1700000000#{i}#..."
DaemonStartTime = 1700000000
LastHeardFrom = {now - 60}
UpdateSequenceNumber = 12
AuthenticatedIdentity = "condor@example.org"

''')
with open(f"{out}/jobs.txt", "w") as f:
    for j in range(n_jobs):
        s = j % n_subs; kind = (j // n_subs) % 6; cluster = 1000 + j // 100; proc = j % 100
        if kind < 3:
            req = ('(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Memory >= RequestMemory) '
                   '&& (TARGET.Disk >= RequestDisk) && TARGET.HasFileTransfer')
        else:
            req = '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Memory >= RequestMemory) && (TARGET.KFlops >= 1000000)'
        f.write(f'''MyType = "Job"
TargetType = "Machine"
ClusterId = {cluster}
ProcId = {proc}
Owner = "u{s}"
User = "u{s}@example.org"
JobUniverse = 5
JobStatus = 1
QDate = {1_700_000_000 + j}
JobPrio = 0
RequestCpus = 1
RequestMemory = {[1024, 2048, 4096][kind % 3]}
RequestDisk = 100000
ImageSize = 50000
Cmd = "/home/u{s}/run_{kind}.sh"
Iwd = "/home/u{s}/work/{cluster}"
Requirements = {req}
Rank = {"TARGET.KFlops" if kind % 2 == 0 else "0"}
ShouldTransferFiles = "YES"
WhenToTransferOutput = "ON_EXIT"
OnExitRemove = true

''')
PY
}

# median CMD...: wall time of $runs runs.
source "$here/scripts/median.sh"

# pool SLOTS JOBS SUBMITTERS: one table row.
pool() {
  local d="$work/$1x$2x$3${HETERO:+-hetero}"
  gen "$1" "$2" "$3" "$d"
  local a=(what-if --slots "$d/slots.txt" --jobs "$d/jobs.txt")
  local mb
  mb=$(du -cm "$d/slots.txt" "$d/jobs.txt" | tail -n 1 | cut -f1)
  # One run for the split (stderr) and the output check.
  local split
  split=$("$bin/cmctl" "${a[@]}" --timings 2>&1 >"$d/out.new" | tr '\n' ' ')
  local line="| $1 x $2 x $3${HETERO:+ heterogeneous} | $mb MB | $(median "$bin/cmctl" "${a[@]}") s | $split"
  if [ -n "${OLD_CMCTL:-}" ]; then
    "$OLD_CMCTL" "${a[@]}" >"$d/out.old"
    cmp -s "$d/out.old" "$d/out.new" && same=identical || same=DIFFERENT
    line="$line | $(median "$OLD_CMCTL" "${a[@]}") s, output $same"
  fi
  echo "$line |"
}

echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $bin/cmctl"
if [ "${1:-}" = anchors ]; then
  runs=${2:-3}
  pool 10000 50000 50
  pool 10000 51000 500
  pool 100000 200000 100
else
  runs=${4:-3}
  pool "${1:-10000}" "${2:-50000}" "${3:-50}"
fi
