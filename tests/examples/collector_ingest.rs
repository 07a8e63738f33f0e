//! Collector ingest and memory, in process: how many slot-ad updates per second one CM's ad
//! table takes (new ads, changed ads, unchanged refreshes) and how many bytes each stored slot
//! ad costs. A counting allocator measures the bytes exactly, so the figure does not depend on
//! what else the machine runs.
//!
//! Run: `cargo run --release -p aerie-tests --example collector_ingest [-- ADS]` (default 100000).
use aerie_cm::collector::{AdTable, CollectorParams};
use aerie_tests::synthetic::slot_ad;
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
