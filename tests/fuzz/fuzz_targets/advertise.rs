//! Any bytes advertised to a collector as an ad (Collector.Advertise / AdvertiseStream).
#![no_main]
use aerie_cm::collector::{AdTable, CollectorParams};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut t = AdTable::new(CollectorParams::default());
    let _ = t.advertise_text(&text, 1_700_000_000);
    let _ = t.expire(1_700_100_000);
});
