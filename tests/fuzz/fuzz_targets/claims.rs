//! Any bytes arriving at a startd as a claim request (Startd.RequestClaim).
#![no_main]
use aerie_node::startd::{ClaimSpec, Resources, RunningJob, Startd};
use aerie_proto::negotiation::ClaimRequest;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = ClaimRequest::decode(data) {
        let mut s = Startd::new(1, "10.0.0.1:9618", 0);
        let total = Resources {
            cpus: 8.0,
            memory: 16384.0,
            disk: 1e6,
        };
        s.add_partitionable("n1", 1, total);
        s.add_static("n1", 2, total);
        let _ = s.request_claim(ClaimSpec {
            slot: r.slot,
            claim_id: r.claim_id,
            term: r.term,
            job: RunningJob {
                job: r.job,
                submitter: r.submitter.clone(),
                user: r.submitter,
                grouped: false,
                concurrency_limits: None,
                term: r.term,
                cycle: r.cycle,
                start: 0,
            },
            carve: Resources {
                cpus: r.carve_cpus,
                memory: r.carve_memory,
                disk: r.carve_disk,
            },
        });
    }
});
