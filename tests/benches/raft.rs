//! Raft benchmark between real CM processes on loopback (fsync on every append):
//! admin-write commit latency p50/p99 and throughput, and election time after `kill -9` of
//! the leader. Run: `cargo bench -p aerie-tests --bench raft [-- WRITES KILLS]`.
use aerie_tests::*;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn seq_writes(addr: &str, n: usize, tag: &str) -> (Vec<f64>, Duration) {
    let mut lat = Vec::with_capacity(n);
    let t0 = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        let r = write(addr, &set_limit(&format!("{tag}{}", i % 50), i as f64))
            .await
            .expect("write");
        assert!(r.ok, "{}", r.error);
        lat.push(ms(t.elapsed()));
    }
    (lat, t0.elapsed())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    let writes: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let kills: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let mut c = Cluster::start(
        daemon_bin(BIN),
        3,
        &[("AERIE_ELECTION_TIMEOUT", PRODUCTION_ELECTION_TIMEOUT)],
    )
    .expect("start");
    let leader = wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let la = c.addr(leader);
    let follower = c
        .ids()
        .into_iter()
        .find(|i| *i != leader)
        .expect("follower");
    let fa = c.addr(follower);
    // Warm up connections.
    seq_writes(&la, 20, "warm").await;

    let (mut lat, took) = seq_writes(&la, writes, "seq").await;
    println!(
        "| sequential admin writes to the leader | {writes} | p50 {:.2} ms | p99 {:.2} ms | max {:.2} ms | {:.0} writes/s |",
        pct(&mut lat, 0.5), pct(&mut lat, 0.99), pct(&mut lat, 1.0), writes as f64 / took.as_secs_f64()
    );
    let (mut lat, took) = seq_writes(&fa, writes / 2, "fwd").await;
    println!(
        "| sequential admin writes via a follower (forwarded) | {} | p50 {:.2} ms | p99 {:.2} ms | max {:.2} ms | {:.0} writes/s |",
        writes / 2, pct(&mut lat, 0.5), pct(&mut lat, 0.99), pct(&mut lat, 1.0), (writes / 2) as f64 / took.as_secs_f64()
    );
    // 16 concurrent clients.
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..16 {
        let la = la.clone();
        let n = writes / 16;
        tasks.push(tokio::spawn(async move {
            seq_writes(&la, n, &format!("c{w}_")).await.0
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("join"));
    }
    let took = t0.elapsed();
    println!(
        "| 16 concurrent clients to the leader | {} | p50 {:.2} ms | p99 {:.2} ms | max {:.2} ms | {:.0} writes/s |",
        all.len(), pct(&mut all, 0.5), pct(&mut all, 0.99), pct(&mut all, 1.0), all.len() as f64 / took.as_secs_f64()
    );

    // Elections after kill -9 of the leader.
    let mut elect = Vec::new();
    let mut first_write = Vec::new();
    for k in 0..kills {
        let leader = wait_leader(&c.running(), Duration::from_secs(20))
            .await
            .expect("leader");
        c.kill(leader);
        let t0 = Instant::now();
        let survivors = c.running();
        let nl = wait_leader(&survivors, Duration::from_secs(20))
            .await
            .expect("new leader");
        let e = t0.elapsed();
        let addrs: Vec<String> = survivors.iter().map(|(_, a)| a.clone()).collect();
        write_retry(
            &addrs,
            &set_limit("after_kill", k as f64),
            Duration::from_secs(20),
        )
        .await
        .expect("write");
        let w = t0.elapsed();
        elect.push(ms(e));
        first_write.push(ms(w));
        eprintln!("kill {k}: node {leader} killed, node {nl} leader after {:.0} ms, first write after {:.0} ms", ms(e), ms(w));
        c.restart(leader).expect("restart");
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    println!(
        "| election after kill -9 of the leader | {kills} kills | median {:.0} ms | max {:.0} ms | first acknowledged write: median {:.0} ms, max {:.0} ms |",
        pct(&mut elect.clone(), 0.5), pct(&mut elect, 1.0), pct(&mut first_write.clone(), 0.5), pct(&mut first_write, 1.0)
    );
}
