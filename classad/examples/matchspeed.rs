//! Developer tool: time symmetric matches of a typical job against a typical slot.
#[path = "../benches/data.rs"]
#[allow(dead_code)]
mod data;

fn main() {
    let slot = classad::parse_ad(&data::slot_ad(3)).expect("slot");
    let job = classad::parse_ad(&data::job_ad()).expect("job");
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let t = std::time::Instant::now();
    let mut c = 0u64;
    for _ in 0..n {
        if classad::symmetric_match(std::hint::black_box(&job), std::hint::black_box(&slot)) {
            c += 1;
        }
    }
    let dt = t.elapsed();
    println!(
        "{} matches in {:?}: {:.0} ns/match, {:.2} M/s",
        c,
        dt,
        dt.as_nanos() as f64 / n as f64,
        n as f64 / dt.as_secs_f64() / 1e6
    );
}
