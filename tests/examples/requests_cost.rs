//! Where a cycle's resource requests cost time at 100,000 idle jobs: the access point's
//! grouping (`aerie_node::requests::resource_requests`) and the leader's expansion
//! (`aerie_cm::leader::requests::expand_requests`), in one process, one core. Round 0 keys
//! every job; later rounds reuse the access point's cache, as its later cycles do.
//! Run: `cargo run --release -p aerie-tests --example requests_cost [-- JOBS SUBMITTERS CLUSTER]`.
use aerie_node::access_point::AccessPoint;
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (jobs, subs, cluster) = (
        args.first().copied().unwrap_or(100_000),
        args.get(1).copied().unwrap_or(100),
        args.get(2).copied().unwrap_or(100),
    );
    let users: Vec<String> = (1..=subs).map(|i| format!("u{i}")).collect();
    let mut ap =
        AccessPoint::new(&users, &[], "pool.example", vec![], 1).with_cluster_size(cluster as u64);
    for _ in 0..jobs {
        ap.add_job(1_700_000_000);
    }
    let cfg = aerie_core::negotiator::NegotiatorConfig::default();
    let slot = classad::parse_ad(
        "Requirements = TARGET.RequestMemory <= MY.Memory\nRank = 0\nMemory = 4096\nCpus = 1",
    )
    .unwrap();
    let significant = aerie_core::negotiator::requests::significant_names(&cfg, &[slot]);
    let mut cache = aerie_core::negotiator::requests::RequestCache::default();
    for round in 0..3 {
        let t = Instant::now();
        let ads = ap.idle_job_classads();
        let built = t.elapsed();
        let idle: Vec<&classad::ClassAd> = ads.iter().map(|a| &**a).collect();
        let t = Instant::now();
        let reqs = aerie_node::requests::resource_requests(&mut cache, &idle, &significant);
        let grouped = t.elapsed();
        let t = Instant::now();
        let (expanded, _, _) = aerie_cm::leader::requests::expand_requests("ap", &reqs);
        let expand = t.elapsed();
        println!(
            "round {round}: {} jobs -> {} requests | build ads {:.0} ms | group {:.0} ms | leader expand {:.0} ms ({} ads)",
            idle.len(),
            reqs.len(),
            built.as_secs_f64() * 1e3,
            grouped.as_secs_f64() * 1e3,
            expand.as_secs_f64() * 1e3,
            expanded.len()
        );
    }
}
