//! Synthetic but realistic ads for the benchmarks: a startd slot ad as `condor_status -long`
//! prints it and a typical job ad, plus a dump of many slots.

/// One slot ad in old syntax (about 90 attributes, like a real partitionable/static slot).
pub fn slot_ad(i: usize) -> String {
    let host = format!("node{:05}.cluster.example.org", i / 8);
    let slot = i % 8 + 1;
    let mut s = String::new();
    let mut kv = |k: &str, v: String| {
        s.push_str(k);
        s.push_str(" = ");
        s.push_str(&v);
        s.push('\n');
    };
    kv("MyType", "\"Machine\"".into());
    kv("TargetType", "\"Job\"".into());
    kv("Name", format!("\"slot{}@{}\"", slot, host));
    kv("Machine", format!("\"{}\"", host));
    kv("SlotID", slot.to_string());
    kv("Arch", "\"X86_64\"".into());
    kv("OpSys", "\"LINUX\"".into());
    kv("OpSysAndVer", "\"AlmaLinux9\"".into());
    kv("OpSysMajorVer", "9".into());
    kv("UidDomain", "\"cluster.example.org\"".into());
    kv("FileSystemDomain", "\"cluster.example.org\"".into());
    kv("Cpus", (1 + i % 4).to_string());
    kv("Memory", (2048 * (1 + i % 4)).to_string());
    kv("Disk", (20_000_000 + i * 37).to_string());
    kv("VirtualMemory", (4_096_000 + i).to_string());
    kv("TotalCpus", "32.0".into());
    kv("TotalMemory", "128000".into());
    kv("TotalSlots", "8".into());
    kv("TotalSlotCpus", (1 + i % 4).to_string());
    kv("TotalSlotMemory", (2048 * (1 + i % 4)).to_string());
    kv("DetectedCpus", "32".into());
    kv("DetectedMemory", "128000".into());
    kv(
        "State",
        if i.is_multiple_of(3) {
            "\"Claimed\"".into()
        } else {
            "\"Unclaimed\"".into()
        },
    );
    kv(
        "Activity",
        if i.is_multiple_of(3) {
            "\"Busy\"".into()
        } else {
            "\"Idle\"".into()
        },
    );
    kv(
        "EnteredCurrentState",
        (1_700_000_000 + i as i64).to_string(),
    );
    kv(
        "EnteredCurrentActivity",
        (1_700_000_000 + i as i64).to_string(),
    );
    kv("LoadAvg", format!("{:.6}", (i % 100) as f64 / 100.0));
    kv("CondorLoadAvg", format!("{:.6}", (i % 50) as f64 / 100.0));
    kv("TotalLoadAvg", "3.450000".into());
    kv("KeyboardIdle", (3600 + i).to_string());
    kv("ConsoleIdle", (3600 + i).to_string());
    kv("Mips", "45123".into());
    kv("KFlops", "2345678".into());
    kv("HasFileTransfer", "true".into());
    kv("HasPerFileEncryption", "true".into());
    kv("HasJobDeferral", "true".into());
    kv("HasVM", "false".into());
    kv(
        "HasDocker",
        if i.is_multiple_of(2) {
            "true".into()
        } else {
            "false".into()
        },
    );
    kv("HasSingularity", "true".into());
    kv("HasEncryptExecuteDirectory", "true".into());
    kv(
        "StarterAbilityList",
        "\"HasFileTransfer,HasJobDeferral,HasDocker,HasSingularity\"".into(),
    );
    kv(
        "CondorVersion",
        "\"$CondorVersion: 23.9.6 2024-08-08 BuildID: 745139 PackageID: 23.9.6-1 $\"".into(),
    );
    kv(
        "CondorPlatform",
        "\"$CondorPlatform: X86_64-AlmaLinux_9.4 $\"".into(),
    );
    kv(
        "MyAddress",
        format!(
            "\"<10.1.{}.{}:9618?addrs=10.1.{}.{}-9618&alias={}&noUDP&sock=startd_1234_abcd>\"",
            i / 250 % 250,
            i % 250,
            i / 250 % 250,
            i % 250,
            host
        ),
    );
    kv(
        "StartdIpAddr",
        format!("\"<10.1.{}.{}:9618>\"", i / 250 % 250, i % 250),
    );
    kv(
        "PublicClaimId",
        format!(
            "\"<10.1.{}.{}:9618>#1700000000#{}#...\"",
            i / 250 % 250,
            i % 250,
            i
        ),
    );
    kv("Start", "true".into());
    kv("Requirements", "START && (WithinResourceLimits)".into());
    kv(
        "WithinResourceLimits",
        "(MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && TARGET.RequestMemory <= MY.Memory && TARGET.RequestDisk <= MY.Disk)"
            .into(),
    );
    kv("Rank", "0.0".into());
    kv("CurrentRank", "0.0".into());
    kv("IsOwner", "false".into());
    kv("Cpu_Busy", "((LoadAvg - CondorLoadAvg) >= 0.5)".into());
    kv("CpuBusyTime", "0".into());
    kv("MachineResources", "\"Cpus Memory Disk Swap GPUs\"".into());
    kv(
        "GPUs",
        if i.is_multiple_of(10) {
            "2".into()
        } else {
            "0".into()
        },
    );
    kv("CUDACapability", "8.0".into());
    kv("PartitionableSlot", "false".into());
    kv("DynamicSlot", "false".into());
    kv("SlotType", "\"Static\"".into());
    kv("SlotWeight", "Cpus".into());
    kv("MaxJobRetirementTime", "0".into());
    kv("JobPreemptions", "0".into());
    kv("NumPids", "0".into());
    kv(
        "Unhibernate",
        "MY.MachineLastMatchTime =!= undefined".into(),
    );
    kv("DaemonStartTime", "1699990000".into());
    kv("LastHeardFrom", (1_700_000_100 + i as i64).to_string());
    kv("UpdateSequenceNumber", (i % 1000).to_string());
    kv("UpdatesTotal", "1234".into());
    kv("UpdatesLost", "0".into());
    kv("ExpectedMachineGracefulDrainingBadput", "0".into());
    kv("ExpectedMachineQuickDrainingBadput", "0".into());
    kv("RecentDaemonCoreDutyCycle", "0.01234".into());
    kv("TotalJobRunTime", (i * 3).to_string());
    kv("TotalClaimRunTime", (i * 3).to_string());
    kv("ClockDay", "3".into());
    kv("ClockMin", "720".into());
    kv("AcceptedWhileDraining", "false".into());
    kv(
        "AddressV1",
        format!(
            "\"{{[ p=\\\"primary\\\"; a=\\\"10.1.{}.{}\\\"; port=9618; n=\\\"Internet\\\"; ]}}\"",
            i / 250 % 250,
            i % 250
        ),
    );
    kv("Rank_Sort", "-Cpus".into());
    kv("ConcurrencyLimits", "undefined".into());
    kv("NetworkSpeed", "10000".into());
    kv("Subnet", "\"10.1\"".into());
    kv(
        "AuthenticatedIdentity",
        "\"condor@cluster.example.org\"".into(),
    );
    kv("AuthenticationMethod", "\"FS\"".into());
    kv("CanHibernate", "false".into());
    kv("HibernationLevel", "0".into());
    kv("HibernationState", "\"NONE\"".into());
    kv("IsWakeAble", "false".into());
    s
}

