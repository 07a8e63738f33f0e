//! Any bytes decoded as an admin command and applied to the replicated state; the state must
//! still encode and read back (a snapshot of it must survive a restart).
#![no_main]
use aerie_core::state::{PoolState, Request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = serde_json::from_slice::<Request>(data) {
        let mut s = PoolState::default();
        let _ = s.apply(&req);
        let bytes = serde_json::to_vec(&s).expect("the state encodes");
        let _: PoolState = serde_json::from_slice(&bytes).expect("the state reads back");
    }
});
