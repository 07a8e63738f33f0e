//! Collector ingest and memory, in process: how many slot-ad updates per second one CM's ad
//! table takes (new ads, changed ads, unchanged refreshes) and how many bytes each stored slot
//! ad costs. A counting allocator measures the bytes exactly, so the figure does not depend on
//! what else the machine runs.
//!
//! Run: `cargo run --release -p aerie-cm --example collector_ingest [-- ADS]` (default 100000).
use aerie_cm::collector::{AdTable, CollectorParams};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A static slot ad as a 23.9 startd sends it, trimmed to the ~45 attributes that matter for
/// matching and `condor_status` (a real one has ~120, many of them the same every update).
/// `gen` changes the attributes a startd changes between updates (load, idle time, state).
fn slot_ad(i: usize, gen: usize) -> String {
    let host = format!("node{:05}.cluster.example.org", i / 8);
    let ip = format!("10.1.{}.{}", i / 8 / 250 % 250, i / 8 % 250);
    let busy = (i + gen) % 3 == 0;
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
        docker = i % 2 == 0,
    )
}

fn phase(table: &mut AdTable, ads: &[String], now: i64, label: &str) {
    let t = Instant::now();
    for a in ads {
        if let Err(e) = table.advertise_text(a, now) {
            panic!("benchmark ad refused: {e}");
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "| {label} | {} ads | {:.3} s | {:.0} updates/s |",
        ads.len(),
        s,
        ads.len() as f64 / s
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let first: Vec<String> = (0..n).map(|i| slot_ad(i, 0)).collect();
    let second: Vec<String> = (0..n).map(|i| slot_ad(i, 1)).collect();
    let text_bytes: usize = first.iter().map(|a| a.len()).sum();
    let mut table = AdTable::new(CollectorParams::default());
    let before = LIVE.load(Ordering::Relaxed);
    phase(&mut table, &first, 1_700_000_000, "new ads");
    let after = LIVE.load(Ordering::Relaxed);
    phase(&mut table, &first, 1_700_000_010, "unchanged refresh");
    phase(&mut table, &second, 1_700_000_020, "changed ads");
    let changed = LIVE.load(Ordering::Relaxed);
    assert_eq!(table.len(), n);
    println!(
        "| memory | {n} slot ads | {:.0} bytes/ad after the first load, {:.0} after a change (ad text {:.0} bytes) |",
        (after - before) as f64 / n as f64,
        (changed - before) as f64 / n as f64,
        text_bytes as f64 / n as f64
    );
}
