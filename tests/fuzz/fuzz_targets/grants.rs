//! Any bytes arriving at an access point as a grant batch (AccessPoint.DeliverGrants).
#![no_main]
use aerie_node::access_point::AccessPoint;
use aerie_proto::negotiation::GrantBatch;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = GrantBatch::decode(data) {
        let mut ap = AccessPoint::new(&["alice".to_string()], &[], "pool", Vec::new(), 1);
        for _ in 0..4 {
            ap.add_job(0);
        }
        for g in &b.grants {
            if let Ok(t) = ap.begin_grant(b.term, &g.job) {
                ap.confirm_grant(t.job, b.term, &g.slot, &g.claim_id, &g.startd_addr);
            }
        }
    }
});
