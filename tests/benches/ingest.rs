//! Collector ingest between real processes: slot-ad updates per second that one CM of a
//! 3-CM cluster accepts over gRPC `AdvertiseStream` (each batch acknowledged, relay to the
//! other CMs running), and that CM's resident memory per slot ad.
//!
//! Run: `cargo bench -p aerie-tests --bench ingest [-- ADS STREAMS]` (defaults 100000 and 4).
//! The resident memory is read once every CM holds every ad and a second has passed: the
//! steady state, not the relay's backlog.
//! Use a release daemon for figures: `AERIE_CM_BIN=target/release/aerie-cm-node`; what mutual TLS
//! costs: the same with `AERIE_INSECURE=1` (plaintext everywhere).
use aerie_proto::collector::{self as pb, collector_client::CollectorClient};
use aerie_tests::synthetic::slot_ad;
use aerie_tests::*;
use std::time::{Duration, Instant};
use tonic::codegen::tokio_stream;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const BATCH: usize = 500;

/// Resident set of a process, from /proc (kB there).
fn rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// Sends ads `range` with generation `gen` over one stream; returns how many were accepted.
async fn stream(addr: String, range: std::ops::Range<usize>, gen: usize) -> u64 {
    let ch = aerie_security::testing::endpoint(&addr, aerie_security::Role::Cm).connect_lazy();
    let mut c = CollectorClient::new(ch)
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20);
    let batches: Vec<pb::AdBatch> = range
        .collect::<Vec<_>>()
        .chunks(BATCH)
        .map(|ids| pb::AdBatch {
            ads: ids
                .iter()
                .map(|i| pb::Ad {
                    text: slot_ad(*i, gen),
                })
                .collect(),
        })
        .collect();
    let mut replies = c
        .advertise_stream(tokio_stream::iter(batches))
        .await
        .expect("open stream")
        .into_inner();
    let mut accepted = 0u64;
    while let Some(r) = replies.message().await.expect("summary") {
        accepted += r.accepted as u64;
    }
    accepted
}

async fn round(addr: &str, n: usize, streams: usize, gen: usize, label: &str) {
    let per = n.div_ceil(streams);
    let t = Instant::now();
    let tasks: Vec<_> = (0..streams)
        .map(|s| {
            let r = (s * per)..((s + 1) * per).min(n);
            tokio::spawn(stream(addr.to_string(), r, gen))
        })
        .collect();
    let mut accepted = 0;
    for t in tasks {
        accepted += t.await.expect("stream task");
    }
    let s = t.elapsed().as_secs_f64();
    assert_eq!(accepted as usize, n, "every ad accepted");
    println!(
        "| {label} | {n} ads, {streams} streams, batches of {BATCH} | {s:.2} s | {:.0} updates/s |",
        n as f64 / s
    );
}

/// How many Machine ads the CM at `addr` holds, counted on the CM.
async fn held(addr: &str) -> u64 {
    let ch = aerie_security::testing::endpoint(addr, aerie_security::Role::Cm).connect_lazy();
    let reply = CollectorClient::new(ch)
        .totals(pb::TotalsRequest {
            ad_type: "Machine".into(),
            ..Default::default()
        })
        .await;
    reply.map_or(0, |r| r.into_inner().rows.iter().map(|r| r.count).sum())
}

/// Waits until every CM holds `n` ads (the relay queues have drained into the peers), then a
/// second more, so the resident memory read next is the steady state, not the backlog.
async fn settle(addrs: &[(u64, String)], n: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    for (_, a) in addrs {
        while held(a).await < n && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let streams: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let c = Cluster::start(daemon_bin(BIN), 3, &[]).expect("start");
    let leader = wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let target = c
        .ids()
        .into_iter()
        .find(|i| *i != leader)
        .expect("a follower");
    let addr = c.addr(target);
    let pid = c.nodes[&target]
        .child
        .as_ref()
        .map(|ch| ch.id())
        .unwrap_or(0);
    let before = rss_bytes(pid);
    round(&addr, n, streams, 0, "new ads").await;
    settle(&c.running(), n as u64).await;
    let loaded = rss_bytes(pid);
    round(&addr, n, streams, 0, "unchanged refresh").await;
    round(&addr, n, streams, 1, "changed ads").await;
    settle(&c.running(), n as u64).await;
    let after = rss_bytes(pid);
    println!(
        "| CM resident memory | {n} slot ads | {:.0} bytes/ad after the first load, {:.0} after a change |",
        loaded.saturating_sub(before) as f64 / n as f64,
        after.saturating_sub(before) as f64 / n as f64
    );
}
