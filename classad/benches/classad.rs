//! Criterion benchmarks: parsing a 10,000-ad `condor_status -long` dump (MB/s), reading a
//! pool's slot and job dumps as `cmctl what-if` does (MB/s per core and on all cores), symmetric
//! matching of a typical job against a typical slot (matches/s), and built-in function calls
//! (parsing resolves each call's name once; evaluating dispatches on the resolved function).
//! Run: `CARGO_TARGET_DIR=... cargo bench -p classad --bench classad` (one group:
//! `... -- read_old_ads`)
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;

#[path = "data.rs"]
mod data;

fn parse_dump(c: &mut Criterion) {
    let dump = data::status_dump(10_000);
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Bytes(dump.len() as u64));
    g.sample_size(10);
    g.bench_function("condor_status_long_10000_ads", |b| {
        b.iter(|| {
            let ads = classad::parse_old_ads(black_box(&dump)).expect("dump parses");
            assert_eq!(ads.len(), 10_000);
            ads
        })
    });
    g.finish();
}

/// The old-syntax reader as `cmctl what-if` uses it, on a pool's two dumps (2,000 slot ads of
/// ~90 attributes and 10,000 job ads of ~45, every ad differing in some values): MB/s on one
/// core, through no cache and through an [`classad::AttrCache`] (the collector's and
/// what-if's reading), and on every core (`parse_old_dumps`, both dumps together). The ads
/// are dropped outside the timing: what-if does not free them.
fn read_dumps(c: &mut Criterion) {
    let slots = data::status_dump(2_000);
    let jobs = data::queue_dump(10_000, 50);
    let mut g = c.benchmark_group("read_old_ads");
    g.throughput(Throughput::Bytes((slots.len() + jobs.len()) as u64));
    g.sample_size(10);
    let check = |a: &[classad::ClassAd], b: &[classad::ClassAd]| {
        assert_eq!((a.len(), b.len()), (2_000, 10_000));
    };
    g.bench_function("one_core", |b| {
        b.iter_with_large_drop(|| {
            let a = classad::parse_old_ads_strict(black_box(&slots)).expect("slots parse");
            let j = classad::parse_old_ads_strict(black_box(&jobs)).expect("jobs parse");
            check(&a, &j);
            (a, j)
        })
    });
    g.bench_function("one_core_cached", |b| {
        b.iter_with_large_drop(|| {
            let mut cache = classad::AttrCache::default();
            let a = classad::parse_old_ads_cached(black_box(&slots), &mut cache).expect("slots");
            let j = classad::parse_old_ads_cached(black_box(&jobs), &mut cache).expect("jobs");
            check(&a, &j);
            (a, j)
        })
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    g.bench_function(format!("all_{cores}_cores"), |b| {
        b.iter_with_large_drop(|| {
            let mut r = classad::parse_old_dumps(&[black_box(&slots), black_box(&jobs)], 0);
            let j = r.pop().expect("two results").expect("jobs parse");
            let a = r.pop().expect("two results").expect("slots parse");
            check(&a, &j);
            (a, j)
        })
    });
    g.finish();
}

fn matching(c: &mut Criterion) {
    let slot = classad::parse_ad(&data::slot_ad(3)).expect("slot parses");
    let job = classad::parse_ad(&data::job_ad()).expect("job parses");
    assert!(
        classad::symmetric_match(&job, &slot),
        "the typical job must match the typical slot"
    );
    let mut g = c.benchmark_group("match");
    g.throughput(Throughput::Elements(1));
    g.bench_function("symmetric_match_job_slot", |b| {
        b.iter(|| classad::symmetric_match(black_box(&job), black_box(&slot)))
    });
    g.bench_function("rank_job_slot", |b| {
        b.iter(|| classad::rank(black_box(&job), black_box(&slot)))
    });
    g.finish();

    // Matching one job against many distinct slots (cache-realistic).
    let slots: Vec<classad::ClassAd> = (0..1000)
        .map(|i| classad::parse_ad(&data::slot_ad(i)).expect("slot parses"))
        .collect();
    let mut g = c.benchmark_group("match_many");
    g.throughput(Throughput::Elements(slots.len() as u64));
    g.bench_function("symmetric_match_job_x1000_slots", |b| {
        b.iter_batched(
            || (),
            |_| {
                slots
                    .iter()
                    .filter(|s| classad::symmetric_match(&job, s))
                    .count()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn functions(c: &mut Criterion) {
    let exprs: Vec<classad::Expr> = data::FUNCTION_CALLS
        .iter()
        .map(|t| classad::parse_expr(t).expect("call parses"))
        .collect();
    let mut g = c.benchmark_group("functions");
    g.throughput(Throughput::Elements(data::FUNCTION_CALLS.len() as u64));
    g.bench_function("parse_one_call_of_each_family", |b| {
        b.iter(|| {
            data::FUNCTION_CALLS
                .iter()
                .map(|t| classad::parse_expr(black_box(t)).is_ok() as usize)
                .sum::<usize>()
        })
    });
    g.bench_function("eval_one_call_of_each_family", |b| {
        b.iter(|| {
            exprs
                .iter()
                .filter(|e| !classad::eval(black_box(e)).is_error())
                .count()
        })
    });
    g.finish();
}

criterion_group!(benches, parse_dump, read_dumps, matching, functions);
criterion_main!(benches);