/// A condor_status -long style dump of `n` slot ads (blank line between ads).
pub fn status_dump(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&slot_ad(i));
        s.push('\n');
    }
    s
}

/// A typical job ad (as condor_q -long prints), whose Requirements match `slot_ad`.
pub fn job_ad() -> String {
    let mut s = String::new();
    for (k, v) in [
        ("MyType", "\"Job\""),
        ("TargetType", "\"Machine\""),
        ("ClusterId", "12345"),
        ("ProcId", "0"),
        ("Owner", "\"alice\""),
        ("User", "\"alice@cluster.example.org\""),
        ("AcctGroup", "\"group_physics\""),
        ("JobUniverse", "5"),
        ("JobStatus", "1"),
        ("QDate", "1700000000"),
        ("Cmd", "\"/home/alice/sim.sh\""),
        ("Arguments", "\"--seed 42\""),
        ("RequestCpus", "1"),
        ("RequestMemory", "2048"),
        ("RequestDisk", "1000000"),
        ("ImageSize", "100000"),
        ("DiskUsage", "100000"),
        ("JobPrio", "0"),
        ("NumCkpts", "0"),
        ("WantRemoteSyscalls", "false"),
        ("WantCheckpoint", "false"),
        ("ShouldTransferFiles", "\"YES\""),
        ("WhenToTransferOutput", "\"ON_EXIT\""),
        (
            "Requirements",
            "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) && (TARGET.HasFileTransfer)",
        ),
        ("Rank", "TARGET.Mips + 0.0"),
        ("PeriodicHold", "false"),
        ("PeriodicRelease", "false"),
        ("PeriodicRemove", "false"),
        ("OnExitRemove", "true"),
        ("LeaveJobInQueue", "false"),
    ] {
        s.push_str(k);
        s.push_str(" = ");
        s.push_str(v);
        s.push('\n');
    }
    s
}

