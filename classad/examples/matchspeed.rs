//! Developer tool: time symmetric matches (or ranks) of a typical job against a typical slot.
//!
//! `matchspeed [N] [match|rank]`: N iterations (default 2,000,000) of `symmetric_match` or of
//! `rank`. Under `valgrind --tool=cachegrind` the instruction counts compare builds free of a
//! shared machine's timing noise (subtract a run with N = 1 for the setup).
#[path = "../benches/data.rs"]
#[allow(dead_code)]
mod data;

fn main() {
    let slot = classad::parse_ad(&data::slot_ad(3)).expect("slot");
    let job = classad::parse_ad(&data::job_ad()).expect("job");
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let rank = match args.next().as_deref() {
        None | Some("match") => false,
        Some("rank") => true,
        Some(other) => panic!("unknown mode {other:?}: match or rank"),
    };
    let t = std::time::Instant::now();
    let mut c = 0u64;
    let mut sum = 0.0;
    for _ in 0..n {
        if rank {
            sum += classad::rank(std::hint::black_box(&job), std::hint::black_box(&slot));
        } else if classad::symmetric_match(std::hint::black_box(&job), std::hint::black_box(&slot))
        {
            c += 1;
        }
    }
    let dt = t.elapsed();
    println!(
        "{} {} ({}) in {:?}: {:.0} ns each, {:.2} M/s",
        n,
        if rank { "ranks" } else { "matches" },
        if rank { sum } else { c as f64 },
        dt,
        dt.as_nanos() as f64 / n as f64,
        n as f64 / dt.as_secs_f64() / 1e6
    );
}
