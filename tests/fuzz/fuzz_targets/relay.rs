//! Any bytes arriving as a relay batch from another CM (Collector.Relay).
#![no_main]
use aerie_cm::collector::relay::apply_relayed;
use aerie_cm::collector::{AdTable, CollectorParams};
use aerie_proto::collector::RelayBatch;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use std::sync::{Arc, RwLock};

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = RelayBatch::decode(data) {
        let t = Arc::new(RwLock::new(AdTable::new(CollectorParams::default())));
        let _ = apply_relayed(&t, &b.ads);
    }
});
