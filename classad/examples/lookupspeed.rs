//! Developer tool: time attribute lookups and single evaluations.
#[path = "../benches/data.rs"]
#[allow(dead_code)]
mod data;

fn main() {
    let slot = classad::parse_ad(&data::slot_ad(3)).expect("slot");
    let job = classad::parse_ad(&data::job_ad()).expect("job");
    let n = 1_000_000u64;
    for name in [
        "Memory",
        "Arch",
        "HasFileTransfer",
        "Missing",
        "WithinResourceLimits",
    ] {
        let t = std::time::Instant::now();
        let mut c = 0;
        for _ in 0..n {
            if std::hint::black_box(&slot)
                .lookup(std::hint::black_box(name))
                .is_some()
            {
                c += 1;
            }
        }
        println!(
            "lookup {name}: {:.1} ns ({c})",
            t.elapsed().as_nanos() as f64 / n as f64
        );
    }
    for (who, text) in [
        ("slot", "START && (WithinResourceLimits)"),
        ("slot", "WithinResourceLimits"),
        ("slot", "MY.Cpus > 0"),
        ("job", "(TARGET.Arch == \"X86_64\")"),
        ("job", "TARGET.Disk >= RequestDisk"),
        ("job", "1 + 1"),
        ("job", "TARGET.HasFileTransfer"),
    ] {
        let e = classad::parse_expr(text).expect("expr");
        let (my, tg) = if who == "slot" {
            (&slot, &job)
        } else {
            (&job, &slot)
        };
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(my.eval_expr_with(std::hint::black_box(&e), Some(tg)));
        }
        println!(
            "eval {who} {text}: {:.1} ns = {}",
            t.elapsed().as_nanos() as f64 / n as f64,
            my.eval_expr_with(&e, Some(tg))
        );
    }
}