/// One idle job ad as `condor_q -long` prints it (about 45 attributes), differing from job to
/// job in its ids, times, owner, request, files and requirements, as a queue of many users'
/// clusters does.
pub fn queue_job_ad(j: usize, submitters: usize) -> String {
    let u = j % submitters;
    let cluster = 1000 + j / 100;
    let proc = j % 100;
    let kind = (j / submitters) % 6;
    let qdate = 1_700_000_000 + j as i64;
    let mem = [1024, 2048, 4096][kind % 3];
    let req = if kind < 3 {
        "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)"
    } else {
        "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Memory >= RequestMemory) && (TARGET.KFlops >= 1000000)"
    };
    format!(
        r#"MyType = "Job"
TargetType = "Machine"
ClusterId = {cluster}
ProcId = {proc}
GlobalJobId = "submit.example.org#{cluster}.{proc}#{qdate}"
Owner = "user{u}"
User = "user{u}@example.org"
AcctGroup = "group_{g}"
AccountingGroup = "group_{g}.user{u}"
JobUniverse = 5
JobStatus = 1
QDate = {qdate}
EnteredCurrentStatus = {qdate}
JobPrio = {prio}
RequestCpus = {cpus}
RequestMemory = {mem}
RequestDisk = {disk}
ImageSize = {image}
ImageSize_RAW = {image}
DiskUsage = {disk}
DiskUsage_RAW = {disk}
MemoryUsage = ((ResidentSetSize + 1023) / 1024)
Cmd = "/home/user{u}/analysis/run_{kind}.sh"
Arguments = "--seed {j} --events 10000 --out result_{proc}.root"
Iwd = "/home/user{u}/analysis/{cluster}"
Out = "out.{cluster}.{proc}"
Err = "err.{cluster}.{proc}"
UserLog = "/home/user{u}/analysis/{cluster}/job.log"
Environment = "OMP_NUM_THREADS={cpus} RUN={j}"
TransferInput = "input_{kind}.tar.gz,config.json"
Requirements = {req}
Rank = {rank}
ShouldTransferFiles = "YES"
WhenToTransferOutput = "ON_EXIT"
NumJobStarts = 0
NumRestarts = 0
NumCkpts = 0
LeaveJobInQueue = false
OnExitRemove = true
OnExitHold = false
PeriodicHold = (JobStatus == 2) && (time() - EnteredCurrentStatus > 86400)
PeriodicRelease = false
PeriodicRemove = false
WantRemoteIO = true
CumulativeSlotTime = 0.0
CommittedTime = 0
JobLeaseDuration = 2400
CondorVersion = "$CondorVersion: 23.9.6 2024-08-08 BuildID: 745139 PackageID: 23.9.6-1 $"
"#,
        g = u % 5,
        prio = (j % 3) as i64 - 1,
        cpus = 1 + kind % 2,
        disk = 100_000 + (j % 977) * 13,
        image = 50_000 + (j % 1499) * 7,
        rank = if kind.is_multiple_of(2) {
            "TARGET.KFlops"
        } else {
            "0"
        },
    )
}

/// A condor_q -long style dump of `n` idle jobs of `submitters` users (blank line between ads).
pub fn queue_dump(n: usize, submitters: usize) -> String {
    let mut s = String::new();
    for j in 0..n {
        s.push_str(&queue_job_ad(j, submitters));
        s.push('\n');
    }
    s
}

/// One cheap call of each family of built-in functions (types, lists, strings, versions, math,
/// time, conversion, meta, string lists, HTCondor's extras). The regex family is left out: its
/// per-call pattern compile would hide the dispatch cost this measures.
pub const FUNCTION_CALLS: &[&str] = &[
    "isUndefined(x)",
    "isString(\"a\")",
    "member(3, {1, 2, 3})",
    "size({1, 2, 3})",
    "sum({1, 2, 3})",
    "max({1, 2.5, 2})",
    "strcat(\"a\", 1, \"b\")",
    "substr(\"hello\", 1, 3)",
    "toUpper(\"abc\")",
    "strcmp(\"a\", \"b\")",
    "versionGE(\"23.9.6\", \"23.10.0\")",
    "floor(2.5)",
    "round(2.5)",
    "pow(2, 10)",
    "quantize(7, 4)",
    "getYear(absTime(0))",
    "interval(3600)",
    "int(\"42\")",
    "real(\"1.5\")",
    "string(7)",
    "bool(\"true\")",
    "ifThenElse(true, 1, 2)",
    "eval(\"1 + 2\")",
    "debug(1)",
    "stringListMember(\"b\", \"a,b,c\")",
    "stringListSum(\"1,2,3\")",
    "splitUserName(\"alice@example.org\")",
    "split(\"a b c\")",
];
