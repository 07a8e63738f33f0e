#!/usr/bin/env bash
# condor_status against one CM at pool scale: fills a lone release CM with SLOTS synthetic slot
# ads (the text of tests/src/synthetic.rs `slot_ad`, generation 0, written here by Python so
# no Rust example has to be built) through `cmctl advertise`, then times the admin's queries
# with `cmctl status` (client wall time, median of RUNS): -total, -af Name, -long, and a
# constraint matching half of the slots (HasDocker, true on every even slot), printed with
# -af Name, as the anchor's (condor_status 23.9.6 at 50,000 slots: a constraint matching
# 25,000). -long and -af are rendered on the CM (Collector.QueryText) and only written out
# by cmctl; OLD_CMCTL may be a cmctl that parses the ads itself (QueryStream).
#
#   usage: tests/examples/status_bench.sh [SLOTS [RUNS]]      (defaults 50000 and 5)
#   env:   BIN=target/release (aerie-cm and cmctl); OLD_CMCTL=path of another cmctl to time
#          beside (e.g. main's, for a before/after row); PORT (default 7191)
#
# Mutual TLS as in production: the pool's credentials are made in the work directory (cm1 and
# admin) unless AERIE_CREDENTIALS or AERIE_INSECURE=1 (plaintext, for an A/B only) is set.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BIN:-$here/target/release}
slots=${1:-50000}
runs=${2:-5}
port=${PORT:-7191}
work=$(mktemp -d /tmp/aerie-status-bench.XXXXXX)
cm_pid=
cleanup() {
  [ -n "$cm_pid" ] && kill "$cm_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${AERIE_CREDENTIALS:-}" ] && [ "${AERIE_INSECURE:-}" != 1 ]; then
  "$bin/aerie-cm" security init "$work/credentials" --cms 1 >/dev/null
  export AERIE_CREDENTIALS=$work/credentials
fi

"$bin/aerie-cm" serve --id 1 --listen "127.0.0.1:$port" --bootstrap --peers "1=127.0.0.1:$port" \
  --data-dir "$work/cm" >"$work/cm.log" 2>&1 &
cm_pid=$!
export AERIE_CMS=127.0.0.1:$port
for _ in $(seq 50); do
  "$bin/cmctl" status -af Name >/dev/null 2>&1 && break
  sleep 0.2
done

python3 - "$slots" >"$work/ads" <<'PY'
import sys
n = int(sys.argv[1]); gen = 0
for i in range(n):
    host = "node%05d.cluster.example.org" % (i // 8)
    ip = "10.1.%d.%d" % (i // 8 // 250 % 250, i // 8 % 250)
    busy = (i + gen) % 3 == 0
    entered = 1_700_000_000 + gen * 300
    load = "%.6f" % (((i + gen) % 100) / 100.0)
    idle = 3600 + gen * 300
    print(f'''MyType = "Machine"
TargetType = "Job"
Name = "slot{i % 8 + 1}@{host}"
Machine = "{host}"
SlotID = {i % 8 + 1}
SlotType = "Static"
Arch = "X86_64"
OpSys = "LINUX"
OpSysAndVer = "AlmaLinux9"
OpSysMajorVer = 9
UidDomain = "cluster.example.org"
FileSystemDomain = "cluster.example.org"
Cpus = {1 + i % 4}
Memory = {2048 * (1 + i % 4)}
Disk = {20_000_000 + i * 37}
TotalCpus = 32.0
TotalMemory = 128000
TotalSlots = 8
DetectedCpus = 32
DetectedMemory = 128000
State = "{"Claimed" if busy else "Unclaimed"}"
Activity = "{"Busy" if busy else "Idle"}"
EnteredCurrentState = {entered}
EnteredCurrentActivity = {entered}
LoadAvg = {load}
CondorLoadAvg = {load}
TotalLoadAvg = 3.450000
KeyboardIdle = {idle}
ConsoleIdle = {idle}
Mips = 45123
KFlops = 2345678
HasFileTransfer = true
HasDocker = {"true" if i % 2 == 0 else "false"}
HasSingularity = true
CondorVersion = "$CondorVersion: 23.9.6 2024-08-08 BuildID: 745139 PackageID: 23.9.6-1 $"
CondorPlatform = "$CondorPlatform: X86_64-AlmaLinux_9.4 $"
MyAddress = "<{ip}:9618?addrs={ip}-9618&alias={host}&noUDP&sock=startd_1234_abcd>"
StartdIpAddr = "<{ip}:9618>"
Start = true
Requirements = START && (WithinResourceLimits)
WithinResourceLimits = (MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && TARGET.RequestMemory <= MY.Memory && TARGET.RequestDisk <= MY.Disk)
Rank = 0.0
SlotWeight = Cpus
IsWakeAble = false
UpdateSequenceNumber = {gen}
DaemonStartTime = 1700000000
ClaimId = "<{ip}:9618>#1700000000#{i}#{gen}...secret"
''')
PY
"$bin/cmctl" advertise -multiple UPDATE_STARTD_AD "$work/ads" | tail -n 1
held=$("$bin/cmctl" status -af Name | wc -l)
echo "CM holds $held slot ads; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# median CMD...: wall time of $runs runs.
source "$here/scripts/median.sh"

while IFS='|' read -r label args; do
  read -ra a <<<"$args"
  line="| $label | $(median "$bin/cmctl" status "${a[@]}") s"
  if [ -n "${OLD_CMCTL:-}" ]; then
    line="$line | $(median "$OLD_CMCTL" status "${a[@]}") s"
  fi
  echo "$line |"
done <<'CMDS'
-total|-total
-af Name|-af Name
-long|-long
constraint (HasDocker == true, 1/2 of the slots)|-af Name -constraint HasDocker==true
CMDS
