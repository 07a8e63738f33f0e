//! Synthetic slot ads for benchmarks and load tests (`collector_ingest`, the gRPC ingest
//! bench): the same ad text wherever ingest is measured, so figures compare.

/// A static slot ad as a 23.9 startd sends it, trimmed to the ~45 attributes that matter for
/// matching and `condor_status` (a real one has ~120, many of them the same every update).
/// `gen` changes the attributes a startd changes between updates (load, idle time, state).
pub fn slot_ad(i: usize, gen: usize) -> String {
    let host = format!("node{:05}.cluster.example.org", i / 8);
    let ip = format!("10.1.{}.{}", i / 8 / 250 % 250, i / 8 % 250);
    let busy = (i + gen).is_multiple_of(3);
    format!(
        r#"MyType = "Machine"
TargetType = "Job"
Name = "slot{slot}@{host}"
Machine = "{host}"
SlotID = {slot}
SlotType = "Static"
Arch = "X86_64"
OpSys = "LINUX"
OpSysAndVer = "AlmaLinux9"
OpSysMajorVer = 9
UidDomain = "cluster.example.org"
FileSystemDomain = "cluster.example.org"
Cpus = {cpus}
Memory = {mem}
Disk = {disk}
TotalCpus = 32.0
TotalMemory = 128000
TotalSlots = 8
DetectedCpus = 32
DetectedMemory = 128000
State = "{state}"
Activity = "{activity}"
EnteredCurrentState = {entered}
EnteredCurrentActivity = {entered}
LoadAvg = {load:.6}
CondorLoadAvg = {load:.6}
TotalLoadAvg = 3.450000
KeyboardIdle = {idle}
ConsoleIdle = {idle}
Mips = 45123
KFlops = 2345678
HasFileTransfer = true
HasDocker = {docker}
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
"#,
        slot = i % 8 + 1,
        cpus = 1 + i % 4,
        mem = 2048 * (1 + i % 4),
        disk = 20_000_000 + i * 37,
        state = if busy { "Claimed" } else { "Unclaimed" },
        activity = if busy { "Busy" } else { "Idle" },
        entered = 1_700_000_000 + gen * 300,
        load = ((i + gen) % 100) as f64 / 100.0,
        idle = 3600 + gen * 300,
        docker = i.is_multiple_of(2),
    )
}
